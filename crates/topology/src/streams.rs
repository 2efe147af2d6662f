//! The writer's model: Kafka Streams' `org.apache.kafka.streams.TopologyDescription`, and its
//! conversion to the wire as Kafka Streams' `TopologyDescriptionConverter` does it.
//!
//! Serialized as JSON (the format of `examples/orders.json`, read by `kcoord-streams-demo`):
//!
//! ```json
//! {
//!   "subtopologies": [
//!     { "id": 0, "nodes": [
//!       { "type": "source", "name": "KSTREAM-SOURCE-0000000000", "topics": ["orders"],
//!         "successors": ["KSTREAM-FILTER-0000000001"] },
//!       { "type": "processor", "name": "KSTREAM-FILTER-0000000001", "stores": [],
//!         "successors": ["KSTREAM-SINK-0000000002"] },
//!       { "type": "sink", "name": "KSTREAM-SINK-0000000002", "topic": "valid-orders" } ] }
//!   ],
//!   "globalStores": [
//!     { "id": 1,
//!       "source": { "type": "source", "name": "gsrc", "topics": ["products"], "successors": ["gproc"] },
//!       "processor": { "type": "processor", "name": "gproc", "stores": ["products-store"] } }
//!   ]
//! }
//! ```
//!
//! - `successors` and `stores` may be left out (empty); `globalStores` too.
//! - A sink's `topic` is `null` (or left out) for a sink that picks its topic per record.
//! - `predecessors` are accepted and ignored: the wire does not carry them, readers rebuild
//!   them from the successors.
//! - Unknown keys are errors, so that a typo does not silently drop part of the graph.

use std::collections::{BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::java::java_cmp;
use crate::wire::{
    WireGlobalStore, WireNode, WireSubtopology, WireTopology, NODE_TYPE_PROCESSOR, NODE_TYPE_SINK,
    NODE_TYPE_SOURCE,
};

/// A Kafka Streams application's topology, as `Topology#describe()` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyDescription {
    pub subtopologies: Vec<Subtopology>,
    #[serde(default)]
    pub global_stores: Vec<GlobalStore>,
}

/// A sub-topology: the nodes that run together in one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subtopology {
    pub id: i32,
    pub nodes: Vec<Node>,
}

/// A global store: a source reading the store's topic, and the processor that updates it.
/// Its id shares the numbering of the sub-topologies, as in Kafka Streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalStore {
    pub id: i32,
    pub source: Node,
    pub processor: Node,
}

/// A node with the names of its successors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "JsonNode", into = "JsonNode")]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub successors: Vec<String>,
}

/// Kafka Streams' `Source`, `Processor` and `Sink` nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    Source {
        topics: Vec<String>,
    },
    Processor {
        stores: Vec<String>,
    },
    /// `None`: the topic is chosen per record by a `TopicNameExtractor`.
    Sink {
        topic: Option<String>,
    },
}

impl Node {
    pub fn source(name: impl Into<String>, topics: &[&str], successors: &[&str]) -> Node {
        Node {
            name: name.into(),
            kind: NodeKind::Source {
                topics: strings(topics),
            },
            successors: strings(successors),
        }
    }

    pub fn processor(name: impl Into<String>, stores: &[&str], successors: &[&str]) -> Node {
        Node {
            name: name.into(),
            kind: NodeKind::Processor {
                stores: strings(stores),
            },
            successors: strings(successors),
        }
    }

