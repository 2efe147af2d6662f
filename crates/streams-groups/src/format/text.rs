//! `--describe --topology` text: what the application's own `Topology#describe().toString()`
//! prints (Kafka Streams' `InternalTopologyBuilder.TopologyDescription`), rebuilt from the wire,
//! in the whitespace of Kafka 4.4's tool (`TopologyDescriptionFormatter`).
//!
//! The wire carries a sub-topology's nodes sorted by name and no global store ids, so the order
//! Kafka Streams prints is rebuilt here:
//! - Blocks are printed by id. A global store shares the sub-topologies' numbering: the wire's
//!   global stores (in id order) take the ids no sub-topology has, smallest first, as Kafka
//!   Streams interleaves them. Kafka 4.4's tool instead numbers them after the sub-topologies.
//! - A sub-topology's nodes, and every successor and predecessor list, are ordered by the size
//!   of the sub-tree below each node (the node plus, for each successor, that successor's size:
//!   paths, as Kafka Streams counts them), largest first, then by name (Java `String` order).
//!   Kafka 4.4's tool keeps the wire order and sorts the lists by name.
//!
//! What is not rebuilt, because the wire does not carry it:
//! - Multi-element topic and store sets: the application prints them in hash order, here they
//!   are sorted (a Java `TreeSet`'s `toString()`, `[]` when empty).
//! - A sink that picks its topic per record prints `(topic: null)`, not its extractor's class.
//! - Internal topics carry the application id prefix the application pushed them with.
//!
//! Whitespace is Kafka 4.4's tool's: `Topologies:` alone on its line and every block line
//! indented by 3 spaces (`toString()` indents the blocks after the first by 2); nodes by 4 and
//! arrows by 6; every block ends with a blank line; empty successor or predecessor lists print
//! `none`.
//!
//! The returned string is what Kafka passes to `println`, so the tool adds one more `\n`.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use crate::java::{java_cmp, tree_set_string};
use crate::topology::{GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology};

const BLOCK_INDENT: &str = "   ";
const NODE_INDENT: &str = "    ";
const ARROW_INDENT: &str = "\n      ";

/// The topology as the application's `Topology#describe()` prints it (without the newline the
/// tool's `println` appends).
pub fn format_topology(topology: &StreamsGroupTopologyDescription) -> String {
    let mut out = String::from("Topologies:\n");
    for block in blocks_in_id_order(topology) {
        out.push_str(BLOCK_INDENT);
        match block {
            Block::Subtopology(subtopology) => append_subtopology(&mut out, subtopology),
            Block::GlobalStore(id, store) => append_global_store(&mut out, store, id),
        }
    }
    out
}

enum Block<'a> {
    Subtopology(&'a Subtopology),
    GlobalStore(u64, &'a GlobalStore),
}

/// Sub-topologies by numeric id with the global stores in the ids between them, as Kafka
/// Streams numbers and prints them. Ids that are not numbers (never sent by Kafka Streams) keep
/// the wire order, and the global stores follow them.
fn blocks_in_id_order(topology: &StreamsGroupTopologyDescription) -> Vec<Block<'_>> {
    let ids: Option<Vec<u64>> = topology
        .subtopologies
        .iter()
        .map(|s| s.id.parse::<u64>().ok())
        .collect();
    let Some(ids) = ids else {
        let mut blocks: Vec<Block> = topology
            .subtopologies
            .iter()
            .map(Block::Subtopology)
            .collect();
        let first_free = topology.subtopologies.len() as u64;
        blocks.extend(
            (first_free..)
                .zip(&topology.global_stores)
                .map(|(id, store)| Block::GlobalStore(id, store)),
        );
        return blocks;
    };
    let taken: BTreeSet<u64> = ids.iter().copied().collect();
    let free_ids = (0..).filter(|id| !taken.contains(id));
    let mut numbered: Vec<(u64, Block)> = ids
        .into_iter()
        .zip(topology.subtopologies.iter().map(Block::Subtopology))
        .collect();
    numbered.extend(
        free_ids
            .zip(&topology.global_stores)
            .map(|(id, store)| (id, Block::GlobalStore(id, store))),
    );
    // Stable: sub-topologies with the same id (not sent by Kafka Streams) keep the wire order.
    numbered.sort_by_key(|(id, _)| *id);
    numbered.into_iter().map(|(_, block)| block).collect()
}

