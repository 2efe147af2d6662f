//! The processing graph behind `kafka-streams-groups --output dot|mermaid|svg` and the daemon's
//! topology drawings: one cluster per
//! sub-topology and per global store holding its processor nodes, topics and stores as nodes of
//! their own outside the clusters (a repartition topic links two sub-topologies; a store is
//! drawn once however many processors use it), and the edges topic → source,
//! node → successor, processor → store and sink → topic.
//!
//! Ids are synthetic (`s<block>_n<index>`, `t<i>`, `st<i>`) so that any name, however odd, can
//! only ever appear inside an escaped label. Everything is ordered deterministically: blocks
//! and nodes in wire order, topics and stores and edge targets sorted (Java `String` order).

use std::collections::BTreeMap;

use crate::java::{java_cmp, tree_set};
use crate::{Node, NodeKind, StreamsGroupTopologyDescription};

/// What a graph node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    Source,
    Processor,
    Sink,
    Topic,
    Store,
}

impl Shape {
    /// The lower-case name renderings use (`source`, `processor`, `sink`, `topic`, `store`).
    pub fn name(self) -> &'static str {
        match self {
            Shape::Source => "source",
            Shape::Processor => "processor",
            Shape::Sink => "sink",
            Shape::Topic => "topic",
            Shape::Store => "store",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphNode {
    /// Synthetic, unique in the graph, made of ASCII letters, digits and `_` only.
    pub id: String,
    /// The exact name of the node, topic or store.
    pub label: String,
    pub shape: Shape,
}

/// Whether a cluster is a sub-topology or a global store's source and processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterKind {
    Subtopology,
    GlobalStore,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// Synthetic (`s<block>`), unique in the graph.
    pub id: String,
    pub kind: ClusterKind,
    /// `Sub-topology: <id>`, or `Sub-topology: <n> for global store` (Kafka 4.4's tool numbers
    /// global stores after the sub-topologies).
    pub label: String,
    pub nodes: Vec<GraphNode>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    pub clusters: Vec<Cluster>,
    /// Topics, then stores, each sorted by name.
    pub resources: Vec<GraphNode>,
    /// `(from id, to id)`.
    pub edges: Vec<(String, String)>,
}

/// Builds the graph. (Every topic and store name is collected before the edges are drawn, so
/// the id look-ups below always succeed.) Successor names that are not nodes of the same block
/// are left out: there is no node to draw the edge to.
pub fn build(topology: &StreamsGroupTopologyDescription) -> Graph {
    let topics = resource_ids(topology, "t", |node| match &node.kind {
        NodeKind::Source { topics } => topics.iter().collect(),
        NodeKind::Sink { topic } => topic.iter().collect(),
        NodeKind::Processor { .. } => Vec::new(),
    });
    let stores = resource_ids(topology, "st", |node| match &node.kind {
        NodeKind::Processor { stores } => stores.iter().collect(),
        _ => Vec::new(),
    });

    let mut graph = Graph::default();
    for (block, (kind, label, nodes)) in blocks(topology).enumerate() {
        let ids: BTreeMap<&str, String> = nodes
            .iter()
            .enumerate()
            .rev()
            .map(|(i, n)| (n.name.as_str(), format!("s{block}_n{i}")))
            .collect();
        let mut cluster = Cluster {
            id: format!("s{block}"),
            kind,
            label,
            nodes: Vec::new(),
        };
        for (i, node) in nodes.iter().enumerate() {
            let id = format!("s{block}_n{i}");
            let shape = resource_edges(node, &id, &topics, &stores, &mut graph.edges);
            let successors = tree_set(&node.successors);
            graph.edges.extend(
                successors
                    .into_iter()
                    .filter_map(|s| ids.get(s))
                    .map(|to| (id.clone(), to.clone())),
            );
            cluster.nodes.push(GraphNode {
                id,
                label: node.name.clone(),
                shape,
            });
        }
        graph.clusters.push(cluster);
    }
    graph.resources.extend(sorted_nodes(&topics, Shape::Topic));
    graph.resources.extend(sorted_nodes(&stores, Shape::Store));
    graph
}

/// The blocks to draw as clusters: the sub-topologies, then one per global store (numbered
/// after the sub-topologies), each with its kind, label and nodes.
fn blocks(
    topology: &StreamsGroupTopologyDescription,
) -> impl Iterator<Item = (ClusterKind, String, Vec<&Node>)> {
    topology
        .subtopologies
        .iter()
        .map(|s| {
            (
                ClusterKind::Subtopology,
                format!("Sub-topology: {}", s.id),
                s.nodes.iter().collect::<Vec<_>>(),
            )
        })
        .chain(topology.global_stores.iter().enumerate().map(|(i, g)| {
            let id = topology.subtopologies.len() + i;
            (
                ClusterKind::GlobalStore,
                format!("Sub-topology: {id} for global store"),
                vec![&g.source, &g.processor],
            )
        }))
}

/// The shape of `node` (whose id is `id`), after adding its edges to the topics it reads or
/// writes and the stores it uses.
fn resource_edges(
    node: &Node,
    id: &str,
    topics: &BTreeMap<&str, String>,
    stores: &BTreeMap<&str, String>,
    edges: &mut Vec<(String, String)>,
) -> Shape {
    match &node.kind {
        NodeKind::Source { topics: names } => {
            edges.extend(
                tree_set(names)
                    .into_iter()
                    .filter_map(|t| topics.get(t))
                    .map(|t| (t.clone(), id.to_owned())),
            );
            Shape::Source
        }
        NodeKind::Processor { stores: names } => {
            edges.extend(
                tree_set(names)
                    .into_iter()
                    .filter_map(|s| stores.get(s))
                    .map(|s| (id.to_owned(), s.clone())),
            );
            Shape::Processor
        }
        NodeKind::Sink { topic } => {
            edges.extend(
                topic
                    .iter()
                    .filter_map(|t| topics.get(t.as_str()))
                    .map(|t| (id.to_owned(), t.clone())),
            );
            Shape::Sink
        }
    }
}

/// Every distinct name `names_of` yields over all nodes, with an id `<prefix><rank>` by sorted
/// rank.
fn resource_ids<'a>(
    topology: &'a StreamsGroupTopologyDescription,
    prefix: &str,
    names_of: impl Fn(&'a Node) -> Vec<&'a String>,
) -> BTreeMap<&'a str, String> {
    let nodes = topology
        .subtopologies
        .iter()
        .flat_map(|s| s.nodes.iter())
        .chain(
            topology
                .global_stores
                .iter()
                .flat_map(|g| [&g.source, &g.processor]),
        );
    let names = tree_set(nodes.flat_map(names_of));
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, format!("{prefix}{i}")))
        .collect()
}

fn sorted_nodes(ids: &BTreeMap<&str, String>, shape: Shape) -> Vec<GraphNode> {
    let mut nodes: Vec<GraphNode> = ids
        .iter()
        .map(|(name, id)| GraphNode {
            id: id.clone(),
            label: name.to_string(),
            shape,
        })
        .collect();
    nodes.sort_by(|a, b| java_cmp(&a.label, &b.label));
    nodes
}
