package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import io.kcoord.interop.apps.EosCountAppMain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * An {@code exactly_once_v2} Kafka Streams 4.4 app (a repartition topic, a count store and its
 * changelog) through two kcoord nodes in front of a real Apache Kafka 4.4 cluster
 * ({@link KafkaCluster}): the cluster's transaction coordinator runs the app's transactions, the
 * offsets kcoord checks are committed by the cluster with them (docs/gateway.md). An app
 * instance is killed with SIGKILL mid-stream and restarted, then the kcoord node serving the
 * group is killed with SIGKILL; a read_committed consumer of the output, reading the cluster
 * directly, then sees every group's counts 1, 2, ..., n exactly once each and in order.
 */
class GatewayExactlyOnceTest {
    private static final String APP = "gw-eos-count";
    private static final int PARTITIONS = 4;
    private static final int GROUPS = 20;
    private static final int RECORDS = 2000;
    private static final int SHARDS = 8;

    private KafkaCluster cluster;
    private final List<Kcoord> nodes = new ArrayList<>();
    private final Map<String, Process> instances = new HashMap<>();
    private final Map<String, Path> logs = new HashMap<>();
    private final Map<String, Path> stateDirs = new HashMap<>();
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        cluster = KafkaCluster.shared();
        for (int i = 0; i < 2; i++) {
            List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
            config.add("upstream.bootstrap.servers=" + cluster.bootstrap());
            config.add("gateway.broker.port.start=" + GatewayTest.freePortRange(3));
            config.add("gateway.coordinator.log.topic=gw-eos-coordinator-log");
            config.add("gateway.node.session.timeout.ms=6000");
            config.add("offsets.topic.num.partitions=" + SHARDS);
            nodes.add(Kcoord.start("gateway-eos-" + i, config.toArray(String[]::new)));
        }
        cluster.createTopics(List.of(new NewTopic("eos-in", PARTITIONS, (short) 3),
                new NewTopic("eos-out", PARTITIONS, (short) 3)));
    }

    @AfterEach
    void stop() throws Exception {
        for (Process p : instances.values()) p.destroyForcibly();
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway
            }
        }
        for (Kcoord node : nodes) node.close();
    }

    private String bootstrap() {
        return nodes.get(0).bootstrap() + "," + nodes.get(1).bootstrap();
    }

    private void startInstance(String name) throws Exception {
        Path state = stateDirs.computeIfAbsent(name, n -> {
            try {
                return Clients.tempDir(APP + "-" + n);
            } catch (java.io.IOException e) {
                throw new RuntimeException(e);
            }
        });
        Path log = Path.of(System.getProperty("kcoord.logs", "target/kcoord-logs"),
                APP + "-" + name + "-" + System.nanoTime() + ".log");
        Files.createDirectories(log.getParent());
        logs.put(name, log);
        instances.put(name, Tools.spawnJava(log, EosCountAppMain.class.getName(), bootstrap(), APP, state.toString()));
    }

    private void awaitRunning(String name) throws Exception {
        Clients.await(() -> {
            try {
                return Files.readString(logs.get(name)).contains("STATE RUNNING");
            } catch (java.io.IOException e) {
                return false;
            }
        }, Duration.ofSeconds(120), () -> "instance " + name + " is not RUNNING");
    }

    private static String group(int i) {
        return "g" + (i * 7 % GROUPS);
    }

    @Test
    void counts_stay_exactly_once_through_the_kill_of_an_instance_and_of_a_kcoord_node() throws Exception {
        startInstance("a");
        startInstance("b");
        awaitRunning("a");
        awaitRunning("b");

        AtomicInteger sent = new AtomicInteger();
        AtomicReference<Throwable> producerFailed = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
                List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
                for (int i = 0; i < RECORDS; i++) {
                    acks.add(p.send(new ProducerRecord<>("eos-in", "r" + i, group(i))));
                    sent.incrementAndGet();
                    if (i % 25 == 24) Thread.sleep(150);
                }
                for (java.util.concurrent.Future<?> f : acks) f.get(120, TimeUnit.SECONDS);
            } catch (Throwable e) {
                producerFailed.set(e);
            }
        }, "gw-eos-input");
        producer.start();

        Clients.await(() -> sent.get() >= RECORDS / 4, Duration.ofSeconds(120), () -> "input at " + sent.get());
        Process victim = instances.remove("a");
        victim.destroyForcibly();
        victim.waitFor(30, TimeUnit.SECONDS);
        startInstance("a");

        Clients.await(() -> sent.get() >= RECORDS / 2, Duration.ofSeconds(120), () -> "input at " + sent.get());
        int owner = GatewayNodesTest.servingNode(nodes, APP, SHARDS);
        nodes.get(owner).kill();

        producer.join(240_000);
        if (producerFailed.get() != null) throw new AssertionError("the input producer failed", producerFailed.get());
        assertEquals(RECORDS, sent.get());

        Map<String, Long> expected = new TreeMap<>();
        for (int i = 0; i < RECORDS; i++) expected.merge(group(i), 1L, Long::sum);
        Map<String, List<Long>> seen = new TreeMap<>();
        KafkaConsumer<String, Long> consumer = readCommitted();
        Clients.await(() -> {
            for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
                seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
            }
            return expected.entrySet().stream().allMatch(e -> {
                List<Long> counts = seen.get(e.getKey());
                return counts != null && counts.get(counts.size() - 1) >= e.getValue();
            });
        }, Duration.ofSeconds(240), () -> "last counts " + seen.entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue().get(e.getValue().size() - 1)).toList()
                + ", expected " + expected);
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            List<Long> counts = seen.get(e.getKey());
            List<Long> oneByOne = new ArrayList<>();
            for (long c = 1; c <= e.getValue(); c++) oneByOne.add(c);
            assertEquals(oneByOne, counts, "the committed counts of " + e.getKey());
        }
    }

    private KafkaConsumer<String, Long> readCommitted() {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        KafkaConsumer<String, Long> c = new KafkaConsumer<>(props, new StringDeserializer(), new LongDeserializer());
        open.add(c);
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo p : c.partitionsFor("eos-out", Duration.ofSeconds(30))) {
            partitions.add(new TopicPartition("eos-out", p.partition()));
        }
        c.assign(partitions);
        c.seekToBeginning(partitions);
        return c;
    }
}
