package io.kcoord.interop.diff;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Every difference between kcoord's and Kafka 4.4's answers that the suite accepts, in one
 * place. An entry names the scenario and step (regular expressions, matched whole), the JSON
 * pointer path(s) that differ (a regular expression), why, in one sentence, and the item of the
 * README's "Differences from Apache Kafka 4.4" that explains it to users ({@link
 * KnownDifferencesDocumentedTest} checks the README has it). A kcoord bug is fixed, not listed.
 */
final class KnownDifferences {
    record Entry(Pattern scenario, Pattern step, Pattern path, String reason, String readmeItem) {
        boolean matches(String sc, String st, String p) {
            return scenario.matcher(sc).matches() && step.matcher(st).matches() && path.matcher(p).matches();
        }
    }

    static final List<Entry> ALL = new ArrayList<>();

    private static void d(String scenario, String step, String path, String reason, String readmeItem) {
        ALL.add(new Entry(Pattern.compile(scenario), Pattern.compile(step), Pattern.compile(path), reason,
                readmeItem));
    }

    private static final String VERSIONS = "Versions and features (ApiVersions).";
    private static final String UPGRADES = "Topology upgrades (extension).";
    private static final String PUSHES = "Topology description pushes.";
    private static final String CONTROLLER = "Controller listener.";
    private static final String TRANSACTIONS = "TxnOffsetCommit by topic name.";

    static {
        // ---- ApiVersions
        d("api-versions|no-plugin-push", ".*", "/apiKeysCompared/\\[apiKey=88\\]/maxVersion",
                "StreamsGroupHeartbeat v2 is the specification's version (docs/decisions.md), Kafka 4.4 stops at v1.",
                VERSIONS);
        d("api-versions", ".*", "/(finalizedFeatures|supportedFeatures)/\\[name=(eligible\\.leader\\.replicas|share|kraft)\\.version\\]",
                "kcoord serves no share groups, eligible leader replicas or KRaft quorum, so it supports and finalizes only metadata.version, streams.version, group.version and transaction.version.",
                VERSIONS);
        d("api-versions", ".*", "/apiKeysCompared/\\[apiKey=28\\]/maxVersion",
                "TxnOffsetCommit v6 names topics by id (KIP-1319); kcoord serves up to v5, which names them.",
                TRANSACTIONS);
        d("api-versions", ".*", "/(finalizedFeatures/\\[name=metadata\\.version\\]/(max|min)VersionLevel|supportedFeatures/\\[name=metadata\\.version\\]/maxVersion)",
                "kcoord's metadata.version goes to its own 4.5-IV0 (level 34, docs/decisions.md); this Kafka runs at 4.4's level.",
                VERSIONS);
        d("no-plugin-push", "ApiVersions without a plugin", "/apiKeysCompared/\\[apiKey=93\\]",
                "without a plugin kcoord does not advertise key 93 (docs/decisions.md); Kafka 4.4 always advertises it.",
                VERSIONS);

        // ---- the controller listener
        d("acls-controller-listener", "ApiVersions on the controller listener", "/apiKeysCompared/\\[apiKey=50\\]",
                "Kafka's controller lists DescribeUserScramCredentials (its schema names both listeners) though it has no handler for it; kcoord's controller listener does not serve it.",
                CONTROLLER);
        d("scram-controller-listener", "describe on the controller", ".*",
                "Kafka's controller answers DescribeUserScramCredentials UNKNOWN_SERVER_ERROR (no handler: \"Unsupported ApiKey\"); kcoord closes the connection, as for any API a listener does not serve.",
                CONTROLLER);

        // ---- CreateTopics
        d("missing-source-topics", "create the source topic", "/topics/\\[name=missing-source-topics-in\\]/configs/\\[name=min\\.insync\\.replicas\\]/configSource",
                "Kafka 4.4's storage formatter writes min.insync.replicas as a cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG) when eligible leader replicas are on; kcoord has no dynamic broker configs and reports DEFAULT_CONFIG.",
                "No dynamic broker configs.");

        // ---- topology comparison and upgrades
        d("topology-mismatch", "f joins with a higher topology epoch", ".*",
                "a higher topology epoch replaces the group's topology in kcoord; Kafka 4.4 answers INVALID_REQUEST.",
                UPGRADES);
        d("topology-mismatch", "a after f", "/status/0",
                "follows from the topology upgrade above (a is now STALE_TOPOLOGY in kcoord).",
                UPGRADES);
        d("topology-mismatch", "describe", ".*",
                "follows from the upgrade above (members e and f, the upgraded topology and epochs in kcoord's group).",
                UPGRADES);

        // ---- internal topics
        d("internal-topics", "join creates internal topics", "/status/0/statusDetail",
                "Kafka lists the missing internal topics in hash-set order, kcoord sorted; the same topics.",
                "Missing internal topics in order.");

        // ---- topology description push (key 93)
        d("delete-groups", "a new group of the same name", "/topologyDescriptionRequired",
                "Kafka's push back-off is keyed by group id and topology epoch and outlives DeleteGroups, so a re-created group is not asked for 30 s; kcoord's plugin decides per TopologyDescriptionId, fresh for the new group, and asks at once.",
                PUSHES);
        d("push-stored", "describe v1 after the second push", ".*/sinkTopic",
                "the memory plugin treats a second set_topology for the same (group, TopologyDescriptionId) as a repeat and keeps the first description (the specification asks plugins to make it idempotent); Kafka's InMemoryTopologyDescriptionPlugin overwrites it.",
                PUSHES);
    }

    private KnownDifferences() {}
}
