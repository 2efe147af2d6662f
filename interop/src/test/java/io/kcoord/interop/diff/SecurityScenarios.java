package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.MAIN;
import static io.kcoord.interop.diff.Scenario.Pair.SECURED;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData.ScramCredentialDeletion;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData.ScramCredentialUpsertion;
import org.apache.kafka.common.message.CreateAclsRequestData;
import org.apache.kafka.common.message.CreateAclsRequestData.AclCreation;
import org.apache.kafka.common.message.DeleteAclsRequestData;
import org.apache.kafka.common.message.DeleteAclsRequestData.DeleteAclsFilter;
import org.apache.kafka.common.message.DescribeAclsRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData.UserName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeAclsResponse;
import org.apache.kafka.common.requests.DescribeUserScramCredentialsResponse;
import org.apache.kafka.common.requests.AlterUserScramCredentialsRequest;
import org.apache.kafka.common.requests.CreateAclsRequest;
import org.apache.kafka.common.requests.DeleteAclsRequest;
import org.apache.kafka.common.requests.DescribeAclsRequest;
import org.apache.kafka.common.requests.DescribeUserScramCredentialsRequest;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;

/**
 * CreateAcls, DescribeAcls, DeleteAcls, AlterUserScramCredentials and
 * DescribeUserScramCredentials, on the pair with Kafka's StandardAuthorizer (User:ANONYMOUS a
 * super user) and, without an authorizer, on the main pair.
 *
 * <p>The ACLs and credentials of a server outlive a scenario, so each scenario names its own
 * principals and users (prefixed with its name) and its projections keep only those. Kafka
 * answers DescribeAcls resources, DeleteAcls matches and SCRAM results in hash order (facts
 * §2.12, §3.8, §3.9), which no client can rely on: the projections sort them.
 */
