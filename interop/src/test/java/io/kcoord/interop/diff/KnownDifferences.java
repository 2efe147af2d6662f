package io.kcoord.interop.diff;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Every difference between kcoord's and Kafka 4.4's answers that the suite accepts, in one
 * place. An entry names the scenario and step (regular expressions, matched whole), the JSON
 * pointer path(s) that differ (a regular expression) and why, in one sentence: "by design:"
 * for a deliberate difference, "kcoord bug:" for one to fix (then delete the entry).
 */
final class KnownDifferences {
    record Entry(Pattern scenario, Pattern step, Pattern path, String reason) {
        boolean matches(String sc, String st, String p) {
            return scenario.matcher(sc).matches() && step.matcher(st).matches() && path.matcher(p).matches();
        }
    }

    static final List<Entry> ALL = new ArrayList<>();

    private static void d(String scenario, String step, String path, String reason) {
        ALL.add(new Entry(Pattern.compile(scenario), Pattern.compile(step), Pattern.compile(path), reason));
    }

    static {
    }

    /**
     * kcoord bug: Kafka 4.4 creates a streams group at group epoch 1 (KAFKA-20268, "Initialize
     * group epochs to 1 for assignment offload"), so its first join bumps it to 2; kcoord starts
     * at 0. Every positive group, assignment and member epoch of kcoord is therefore one lower
     * than Kafka's. While this holds, kcoord's positive epochs are compared plus one (0 and the
     * negative sentinels as they are), so the rest of each transcript is still compared. Set to
     * false once kcoord starts groups at epoch 1.
     */
    static final boolean KCOORD_EPOCHS_ONE_LOWER = true;

    static final java.util.Set<String> EPOCH_FIELDS = java.util.Set.of("memberEpoch", "groupEpoch", "assignmentEpoch");

    /** kcoord's JSON as compared (see {@link #KCOORD_EPOCHS_ONE_LOWER}). */
    static com.fasterxml.jackson.databind.JsonNode adjustKcoord(com.fasterxml.jackson.databind.JsonNode json) {
        if (!KCOORD_EPOCHS_ONE_LOWER || json == null) return json;
        com.fasterxml.jackson.databind.JsonNode copy = json.deepCopy();
        bump(copy);
        return copy;
    }

    private static void bump(com.fasterxml.jackson.databind.JsonNode node) {
        if (node instanceof com.fasterxml.jackson.databind.node.ObjectNode obj) {
            List<String> names = new ArrayList<>();
            obj.fieldNames().forEachRemaining(names::add);
            for (String n : names) {
                com.fasterxml.jackson.databind.JsonNode v = obj.get(n);
                if (EPOCH_FIELDS.contains(n) && v.isInt() && v.asInt() > 0) obj.put(n, v.asInt() + 1);
                else bump(v);
            }
        } else if (node != null && node.isArray()) {
            node.forEach(KnownDifferences::bump);
        }
    }

    private KnownDifferences() {}
}
