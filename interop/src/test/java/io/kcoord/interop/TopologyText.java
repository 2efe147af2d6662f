package io.kcoord.interop;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescription;
import org.apache.kafka.streams.TopologyDescription;

/**
 * Two views of one topology made comparable: what a Kafka Streams app describes itself as, and
 * what a client reads back from the coordinator.
 */
public final class TopologyText {
    private TopologyText() {}

    private static final Pattern BLOCK = Pattern.compile("^ +Sub-topology: ", Pattern.MULTILINE);
    private static final Pattern SET = Pattern.compile("\\((topics|stores): \\[([^\\]]*)\\]\\)");
    private static final Pattern ARROWS = Pattern.compile("^( +(?:-->|<--) )(.*, .*)$", Pattern.MULTILINE);

    /**
     * {@code TopologyDescription#toString()} with only what the wire cannot carry normalised:
     * multi-element topic and store sets, which the app prints in hash order, are sorted; and
     * every block line is indented by three spaces, as Kafka 4.4's tool and kcoord's CLI print
     * them ({@code toString()} indents the first block by three and the others by two), and
     * blank lines are dropped (the tools end every block with one, {@code toString()} ends a
     * global store's block without it, and a tool's {@code println} adds one at the end).
     */
    public static String normalise(String text) {
        String blocks = BLOCK.matcher(text.replaceAll("\n+", "\n").stripTrailing())
                .replaceAll("   Sub-topology: ");
        Matcher sets = SET.matcher(blocks);
        StringBuilder out = new StringBuilder();
        while (sets.find()) {
            String sorted = sets.group(2).isEmpty()
                    ? ""
                    : String.join(", ", new TreeSet<>(Arrays.asList(sets.group(2).split(", "))));
            sets.appendReplacement(out,
                    Matcher.quoteReplacement("(" + sets.group(1) + ": [" + sorted + "])"));
        }
        sets.appendTail(out);
        Matcher arrows = ARROWS.matcher(out.toString());
        StringBuilder sortedArrows = new StringBuilder();
        while (arrows.find()) {
            String names = String.join(", ", new TreeSet<>(Arrays.asList(arrows.group(2).split(", "))));
            arrows.appendReplacement(sortedArrows, Matcher.quoteReplacement(arrows.group(1) + names));
        }
        arrows.appendTail(sortedArrows);
        return sortedArrows.toString();
    }

    /** Every node of the app's own description, one canonical line each, by sub-topology. */
    public static TreeMap<String, Set<String>> canonical(TopologyDescription description) {
        TreeMap<String, Set<String>> out = new TreeMap<>();
        for (TopologyDescription.Subtopology sub : description.subtopologies()) {
            Set<String> nodes = new TreeSet<>();
            for (TopologyDescription.Node node : sub.nodes()) nodes.add(line(node));
            out.put(Integer.toString(sub.id()), nodes);
        }
        for (TopologyDescription.GlobalStore store : description.globalStores()) {
            out.put("global:" + store.source().name(),
                    new TreeSet<>(List.of(line(store.source()), line(store.processor()))));
        }
        return out;
    }

    /**
     * The same lines for what a client read back from the coordinator, with {@code prefix} (the
     * application id and a dash, which {@code describe()} leaves off internal topics) removed.
     */
    public static TreeMap<String, Set<String>> canonical(
            StreamsGroupTopologyDescription description, String prefix) {
        TreeMap<String, Set<String>> out = new TreeMap<>();
        for (StreamsGroupTopologyDescription.Subtopology sub : description.subtopologies()) {
            Set<String> nodes = new TreeSet<>();
            for (StreamsGroupTopologyDescription.Node node : sub.nodes()) {
                nodes.add(line(node).replace(prefix, ""));
            }
            out.put(sub.id(), nodes);
        }
        for (StreamsGroupTopologyDescription.GlobalStore store : description.globalStores()) {
            out.put("global:" + store.source().name(), new TreeSet<>(List.of(
                    line(store.source()).replace(prefix, ""),
                    line(store.processor()).replace(prefix, ""))));
        }
        return out;
    }

    private static String line(TopologyDescription.Node node) {
        String kind;
        if (node instanceof TopologyDescription.Source source) {
            kind = "Source topics=" + sorted(source.topicSet());
        } else if (node instanceof TopologyDescription.Processor processor) {
            kind = "Processor stores=" + sorted(processor.stores());
        } else if (node instanceof TopologyDescription.Sink sink) {
            kind = "Sink topic=" + sink.topic();
        } else {
            throw new IllegalArgumentException("unknown node " + node);
        }
        return kind + " " + node.name()
                + " --> " + sorted(names(node.successors()))
                + " <-- " + sorted(names(node.predecessors()));
    }

    private static String line(StreamsGroupTopologyDescription.Node node) {
        String kind;
        if (node instanceof StreamsGroupTopologyDescription.Source source) {
            kind = "Source topics=" + sorted(source.topics());
        } else if (node instanceof StreamsGroupTopologyDescription.Processor processor) {
            kind = "Processor stores=" + sorted(processor.stores());
        } else if (node instanceof StreamsGroupTopologyDescription.Sink sink) {
            kind = "Sink topic=" + sink.topic().orElse(null);
        } else {
            throw new IllegalArgumentException("unknown node " + node);
        }
        return kind + " " + node.name()
                + " --> " + sorted(node.successors())
                + " <-- " + sorted(node.predecessors());
    }

    private static List<String> names(Set<TopologyDescription.Node> nodes) {
        return nodes.stream().map(TopologyDescription.Node::name).collect(Collectors.toList());
    }

    private static String sorted(Collection<String> values) {
        return new ArrayList<>(new TreeSet<>(values)).toString();
    }
}
