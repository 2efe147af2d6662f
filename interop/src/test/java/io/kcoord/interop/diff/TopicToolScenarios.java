package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.MAIN;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsAssignment;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeLogDirsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.ListConfigResourcesRequestData;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterConfigsRequest;
import org.apache.kafka.common.requests.CreatePartitionsRequest;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.requests.DescribeLogDirsRequest;
import org.apache.kafka.common.requests.DescribeTopicPartitionsRequest;
import org.apache.kafka.common.requests.IncrementalAlterConfigsRequest;
import org.apache.kafka.common.requests.ListConfigResourcesRequest;
import org.apache.kafka.common.requests.ListConfigResourcesResponse;

/**
 * Issue 24's topic tools: CreatePartitions, IncrementalAlterConfigs and AlterConfigs of topics
 * and brokers, DescribeConfigs after them, DescribeLogDirs, DescribeTopicPartitions and
 * ListConfigResources. Broker and group configs a scenario sets are deleted before it ends: the
 * servers are shared with the other scenarios.
 */
final class TopicToolScenarios {
    private TopicToolScenarios() {}

    private static final byte TOPIC = ConfigResource.Type.TOPIC.id();
    private static final byte BROKER = ConfigResource.Type.BROKER.id();
    private static final byte GROUP = ConfigResource.Type.GROUP.id();
    private static final byte CLIENT_METRICS = ConfigResource.Type.CLIENT_METRICS.id();
    private static final byte SET = 0;
    private static final byte DELETE = 1;
    private static final byte APPEND = 2;
    private static final byte SUBTRACT = 3;

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("create-partitions", MAIN, Map.of("create-partitions-a", 1, "create-partitions-b", 2),
                TopicToolScenarios::createPartitions));
        all.add(new Scenario("create-partitions-assignments", MAIN, Map.of("create-partitions-assignments-in", 1),
                TopicToolScenarios::createPartitionsAssignments));
        all.add(new Scenario("create-partitions-versions", MAIN, Map.of("create-partitions-versions-in", 1),
                TopicToolScenarios::createPartitionsVersions));
        all.add(new Scenario("topic-configs-incremental", MAIN, Map.of("topic-configs-incremental-in", 1),
                TopicToolScenarios::topicConfigsIncremental));
        all.add(new Scenario("topic-configs-refused", MAIN, Map.of("topic-configs-refused-in", 1),
                TopicToolScenarios::topicConfigsRefused));
        all.add(new Scenario("topic-configs-legacy", MAIN, Map.of("topic-configs-legacy-in", 1),
                TopicToolScenarios::topicConfigsLegacy));
        all.add(new Scenario("broker-configs", MAIN, Map.of("broker-configs-in", 1), TopicToolScenarios::brokerConfigs));
        all.add(new Scenario("broker-configs-refused", MAIN, Map.of(), TopicToolScenarios::brokerConfigsRefused));
        all.add(new Scenario("describe-log-dirs", MAIN, Map.of("describe-log-dirs-in", 2),
                TopicToolScenarios::describeLogDirs));
        all.add(new Scenario("describe-topic-partitions", MAIN,
                Map.of("describe-topic-partitions-a", 3, "describe-topic-partitions-b", 2),
                TopicToolScenarios::describeTopicPartitions));
        all.add(new Scenario("list-config-resources", MAIN, Map.of("list-config-resources-topic", 1),
                TopicToolScenarios::listConfigResources));
        return all;
    }

    // ---------------------------------------------------------------- requests

    static CreatePartitionsTopic grow(String topic, int count, int... brokers) {
        CreatePartitionsTopic t = new CreatePartitionsTopic().setName(topic).setCount(count).setAssignments(null);
        if (brokers.length > 0) {
            List<CreatePartitionsAssignment> a = new ArrayList<>();
            for (int b : brokers) a.add(new CreatePartitionsAssignment().setBrokerIds(b < 0 ? List.of() : List.of(b)));
            t.setAssignments(a);
        }
        return t;
    }

    static AbstractRequest.Builder<?> createPartitions(boolean validateOnly, int timeoutMs, CreatePartitionsTopic... topics) {
        CreatePartitionsRequestData data = new CreatePartitionsRequestData().setTimeoutMs(timeoutMs)
                .setValidateOnly(validateOnly);
        CreatePartitionsRequestData.CreatePartitionsTopicCollection c = new CreatePartitionsRequestData.CreatePartitionsTopicCollection();
        for (CreatePartitionsTopic t : topics) c.mustAdd(t.duplicate());
        data.setTopics(c);
        return new CreatePartitionsRequest.Builder(data);
    }

    /** One resource's operations: {name, op, value} triples. */
    record Resource(byte type, String name, List<Object[]> ops) {}

    static Resource res(byte type, String name, Object... triples) {
        List<Object[]> ops = new ArrayList<>();
        for (int i = 0; i < triples.length; i += 3) ops.add(new Object[] {triples[i], triples[i + 1], triples[i + 2]});
        return new Resource(type, name, ops);
    }

    static AbstractRequest.Builder<?> incremental(boolean validateOnly, Resource... resources) {
        IncrementalAlterConfigsRequestData data = new IncrementalAlterConfigsRequestData().setValidateOnly(validateOnly);
        for (Resource r : resources) {
            IncrementalAlterConfigsRequestData.AlterableConfigCollection configs =
                    new IncrementalAlterConfigsRequestData.AlterableConfigCollection();
            for (Object[] op : r.ops()) {
                configs.mustAdd(new IncrementalAlterConfigsRequestData.AlterableConfig().setName((String) op[0])
                        .setConfigOperation((byte) op[1]).setValue((String) op[2]));
            }
            data.resources().mustAdd(new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                    .setResourceType(r.type()).setResourceName(r.name()).setConfigs(configs));
        }
        return new IncrementalAlterConfigsRequest.Builder(data);
    }

    static AbstractRequest.Builder<?> legacy(boolean validateOnly, Map<ConfigResource, Map<String, String>> resources) {
        Map<ConfigResource, AlterConfigsRequest.Config> configs = new LinkedHashMap<>();
        resources.forEach((r, kv) -> {
            List<AlterConfigsRequest.ConfigEntry> entries = new ArrayList<>();
            kv.forEach((k, v) -> entries.add(new AlterConfigsRequest.ConfigEntry(k, v)));
            configs.put(r, new AlterConfigsRequest.Config(entries));
        });
        return new AlterConfigsRequest.Builder(configs, validateOnly);
    }

    static AbstractRequest.Builder<?> describe(byte type, String name, boolean synonyms, String... keys) {
        return new DescribeConfigsRequest.Builder(new DescribeConfigsRequestData().setIncludeSynonyms(synonyms)
                .setResources(List.of(new DescribeConfigsRequestData.DescribeConfigsResource().setResourceType(type)
                        .setResourceName(name).setConfigurationKeys(List.of(keys)))));
    }

    static String node(Side s) {
        return "0";
    }

    /**
     * DescribeConfigs polled until every {@code expect}ed key has its value: a Kafka broker
     * applies the controller's config records a moment after the change is answered.
     */
    static void describeUntil(Side s, String step, byte type, String name, boolean synonyms,
            Map<String, String> expect, String... keys) throws Exception {
        s.poll(step, () -> describe(type, name, synonyms, keys), (short) 4, "diff-suite", false, r -> {
            var configs = ((DescribeConfigsResponse) r).data().results().get(0).configs();
            return expect.entrySet().stream().allMatch(e -> configs.stream()
                    .anyMatch(c -> c.name().equals(e.getKey()) && e.getValue().equals(c.value())));
        }, 10_000);
    }

    // ---------------------------------------------------------------- scenarios

    static void createPartitions(Side s) throws Exception {
        String a = "create-partitions-a";
        String b = "create-partitions-b";
        s.call("grow a to 3", createPartitions(false, 30_000, grow(a, 3)), (short) 3);
        s.call("grow a to 3 again", createPartitions(false, 30_000, grow(a, 3)), (short) 3);
        s.call("shrink a", createPartitions(false, 30_000, grow(a, 2)), (short) 3);
        s.call("grow an unknown topic", createPartitions(false, 30_000, grow("create-partitions-nope", 2)), (short) 3);
        s.call("validate only", createPartitions(true, 30_000, grow(b, 5)), (short) 3);
        s.call("grow b after validate only", createPartitions(false, 30_000, grow(b, 4), grow(a, 4)), (short) 3);
        s.call("grow b to 4 again", createPartitions(false, 30_000, grow(b, 4)), (short) 3);
        s.call("zero partitions", createPartitions(false, 30_000, grow(b, 0)), (short) 3);
    }

    static void createPartitionsAssignments(Side s) throws Exception {
        String t = "create-partitions-assignments-in";
        s.call("too few assignments", createPartitions(false, 30_000, grow(t, 3, 0)), (short) 3);
        s.call("an unknown broker", createPartitions(false, 30_000, grow(t, 2, 5)), (short) 3);
        s.call("an empty replica list", createPartitions(false, 30_000, grow(t, 2, -1)), (short) 3);
        s.call("this node", createPartitions(false, 30_000, grow(t, 2, 0)), (short) 3);
        s.call("grown", createPartitions(false, 30_000, grow(t, 2)), (short) 3);
    }

    static void createPartitionsVersions(Side s) throws Exception {
        String t = "create-partitions-versions-in";
        for (short v = 0; v <= 3; v++) {
            s.call("grow at v" + v, createPartitions(false, 30_000, grow(t, v + 2)), v);
            s.call("same count at v" + v, createPartitions(false, 30_000, grow(t, v + 2)), v);
        }
    }

    static void topicConfigsIncremental(Side s) throws Exception {
        String t = "topic-configs-incremental-in";
        String[] keys = {"retention.ms", "cleanup.policy", "max.message.bytes", "segment.bytes"};
        s.call("describe before", describe(TOPIC, t, false, keys), (short) 4);
        s.call("validate only", incremental(true, res(TOPIC, t, "retention.ms", SET, "1000")), (short) 1);
        s.call("describe after validate only", describe(TOPIC, t, false, keys), (short) 4);
        s.call("set and append", incremental(false, res(TOPIC, t, "retention.ms", SET, "1000", "cleanup.policy", APPEND,
                "compact", "max.message.bytes", SET, "2000")), (short) 1);
        describeUntil(s, "describe after set", TOPIC, t, true, Map.of("retention.ms", "1000"), keys);
        s.call("subtract and delete", incremental(false, res(TOPIC, t, "cleanup.policy", SUBTRACT, "delete",
                "retention.ms", DELETE, null)), (short) 0);
        describeUntil(s, "describe after delete", TOPIC, t, false, Map.of("cleanup.policy", "compact"), keys);
    }

    static void topicConfigsRefused(Side s) throws Exception {
        String t = "topic-configs-refused-in";
        s.call("unknown key", incremental(false, res(TOPIC, t, "retention.mss", SET, "1")), (short) 1);
        s.call("bad value", incremental(false, res(TOPIC, t, "segment.bytes", SET, "10")), (short) 1);
        s.call("not a number", incremental(false, res(TOPIC, t, "retention.ms", SET, "soon")), (short) 1);
        s.call("append to a non-list", incremental(false, res(TOPIC, t, "retention.ms", APPEND, "1")), (short) 1);
        s.call("unknown topic", incremental(false, res(TOPIC, "topic-configs-refused-nope", "retention.ms", SET, "1")),
                (short) 1);
        s.call("empty topic name", incremental(false, res(TOPIC, "", "retention.ms", SET, "1")), (short) 1);
        s.call("duplicate keys", incremental(false, res(TOPIC, t, "retention.ms", SET, "1", "retention.ms", SET, "2")),
                (short) 1);
        s.call("null value", incremental(false, res(TOPIC, t, "retention.ms", SET, null)), (short) 1);
        s.call("mixed", incremental(false, res(TOPIC, t, "retention.ms", SET, "5"),
                res(TOPIC, "topic-configs-refused-nope", "retention.ms", SET, "1")), (short) 1);
        describeUntil(s, "describe", TOPIC, t, false, Map.of("retention.ms", "5"), "retention.ms");
    }

    static void topicConfigsLegacy(Side s) throws Exception {
        String t = "topic-configs-legacy-in";
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, t);
        s.call("replace with two", legacy(false, Map.of(r, Map.of("retention.ms", "7000"))), (short) 2);
        describeUntil(s, "describe after two", TOPIC, t, false, Map.of("retention.ms", "7000"), "retention.ms",
                "segment.ms");
        s.call("replace with another", legacy(false, Map.of(r, Map.of("segment.ms", "60000"))), (short) 1);
        describeUntil(s, "describe after another", TOPIC, t, false, Map.of("segment.ms", "60000",
                "retention.ms", "604800000"), "retention.ms", "segment.ms");
        s.call("unknown key", legacy(false, Map.of(r, Map.of("retention.mss", "1"))), (short) 0);
        s.call("unknown topic", legacy(false, Map.of(new ConfigResource(ConfigResource.Type.TOPIC,
                "topic-configs-legacy-nope"), Map.of("retention.ms", "1"))), (short) 2);
        s.call("broker logger", legacy(false, Map.of(new ConfigResource(ConfigResource.Type.BROKER_LOGGER, "0"),
                Map.of("kafka", "DEBUG"))), (short) 2);
    }

    static void brokerConfigs(Side s) throws Exception {
        String t = "broker-configs-in";
        s.call("set the cluster default", incremental(false, res(BROKER, "", "log.retention.ms", SET, "7200000")), (short) 1);
        s.call("set this node's", incremental(false, res(BROKER, node(s), "log.segment.bytes", SET, "2097152")), (short) 1);
        describeUntil(s, "describe the cluster defaults", BROKER, "", true, Map.of("log.retention.ms", "7200000"),
                "log.retention.ms");
        describeUntil(s, "describe this node", BROKER, node(s), false, Map.of("log.segment.bytes", "2097152",
                "log.retention.ms", "7200000"), "log.segment.bytes", "log.retention.ms");
        describeUntil(s, "describe the topic", TOPIC, t, false, Map.of("retention.ms", "7200000",
                "segment.bytes", "2097152"), "retention.ms", "segment.bytes");
        s.call("legacy on this node", legacy(false, Map.of(new ConfigResource(ConfigResource.Type.BROKER, node(s)),
                Map.of("log.segment.bytes", "3145728"))), (short) 2);
        describeUntil(s, "describe this node after legacy", BROKER, node(s), false,
                Map.of("log.segment.bytes", "3145728"), "log.segment.bytes");
        s.call("delete this node's", incremental(false, res(BROKER, node(s), "log.segment.bytes", DELETE, null)), (short) 1);
        s.call("delete the cluster default", incremental(false, res(BROKER, "", "log.retention.ms", DELETE, null)), (short) 1);
        describeUntil(s, "describe the topic at the end", TOPIC, t, false, Map.of("retention.ms", "604800000",
                "segment.bytes", "1073741824"), "retention.ms", "segment.bytes");
    }

    static void brokerConfigsRefused(Side s) throws Exception {
        s.call("a static config", incremental(false, res(BROKER, "", "log.dirs", SET, "/tmp/x")), (short) 1);
        s.call("another broker", incremental(false, res(BROKER, "5", "log.retention.ms", SET, "1")), (short) 1);
        s.call("not a number", incremental(false, res(BROKER, "x", "log.retention.ms", SET, "1")), (short) 1);
        s.call("a bad value", incremental(false, res(BROKER, "", "log.retention.ms", SET, "soon")), (short) 1);
        s.call("append to a non-list", incremental(false, res(BROKER, "", "log.retention.ms", APPEND, "1")), (short) 1);
        s.call("legacy static config", legacy(false, Map.of(new ConfigResource(ConfigResource.Type.BROKER, ""),
                Map.of("log.dirs", "/tmp/x"))), (short) 2);
        s.call("validate only", incremental(true, res(BROKER, "", "log.retention.ms", SET, "1000")), (short) 1);
        s.call("describe after validate only", describe(BROKER, "", false, "log.retention.ms"), (short) 4);
    }

    /** DescribeLogDirs without what differs by nature: the directory's path and its volume. */
    static JsonNode logDirsShape(JsonNode json) {
        for (JsonNode result : json.path("results")) {
            ObjectNode r = (ObjectNode) result;
            r.remove("logDir");
            r.remove("totalBytes");
            r.remove("usableBytes");
        }
        return json;
    }

    static void describeLogDirs(Side s) throws Exception {
        String t = "describe-log-dirs-in";
        DescribeLogDirsRequestData.DescribableLogDirTopicCollection topics =
                new DescribeLogDirsRequestData.DescribableLogDirTopicCollection();
        topics.add(new DescribeLogDirsRequestData.DescribableLogDirTopic().setTopic(t).setPartitions(List.of(0, 1)));
        topics.add(new DescribeLogDirsRequestData.DescribableLogDirTopic().setTopic("describe-log-dirs-nope")
                .setPartitions(List.of(0)));
        for (short v : new short[] {1, 3, 4}) {
            s.call("describe v" + v, new DescribeLogDirsRequest.Builder(new DescribeLogDirsRequestData()
                    .setTopics(topics.duplicate())), v, TopicToolScenarios::logDirsShape);
        }
        DescribeLogDirsRequestData.DescribableLogDirTopicCollection one =
                new DescribeLogDirsRequestData.DescribableLogDirTopicCollection();
        one.add(new DescribeLogDirsRequestData.DescribableLogDirTopic().setTopic(t).setPartitions(List.of(1)));
        s.call("one partition", new DescribeLogDirsRequest.Builder(new DescribeLogDirsRequestData().setTopics(one)),
                (short) 4, TopicToolScenarios::logDirsShape);
    }

    static AbstractRequest.Builder<?> describePartitions(int limit, String cursorTopic, int cursorPartition,
            String... topics) {
        DescribeTopicPartitionsRequestData data = new DescribeTopicPartitionsRequestData()
                .setResponsePartitionLimit(limit);
        for (String t : topics) data.topics().add(new DescribeTopicPartitionsRequestData.TopicRequest().setName(t));
        if (cursorTopic != null) {
            data.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName(cursorTopic)
                    .setPartitionIndex(cursorPartition));
        }
        return new DescribeTopicPartitionsRequest.Builder(data);
    }

    /** What `kafka-topics --describe` asks: named topics, a limit that cuts, the cursor. */
    static void describeTopicPartitions(Side s) throws Exception {
        String a = "describe-topic-partitions-a";
        String b = "describe-topic-partitions-b";
        s.call("named", describePartitions(2000, null, 0, b, a, "describe-topic-partitions-nope", "bad name!"),
                (short) 0);
        s.call("cut by the limit", describePartitions(2, null, 0, a, b), (short) 0);
        s.call("from the cursor", describePartitions(2, a, 2, a, b), (short) 0);
        s.call("the next topic from the cursor", describePartitions(5, b, 0, a, b), (short) 0);
        s.call("cursor topic not named", describePartitions(5, "describe-topic-partitions-other", 0, a, b),
                (short) 0);
        s.call("negative cursor partition", describePartitions(5, a, -1, a), (short) 0);
        s.call("limit below one", describePartitions(0, null, 0, b), (short) 0);
    }

    static AbstractRequest.Builder<?> listConfigResources(byte... types) {
        ListConfigResourcesRequestData data = new ListConfigResourcesRequestData();
        for (byte t : types) data.resourceTypes().add(t);
        return new ListConfigResourcesRequest.Builder(data);
    }

    /**
     * The resources this scenario made, and only those: the servers are shared, and Kafka lists
     * each type in hash order.
     */
    static JsonNode ownResourcesShape(JsonNode json) {
        ArrayNode own = ((ObjectNode) json).arrayNode();
        for (JsonNode r : json.path("configResources")) {
            if (r.path("resourceName").asText().startsWith("list-config-resources")) own.add(r);
        }
        ((ObjectNode) json).set("configResources", own);
        return json;
    }

    /**
     * Waits, unrecorded, until ListConfigResources does (or no longer does) list {@code group}: a
     * Kafka broker applies the controller's config records a moment after the change is answered.
     */
    static void awaitGroupListed(Side s, String group, boolean listed) throws Exception {
        long deadline = System.currentTimeMillis() + 10_000;
        while (true) {
            AbstractResponse r = s.send(listConfigResources(GROUP), (short) 1, "diff-suite");
            if (r != null && ((ListConfigResourcesResponse) r).data().configResources().stream()
                    .anyMatch(c -> c.resourceName().equals(group)) == listed) return;
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("group " + group + (listed ? " not listed" : " still listed")
                        + " after 10 s");
            }
            Thread.sleep(100);
        }
    }

    /** What `kafka-configs --describe` of every group (or client-metrics resource) asks. */
    static void listConfigResources(Side s) throws Exception {
        String group = "list-config-resources-group";
        s.call("groups before a config", listConfigResources(GROUP), (short) 1, TopicToolScenarios::ownResourcesShape);
        s.call("set a group config", incremental(false,
                res(GROUP, group, "consumer.session.timeout.ms", SET, "50000")), (short) 1);
        awaitGroupListed(s, group, true);
        s.call("groups", listConfigResources(GROUP), (short) 1, TopicToolScenarios::ownResourcesShape);
        s.call("topics and groups", listConfigResources(TOPIC, GROUP), (short) 1,
                TopicToolScenarios::ownResourcesShape);
        s.call("every type", listConfigResources(), (short) 1, TopicToolScenarios::ownResourcesShape);
        s.call("client metrics", listConfigResources(CLIENT_METRICS), (short) 1);
        s.call("v0: client metrics", listConfigResources(CLIENT_METRICS), (short) 0);
        s.call("an unknown type", listConfigResources(GROUP, (byte) 3), (short) 1);
        s.call("delete the group config", incremental(false,
                res(GROUP, group, "consumer.session.timeout.ms", DELETE, null)), (short) 1);
        awaitGroupListed(s, group, false);
        s.call("groups after", listConfigResources(GROUP), (short) 1, TopicToolScenarios::ownResourcesShape);
    }
}
