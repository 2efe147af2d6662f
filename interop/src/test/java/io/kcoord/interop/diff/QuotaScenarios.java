package io.kcoord.interop.diff;

import static io.kcoord.interop.diff.Scenario.Pair.MAIN;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterClientQuotasRequest;
import org.apache.kafka.common.requests.DescribeClientQuotasRequest;
import org.apache.kafka.common.requests.DescribeClientQuotasResponse;

/**
 * Client quotas (AlterClientQuotas 49, DescribeClientQuotas 48): alterations of user, client-id
 * and ip entities (named, default, combined), validateOnly, removals, every describe filter
 * (exact, default, specified; strict or not), and Kafka's refusals with their messages. Kafka
 * applies an alteration on its controller and the broker describes it once its metadata caught
 * up, so each describe after an alteration polls (unrecorded) until the entities are there.
 *
 * <p>Every entity is the scenario's own (names prefixed with it; the ip is 10.200.0.x), and the
 * values are ones no other scenario's client can reach: the pair's servers are shared.
 */
final class QuotaScenarios {
    private QuotaScenarios() {}

    static List<Scenario> all() {
        List<Scenario> all = new ArrayList<>();
        all.add(new Scenario("client-quotas-alter-describe", MAIN, Map.of(), QuotaScenarios::alterDescribe));
        all.add(new Scenario("client-quotas-errors", MAIN, Map.of(), QuotaScenarios::errors));
        return all;
    }

    static final String USER = "user";
    static final String CLIENT = "client-id";
    static final String IP = "ip";
    static final byte EXACT = 0;
    static final byte DEFAULT = 1;
    static final byte SPECIFIED = 2;

    // ---------------------------------------------------------------- requests

    /** An entity's parts: type, name (null: the default), type, name, ... */
    static List<AlterClientQuotasRequestData.EntityData> entity(String... parts) {
        List<AlterClientQuotasRequestData.EntityData> out = new ArrayList<>();
        for (int i = 0; i < parts.length; i += 2) {
            out.add(new AlterClientQuotasRequestData.EntityData().setEntityType(parts[i]).setEntityName(parts[i + 1]));
        }
        return out;
    }

    static AlterClientQuotasRequestData.OpData set(String key, double value) {
        return new AlterClientQuotasRequestData.OpData().setKey(key).setValue(value);
    }

    static AlterClientQuotasRequestData.OpData remove(String key) {
        return new AlterClientQuotasRequestData.OpData().setKey(key).setRemove(true);
    }

    static AlterClientQuotasRequestData.EntryData entry(List<AlterClientQuotasRequestData.EntityData> entity,
            AlterClientQuotasRequestData.OpData... ops) {
        return new AlterClientQuotasRequestData.EntryData().setEntity(entity).setOps(new ArrayList<>(Arrays.asList(ops)));
    }

    static AbstractRequest.Builder<AlterClientQuotasRequest> alter(boolean validateOnly,
            AlterClientQuotasRequestData.EntryData... entries) {
        AlterClientQuotasRequestData data = new AlterClientQuotasRequestData()
                .setEntries(new ArrayList<>(Arrays.asList(entries))).setValidateOnly(validateOnly);
        return new AbstractRequest.Builder<AlterClientQuotasRequest>(ApiKeys.ALTER_CLIENT_QUOTAS) {
            @Override
            public AlterClientQuotasRequest build(short version) {
                return new AlterClientQuotasRequest(data.duplicate(), version);
            }
        };
    }

    static DescribeClientQuotasRequestData.ComponentData component(String type, byte match, String name) {
        return new DescribeClientQuotasRequestData.ComponentData().setEntityType(type).setMatchType(match).setMatch(name);
    }

    static AbstractRequest.Builder<DescribeClientQuotasRequest> describe(boolean strict,
            DescribeClientQuotasRequestData.ComponentData... components) {
        DescribeClientQuotasRequestData data = new DescribeClientQuotasRequestData()
                .setComponents(new ArrayList<>(Arrays.asList(components))).setStrict(strict);
        return new AbstractRequest.Builder<DescribeClientQuotasRequest>(ApiKeys.DESCRIBE_CLIENT_QUOTAS) {
            @Override
            public DescribeClientQuotasRequest build(short version) {
                return new DescribeClientQuotasRequest(data.duplicate(), version);
            }
        };
    }

    // ---------------------------------------------------------------- projections

