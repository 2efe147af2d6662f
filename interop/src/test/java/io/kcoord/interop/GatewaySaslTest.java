package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@code gateway.authentication=upstream} in front of an Apache Kafka 4.4 broker that
 * authenticates (SASL_PLAINTEXT with PLAIN and SCRAM-SHA-512) and authorizes (StandardAuthorizer,
 * no ACL means no access): each client's exchange is relayed to the broker, which then authorizes
 * what kcoord forwards as that client, and kcoord authorizes its streams groups with the broker's
 * ACLs. Kafka's {@code kafka-configs} and {@code kafka-acls} through kcoord manage the broker's
 * users and ACLs; Kafka Streams 4.4 runs the filter app as a SCRAM user that exists only there.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewaySaslTest {
    private static final String APP = "gw-sasl-app";
    private static final String APP_USER = "streams-app";
    private static final String APP_PASSWORD = "streams-app-secret";
    private static final int ORDERS = 200;
    private static final String PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule";
    private static final String SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule";

    private KafkaRaftServer kafka;
    private String kafkaBootstrap;
    private Kcoord kcoord;
    private String bootstrap;
    private Path adminConfig;

    @BeforeAll
    void start() throws Exception {
        int brokerPort = KafkaBroker.freePort();
        int controllerPort = KafkaBroker.freePort();
        kafka = KafkaBroker.start(Map.ofEntries(
                Map.entry("listeners", "SASL_PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:"
                        + controllerPort),
                Map.entry("advertised.listeners", "SASL_PLAINTEXT://127.0.0.1:" + brokerPort),
                Map.entry("listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"),
                Map.entry("inter.broker.listener.name", "SASL_PLAINTEXT"),
                Map.entry("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
                Map.entry("sasl.mechanism.inter.broker.protocol", "PLAIN"),
                Map.entry("listener.name.sasl_plaintext.plain.sasl.jaas.config", PLAIN_MODULE
                        + " required username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\""
                        + " user_kcoord=\"kcoord-secret\" user_bob=\"bob-secret\";"),
                Map.entry("listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config", SCRAM_MODULE + " required;"),
                Map.entry("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
                // ANONYMOUS: the broker's own connections to its controller listener (PLAINTEXT).
                Map.entry("super.users", "User:admin;User:kcoord;User:ANONYMOUS"),
                Map.entry("allow.everyone.if.no.acl.found", "false")),
                brokerPort, controllerPort, Clients.tempDir("kafka-sasl"), Uuid.randomUuid().toString());
        kafkaBootstrap = "127.0.0.1:" + brokerPort;
        try (Admin admin = Clients.admin(kafkaBootstrap, plain("admin", "admin-secret"))) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1), new NewTopic("valid-orders", 2, (short) 1)))
                    .all().get(60, TimeUnit.SECONDS);
        }

        List<String> config = new ArrayList<>(Kcoord.fastStreamsGroups());
        config.addAll(List.of(
                "listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
                "gateway.authentication=upstream",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:admin;User:kcoord",
                "gateway.node.principals=User:kcoord",
                "upstream.bootstrap.servers=" + kafkaBootstrap,
                "gateway.broker.port.start=" + GatewayTest.freePortRange(2)));
        for (String prefix : List.of("upstream.", "gateway.node.client.")) {
            plain("kcoord", "kcoord-secret").forEach((k, v) -> config.add(prefix + k + "=" + v));
        }
        kcoord = Kcoord.start("gateway-sasl", config.toArray(String[]::new));
        bootstrap = kcoord.listener("SASL_PLAINTEXT");
        adminConfig = Clients.tempDir("gw-sasl-admin").resolve("admin.properties");
        StringBuilder text = new StringBuilder();
        plain("admin", "admin-secret").forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(adminConfig, text, StandardCharsets.UTF_8);
        // The app's user exists only in the cluster, created there through kcoord.
        Tools.Run run = Tools.kafkaConfigs("--bootstrap-server", bootstrap, "--command-config",
                adminConfig.toString(), "--alter", "--add-config", "SCRAM-SHA-512=[password=" + APP_PASSWORD + "]",
                "--entity-type", "users", "--entity-name", APP_USER);
        assertEquals("Completed updating config for user " + APP_USER + ".\n", run.stdout(),
                run + "\nkcoord log:\n" + kcoord.logTail());
    }

    @AfterAll
    void stop() throws Exception {
        if (kcoord != null) kcoord.close();
        if (kafka != null) {
            kafka.shutdown();
            kafka.awaitShutdown();
        }
    }

    @Test
    void a_streams_app_runs_through_kcoord_as_a_user_only_the_cluster_knows() throws Exception {
        // The Kafka Streams security guide's ACLs, created through kcoord with kafka-acls: they
        // are the cluster's, and decide both what kcoord forwards and what it serves itself.
        String user = "User:" + APP_USER;
        FilterAppTest.allowTheApp(bootstrap, adminConfig, user, APP);

        // kcoord reads the cluster's ACLs back about once a second: the app starts once they are
        // there, as it would start once a Kafka broker has applied them.
        try (Admin asTheApp = Clients.admin(bootstrap, scram(APP_USER, APP_PASSWORD))) {
            Clients.await(() -> !groupDenied(asTheApp), Duration.ofSeconds(30),
                    () -> "kcoord never applied the app's ACLs; kcoord log:\n" + kcoord.logTail());
        }
        Clients.produce(bootstrap, plain("admin", "admin-secret"), "orders", FilterAppTest.orders(ORDERS));
        Object started = runApp(scram(APP_USER, APP_PASSWORD), "gw-sasl-app");
        if (started instanceof Throwable t) {
            throw new AssertionError("the app failed as " + user + "; kcoord log:\n" + kcoord.logTail(), t);
        }
        KafkaStreams app = (KafkaStreams) started;
        try {
            // Read from the cluster directly: the app's output is there.
            FilterAppTest.assertDelivered(Clients.consume(kafkaBootstrap, plain("admin", "admin-secret"),
                    "valid-orders", ORDERS, Duration.ofSeconds(60)), ORDERS, kcoord);
        } finally {
            app.close(Duration.ofSeconds(30));
        }
    }

    @Test
    void the_clusters_refusals_reach_kafkas_clients_through_kcoord() throws Exception {
        try (Admin admin = Clients.admin(bootstrap, plain("bob", "wrong"))) {
            Throwable e = failure(admin.listTopics().names());
            assertInstanceOf(SaslAuthenticationException.class, e);
            assertEquals("Authentication failed: Invalid username or password", e.getMessage());
        }
        try (Admin admin = Clients.admin(bootstrap, scram(APP_USER, "not-the-password"))) {
            Throwable e = failure(admin.listTopics().names());
            assertInstanceOf(SaslAuthenticationException.class, e);
            assertEquals("Authentication failed during authentication due to invalid credentials with SASL "
                    + "mechanism SCRAM-SHA-512", e.getMessage());
        }
        // bob is known to the cluster, with no ACL: he sees nothing and may write nothing.
        Properties bob = plain("bob", "bob-secret");
        try (Admin admin = Clients.admin(bootstrap, bob)) {
            assertEquals(Set.of(), admin.listTopics().names().get(30, TimeUnit.SECONDS));
        }
        bob.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, bob)) {
            Throwable e = failure(producer.send(new ProducerRecord<>("orders", "k", "v")));
            assertEquals(Set.of("orders"),
                    assertInstanceOf(TopicAuthorizationException.class, e).unauthorizedTopics());
        }
        // kcoord's own decision, with the cluster's ACLs: no READ on the app's group.
        Object app = runApp(plain("bob", "bob-secret"), "gw-sasl-bob");
        assertInstanceOf(Throwable.class, app, "the app must not run as bob");
        assertNotNull(causedBy((Throwable) app, GroupAuthorizationException.class), () -> "not a group refusal: " + app);
    }

    /**
     * A feature changed through kcoord ({@code kafka-features}' UpdateFeatures, forwarded) shows
     * in kcoord's own ApiVersions, which lists the cluster's features, as soon as the cluster's
     * brokers show it, not at kcoord's next refresh minutes later. This broker is the class's
     * own, so toggling a feature here disturbs no other test; it is put back.
     */
    @Test
    void a_feature_changed_through_kcoord_shows_through_kcoord() throws Exception {
        String elr = "eligible.leader.replicas.version";
        try (Admin through = Clients.admin(bootstrap, plain("admin", "admin-secret"));
                Admin direct = Clients.admin(kafkaBootstrap, plain("admin", "admin-secret"))) {
            short before = level(direct, elr);
            short other = (short) (before == 0 ? 1 : 0);
            for (short wanted : new short[] {other, before}) {
                short now = level(through, elr);
                FeatureUpdate.UpgradeType type = wanted > now
                        ? FeatureUpdate.UpgradeType.UPGRADE : FeatureUpdate.UpgradeType.SAFE_DOWNGRADE;
                through.updateFeatures(Map.of(elr, new FeatureUpdate(wanted, type)), new UpdateFeaturesOptions())
                        .all().get(30, TimeUnit.SECONDS);
                Clients.await(() -> level(direct, elr) == wanted, Duration.ofSeconds(30),
                        () -> "the cluster never showed " + elr + "=" + wanted);
                // kcoord learns the cluster again only every 5 minutes otherwise.
                Clients.await(() -> level(through, elr) == wanted, Duration.ofSeconds(15),
                        () -> "kcoord still lists " + elr + "=" + level(through, elr) + ", not " + wanted
                                + "\n" + kcoord.logTail());
            }
        }
    }

    /** The finalized level of {@code feature} as {@code admin}'s ApiVersions lists it (0: not listed). */
    private static short level(Admin admin, String feature) {
        try {
            FinalizedVersionRange range = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS)
                    .finalizedFeatures().get(feature);
            return range == null ? 0 : range.maxVersionLevel();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** Whether kcoord refuses {@code admin}'s user the app's streams group. */
    private static boolean groupDenied(Admin admin) {
        try {
            admin.describeStreamsGroups(List.of(APP)).all().get(30, TimeUnit.SECONDS);
            return false;
        } catch (ExecutionException e) {
            return e.getCause() instanceof GroupAuthorizationException;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private Properties plain(String user, String password) {
        return sasl("PLAIN", PLAIN_MODULE, user, password);
    }

    private Properties scram(String user, String password) {
        return sasl("SCRAM-SHA-512", SCRAM_MODULE, user, password);
    }

    private static Properties sasl(String mechanism, String module, String user, String password) {
        Properties props = new Properties();
        props.put("security.protocol", "SASL_PLAINTEXT");
        props.put("sasl.mechanism", mechanism);
        props.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        return props;
    }

    private static Throwable failure(KafkaFuture<?> future) {
        return assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS)).getCause();
    }

    private static Throwable failure(java.util.concurrent.Future<?> future) {
        return assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS)).getCause();
    }

    /** The first of {@code t} and its causes that is a {@code type}; null if none is. */
    private static <T extends Throwable> T causedBy(Throwable t, Class<T> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) return type.cast(c);
        }
        return null;
    }

    private Object runApp(Properties security, String stateDirPrefix) throws Exception {
        return FilterAppTest.runUntilRunningOrFailed(bootstrap, APP, security, stateDirPrefix, kcoord);
    }
}
