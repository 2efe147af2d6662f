//! Wire → the reader's model, with predecessors rebuilt from successors; and back.

use std::collections::{BTreeMap, BTreeSet};

use kcoord_wire::messages::streams_group_describe_response::TopologyDescription as DescribedTopology;

use super::wire::{
    WireGlobalStore, WireNode, WireSubtopology, WireTopology, NODE_TYPE_PROCESSOR, NODE_TYPE_SINK,
    NODE_TYPE_SOURCE,
};
use super::{
    GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology,
    TopologyDescriptionStatus,
};

/// A topology description the client cannot make sense of. Kafka's Admin fails the group's
/// describe with an IllegalStateException in the same cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyDescriptionError {
    #[error("unknown topology description status {0}")]
    UnknownStatus(i8),
    #[error("topology description is missing despite status AVAILABLE")]
    MissingDescription,
    #[error("unknown topology node type {node_type} for node {node:?}")]
    UnknownNodeType { node: String, node_type: i8 },
    #[error("global store must be composed of a source and a processor node, got {source_node:?} and {processor:?}")]
    GlobalStoreShape {
        source_node: String,
        processor: String,
    },
}

/// Reads a described group's TopologyDescriptionStatus and TopologyDescription the way Kafka's
/// Admin does: the status decides, a description sent with any other status than AVAILABLE is
/// ignored, and AVAILABLE without a description is an error.
pub fn from_wire(
    status: i8,
    description: Option<&DescribedTopology>,
) -> Result<
    (
        TopologyDescriptionStatus,
        Option<StreamsGroupTopologyDescription>,
    ),
    TopologyDescriptionError,
> {
    let status = TopologyDescriptionStatus::from_id(status)?;
    if status != TopologyDescriptionStatus::Available {
        return Ok((status, None));
    }
    let description = description.ok_or(TopologyDescriptionError::MissingDescription)?;
    Ok((
        status,
        Some(StreamsGroupTopologyDescription::try_from(description)?),
    ))
}

impl TryFrom<&DescribedTopology> for StreamsGroupTopologyDescription {
    type Error = TopologyDescriptionError;

    fn try_from(wire: &DescribedTopology) -> Result<Self, TopologyDescriptionError> {
        StreamsGroupTopologyDescription::try_from(&WireTopology::from(wire))
    }
}

impl TryFrom<&WireTopology> for StreamsGroupTopologyDescription {
    type Error = TopologyDescriptionError;

    fn try_from(wire: &WireTopology) -> Result<Self, TopologyDescriptionError> {
        Ok(StreamsGroupTopologyDescription {
            subtopologies: wire
                .subtopologies
                .iter()
                .map(subtopology)
                .collect::<Result<_, _>>()?,
            global_stores: wire
                .global_stores
                .iter()
                .map(global_store)
                .collect::<Result<_, _>>()?,
        })
    }
}

fn subtopology(wire: &WireSubtopology) -> Result<Subtopology, TopologyDescriptionError> {
    let predecessors = predecessors_of(&wire.nodes);
    let nodes = wire
        .nodes
        .iter()
        .map(|n| node(n, &predecessors))
        .collect::<Result<_, _>>()?;
    Ok(Subtopology {
        id: wire.subtopology_id.clone(),
        nodes,
    })
}

fn global_store(wire: &WireGlobalStore) -> Result<GlobalStore, TopologyDescriptionError> {
    // The pair is its own little graph: the source's successor is the processor.
    let pair = [wire.source.clone(), wire.processor.clone()];
    let predecessors = predecessors_of(&pair);
    let source = node(&wire.source, &predecessors)?;
    let processor = node(&wire.processor, &predecessors)?;
    if !source.is_source() || !processor.is_processor() {
        return Err(TopologyDescriptionError::GlobalStoreShape {
            source_node: source.name,
            processor: processor.name,
        });
    }
    Ok(GlobalStore { source, processor })
}

/// For every node name, the names of the nodes listing it as a successor. Names that are no
/// node of the block simply never get looked up, as in Kafka.
fn predecessors_of(nodes: &[WireNode]) -> BTreeMap<&str, BTreeSet<String>> {
    let mut predecessors: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for node in nodes {
        for successor in &node.successors {
            predecessors
                .entry(successor.as_str())
                .or_default()
                .insert(node.name.clone());
        }
    }
    predecessors
}

