//! `--describe --topology` text: the rendering of Kafka's `TopologyDescriptionFormatter`
//! (tools/.../streams), which is close to, but not the same as, Kafka Streams'
//! `TopologyDescription#toString()`.
//!
//! Where the specification's example, the fact sheet and Kafka differ, Kafka wins:
//! - `Topologies:` has no trailing space; every block line starts with 3 spaces; nodes are
//!   indented by 4 spaces and their arrows by 6 (the specification's example shows 5 and 7).
//! - `Source: name` has one space after the colon (the specification's example shows two).
//! - Global stores are not under a `Global Stores:` heading: each one is a trailing block
//!   `Sub-topology: <n> for global store (will not generate tasks)`, numbered from the number of
//!   sub-topologies upwards (so with wire ids "0" and "2" the first global store is also 2).
//! - Every block, global stores included, ends with a blank line.
//! - Empty successor/predecessor lists print `none`; empty topic/store sets print `[]` (a Java
//!   `TreeSet`'s `toString()`), not `none`.
//! - Topics, stores, successors and predecessors are sorted (Java `String` order); nodes and
//!   blocks keep the wire order.
//! - A sink without a fixed topic prints `(topic: null)`.
//!
//! The returned string is what Kafka passes to `println`, so the tool adds one more `\n`.

use crate::java::{tree_set, tree_set_string};
use crate::topology::{GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology};

const BLOCK_INDENT: &str = "   ";
const NODE_INDENT: &str = "    ";
const ARROW_INDENT: &str = "\n      ";

/// The topology as Kafka's `TopologyDescriptionFormatter.format` renders it (without the
/// newline its caller's `println` appends).
pub fn format_topology(topology: &StreamsGroupTopologyDescription) -> String {
    let mut out = String::from("Topologies:\n");
    for subtopology in &topology.subtopologies {
        out.push_str(BLOCK_INDENT);
        append_subtopology(&mut out, subtopology);
    }
    for (i, global_store) in topology.global_stores.iter().enumerate() {
        out.push_str(BLOCK_INDENT);
        append_global_store(&mut out, global_store, topology.subtopologies.len() + i);
    }
    out
}

fn append_subtopology(out: &mut String, subtopology: &Subtopology) {
    out.push_str("Sub-topology: ");
    out.push_str(&subtopology.id);
    out.push('\n');
    for node in &subtopology.nodes {
        out.push_str(NODE_INDENT);
        append_node(out, node);
        out.push('\n');
    }
    out.push('\n');
}

fn append_global_store(out: &mut String, global_store: &GlobalStore, id: usize) {
    out.push_str(&format!(
        "Sub-topology: {id} for global store (will not generate tasks)\n"
    ));
    for node in [&global_store.source, &global_store.processor] {
        out.push_str(NODE_INDENT);
        append_node(out, node);
        out.push('\n');
    }
    out.push('\n');
}

fn append_node(out: &mut String, node: &Node) {
    match &node.kind {
        NodeKind::Source { topics } => {
            out.push_str(&format!(
                "Source: {} (topics: {})",
                node.name,
                tree_set_string(topics)
            ));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("--> {}", node_names(node.successors.iter())));
        }
        NodeKind::Processor { stores } => {
            out.push_str(&format!(
                "Processor: {} (stores: {})",
                node.name,
                tree_set_string(stores)
            ));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("--> {}", node_names(node.successors.iter())));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("<-- {}", node_names(node.predecessors.iter())));
        }
        NodeKind::Sink { topic } => {
            // Java's `Optional.orElse(null)` appended to a StringBuilder prints "null".
            out.push_str(&format!(
                "Sink: {} (topic: {})",
                node.name,
                topic.as_deref().unwrap_or("null")
            ));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("<-- {}", node_names(node.predecessors.iter())));
        }
    }
}

/// Sorted names joined with ", ", or `none`.
fn node_names<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let sorted = tree_set(names);
    if sorted.is_empty() {
        "none".to_string()
    } else {
        sorted.join(", ")
    }
}
