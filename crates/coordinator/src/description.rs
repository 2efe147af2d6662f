//! Topology descriptions (KIP-1331) between the wire and the plugin model: the checks that make
//! a pushed description malformed (answered with INVALID_REQUEST before any plugin sees it), and
//! the conversions both ways.
//!
//! A pushed description is malformed when:
//! 1. a node's type is not 1 (SOURCE), 2 (PROCESSOR) or 3 (SINK);
//! 2. a node has an empty name, or two nodes of one sub-topology share a name;
//! 3. two sub-topologies share an id;
//! 4. a sink's topic is the empty string (null is a dynamically routed sink, which is fine), or
//!    a node that is not a sink carries a sink topic;
//! 5. a successor names a node that is not in the same sub-topology (or global store);
//! 6. a global store is not made of a SOURCE and a PROCESSOR.
use std::collections::HashSet;

use kcoord_plugin_api::{
    GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology,
};
use kcoord_wire::messages::streams_group_describe_response as describe;
use kcoord_wire::messages::streams_group_topology_description_update_request as kafka_push;
use kcoord_wire::messages::update_streams_group_topology_description_request as spec_push;

use crate::error::{CoordinatorError, Result};

/// The fields both push schemas give a node.
struct WireNode<'a> {
    name: &'a str,
    node_type: i8,
    source_topics: &'a [String],
    sink_topic: Option<&'a str>,
    stores: &'a [String],
    successors: &'a [String],
}

fn node(w: WireNode<'_>) -> Result<Node> {
    let bad = |msg: String| Err(CoordinatorError::invalid_request(msg));
    if w.name.is_empty() {
        return bad("A topology node has an empty name.".into());
    }
    if w.node_type != 3 && w.sink_topic.is_some() {
        return bad(format!(
            "Node {} is not a sink but has a sink topic.",
            w.name
        ));
    }
    let kind = match w.node_type {
        1 => NodeKind::Source {
            topics: w.source_topics.to_vec(),
        },
        2 => NodeKind::Processor {
            stores: w.stores.to_vec(),
        },
        3 => {
            if w.sink_topic == Some("") {
                return bad(format!("Sink node {} has an empty sink topic.", w.name));
            }
            NodeKind::Sink {
                topic: w.sink_topic.map(String::from),
            }
        }
        other => return bad(format!("Unknown topology node type: {other}")),
    };
    Ok(Node {
        name: w.name.to_string(),
        kind,
        successors: w.successors.to_vec(),
    })
}

/// Rules 2 and 5 over one group of nodes that may only point at each other.
fn check_graph(scope: &str, nodes: &[&Node]) -> Result<()> {
    let mut names = HashSet::new();
    for n in nodes {
        if !names.insert(n.name.as_str()) {
            return Err(CoordinatorError::invalid_request(format!(
                "Duplicate node name {} in {scope}.",
                n.name
            )));
        }
    }
    for n in nodes {
        if let Some(s) = n.successors.iter().find(|s| !names.contains(s.as_str())) {
            return Err(CoordinatorError::invalid_request(format!(
                "Node {} names unknown successor {s} in {scope}.",
                n.name
            )));
        }
    }
    Ok(())
}

fn assemble(
    subtopologies: Vec<Subtopology>,
    global_stores: Vec<GlobalStore>,
) -> Result<StreamsGroupTopologyDescription> {
    let mut ids = HashSet::new();
    for s in &subtopologies {
        if !ids.insert(s.id.as_str()) {
            return Err(CoordinatorError::invalid_request(format!(
                "Duplicate sub-topology id {}.",
                s.id
            )));
        }
        check_graph(
            &format!("sub-topology {}", s.id),
            &s.nodes.iter().collect::<Vec<_>>(),
        )?;
    }
    for (i, g) in global_stores.iter().enumerate() {
        if g.source.node_type() != 1 || g.processor.node_type() != 2 {
            return Err(CoordinatorError::invalid_request(
                "Global store must be composed of a source and a processor node.",
            ));
        }
        check_graph(&format!("global store {i}"), &[&g.source, &g.processor])?;
    }
    Ok(StreamsGroupTopologyDescription {
        subtopologies,
        global_stores,
    })
}

macro_rules! from_push {
    ($fn_name:ident, $m:ident, $node:ident) => {
        fn $fn_name(n: &$m::$node) -> Result<Node> {
            node(WireNode {
                name: &n.name,
                node_type: n.node_type,
                source_topics: &n.source_topics,
                sink_topic: n.sink_topic.as_deref(),
                stores: &n.stores,
                successors: &n.successors,
            })
        }
    };
}

from_push!(spec_node, spec_push, TopologyNode);
from_push!(kafka_node, kafka_push, TopologyDescriptionNode);

