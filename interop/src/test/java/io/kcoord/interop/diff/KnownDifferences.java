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
        d("api-versions|no-plugin-push", ".*", "/apiKeysCompared/\\[apiKey=88\\]/maxVersion",
                "by design: StreamsGroupHeartbeat v2 is the specification's version (wire-decisions.md), Kafka 4.4 stops at v1.");
        d("api-versions", ".*", "/(finalizedFeatures|supportedFeatures)/\\[name=(group|transaction|eligible\\.leader\\.replicas|share|kraft)\\.version\\]",
                "by design: kcoord serves no consumer (KIP-848) or share groups, transactions, eligible leader replicas or KRaft quorum, so it supports and finalizes only metadata.version and streams.version (README).");
        d("api-versions", ".*", "/(finalizedFeatures/\\[name=metadata\\.version\\]/(max|min)VersionLevel|supportedFeatures/\\[name=metadata\\.version\\]/maxVersion)",
                "by design: kcoord's metadata.version goes to its own 4.5-IV0 (level 34, wire-decisions.md); this Kafka runs at 4.4's production level.");
        d("no-plugin-push", "ApiVersions without a plugin", "/apiKeysCompared/\\[apiKey=93\\]",
                "by design (wire-decisions.md): without a plugin kcoord does not advertise key 93; Kafka 4.4 always advertises it.");

        // ---- CreateTopics
        d("missing-source-topics", "create the source topic", "/topics/\\[name=missing-source-topics-in\\]/configs/\\[name=min\\.insync\\.replicas\\]/configSource",
                "by design: Kafka 4.4's storage formatter writes min.insync.replicas as a cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG) when eligible leader replicas are on; kcoord has no dynamic broker configs and reports Kafka's default (DEFAULT_CONFIG).");

        // ---- topology comparison and upgrades
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
                "by design: the memory plugin treats a second set_topology for the same (group, TopologyDescriptionId) as a repeat and keeps the first description (the specification asks plugins to make it idempotent); Kafka's InMemoryTopologyDescriptionPlugin overwrites it.");
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
    static final boolean KCOORD_EPOCHS_ONE_LOWER = false;

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
