package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The specification's appendix app (orders -> filter -> valid-orders) on kcoord alone. */
class FilterAppTest {
    private Kcoord kcoord;

    @BeforeEach
    void start() throws Exception {
        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.add("group.streams.topology.description.class=memory");
        kcoord = Kcoord.start("filter-app", config.toArray(String[]::new));
    }

    @AfterEach
    void stop() throws Exception {
        kcoord.close();
    }

    static Topology filterTopology() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("orders")
                .filter((key, value) -> value != null)
                .to("valid-orders");
        return builder.build();
    }

    /**
     * Runs the filter app ({@code appId}) through {@code bootstrap} as {@code security}'s user
     * until it is RUNNING or a stream thread fails; returns the app (RUNNING) or the failure (the
     * app then shut down).
     */
    static Object runUntilRunningOrFailed(String bootstrap, String appId, Properties security,
            String stateDirPrefix, Kcoord kcoord) throws Exception {
        Properties props = Clients.streamsProps(bootstrap, appId, Clients.tempDir(stateDirPrefix));
        props.putAll(security);
        KafkaStreams app = new KafkaStreams(filterTopology(), props);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        app.setUncaughtExceptionHandler(e -> {
            failed.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        app.start();
        try {
            Clients.await(() -> app.state() == KafkaStreams.State.RUNNING || failed.get() != null,
                    Duration.ofSeconds(60), () -> "Kafka Streams is " + app.state() + "; kcoord log:\n"
                            + kcoord.logTail());
        } catch (AssertionError e) {
            app.close(Duration.ofSeconds(30));
            throw e;
        }
        if (failed.get() == null) return app;
        app.close(Duration.ofSeconds(30));
        return failed.get();
    }

    /**
     * The Kafka Streams security guide's ACLs for the filter app ({@code appId}) run as
     * {@code principal}, created with {@code kafka-acls} at {@code bootstrap} as the admin whose
     * settings {@code adminConfig} holds: its input and output topics, and (prefixed with the
     * application id) its internal topics and its group.
     */
    static void allowTheApp(String bootstrap, java.nio.file.Path adminConfig, String principal, String appId) {
        String[][] acls = {
            {"--operation", "Read", "--topic", "orders"},
            {"--operation", "Write", "--topic", "valid-orders"},
            {"--resource-pattern-type", "prefixed", "--operation", "All", "--topic", appId},
            {"--resource-pattern-type", "prefixed", "--operation", "Read", "--group", appId},
        };
        for (String[] acl : acls) {
            List<String> args = new ArrayList<>(List.of("--add", "--allow-principal", principal));
            args.addAll(List.of(acl));
            Tools.kafkaAclsAsAdmin(bootstrap, adminConfig, args.toArray(String[]::new));
        }
    }

    /** {@code count} orders keyed order-0.. with a null-valued record (to drop) every 20th. */
    static List<Map.Entry<String, String>> orders(int count) {
        List<Map.Entry<String, String>> input = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            input.add(Map.entry("order-" + i, "amount-" + i));
            if (i % 20 == 0) input.add(new java.util.AbstractMap.SimpleEntry<>("null-" + i, null));
        }
        return input;
    }

    /** {@code out} (valid-orders) holds each of {@link #orders}'s {@code count} valid orders once, in order. */
    static void assertDelivered(List<ConsumerRecord<String, String>> out, int count, Kcoord kcoord) {
        assertEquals(count, out.size(), "records in valid-orders; kcoord log:\n" + kcoord.logTail());
        // Every valid order once, none of the nulls, and in input order per key's partition.
        java.util.Map<Integer, Integer> lastSeen = new java.util.HashMap<>();
        java.util.Set<String> keys = new java.util.HashSet<>();
        for (ConsumerRecord<String, String> r : out) {
            assertTrue(keys.add(r.key()), "duplicate " + r.key());
            int n = Integer.parseInt(r.key().substring("order-".length()));
            assertEquals("amount-" + n, r.value());
            Integer previous = lastSeen.put(r.partition(), n);
            assertTrue(previous == null || previous < n, "out of order in partition " + r.partition());
        }
    }

    @Test
    void appendix_app_reaches_running_and_delivers_every_valid_record() throws Exception {
        String bootstrap = kcoord.bootstrap();
        Clients.createTopics(bootstrap, 3, "orders", "valid-orders");
        Clients.produce(bootstrap, "orders", orders(10_000));

        Properties props = Clients.streamsProps(bootstrap, "orders-app", Clients.tempDir("orders-app"));
        KafkaStreams app = Clients.startRunning(filterTopology(), props, Duration.ofSeconds(60));
        try {
            List<ConsumerRecord<String, String>> out =
                    Clients.consume(bootstrap, "valid-orders", 10_000, Duration.ofSeconds(90));
            assertDelivered(out, 10_000, kcoord);
        } finally {
            app.close(Duration.ofSeconds(30));
        }
    }
}
