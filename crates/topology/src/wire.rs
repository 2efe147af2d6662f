//! The topology description as the wire carries it, in one struct family of our own.
//!
//! The generated wire crate has three copies of the same struct family, because Kafka's
//! message schemas do not share common structs: the specification's push (key 95), Kafka
//! 4.4's push (key 93) and StreamsGroupDescribe v1's response. [`WireTopology`] converts to
//! and from each of them, so the rest of the client deals with one shape.

use kcoord_wire::messages::{
    streams_group_describe_response as describe,
    streams_group_topology_description_update_request as push93,
    update_streams_group_topology_description_request as push95,
};
use serde::{Deserialize, Serialize};

/// NodeType of a source node.
pub const NODE_TYPE_SOURCE: i8 = 1;
/// NodeType of a processor node.
pub const NODE_TYPE_PROCESSOR: i8 = 2;
/// NodeType of a sink node.
pub const NODE_TYPE_SINK: i8 = 3;

/// The wire's `TopologyDescription`. Serializes with the schema's field names
/// (`Subtopologies`, `GlobalStores`, ...), as the specification's example request body does.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireTopology {
    pub subtopologies: Vec<WireSubtopology>,
    pub global_stores: Vec<WireGlobalStore>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireSubtopology {
    pub subtopology_id: String,
    pub nodes: Vec<WireNode>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireNode {
    pub name: String,
    /// [`NODE_TYPE_SOURCE`], [`NODE_TYPE_PROCESSOR`] or [`NODE_TYPE_SINK`].
    pub node_type: i8,
    pub source_topics: Vec<String>,
    pub sink_topic: Option<String>,
    pub stores: Vec<String>,
    pub successors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WireGlobalStore {
    pub source: WireNode,
    pub processor: WireNode,
}

/// `From` both ways between [`WireTopology`] and one generated family (description,
/// subtopology, node and global store types). Unknown tagged fields are not carried over.
macro_rules! wire_family {
    ($m:ident: $desc:ident, $sub:ident, $node:ident, $global:ident) => {
        impl From<&WireTopology> for $m::$desc {
            fn from(t: &WireTopology) -> Self {
                let node = |n: &WireNode| $m::$node {
                    name: n.name.clone(),
                    node_type: n.node_type,
                    source_topics: n.source_topics.clone(),
                    sink_topic: n.sink_topic.clone(),
                    stores: n.stores.clone(),
                    successors: n.successors.clone(),
                    ..Default::default()
                };
                $m::$desc {
                    subtopologies: t
                        .subtopologies
                        .iter()
                        .map(|s| $m::$sub {
                            subtopology_id: s.subtopology_id.clone(),
                            nodes: s.nodes.iter().map(node).collect(),
                            ..Default::default()
                        })
                        .collect(),
                    global_stores: t
                        .global_stores
                        .iter()
                        .map(|g| $m::$global {
                            source: node(&g.source),
                            processor: node(&g.processor),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            }
        }

        impl From<&$m::$desc> for WireTopology {
            fn from(d: &$m::$desc) -> Self {
                let node = |n: &$m::$node| WireNode {
                    name: n.name.clone(),
                    node_type: n.node_type,
                    source_topics: n.source_topics.clone(),
                    sink_topic: n.sink_topic.clone(),
                    stores: n.stores.clone(),
                    successors: n.successors.clone(),
                };
                WireTopology {
                    subtopologies: d
                        .subtopologies
                        .iter()
                        .map(|s| WireSubtopology {
                            subtopology_id: s.subtopology_id.clone(),
                            nodes: s.nodes.iter().map(node).collect(),
                        })
                        .collect(),
                    global_stores: d
                        .global_stores
                        .iter()
                        .map(|g| WireGlobalStore {
                            source: node(&g.source),
                            processor: node(&g.processor),
                        })
                        .collect(),
                }
            }
        }
    };
}

wire_family!(push95: TopologyDescription, Subtopology, TopologyNode, GlobalStore);
wire_family!(push93: TopologyDescription, TopologyDescriptionSubtopology, TopologyDescriptionNode, TopologyDescriptionGlobalStore);
wire_family!(describe: TopologyDescription, TopologyDescriptionSubtopology, TopologyDescriptionNode, TopologyDescriptionGlobalStore);

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> WireTopology {
        let node = |name: &str, node_type, successors: &[&str]| WireNode {
            name: name.into(),
            node_type,
            source_topics: if node_type == NODE_TYPE_SOURCE {
                vec!["in".into()]
            } else {
                vec![]
            },
            sink_topic: (node_type == NODE_TYPE_SINK).then(|| "out".into()),
            stores: if node_type == NODE_TYPE_PROCESSOR {
                vec!["s".into()]
            } else {
                vec![]
            },
            successors: successors.iter().map(|s| s.to_string()).collect(),
        };
        WireTopology {
            subtopologies: vec![WireSubtopology {
                subtopology_id: "0".into(),
                nodes: vec![
                    node("a", NODE_TYPE_SOURCE, &["b"]),
                    node("b", NODE_TYPE_PROCESSOR, &["c"]),
                    node("c", NODE_TYPE_SINK, &[]),
                ],
            }],
            global_stores: vec![WireGlobalStore {
                source: node("g", NODE_TYPE_SOURCE, &["h"]),
                processor: node("h", NODE_TYPE_PROCESSOR, &[]),
            }],
        }
    }

    #[test]
    fn every_generated_family_round_trips() {
        let t = sample();
        assert_eq!(
            WireTopology::from(&push95::TopologyDescription::from(&t)),
            t
        );
        assert_eq!(
            WireTopology::from(&push93::TopologyDescription::from(&t)),
            t
        );
        assert_eq!(
            WireTopology::from(&describe::TopologyDescription::from(&t)),
            t
        );
    }

    #[test]
    fn serializes_with_the_schema_field_names() {
        let json = serde_json::to_value(sample()).unwrap();
        let node = &json["Subtopologies"][0]["Nodes"][2];
        assert_eq!(node["Name"], "c");
        assert_eq!(node["NodeType"], 3);
        assert_eq!(node["SinkTopic"], "out");
        assert_eq!(
            json["Subtopologies"][0]["Nodes"][0]["SinkTopic"],
            serde_json::Value::Null
        );
        assert_eq!(json["GlobalStores"][0]["Processor"]["Stores"][0], "s");
    }
}
