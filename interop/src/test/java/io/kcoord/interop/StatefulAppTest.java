package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A stateful Kafka Streams 4.4 app (groupBy + count: a repartition and a changelog topic, plus
 * a global table) on kcoord alone: the coordinator creates its internal topics as Kafka does,
 * the counts are right, and an instance restarted on an empty state directory restores its
 * store from the changelog and counts on from there.
 */
class StatefulAppTest {
    private static final String APP = "shape-stateful";
    private static final String REPARTITION = APP + "-counts-repartition";
    private static final String CHANGELOG = APP + "-counts-changelog";
    private static final String PRICES_CHANGELOG = APP + "-prices-store-changelog";
    private static final List<String> WORDS = List.of("apple", "banana", "cherry", "date", "elder");

    private Kcoord kcoord;

    @BeforeEach
    void start() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        kcoord = Kcoord.start("stateful-app", config.toArray(String[]::new));
    }

    @AfterEach
    void stop() throws Exception {
        kcoord.close();
    }

    private Properties props() throws Exception {
        Properties props = Clients.streamsProps(kcoord.bootstrap(), APP, Clients.tempDir(APP));
        // Every update reaches the output topic, so the last value per key is the count.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        return props;
    }

    /** {@code rounds} records of each word, in a mixed order, keyed by a sequence number. */
    private void produceWords(int from, int rounds) throws Exception {
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = from; i < from + rounds; i++) {
            for (String word : WORDS) records.add(Map.entry("k" + i + word, word));
        }
        Clients.produce(kcoord.bootstrap(), "words", records);
    }

    /** Waits until the last count of every word in word-counts is {@code expected}. */
    private void awaitCounts(long expected) throws Exception {
        Map<String, Long> last = new TreeMap<>();
        Clients.await(() -> {
            for (var r : Clients.readAllLongs(kcoord.bootstrap(), "word-counts")) {
                last.put(r.key(), r.value());
            }
            return WORDS.stream().allMatch(w -> Long.valueOf(expected).equals(last.get(w)));
        }, Duration.ofSeconds(90), () -> "counts " + last + ", expected " + expected + " each");
    }

    @Test
    void counts_are_right_and_a_new_instance_restores_them_from_the_changelog() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 2, "words", "word-counts");
        Clients.createTopics(kcoord.bootstrap(), 1, "prices");
        produceWords(0, 100);

        KafkaStreams first = Clients.startRunning(Shapes.stateful().topology(), props(),
                Duration.ofSeconds(90));
        try {
            awaitCounts(100);
        } finally {
            first.close(Duration.ofSeconds(30));
        }

        // A new instance with an empty state directory: it restores "counts" from the changelog.
        produceWords(100, 50);
        KafkaStreams second = Clients.startRunning(Shapes.stateful().topology(), props(),
                Duration.ofSeconds(90));
        try {
            awaitCounts(150);
        } finally {
            second.close(Duration.ofSeconds(30));
        }
    }

    @Test
    void the_coordinator_creates_the_internal_topics_with_kafkas_partition_counts_and_configs()
            throws Exception {
        Clients.createTopics(kcoord.bootstrap(), 3, "words", "word-counts");
        Clients.createTopics(kcoord.bootstrap(), 1, "prices");
        KafkaStreams app = Clients.startRunning(Shapes.stateful().topology(), props(),
                Duration.ofSeconds(90));
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            Map<String, TopicDescription> topics = admin
                    .describeTopics(List.of(REPARTITION, CHANGELOG))
                    .allTopicNames().get(30, TimeUnit.SECONDS);
            // Both follow the source topic's partition count; a global store has no changelog.
            assertEquals(3, topics.get(REPARTITION).partitions().size());
            assertEquals(3, topics.get(CHANGELOG).partitions().size());
            assertEquals(Set.of(), Set.copyOf(admin.listTopics().names().get(30, TimeUnit.SECONDS))
                    .stream().filter(PRICES_CHANGELOG::equals).collect(java.util.stream.Collectors.toSet()));

            Map<String, String> repartition = topicConfigs(admin, REPARTITION);
            assertEquals("delete", repartition.get("cleanup.policy"));
            assertEquals("-1", repartition.get("retention.ms"));
            assertEquals("52428800", repartition.get("segment.bytes"));
            Map<String, String> changelog = topicConfigs(admin, CHANGELOG);
            assertEquals("compact", changelog.get("cleanup.policy"));
        } finally {
            app.close(Duration.ofSeconds(30));
        }
    }

    private static Map<String, String> topicConfigs(Admin admin, String topic) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS)
                .get(resource);
        Map<String, String> values = new HashMap<>();
        config.entries().forEach(e -> values.put(e.name(), e.value()));
        return values;
    }
}