fn node(
    wire: &WireNode,
    predecessors: &BTreeMap<&str, BTreeSet<String>>,
) -> Result<Node, TopologyDescriptionError> {
    let kind = match wire.node_type {
        NODE_TYPE_SOURCE => NodeKind::Source {
            topics: wire.source_topics.iter().cloned().collect(),
        },
        NODE_TYPE_PROCESSOR => NodeKind::Processor {
            stores: wire.stores.iter().cloned().collect(),
        },
        NODE_TYPE_SINK => NodeKind::Sink {
            topic: wire.sink_topic.clone(),
        },
        other => {
            return Err(TopologyDescriptionError::UnknownNodeType {
                node: wire.name.clone(),
                node_type: other,
            })
        }
    };
    Ok(Node {
        name: wire.name.clone(),
        kind,
        successors: wire.successors.iter().cloned().collect(),
        predecessors: predecessors
            .get(wire.name.as_str())
            .cloned()
            .unwrap_or_default(),
    })
}

/// Inverts an adjacency map over a fixed node set: every key of `edges` is in the result, and
/// `b` lists `a` iff `edges[a]` lists `b`. Edges to names that are not keys are dropped, since
/// there is no node to attach them to. Applied to successors it gives predecessors; applied
/// twice it gives the successors back (for edges between known nodes).
pub fn invert(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut inverted: BTreeMap<String, BTreeSet<String>> =
        edges.keys().map(|k| (k.clone(), BTreeSet::new())).collect();
    for (from, targets) in edges {
        for to in targets {
            if let Some(sources) = inverted.get_mut(to) {
                sources.insert(from.clone());
            }
        }
    }
    inverted
}

impl StreamsGroupTopologyDescription {
    /// Back to the wire (predecessors dropped, lists sorted): for tests and tools that build a
    /// description by hand.
    pub fn to_wire_topology(&self) -> WireTopology {
        WireTopology {
            subtopologies: self
                .subtopologies
                .iter()
                .map(|s| WireSubtopology {
                    subtopology_id: s.id.clone(),
                    nodes: s.nodes.iter().map(Node::to_wire).collect(),
                })
                .collect(),
            global_stores: self
                .global_stores
                .iter()
                .map(|g| WireGlobalStore {
                    source: g.source.to_wire(),
                    processor: g.processor.to_wire(),
                })
                .collect(),
        }
    }

    /// Back to StreamsGroupDescribe's wire struct, as [`Self::to_wire_topology`].
    pub fn to_wire(&self) -> DescribedTopology {
        DescribedTopology::from(&self.to_wire_topology())
    }
}

