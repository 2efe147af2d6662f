package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kcoord.interop.diff.WireClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Gateway mode (docs/gateway.md): kcoord in front of a real Apache Kafka 4.4 cluster of three
 * KRaft nodes ({@link KafkaCluster}), with Kafka's own clients bootstrapping from kcoord only.
 */
class GatewayTest {
    private static final int RECORDS = 10_000;

    private static KafkaCluster cluster;
    private static Kcoord kcoord;
    private static int portStart;

    @BeforeAll
    static void start() throws Exception {
        cluster = KafkaCluster.shared();
        portStart = freePortRange(3);
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        config.add("upstream.bootstrap.servers=" + cluster.bootstrap());
        config.add("gateway.broker.port.start=" + portStart);
        kcoord = Kcoord.start("gateway", config.toArray(String[]::new));
    }

    @AfterAll
    static void stop() throws Exception {
        if (kcoord != null) kcoord.close();
    }

    /** The ports kcoord serves the upstream brokers 0, 1 and 2 on. */
    private static Set<String> brokerEndpoints() {
        Set<String> endpoints = new HashSet<>();
        for (int id = 0; id < 3; id++) endpoints.add("127.0.0.1:" + (portStart + id));
        return endpoints;
    }

    private static String endpoint(Node node) {
        return node.host() + ":" + node.port();
    }

