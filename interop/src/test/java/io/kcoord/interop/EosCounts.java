package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
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

/**
 * The input and the check of the exactly-once counting app ({@code apps/EosCountAppMain}):
 * {@code records} records spread over {@code groups} groups written to {@code eos-in} in the
 * background, and a read_committed read of {@code eos-out} that must show every group's counts
 * 1, 2, ..., n exactly once each and in order.
 */
final class EosCounts {
    private final int records;
    private final int groups;
    final AtomicInteger sent = new AtomicInteger();
    private final AtomicReference<Throwable> failed = new AtomicReference<>();
    private Thread producer;

    EosCounts(int records, int groups) {
        this.records = records;
        this.groups = groups;
    }

    /** The group record {@code i} of the input belongs to. */
    private String group(int i) {
        return "g" + (i * 7 % groups);
    }

    /** Starts writing the input through {@code bootstrap}, a pause every 25 records. */
    void startInput(String bootstrap, long pauseMs) {
        producer = new Thread(() -> {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
            props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 120_000);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
                List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
                for (int i = 0; i < records; i++) {
                    acks.add(p.send(new ProducerRecord<>("eos-in", "r" + i, group(i))));
                    sent.incrementAndGet();
                    if (i % 25 == 24) Thread.sleep(pauseMs);
                }
                for (java.util.concurrent.Future<?> f : acks) f.get(120, TimeUnit.SECONDS);
            } catch (Throwable e) {
                failed.set(e);
            }
        }, "eos-input");
        producer.start();
    }

    /** Waits until the input has written {@code count} records. */
    void awaitSent(int count) throws InterruptedException {
        Clients.await(() -> sent.get() >= count, Duration.ofSeconds(120), () -> "input at " + sent.get());
    }

    /** Waits for the input to be written whole. */
    void awaitInput() throws InterruptedException {
        producer.join(240_000);
        if (failed.get() != null) throw new AssertionError("the input producer failed", failed.get());
        assertEquals(records, sent.get());
    }

    /**
     * Reads {@code eos-out} read_committed through {@code bootstrap} until every group reached its
     * count, then checks every group's counts are 1, 2, ..., n: no increment lost or applied twice.
     */
    void assertCountedExactlyOnce(String bootstrap, List<AutoCloseable> open, Supplier<String> context)
            throws InterruptedException {
        Map<String, Long> expected = new TreeMap<>();
        for (int i = 0; i < records; i++) expected.merge(group(i), 1L, Long::sum);
        Map<String, List<Long>> seen = new TreeMap<>();
        KafkaConsumer<String, Long> consumer = readCommitted(bootstrap);
        open.add(consumer);
        Clients.await(() -> {
            for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
                seen.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
            }
            return expected.entrySet().stream().allMatch(e -> {
                List<Long> counts = seen.get(e.getKey());
                return counts != null && counts.get(counts.size() - 1) >= e.getValue();
            });
        }, Duration.ofSeconds(240), () -> "last counts " + last(seen) + ", expected " + expected + "; " + context.get());
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

    private static KafkaConsumer<String, Long> readCommitted(String bootstrap) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        KafkaConsumer<String, Long> c = new KafkaConsumer<>(props, new StringDeserializer(), new LongDeserializer());
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo p : c.partitionsFor("eos-out", Duration.ofSeconds(30))) {
            partitions.add(new TopicPartition("eos-out", p.partition()));
        }
        c.assign(partitions);
        c.seekToBeginning(partitions);
        return c;
    }
}