impl Node {
    fn to_wire(&self) -> WireNode {
        let mut wire = WireNode {
            name: self.name.clone(),
            successors: self.successors.iter().cloned().collect(),
            ..Default::default()
        };
        match &self.kind {
            NodeKind::Source { topics } => {
                wire.node_type = NODE_TYPE_SOURCE;
                wire.source_topics = topics.iter().cloned().collect();
            }
            NodeKind::Processor { stores } => {
                wire.node_type = NODE_TYPE_PROCESSOR;
                wire.stores = stores.iter().cloned().collect();
            }
            NodeKind::Sink { topic } => {
                wire.node_type = NODE_TYPE_SINK;
                wire.sink_topic = topic.clone();
            }
        }
        wire
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn wire_node(name: &str, node_type: i8, successors: &[&str]) -> WireNode {
        WireNode {
            name: name.into(),
            node_type,
            successors: successors.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn r56_predecessors_are_rebuilt_within_each_subtopology_and_global_store() {
        let wire = WireTopology {
            subtopologies: vec![
                WireSubtopology {
                    subtopology_id: "0".into(),
                    nodes: vec![
                        wire_node("src", 1, &["a", "b"]),
                        wire_node("a", 2, &["sink"]),
                        wire_node("b", 2, &["sink"]),
                        wire_node("sink", 3, &[]),
                    ],
                },
                // "a" is a successor name in subtopology 0 only; it must not leak here.
                WireSubtopology {
                    subtopology_id: "1".into(),
                    nodes: vec![wire_node("a", 2, &[])],
                },
            ],
            global_stores: vec![WireGlobalStore {
                source: wire_node("gsrc", 1, &["gproc"]),
                processor: wire_node("gproc", 2, &[]),
            }],
        };
        let model = StreamsGroupTopologyDescription::try_from(&wire).unwrap();
        let nodes = &model.subtopologies[0].nodes;
        assert_eq!(nodes[0].predecessors, set(&[]));
        assert_eq!(nodes[1].predecessors, set(&["src"]));
        assert_eq!(nodes[3].predecessors, set(&["a", "b"]));
        assert_eq!(model.subtopologies[1].nodes[0].predecessors, set(&[]));
        assert_eq!(
            model.global_stores[0].processor.predecessors,
            set(&["gsrc"])
        );
        assert_eq!(model.global_stores[0].source.predecessors, set(&[]));
        assert_eq!(
            StreamsGroupTopologyDescription::try_from(&model.to_wire()).unwrap(),
            model
        );
    }

    #[test]
    fn bad_node_types_and_global_store_shapes_are_errors() {
        let mut wire = WireTopology {
            subtopologies: vec![WireSubtopology {
                subtopology_id: "0".into(),
                nodes: vec![wire_node("x", 7, &[])],
            }],
            ..Default::default()
        };
        assert_eq!(
            StreamsGroupTopologyDescription::try_from(&wire),
            Err(TopologyDescriptionError::UnknownNodeType {
                node: "x".into(),
                node_type: 7
            })
        );
        wire.subtopologies.clear();
        wire.global_stores.push(WireGlobalStore {
            source: wire_node("s", 3, &[]),
            processor: wire_node("p", 2, &[]),
        });
        assert!(matches!(
            StreamsGroupTopologyDescription::try_from(&wire),
            Err(TopologyDescriptionError::GlobalStoreShape { .. })
        ));
    }

    #[test]
    fn r57_the_status_decides_whether_the_description_is_read() {
        let wire = DescribedTopology::default();
        assert_eq!(
            from_wire(1, Some(&wire)),
            Ok((TopologyDescriptionStatus::NotStored, None))
        );
        assert_eq!(
            from_wire(2, Some(&wire)),
            Ok((TopologyDescriptionStatus::Error, None))
        );
        assert_eq!(
            from_wire(0, None),
            Ok((TopologyDescriptionStatus::NotRequested, None))
        );
        assert_eq!(
            from_wire(3, None),
            Err(TopologyDescriptionError::MissingDescription)
        );
        assert_eq!(
            from_wire(9, None),
            Err(TopologyDescriptionError::UnknownStatus(9))
        );
        let (status, model) = from_wire(3, Some(&wire)).unwrap();
        assert_eq!(status, TopologyDescriptionStatus::Available);
        assert_eq!(model, Some(StreamsGroupTopologyDescription::default()));
    }

    /// Graphs over up to 8 nodes whose edges only name nodes of the graph.
    fn graphs() -> impl Strategy<Value = BTreeMap<String, BTreeSet<String>>> {
        (1usize..8).prop_flat_map(|n| {
            proptest::collection::vec(proptest::collection::btree_set(0..n, 0..n), n).prop_map(
                |adjacency| {
                    adjacency
                        .into_iter()
                        .enumerate()
                        .map(|(i, targets)| {
                            (
                                format!("node-{i}"),
                                targets.into_iter().map(|t| format!("node-{t}")).collect(),
                            )
                        })
                        .collect()
                },
            )
        })
    }

    proptest! {
        #[test]
        fn r56_inverting_successors_twice_gives_the_successors(successors in graphs()) {
            prop_assert_eq!(invert(&invert(&successors)), successors);
        }

        #[test]
        fn r56_converted_predecessors_are_the_inverted_successors(successors in graphs()) {
            let nodes: Vec<WireNode> = successors
                .iter()
                .map(|(name, targets)| WireNode {
                    name: name.clone(),
                    node_type: NODE_TYPE_PROCESSOR,
                    successors: targets.iter().cloned().collect(),
                    ..Default::default()
                })
                .collect();
            let wire = WireTopology { subtopologies: vec![WireSubtopology { subtopology_id: "0".into(), nodes }], ..Default::default() };
            let model = StreamsGroupTopologyDescription::try_from(&wire).unwrap();
            let predecessors: BTreeMap<String, BTreeSet<String>> =
                model.subtopologies[0].nodes.iter().map(|n| (n.name.clone(), n.predecessors.clone())).collect();
            prop_assert_eq!(&predecessors, &invert(&successors));
            prop_assert_eq!(invert(&predecessors), successors);
        }
    }
}