    private static void sortArray(JsonNode array) {
        if (!(array instanceof ArrayNode arr)) return;
        List<JsonNode> items = new ArrayList<>();
        arr.forEach(items::add);
        items.sort(Comparator.comparing(JsonNode::toString));
        arr.removeAll();
        items.forEach(arr::add);
    }

    /** Whether one of the entry's parts is the scenario's (`prefix`, or its 10.200.0.x ip). */
    private static boolean owned(JsonNode entry, String prefix) {
        for (JsonNode part : entry.get("entity")) {
            String name = part.get("entityName").isNull() ? "" : part.get("entityName").asText();
            if (name.startsWith(prefix) || name.startsWith("10.200.0.")) return true;
        }
        return false;
    }

    /** Entries (and their parts and values) sorted: Kafka answers in hash order. */
    static Function<JsonNode, JsonNode> sorted() {
        return json -> {
            JsonNode entries = json.get("entries");
            if (entries instanceof ArrayNode arr) {
                for (JsonNode e : arr) {
                    sortArray(e.get("entity"));
                    sortArray(e.get("values"));
                }
                sortArray(arr);
            }
            return json;
        };
    }

    /** {@link #sorted()}, keeping only the scenario's entities. */
    static Function<JsonNode, JsonNode> owned(String prefix) {
        return json -> {
            JsonNode entries = json.get("entries");
            if (entries instanceof ArrayNode arr) {
                List<JsonNode> items = new ArrayList<>();
                arr.forEach(items::add);
                arr.removeAll();
                for (JsonNode e : items) if (owned(e, prefix)) arr.add(e);
            }
            return sorted().apply(json);
        };
    }

