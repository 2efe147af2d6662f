//! `--output dot`: the processing graph (see [`kcoord_topology::graph`]) in Graphviz DOT, one `digraph`
//! per group, ready for `dot -Tsvg`.
//!
//! Shapes: source `invhouse`, processor `box`, sink `house`, topic `ellipse`, store `cylinder`.
//! Each sub-topology and global store is a `cluster_` subgraph.

use crate::topology::StreamsGroupTopologyDescription;
use kcoord_topology::graph::{build, GraphNode, Shape};

pub fn format_dot(group_id: &str, topology: &StreamsGroupTopologyDescription) -> String {
    let graph = build(topology);
    let mut out = format!("digraph {} {{\n", quoted(group_id));
    out.push_str("  rankdir=LR;\n");
    out.push_str("  graph [fontname=\"Helvetica\"];\n");
    out.push_str("  node [fontname=\"Helvetica\"];\n");
    for cluster in &graph.clusters {
        out.push_str(&format!(
            "  subgraph {} {{\n",
            quoted(&format!("cluster_{}", cluster.id))
        ));
        out.push_str(&format!("    label={};\n", quoted(&cluster.label)));
        for node in &cluster.nodes {
            out.push_str(&format!("    {}\n", node_statement(node)));
        }
        out.push_str("  }\n");
    }
    for node in &graph.resources {
        out.push_str(&format!("  {}\n", node_statement(node)));
    }
    for (from, to) in &graph.edges {
        out.push_str(&format!("  {from} -> {to};\n"));
    }
    out.push_str("}\n");
    out
}

fn node_statement(node: &GraphNode) -> String {
    let shape = match node.shape {
        Shape::Source => "invhouse",
        Shape::Processor => "box",
        Shape::Sink => "house",
        Shape::Topic => "ellipse",
        Shape::Store => "cylinder",
    };
    format!(
        "{} [label={}, shape={shape}];",
        node.id,
        quoted(&node.label)
    )
}

/// A DOT double-quoted string. Backslashes are doubled too, because Graphviz reads `\n`, `\l`
/// and friends inside labels as escapes.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_dot_would_interpret() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("x\ny"), r#""x\ny""#);
    }
}
