//! `--output mermaid`: the processing graph (see [`kcoord_topology::graph`]) as a Mermaid flowchart, one
//! per group, titled with the group id.
//!
//! Shapes: source `[/ \]` (trapezoid), processor `[ ]`, sink `[\ /]` (inverted trapezoid), topic
//! `([ ])` (stadium), store `[( )]` (cylinder). Each sub-topology and global store is a
//! `subgraph`.

use crate::topology::StreamsGroupTopologyDescription;
use kcoord_topology::graph::{build, GraphNode, Shape};

pub fn format_mermaid(group_id: &str, topology: &StreamsGroupTopologyDescription) -> String {
    let graph = build(topology);
    // A JSON string is a valid YAML double-quoted scalar, whatever the group id contains.
    let title = serde_json::Value::String(group_id.to_string()).to_string();
    let mut out = format!("---\ntitle: {title}\n---\nflowchart LR\n");
    for cluster in &graph.clusters {
        out.push_str(&format!(
            "  subgraph {}[\"{}\"]\n",
            cluster.id,
            escaped(&cluster.label)
        ));
        for node in &cluster.nodes {
            out.push_str(&format!("    {}\n", node_statement(node)));
        }
        out.push_str("  end\n");
    }
    for node in &graph.resources {
        out.push_str(&format!("  {}\n", node_statement(node)));
    }
    for (from, to) in &graph.edges {
        out.push_str(&format!("  {from} --> {to}\n"));
    }
    out
}

fn node_statement(node: &GraphNode) -> String {
    let (open, close) = match node.shape {
        Shape::Source => ("[/", "\\]"),
        Shape::Processor => ("[", "]"),
        Shape::Sink => ("[\\", "/]"),
        Shape::Topic => ("([", "])"),
        Shape::Store => ("[(", ")]"),
    };
    format!("{}{open}\"{}\"{close}", node.id, escaped(&node.label))
}

/// Text for a quoted Mermaid label: the characters Mermaid would read as syntax or markup
/// become its `#...;` entity codes.
fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_cannot_break_out_of_their_quotes() {
        assert_eq!(escaped(r#"a"b#c<d>"#), "a#quot;b#35;c#lt;d#gt;");
    }
}
