//! A stored description as a file: JSON, one per (group, TopologyDescriptionId), named by the
//! id and a hash of the group id, so any group id (any length, any bytes) makes a safe name.
use kcoord_plugin_api::{
    GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology, Uuid,
};
use serde::{Deserialize, Serialize};

/// Bumped when the layout changes; a file of another format is skipped at load.
pub const FORMAT: u32 = 1;

pub const SUFFIX: &str = ".json";
pub const TEMP_SUFFIX: &str = ".json.tmp";

/// The file name of `(group_id, id)`, without a directory.
pub fn file_name(group_id: &str, id: Uuid) -> String {
    // FNV-1a: stable across builds and machines, unlike the standard library's hasher.
    let hash = group_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{id}-{hash:016x}{SUFFIX}")
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredFile {
    pub format: u32,
    pub group_id: String,
    pub id: Uuid,
    /// When this plugin stored it (ms since the Unix epoch); orders a group's history.
    pub stored_ms: u64,
    pub description: Description,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    subtopologies: Vec<Sub>,
    global_stores: Vec<Global>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Sub {
    id: String,
    nodes: Vec<FileNode>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Global {
    source: FileNode,
    processor: FileNode,
}

#[derive(Debug, Serialize, Deserialize)]
struct FileNode {
    name: String,
    #[serde(flatten)]
    kind: Kind,
    successors: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Kind {
    Source { topics: Vec<String> },
    Processor { stores: Vec<String> },
    Sink { topic: Option<String> },
}

impl From<&Node> for FileNode {
    fn from(n: &Node) -> Self {
        let kind = match &n.kind {
            NodeKind::Source { topics } => Kind::Source {
                topics: topics.clone(),
            },
            NodeKind::Processor { stores } => Kind::Processor {
                stores: stores.clone(),
            },
            NodeKind::Sink { topic } => Kind::Sink {
                topic: topic.clone(),
            },
        };
        FileNode {
            name: n.name.clone(),
            kind,
            successors: n.successors.clone(),
        }
    }
}

impl From<FileNode> for Node {
    fn from(n: FileNode) -> Self {
        let kind = match n.kind {
            Kind::Source { topics } => NodeKind::Source { topics },
            Kind::Processor { stores } => NodeKind::Processor { stores },
            Kind::Sink { topic } => NodeKind::Sink { topic },
        };
        Node {
            name: n.name,
            kind,
            successors: n.successors,
        }
    }
}

impl From<&StreamsGroupTopologyDescription> for Description {
    fn from(d: &StreamsGroupTopologyDescription) -> Self {
        Description {
            subtopologies: d
                .subtopologies
                .iter()
                .map(|s| Sub {
                    id: s.id.clone(),
                    nodes: s.nodes.iter().map(FileNode::from).collect(),
                })
                .collect(),
            global_stores: d
                .global_stores
                .iter()
                .map(|g| Global {
                    source: (&g.source).into(),
                    processor: (&g.processor).into(),
                })
                .collect(),
        }
    }
}

impl From<Description> for StreamsGroupTopologyDescription {
    fn from(d: Description) -> Self {
        StreamsGroupTopologyDescription {
            subtopologies: d
                .subtopologies
                .into_iter()
                .map(|s| Subtopology {
                    id: s.id,
                    nodes: s.nodes.into_iter().map(Node::from).collect(),
                })
                .collect(),
            global_stores: d
                .global_stores
                .into_iter()
                .map(|g| GlobalStore {
                    source: g.source.into(),
                    processor: g.processor.into(),
                })
                .collect(),
        }
    }
}
