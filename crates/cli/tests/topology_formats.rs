//! Golden tests of every `--describe --topology` output format, byte for byte.

mod common;

use common::*;
use kcoord_cli::format::{format_topology, OutputFormat};
use kcoord_cli::topology::StreamsGroupTopologyDescription;
use kcoord_wire::messages::streams_group_describe_response::TopologyDescription;

fn render(format: OutputFormat, wire: &TopologyDescription) -> String {
    format.render("orders-app", &model(wire))
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
fn text_is_kafkas_formatter_output_plus_println() {
    let topology = model(&orders_wire());
    assert_eq!(
        OutputFormat::Text.render("g", &topology),
        format_topology(&topology) + "\n"
    );
    // Nothing to show still prints the header (and the println).
    assert_eq!(
        OutputFormat::Text.render("g", &StreamsGroupTopologyDescription::default()),
        "Topologies:\n\n"
    );
}

#[test]
fn nodes_keep_wire_order_and_lists_are_sorted() {
    // Source first (not name order) and successors out of order on the wire.
    let wire = TopologyDescription {
        subtopologies: vec![subtopology(
            "7",
            vec![
                source("src", &["t-b", "t-a"], &["z-proc", "a-proc"]),
                processor("z-proc", &["s2", "s1"], &[]),
                processor("a-proc", &[], &["out"]),
                sink("out", None),
            ],
        )],
        ..Default::default()
    };
    let expected = "Topologies:\n   Sub-topology: 7\n    Source: src (topics: [t-a, t-b])\n      --> a-proc, z-proc\n    Processor: z-proc (stores: [s1, s2])\n      --> none\n      <-- src\n    Processor: a-proc (stores: [])\n      --> out\n      <-- src\n    Sink: out (topic: null)\n      <-- a-proc\n\n";
    assert_eq!(format_topology(&model(&wire)), expected);
}

#[test]
fn json_round_trips_to_the_model() {
    let topology = model(&complex_wire());
    let json = OutputFormat::Json.render("g", &topology);
    let back: StreamsGroupTopologyDescription =
        serde_json::from_str(&json).expect("valid JSON of the model");
    assert_eq!(back, topology);
}