final class SecurityScenarios {
    private SecurityScenarios() {}

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("acls-security-disabled", MAIN, Map.of(), SecurityScenarios::aclsSecurityDisabled));
        all.add(new Scenario("scram-no-authorizer", MAIN, Map.of(), SecurityScenarios::scramNoAuthorizer));
        all.add(new Scenario("acls-create-describe", SECURED, Map.of(), SecurityScenarios::aclsCreateDescribe));
        all.add(new Scenario("acls-create-invalid", SECURED, Map.of(), SecurityScenarios::aclsCreateInvalid));
        all.add(new Scenario("acls-cidr-host", SECURED, Map.of(), SecurityScenarios::aclsCidrHost));
        all.add(new Scenario("acls-delete", SECURED, Map.of(), SecurityScenarios::aclsDelete));
        all.add(new Scenario("acls-controller-listener", SECURED, Map.of(), SecurityScenarios::aclsControllerListener));
        all.add(new Scenario("scram-alter-describe", SECURED, Map.of(), SecurityScenarios::scramAlterDescribe));
        all.add(new Scenario("scram-controller-listener", SECURED, Map.of(), SecurityScenarios::scramControllerListener));
        return all;
    }

    // ---------------------------------------------------------------- codes

    static final byte ANY_TYPE = ResourceType.ANY.code();
    static final byte TOPIC = ResourceType.TOPIC.code();
    static final byte GROUP = ResourceType.GROUP.code();
    static final byte CLUSTER = ResourceType.CLUSTER.code();
    static final byte TXN = ResourceType.TRANSACTIONAL_ID.code();
    static final byte TOKEN = ResourceType.DELEGATION_TOKEN.code();
    static final byte USER = ResourceType.USER.code();
    static final byte ANY_PATTERN = PatternType.ANY.code();
    static final byte MATCH = PatternType.MATCH.code();
    static final byte LITERAL = PatternType.LITERAL.code();
    static final byte PREFIXED = PatternType.PREFIXED.code();
    static final byte ANY_OP = AclOperation.ANY.code();
    static final byte ALL = AclOperation.ALL.code();
    static final byte READ = AclOperation.READ.code();
    static final byte WRITE = AclOperation.WRITE.code();
    static final byte ALTER = AclOperation.ALTER.code();
    static final byte DESCRIBE = AclOperation.DESCRIBE.code();
    static final byte IDEMPOTENT_WRITE = AclOperation.IDEMPOTENT_WRITE.code();
    static final byte CREATE_TOKENS = AclOperation.CREATE_TOKENS.code();
    static final byte DESCRIBE_TOKENS = AclOperation.DESCRIBE_TOKENS.code();
    static final byte ANY_PERMISSION = AclPermissionType.ANY.code();
    static final byte DENY = AclPermissionType.DENY.code();
    static final byte ALLOW = AclPermissionType.ALLOW.code();
    /** A code no enum maps: it passes Kafka's parse-time check and becomes UNKNOWN. */
    static final byte UNMAPPED = 99;
    static final byte SHA_256 = 1;
    static final byte SHA_512 = 2;

    // ---------------------------------------------------------------- requests

    static AclCreation acl(byte type, String name, byte pattern, String principal, String host, byte op, byte permission) {
        return new AclCreation().setResourceType(type).setResourceName(name).setResourcePatternType(pattern)
                .setPrincipal(principal).setHost(host).setOperation(op).setPermissionType(permission);
    }

    static AbstractRequest.Builder<?> createAcls(AclCreation... creations) {
        return new CreateAclsRequest.Builder(new CreateAclsRequestData().setCreations(new ArrayList<>(List.of(creations))));
    }

    static DescribeAclsRequestData filter(byte type, String name, byte pattern, String principal, String host,
            byte op, byte permission) {
        return new DescribeAclsRequestData().setResourceTypeFilter(type).setResourceNameFilter(name)
                .setPatternTypeFilter(pattern).setPrincipalFilter(principal).setHostFilter(host)
                .setOperation(op).setPermissionType(permission);
    }

    /** Every ACL of {@code principal}. */
    static DescribeAclsRequestData ofPrincipal(String principal) {
        return filter(ANY_TYPE, null, ANY_PATTERN, principal, null, ANY_OP, ANY_PERMISSION);
    }

    /**
     * DescribeAcls with these exact fields. Kafka's own builder takes an AclBindingFilter, whose
     * enums cannot carry an unmapped code; the request's public parser takes the bytes.
     */
    static AbstractRequest.Builder<?> describeAcls(DescribeAclsRequestData data) {
        return new AbstractRequest.Builder<DescribeAclsRequest>(ApiKeys.DESCRIBE_ACLS) {
            @Override
            public DescribeAclsRequest build(short version) {
                return DescribeAclsRequest.parse(MessageUtil.toByteBufferAccessor(data, version), version);
            }
        };
    }

    static DeleteAclsFilter deleteFilter(DescribeAclsRequestData f) {
        return new DeleteAclsFilter().setResourceTypeFilter(f.resourceTypeFilter())
                .setResourceNameFilter(f.resourceNameFilter()).setPatternTypeFilter(f.patternTypeFilter())
                .setPrincipalFilter(f.principalFilter()).setHostFilter(f.hostFilter())
                .setOperation(f.operation()).setPermissionType(f.permissionType());
    }

    static AbstractRequest.Builder<?> deleteAcls(DescribeAclsRequestData... filters) {
        List<DeleteAclsFilter> list = new ArrayList<>();
        for (DescribeAclsRequestData f : filters) list.add(deleteFilter(f));
        return new DeleteAclsRequest.Builder(new DeleteAclsRequestData().setFilters(list));
    }

    static ScramCredentialUpsertion upsert(String name, byte mechanism, int iterations) {
        return new ScramCredentialUpsertion().setName(name).setMechanism(mechanism).setIterations(iterations)
                .setSalt(("salt-of-" + name).getBytes(StandardCharsets.UTF_8))
                .setSaltedPassword(("salted-password-of-" + name).getBytes(StandardCharsets.UTF_8));
    }

    static ScramCredentialDeletion delete(String name, byte mechanism) {
        return new ScramCredentialDeletion().setName(name).setMechanism(mechanism);
    }

    static AbstractRequest.Builder<?> alterScram(List<ScramCredentialDeletion> deletions,
            List<ScramCredentialUpsertion> upsertions) {
        return new AlterUserScramCredentialsRequest.Builder(new AlterUserScramCredentialsRequestData()
                .setDeletions(new ArrayList<>(deletions)).setUpsertions(new ArrayList<>(upsertions)));
    }

    /** DescribeUserScramCredentials of {@code users}; null asks for every user. */
    static AbstractRequest.Builder<?> describeScram(String... users) {
        List<UserName> names = null;
        if (users != null) {
            names = new ArrayList<>();
            for (String u : users) names.add(new UserName().setName(u));
        }
        return new DescribeUserScramCredentialsRequest.Builder(new DescribeUserScramCredentialsRequestData().setUsers(names));
    }

    // ---------------------------------------------------------------- projections

    /** {@code array} sorted by each element's JSON text (for arrays in hash order). */
    private static void sortArray(JsonNode array) {
        if (!(array instanceof ArrayNode arr)) return;
        List<JsonNode> items = new ArrayList<>();
        arr.forEach(items::add);
        items.sort(Comparator.comparing(JsonNode::toString));
        arr.removeAll();
        items.forEach(arr::add);
    }

    private static void keepOnly(JsonNode array, Predicate<JsonNode> keep) {
        if (!(array instanceof ArrayNode arr)) return;
        List<JsonNode> items = new ArrayList<>();
        arr.forEach(items::add);
        arr.removeAll();
        for (JsonNode i : items) if (keep.test(i)) arr.add(i);
    }

    /**
     * DescribeAcls: resources and their ACLs sorted; only ACLs whose principal starts with
     * {@code principals} (the scenario's), resources left empty dropped.
     */
    static Function<JsonNode, JsonNode> aclsOf(String principals) {
        return aclsWhere(principal -> principal.startsWith(principals));
    }

    /** DescribeAcls: as {@link #aclsOf}, keeping the ACLs whose principal passes {@code keep}. */
    static Function<JsonNode, JsonNode> aclsWhere(Predicate<String> keep) {
        return json -> {
            JsonNode resources = json.get("resources");
            if (resources != null) {
                for (JsonNode r : resources) {
                    keepOnly(r.get("acls"), a -> keep.test(a.get("principal").asText()));
                    sortArray(r.get("acls"));
                }
                keepOnly(resources, r -> r.get("acls").size() > 0);
                // Sorted by resource (type, name, pattern type): the text starts with "acls".
                List<JsonNode> items = new ArrayList<>();
                resources.forEach(items::add);
                items.sort(Comparator.comparing((JsonNode r) -> r.get("resourceType").asInt() + "|"
                        + r.get("resourceName").asText() + "|" + r.get("patternType").asInt()));
                ((ArrayNode) resources).removeAll();
                items.forEach(((ArrayNode) resources)::add);
            }
            return json;
        };
    }

    /** DeleteAcls: each filter's matching ACLs sorted. */
    static JsonNode sortedMatches(JsonNode json) {
        JsonNode results = json.get("filterResults");
        if (results != null) for (JsonNode r : results) sortArray(r.get("matchingAcls"));
        return json;
    }

    /** SCRAM results: only users starting with {@code prefix}, sorted by user, infos by mechanism. */
    static Function<JsonNode, JsonNode> usersOf(String prefix) {
        return json -> {
            JsonNode results = json.get("results");
            if (results != null) {
                keepOnly(results, r -> r.get("user").asText().startsWith(prefix) || r.get("user").asText().isEmpty());
                for (JsonNode r : results) sortArray(r.get("credentialInfos"));
                sortArray(results);
            }
            return json;
        };
    }

    /** ApiVersions: the error code and the entries of {@code keys} only. */
    static Function<JsonNode, JsonNode> apiKeys(Set<Integer> keys) {
        return json -> {
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            out.set("errorCode", json.get("errorCode"));
            ArrayNode kept = out.putArray("apiKeysCompared");
            for (JsonNode k : json.get("apiKeys")) if (keys.contains(k.get("apiKey").asInt())) kept.add(k);
            return out;
        };
    }

    // ---------------------------------------------------------------- waits

    /**
     * Kafka answers CreateAcls, DeleteAcls and AlterUserScramCredentials once the controller
     * committed the records; its broker (and controller) apply them to what DescribeAcls and
     * DescribeUserScramCredentials read a moment later. kcoord applies them before it answers.
     * Before a recorded read, the scenarios wait (unrecorded, bounded) until the listener shows
     * the state the writes made.
     */
    static void awaitAcls(Side s, boolean controller, Predicate<String> principals, int count) throws Exception {
        long deadline = System.currentTimeMillis() + 15_000;
        AbstractRequest.Builder<?> all = describeAcls(ofPrincipal(null));
        while (true) {
            AbstractResponse r = controller ? s.sendController(all, (short) 3) : s.send(all, (short) 3, "diff-suite");
            int seen = -1;
            if (r instanceof DescribeAclsResponse d && d.data().errorCode() == 0) {
                seen = 0;
                for (var resource : d.data().resources()) {
                    for (var acl : resource.acls()) if (principals.test(acl.principal())) seen++;
                }
            }
            if (seen == count) return;
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(s.server + " shows " + seen + " of the scenario's ACLs, not " + count);
            }
            Thread.sleep(50);
        }
    }

    static void awaitAcls(Side s, String principals, int count) throws Exception {
        awaitAcls(s, false, p -> p.startsWith(principals), count);
    }

    /** As {@link #awaitAcls}: until the broker lists exactly {@code expected} ("user/mechanism/iterations") for the prefix. */
    static void awaitCredentials(Side s, String users, String... expected) throws Exception {
        Set<String> want = Set.of(expected);
        long deadline = System.currentTimeMillis() + 15_000;
        while (true) {
            AbstractResponse r = s.send(describeScram((String[]) null), (short) 0, "diff-suite");
            Set<String> seen = new java.util.TreeSet<>();
            if (r instanceof DescribeUserScramCredentialsResponse d) {
                for (var result : d.data().results()) {
                    if (!result.user().startsWith(users)) continue;
                    for (var info : result.credentialInfos()) {
                        seen.add(result.user().substring(users.length()) + "/" + info.mechanism() + "/" + info.iterations());
                    }
                }
            }
            if (seen.equals(want)) return;
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(s.server + " lists credentials " + seen + ", not " + want);
            }
            Thread.sleep(50);
        }
    }

    // ---------------------------------------------------------------- scenarios

    /** No authorizer (the main pair): the ACL RPCs answer SECURITY_DISABLED, with Kafka's messages. */
    static void aclsSecurityDisabled(Side s) throws Exception {
        String p = "User:acls-security-disabled-";
        for (short v = 1; v <= 3; v++) {
            s.call("CreateAcls v" + v, createAcls(
                    acl(TOPIC, "acls-security-disabled-t", LITERAL, p + "a", "*", READ, ALLOW),
                    acl(CLUSTER, "not-the-cluster", LITERAL, p + "a", "*", ALTER, ALLOW)), v);
            s.call("DescribeAcls v" + v, describeAcls(ofPrincipal(p + "a")), v);
            s.call("DeleteAcls v" + v, deleteAcls(ofPrincipal(p + "a"),
                    filter(TOPIC, "x", LITERAL, null, null, ANY_OP, ANY_PERMISSION)), v);
        }
    }

    /** No authorizer: SCRAM credentials are altered and described by anyone. */
    static void scramNoAuthorizer(Side s) throws Exception {
        String u = "scram-no-authorizer-user";
        Function<JsonNode, JsonNode> mine = usersOf("scram-no-authorizer-");
        s.call("alter", alterScram(List.of(), List.of(upsert(u, SHA_256, 4096))), (short) 0, mine);
        awaitCredentials(s, "scram-no-authorizer-", "user/1/4096");
        s.call("describe the user", describeScram(u), (short) 0, mine);
        s.call("describe everyone", describeScram((String[]) null), (short) 0, mine);
        s.call("delete", alterScram(List.of(delete(u, SHA_256)), List.of()), (short) 0, mine);
        awaitCredentials(s, "scram-no-authorizer-");
        s.call("describe after the delete", describeScram(u), (short) 0, mine);
    }

    static void aclsCreateDescribe(Side s) throws Exception {
        String p = "User:acls-create-describe-";
        String t = "acls-create-describe-t";
        Function<JsonNode, JsonNode> mine = aclsOf(p);
        s.call("create v3", createAcls(
                acl(TOPIC, t, LITERAL, p + "a", "*", READ, ALLOW),
                acl(TOPIC, "acls-create-describe-", PREFIXED, p + "b", "10.0.0.1", WRITE, DENY),
                acl(GROUP, "*", LITERAL, p + "a", "*", READ, ALLOW),
                acl(CLUSTER, "kafka-cluster", LITERAL, p + "a", "*", ALTER, ALLOW),
                acl(TXN, "acls-create-describe-tx", LITERAL, p + "a", "*", WRITE, ALLOW),
                acl(TOKEN, "acls-create-describe-token", LITERAL, p + "a", "*", DESCRIBE, ALLOW),
                acl(USER, "User:acls-create-describe-u", LITERAL, p + "a", "*", CREATE_TOKENS, ALLOW),
                acl(TOPIC, t, LITERAL, p + "a", "*", READ, ALLOW), // repeated in the request
                acl(TOPIC, t, LITERAL, p + "c", "*", ALL, ALLOW),
                acl(TOPIC, t, LITERAL, p + "c", "host name, not validated", DESCRIBE, DENY)), (short) 3);
        s.call("create what exists and one more, v2", createAcls(
                acl(TOPIC, t, LITERAL, p + "a", "*", READ, ALLOW),
                acl(TOPIC, t, LITERAL, p + "d", "*", DESCRIBE, ALLOW)), (short) 2);
        s.call("create v1", createAcls(acl(GROUP, "acls-create-describe-g", PREFIXED, p + "d", "*", READ, ALLOW)), (short) 1);
        s.call("create a USER resource at v2", createAcls(
                acl(USER, "User:acls-create-describe-v", LITERAL, p + "d", "*", DESCRIBE_TOKENS, ALLOW)), (short) 2);
        s.call("create nothing", createAcls(), (short) 3);
        awaitAcls(s, p, 12);

        for (short v = 1; v <= 3; v++) {
            s.call("describe every ACL v" + v, describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, null, ANY_OP,
                    ANY_PERMISSION)), v, mine);
        }
        s.call("describe topic MATCH", describeAcls(filter(TOPIC, t, MATCH, null, null, ANY_OP, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe topic LITERAL", describeAcls(filter(TOPIC, t, LITERAL, null, null, ANY_OP, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe topic PREFIXED", describeAcls(filter(TOPIC, "acls-create-describe-", PREFIXED, null, null,
                ANY_OP, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe ANY pattern by name", describeAcls(filter(ANY_TYPE, t, ANY_PATTERN, null, null, ANY_OP,
                ANY_PERMISSION)), (short) 3, mine);
        s.call("describe group MATCH (the * ACL and the prefix)", describeAcls(filter(GROUP,
                "acls-create-describe-g1", MATCH, null, null, ANY_OP, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe group literal *", describeAcls(filter(GROUP, "*", LITERAL, null, null, ANY_OP,
                ANY_PERMISSION)), (short) 3, mine);
        s.call("describe the cluster", describeAcls(filter(CLUSTER, "kafka-cluster", LITERAL, null, null, ANY_OP,
                ANY_PERMISSION)), (short) 3, mine);
        s.call("describe a principal", describeAcls(ofPrincipal(p + "a")), (short) 3, mine);
        s.call("describe a host", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, "10.0.0.1", ANY_OP,
                ANY_PERMISSION)), (short) 3, mine);
        s.call("describe READ ALLOW", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, null, READ, ALLOW)), (short) 3, mine);
        s.call("describe operation ALL (only ACLs written ALL)", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN,
                null, null, ALL, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe DENY", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, null, ANY_OP, DENY)), (short) 3, mine);
        s.call("describe USER resources", describeAcls(filter(USER, null, ANY_PATTERN, null, null, ANY_OP,
                ANY_PERMISSION)), (short) 3, mine);
        s.call("describe an unmapped resource type", describeAcls(filter(UNMAPPED, null, ANY_PATTERN, null, null,
                ANY_OP, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe an unmapped operation", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, null,
                UNMAPPED, ANY_PERMISSION)), (short) 3, mine);
        s.call("describe a name no ACL has", describeAcls(filter(TOPIC, "acls-create-describe-none", LITERAL, null,
                null, ANY_OP, ANY_PERMISSION)), (short) 3, mine);

        s.call("clean up", deleteAcls(ofPrincipal(p + "a"), ofPrincipal(p + "b"), ofPrincipal(p + "c"),
                ofPrincipal(p + "d")), (short) 3, SecurityScenarios::sortedMatches);
        awaitAcls(s, p, 0);
        s.call("describe after the clean-up", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, null, ANY_OP,
                ANY_PERMISSION)), (short) 3, mine);
    }

    /** Kafka's validation of creations (facts §2.11), each failing request on its own. */
    static void aclsCreateInvalid(Side s) throws Exception {
        String p = "User:acls-create-invalid-";
        String t = "acls-create-invalid-t";
        s.call("invalid creations beside a valid one", createAcls(
                acl(CLUSTER, "acls-create-invalid-cluster", LITERAL, p + "a", "*", ALTER, ALLOW),
                acl(TOPIC, "", LITERAL, p + "a", "*", READ, ALLOW),
                acl(TOPIC, t, LITERAL, "no-colon", "*", READ, ALLOW),
                acl(TOPIC, t, LITERAL, p + "a", "", READ, ALLOW),
                acl(TOPIC, t, LITERAL, "User:", "*", READ, ALLOW),
                acl(TOPIC, t, LITERAL, p + "a", "*", READ, ALLOW)), (short) 3);
        s.call("unmapped codes", createAcls(
                acl(UNMAPPED, t, LITERAL, p + "b", "*", READ, ALLOW),
                acl(TOPIC, t, UNMAPPED, p + "b", "*", READ, ALLOW),
                acl(TOPIC, t, LITERAL, p + "b", "*", UNMAPPED, ALLOW),
                acl(TOPIC, t, LITERAL, p + "b", "*", READ, UNMAPPED),
                acl(UNMAPPED, "", UNMAPPED, "no-colon", "", UNMAPPED, UNMAPPED),
                acl(CLUSTER, "not-kafka-cluster", LITERAL, p + "b", "*", UNMAPPED, ALLOW)), (short) 3);
        s.call("resource type ANY fails the request", createAcls(
                acl(TOPIC, t, LITERAL, p + "c", "*", READ, ALLOW),
                acl(ANY_TYPE, t, LITERAL, p + "c", "*", READ, ALLOW)), (short) 3);
        s.call("pattern MATCH fails the request", createAcls(
                acl(TOPIC, t, LITERAL, p + "c", "*", WRITE, ALLOW),
                acl(TOPIC, t, MATCH, p + "c", "*", READ, ALLOW)), (short) 3);
        s.call("pattern ANY fails the request", createAcls(acl(TOPIC, t, ANY_PATTERN, p + "c", "*", READ, ALLOW)), (short) 3);
        s.call("operation ANY fails the request", createAcls(acl(TOPIC, t, LITERAL, p + "c", "*", ANY_OP, ALLOW)), (short) 3);
        s.call("permission ANY fails the request", createAcls(acl(TOPIC, t, LITERAL, p + "c", "*", READ,
                ANY_PERMISSION)), (short) 3);
        awaitAcls(s, false, principal -> principal.startsWith(p) || principal.equals("User:"), 2);
        s.call("what was stored", describeAcls(filter(ANY_TYPE, null, ANY_PATTERN, null, null, ANY_OP,
                ANY_PERMISSION)), (short) 3, aclsWhere(principal -> principal.startsWith(p) || principal.equals("User:")));
        s.call("clean up", deleteAcls(ofPrincipal(p + "a"), ofPrincipal(p + "b"), ofPrincipal(p + "c"),
                ofPrincipal("User:")), (short) 3, SecurityScenarios::sortedMatches);
    }

    /** CIDR host patterns (KAFKA-20816): a valid range is stored, an invalid one refused with Kafka's message. */
    static void aclsCidrHost(Side s) throws Exception {
        String p = "User:acls-cidr-host-";
        s.call("create with CIDR hosts", createAcls(
                acl(TOPIC, "acls-cidr-host-t", LITERAL, p + "a", "10.0.0.0/8", READ, ALLOW),
                acl(TOPIC, "acls-cidr-host-t", LITERAL, p + "a", "10.0.0.0/33", READ, ALLOW),
                acl(TOPIC, "acls-cidr-host-t", LITERAL, p + "a", "10.1.2.3", READ, ALLOW)), (short) 3);
        s.call("clean up", deleteAcls(ofPrincipal(p + "a")), (short) 3, SecurityScenarios::sortedMatches);
    }

    static void aclsDelete(Side s) throws Exception {
        String p = "User:acls-delete-";
        String t = "acls-delete-t";
        Function<JsonNode, JsonNode> mine = aclsOf(p);
        s.call("create", createAcls(
                acl(TOPIC, t, LITERAL, p + "a", "*", READ, ALLOW),
                acl(TOPIC, t, LITERAL, p + "b", "*", WRITE, DENY),
                acl(TOPIC, "acls-delete-", PREFIXED, p + "a", "*", DESCRIBE, ALLOW),
                acl(TOPIC, "*", LITERAL, p + "c", "*", READ, ALLOW),
                acl(GROUP, "acls-delete-g", LITERAL, p + "a", "*", READ, ALLOW),
                acl(GROUP, "acls-delete-g", PREFIXED, p + "a", "*", READ, ALLOW),
                acl(CLUSTER, "kafka-cluster", LITERAL, p + "a", "*", IDEMPOTENT_WRITE, ALLOW),
                acl(TOPIC, "acls-delete-other", LITERAL, p + "a", "10.0.0.9", ALL, ALLOW)), (short) 3);
        awaitAcls(s, p, 8);
        s.call("unmapped codes are INVALID_REQUEST per filter", deleteAcls(
                filter(UNMAPPED, null, ANY_PATTERN, p + "a", null, ANY_OP, ANY_PERMISSION),
                filter(ANY_TYPE, null, UNMAPPED, p + "a", null, ANY_OP, ANY_PERMISSION),
                filter(ANY_TYPE, null, ANY_PATTERN, p + "a", null, UNMAPPED, ANY_PERMISSION),
                filter(ANY_TYPE, null, ANY_PATTERN, p + "a", null, ANY_OP, UNMAPPED),
                filter(TOPIC, "acls-delete-nothing", LITERAL, null, null, ANY_OP, ANY_PERMISSION)), (short) 3,
                SecurityScenarios::sortedMatches);
        s.call("nothing deleted yet", describeAcls(ofPrincipal(null)), (short) 3, mine);
        s.call("delete v3: overlapping filters each list the ACL", deleteAcls(
                filter(TOPIC, t, LITERAL, p + "b", null, ANY_OP, ANY_PERMISSION),
                filter(TOPIC, t, MATCH, p + "a", null, ANY_OP, ANY_PERMISSION),
                filter(TOPIC, t, LITERAL, p + "a", null, READ, ALLOW),
                filter(TOPIC, t, MATCH, p + "c", null, ANY_OP, ANY_PERMISSION),
                filter(TOPIC, "acls-delete-none", LITERAL, null, null, ANY_OP, ANY_PERMISSION)), (short) 3,
                SecurityScenarios::sortedMatches);
        awaitAcls(s, p, 4);
        s.call("after v3", describeAcls(ofPrincipal(null)), (short) 3, mine);
        s.call("delete v1: a group by name, any pattern", deleteAcls(
                filter(GROUP, "acls-delete-g", ANY_PATTERN, p + "a", null, ANY_OP, ANY_PERMISSION)), (short) 1,
                SecurityScenarios::sortedMatches);
        s.call("delete v2: the cluster, a wrong operation", deleteAcls(
                filter(CLUSTER, "kafka-cluster", LITERAL, p + "a", null, WRITE, ANY_PERMISSION)), (short) 2,
                SecurityScenarios::sortedMatches);
        s.call("delete v2: the cluster", deleteAcls(
                filter(CLUSTER, null, ANY_PATTERN, p + "a", null, IDEMPOTENT_WRITE, ALLOW)), (short) 2,
                SecurityScenarios::sortedMatches);
        s.call("delete by host and operation ALL", deleteAcls(
                filter(ANY_TYPE, null, ANY_PATTERN, p + "a", "10.0.0.9", ALL, ALLOW)), (short) 3,
                SecurityScenarios::sortedMatches);
        s.call("delete no filters", deleteAcls(), (short) 3);
        awaitAcls(s, p, 0);
        s.call("at the end", describeAcls(ofPrincipal(null)), (short) 3, mine);
    }

    /** The ACL RPCs on the controller listeners, and ApiVersions there. */
    static void aclsControllerListener(Side s) throws Exception {
        String p = "User:acls-controller-listener-";
        Function<JsonNode, JsonNode> mine = aclsOf(p);
        s.callController("ApiVersions on the controller listener", new org.apache.kafka.common.requests
                .ApiVersionsRequest.Builder(), (short) 3, apiKeys(Set.of(29, 30, 31, 50, 51)));
        s.callController("create", createAcls(
                acl(TOPIC, "acls-controller-listener-t", LITERAL, p + "a", "*", READ, ALLOW),
                acl(GROUP, "acls-controller-listener-", PREFIXED, p + "a", "*", READ, ALLOW),
                acl(CLUSTER, "other", LITERAL, p + "a", "*", ALTER, ALLOW)), (short) 3, Function.identity());
        awaitAcls(s, true, principal -> principal.startsWith(p), 2);
        awaitAcls(s, p, 2);
        s.callController("describe on the controller", describeAcls(ofPrincipal(p + "a")), (short) 3, mine);
        s.call("describe on the broker", describeAcls(ofPrincipal(p + "a")), (short) 3, mine);
        s.callController("delete", deleteAcls(filter(TOPIC, null, ANY_PATTERN, p + "a", null, ANY_OP,
                ANY_PERMISSION)), (short) 3, SecurityScenarios::sortedMatches);
        awaitAcls(s, p, 1);
        s.call("describe on the broker after the delete", describeAcls(ofPrincipal(p + "a")), (short) 3, mine);
        s.callController("clean up", deleteAcls(ofPrincipal(p + "a")), (short) 3, SecurityScenarios::sortedMatches);
    }

    static void scramAlterDescribe(Side s) throws Exception {
        String u = "scram-alter-describe-";
        Function<JsonNode, JsonNode> mine = usersOf(u);
        s.call("alter v0", alterScram(
                List.of(delete(u + "none", SHA_256),
                        delete(u + "twice-deleted", SHA_256),
                        delete(u + "twice-deleted", SHA_512),
                        delete(u + "deleted-then-upserted", SHA_512),
                        delete("", SHA_256),
                        delete(u + "bad-deletion-mechanism", (byte) 0)),
                List.of(upsert(u + "one", SHA_256, 4096),
                        upsert(u + "two", SHA_512, 8192),
                        upsert(u + "two", SHA_256, 8192),
                        upsert(u + "deleted-then-upserted", SHA_256, 4096),
                        upsert(u + "few", SHA_256, 4095),
                        upsert(u + "many", SHA_512, 16385),
                        upsert(u + "mechanism-0", (byte) 0, 4096),
                        upsert(u + "mechanism-3", (byte) 3, 4096),
                        upsert("", SHA_256, 4096),
                        upsert(u + "max", SHA_512, 16384),
                        upsert(u + "both", SHA_256, 4096),
                        upsert(u + "empty-salt", SHA_256, 4096).setSalt(new byte[0]),
                        upsert(u + "empty-salted-password", SHA_512, 4096).setSaltedPassword(new byte[0]),
                        upsert(u + "empty-then-good", SHA_256, 4096).setSaltedPassword(new byte[0]),
                        upsert(u + "empty-then-good", SHA_512, 4096))),
                (short) 0, mine);
        s.call("alter: the second mechanism of a user", alterScram(List.of(),
                List.of(upsert(u + "both", SHA_512, 5000))), (short) 0, mine);
        awaitCredentials(s, u, "one/1/4096", "both/1/4096", "both/2/5000", "max/2/16384", "empty-salt/1/4096");
        s.call("describe named users", describeScram(u + "one", u + "both", u + "none", u + "max", u + "empty-salt",
                u + "empty-salted-password", u + "two"), (short) 0, mine);
        s.call("describe a user twice", describeScram(u + "one", u + "both", u + "one", u + "none", u + "none"),
                (short) 0, mine);
        s.call("describe everyone (null)", describeScram((String[]) null), (short) 0, mine);
        s.call("describe everyone (empty)", describeScram(new String[0]), (short) 0, mine);
        s.call("describe the empty name", describeScram(""), (short) 0, mine);
        s.call("replace one, delete another", alterScram(List.of(delete(u + "one", SHA_256)),
                List.of(upsert(u + "both", SHA_256, 6000))), (short) 0, mine);
        awaitCredentials(s, u, "both/1/6000", "both/2/5000", "max/2/16384", "empty-salt/1/4096");
        s.call("after", describeScram(u + "one", u + "both"), (short) 0, mine);
        s.call("delete a mechanism the user lacks", alterScram(List.of(delete(u + "max", SHA_256)), List.of()),
                (short) 0, mine);
        s.call("nothing to alter", alterScram(List.of(), List.of()), (short) 0, mine);
    }

    /** AlterUserScramCredentials on the controller listeners; DescribeUserScramCredentials is not served there. */
    static void scramControllerListener(Side s) throws Exception {
        String u = "scram-controller-listener-";
        Function<JsonNode, JsonNode> mine = usersOf(u);
        s.callController("alter on the controller", alterScram(List.of(delete(u + "none", SHA_512)),
                List.of(upsert(u + "a", SHA_512, 4096), upsert(u + "few", SHA_256, 100))), (short) 0, mine);
        awaitCredentials(s, u, "a/2/4096");
        s.call("describe on the broker", describeScram(u + "a", u + "few"), (short) 0, mine);
        s.callController("describe on the controller", describeScram(u + "a"), (short) 0, mine);
    }
}