/// The specification's push (UpdateStreamsGroupTopologyDescription, key 95).
pub fn from_spec_push(
    d: &spec_push::TopologyDescription,
) -> Result<StreamsGroupTopologyDescription> {
    let subtopologies = d
        .subtopologies
        .iter()
        .map(|s| {
            Ok(Subtopology {
                id: s.subtopology_id.clone(),
                nodes: s.nodes.iter().map(spec_node).collect::<Result<_>>()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let stores = d
        .global_stores
        .iter()
        .map(|g| {
            Ok(GlobalStore {
                source: spec_node(&g.source)?,
                processor: spec_node(&g.processor)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    assemble(subtopologies, stores)
}

/// Kafka 4.4's push (StreamsGroupTopologyDescriptionUpdate, key 93).
pub fn from_kafka_push(
    d: &kafka_push::TopologyDescription,
) -> Result<StreamsGroupTopologyDescription> {
    let subtopologies = d
        .subtopologies
        .iter()
        .map(|s| {
            Ok(Subtopology {
                id: s.subtopology_id.clone(),
                nodes: s.nodes.iter().map(kafka_node).collect::<Result<_>>()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let stores = d
        .global_stores
        .iter()
        .map(|g| {
            Ok(GlobalStore {
                source: kafka_node(&g.source)?,
                processor: kafka_node(&g.processor)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    assemble(subtopologies, stores)
}

fn describe_node(n: &Node) -> describe::TopologyDescriptionNode {
    let mut w = describe::TopologyDescriptionNode {
        name: n.name.clone(),
        node_type: n.node_type(),
        successors: n.successors.clone(),
        ..Default::default()
    };
    match &n.kind {
        NodeKind::Source { topics } => w.source_topics = topics.clone(),
        NodeKind::Processor { stores } => w.stores = stores.clone(),
        NodeKind::Sink { topic } => w.sink_topic = topic.clone(),
    }
    w
}

/// What StreamsGroupDescribe v1 carries for a stored description.
pub fn to_describe(d: &StreamsGroupTopologyDescription) -> describe::TopologyDescription {
    describe::TopologyDescription {
        subtopologies: d
            .subtopologies
            .iter()
            .map(|s| describe::TopologyDescriptionSubtopology {
                subtopology_id: s.id.clone(),
                nodes: s.nodes.iter().map(describe_node).collect(),
                ..Default::default()
            })
            .collect(),
        global_stores: d
            .global_stores
            .iter()
            .map(|g| describe::TopologyDescriptionGlobalStore {
                source: describe_node(&g.source),
                processor: describe_node(&g.processor),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::ErrorCode;

    fn wnode(name: &str, t: i8, sink: Option<&str>, succ: &[&str]) -> spec_push::TopologyNode {
        spec_push::TopologyNode {
            name: name.into(),
            node_type: t,
            source_topics: if t == 1 { vec!["in".into()] } else { vec![] },
            sink_topic: sink.map(String::from),
            successors: succ.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn one(nodes: Vec<spec_push::TopologyNode>) -> spec_push::TopologyDescription {
        spec_push::TopologyDescription {
            subtopologies: vec![spec_push::Subtopology {
                subtopology_id: "0".into(),
                nodes,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn rejected(d: spec_push::TopologyDescription, text: &str) {
        let err = from_spec_push(&d).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
        assert_eq!(err.message.as_deref(), Some(text));
    }

    #[test]
    fn a_well_formed_description_converts_and_round_trips_to_describe() {
        let d = one(vec![
            wnode("src", 1, None, &["p"]),
            wnode("p", 2, None, &["sink", "dyn"]),
            wnode("sink", 3, Some("out"), &[]),
            wnode("dyn", 3, None, &[]),
        ]);
        let model = from_spec_push(&d).unwrap();
        assert_eq!(model.subtopologies[0].nodes.len(), 4);
        assert_eq!(
            model.subtopologies[0].nodes[3].kind,
            NodeKind::Sink { topic: None }
        );
        let back = to_describe(&model);
        assert_eq!(
            back.subtopologies[0].nodes[2].sink_topic.as_deref(),
            Some("out")
        );
        assert_eq!(
            back.subtopologies[0].nodes[0].source_topics,
            vec!["in".to_string()]
        );
        assert_eq!(
            back.subtopologies[0].nodes[1].successors,
            vec!["sink".to_string(), "dyn".to_string()]
        );
    }

    #[test]
    fn r14_each_malformation_is_an_invalid_request() {
        rejected(
            one(vec![wnode("a", 4, None, &[])]),
            "Unknown topology node type: 4",
        );
        rejected(
            one(vec![wnode("a", 0, None, &[])]),
            "Unknown topology node type: 0",
        );
        rejected(
            one(vec![wnode("a", 3, Some(""), &[])]),
            "Sink node a has an empty sink topic.",
        );
        rejected(
            one(vec![wnode("a", 2, Some("t"), &[])]),
            "Node a is not a sink but has a sink topic.",
        );
        rejected(
            one(vec![wnode("a", 2, None, &[]), wnode("a", 2, None, &[])]),
            "Duplicate node name a in sub-topology 0.",
        );
        rejected(
            one(vec![wnode("a", 2, None, &["ghost"])]),
            "Node a names unknown successor ghost in sub-topology 0.",
        );
        rejected(
            one(vec![wnode("", 2, None, &[])]),
            "A topology node has an empty name.",
        );
        let mut twice = one(vec![wnode("a", 2, None, &[])]);
        twice.subtopologies.push(twice.subtopologies[0].clone());
        rejected(twice, "Duplicate sub-topology id 0.");
        let store = spec_push::TopologyDescription {
            global_stores: vec![spec_push::GlobalStore {
                source: wnode("s", 2, None, &[]),
                processor: wnode("p", 2, None, &[]),
                ..Default::default()
            }],
            ..Default::default()
        };
        rejected(
            store,
            "Global store must be composed of a source and a processor node.",
        );
    }

    #[test]
    fn the_kafka_dialect_converts_the_same_way() {
        let d = kafka_push::TopologyDescription {
            subtopologies: vec![kafka_push::TopologyDescriptionSubtopology {
                subtopology_id: "0".into(),
                nodes: vec![kafka_push::TopologyDescriptionNode {
                    name: "a".into(),
                    node_type: 9,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            from_kafka_push(&d).unwrap_err().message.as_deref(),
            Some("Unknown topology node type: 9")
        );
    }
}
