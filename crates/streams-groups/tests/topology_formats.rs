//! Golden tests of every `--describe --topology` output format, byte for byte.

mod common;

use common::*;
use kcoord_streams_groups::format::{format_topology, OutputFormat};
use kcoord_streams_groups::topology::StreamsGroupTopologyDescription;
use kcoord_wire::messages::streams_group_describe_response::TopologyDescription;

fn render(format: OutputFormat, wire: &TopologyDescription) -> String {
    format.render("orders-app", &model(wire)).expect("rendered")
}

#[test]
fn orders_example_in_every_format() {
    let wire = orders_wire();
    assert_golden("orders.topology.txt", &render(OutputFormat::Text, &wire));
    assert_golden("orders.topology.json", &render(OutputFormat::Json, &wire));
    assert_golden("orders.topology.dot", &render(OutputFormat::Dot, &wire));
    assert_golden(
        "orders.topology.mermaid",
        &render(OutputFormat::Mermaid, &wire),
    );
    assert_golden("orders.topology.svg", &render(OutputFormat::Svg, &wire));
}

#[test]
fn subtopologies_and_global_stores_in_every_format() {
    let wire = complex_wire();
    assert_golden("complex.topology.txt", &render(OutputFormat::Text, &wire));
    assert_golden("complex.topology.json", &render(OutputFormat::Json, &wire));
    assert_golden("complex.topology.dot", &render(OutputFormat::Dot, &wire));
    assert_golden(
        "complex.topology.mermaid",
        &render(OutputFormat::Mermaid, &wire),
    );
    assert_golden("complex.topology.svg", &render(OutputFormat::Svg, &wire));
}

/// Names with characters DOT and Mermaid give meaning to stay inside their labels.
#[test]
fn odd_names_are_escaped_in_graph_formats() {
    let wire = TopologyDescription {
        subtopologies: vec![subtopology(
            "0",
            vec![
                source("src \"1\"", &["in#1", "a\\b"], &["proc <x>"]),
                processor("proc <x>", &["st\u{f6}re end"], &["end"]),
                sink("end", Some("out\nline")),
            ],
        )],
        ..Default::default()
    };
    assert_golden("odd-names.topology.dot", &render(OutputFormat::Dot, &wire));
    assert_golden(
        "odd-names.topology.mermaid",
        &render(OutputFormat::Mermaid, &wire),
    );
}

#[test]
fn text_is_the_formatted_topology_plus_println() {
    let topology = model(&orders_wire());
    assert_eq!(
        OutputFormat::Text.render("g", &topology).unwrap(),
        format_topology(&topology) + "\n"
    );
    // Nothing to show still prints the header (and the println).
    assert_eq!(
        OutputFormat::Text
            .render("g", &StreamsGroupTopologyDescription::default())
            .unwrap(),
        "Topologies:\n\n"
    );
}

/// `Topology#describe()` order, rebuilt: nodes (and arrow lists) by the size of the sub-tree
/// below them, largest first, then by name; the wire's order (sorted by name) does not count.
#[test]
fn nodes_are_ordered_by_subtree_size_then_name_as_kafka_streams_prints_them() {
    let wire = TopologyDescription {
        subtopologies: vec![subtopology(
            "7",
            vec![
                processor("a-proc", &[], &["out"]),
                sink("out", None),
                source("src", &["t-b", "t-a"], &["z-proc", "a-proc"]),
                processor("z-proc", &["s2", "s1"], &[]),
            ],
        )],
        ..Default::default()
    };
    // Sizes: src 4 (itself, a-proc's 2, z-proc's 1), a-proc 2, out 1, z-proc 1.
    let expected = "Topologies:\n   Sub-topology: 7\n    Source: src (topics: [t-a, t-b])\n      --> a-proc, z-proc\n    Processor: a-proc (stores: [])\n      --> out\n      <-- src\n    Sink: out (topic: null)\n      <-- a-proc\n    Processor: z-proc (stores: [s1, s2])\n      --> none\n      <-- src\n\n";
    assert_eq!(format_topology(&model(&wire)), expected);
}

/// Global stores take the ids no sub-topology has, as Kafka Streams numbers and prints them:
/// sub-topologies 0 and 2 leave 1 for the first global store, the second gets 3.
#[test]
fn global_stores_fill_the_gaps_between_subtopology_ids() {
    let block = |id: &str, topic: &str| {
        subtopology(
            id,
            vec![
                source(&format!("src-{id}"), &[topic], &[&format!("sink-{id}")]),
                sink(&format!("sink-{id}"), Some("out")),
            ],
        )
    };
    let wire = TopologyDescription {
        subtopologies: vec![block("0", "a"), block("2", "b")],
        global_stores: vec![
            global_store(
                source("g1-src", &["g1"], &["g1-proc"]),
                processor("g1-proc", &["g1-store"], &[]),
            ),
            global_store(
                source("g2-src", &["g2"], &["g2-proc"]),
                processor("g2-proc", &["g2-store"], &[]),
            ),
        ],
        ..Default::default()
    };
    let blocks: Vec<String> = format_topology(&model(&wire))
        .lines()
        .filter(|line| line.contains("Sub-topology"))
        .map(|line| line.trim().to_string())
        .collect();
    assert_eq!(
        blocks,
        [
            "Sub-topology: 0",
            "Sub-topology: 1 for global store (will not generate tasks)",
            "Sub-topology: 2",
            "Sub-topology: 3 for global store (will not generate tasks)",
        ]
    );
}

#[test]
fn json_round_trips_to_the_model() {
    let topology = model(&complex_wire());
    let json = OutputFormat::Json.render("g", &topology).unwrap();
    let back: StreamsGroupTopologyDescription =
        serde_json::from_str(&json).expect("valid JSON of the model");
    assert_eq!(back, topology);
}
