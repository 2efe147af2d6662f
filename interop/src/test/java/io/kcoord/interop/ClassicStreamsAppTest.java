package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.CloseOptions.GroupMembershipOperation;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

/**
 * A stateful Kafka Streams 4.4 app (groupBy + count: a repartition and a changelog topic, and a
 * global table) with the default group protocol, classic: Streams' own
 * {@code StreamsPartitionAssignor} runs in the group leader, which creates the internal topics
 * with the Admin client, and the members meet in a classic group (JoinGroup and SyncGroup with
 * protocol type {@code consumer} and assignor {@code stream}). Two instances share the work, one
 * leaves, and the counts are exact. Against the server (kcoord; Kafka 4.4 with
 * {@code -Dinterop.target=kafka}).
 */
class ClassicStreamsAppTest {
    private static final String APP = "classic-streams";
    private static final List<String> WORDS = List.of("apple", "banana", "cherry", "date", "elder");

    private static Properties props(String bootstrap) throws Exception {
        Properties props = Clients.streamsProps(bootstrap, APP, Clients.tempDir(APP));
        // The default protocol: the classic one.
        props.remove(StreamsConfig.GROUP_PROTOCOL_CONFIG);
        // Every update reaches the output topic, so the last value per key is the count.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        return props;
    }

    /** {@code rounds} records of each word keyed by a sequence number. */
    private static void produceWords(String bootstrap, int from, int rounds) throws Exception {
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = from; i < from + rounds; i++) {
            for (String word : WORDS) records.add(Map.entry("k" + i + word, word));
        }
        Clients.produce(bootstrap, "words", records);
    }

    /** Waits until the last count of every word in word-counts is {@code expected}. */
    private static void awaitCounts(String bootstrap, long expected) throws Exception {
        Map<String, Long> last = new TreeMap<>();
        Clients.await(() -> {
            for (var r : Clients.readAllLongs(bootstrap, "word-counts")) last.put(r.key(), r.value());
            return WORDS.stream().allMatch(w -> Long.valueOf(expected).equals(last.get(w)));
        }, Duration.ofSeconds(90), () -> "counts " + last + ", expected " + expected + " each");
        // Exact: no count went past the expected one (a record counted twice would).
        assertEquals(WORDS.size(), last.size());
        last.values().forEach(v -> assertEquals(expected, v, "counts " + last));
    }

    private static int activeTasks(KafkaStreams app) {
        return app.metadataForLocalThreads().stream().mapToInt(t -> t.activeTasks().size()).sum();
    }

    @Test
    void two_instances_count_exactly_with_the_classic_protocol_and_one_leaves() throws Exception {
        try (Target target = Target.start("classic-streams", ClassicConsumerGroupTest.SETTINGS);
                Admin admin = Clients.admin(target.bootstrap())) {
            String bootstrap = target.bootstrap();
            Clients.createTopics(bootstrap, 2, "words", "word-counts");
            Clients.createTopics(bootstrap, 1, "prices");
            produceWords(bootstrap, 0, 100);

            List<KafkaStreams> apps = new ArrayList<>();
            try {
                KafkaStreams first = new KafkaStreams(Shapes.stateful().topology(), props(bootstrap));
                KafkaStreams second = new KafkaStreams(Shapes.stateful().topology(), props(bootstrap));
                apps.add(first);
                apps.add(second);
                first.start();
                second.start();
                Clients.awaitState(first, KafkaStreams.State.RUNNING, Duration.ofSeconds(90));
                Clients.awaitState(second, KafkaStreams.State.RUNNING, Duration.ofSeconds(90));
                awaitCounts(bootstrap, 100);

                // The leader created the internal topics with the source topic's partitions.
                Map<String, TopicDescription> internal = admin.describeTopics(
                        List.of(APP + "-counts-repartition", APP + "-counts-changelog"))
                        .allTopicNames().get(30, TimeUnit.SECONDS);
                internal.values().forEach(t -> assertEquals(2, t.partitions().size(), t.toString()));

                // One classic group of two members, each running tasks (2 sub-topologies x 2
                // partitions), once both are settled.
                Clients.await(() -> {
                    ConsumerGroupDescription d = describe(admin);
                    return d.groupState() == GroupState.STABLE && d.members().size() == 2
                            && activeTasks(first) > 0 && activeTasks(second) > 0
                            && activeTasks(first) + activeTasks(second) == 4;
                }, Duration.ofSeconds(60), () -> "not two stable members sharing 4 tasks: " + describe(admin)
                        + " " + first.metadataForLocalThreads() + " " + second.metadataForLocalThreads());
                ConsumerGroupDescription d = describe(admin);
                assertEquals(GroupType.CLASSIC, d.type());
                assertEquals("stream", d.partitionAssignor());
                assertFalse(d.isSimpleConsumerGroup());

                // One instance leaves (LeaveGroup; Streams stays in the group on a plain close):
                // the other takes every task and counts on.
                produceWords(bootstrap, 100, 50);
                first.close(CloseOptions.groupMembershipOperation(GroupMembershipOperation.LEAVE_GROUP)
                        .withTimeout(Duration.ofSeconds(30)));
                awaitCounts(bootstrap, 150);
                Clients.await(() -> activeTasks(second) == 4, Duration.ofSeconds(60),
                        () -> "the remaining instance runs " + second.metadataForLocalThreads());
                produceWords(bootstrap, 150, 10);
                awaitCounts(bootstrap, 160);
            } finally {
                Clients.closeAll(apps);
            }
        }
    }

    private static ConsumerGroupDescription describe(Admin admin) {
        try {
            return admin.describeConsumerGroups(List.of(APP)).all().get(30, TimeUnit.SECONDS).get(APP);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