fn append_subtopology(out: &mut String, subtopology: &Subtopology) {
    out.push_str("Sub-topology: ");
    out.push_str(&subtopology.id);
    out.push('\n');
    let mut nodes: Vec<&Node> = subtopology.nodes.iter().collect();
    let order = NodeOrder::of(&nodes);
    nodes.sort_by(|a, b| order.cmp(&a.name, &b.name));
    for node in nodes {
        out.push_str(NODE_INDENT);
        append_node(out, node, &order);
        out.push('\n');
    }
    out.push('\n');
}

fn append_global_store(out: &mut String, global_store: &GlobalStore, id: u64) {
    out.push_str(&format!(
        "Sub-topology: {id} for global store (will not generate tasks)\n"
    ));
    let nodes = [&global_store.source, &global_store.processor];
    let order = NodeOrder::of(&nodes);
    for node in nodes {
        out.push_str(NODE_INDENT);
        append_node(out, node, &order);
        out.push('\n');
    }
    out.push('\n');
}

/// Kafka Streams' `NodeComparator`: the size of the sub-tree below a node, largest first, then
/// the name. A name the block does not hold (a dangling edge) counts as a leaf.
struct NodeOrder {
    sizes: HashMap<String, u64>,
}

impl NodeOrder {
    fn of(nodes: &[&Node]) -> NodeOrder {
        let by_name: HashMap<&str, &Node> = nodes.iter().map(|n| (n.name.as_str(), *n)).collect();
        let mut sizes = HashMap::new();
        for node in nodes {
            subtree_size(&node.name, &by_name, &mut sizes, &mut BTreeSet::new());
        }
        NodeOrder { sizes }
    }

    fn size(&self, name: &str) -> u64 {
        self.sizes.get(name).copied().unwrap_or(1)
    }

    fn cmp(&self, a: &str, b: &str) -> Ordering {
        self.size(b).cmp(&self.size(a)).then_with(|| java_cmp(a, b))
    }

    /// Names in this order joined with ", ", or `none`.
    fn names<'a>(&self, names: impl Iterator<Item = &'a String>) -> String {
        let mut sorted: Vec<&str> = names.map(String::as_str).collect();
        sorted.sort_by(|a, b| self.cmp(a, b));
        sorted.dedup();
        if sorted.is_empty() {
            "none".to_string()
        } else {
            sorted.join(", ")
        }
    }
}

/// 1 + the sizes of the successors, memoised. A cycle (which Kafka Streams cannot build, but a
/// hand-made description can hold) contributes nothing past the node that closes it.
fn subtree_size(
    name: &str,
    by_name: &HashMap<&str, &Node>,
    sizes: &mut HashMap<String, u64>,
    on_path: &mut BTreeSet<String>,
) -> u64 {
    if let Some(size) = sizes.get(name) {
        return *size;
    }
    let Some(node) = by_name.get(name) else {
        return 1;
    };
    if !on_path.insert(name.to_string()) {
        return 0;
    }
    let mut size: u64 = 1;
    for successor in &node.successors {
        size = size.saturating_add(subtree_size(successor, by_name, sizes, on_path));
    }
    on_path.remove(name);
    sizes.insert(name.to_string(), size);
    size
}

fn append_node(out: &mut String, node: &Node, order: &NodeOrder) {
    match &node.kind {
        NodeKind::Source { topics } => {
            out.push_str(&format!(
                "Source: {} (topics: {})",
                node.name,
                tree_set_string(topics)
            ));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("--> {}", order.names(node.successors.iter())));
        }
        NodeKind::Processor { stores } => {
            out.push_str(&format!(
                "Processor: {} (stores: {})",
                node.name,
                tree_set_string(stores)
            ));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("--> {}", order.names(node.successors.iter())));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("<-- {}", order.names(node.predecessors.iter())));
        }
        NodeKind::Sink { topic } => {
            // Java's `Optional.orElse(null)` appended to a StringBuilder prints "null".
            out.push_str(&format!(
                "Sink: {} (topic: {})",
                node.name,
                topic.as_deref().unwrap_or("null")
            ));
            out.push_str(ARROW_INDENT);
            out.push_str(&format!("<-- {}", order.names(node.predecessors.iter())));
        }
    }
}
