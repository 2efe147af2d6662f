package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Client quotas through Apache Kafka 4.4's {@code kafka-configs} ({@code
 * org.apache.kafka.tools.ConfigCommand}) against kcoord (AlterClientQuotas, DescribeClientQuotas):
 * users, clients and ips, named and default, a user and a client together, {@code
 * --delete-config}, Kafka's refusals, the quotas kept across a restart; and Kafka's producer over
 * its {@code producer_byte_rate}, slowed by the throttles kcoord answers.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClientQuotasToolTest {
    private Kcoord kcoord;
    private Path data;

    @BeforeAll
    void start() throws Exception {
        data = Clients.tempDir("kcoord-quotas");
        kcoord = Kcoord.startRestartable("quotas", data);
    }

    @AfterAll
    void stop() throws Exception {
        kcoord.close();
    }

    private Tools.Run configs(String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", kcoord.bootstrap()));
        all.addAll(List.of(args));
        return Tools.kafkaConfigs(all.toArray(String[]::new));
    }

    private Tools.Run ok(String... args) {
        Tools.Run run = configs(args);
        assertEquals(0, run.exitCode(), run.toString());
        return run;
    }

    /**
     * The tool's describe lines as "entity: key=value,..." with the entries sorted: it prints
     * them in the Admin client's hash-map order.
     */
    private static Set<String> quotaLines(Tools.Run run) {
        Set<String> out = new TreeSet<>();
        for (String line : run.stdout().split("\n")) {
            if (!line.startsWith("Quota configs for ")) continue;
            int are = line.indexOf(" are ");
            String[] entries = line.substring(are + 5).split(", ");
            Arrays.sort(entries);
            out.add(line.substring("Quota configs for ".length(), are) + ": " + String.join(",", entries));
        }
        return out;
    }

    @Test
    void kafka_configs_alters_and_describes_users_clients_and_ips_and_they_survive_a_restart() throws Exception {
        assertEquals("Completed updating config for user alice.\n", ok("--alter", "--entity-type", "users",
                "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576,request_percentage=50").stdout());
        assertEquals("Completed updating default config for clients in the cluster.\n", ok("--alter",
                "--entity-type", "clients", "--entity-default", "--add-config", "consumer_byte_rate=1000000000000").stdout());
        ok("--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                "--entity-name", "app", "--add-config", "consumer_byte_rate=2048");
        assertEquals("Completed updating config for ip 10.200.0.1.\n", ok("--alter", "--entity-type", "ips",
                "--entity-name", "10.200.0.1", "--add-config", "connection_creation_rate=10").stdout());

        assertEquals(Set.of("user-principal 'alice': producer_byte_rate=1048576.0,request_percentage=50.0"),
                quotaLines(ok("--describe", "--entity-type", "users", "--entity-name", "alice")));
        assertEquals(Set.of("user-principal 'alice': producer_byte_rate=1048576.0,request_percentage=50.0"),
                quotaLines(ok("--describe", "--entity-type", "users")));
        // Every client-id entity (the other test's included), the default among them.
        Set<String> clients = quotaLines(ok("--describe", "--entity-type", "clients"));
        assertTrue(clients.contains("the default client-id: consumer_byte_rate=1.0E12"), clients.toString());
        assertEquals(Set.of("user-principal 'alice', client-id 'app': consumer_byte_rate=2048.0"),
                quotaLines(ok("--describe", "--entity-type", "users", "--entity-name", "alice",
                        "--entity-type", "clients", "--entity-name", "app")));
        assertEquals(Set.of("ip '10.200.0.1': connection_creation_rate=10.0"),
                quotaLines(ok("--describe", "--entity-type", "ips")));

        ok("--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "request_percentage");
        assertEquals(Set.of("user-principal 'alice': producer_byte_rate=1048576.0"),
                quotaLines(ok("--describe", "--entity-type", "users", "--entity-name", "alice")));

        // A fractional byte rate: the controller's INVALID_REQUEST, which the tool reports.
        Tools.Run refused = configs("--alter", "--entity-type", "users", "--entity-name", "bob",
                "--add-config", "producer_byte_rate=10.5");
        assertEquals(1, refused.exitCode(), refused.toString());
        assertTrue(refused.stderr().contains("producer_byte_rate cannot be a fractional value."), refused.toString());

        kcoord = kcoord.killAndRestart();
        assertEquals(Set.of("user-principal 'alice': producer_byte_rate=1048576.0"),
                quotaLines(ok("--describe", "--entity-type", "users", "--entity-name", "alice")));
        assertEquals(Set.of("ip '10.200.0.1': connection_creation_rate=10.0"),
                quotaLines(ok("--describe", "--entity-type", "ips")));
        ok("--alter", "--entity-type", "clients", "--entity-default", "--delete-config", "consumer_byte_rate");
    }

    /**
     * A producer with a quota of 100,000 B/s sends 1.6 MB. Kafka's quota reads the rate over
     * at most 11 one-second windows, so by the time T the last byte is acknowledged at most
     * about 100,000 x (T + 11 s) bytes can have passed: T is at least 5 s, where without the
     * quota it takes well under one. The producer also reports the throttles kcoord answered.
     */
    @Test
    void a_kafka_producer_over_its_byte_rate_is_slowed_to_it() throws Exception {
        ok("--alter", "--entity-type", "clients", "--entity-name", "quota-noisy",
                "--add-config", "producer_byte_rate=100000");
        Clients.createTopics(kcoord.bootstrap(), 1, "quota-noisy-topic");
        Properties props = new Properties();
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "quota-noisy");
        String value = "x".repeat(1000);
        long started = System.nanoTime();
        double throttleMax;
        try (KafkaProducer<String, String> producer = Clients.producer(kcoord.bootstrap(), props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 1600; i++) sent.add(producer.send(new ProducerRecord<>("quota-noisy-topic", value)));
            for (Future<RecordMetadata> f : sent) f.get(120, TimeUnit.SECONDS);
            throttleMax = metric(producer, "produce-throttle-time-max");
        }
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(elapsedMs >= 4_000, "1.6 MB at 100,000 B/s took only " + elapsedMs + " ms");
        assertTrue(throttleMax > 0, "the producer saw no throttle");
    }

    private static double metric(KafkaProducer<?, ?> producer, String name) {
        for (var e : producer.metrics().entrySet()) {
            MetricName m = e.getKey();
            if (m.name().equals(name) && m.group().equals("producer-metrics")) {
                Metric metric = e.getValue();
                return ((Number) metric.metricValue()).doubleValue();
            }
        }
        return Double.NaN;
    }
}
