package io.kcoord.interop;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/** Apache Kafka's own clients, configured for a test against one bootstrap address. */
public final class Clients {
    private Clients() {}

    public static Admin admin(String bootstrap) {
        return admin(bootstrap, new Properties());
    }

    /** An Admin client with {@code security} (security.protocol, ssl.*, sasl.*) added. */
    public static Admin admin(String bootstrap, Properties security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        return Admin.create(props);
    }

    public static void createTopics(String bootstrap, int partitions, String... names)
            throws Exception {
        try (Admin admin = admin(bootstrap)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String name : names) topics.add(new NewTopic(name, partitions, (short) 1));
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
        }
    }

    public static KafkaProducer<String, String> producer(String bootstrap) {
        return producer(bootstrap, new Properties());
    }

    /** A producer with {@code security} added. */
    public static KafkaProducer<String, String> producer(String bootstrap, Properties security) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    /** Sends every record and waits until each is acknowledged. */
    public static void produce(String bootstrap, String topic, List<Map.Entry<String, String>> records)
            throws Exception {
        produce(bootstrap, new Properties(), topic, records);
    }

    /** The same with {@code security} added to the producer's settings. */
    public static void produce(String bootstrap, Properties security, String topic,
            List<Map.Entry<String, String>> records) throws Exception {
        try (KafkaProducer<String, String> producer = producer(bootstrap, security)) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (Map.Entry<String, String> r : records) {
                sent.add(producer.send(new ProducerRecord<>(topic, r.getKey(), r.getValue())));
            }
            for (java.util.concurrent.Future<?> f : sent) f.get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Reads every partition of {@code topic} from the beginning (assign, no group) until
     * {@code expected} records arrived or the deadline passed; returns what arrived.
     */
    public static List<ConsumerRecord<String, String>> consume(
            String bootstrap, String topic, int expected, Duration deadline) {
        return consume(bootstrap, new Properties(), topic, expected, deadline);
    }

    /** The same with {@code security} added to the consumer's settings. */
    public static List<ConsumerRecord<String, String>> consume(
            String bootstrap, Properties security, String topic, int expected, Duration deadline) {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            assignFromBeginning(consumer, topic);
            long end = System.nanoTime() + deadline.toNanos();
            while (out.size() < expected && System.nanoTime() < end) {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    /** Assigns every partition of {@code topic} (no group) and seeks to its beginning. */
    private static List<TopicPartition> assignFromBeginning(KafkaConsumer<?, ?> consumer, String topic) {
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
            partitions.add(new TopicPartition(topic, p.partition()));
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        return partitions;
    }

    /**
     * Every record of {@code topic} up to its end offsets as they were when the read began
     * (assign, no group), with String keys and Long values.
     */
    public static List<ConsumerRecord<String, Long>> readAllLongs(String bootstrap, String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<String, Long>> out = new ArrayList<>();
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(props,
                new StringDeserializer(), new org.apache.kafka.common.serialization.LongDeserializer())) {
            List<TopicPartition> partitions = assignFromBeginning(consumer, topic);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) throw new AssertionError("could not read " + topic);
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    /** Kafka Streams properties for the streams rebalance protocol against {@code bootstrap}. */
    public static Properties streamsProps(String bootstrap, String applicationId, Path stateDir) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG,
                org.apache.kafka.common.serialization.Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG,
                org.apache.kafka.common.serialization.Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        return props;
    }

    /** A new temp directory, removed with its contents when the test JVM exits. */
    public static Path tempDir(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                org.apache.kafka.common.utils.Utils.delete(dir.toFile());
            } catch (IOException ignored) {
                // best effort: it is a temp directory
            }
        }));
        return dir;
    }

    /** Starts {@code streams} and waits until it is RUNNING. */
    public static KafkaStreams startRunning(Topology topology, Properties props, Duration deadline)
            throws InterruptedException {
        KafkaStreams streams = new KafkaStreams(topology, props);
        // Kafka's default answer to an uncaught exception (the client shuts down), with the
        // exception kept: a failed start then says why instead of only "ERROR".
        AtomicReference<Throwable> failed = new AtomicReference<>();
        streams.setUncaughtExceptionHandler(e -> {
            failed.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        try {
            await(() -> streams.state() == KafkaStreams.State.RUNNING, deadline,
                    () -> "Kafka Streams is " + streams.state() + ", not RUNNING"
                            + (failed.get() == null ? "" : "; it failed with " + stackOf(failed.get())));
        } catch (AssertionError e) {
            // Not left running into the tests after this one.
            streams.close(Duration.ofSeconds(30));
            throw e;
        }
        return streams;
    }

    private static String stackOf(Throwable t) {
        StringWriter text = new StringWriter();
        t.printStackTrace(new PrintWriter(text));
        return text.toString();
    }

    public static void awaitState(KafkaStreams streams, KafkaStreams.State state, Duration deadline)
            throws InterruptedException {
        await(() -> streams.state() == state, deadline,
                () -> "Kafka Streams is " + streams.state() + ", not " + state);
    }

    /** Polls {@code condition} every 50 ms until it holds; fails with {@code what} after the deadline. */
    public static void await(BooleanSupplier condition, Duration deadline, Supplier<String> what)
            throws InterruptedException {
        long end = System.nanoTime() + deadline.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) throw new AssertionError("timed out: " + what.get());
            Thread.sleep(50);
        }
    }

    /**
     * Waits until {@code group} has committed every partition of {@code topic} at its end
     * (within 30 s), which must hold some record; those end offsets.
     */
    public static Map<TopicPartition, Long> awaitCommittedToTheEnd(
            Admin admin, String group, String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < partitions; p++) latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        Map<TopicPartition, Long> ends = new HashMap<>();
        admin.listOffsets(latest).all().get().forEach((tp, info) -> ends.put(tp, info.offset()));
        await(() -> {
            try {
                Map<TopicPartition, OffsetAndMetadata> committed =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                return ends.entrySet().stream().allMatch(e -> committed.containsKey(e.getKey())
                        && committed.get(e.getKey()).offset() == e.getValue());
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(30), () -> "offsets not committed to the end " + ends);
        if (ends.values().stream().mapToLong(Long::longValue).sum() == 0) {
            throw new AssertionError("no record in " + topic);
        }
        return ends;
    }

    public static void closeAll(Collection<KafkaStreams> apps) {
        for (KafkaStreams app : apps) app.close(Duration.ofSeconds(30));
    }
}
