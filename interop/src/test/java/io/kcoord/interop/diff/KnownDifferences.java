package io.kcoord.interop.diff;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Every difference between kcoord's and Kafka 4.4's answers that the suite accepts, in one
 * place. An entry names the scenario and step (regular expressions, matched whole), the JSON
 * pointer path(s) that differ (a regular expression) and why, in one sentence: "by design:"
 * for a deliberate difference, "kcoord bug:" for one to fix (then delete the entry).
 */
final class KnownDifferences {
    record Entry(Pattern scenario, Pattern step, Pattern path, String reason) {
        boolean matches(String sc, String st, String p) {
            return scenario.matcher(sc).matches() && step.matcher(st).matches() && path.matcher(p).matches();
        }
    }

    static final List<Entry> ALL = new ArrayList<>();

    private static void d(String scenario, String step, String path, String reason) {
        ALL.add(new Entry(Pattern.compile(scenario), Pattern.compile(step), Pattern.compile(path), reason));
    }

    static {
        // ---- ApiVersions
        d("api-versions", ".*", "/apiKeysCompared/\\[apiKey=47\\]",
                "kcoord bug: OffsetDelete (key 47) is not served (issue 11 part 5), so it is not advertised.");
        d("api-versions|no-plugin-push", ".*", "/apiKeysCompared/\\[apiKey=88\\]/maxVersion",
                "by design: StreamsGroupHeartbeat v2 is the specification's version (wire-decisions.md), Kafka 4.4 stops at v1.");
        d("api-versions", ".*", "/finalizedFeatures/\\[name=(group|streams|transaction|eligible\\.leader\\.replicas|share)\\.version\\]",
                "kcoord bug: only metadata.version is finalized; Kafka 4.4 also finalizes group.version, streams.version=1 (streams groups on), transaction.version, eligible.leader.replicas.version and share.version, which Admin.describeFeatures shows.");
        d("api-versions", ".*", "/supportedFeatures/\\[name=(group|streams|transaction|eligible\\.leader\\.replicas|share|kraft)\\.version\\]",
                "kcoord bug: only metadata.version is listed as supported (ApiVersions v3+); Kafka 4.4 lists every feature it supports.");
        d("api-versions", ".*", "/(finalizedFeatures/\\[name=metadata\\.version\\]/(max|min)VersionLevel|supportedFeatures/\\[name=metadata\\.version\\]/maxVersion)",
                "by design: kcoord's metadata.version goes to its own 4.5-IV0 (level 34, wire-decisions.md); this Kafka runs at 4.4's production level.");
        d("no-plugin-push", "ApiVersions without a plugin", "/apiKeysCompared/\\[apiKey=93\\]",
                "by design (wire-decisions.md): without a plugin kcoord does not advertise key 93; Kafka 4.4 always advertises it.");

        // ---- CreateTopics
        d("missing-source-topics", "create the source topic", "/topics/\\[name=missing-source-topics-in\\]/configs/\\[name=min\\.insync\\.replicas\\]/configSource",
                "by design: Kafka 4.4's storage formatter writes min.insync.replicas as a cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG) when eligible leader replicas are on; kcoord has no dynamic broker configs and reports Kafka's default (DEFAULT_CONFIG).");

        // ---- heartbeat: joins and the initial rebalance delay
        d("initial-delay|standby-three-members|session-expiry", "(join during delay|second join during delay|heartbeat during delay|a joins|b joins)", "/memberEpoch",
                "kcoord bug (issue 11 part 5): during the initial rebalance delay Kafka answers member epoch max(1, assignment epoch); kcoord answers 0.");
        d("initial-delay", "describe during delay", "/groups/\\[groupId=initial-delay\\]/members/\\[memberId=member-[ab]\\]/memberEpoch",
                "kcoord bug (issue 11 part 5): members joined during the initial delay are at epoch 1 in Kafka, 0 in kcoord.");
        d("initial-delay", "heartbeat during delay", "/(activeTasks|standbyTasks|warmupTasks)",
                "kcoord bug: a heartbeat during the initial delay that changes nothing gets empty task lists; Kafka sends null (the assignment is only sent when joining or when it changed).");

        // ---- static membership
        d("static-rejoin-no-leave", "a rejoins at epoch 0 with its own member id", ".*",
                "kcoord bug (issue 11 part 5): a static member rejoining at epoch 0 with its own member id without leaving with -2 gets UNRELEASED_INSTANCE_ID in Kafka; kcoord accepts it.");
        d("static-rejoin-no-leave", "another member id takes the instance id", "/errorMessage",
                "kcoord bug (message): Kafka says \"...is owned by member-a member.\", kcoord \"...is owned by member member-a.\".");

        // ---- fencing and lost responses
        d("lost-response", "a repeats at the previous epoch without task lists", ".*",
                "kcoord bug (issue 11 part 5): Kafka fences a heartbeat at the previous epoch without owned-task lists (FENCED_MEMBER_EPOCH); kcoord accepts it.");

        // ---- validation
        d("invalid-heartbeats", "blank member id", ".*",
                "kcoord bug (issue 11 part 5): Kafka rejects whitespace-only member ids (INVALID_REQUEST \"MemberId can't be empty.\"); kcoord accepts the member.");
        d("invalid-heartbeats", "join with null task lists", ".*",
                "kcoord bug (issue 11 part 5): Kafka rejects a join with null task lists (INVALID_REQUEST \"ActiveTasks must be empty when (re-)joining.\"); kcoord accepts it.");
        d("invalid-heartbeats", "join with one null task list", "/errorMessage",
                "kcoord bug (message): Kafka checks the join's task lists first (\"StandbyTasks must be empty when (re-)joining.\"), kcoord the null mix (\"If one task-type is non-null, all must be non-null.\").");
        d("invalid-tasks", "owning a partition out of range", "/errorMessage",
                "kcoord bug (message, issue 11 part 5): Kafka says \"Task 5 for subtopology 0 is invalid. Number of tasks for this subtopology: 2\".");

        // ---- "Group X not found."
        d("unknown-member-group", "unknown group leave", "/errorMessage",
                "kcoord bug (message, issue 11 part 5): Kafka's leave of an unknown group says \"Group X not found.\", kcoord \"Streams group X not found.\".");
        d("describe|delete-groups", "describe .*", "/groups/\\[groupId=[^\\]]*\\]/errorMessage",
                "kcoord bug (message, issue 11 part 5): StreamsGroupDescribe of an unknown group says \"Group X not found.\" in Kafka, \"Streams group X not found.\" in kcoord.");

        // ---- topology comparison and upgrades
        d("topology-mismatch", "e joins with the source topics in another order", ".*",
                "kcoord bug (issue 11 part 5): Kafka compares topologies order-sensitively (source topics in another order is INVALID_REQUEST \"Topology updates are not supported yet.\"); kcoord accepts the member.");
        d("topology-mismatch", "f joins with a higher topology epoch", ".*",
                "by design (README \"Topology upgrades\"): a higher topology epoch replaces the group's topology in kcoord; Kafka 4.4 answers INVALID_REQUEST.");
        d("topology-mismatch", "a after f", "/status/0",
                "by design: follows from the topology upgrade above (a is now STALE_TOPOLOGY in kcoord).");
        d("topology-mismatch", "describe", ".*",
                "follows from the two differences above (members e and f, the upgraded topology and epochs in kcoord's group).");

        // ---- internal topics
        d("internal-topics", "join creates internal topics", "/status/0/statusDetail",
                "by design: Kafka lists the missing internal topics in hash-set order, kcoord sorted; the same topics.");

        // ---- topology description push (key 93)
        d("delete-groups", "a new group of the same name", "/topologyDescriptionRequired",
                "by design (doubtful): Kafka's push back-off is keyed by group id and topology epoch and outlives DeleteGroups, so a re-created group is not asked for 30 s; kcoord's plugin decides per TopologyDescriptionId, fresh for the new group, and asks at once.");
        d("push-stored", "describe v1 after the second push", ".*/sinkTopic",
                "kcoord bug: a second push at the same topology epoch is answered NONE but the first description stays; Kafka's InMemoryTopologyDescriptionPlugin overwrites it.");
        d("push-rejected", "push at a wrong topology epoch", "/errorMessage",
                "kcoord bug (message): Kafka says \"Topology epoch 7 does not match the group's current topology epoch 0.\".");
        d("push-rejected", "push by an unknown member", "/errorMessage",
                "kcoord bug (message): Kafka says \"Member X is not a member of group G.\" (no \"streams\").");
        d("push-rejected", "push to an unknown group", "/errorMessage",
                "kcoord bug (message): Kafka says \"Group G not found.\".");
        d("push-rejected", "push with an empty (member|group) id", "/errorMessage",
                "kcoord bug (message): Kafka says \"MemberId can't be empty.\" / \"GroupId can't be empty.\", kcoord \"... must not be empty.\".");
        d("no-plugin-push", "push without a plugin", "/errorMessage",
                "kcoord bug (message): Kafka says \"The broker has no streams group topology description plugin configured.\" (wire-decisions.md quotes it).");

        // ---- endpoints
        d("user-endpoints", ".*", "/endpointInformationEpoch",
                "kcoord bug: Kafka answers EndpointInformationEpoch 0 to the heartbeat that creates the group (the bump is not persisted then), so its endpoint epochs stay one lower than kcoord's.");

        // ---- OffsetCommit at an older member epoch
        d("offsets-older-epoch-repartition", "a commits the repartition topic at its older epoch", ".*/errorCode",
                "kcoord bug (issue 11 part 5): a commit at an older member epoch for a repartition source topic is checked against the task's assignment epoch and accepted by Kafka; kcoord answers STALE_MEMBER_EPOCH (source topics are fine).");
        d("offsets-older-epoch-repartition", "fetch", ".*-rp\\]/partitions/.*/(committedOffset|metadata)",
                "kcoord bug: follows from the refused repartition-topic commit above.");

        // ---- OffsetDelete
        d("offset-delete", "delete offsets .*", ".*",
                "kcoord bug (issue 11 part 5): OffsetDelete (key 47) is not served; kcoord closes the connection.");
        d("offset-delete", "fetch after delete", ".*/(committedOffset|metadata)",
                "kcoord bug: follows from OffsetDelete not being served (the offsets Kafka deleted are still there).");
    }

