//! The reader's model: Kafka's Admin `StreamsGroupTopologyDescription`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// A streams group's processing topology as its members described it.
///
/// Serializes (for tools' JSON output) as `{"subtopologies": [{"id", "nodes": [{"name",
/// "type": "source"|"processor"|"sink", "topics"|"stores"|"topic", "successors",
/// "predecessors"}]}], "globalStores": [{"source", "processor"}]}`, keys in that order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamsGroupTopologyDescription {
    /// In wire order (Kafka Streams sends them by numeric id).
    pub subtopologies: Vec<Subtopology>,
    /// In wire order.
    pub global_stores: Vec<GlobalStore>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subtopology {
    /// The decimal id Kafka Streams gives the sub-topology, kept as the string the wire carries.
    pub id: String,
    /// In wire order (Kafka Streams sends them sorted by name).
    pub nodes: Vec<Node>,
}

/// A global state store: a source reading the store's topic and the processor updating it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalStore {
    pub source: Node,
    pub processor: Node,
}

/// One processor node. Sets are ordered so every rendering of the model is deterministic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    #[serde(flatten)]
    pub kind: NodeKind,
    pub successors: BTreeSet<String>,
    /// Rebuilt from the successors of the other nodes of the same sub-topology or global store.
    pub predecessors: BTreeSet<String>,
}

/// What a node does; Kafka's `Source`, `Processor` and `Sink` subclasses of `Node`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum NodeKind {
    Source {
        topics: BTreeSet<String>,
    },
    Processor {
        stores: BTreeSet<String>,
    },
    /// `topic` is `None` for a sink whose topic is chosen per record (a `TopicNameExtractor`).
    Sink {
        topic: Option<String>,
    },
}

impl Node {
    pub fn is_source(&self) -> bool {
        matches!(self.kind, NodeKind::Source { .. })
    }

    pub fn is_processor(&self) -> bool {
        matches!(self.kind, NodeKind::Processor { .. })
    }
}
