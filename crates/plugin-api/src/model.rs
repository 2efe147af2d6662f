//! The topology description a plugin stores: it mirrors Kafka Streams' `TopologyDescription`
//! without predecessors (readers rebuild those by inverting successors).
//!
//! Lists keep the order they arrived in, so a description read back is the one pushed; the
//! specification calls them sets, and a well-behaved client sends each name once.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsGroupTopologyDescription {
    pub subtopologies: Vec<Subtopology>,
    pub global_stores: Vec<GlobalStore>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subtopology {
    pub id: String,
    pub nodes: Vec<Node>,
}

/// What a node is, with what only that kind has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// Reads `topics`.
    Source { topics: Vec<String> },
    /// Uses `stores`.
    Processor { stores: Vec<String> },
    /// Writes `topic`; `None` for a dynamically routed sink.
    Sink { topic: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub successors: Vec<String>,
}

impl Node {
    /// The wire code of the kind: 1 = SOURCE, 2 = PROCESSOR, 3 = SINK.
    pub fn node_type(&self) -> i8 {
        match self.kind {
            NodeKind::Source { .. } => 1,
            NodeKind::Processor { .. } => 2,
            NodeKind::Sink { .. } => 3,
        }
    }
}

/// A global store: the source that feeds it and the processor that maintains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalStore {
    pub source: Node,
    pub processor: Node,
}

fn uvarint_size(v: usize) -> usize {
    let mut n = 1;
    let mut v = v >> 7;
    while v > 0 {
        n += 1;
        v >>= 7;
    }
    n
}

fn string_size(s: &str) -> usize {
    uvarint_size(s.len() + 1) + s.len()
}

fn strings_size(list: &[String]) -> usize {
    uvarint_size(list.len() + 1) + list.iter().map(|s| string_size(s)).sum::<usize>()
}

impl Node {
    /// Bytes of this node in the flexible (compact) encoding of the wire struct
    /// `TopologyDescriptionNode`: Name, NodeType, SourceTopics, SinkTopic, Stores, Successors,
    /// tagged fields.
    pub fn encoded_size(&self) -> usize {
        let none: &[String] = &[];
        let (sources, sink, stores) = match &self.kind {
            NodeKind::Source { topics } => (topics.as_slice(), None, none),
            NodeKind::Processor { stores } => (none, None, stores.as_slice()),
            NodeKind::Sink { topic } => (none, topic.as_deref(), none),
        };
        string_size(&self.name)
            + 1
            + strings_size(sources)
            + sink.map_or(1, string_size)
            + strings_size(stores)
            + strings_size(&self.successors)
            + 1
    }
}

impl StreamsGroupTopologyDescription {
    /// Bytes of the description in the flexible encoding of the wire struct
    /// `TopologyDescription` — the size a plugin's limit is measured in.
    pub fn encoded_size(&self) -> usize {
        let subtopologies: usize = self
            .subtopologies
            .iter()
            .map(|s| {
                string_size(&s.id)
                    + uvarint_size(s.nodes.len() + 1)
                    + s.nodes.iter().map(Node::encoded_size).sum::<usize>()
                    + 1
            })
            .sum();
        let global_stores: usize = self
            .global_stores
            .iter()
            .map(|g| g.source.encoded_size() + g.processor.encoded_size() + 1)
            .sum();
        uvarint_size(self.subtopologies.len() + 1)
            + subtopologies
            + uvarint_size(self.global_stores.len() + 1)
            + global_stores
            + 1
    }

    /// Every node, sub-topologies first, then each global store's source and processor.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.subtopologies
            .iter()
            .flat_map(|s| s.nodes.iter())
            .chain(
                self.global_stores
                    .iter()
                    .flat_map(|g| [&g.source, &g.processor]),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's appendix example is 198 bytes as a whole request; its
    /// TopologyDescription part is 198 - 11 (GroupId) - 16 (id) - 1 (request tags) = 170.
    #[test]
    fn encoded_size_matches_the_wire_encoding_of_the_appendix_example() {
        let node = |name: &str, kind: NodeKind, succ: &[&str]| Node {
            name: name.into(),
            kind,
            successors: succ.iter().map(|s| s.to_string()).collect(),
        };
        let d = StreamsGroupTopologyDescription {
            subtopologies: vec![Subtopology {
                id: "0".into(),
                nodes: vec![
                    node(
                        "KSTREAM-SOURCE-0000000000",
                        NodeKind::Source {
                            topics: vec!["orders".into()],
                        },
                        &["KSTREAM-FILTER-0000000001"],
                    ),
                    node(
                        "KSTREAM-FILTER-0000000001",
                        NodeKind::Processor { stores: vec![] },
                        &["KSTREAM-SINK-0000000002"],
                    ),
                    node(
                        "KSTREAM-SINK-0000000002",
                        NodeKind::Sink {
                            topic: Some("valid-orders".into()),
                        },
                        &[],
                    ),
                ],
            }],
            global_stores: vec![],
        };
        assert_eq!(d.encoded_size(), 170);
        assert_eq!(d.nodes().count(), 3);
    }
}