    /**
     * kcoord bug: Kafka 4.4 creates a streams group at group epoch 1 (KAFKA-20268, "Initialize
     * group epochs to 1 for assignment offload"), so its first join bumps it to 2; kcoord starts
     * at 0. Every group and assignment epoch and positive member epoch of kcoord is therefore one lower
     * than Kafka's. While this holds, kcoord's group and assignment epochs and positive member epochs
     * (also in the fencing messages) are compared plus one (member epoch 0 and the negative sentinels
     * as they are), so the rest of each transcript is still compared. Set to
     * false once kcoord starts groups at epoch 1.
     */
    static final boolean KCOORD_EPOCHS_ONE_LOWER = true;

    static final java.util.Set<String> EPOCH_FIELDS = java.util.Set.of("memberEpoch", "groupEpoch", "assignmentEpoch");

    /** kcoord's JSON as compared (see {@link #KCOORD_EPOCHS_ONE_LOWER}). */
    static com.fasterxml.jackson.databind.JsonNode adjustKcoord(com.fasterxml.jackson.databind.JsonNode json) {
        if (!KCOORD_EPOCHS_ONE_LOWER || json == null) return json;
        com.fasterxml.jackson.databind.JsonNode copy = json.deepCopy();
        bump(copy);
        return copy;
    }

