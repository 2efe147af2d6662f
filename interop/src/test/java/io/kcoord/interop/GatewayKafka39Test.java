package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Gateway mode in front of an Apache Kafka 3.9 broker, which has no streams groups at all: a
 * stateful Kafka Streams 4.4 app with {@code group.protocol=streams} runs through kcoord, its
 * input and output read and written directly in the 3.9 cluster, and kcoord's coordinator log
 * and internal topics live there.
 */
class GatewayKafka39Test {
    private static final String APP = "gw39-app";
    private static final String INPUT = "gw39-words";
    private static final String OUTPUT = "gw39-counts";
    private static final List<String> WORDS = List.of("apple", "banana", "cherry");

    private static Kafka39Broker kafka;
    private static Kcoord kcoord;

    @BeforeAll
    static void start() throws Exception {
        kafka = Kafka39Broker.start();
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        config.add("upstream.bootstrap.servers=" + kafka.bootstrap());
        config.add("gateway.broker.port.start=" + GatewayTest.freePortRange(2));
        kcoord = Kcoord.start("gateway-39", config.toArray(String[]::new));
    }

    @AfterAll
    static void stop() throws Exception {
        if (kcoord != null) kcoord.close();
        if (kafka != null) kafka.close();
    }

    @Test
    void a_streams_app_runs_through_kcoord_in_front_of_a_cluster_without_streams_groups() throws Exception {
        try (Admin direct = Clients.admin(kafka.bootstrap())) {
            direct.createTopics(List.of(new NewTopic(INPUT, 2, (short) 1), new NewTopic(OUTPUT, 2, (short) 1)))
                    .all().get(60, TimeUnit.SECONDS);
        }
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            for (String word : WORDS) records.add(Map.entry("k" + i + word, word));
        }
        Clients.produce(kafka.bootstrap(), INPUT, records);

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(INPUT)
                .groupBy((key, word) -> word)
                .count()
                .toStream()
                .to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
        Topology topology = builder.build();
        Properties props = Clients.streamsProps(kcoord.bootstrap(), APP, Clients.tempDir(APP));
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        KafkaStreams streams = Clients.startRunning(topology, props, Duration.ofSeconds(120));
        try {
            Map<String, Long> last = new HashMap<>();
            Clients.await(() -> {
                for (var r : Clients.readAllLongs(kafka.bootstrap(), OUTPUT)) last.put(r.key(), r.value());
                return WORDS.stream().allMatch(w -> Long.valueOf(100).equals(last.get(w)));
            }, Duration.ofSeconds(120), () -> "counts " + last + ", expected 100 each; kcoord:\n"
                    + kcoord.logTail() + "\nKafka 3.9:\n" + kafka.logTail());
            try (Admin admin = Clients.admin(kcoord.bootstrap())) {
                StreamsGroupDescription group = admin.describeStreamsGroups(List.of(APP))
                        .describedGroups().get(APP).get(30, TimeUnit.SECONDS);
                assertEquals(1, group.members().size(), "members of " + group);
                assertEquals(1, group.subtopologies().stream()
                        .filter(s -> s.sourceTopics().contains(INPUT)).count(), "the app's topology: " + group);
            }
        } finally {
            streams.close(Duration.ofSeconds(30));
        }
        // Everything kcoord keeps is in the 3.9 cluster: its coordinator log and the app's
        // internal topics.
        try (Admin direct = Clients.admin(kafka.bootstrap())) {
            Set<String> names = direct.listTopics().names().get(30, TimeUnit.SECONDS);
            assertTrue(names.contains("__kcoord_coordinator_log"), "topics " + names);
            assertTrue(names.stream().anyMatch(n -> n.startsWith(APP) && n.endsWith("-changelog")), "topics " + names);
            assertTrue(names.stream().anyMatch(n -> n.startsWith(APP) && n.endsWith("-repartition")), "topics " + names);
        }
    }
}
