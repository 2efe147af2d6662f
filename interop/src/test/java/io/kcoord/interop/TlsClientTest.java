package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
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
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Kafka 4.4's Admin client, producer and consumer on kcoord's SSL listeners with {@code
 * ssl.client.auth=required} and Kafka's StandardAuthorizer ({@code super.users=User:admin},
 * {@code allow.everyone.if.no.acl.found=false}). Two SSL listeners share the server certificate
 * and CA of docs/operations.md: {@code SSL} maps a subject to its CN ({@code RULE:^CN=([^,]+).*$/$1/}),
 * {@code DN} (listener-prefixed {@code DEFAULT}) keeps the subject as Java's {@code
 * X500Principal.getName()} writes it, which is what a Kafka broker's principal is. An ACL on
 * that exact string letting the client in proves kcoord writes the subject as Java does.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TlsClientTest {
    private static final String ALICE = "/C=US/O=Acme/OU=eng/CN=alice";
    /**
     * A subject that exercises RFC 2253's corners: DC, ST, L and UID keywords; a multi-valued RDN
     * ({@code +}); characters Java escapes ({@code , " < > ;} and {@code +}); a non-ASCII
     * character; emailAddress and serialNumber, which Java writes as dotted OIDs with hex DER.
     */
    private static final String HARD = "/DC=com/DC=acme/C=US/ST=CA/L=San Francisco/O=Acme\\, Inc."
            + "/OU=eng+UID=zoe/CN=Zoë \"Z\" <z>; a\\+b/emailAddress=zoe@acme.com/serialNumber=42";

    private Certs certs;
    private Kcoord kcoord;
    private Path admin;
    private Path alice;
    private Path bob;
    private Path hard;
    private Path adminConfig;

    @BeforeAll
    void start() throws Exception {
        certs = Certs.fromOperationsGuide();
        admin = certs.client("admin", "/O=Acme/CN=admin");
        alice = certs.client("alice", ALICE);
        bob = certs.client("bob", "/C=US/O=Acme/OU=eng/CN=bob");
        hard = certs.client("hard", HARD);
        kcoord = Kcoord.start("tls-clients",
                "listeners=SSL://127.0.0.1:0,DN://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                "listener.security.protocol.map=SSL:SSL,DN:SSL,CONTROLLER:PLAINTEXT",
                "ssl.keystore.type=PEM",
                "ssl.keystore.location=" + certs.dir().resolve("server.pem"),
                "ssl.truststore.type=PEM",
                "ssl.truststore.location=" + certs.ca(),
                "ssl.client.auth=required",
                "ssl.principal.mapping.rules=RULE:^CN=([^,]+).*$/$1/",
                "listener.name.dn.ssl.principal.mapping.rules=DEFAULT",
                AclCommandTest.STANDARD_AUTHORIZER,
                "super.users=User:admin",
                "allow.everyone.if.no.acl.found=false");
        // kafka-acls's --command-config: the admin's certificate on the SSL listener.
        adminConfig = certs.dir().resolve("admin-ssl.properties");
        StringBuilder text = new StringBuilder();
        certs.ssl(admin).forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(adminConfig, text, StandardCharsets.UTF_8);
    }

    @AfterAll
    void stop() throws Exception {
        if (kcoord != null) kcoord.close();
    }

    private String ssl() {
        return kcoord.listener("SSL");
    }

    private String dn() {
        return kcoord.listener("DN");
    }

    private static Throwable failure(KafkaFuture<?> future) {
        return assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS)).getCause();
    }

    /** kafka-acls as the admin on the SSL listener; must succeed. */
    private void acls(String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", ssl(), "--command-config",
                adminConfig.toString()));
        all.addAll(List.of(args));
        Tools.Run run = Tools.kafkaAcls(all.toArray(String[]::new));
        assertEquals(0, run.exitCode(), run.toString());
        assertFalse(run.stdout().contains("Error while executing ACL command"), run.toString());
    }

    private void createTopic(String name) throws Exception {
        try (Admin a = Clients.admin(ssl(), certs.ssl(admin))) {
            a.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    /** Sends one record to {@code topic} on {@code bootstrap} with {@code security} and waits for it. */
    private static void send(String bootstrap, Properties security, String topic) throws Exception {
        Properties props = new Properties();
        props.putAll(security);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, props)) {
            producer.send(new ProducerRecord<>(topic, "k", "v")).get(30, TimeUnit.SECONDS);
        }
    }

    /** Sending one record fails with TopicAuthorizationException for {@code topic}. */
    private void assertDenied(String bootstrap, Properties security, String topic) {
        Throwable e = assertThrows(ExecutionException.class, () -> send(bootstrap, security, topic)).getCause();
        TopicAuthorizationException denied = assertInstanceOf(TopicAuthorizationException.class, e,
                () -> "kcoord log:\n" + kcoord.logTail());
        assertEquals(Set.of(topic), denied.unauthorizedTopics());
    }

    @Test
    void a_certificate_from_the_ca_is_the_principal_its_mapping_rule_names() throws Exception {
        // The admin (CN=admin -> User:admin, a super user) works with Kafka's Admin client.
        try (Admin a = Clients.admin(ssl(), certs.ssl(admin))) {
            assertEquals(1, a.describeCluster().nodes().get(30, TimeUnit.SECONDS).size());
        }
        createTopic("tls-orders");
        acls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
                "--topic", "tls-orders");

        // alice (CN=alice,OU=eng,O=Acme,C=US -> User:alice) writes and reads.
        List<Map.Entry<String, String>> records = new ArrayList<>();
        for (int i = 0; i < 100; i++) records.add(Map.entry("k" + i, "v" + i));
        Clients.produce(ssl(), certs.ssl(alice), "tls-orders", records);
        List<ConsumerRecord<String, String>> read =
                Clients.consume(ssl(), certs.ssl(alice), "tls-orders", 100, Duration.ofSeconds(30));
        assertEquals(100, read.size(), () -> "kcoord log:\n" + kcoord.logTail());
        for (int i = 0; i < 100; i++) assertEquals("v" + i, read.get(i).value());

        // bob, from the same CA, is User:bob: no ACL.
        assertDenied(ssl(), certs.ssl(bob), "tls-orders");
        // On the DN listener alice is User:CN=alice,OU=eng,O=Acme,C=US, which has no ACL either:
        // the listener-prefixed rule list wins.
        assertDenied(dn(), certs.ssl(alice), "tls-orders");
    }

    @Test
    void the_default_mapping_names_the_subject_as_javas_x500_principal() throws Exception {
        String aliceDn = certs.javaSubjectName("alice");
        assertEquals("CN=alice,OU=eng,O=Acme,C=US", aliceDn);
        String hardDn = certs.javaSubjectName("hard");
        for (String[] client : new String[][] {{"alice", aliceDn}, {"hard", hardDn}}) {
            String topic = "dn-" + client[0];
            Path keyStore = client[0].equals("alice") ? alice : hard;
            createTopic(topic);
            assertDenied(dn(), certs.ssl(keyStore), topic);
            acls("--add", "--allow-principal", "User:" + client[1], "--operation", "Write", "--topic", topic);
            try (Admin a = Clients.admin(ssl(), certs.ssl(admin))) {
                AclBindingFilter filter = new AclBindingFilter(ResourcePatternFilter.ANY,
                        new AccessControlEntryFilter("User:" + client[1], null, AclOperation.ANY,
                                AclPermissionType.ANY));
                List<AclBinding> stored = new ArrayList<>(a.describeAcls(filter).values().get(30, TimeUnit.SECONDS));
                assertEquals(1, stored.size(), "the ACL on User:" + client[1]);
            }
            try {
                send(dn(), certs.ssl(keyStore), topic);
            } catch (ExecutionException e) {
                throw new AssertionError("User:" + client[1] + " may write " + topic + ", but the client with "
                        + "that subject was refused; kcoord log:\n" + kcoord.logTail(), e);
            }
        }
    }

    @Test
    void no_client_certificate_fails_with_kafkas_ssl_authentication_exception() throws Exception {
        assertSslAuthenticationFails(certs.ssl(null));
    }

    @Test
    void a_certificate_the_truststore_does_not_vouch_for_fails_likewise() throws Exception {
        // The same subject as alice's, signed by another CA.
        assertSslAuthenticationFails(certs.ssl(certs.untrustedClient("alice-rogue", ALICE)));
        // And a client that does not trust the daemon's certificate fails on its side.
        assertSslAuthenticationFails(Certs.ssl(alice, certs.rogueCa()));
    }

    /** The Admin client and a producer on both SSL listeners fail with SslAuthenticationException. */
    private void assertSslAuthenticationFails(Properties security) {
        for (String bootstrap : List.of(ssl(), dn())) {
            try (Admin a = Clients.admin(bootstrap, security)) {
                assertInstanceOf(SslAuthenticationException.class, failure(a.describeCluster().nodes()),
                        () -> "kcoord log:\n" + kcoord.logTail());
            }
            Throwable e = assertThrows(ExecutionException.class, () -> send(bootstrap, security, "any")).getCause();
            assertInstanceOf(SslAuthenticationException.class, e);
        }
    }
}