    private static void bump(com.fasterxml.jackson.databind.JsonNode node) {
        if (node instanceof com.fasterxml.jackson.databind.node.ObjectNode obj) {
            List<String> names = new ArrayList<>();
            obj.fieldNames().forEachRemaining(names::add);
            for (String n : names) {
                com.fasterxml.jackson.databind.JsonNode v = obj.get(n);
                boolean zeroIsEpoch = !n.equals("memberEpoch") && obj.path("errorCode").asInt(0) == 0;
                if (EPOCH_FIELDS.contains(n) && v.isInt() && (v.asInt() > 0 || (v.asInt() == 0 && zeroIsEpoch))) {
                    // A group's epochs start at 1 in Kafka; a member epoch of 0 means "not joined" in both.
                    obj.put(n, v.asInt() + 1);
                } else if (n.equals("errorMessage") && v.isTextual()) {
                    obj.put(n, bumpMessage(v.asText()));
                } else {
                    bump(v);
                }
            }
        } else if (node != null && node.isArray()) {
            node.forEach(KnownDifferences::bump);
        }
    }

    private static final java.util.regex.Pattern EPOCHS_IN_MESSAGE = java.util.regex.Pattern.compile(
            "member epoch \\((\\d+)\\) than the one known by the group coordinator \\((\\d+)\\)");

    private static String bumpMessage(String message) {
        java.util.regex.Matcher m = EPOCHS_IN_MESSAGE.matcher(message);
        if (!m.find()) return message;
        int a = Integer.parseInt(m.group(1));
        int b = Integer.parseInt(m.group(2));
        return m.replaceFirst("member epoch (" + (a > 0 ? a + 1 : a) + ") than the one known by the group coordinator ("
                + (b > 0 ? b + 1 : b) + ")");
    }

    private KnownDifferences() {}
}