    pub fn sink(name: impl Into<String>, topic: Option<&str>) -> Node {
        Node {
            name: name.into(),
            kind: NodeKind::Sink {
                topic: topic.map(str::to_string),
            },
            successors: Vec::new(),
        }
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The JSON shape of a node: internally tagged by `type`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum JsonNode {
    Source {
        name: String,
        topics: Vec<String>,
        #[serde(default)]
        successors: Vec<String>,
        #[serde(default, skip_serializing)]
        predecessors: Vec<String>,
    },
    Processor {
        name: String,
        #[serde(default)]
        stores: Vec<String>,
        #[serde(default)]
        successors: Vec<String>,
        #[serde(default, skip_serializing)]
        predecessors: Vec<String>,
    },
    Sink {
        name: String,
        #[serde(default)]
        topic: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        successors: Vec<String>,
        #[serde(default, skip_serializing)]
        predecessors: Vec<String>,
    },
}

impl From<JsonNode> for Node {
    fn from(json: JsonNode) -> Node {
        match json {
            JsonNode::Source {
                name,
                topics,
                successors,
                ..
            } => Node {
                name,
                kind: NodeKind::Source { topics },
                successors,
            },
            JsonNode::Processor {
                name,
                stores,
                successors,
                ..
            } => Node {
                name,
                kind: NodeKind::Processor { stores },
                successors,
            },
            JsonNode::Sink {
                name,
                topic,
                successors,
                ..
            } => Node {
                name,
                kind: NodeKind::Sink { topic },
                successors,
            },
        }
    }
}

impl From<Node> for JsonNode {
    fn from(node: Node) -> JsonNode {
        let (name, successors, predecessors) = (node.name, node.successors, Vec::new());
        match node.kind {
            NodeKind::Source { topics } => JsonNode::Source {
                name,
                topics,
                successors,
                predecessors,
            },
            NodeKind::Processor { stores } => JsonNode::Processor {
                name,
                stores,
                successors,
                predecessors,
            },
            NodeKind::Sink { topic } => JsonNode::Sink {
                name,
                topic,
                successors,
                predecessors,
            },
        }
    }
}

/// Why a topology description is not a graph Kafka Streams could have described.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTopologyDescription {
    #[error("the topology has no sub-topology")]
    NoSubtopology,
    #[error("sub-topology / global store id {0} is negative")]
    NegativeId(i32),
    #[error("sub-topology / global store id {0} is used twice")]
    DuplicateId(i32),
    #[error("sub-topology {0} has no node")]
    EmptySubtopology(i32),
    #[error("a node has an empty name")]
    EmptyName,
    #[error("node name {0:?} is used twice (names are unique across the topology)")]
    DuplicateNode(String),
    #[error("node {node:?} names successor {successor:?}, which is not a node of the same sub-topology or global store")]
    UnknownSuccessor { node: String, successor: String },
    #[error("source node {0:?} has no topics")]
    SourceWithoutTopics(String),
    #[error("sink node {0:?} has successors; sinks end the graph")]
    SinkWithSuccessors(String),
    #[error("global store {0} must be a source node followed by a processor node")]
    GlobalStoreShape(i32),
}

impl TopologyDescription {
    /// Checks that the description is a graph Kafka Streams could have produced.
    pub fn validate(&self) -> Result<(), InvalidTopologyDescription> {
        if self.subtopologies.is_empty() {
            return Err(InvalidTopologyDescription::NoSubtopology);
        }
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        let ids_in_order = self
            .subtopologies
            .iter()
            .map(|s| s.id)
            .chain(self.global_stores.iter().map(|g| g.id));
        for id in ids_in_order {
            if id < 0 {
                return Err(InvalidTopologyDescription::NegativeId(id));
            }
            if !ids.insert(id) {
                return Err(InvalidTopologyDescription::DuplicateId(id));
            }
        }
        for subtopology in &self.subtopologies {
            if subtopology.nodes.is_empty() {
                return Err(InvalidTopologyDescription::EmptySubtopology(subtopology.id));
            }
            check_block(&subtopology.nodes.iter().collect::<Vec<_>>(), &mut names)?;
        }
        for store in &self.global_stores {
            let shape_ok = matches!(store.source.kind, NodeKind::Source { .. })
                && matches!(store.processor.kind, NodeKind::Processor { .. })
                && store.processor.successors.is_empty()
                && store
                    .source
                    .successors
                    .iter()
                    .all(|s| *s == store.processor.name);
            if !shape_ok {
                return Err(InvalidTopologyDescription::GlobalStoreShape(store.id));
            }
            check_block(&[&store.source, &store.processor], &mut names)?;
        }
        Ok(())
    }

