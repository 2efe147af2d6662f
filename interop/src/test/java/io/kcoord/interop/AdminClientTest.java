package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Apache Kafka 4.4's Admin client against kcoord, each call as a Kafka user makes it. */
class AdminClientTest {
    private static final String GROUP = "admin-app";
    private static final int RECORDS = 300;
    private static Kcoord kcoord;

    @BeforeAll
    static void start() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        kcoord = Kcoord.start("admin", config.toArray(String[]::new));
    }

    @AfterAll
    static void stop() throws Exception {
        kcoord.close();
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) throws Exception {
        return future.get(30, TimeUnit.SECONDS);
    }

    private static Set<String> names(Collection<GroupListing> groups) {
        return groups.stream().map(GroupListing::groupId).collect(Collectors.toSet());
    }

    /** The app's committed offsets of orders, from listStreamsGroupOffsets (OffsetFetch). */
    private static Map<TopicPartition, OffsetAndMetadata> offsets(Admin admin) throws Exception {
        return get(admin.listStreamsGroupOffsets(Map.of(GROUP, new ListStreamsGroupOffsetsSpec()))
                .partitionsToOffsetAndMetadata(GROUP));
    }

    @Test
    void a_streams_group_from_running_to_deleted() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 2, "orders", "valid-orders");
        List<Map.Entry<String, String>> input = new ArrayList<>();
        for (int i = 0; i < RECORDS; i++) input.add(Map.entry("order-" + i, "amount-" + i));
        Clients.produce(kcoord.bootstrap(), "orders", input);
        TopicPartition p0 = new TopicPartition("orders", 0);
        TopicPartition p1 = new TopicPartition("orders", 1);

        KafkaStreams app = Clients.startRunning(Shapes.filter().topology(),
                Clients.streamsProps(kcoord.bootstrap(), GROUP, Clients.tempDir(GROUP)),
                Duration.ofSeconds(60));
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            // Running: listed as a stable streams group, and only under matching filters.
            Clients.await(() -> {
                try {
                    return get(admin.listGroups(ListGroupsOptions.forStreamsGroups()
                            .inGroupStates(Set.of(GroupState.STABLE))).all()).stream()
                            .anyMatch(g -> g.groupId().equals(GROUP));
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }, Duration.ofSeconds(30), () -> GROUP + " listed as a stable streams group");
            GroupListing listed = get(admin.listGroups(ListGroupsOptions.forStreamsGroups()).all())
                    .stream().filter(g -> g.groupId().equals(GROUP)).findFirst().orElseThrow();
            assertEquals(java.util.Optional.of(GroupType.STREAMS), listed.type());
            assertEquals("streams", listed.protocol());
            assertFalse(names(get(admin.listGroups(ListGroupsOptions.forStreamsGroups()
                    .inGroupStates(Set.of(GroupState.EMPTY))).all())).contains(GROUP));
            assertFalse(names(get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all()))
                    .contains(GROUP));

            // Described without and with the topology description.
            StreamsGroupDescription plain = get(admin.describeStreamsGroups(List.of(GROUP))
                    .describedGroups().get(GROUP));
            assertEquals(GroupState.STABLE, plain.groupState());
            assertEquals(1, plain.members().size());
            assertEquals(Set.of("orders"), Set.copyOf(plain.subtopologies().iterator().next().sourceTopics()));
            assertEquals(StreamsGroupTopologyDescriptionStatus.NOT_REQUESTED, plain.topologyDescriptionStatus());
            assertTrue(plain.topologyDescription().isEmpty());
            Clients.await(() -> {
                try {
                    return get(admin.describeStreamsGroups(List.of(GROUP),
                                    new DescribeStreamsGroupsOptions().includeTopologyDescription(true))
                            .describedGroups().get(GROUP)).topologyDescription().isPresent();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }, Duration.ofSeconds(30), () -> "the topology description is stored");

            // The app commits what it processed.
            Clients.await(() -> {
                try {
                    return offsets(admin).values().stream().mapToLong(OffsetAndMetadata::offset).sum()
                            == RECORDS;
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }, Duration.ofSeconds(60), () -> "committed offsets sum up to " + RECORDS);

            // A group with members cannot be deleted.
            ExecutionException busy = assertThrows(ExecutionException.class,
                    () -> get(admin.deleteStreamsGroups(List.of(GROUP)).all()));
            assertInstanceOf(GroupNotEmptyException.class, busy.getCause());

            app.close(Duration.ofSeconds(30));
            Clients.await(() -> {
                try {
                    return get(admin.describeStreamsGroups(List.of(GROUP)).describedGroups().get(GROUP))
                            .groupState() == GroupState.EMPTY;
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }, Duration.ofSeconds(30), () -> GROUP + " is empty once the app left");

            // Offsets of the empty group: altered, then one partition's deleted.
            get(admin.alterStreamsGroupOffsets(GROUP, Map.of(p0, new OffsetAndMetadata(0))).all());
            assertEquals(0, offsets(admin).get(p0).offset());
            get(admin.deleteStreamsGroupOffsets(GROUP, Set.of(p1)).all());
            Map<TopicPartition, OffsetAndMetadata> left = offsets(admin);
            assertEquals(0, left.get(p0).offset());
            assertTrue(left.get(p1) == null, "offset of " + p1 + " deleted: " + left);

            // And the group itself.
            get(admin.deleteStreamsGroups(List.of(GROUP)).all());
            assertFalse(names(get(admin.listGroups(ListGroupsOptions.forStreamsGroups()).all()))
                    .contains(GROUP));
            ExecutionException gone = assertThrows(ExecutionException.class,
                    () -> get(admin.describeStreamsGroups(List.of(GROUP)).describedGroups().get(GROUP)));
            assertInstanceOf(GroupIdNotFoundException.class, gone.getCause());
        } finally {
            app.close(Duration.ofSeconds(30));
        }
    }

    @Test
    void cluster_and_topics() throws Exception {
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            DescribeClusterResult cluster = admin.describeCluster();
            assertEquals(1, get(cluster.nodes()).size());
            assertEquals(1, get(cluster.controller()).id());
            assertEquals(22, get(cluster.clusterId()).length());

            NewTopic topic = new NewTopic("admin-topic", 4, (short) 1)
                    .configs(Map.of("cleanup.policy", "compact", "retention.ms", "3600000"));
            get(admin.createTopics(List.of(topic)).all());
            assertTrue(get(admin.listTopics().names()).contains("admin-topic"));
            assertEquals(4, get(admin.describeTopics(List.of("admin-topic")).allTopicNames())
                    .get("admin-topic").partitions().size());

            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "admin-topic");
            Config config = get(admin.describeConfigs(List.of(resource)).all()).get(resource);
            assertEquals("compact", config.get("cleanup.policy").value());
            assertEquals("3600000", config.get("retention.ms").value());
            assertEquals("1048588", config.get("max.message.bytes").value());

            get(admin.deleteTopics(List.of("admin-topic")).all());
            Clients.await(() -> {
                try {
                    return !get(admin.listTopics().names()).contains("admin-topic");
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }, Duration.ofSeconds(30), () -> "admin-topic deleted");
        }
    }
}