    /** Polls (unrecorded) until the scenario's entities described by the filter number {@code count}. */
    private static void await(Side s, String prefix, int count, boolean strict,
            DescribeClientQuotasRequestData.ComponentData... components) throws IOException, InterruptedException {
        Predicate<AbstractResponse> done = r -> r instanceof DescribeClientQuotasResponse d
                && d.data().entries() != null
                && d.data().entries().stream().filter(e -> e.entity().stream().anyMatch(p -> p.entityName() != null
                        && (p.entityName().startsWith(prefix) || p.entityName().startsWith("10.200.0.")))).count() == count;
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            AbstractResponse r = s.send(describe(strict, components), (short) 1, "diff-suite");
            if (r != null && done.test(r)) return;
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError(s.server + ": the quotas did not reach " + count + " entities");
            }
            Thread.sleep(100);
        }
    }

    // ---------------------------------------------------------------- scenarios

    static void alterDescribe(Side s) throws Exception {
        String p = "client-quotas-alter-describe-";
        String alice = p + "alice";
        String app = p + "app";
        String other = p + "other";
        Function<JsonNode, JsonNode> mine = owned(p);
        s.call("alter v1", alter(false,
                entry(entity(USER, alice), set("producer_byte_rate", 1048576), set("request_percentage", 50)),
                entry(entity(USER, alice, CLIENT, app), set("consumer_byte_rate", 2048)),
                entry(entity(CLIENT, app), set("producer_byte_rate", 4096), set("controller_mutation_rate", 2.5)),
                entry(entity(USER, null, CLIENT, other), set("producer_byte_rate", 1e12)),
                entry(entity(IP, "10.200.0.1"), set("connection_creation_rate", 10))), (short) 1, sorted());
        s.call("validateOnly v0", alter(true,
                entry(entity(CLIENT, p + "dry"), set("producer_byte_rate", 1))), (short) 0, sorted());
        await(s, p, 5, false);
        s.call("describe everything", describe(false), (short) 1, mine);
        s.call("exact user", describe(false, component(USER, EXACT, alice)), (short) 1, mine);
        s.call("exact user strict", describe(true, component(USER, EXACT, alice)), (short) 0, mine);
        s.call("specified client-id strict", describe(true, component(CLIENT, SPECIFIED, null)), (short) 1, mine);
        s.call("specified user, exact client-id", describe(true, component(USER, SPECIFIED, null),
                component(CLIENT, EXACT, app)), (short) 1, mine);
        s.call("default user, exact client-id", describe(true, component(USER, DEFAULT, null),
                component(CLIENT, EXACT, other)), (short) 1, mine);
        s.call("specified ip", describe(true, component(IP, SPECIFIED, null)), (short) 1, mine);
        s.call("exact ip", describe(false, component(IP, EXACT, "10.200.0.1")), (short) 1, mine);
        s.call("remove one key", alter(false,
                entry(entity(USER, alice), remove("request_percentage"), remove("consumer_byte_rate"))), (short) 1, sorted());
        s.call("set the same value again", alter(false,
                entry(entity(CLIENT, app), set("producer_byte_rate", 4096))), (short) 1, sorted());
        s.call("remove every key", alter(false,
                entry(entity(USER, alice, CLIENT, app), remove("consumer_byte_rate")),
                entry(entity(USER, null, CLIENT, other), remove("producer_byte_rate")),
                entry(entity(IP, "10.200.0.1"), remove("connection_creation_rate"))), (short) 1, sorted());
        await(s, p, 2, false);
        s.call("describe after the removals", describe(false), (short) 1, mine);
        s.call("clean up", alter(false,
                entry(entity(USER, alice), remove("producer_byte_rate")),
                entry(entity(CLIENT, app), remove("producer_byte_rate"), remove("controller_mutation_rate"))),
                (short) 1, sorted());
        await(s, p, 0, false);
    }

    static void errors(Side s) throws Exception {
        String p = "client-quotas-errors-";
        String u = p + "user";
        Function<JsonNode, JsonNode> sorted = sorted();
        s.call("negative", alter(false, entry(entity(USER, u), set("producer_byte_rate", -1))), (short) 1, sorted);
        s.call("zero", alter(false, entry(entity(USER, u), set("request_percentage", 0))), (short) 1, sorted);
        s.call("fractional byte rate", alter(false, entry(entity(USER, u), set("consumer_byte_rate", 10.5))), (short) 1, sorted);
        s.call("unknown key", alter(false, entry(entity(USER, u), set("bytes_per_fortnight", 1))), (short) 1, sorted);
        s.call("ip key on a user", alter(false, entry(entity(USER, u), set("connection_creation_rate", 1))), (short) 1, sorted);
        s.call("user key on an ip", alter(false, entry(entity(IP, "10.200.0.2"), set("producer_byte_rate", 1))), (short) 1, sorted);
        s.call("ip rate too large", alter(false, entry(entity(IP, "10.200.0.2"), set("connection_creation_rate", 3e9))), (short) 1, sorted);
        s.call("fractional ip rate", alter(false, entry(entity(IP, "10.200.0.2"), set("connection_creation_rate", 1.5))), (short) 1, sorted);
        s.call("ip with a user", alter(false, entry(entity(IP, "10.200.0.2", USER, u), set("connection_creation_rate", 1))), (short) 1, sorted);
        s.call("unknown entity type", alter(false, entry(entity("group", u), set("producer_byte_rate", 1))), (short) 1, sorted);
        s.call("empty name", alter(false, entry(entity(CLIENT, ""), set("producer_byte_rate", 1))), (short) 1, sorted);
        s.call("empty entity", alter(false, entry(entity(), set("producer_byte_rate", 1))), (short) 1, sorted);
        s.call("key twice", alter(false, entry(entity(USER, u), set("producer_byte_rate", 1), set("producer_byte_rate", 2))), (short) 1, sorted);
        s.call("removing what is not there", alter(false, entry(entity(USER, u), remove("producer_byte_rate"), remove("nonsense"))), (short) 1, sorted);
        s.call("nothing to alter", alter(false), (short) 1, sorted);
        await(s, p, 0, false);
        s.call("describe: exact without a name", describe(false, component(USER, EXACT, null)), (short) 1, sorted);
        s.call("describe: default with a name", describe(false, component(USER, DEFAULT, "x")), (short) 1, sorted);
        s.call("describe: specified with a name", describe(false, component(CLIENT, SPECIFIED, "x")), (short) 1, sorted);
        s.call("describe: unknown match type", describe(false, component(CLIENT, (byte) 7, null)), (short) 1, sorted);
        s.call("describe: unknown entity type", describe(false, component("group", SPECIFIED, null)), (short) 1, sorted);
        s.call("describe: empty entity type", describe(false, component("", SPECIFIED, null)), (short) 1, sorted);
        s.call("describe: type twice", describe(false, component(USER, SPECIFIED, null), component(USER, DEFAULT, null)), (short) 0, sorted);
        s.call("describe: ip with a user", describe(false, component(IP, SPECIFIED, null), component(USER, DEFAULT, null)), (short) 1, sorted);
        s.call("describe: strict without components", describe(true), (short) 1, sorted);
    }
}