    /// The wire form, validated and ordered as Kafka Streams' `TopologyDescriptionConverter`
    /// orders it: sub-topologies and global stores by numeric id, nodes by name, successors,
    /// topics and stores sorted (as Java sorts strings: by UTF-16 code unit), ids as decimal
    /// strings. Kafka's converter also decorates topic names (named topologies); the
    /// simulated application has no named topologies, so names go out as they are.
    pub fn to_wire(&self) -> Result<WireTopology, InvalidTopologyDescription> {
        self.validate()?;
        let mut subtopologies: Vec<&Subtopology> = self.subtopologies.iter().collect();
        subtopologies.sort_by_key(|s| s.id);
        let mut global_stores: Vec<&GlobalStore> = self.global_stores.iter().collect();
        global_stores.sort_by_key(|g| g.id);
        Ok(WireTopology {
            subtopologies: subtopologies
                .into_iter()
                .map(|s| {
                    let mut nodes: Vec<WireNode> = s.nodes.iter().map(wire_node).collect();
                    nodes.sort_by(|a, b| java_cmp(&a.name, &b.name));
                    WireSubtopology {
                        subtopology_id: s.id.to_string(),
                        nodes,
                    }
                })
                .collect(),
            global_stores: global_stores
                .into_iter()
                .map(|g| WireGlobalStore {
                    source: wire_node(&g.source),
                    processor: wire_node(&g.processor),
                })
                .collect(),
        })
    }
}

/// Checks the nodes of one sub-topology or global store: names, successors within the block.
fn check_block(
    nodes: &[&Node],
    names: &mut HashSet<String>,
) -> Result<(), InvalidTopologyDescription> {
    let block: HashSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    for node in nodes {
        if node.name.is_empty() {
            return Err(InvalidTopologyDescription::EmptyName);
        }
        if !names.insert(node.name.clone()) {
            return Err(InvalidTopologyDescription::DuplicateNode(node.name.clone()));
        }
        if let Some(successor) = node.successors.iter().find(|s| !block.contains(s.as_str())) {
            return Err(InvalidTopologyDescription::UnknownSuccessor {
                node: node.name.clone(),
                successor: successor.clone(),
            });
        }
        match &node.kind {
            NodeKind::Source { topics } if topics.is_empty() => {
                return Err(InvalidTopologyDescription::SourceWithoutTopics(
                    node.name.clone(),
                ))
            }
            NodeKind::Sink { .. } if !node.successors.is_empty() => {
                return Err(InvalidTopologyDescription::SinkWithSuccessors(
                    node.name.clone(),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

fn wire_node(node: &Node) -> WireNode {
    let mut wire = WireNode {
        name: node.name.clone(),
        successors: java_sorted(&node.successors),
        ..Default::default()
    };
    match &node.kind {
        NodeKind::Source { topics } => {
            wire.node_type = NODE_TYPE_SOURCE;
            wire.source_topics = java_sorted(topics);
        }
        NodeKind::Processor { stores } => {
            wire.node_type = NODE_TYPE_PROCESSOR;
            wire.stores = java_sorted(stores);
        }
        NodeKind::Sink { topic } => {
            wire.node_type = NODE_TYPE_SINK;
            wire.sink_topic = topic.clone();
        }
    }
    wire
}

/// The distinct items (Kafka Streams holds them in sets) in Java's order.
fn java_sorted(items: &[String]) -> Vec<String> {
    let mut sorted: Vec<String> = items
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    sorted.sort_by(|a, b| java_cmp(a, b));
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_form_is_sorted_as_kafka_streams_sorts_it() {
        let description = TopologyDescription {
            subtopologies: vec![
                Subtopology {
                    id: 10,
                    nodes: vec![Node::source("z-src", &["t"], &[])],
                },
                Subtopology {
                    id: 2,
                    nodes: vec![
                        Node::sink("c-sink", Some("out")),
                        Node::processor("b-proc", &["s2", "s1", "s1"], &["c-sink"]),
                        Node::source("a-src", &["y", "x"], &["b-proc"]),
                    ],
                },
            ],
            global_stores: vec![
                GlobalStore {
                    id: 5,
                    source: Node::source("g5", &["gt5"], &["p5"]),
                    processor: Node::processor("p5", &["gs5"], &[]),
                },
                GlobalStore {
                    id: 3,
                    source: Node::source("g3", &["gt3"], &["p3"]),
                    processor: Node::processor("p3", &["gs3"], &[]),
                },
            ],
        };
        let wire = description.to_wire().unwrap();
        let ids: Vec<&str> = wire
            .subtopologies
            .iter()
            .map(|s| s.subtopology_id.as_str())
            .collect();
        assert_eq!(ids, ["2", "10"], "numeric order, decimal strings");
        let names: Vec<&str> = wire.subtopologies[0]
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["a-src", "b-proc", "c-sink"]);
        assert_eq!(wire.subtopologies[0].nodes[0].source_topics, ["x", "y"]);
        assert_eq!(
            wire.subtopologies[0].nodes[1].stores,
            ["s1", "s2"],
            "sorted, no repeats"
        );
        assert_eq!(
            wire.subtopologies[0].nodes[2].sink_topic.as_deref(),
            Some("out")
        );
        assert_eq!(wire.global_stores[0].source.name, "g3");
    }

    #[test]
    fn strings_sort_by_utf16_code_units_as_in_java() {
        // U+FF5E (one UTF-16 unit 0xFF5E) sorts after U+1F600 (surrogates 0xD83D...) in Java,
        // but before it in UTF-8 byte order.
        let sorted = java_sorted(&["\u{1F600}".to_string(), "\u{FF5E}".to_string()]);
        assert_eq!(sorted, ["\u{1F600}", "\u{FF5E}"]);
    }

    #[test]
    fn invalid_graphs_are_refused() {
        let base = |nodes: Vec<Node>| TopologyDescription {
            subtopologies: vec![Subtopology { id: 0, nodes }],
            global_stores: vec![],
        };
        let cases = [
            (
                TopologyDescription::default(),
                InvalidTopologyDescription::NoSubtopology,
            ),
            (
                base(vec![]),
                InvalidTopologyDescription::EmptySubtopology(0),
            ),
            (
                base(vec![Node::source("a", &[], &[])]),
                InvalidTopologyDescription::SourceWithoutTopics("a".into()),
            ),
            (
                base(vec![Node::source("a", &["t"], &["b"])]),
                InvalidTopologyDescription::UnknownSuccessor {
                    node: "a".into(),
                    successor: "b".into(),
                },
            ),
            (
                base(vec![Node::source("a", &["t"], &[]), Node::sink("a", None)]),
                InvalidTopologyDescription::DuplicateNode("a".into()),
            ),
            (
                base(vec![
                    Node {
                        successors: vec!["a".into()],
                        ..Node::sink("b", None)
                    },
                    Node::source("a", &["t"], &[]),
                ]),
                InvalidTopologyDescription::SinkWithSuccessors("b".into()),
            ),
        ];
        for (description, expected) in cases {
            assert_eq!(description.validate(), Err(expected));
        }
        let mut twice = base(vec![Node::source("a", &["t"], &[])]);
        twice.subtopologies.push(Subtopology {
            id: 0,
            nodes: vec![Node::source("b", &["t"], &[])],
        });
        assert_eq!(
            twice.validate(),
            Err(InvalidTopologyDescription::DuplicateId(0))
        );
        let mut bad_store = base(vec![Node::source("a", &["t"], &[])]);
        bad_store.global_stores.push(GlobalStore {
            id: 1,
            source: Node::processor("g", &[], &[]),
            processor: Node::processor("p", &[], &[]),
        });
        assert_eq!(
            bad_store.validate(),
            Err(InvalidTopologyDescription::GlobalStoreShape(1))
        );
    }

    #[test]
    fn json_round_trips_and_refuses_unknown_keys() {
        let json = r#"{"subtopologies": [{"id": 0, "nodes": [
            {"type": "source", "name": "s", "topics": ["in"], "successors": ["k"], "predecessors": []},
            {"type": "sink", "name": "k", "topic": null}]}]}"#;
        let description: TopologyDescription = serde_json::from_str(json).unwrap();
        assert_eq!(description.subtopologies[0].nodes[1], Node::sink("k", None));
        let again: TopologyDescription =
            serde_json::from_str(&serde_json::to_string(&description).unwrap()).unwrap();
        assert_eq!(again, description);
        let typo = r#"{"subtopologies": [{"id": 0, "nodes": [{"type": "source", "name": "s", "topic": ["in"]}]}]}"#;
        let err = serde_json::from_str::<TopologyDescription>(typo)
            .unwrap_err()
            .to_string();
        assert!(err.contains("topic"), "{err}");
    }
}
