package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DeleteAclsResult;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Apache Kafka 4.4's {@code kafka-acls} ({@code org.apache.kafka.tools.AclCommand}, kafka-tools)
 * and Admin client's ACL calls against kcoord with Kafka's StandardAuthorizer configured. Every
 * client is {@code User:ANONYMOUS} (on PLAINTEXT listeners; SecuredStreamsTest and TlsClientTest
 * authenticate), so the shared
 * daemon makes it a super user; the denial tests start their own daemons.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AclCommandTest {
    static final String STANDARD_AUTHORIZER =
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";

    private Kcoord kcoord;

    @BeforeAll
    void start() throws Exception {
        kcoord = Kcoord.start("acls", STANDARD_AUTHORIZER, "super.users=User:ANONYMOUS");
    }

    @AfterAll
    void stop() throws Exception {
        kcoord.close();
    }

    // ------------------------------------------------------------------ the tool

    /** kafka-acls with {@code connection} (--bootstrap-server X or --bootstrap-controller X); must succeed. */
    private static Tools.Run acls(List<String> connection, String... args) {
        List<String> all = new ArrayList<>(connection);
        all.addAll(List.of(args));
        Tools.Run run = Tools.kafkaAcls(all.toArray(String[]::new));
        assertEquals(0, run.exitCode(), run.toString());
        assertFalse(run.stdout().contains("Error while executing ACL command"), run.toString());
        return run;
    }

    private static final Pattern RESOURCE = Pattern.compile(
            "^Current ACLs for resource `(ResourcePattern\\(resourceType=\\w+, name=.*, patternType=\\w+\\))`:$");

    /**
     * What {@code --list} printed, as resource -> its ACL entries, both in Kafka's own
     * toString forms ({@code ResourcePattern(...)} and {@code (principal=..., ...)}). Every
     * line must belong to the format, so an unexpected line fails the parse.
     */
    static Map<String, Set<String>> parseList(String stdout) {
        Map<String, Set<String>> out = new TreeMap<>();
        Set<String> current = null;
        for (String line : stdout.split("\\R")) {
            Matcher m = RESOURCE.matcher(line);
            if (m.matches()) {
                current = new TreeSet<>();
                if (out.put(m.group(1), current) != null) throw new AssertionError("resource twice: " + line);
            } else if (line.startsWith("\t(principal=") && current != null) {
                current.add(line.substring(1));
            } else if (line.isEmpty() || line.startsWith("ACLs for principal `")) {
                current = null;
            } else {
                throw new AssertionError("unexpected line in kafka-acls --list output: '" + line + "'\n" + stdout);
            }
        }
        return out;
    }

    static String pattern(String type, String name, String patternType) {
        return "ResourcePattern(resourceType=" + type + ", name=" + name + ", patternType=" + patternType + ")";
    }

    static String entry(String principal, String operation, String permission) {
        return "(principal=" + principal + ", host=*, operation=" + operation + ", permissionType=" + permission + ")";
    }

    static Set<String> entries(String... entries) {
        return new TreeSet<>(List.of(entries));
    }

    /** The ACLs kcoord holds for resources whose name starts with {@code prefix} (plus the cluster's), via Admin. */
    private static Map<String, Set<String>> viaAdmin(String bootstrap, String prefix) throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            Map<String, Set<String>> out = new TreeMap<>();
            for (AclBinding b : get(admin.describeAcls(AclBindingFilter.ANY).values())) {
                if (!b.pattern().name().startsWith(prefix) && b.pattern().resourceType() != ResourceType.CLUSTER) continue;
                out.computeIfAbsent(b.pattern().toString(), k -> new TreeSet<>()).add(b.entry().toString());
            }
            return out;
        }
    }

    @Test
    void kafka_acls_adds_lists_and_removes_through_the_broker_listener() throws Exception {
        List<String> server = List.of("--bootstrap-server", kcoord.bootstrap());

        Tools.Run added = acls(server, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                "--operation", "Describe", "--topic", "orders");
        assertTrue(added.stdout().contains("Adding ACLs for resource `" + pattern("TOPIC", "orders", "LITERAL") + "`:"),
                added.toString());
        acls(server, "--add", "--deny-principal", "User:mallory", "--operation", "Write", "--topic", "orders");
        acls(server, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "ord",
                "--resource-pattern-type", "prefixed");
        acls(server, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "orders-app-",
                "--resource-pattern-type", "prefixed");
        acls(server, "--add", "--allow-principal", "User:admin", "--operation", "Alter", "--cluster");
        // --producer: WRITE, DESCRIBE, CREATE on the topic, IDEMPOTENT_WRITE on the cluster.
        acls(server, "--add", "--producer", "--allow-principal", "User:writer", "--topic", "orders-events",
                "--idempotent");
        // --consumer: READ, DESCRIBE on the topic, READ on the group.
        acls(server, "--add", "--consumer", "--allow-principal", "User:reader", "--topic", "orders-events",
                "--group", "orders-readers");

        Map<String, Set<String>> expected = new TreeMap<>();
        expected.put(pattern("TOPIC", "orders", "LITERAL"), entries(
                entry("User:alice", "READ", "ALLOW"), entry("User:alice", "DESCRIBE", "ALLOW"),
                entry("User:mallory", "WRITE", "DENY")));
        expected.put(pattern("TOPIC", "ord", "PREFIXED"), entries(entry("User:bob", "READ", "ALLOW")));
        expected.put(pattern("GROUP", "orders-app-", "PREFIXED"), entries(entry("User:alice", "READ", "ALLOW")));
        expected.put(pattern("CLUSTER", "kafka-cluster", "LITERAL"), entries(
                entry("User:admin", "ALTER", "ALLOW"), entry("User:writer", "IDEMPOTENT_WRITE", "ALLOW")));
        expected.put(pattern("TOPIC", "orders-events", "LITERAL"), entries(
                entry("User:writer", "WRITE", "ALLOW"), entry("User:writer", "DESCRIBE", "ALLOW"),
                entry("User:writer", "CREATE", "ALLOW"), entry("User:reader", "READ", "ALLOW"),
                entry("User:reader", "DESCRIBE", "ALLOW")));
        expected.put(pattern("GROUP", "orders-readers", "LITERAL"), entries(entry("User:reader", "READ", "ALLOW")));

        assertEquals(expected, parseList(acls(server, "--list").stdout()));
        assertEquals(expected, viaAdmin(kcoord.bootstrap(), "ord"));

        // --list with a topic: that literal resource only (the default pattern type is LITERAL)...
        assertEquals(Map.of(pattern("TOPIC", "orders", "LITERAL"), expected.get(pattern("TOPIC", "orders", "LITERAL"))),
                parseList(acls(server, "--list", "--topic", "orders").stdout()));
        // ...every ACL that applies to it with MATCH (the literal one and the "ord" prefix)...
        Map<String, Set<String>> matching = new TreeMap<>();
        matching.put(pattern("TOPIC", "orders", "LITERAL"), expected.get(pattern("TOPIC", "orders", "LITERAL")));
        matching.put(pattern("TOPIC", "ord", "PREFIXED"), expected.get(pattern("TOPIC", "ord", "PREFIXED")));
        assertEquals(matching, parseList(acls(server, "--list", "--topic", "orders", "--resource-pattern-type",
                "match").stdout()));
        // ...and nothing for a topic no ACL names.
        assertEquals(Map.of(), parseList(acls(server, "--list", "--topic", "payments").stdout()));
        // --principal keeps that principal's entries.
        Tools.Run alice = acls(server, "--list", "--principal", "User:alice");
        assertTrue(alice.stdout().startsWith("ACLs for principal `User:alice`"), alice.toString());
        assertEquals(Map.of(pattern("TOPIC", "orders", "LITERAL"),
                        entries(entry("User:alice", "READ", "ALLOW"), entry("User:alice", "DESCRIBE", "ALLOW")),
                        pattern("GROUP", "orders-app-", "PREFIXED"), entries(entry("User:alice", "READ", "ALLOW"))),
                parseList(alice.stdout()));

        // Adding what exists already: the tool sees it (DescribeAcls) and says so.
        Tools.Run again = acls(server, "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic",
                "ord", "--resource-pattern-type", "prefixed");
        assertTrue(again.stdout().contains("Acl " + new AclBinding(
                        new ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED),
                        new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW))
                        + " already exists."), again.toString());

        // --remove of one entry, then of a whole resource, then of the --consumer set.
        acls(server, "--remove", "--force", "--deny-principal", "User:mallory", "--operation", "Write", "--topic", "orders");
        expected.put(pattern("TOPIC", "orders", "LITERAL"), entries(
                entry("User:alice", "READ", "ALLOW"), entry("User:alice", "DESCRIBE", "ALLOW")));
        assertEquals(expected, parseList(acls(server, "--list").stdout()));
        acls(server, "--remove", "--force", "--topic", "orders");
        expected.remove(pattern("TOPIC", "orders", "LITERAL"));
        acls(server, "--remove", "--force", "--consumer", "--allow-principal", "User:reader", "--topic",
                "orders-events", "--group", "orders-readers");
        expected.remove(pattern("GROUP", "orders-readers", "LITERAL"));
        expected.put(pattern("TOPIC", "orders-events", "LITERAL"), entries(
                entry("User:writer", "WRITE", "ALLOW"), entry("User:writer", "DESCRIBE", "ALLOW"),
                entry("User:writer", "CREATE", "ALLOW")));
        assertEquals(expected, parseList(acls(server, "--list").stdout()));
        assertEquals(expected, viaAdmin(kcoord.bootstrap(), "ord"));

        // Clean up for the other tests: every ACL of this test, by resource (the tool adds the
        // cluster to its filters only with the LITERAL pattern type).
        acls(server, "--remove", "--force", "--topic", "ord", "--topic", "orders-events", "--group", "orders-app-",
                "--resource-pattern-type", "any");
        acls(server, "--remove", "--force", "--cluster");
        assertEquals(Map.of(), parseList(acls(server, "--list").stdout()));
    }

    @Test
    void kafka_acls_works_through_the_controller_listener() throws Exception {
        List<String> controller = List.of("--bootstrap-controller", kcoord.controller());
        List<String> server = List.of("--bootstrap-server", kcoord.bootstrap());

        acls(controller, "--add", "--allow-principal", "User:carol", "--operation", "Write", "--topic", "ctl-");
        acls(controller, "--add", "--allow-principal", "User:carol", "--deny-principal", "User:dave",
                "--operation", "Read", "--group", "ctl-group", "--resource-pattern-type", "literal");
        acls(controller, "--add", "--allow-principal", "User:carol", "--operation", "Describe", "--topic", "ctl-",
                "--resource-pattern-type", "prefixed");

        Map<String, Set<String>> expected = new TreeMap<>();
        expected.put(pattern("TOPIC", "ctl-", "LITERAL"), entries(entry("User:carol", "WRITE", "ALLOW")));
        expected.put(pattern("TOPIC", "ctl-", "PREFIXED"), entries(entry("User:carol", "DESCRIBE", "ALLOW")));
        expected.put(pattern("GROUP", "ctl-group", "LITERAL"), entries(
                entry("User:carol", "READ", "ALLOW"), entry("User:dave", "READ", "DENY")));
        assertEquals(expected, parseList(acls(controller, "--list").stdout()));
        // One cluster: the broker listener sees what the controller listener wrote.
        assertEquals(expected, parseList(acls(server, "--list").stdout()));
        // --resource-pattern-type any: both patterns named ctl-.
        Map<String, Set<String>> ctl = new TreeMap<>(expected);
        ctl.remove(pattern("GROUP", "ctl-group", "LITERAL"));
        assertEquals(ctl, parseList(acls(controller, "--list", "--topic", "ctl-", "--resource-pattern-type", "any")
                .stdout()));

        acls(controller, "--remove", "--force", "--topic", "ctl-", "--resource-pattern-type", "prefixed");
        expected.remove(pattern("TOPIC", "ctl-", "PREFIXED"));
        assertEquals(expected, parseList(acls(server, "--list").stdout()));
        acls(controller, "--remove", "--force", "--deny-principal", "User:dave", "--operation", "Read",
                "--group", "ctl-group");
        expected.put(pattern("GROUP", "ctl-group", "LITERAL"), entries(entry("User:carol", "READ", "ALLOW")));
        assertEquals(expected, parseList(acls(controller, "--list").stdout()));
        acls(controller, "--remove", "--force", "--topic", "ctl-", "--group", "ctl-group");
        assertEquals(Map.of(), parseList(acls(controller, "--list").stdout()));
    }

    // ------------------------------------------------------------------ the Admin client

    private static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(30, TimeUnit.SECONDS);
    }

    /** The cause of the failure of {@code future}, which must fail. */
    private static Throwable failure(KafkaFuture<?> future) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> future.get(30, TimeUnit.SECONDS));
        return e.getCause();
    }

    private static AclBinding binding(ResourceType type, String name, PatternType patternType, String principal,
            AclOperation op, AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, patternType),
                new AccessControlEntry(principal, "*", op, permission));
    }

    @Test
    void admin_creates_describes_and_deletes_acls() throws Exception {
        AclBinding read = binding(ResourceType.TOPIC, "adm-orders", PatternType.LITERAL, "User:alice",
                AclOperation.READ, AclPermissionType.ALLOW);
        AclBinding prefixed = binding(ResourceType.TOPIC, "adm-", PatternType.PREFIXED, "User:bob",
                AclOperation.WRITE, AclPermissionType.ALLOW);
        AclBinding wildcard = binding(ResourceType.GROUP, "*", PatternType.LITERAL, "User:bob",
                AclOperation.READ, AclPermissionType.ALLOW);
        AclBinding deny = binding(ResourceType.TOPIC, "adm-orders", PatternType.LITERAL, "User:*",
                AclOperation.DELETE, AclPermissionType.DENY);
        AclBinding tokens = binding(ResourceType.USER, "User:alice", PatternType.LITERAL, "User:bob",
                AclOperation.CREATE_TOKENS, AclPermissionType.ALLOW);
        AclBinding badCluster = binding(ResourceType.CLUSTER, "other-cluster", PatternType.LITERAL, "User:alice",
                AclOperation.ALTER, AclPermissionType.ALLOW);
        List<AclBinding> good = List.of(read, prefixed, wildcard, deny, tokens);
        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            List<AclBinding> all = new ArrayList<>(good);
            all.add(badCluster);
            Map<AclBinding, KafkaFuture<Void>> created = admin.createAcls(all).values();
            for (AclBinding b : good) get(created.get(b));
            Throwable bad = failure(created.get(badCluster));
            assertInstanceOf(InvalidRequestException.class, bad);
            assertEquals("The only valid name for the CLUSTER resource is kafka-cluster", bad.getMessage());
            // Creating an existing ACL again succeeds and changes nothing.
            get(admin.createAcls(List.of(read)).all());

            assertEquals(Set.copyOf(good), Set.copyOf(mine(get(admin.describeAcls(AclBindingFilter.ANY).values()))));
            // LITERAL filter: exactly that resource.
            assertEquals(Set.of(read, deny), Set.copyOf(get(admin.describeAcls(new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, "adm-orders", PatternType.LITERAL),
                    AccessControlEntryFilter.ANY)).values())));
            // MATCH filter: what applies to topic adm-orders (the literal resource and the prefix).
            assertEquals(Set.of(read, deny, prefixed), Set.copyOf(get(admin.describeAcls(new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, "adm-orders", PatternType.MATCH),
                    AccessControlEntryFilter.ANY)).values())));
            // Entry filter: principal and permission.
            assertEquals(Set.of(prefixed, wildcard, tokens), Set.copyOf(mine(get(admin.describeAcls(new AclBindingFilter(
                    ResourcePatternFilter.ANY, new AccessControlEntryFilter("User:bob", null, AclOperation.ANY,
                            AclPermissionType.ALLOW))).values()))));
            assertEquals(Set.of(deny), Set.copyOf(mine(get(admin.describeAcls(new AclBindingFilter(
                    ResourcePatternFilter.ANY, new AccessControlEntryFilter(null, "*", AclOperation.DELETE,
                            AclPermissionType.ANY))).values()))));

            // DeleteAcls: each filter reports what it removed.
            AclBindingFilter matchOrders = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, "adm-orders", PatternType.MATCH),
                    AccessControlEntryFilter.ANY);
            AclBindingFilter nothing = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, "adm-absent", PatternType.LITERAL),
                    AccessControlEntryFilter.ANY);
            DeleteAclsResult deleted = admin.deleteAcls(List.of(matchOrders, nothing));
            assertEquals(Set.of(read, deny, prefixed), bindings(get(deleted.values().get(matchOrders))));
            assertEquals(Set.of(), bindings(get(deleted.values().get(nothing))));
            assertEquals(Set.of(wildcard, tokens), Set.copyOf(mine(get(admin.describeAcls(AclBindingFilter.ANY).values()))));
            assertEquals(Set.of(wildcard, tokens), Set.copyOf(get(admin.deleteAcls(List.of(new AclBindingFilter(
                    ResourcePatternFilter.ANY, new AccessControlEntryFilter("User:bob", null, AclOperation.ANY,
                            AclPermissionType.ANY)))).all())));
            assertEquals(Set.of(), Set.copyOf(mine(get(admin.describeAcls(AclBindingFilter.ANY).values()))));
        }
    }

    /** This test's ACLs only (the class's daemon is shared): principals alice, bob and User:*. */
    private static Collection<AclBinding> mine(Collection<AclBinding> all) {
        return all.stream().filter(b -> Set.of("User:alice", "User:bob", "User:*").contains(b.entry().principal())
                && (b.pattern().name().startsWith("adm-") || b.pattern().name().equals("*")
                        || b.pattern().resourceType() == ResourceType.USER))
                .collect(Collectors.toList());
    }

    private static Set<AclBinding> bindings(DeleteAclsResult.FilterResults results) {
        return results.values().stream().map(r -> {
            assertEquals(null, r.exception());
            return r.binding();
        }).collect(Collectors.toSet());
    }

    @Test
    void without_an_authorizer_every_acl_call_is_security_disabled() throws Exception {
        try (Kcoord plain = Kcoord.start("acls-no-authorizer");
                Admin admin = Clients.admin(plain.bootstrap())) {
            AclBinding read = binding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice",
                    AclOperation.READ, AclPermissionType.ALLOW);
            assertInstanceOf(SecurityDisabledException.class, failure(admin.createAcls(List.of(read)).all()));
            assertInstanceOf(SecurityDisabledException.class, failure(admin.describeAcls(AclBindingFilter.ANY).values()));
            assertInstanceOf(SecurityDisabledException.class, failure(admin.deleteAcls(List.of(AclBindingFilter.ANY)).all()));

            // And kafka-acls reports it.
            Tools.Run run = Tools.kafkaAcls("--bootstrap-server", plain.bootstrap(), "--list");
            assertEquals(1, run.exitCode(), run.toString());
            assertTrue(run.stdout().contains("Error while executing ACL command: "
                    + "org.apache.kafka.common.errors.SecurityDisabledException"), run.toString());
        }
    }

    @Test
    void anonymous_without_super_user_or_acl_is_denied() throws Exception {
        try (Kcoord secured = Kcoord.start("acls-denied", STANDARD_AUTHORIZER);
                Admin admin = Clients.admin(secured.bootstrap())) {
            AclBinding read = binding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice",
                    AclOperation.READ, AclPermissionType.ALLOW);
            Throwable create = failure(admin.createAcls(List.of(read)).all());
            assertInstanceOf(ClusterAuthorizationException.class, create);
            assertTrue(create.getMessage().contains("needs ALTER permission"), create.getMessage());
            assertInstanceOf(ClusterAuthorizationException.class, failure(admin.describeAcls(AclBindingFilter.ANY).values()));
            assertInstanceOf(ClusterAuthorizationException.class, failure(admin.deleteAcls(List.of(AclBindingFilter.ANY)).all()));
        }
    }

    @Test
    void allow_everyone_if_no_acl_found_ends_with_the_first_cluster_acl() throws Exception {
        try (Kcoord secured = Kcoord.start("acls-everyone", STANDARD_AUTHORIZER, "allow.everyone.if.no.acl.found=true");
                Admin admin = Clients.admin(secured.bootstrap())) {
            // No ACL on the cluster resource: everyone may ALTER it, so ANONYMOUS may create this one...
            AclBinding admins = binding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, "User:admin",
                    AclOperation.ALTER, AclPermissionType.ALLOW);
            get(admin.createAcls(List.of(admins)).all());
            // ...after which an ACL covers the cluster and none allows ANONYMOUS: describing
            // (DESCRIBE) and creating (ALTER) are denied.
            assertInstanceOf(ClusterAuthorizationException.class, failure(admin.describeAcls(AclBindingFilter.ANY).values()));
            AclBinding more = binding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice",
                    AclOperation.READ, AclPermissionType.ALLOW);
            assertInstanceOf(ClusterAuthorizationException.class, failure(admin.createAcls(List.of(more)).all()));
            Tools.Run list = Tools.kafkaAcls("--bootstrap-server", secured.bootstrap(), "--list");
            assertEquals(1, list.exitCode(), list.toString());
            assertTrue(list.stdout().contains("Error while executing ACL command: "
                    + "org.apache.kafka.common.errors.ClusterAuthorizationException"), list.toString());
        }
    }
}
