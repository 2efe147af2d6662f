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

/**
 * A stateful Kafka Streams 4.4 app with {@code processing.guarantee=exactly_once_v2} on the
 * streams group protocol (groupBy: a repartition topic; count: a store and its changelog), two
 * instances in their own JVMs, while a producer writes a known keyed input: instances are
 * killed with SIGKILL mid-stream three times and restarted on their state directories (so on
 * their process ids, hence their transactional ids), and on kcoord the daemon itself is killed
 * and restarted on its data directory. A read_committed consumer of the output then sees, for
 * every group, the counts 1, 2, ..., n exactly once each and in order (no increment lost, none
 * applied twice), n being the number of input records of that group.
 *
 * <p>Runs on kcoord; {@code -Dinterop.target=kafka} runs it on Kafka 4.4 (without the daemon
 * restart).
 */
class ExactlyOnceStreamsTest {
    private static final String APP = "eos-count";
    private static final int PARTITIONS = 4;
    private static final int GROUPS = 20;
    private static final int RECORDS = 3000;

    private Target target;
    private final Map<String, Process> instances = new HashMap<>();
    private final Map<String, Path> logs = new HashMap<>();
    private final Map<String, Path> stateDirs = new HashMap<>();
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        List<String> settings = new ArrayList<>(Kcoord.fastStreamsGroups());
        settings.add("transaction.state.log.num.partitions=5");
        settings.add("transaction.abort.timed.out.transaction.cleanup.interval.ms=1000");
        target = Target.start("eos-streams", settings);
        Clients.createTopics(target.bootstrap(), PARTITIONS, "eos-in", "eos-out");
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
        target.close();
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
        instances.put(name, Tools.spawnJava(log, EosCountAppMain.class.getName(), target.bootstrap(), APP, state.toString()));
    }

    /** Waits until the instance (this start of it) printed STATE RUNNING. */
    private void awaitRunning(String name) throws Exception {
        Clients.await(() -> {
            try {
                return Files.readString(logs.get(name)).contains("STATE RUNNING");
            } catch (java.io.IOException e) {
                return false;
            }
        }, Duration.ofSeconds(120), () -> "instance " + name + " is not RUNNING; " + target.logTail());
    }

    private void kill(String name) throws Exception {
        Process p = instances.remove(name);
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
    }

    /** The group record {@code i} of the input belongs to. */
    private static String group(int i) {
        return "g" + (i * 7 % GROUPS);
    }

    @Test
    void every_count_is_applied_exactly_once_through_kills_and_restarts() throws Exception {
        startInstance("a");
        startInstance("b");
        awaitRunning("a");
        awaitRunning("b");

        AtomicInteger sent = new AtomicInteger();
        AtomicReference<Throwable> producerFailed = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
            props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 120_000);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
                List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
                for (int i = 0; i < RECORDS; i++) {
                    acks.add(p.send(new ProducerRecord<>("eos-in", "r" + i, group(i))));
                    sent.incrementAndGet();
                    if (i % 25 == 24) Thread.sleep(200);
                }
                for (java.util.concurrent.Future<?> f : acks) f.get(120, TimeUnit.SECONDS);
            } catch (Throwable e) {
                producerFailed.set(e);
            }
        }, "eos-input");
        producer.start();

        // Kill -9 mid-stream, three times, each instance restarted on its own state directory.
        String[] victims = {"a", "b", "a"};
        for (int round = 0; round < victims.length; round++) {
            int threshold = (round + 1) * RECORDS / 5;
            Clients.await(() -> sent.get() >= threshold, Duration.ofSeconds(120), () -> "input at " + sent.get());
            awaitRunning(victims[round]); // killed while it processes
            kill(victims[round]);
            Thread.sleep(1000); // the instance is gone while records keep arriving
            startInstance(victims[round]);
        }
        if (!target.isKafka()) {
            Clients.await(() -> sent.get() >= 4 * RECORDS / 5, Duration.ofSeconds(120), () -> "input at " + sent.get());
            target.killAndRestart(); // SIGKILL, then the daemon again on its data directory
        }
        producer.join(240_000);
        awaitRunning("a");
        awaitRunning("b");
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
        }, Duration.ofSeconds(240), () -> "last counts " + last(seen) + ", expected " + expected + "; " + target.logTail());

        // Every group's committed counts are 1, 2, ..., n: no increment lost or applied twice.
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            List<Long> counts = seen.get(e.getKey());
            List<Long> oneByOne = new ArrayList<>();
            for (long c = 1; c <= e.getValue(); c++) oneByOne.add(c);
            assertEquals(oneByOne, counts, "the committed counts of " + e.getKey());
        }
    }

    private static Map<String, Long> last(Map<String, List<Long>> seen) {
        Map<String, Long> out = new TreeMap<>();
        seen.forEach((k, v) -> out.put(k, v.get(v.size() - 1)));
        return out;
    }

    private KafkaConsumer<String, Long> readCommitted() {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap());
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