    @Test
    void admin_through_kcoord_creates_a_replicated_topic_and_sees_only_kcoord_endpoints() throws Exception {
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            admin.createTopics(List.of(new NewTopic("gw-admin", 3, (short) 3))).all().get(60, TimeUnit.SECONDS);
            Set<String> seen = new HashSet<>();
            for (Node node : admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)) {
                assertEquals(portStart + node.id(), node.port(), "broker " + node.id());
                seen.add(endpoint(node));
            }
            assertEquals(brokerEndpoints(), seen);
            TopicDescription topic = described(admin, "gw-admin");
            assertEquals(3, topic.partitions().size());
            for (TopicPartitionInfo p : topic.partitions()) {
                assertEquals(3, p.replicas().size(), "replicas of " + p);
                assertTrue(brokerEndpoints().contains(endpoint(p.leader())), "leader " + p.leader());
                for (Node replica : p.replicas()) {
                    assertTrue(brokerEndpoints().contains(endpoint(replica)), "replica " + replica);
                }
            }
        }
        // The cluster itself has the topic, replicated three times.
        try (Admin direct = Clients.admin(cluster.bootstrap())) {
            TopicDescription topic = described(direct, "gw-admin");
            assertEquals(3, topic.partitions().get(0).replicas().size());
        }
    }

    /**
     * A Produce or Fetch sent to a broker that does not lead the partition is answered
     * NOT_LEADER_OR_FOLLOWER with the leader's endpoint (KIP-951), which Kafka's clients connect
     * to at once, as after a leader moved: through kcoord that endpoint is kcoord's port for the
     * leader, never the cluster's own address.
     */
    @Test
    void a_leader_named_in_a_produce_or_fetch_answer_is_at_its_kcoord_port() throws Exception {
        String topic = "gw-moved-leader";
        TopicPartition tp = new TopicPartition(topic, 0);
        int leader;
        Uuid topicId;
        // Replicas on brokers 0 and 1 only: a follower serves a consumer's Fetch (KIP-392), a
        // broker that holds no replica does not.
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(0, 1))))).all().get(60, TimeUnit.SECONDS);
            TopicDescription described = described(admin, topic);
            leader = described.partitions().get(0).leader().id();
            topicId = described.topicId();
        }
        String expected = leader + "@127.0.0.1:" + (portStart + leader);
        ProduceRequestData produce = new ProduceRequestData().setAcks((short) 1).setTimeoutMs(5000);
        produce.topicData().add(new ProduceRequestData.TopicProduceData().setName(topic).setPartitionData(
                List.of(new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(
                        MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("v".getBytes()))))));
        try (WireClient wire = new WireClient("127.0.0.1:" + (portStart + 1 - leader), topic)) {
            ProduceResponse produced = (ProduceResponse) onceKnown(wire,
                    new ProduceRequest.Builder((short) 12, (short) 12, produce), (short) 12,
                    r -> ((ProduceResponse) r).data().responses().iterator().next().partitionResponses().get(0)
                            .errorCode());
            assertEquals(Errors.NOT_LEADER_OR_FOLLOWER.code(), produced.data().responses().iterator().next()
                    .partitionResponses().get(0).errorCode(), produced.toString());
            assertEquals(List.of(expected), produced.data().nodeEndpoints().stream()
                    .map(e -> e.nodeId() + "@" + e.host() + ":" + e.port()).toList());
        }
        try (WireClient wire = new WireClient("127.0.0.1:" + (portStart + 2), topic)) {
            FetchResponse fetched = (FetchResponse) onceKnown(wire, FetchRequest.Builder.forConsumer((short) 17, 0, 1,
                    Map.of(tp, new FetchRequest.PartitionData(topicId, 0, -1, 1024, Optional.empty()))), (short) 17,
                    r -> ((FetchResponse) r).data().responses().get(0).partitions().get(0).errorCode());
            assertEquals(Errors.NOT_LEADER_OR_FOLLOWER.code(), fetched.data().responses().get(0).partitions().get(0)
                    .errorCode(), fetched.toString());
            assertEquals(List.of(expected), fetched.data().nodeEndpoints().stream()
                    .map(e -> e.nodeId() + "@" + e.host() + ":" + e.port()).toList());
        }
    }

    /**
     * A share consumer (KIP-932) through kcoord: its heartbeats, fetches and acknowledgements are
     * forwarded to the cluster, which has the share group; every record comes once, and Kafka's
     * Admin through kcoord describes the group.
     */
    @Test
    void a_share_consumer_through_kcoord_gets_every_record() throws Exception {
        String topic = "gw-share";
        String group = "gw-share-group";
        cluster.createTopics(List.of(new NewTopic(topic, 2, (short) 3)));
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            // A share group starts at the latest offset unless its config says otherwise.
            AlterConfigOp earliest = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                    AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group),
                    List.of(earliest))).all().get(30, TimeUnit.SECONDS);
        }
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 100; i++) records.add(Map.entry("share-" + i, "v" + i));
        Clients.produce(kcoord.bootstrap(), topic, records);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kcoord.bootstrap());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        Set<String> seen = new HashSet<>();
        try (KafkaShareConsumer<String, String> consumer =
                new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (seen.size() < records.size() && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.key()));
            }
            consumer.commitSync();
            try (Admin admin = Clients.admin(kcoord.bootstrap())) {
                ShareGroupDescription described = admin.describeShareGroups(List.of(group)).describedGroups()
                        .get(group).get(30, TimeUnit.SECONDS);
                assertEquals(1, described.members().size(), described.toString());
            }
        }
        assertEquals(records.stream().map(Map.Entry::getKey).collect(java.util.stream.Collectors.toSet()), seen,
                "kcoord log:\n" + kcoord.logTail());
    }

    /**
     * The answer to {@code request} once the broker knows the topic: a topic the controller
     * created reaches each broker a little later (at most 30 s here).
     */
    private static AbstractResponse onceKnown(WireClient wire, AbstractRequest.Builder<?> request, short version,
            java.util.function.Function<AbstractResponse, Short> code) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            AbstractResponse answer = wire.send(request, version);
            short c = code.apply(answer);
            boolean unknown = c == Errors.UNKNOWN_TOPIC_OR_PARTITION.code() || c == Errors.UNKNOWN_TOPIC_ID.code();
            if (!unknown || System.nanoTime() > deadline) return answer;
            Thread.sleep(50);
        }
    }

    @Test
    void records_produced_and_consumed_through_kcoord_are_exact_and_the_same_on_the_cluster() throws Exception {
        String topic = "gw-records";
        String group = "gw-classic-group";
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        Map<String, String> sent = new HashMap<>();
        Properties producerProps = new Properties();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kcoord.bootstrap());
        producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
        producerProps.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                sent.put("k-" + i, "v-" + i);
                producer.send(new ProducerRecord<>(topic, "k-" + i, "v-" + i));
            }
            producer.flush();
        }

        Properties consumerProps = new Properties();
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kcoord.bootstrap());
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        consumerProps.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        Map<String, String> consumed = new HashMap<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> all = pollAll(consumer, RECORDS);
            for (ConsumerRecord<String, String> r : all) consumed.put(r.key(), r.value());
            assertEquals(RECORDS, all.size(), "no record twice");
            consumer.commitSync(Duration.ofSeconds(30));
        }
        assertEquals(sent, consumed);

        // Asked directly, the cluster has the group's offsets: every record consumed.
        try (Admin direct = Clients.admin(cluster.bootstrap())) {
            Map<TopicPartition, OffsetAndMetadata> offsets = direct.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            long committed = offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            assertEquals(3, offsets.size(), "offsets " + offsets);
            assertEquals(RECORDS, committed);
        }

        // Read directly from the cluster, the records are the same.
        Properties directProps = new Properties();
        directProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        directProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        Map<String, String> direct = new HashMap<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(directProps, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < 3; p++) partitions.add(new TopicPartition(topic, p));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            for (ConsumerRecord<String, String> r : pollAll(consumer, RECORDS)) direct.put(r.key(), r.value());
        }
        assertEquals(sent, direct);
    }

    @Test
    void api_versions_through_kcoord_advertise_the_streams_group_apis() throws Exception {
        try (WireClient wire = new WireClient(kcoord.bootstrap(), "gateway-test")) {
            ApiVersionsResponse response = (ApiVersionsResponse) wire.send(new ApiVersionsRequest.Builder(), (short) 3);
            assertEquals(0, response.data().errorCode());
            ApiVersion heartbeat = response.data().apiKeys().find(ApiKeys.STREAMS_GROUP_HEARTBEAT.id);
            ApiVersion describe = response.data().apiKeys().find(ApiKeys.STREAMS_GROUP_DESCRIBE.id);
            assertTrue(heartbeat != null && describe != null, "streams group APIs advertised: " + response.data());
            assertTrue(response.data().apiKeys().find(ApiKeys.FETCH.id) != null, "Fetch advertised");
            // The cluster's features, which clients decide by (metadata.version and
            // transaction.version among them), not kcoord's own.
            String broker = cluster.bootstrap().split(",")[0];
            try (WireClient direct = new WireClient(broker, "gateway-test")) {
                ApiVersionsResponse theirs = (ApiVersionsResponse) direct.send(new ApiVersionsRequest.Builder(), (short) 3);
                for (String feature : List.of("metadata.version", "transaction.version")) {
                    assertEquals(theirs.data().finalizedFeatures().find(feature).maxVersionLevel(),
                            response.data().finalizedFeatures().find(feature).maxVersionLevel(), feature);
                }
            }
        }
    }

    @Test
    void a_stateful_streams_app_through_kcoord_counts_exactly_on_the_cluster() throws Exception {
        String app = "gw-stateful";
        // Its input and output live in the cluster, created and filled there directly.
        cluster.createTopics(List.of(new NewTopic("words", 2, (short) 3),
                new NewTopic("word-counts", 2, (short) 3), new NewTopic("prices", 1, (short) 3)));
        List<String> words = List.of("apple", "banana", "cherry");
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            for (String word : words) records.add(Map.entry("k" + i + word, word));
        }
        Clients.produce(cluster.bootstrap(), "words", records);

        Properties props = Clients.streamsProps(kcoord.bootstrap(), app, Clients.tempDir(app));
        props.put(org.apache.kafka.streams.StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        org.apache.kafka.streams.KafkaStreams streams =
                Clients.startRunning(Shapes.stateful().topology(), props, Duration.ofSeconds(120));
        try {
            Map<String, Long> last = new HashMap<>();
            Clients.await(() -> {
                for (var r : Clients.readAllLongs(cluster.bootstrap(), "word-counts")) {
                    last.put(r.key(), r.value());
                }
                return words.stream().allMatch(w -> Long.valueOf(100).equals(last.get(w)));
            }, Duration.ofSeconds(120), () -> "counts " + last + ", expected 100 each; kcoord:\n"
                    + kcoord.logTail());
            // Through kcoord, Kafka's Admin sees the streams group kcoord coordinates: listed
            // with the cluster's groups, and described by kcoord (its coordinator port).
            try (Admin admin = Clients.admin(kcoord.bootstrap())) {
                Map<String, Optional<GroupType>> listed = new HashMap<>();
                for (GroupListing g : admin.listGroups().all().get(30, TimeUnit.SECONDS)) {
                    listed.put(g.groupId(), g.type());
                }
                assertEquals(Optional.of(GroupType.STREAMS), listed.get(app), "groups " + listed);
                StreamsGroupDescription group = admin.describeStreamsGroups(List.of(app))
                        .describedGroups().get(app).get(30, TimeUnit.SECONDS);
                assertEquals(1, group.members().size(), "members of " + group);
            }
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
        // kcoord created the app's internal topics in the cluster.
        try (Admin direct = Clients.admin(cluster.bootstrap())) {
            Set<String> names = direct.listTopics().names().get(30, TimeUnit.SECONDS);
            assertTrue(names.contains(app + "-counts-changelog"), "topics " + names);
            assertTrue(names.contains(app + "-counts-repartition"), "topics " + names);
        }
    }

    @Test
    void transactions_and_kafkas_tools_through_kcoord_behave_as_against_the_cluster() throws Exception {
        String topic = "gw-tools";
        String group = "gw-tools-group";
        cluster.createTopics(List.of(new NewTopic(topic, 2, (short) 3)));
        // A transactional producer through kcoord: one transaction committed, one aborted.
        Properties txn = new Properties();
        txn.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kcoord.bootstrap());
        txn.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "gw-tools-txn");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(txn, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "committed"));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(topic, i % 2, "a" + i, "aborted"));
            producer.abortTransaction();
        }
        // A classic group commits everything it read, through kcoord.
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kcoord.bootstrap());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> read = pollAll(consumer, 10);
            assertEquals(10, read.size(), "read_committed through kcoord: " + read);
            assertTrue(read.stream().allMatch(r -> r.value().equals("committed")), "records " + read);
            consumer.commitSync();
        }
        // Kafka's tools say the same through kcoord as against the cluster directly.
        for (String[] tool : List.of(
                new String[] {"--describe", "--group", group},
                new String[] {"--describe", "--group", group, "--state"})) {
            Tools.Run through = consumerGroups(kcoord.bootstrap(), tool);
            Tools.Run direct = consumerGroups(cluster.bootstrap(), tool);
            assertEquals(0, through.exitCode(), through.toString());
            // The same but for addresses: kcoord's ports stand for the cluster's brokers (same ids).
            assertEquals(withoutAddresses(direct.stdout()), withoutAddresses(through.stdout()),
                    "kafka-consumer-groups " + String.join(" ", tool));
        }
        Tools.Run through = Tools.kafkaTopics("--bootstrap-server", kcoord.bootstrap(), "--describe", "--topic", topic);
        Tools.Run direct = Tools.kafkaTopics("--bootstrap-server", cluster.bootstrap(), "--describe", "--topic", topic);
        assertEquals(0, through.exitCode(), through.toString());
        // DescribeTopicPartitions is forwarded, so the tool prints the cluster's ELR columns too.
        assertEquals(direct.stdout(), through.stdout(), "kafka-topics --describe");
        assertFalse(through.stdout().contains("Elr: N/A"), through.stdout());
        // kafka-acls through kcoord manages the cluster's ACLs (this cluster has no authorizer,
        // so both say so alike; an upstream with one is crates/server/tests/gateway.rs').
        Tools.Run aclsThrough = Tools.kafkaAcls("--bootstrap-server", kcoord.bootstrap(), "--list");
        Tools.Run aclsDirect = Tools.kafkaAcls("--bootstrap-server", cluster.bootstrap(), "--list");
        assertEquals(aclsDirect.exitCode(), aclsThrough.exitCode(), aclsThrough.toString());
        assertEquals(firstLine(aclsDirect.stdout() + aclsDirect.stderr()),
                firstLine(aclsThrough.stdout() + aclsThrough.stderr()), "kafka-acls --list");
    }

    /**
     * The cluster-administration RPCs a gateway forwards without serving them itself
     * (ElectLeaders, partition reassignments, DescribeQuorum, UpdateFeatures, UnregisterBroker,
     * AlterReplicaLogDirs): Kafka's Admin through kcoord gets what it gets from the cluster.
     */
    @Test
    void cluster_administration_through_kcoord_answers_as_the_cluster_does() throws Exception {
        String topic = "gw-admin-ops";
        cluster.createTopics(List.of(new NewTopic(topic, 1, (short) 3)));
        TopicPartition partition = new TopicPartition(topic, 0);
        try (Admin through = Clients.admin(kcoord.bootstrap()); Admin direct = Clients.admin(cluster.bootstrap())) {
            described(through, topic);
            for (Admin admin : List.of(through, direct)) {
                assertEquals(Map.of(), admin.listPartitionReassignments().reassignments().get(30, TimeUnit.SECONDS));
            }
            Map<Admin, List<String>> outcomes = new HashMap<>();
            for (Admin admin : List.of(through, direct)) {
                List<String> seen = new ArrayList<>();
                seen.add(outcome(admin.electLeaders(ElectionType.PREFERRED, Set.of(partition)).partitions()
                        .thenApply(m -> m.get(partition).map(e -> e.getClass().getSimpleName()).orElse("elected"))));
                seen.add(outcome(admin.alterPartitionReassignments(Map.of(partition, Optional.empty())).all()));
                QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
                seen.add("leader " + quorum.leaderId() + " voters "
                        + quorum.voters().stream().map(QuorumInfo.ReplicaState::replicaId).sorted().toList());
                short level = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS)
                        .finalizedFeatures().get("metadata.version").maxVersionLevel();
                seen.add(outcome(admin.updateFeatures(
                        Map.of("metadata.version", new FeatureUpdate(level, FeatureUpdate.UpgradeType.UPGRADE)),
                        new UpdateFeaturesOptions().validateOnly(true)).all()));
                seen.add(outcome(admin.unregisterBroker(99).all()));
                seen.add(outcome(admin.alterReplicaLogDirs(
                        Map.of(new TopicPartitionReplica(topic, 0, 0), "/no/such/log/dir")).all()));
                outcomes.put(admin, seen);
            }
            assertEquals(outcomes.get(direct), outcomes.get(through));
            assertEquals("ElectionNotNeededException", outcomes.get(through).get(0), outcomes.toString());
            assertEquals("ok", outcomes.get(through).get(3), "a validate-only UpdateFeatures " + outcomes);
        }
        // A config set through kcoord for a group that does not exist is the cluster's, and
        // kafka-configs lists it through kcoord (ListConfigResources is forwarded) as directly.
        String group = "gw-configured-group";
        Tools.Run set = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter",
                "--entity-type", "groups", "--entity-name", group, "--add-config", "consumer.session.timeout.ms=50000");
        assertEquals(0, set.exitCode(), set.toString());
        String block = "Dynamic configs for group " + group + " are:";
        for (String bootstrap : List.of(kcoord.bootstrap(), cluster.bootstrap())) {
            Tools.Run all = Tools.kafkaConfigs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "groups");
            assertEquals(0, all.exitCode(), all.toString());
            assertTrue(all.stdout().contains(block + "\n  consumer.session.timeout.ms=50000"), bootstrap + ": " + all.stdout());
        }
    }

    /** "ok", or the simple name of the exception the future failed with. */
    private static String outcome(KafkaFuture<?> future) throws Exception {
        try {
            Object value = future.get(30, TimeUnit.SECONDS);
            return value instanceof String text ? text : "ok";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
    }

    /**
     * The topic as {@code admin} describes it, once the broker asked knows it: a topic just
     * created reaches each broker's metadata a moment after CreateTopics is answered, and
     * Kafka's Admin does not retry UNKNOWN_TOPIC_OR_PARTITION (bounded by a deadline).
     */
    private static TopicDescription described(Admin admin, String name) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return admin.describeTopics(List.of(name)).allTopicNames().get(30, TimeUnit.SECONDS).get(name);
            } catch (java.util.concurrent.ExecutionException e) {
                boolean unknown = e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
                if (!unknown || System.nanoTime() > deadline) throw e;
                Thread.sleep(100);
            }
        }
    }

    private static String firstLine(String text) {
        return text.strip().lines().findFirst().orElse("");
    }

    private static String withoutAddresses(String text) {
        return text.replaceAll("127\\.0\\.0\\.1:\\d+\\s*", "ADDRESS ");
    }

    private static Tools.Run consumerGroups(String bootstrap, String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", bootstrap));
        all.addAll(List.of(args));
        return Tools.inProcess(org.apache.kafka.tools.consumer.group.ConsumerGroupCommand::main,
                all.toArray(String[]::new));
    }

    /** Polls until {@code count} records came (each poll bounded; the loop bounded by a deadline). */
    private static List<ConsumerRecord<String, String>> pollAll(KafkaConsumer<String, String> consumer, int count) {
        List<ConsumerRecord<String, String>> all = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (all.size() < count && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(500)).forEach(all::add);
        }
        // A little longer: nothing more may come.
        consumer.poll(Duration.ofMillis(500)).forEach(all::add);
        return all;
    }

    /**
     * The first of {@code n} consecutive free loopback ports, below Linux's ephemeral range
     * (32768 and up) so that no outgoing connection takes one between this choice and the
     * daemon binding it.
     */
    static int freePortRange(int n) throws IOException {
        for (int attempt = 0; attempt < 200; attempt++) {
            int start = ThreadLocalRandom.current().nextInt(20_000, 32_000);
            if (allFree(start, n)) return start;
        }
        throw new IllegalStateException("no " + n + " consecutive free ports");
    }

    private static boolean allFree(int start, int n) {
        for (int port = start; port < start + n; port++) {
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                socket.setReuseAddress(true);
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }
}
