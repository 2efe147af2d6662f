package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeUserScramCredentialsResult;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.DuplicateResourceException;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.UnacceptableCredentialException;
import org.apache.kafka.common.errors.UnsupportedEndpointTypeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * SCRAM credentials through Apache Kafka 4.4's {@code kafka-configs} ({@code
 * org.apache.kafka.tools.ConfigCommand}, kafka-tools) and Admin client against kcoord
 * (AlterUserScramCredentials, DescribeUserScramCredentials), with Kafka's StandardAuthorizer and
 * {@code User:ANONYMOUS} a super user on PLAINTEXT listeners (SecuredStreamsTest logs in with
 * the credentials it makes).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ScramCredentialsTest {
    private Kcoord kcoord;

    @BeforeAll
    void start() throws Exception {
        kcoord = Kcoord.start("scram", AclCommandTest.STANDARD_AUTHORIZER, "super.users=User:ANONYMOUS");
    }

    @AfterAll
    void stop() throws Exception {
        kcoord.close();
    }

    private static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(30, TimeUnit.SECONDS);
    }

    private static Throwable failure(KafkaFuture<?> future) {
        return assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS)).getCause();
    }

    /** kafka-configs against {@code connection}; must succeed. */
    private static Tools.Run configs(List<String> connection, String... args) {
        List<String> all = new ArrayList<>(connection);
        all.addAll(List.of(args));
        Tools.Run run = Tools.kafkaConfigs(all.toArray(String[]::new));
        assertEquals(0, run.exitCode(), run.toString());
        return run;
    }

    /** {@code user}'s credentials as mechanism -> iterations, via Admin (DescribeUserScramCredentials). */
    private static Map<ScramMechanism, Integer> credentials(Admin admin, String user) throws Exception {
        UserScramCredentialsDescription d = get(admin.describeUserScramCredentials(List.of(user)).description(user));
        Map<ScramMechanism, Integer> out = new TreeMap<>();
        for (ScramCredentialInfo info : d.credentialInfos()) out.put(info.mechanism(), info.iterations());
        return out;
    }

    @Test
    void kafka_configs_adds_and_deletes_a_users_scram_credentials() throws Exception {
        List<String> server = List.of("--bootstrap-server", kcoord.bootstrap());
        Tools.Run added = configs(server, "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]",
                "--entity-type", "users", "--entity-name", "alice");
        assertEquals("Completed updating config for user alice.\n", added.stdout(), added.toString());
        // Without iterations the tool asks for 4096 (Kafka's default).
        configs(server, "--alter", "--add-config", "SCRAM-SHA-256=[password=alice-other]",
                "--entity-type", "users", "--entity-name", "alice");
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            assertEquals(Map.of(ScramMechanism.SCRAM_SHA_256, 4096, ScramMechanism.SCRAM_SHA_512, 8192),
                    credentials(admin, "alice"));

            configs(server, "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users",
                    "--entity-name", "alice");
            assertEquals(Map.of(ScramMechanism.SCRAM_SHA_256, 4096), credentials(admin, "alice"));

            // Deleting a credential the user does not have: Kafka's RESOURCE_NOT_FOUND, which the
            // tool reports with the cause's message and exit code 1.
            Tools.Run missing = Tools.kafkaConfigs("--bootstrap-server", kcoord.bootstrap(), "--alter",
                    "--delete-config", "SCRAM-SHA-512", "--entity-type", "users", "--entity-name", "alice");
            assertEquals(1, missing.exitCode(), missing.toString());
            assertTrue(missing.stderr().contains("ResourceNotFoundException: Attempt to delete a user credential "
                    + "that does not exist"), missing.toString());
            assertEquals(Map.of(ScramMechanism.SCRAM_SHA_256, 4096), credentials(admin, "alice"));
        }
    }

    /**
     * {@code kafka-configs --describe --entity-type users} asks for the users' quotas first
     * (Admin.describeClientQuotas, DescribeClientQuotas, key 48) and then for their SCRAM
     * credentials: a user with a credential and no quota gets the credential's line only.
     */
    @Test
    void kafka_configs_describe_of_users_lists_quotas_then_credentials() throws Exception {
        configs(List.of("--bootstrap-server", kcoord.bootstrap()), "--alter", "--add-config",
                "SCRAM-SHA-256=[password=p]", "--entity-type", "users", "--entity-name", "quota-less");
        Tools.Run named = configs(List.of("--bootstrap-server", kcoord.bootstrap()), "--describe",
                "--entity-type", "users", "--entity-name", "quota-less");
        assertEquals("SCRAM credential configs for user-principal 'quota-less' are SCRAM-SHA-256=iterations=4096\n",
                named.stdout(), named.toString());
        Tools.Run everyone = configs(List.of("--bootstrap-server", kcoord.bootstrap()), "--describe",
                "--entity-type", "users");
        assertTrue(everyone.stdout().contains(
                "SCRAM credential configs for user-principal 'quota-less' are SCRAM-SHA-256=iterations=4096\n"),
                everyone.toString());
    }

    /**
     * Kafka 4.4's Admin client refuses both SCRAM calls itself when it talks to controllers
     * ({@code --bootstrap-controller}): nothing is sent, so kcoord's controller listener, which
     * serves AlterUserScramCredentials as Kafka's controller does, is reached only by other
     * clients (the differential suite's scenario "scram-controller-listener" sends it there).
     */
    @Test
    void kafka_configs_cannot_alter_credentials_through_a_controller() throws Exception {
        Tools.Run run = Tools.kafkaConfigs("--bootstrap-controller", kcoord.controller(), "--alter", "--add-config",
                "SCRAM-SHA-256=[iterations=4096,password=bob-secret]", "--entity-type", "users", "--entity-name", "bob");
        assertEquals(1, run.exitCode(), run.toString());
        assertTrue(run.stderr().contains("UnsupportedEndpointTypeException: This Admin API is not yet supported "
                + "when communicating directly with the controller quorum."), run.toString());
        java.util.Properties props = new java.util.Properties();
        props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, kcoord.controller());
        try (Admin controller = Admin.create(props)) {
            assertInstanceOf(UnsupportedEndpointTypeException.class,
                    failure(controller.describeUserScramCredentials(List.of("bob")).all()));
        }
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            assertInstanceOf(ResourceNotFoundException.class,
                    failure(admin.describeUserScramCredentials(List.of("bob")).description("bob")));
        }
    }

    @Test
    void admin_alters_and_describes_credentials_with_kafkas_errors() throws Exception {
        byte[] password = "pw".getBytes(StandardCharsets.UTF_8);
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            UserScramCredentialAlteration carol = new UserScramCredentialUpsertion("carol",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password);
            UserScramCredentialAlteration carol512 = new UserScramCredentialUpsertion("carol",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 16384), password);
            get(admin.alterUserScramCredentials(List.of(carol)).all());
            get(admin.alterUserScramCredentials(List.of(carol512)).all());
            assertEquals(Map.of(ScramMechanism.SCRAM_SHA_256, 4096, ScramMechanism.SCRAM_SHA_512, 16384),
                    credentials(admin, "carol"));

            // Per user: a deletion of a credential that does not exist, too few and too many
            // iterations, a user altered twice in one request, next to a good alteration.
            UserScramCredentialAlteration dave = new UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_512);
            UserScramCredentialAlteration erin = new UserScramCredentialUpsertion("erin",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4095), password);
            UserScramCredentialAlteration frank = new UserScramCredentialUpsertion("frank",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 16385), password);
            UserScramCredentialAlteration gina = new UserScramCredentialUpsertion("gina",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password);
            UserScramCredentialAlteration gina2 = new UserScramCredentialUpsertion("gina",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password);
            // Kafka takes deletions before upsertions and keeps a user's first error: ivan's
            // failed deletion wins over his (valid) upsertion, listed before it.
            UserScramCredentialAlteration ivan = new UserScramCredentialUpsertion("ivan",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password);
            UserScramCredentialAlteration ivan2 = new UserScramCredentialDeletion("ivan", ScramMechanism.SCRAM_SHA_512);
            UserScramCredentialAlteration hank = new UserScramCredentialUpsertion("hank",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 5000), password);
            Map<String, KafkaFuture<Void>> results = admin.alterUserScramCredentials(
                    List.of(dave, erin, frank, gina, gina2, hank, ivan, ivan2)).values();
            Throwable notFound = failure(results.get("dave"));
            assertInstanceOf(ResourceNotFoundException.class, notFound);
            assertEquals("Attempt to delete a user credential that does not exist", notFound.getMessage());
            Throwable few = failure(results.get("erin"));
            assertInstanceOf(UnacceptableCredentialException.class, few);
            assertEquals("Too few iterations", few.getMessage());
            Throwable many = failure(results.get("frank"));
            assertInstanceOf(UnacceptableCredentialException.class, many);
            assertEquals("Too many iterations", many.getMessage());
            Throwable twice = failure(results.get("gina"));
            assertInstanceOf(DuplicateResourceException.class, twice);
            assertEquals("A user credential cannot be altered twice in the same request", twice.getMessage());
            get(results.get("hank"));
            Throwable ivanFailed = failure(results.get("ivan"));
            assertInstanceOf(ResourceNotFoundException.class, ivanFailed);
            assertEquals("Attempt to delete a user credential that does not exist", ivanFailed.getMessage());

            // Describe: unknown users are RESOURCE_NOT_FOUND, the others answered.
            DescribeUserScramCredentialsResult some = admin.describeUserScramCredentials(List.of("hank", "nobody", "erin"));
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 5000)),
                    get(some.description("hank")).credentialInfos());
            Throwable nobody = failure(some.description("nobody"));
            assertInstanceOf(ResourceNotFoundException.class, nobody);
            assertEquals("Attempt to describe a user credential that does not exist: nobody", nobody.getMessage());
            assertInstanceOf(ResourceNotFoundException.class, failure(some.description("erin")));
            // all() fails only for errors other than RESOURCE_NOT_FOUND (the Admin client's rule).
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 5000)),
                    get(some.all()).get("hank").credentialInfos());

            // Describe with no names: every user that has a credential (the other tests' users too).
            List<String> users = get(admin.describeUserScramCredentials().users());
            assertTrue(users.containsAll(List.of("carol", "hank")), users.toString());
            for (String absent : List.of("dave", "erin", "frank", "gina", "ivan")) {
                assertFalse(users.contains(absent), absent + " has no credential: " + users);
            }

            // Deleting the last credential removes the user from the answer.
            get(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialDeletion("hank", ScramMechanism.SCRAM_SHA_512))).all());
            assertInstanceOf(ResourceNotFoundException.class,
                    failure(admin.describeUserScramCredentials(List.of("hank")).description("hank")));
            assertFalse(get(admin.describeUserScramCredentials().users()).contains("hank"));
        }
    }
}
