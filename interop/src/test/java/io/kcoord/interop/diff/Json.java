package io.kcoord.interop.diff;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** Masking, normalising and diffing of the responses' JSON (RequestConvertToJson's shape). */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);

    private Json() {}

    /** Field names whose values are uuids minted by the server: replaced by stable symbols. */
    private static final Set<String> MINTED_UUIDS = Set.of("topicId");

    /** Fields that hold a member id, which the server may have minted. */
    private static final Set<String> MEMBER_ID_FIELDS = Set.of("memberId", "leader");

    /** A KIP-848 member id a v0 coordinator minted: Kafka's Uuid string (22 characters). */
    private static final java.util.regex.Pattern MINTED_CONSUMER_ID = java.util.regex.Pattern.compile(
            "[A-Za-z0-9_-]{22}");

    /** String arrays whose order carries no meaning (Kafka builds them from hash sets). */
    private static final Set<String> UNORDERED_STRINGS = Set.of("subscribedTopicNames");

    private static final java.util.regex.Pattern MINTED_MEMBER_ID = java.util.regex.Pattern.compile(
            ".*-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    /** Arrays whose order carries no meaning (Kafka builds them from hash maps): sorted by key. */
    private static final Map<String, String> UNORDERED = Map.of(
            "members", "memberId",
            "groups", "groupId",
            "activeTasks", "subtopologyId",
            "standbyTasks", "subtopologyId",
            "warmupTasks", "subtopologyId",
            "topics", "name",
            "subtopologies", "subtopologyId",
            "partitionsByUserEndpoint", "userEndpoint",
            "topicPartitions", "topicId");

    /**
     * Masks what either server legitimately generates: uuids (by order of first appearance in
     * the scenario, so equal ids stay equal), and the host and port of nodes.
     */
    static JsonNode mask(JsonNode node, Map<String, String> uuidSymbols) {
        JsonNode copy = node.deepCopy();
        maskInPlace(copy, uuidSymbols);
        return copy;
    }

    private static void maskInPlace(JsonNode node, Map<String, String> uuidSymbols) {
        if (node instanceof ObjectNode obj) {
            boolean isNode = obj.has("nodeId") || obj.has("coordinatorKey") || obj.has("brokerId");
            Iterator<Map.Entry<String, JsonNode>> fields = obj.fields();
            List<String> names = new ArrayList<>();
            fields.forEachRemaining(e -> names.add(e.getKey()));
            for (String name : names) {
                JsonNode value = obj.get(name);
                if (MINTED_UUIDS.contains(name) && value.isTextual()) {
                    String text = value.asText();
                    if (!text.equals("AAAAAAAAAAAAAAAAAAAAAA")) {
                        obj.set(name, TextNode.valueOf(uuidSymbols.computeIfAbsent(
                                text, t -> "<" + name + "#" + (uuidSymbols.size() + 1) + ">")));
                    }
                } else if (MEMBER_ID_FIELDS.contains(name) && value.isTextual()
                        && MINTED_MEMBER_ID.matcher(value.asText()).matches()) {
                    // Classic member ids are the client id (or instance id) and a minted uuid.
                    String text = value.asText();
                    String prefix = text.substring(0, text.length() - 36);
                    obj.set(name, TextNode.valueOf(uuidSymbols.computeIfAbsent(
                            text, t -> prefix + "<member#" + (uuidSymbols.size() + 1) + ">")));
                } else if (MEMBER_ID_FIELDS.contains(name) && value.isTextual()
                        && MINTED_CONSUMER_ID.matcher(value.asText()).matches()) {
                    obj.set(name, TextNode.valueOf(uuidSymbols.computeIfAbsent(
                            value.asText(), t -> "<member#" + (uuidSymbols.size() + 1) + ">")));
                } else if (UNORDERED_STRINGS.contains(name) && value instanceof ArrayNode arr) {
                    List<String> items = new ArrayList<>();
                    arr.forEach(i -> items.add(i.asText()));
                    items.sort(null);
                    arr.removeAll();
                    items.forEach(arr::add);
                } else if (name.equals("finalizedFeaturesEpoch") && value.asLong() >= 0) {
                    // Kafka's is the offset of the last feature change in its metadata log.
                    obj.set(name, TextNode.valueOf("<epoch>"));
                } else if (isNode && (name.equals("host") || name.equals("port"))) {
                    obj.set(name, TextNode.valueOf("<" + name + ">"));
                } else {
                    maskInPlace(value, uuidSymbols);
                }
            }
            for (Map.Entry<String, String> u : UNORDERED.entrySet()) {
                JsonNode array = obj.get(u.getKey());
                if (array instanceof ArrayNode arr) sortBy(arr, u.getValue());
            }
        } else if (node instanceof ArrayNode arr) {
            for (JsonNode child : arr) maskInPlace(child, uuidSymbols);
        }
    }

    private static void sortBy(ArrayNode array, String key) {
        List<JsonNode> items = new ArrayList<>();
        array.forEach(items::add);
        if (!items.stream().allMatch(i -> i.has(key))) return;
        items.sort(Comparator.comparing(i -> i.get(key).toString()));
        array.removeAll();
        items.forEach(array::add);
    }

    /**
     * The assignor's tie-breaks differ by design (README "Deterministic assignor ties"): task
     * lists become the number of tasks in them, so counts are still compared.
     */
    static JsonNode countTasks(JsonNode node) {
        JsonNode copy = node.deepCopy();
        countInPlace(copy);
        anonymiseMembers(copy);
        return copy;
    }

    /**
     * Described members become a sorted list of member states without their identity, so that
     * "which member got two tasks" (a tie) does not count, but the multiset of per-member counts
     * and epochs does.
     */
    private static void anonymiseMembers(JsonNode node) {
        if (node instanceof ObjectNode obj) {
            JsonNode members = obj.get("members");
            if (members instanceof ArrayNode arr && arr.size() > 0 && arr.get(0).has("memberId")) {
                List<JsonNode> items = new ArrayList<>();
                for (JsonNode m : arr) {
                    ObjectNode c = (ObjectNode) m.deepCopy();
                    c.remove(List.of("memberId", "processId", "clientId", "instanceId", "userEndpoint"));
                    items.add(c);
                }
                items.sort(Comparator.comparing(JsonNode::toString));
                arr.removeAll();
                items.forEach(arr::add);
            }
            obj.forEach(Json::anonymiseMembers);
        } else if (node instanceof ArrayNode arr) {
            arr.forEach(Json::anonymiseMembers);
        }
    }

    private static void countInPlace(JsonNode node) {
        if (node instanceof ObjectNode obj) {
            List<String> names = new ArrayList<>();
            obj.fieldNames().forEachRemaining(names::add);
            for (String name : names) {
                JsonNode value = obj.get(name);
                if ((name.equals("activeTasks") || name.equals("standbyTasks")
                        || name.equals("warmupTasks")) && value.isArray()) {
                    int count = 0;
                    for (JsonNode t : value) count += t.path("partitions").size();
                    obj.set(name, IntNode.valueOf(count));
                } else if (name.equals("topicPartitions") && value.isArray()) {
                    // A consumer's partitions: how many, whichever topics and partitions.
                    int count = 0;
                    for (JsonNode t : value) count += t.path("partitions").size();
                    obj.set(name, IntNode.valueOf(count));
                } else {
                    countInPlace(value);
                }
            }
        } else if (node instanceof ArrayNode arr) {
            for (JsonNode child : arr) countInPlace(child);
        }
    }

    /** JSON-pointer paths where {@code a} and {@code b} differ (leaves, or a missing side). */
    static List<String> diff(JsonNode a, JsonNode b) {
        List<String> out = new ArrayList<>();
        diff("", a, b, out);
        return out;
    }

    private static void diff(String path, JsonNode a, JsonNode b, List<String> out) {
        if (a == null || b == null || a.isMissingNode() || b.isMissingNode()) {
            if (!(a == null || a.isMissingNode()) || !(b == null || b.isMissingNode())) out.add(path);
            return;
        }
        if (a.isObject() && b.isObject()) {
            Set<String> names = new TreeSet<>();
            a.fieldNames().forEachRemaining(names::add);
            b.fieldNames().forEachRemaining(names::add);
            for (String n : names) diff(path + "/" + n, a.get(n), b.get(n), out);
        } else if (a.isArray() && b.isArray()) {
            String key = commonKey(a, b);
            if (key != null) {
                // Arrays of keyed objects are compared by key: a missing element is one path.
                Map<String, JsonNode> ma = new java.util.LinkedHashMap<>();
                Map<String, JsonNode> mb = new java.util.LinkedHashMap<>();
                a.forEach(e -> ma.put(e.get(key).asText(), e));
                b.forEach(e -> mb.put(e.get(key).asText(), e));
                Set<String> keys = new LinkedHashSet<>(ma.keySet());
                keys.addAll(mb.keySet());
                for (String k : keys) diff(path + "/[" + key + "=" + k + "]", ma.get(k), mb.get(k), out);
            } else {
                int n = Math.max(a.size(), b.size());
                for (int i = 0; i < n; i++) diff(path + "/" + i, a.get(i), b.get(i), out);
            }
        } else if (!a.equals(b)) {
            out.add(path);
        }
    }

    private static final List<String> KEYS = List.of("apiKey", "memberId", "groupId", "subtopologyId", "name",
            "partitionIndex");

    /** The key field every element of both arrays has, with unique values; null if none. */
    private static String commonKey(JsonNode a, JsonNode b) {
        for (String key : KEYS) {
            if (unique(a, key) && unique(b, key)) return key;
        }
        return null;
    }

    private static boolean unique(JsonNode array, String key) {
        Set<String> seen = new java.util.HashSet<>();
        for (JsonNode e : array) {
            if (!e.isObject() || !e.has(key) || !seen.add(e.get(key).asText())) return false;
        }
        return true;
    }

    static String pretty(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (Exception e) {
            return String.valueOf(node);
        }
    }

    static Set<String> strings(JsonNode array) {
        Set<String> out = new LinkedHashSet<>();
        if (array != null) array.forEach(n -> out.add(n.asText()));
        return out;
    }
}
