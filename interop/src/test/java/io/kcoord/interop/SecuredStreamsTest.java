package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The specification's appendix app on a locked-down kcoord: {@code config/secured.properties}
 * as shipped (SASL_SSL with SCRAM-SHA-512 and a PLAIN admin for clients, mTLS on the controller
 * listener, Kafka's StandardAuthorizer with {@code super.users=User:admin;User:broker} and
 * {@code allow.everyone.if.no.acl.found=false}), on free ports, with the certificates the OpenSSL
 * commands of docs/operations.md make. The admin creates the app's SCRAM user with Kafka's {@code kafka-configs}
 * and its ACLs with Kafka's {@code kafka-acls} (the Kafka Streams security guide's list); Kafka
 * Streams 4.4 then runs the app as that user.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecuredStreamsTest {
    private static final String APP = "orders-app";
    private static final String APP_USER = "streams-app";
    private static final String APP_PASSWORD = "streams-app-secret";
    private static final String NO_ACLS_USER = "no-acls";
    private static final String NO_ACLS_PASSWORD = "no-acls-secret";
    private static final int ORDERS = 1_000;

    private Certs certs;
    private Kcoord kcoord;
    private String bootstrap;
    /** The guide's admin.properties: PLAIN admin over SASL_SSL, for Kafka's tools. */
    private Path adminConfig;

    @BeforeAll
    void start() throws Exception {
        certs = Certs.fromOperationsGuide();
        List<String> config = securedConfig(certs, Clients.tempDir("kcoord-secured-data"));
        config.addAll(Kcoord.fastStreamsGroups());
        kcoord = Kcoord.start("secured-streams", config.toArray(String[]::new));
        bootstrap = kcoord.listener("SASL_SSL");
        adminConfig = certs.dir().resolve("admin.properties");
        Files.writeString(adminConfig, guideAdminProperties(certs), StandardCharsets.UTF_8);

        for (String[] user : new String[][] {{APP_USER, APP_PASSWORD}, {NO_ACLS_USER, NO_ACLS_PASSWORD}}) {
            Tools.Run run = Tools.kafkaConfigs("--bootstrap-server", bootstrap, "--command-config",
                    adminConfig.toString(), "--alter", "--add-config", "SCRAM-SHA-512=[password=" + user[1] + "]",
                    "--entity-type", "users", "--entity-name", user[0]);
            assertEquals("Completed updating config for user " + user[0] + ".\n", run.stdout(),
                    run + "\nkcoord log:\n" + kcoord.logTail());
        }
        try (Admin admin = Clients.admin(bootstrap, admin())) {
            admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1), new NewTopic("valid-orders", 3, (short) 1)))
                    .all().get(30, TimeUnit.SECONDS);
        }
    }

    @AfterAll
    void stop() throws Exception {
        if (kcoord != null) kcoord.close();
    }

    /**
     * {@code config/secured.properties} as shipped, but on free ports, its certificates where
     * {@code certs} made them and its data in {@code data} (what tests/secured_config.rs does).
     */
    static List<String> securedConfig(Certs certs, Path data) throws Exception {
        List<String> lines = new ArrayList<>();
        Path file = Certs.repositoryRoot().resolve("config").resolve("secured.properties");
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.isBlank() || line.startsWith("#")) continue;
            if (line.startsWith("listeners=")) {
                lines.add("listeners=SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0");
            } else if (line.startsWith("log.dirs=")) {
                lines.add("log.dirs=" + data);
            } else {
                lines.add(line.replace("config/certs/", certs.dir() + "/"));
            }
        }
        return lines;
    }

    /**
     * The {@code admin.properties} of docs/operations.md (its heredoc), with the CA where {@code
     * certs} made it.
     */
    static String guideAdminProperties(Certs certs) throws Exception {
        String guide = Files.readString(Certs.operationsGuide(), StandardCharsets.UTF_8);
        String[] start = guide.split("cat > admin.properties <<'PROPS'\n", 2);
        if (start.length < 2) throw new IllegalStateException("docs/operations.md has no admin.properties heredoc");
        String body = start[1].split("\nPROPS\n", 2)[0];
        return body.replace("config/certs/", certs.dir() + "/") + "\n";
    }

    /** A Kafka client's settings for the SASL_SSL listener as {@code user} with SCRAM-SHA-512. */
    private Properties scram(String user, String password) {
        return sasl("SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule", user, password);
    }

    /** The admin, with PLAIN (the guide's admin.properties as Properties). */
    private Properties admin() {
        return sasl("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", "admin", "admin-secret");
    }

    private Properties sasl(String mechanism, String module, String user, String password) {
        Properties props = new Properties();
        props.put("security.protocol", "SASL_SSL");
        props.put("sasl.mechanism", mechanism);
        props.put("sasl.jaas.config",
                module + " required username=\"" + user + "\" password=\"" + password + "\";");
        props.put("ssl.truststore.type", "PEM");
        props.put("ssl.truststore.location", certs.ca().toString());
        return props;
    }

    private static Throwable failure(KafkaFuture<?> future) {
        return assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS)).getCause();
    }

    private static Throwable failure(Future<?> future) {
        return assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS)).getCause();
    }

    /** {@code failure} (what {@link #runApp} returned), or the first of its causes, that is a {@code type}. */
    private static <T extends Throwable> T causedBy(Object failure, Class<T> type) {
        Throwable t = assertInstanceOf(Throwable.class, failure, "the app reached RUNNING");
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) return type.cast(c);
        }
        throw new AssertionError("not caused by a " + type.getSimpleName(), t);
    }

    private Object runApp(Properties security, String stateDirPrefix) throws Exception {
        return FilterAppTest.runUntilRunningOrFailed(bootstrap, APP, security, stateDirPrefix, kcoord);
    }

    @Test
    void the_appendix_app_runs_as_a_scram_user_with_the_acls_the_streams_guide_lists() throws Exception {
        // The Kafka Streams security guide: the app's principal needs its input and output
        // topics, and (prefixed with the application id) its internal topics and its group;
        // KIP-1071's table: READ on the group for StreamsGroupHeartbeat (DESCRIBE, for
        // StreamsGroupDescribe, follows from READ), DESCRIBE on the topology's topics (follows
        // from READ and WRITE), CREATE only for internal topics the broker creates.
        String user = "User:" + APP_USER;
        FilterAppTest.allowTheApp(bootstrap, adminConfig, user, APP);
        try (Admin admin = Clients.admin(bootstrap, admin())) {
            assertEquals(4, admin.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS).size());
        }

        Clients.produce(bootstrap, admin(), "orders", FilterAppTest.orders(ORDERS));
        Object started = runApp(scram(APP_USER, APP_PASSWORD), "secured-app");
        if (started instanceof Throwable t) {
            throw new AssertionError("the app failed as " + user + "; kcoord log:\n" + kcoord.logTail(), t);
        }
        KafkaStreams app = (KafkaStreams) started;
        try {
            FilterAppTest.assertDelivered(
                    Clients.consume(bootstrap, admin(), "valid-orders", ORDERS, Duration.ofSeconds(60)),
                    ORDERS, kcoord);
            assertEquals(KafkaStreams.State.RUNNING, app.state());
        } finally {
            app.close(Duration.ofSeconds(30));
        }
    }

    @Test
    void a_wrong_password_fails_with_kafkas_sasl_authentication_exception() throws Exception {
        // SCRAM: Kafka's server sends the generic text for a wrong password and an unknown user alike.
        String scramText = "Authentication failed during authentication due to invalid credentials with SASL "
                + "mechanism SCRAM-SHA-512";
        for (Properties wrong : List.of(scram(APP_USER, "not-the-password"), scram("nobody", APP_PASSWORD))) {
            try (Admin admin = Clients.admin(bootstrap, wrong)) {
                Throwable e = failure(admin.listTopics().names());
                assertInstanceOf(SaslAuthenticationException.class, e);
                assertEquals(scramText, e.getMessage());
            }
        }
        try (Admin admin = Clients.admin(bootstrap, sasl("PLAIN",
                "org.apache.kafka.common.security.plain.PlainLoginModule", "admin", "wrong"))) {
            Throwable e = failure(admin.listTopics().names());
            assertInstanceOf(SaslAuthenticationException.class, e);
            assertEquals("Authentication failed: Invalid username or password", e.getMessage());
        }
        // The producer's send fails the same way.
        Properties producer = scram(APP_USER, "not-the-password");
        producer.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        try (KafkaProducer<String, String> p = Clients.producer(bootstrap, producer)) {
            Throwable e = failure(p.send(new ProducerRecord<>("orders", "k", "v")));
            assertInstanceOf(SaslAuthenticationException.class, e);
            assertEquals(scramText, e.getMessage());
        }
        // And so does the app: its stream thread dies of it.
        Object app = runApp(scram(APP_USER, "not-the-password"), "secured-app-wrong");
        assertEquals(scramText, causedBy(app, SaslAuthenticationException.class).getMessage());
    }

    @Test
    void a_user_without_acls_gets_kafkas_authorization_exceptions() throws Exception {
        Properties nobody = scram(NO_ACLS_USER, NO_ACLS_PASSWORD);
        try (Admin admin = Clients.admin(bootstrap, nobody)) {
            // Authenticated, but sees no topic and may change nothing.
            assertEquals(Set.of(), admin.listTopics().names().get(30, TimeUnit.SECONDS));
            Throwable create = failure(admin.createTopics(List.of(new NewTopic("mine", 1, (short) 1))).all());
            assertInstanceOf(TopicAuthorizationException.class, create);
            assertEquals("Authorization failed.", create.getMessage());
            assertInstanceOf(ClusterAuthorizationException.class,
                    failure(admin.describeAcls(AclBindingFilter.ANY).values()));
            assertInstanceOf(TopicAuthorizationException.class,
                    failure(admin.describeTopics(List.of("orders")).allTopicNames()));
        }

        Properties producerProps = new Properties();
        producerProps.putAll(nobody);
        producerProps.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, producerProps)) {
            Throwable e = failure(producer.send(new ProducerRecord<>("orders", "k", "v")));
            TopicAuthorizationException denied = assertInstanceOf(TopicAuthorizationException.class, e);
            assertEquals(Set.of("orders"), denied.unauthorizedTopics());
        }

        Properties consumerProps = new Properties();
        consumerProps.putAll(nobody);
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(new TopicPartition("orders", 0)));
            consumer.seekToBeginning(List.of(new TopicPartition("orders", 0)));
            TopicAuthorizationException denied = assertThrows(TopicAuthorizationException.class, () -> {
                long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (System.nanoTime() < end) consumer.poll(Duration.ofMillis(200));
            });
            assertEquals(Set.of("orders"), denied.unauthorizedTopics());
        }

        // The app as this user: its stream thread dies of the group's authorization failure.
        Object app = runApp(nobody, "secured-app-nobody");
        GroupAuthorizationException denied = causedBy(app, GroupAuthorizationException.class);
        assertEquals(APP, denied.groupId());
        assertEquals("Not authorized to access group: " + APP, denied.getMessage());
    }
}
