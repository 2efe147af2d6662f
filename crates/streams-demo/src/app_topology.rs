//! The simulated application's topology: the description read from JSON (pushed as it is),
//! and what the members derive from it to join (the heartbeat's assignment topology) and the
//! source topics to create.
//!
//! Derivation rules (Kafka Streams knows these from its builder; a description only shows
//! names, so the demo goes by Kafka Streams' naming):
//! - a topic whose name ends in `-repartition` is an internal repartition topic: a sink
//!   writing it makes it a repartition sink topic of that sub-topology, a source reading it a
//!   repartition source topic (partition count left to the coordinator); it is not created;
//! - every other topic a source reads is a source topic, created when missing (global stores'
//!   topics too, though they are not part of the assignment topology);
//! - every store of a sub-topology's processors has a changelog topic
//!   `<application.id>-<store>-changelog`, created by the coordinator.

use std::collections::BTreeSet;
use std::path::Path;

use kcoord_client::streams::{SubtopologyBuilder, TopologyBuilder, TopologyError};
use kcoord_client::topology::streams::{InvalidTopologyDescription, NodeKind, TopologyDescription};
use kcoord_wire::messages::streams_group_heartbeat_request::Topology;

/// The suffix Kafka Streams gives internal repartition topics.
const REPARTITION_SUFFIX: &str = "-repartition";

/// Why the topology file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TopologyFileError {
    #[error("cannot read topology file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("topology file {path} is not a topology description: {reason}")]
    Parse { path: String, reason: String },
    #[error("topology file {path}: {source}")]
    Invalid {
        path: String,
        source: InvalidTopologyDescription,
    },
    #[error("topology file {path}: {source}")]
    Assignment { path: String, source: TopologyError },
}

/// Reads and checks a topology description file.
pub fn load(path: &Path) -> Result<TopologyDescription, TopologyFileError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TopologyFileError::Read {
        path: shown.clone(),
        source,
    })?;
    let description: TopologyDescription =
        serde_json::from_str(&text).map_err(|e| TopologyFileError::Parse {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
    description
        .validate()
        .map_err(|source| TopologyFileError::Invalid {
            path: shown,
            source,
        })?;
    Ok(description)
}

fn is_repartition(topic: &str) -> bool {
    topic.ends_with(REPARTITION_SUFFIX)
}

/// The assignment topology the members join with.
pub fn assignment_topology(
    description: &TopologyDescription,
    application_id: &str,
    epoch: i32,
) -> Result<Topology, TopologyError> {
    let mut subtopologies: Vec<_> = description.subtopologies.iter().collect();
    subtopologies.sort_by_key(|s| s.id);
    let mut builder = TopologyBuilder::new(epoch);
    for subtopology in subtopologies {
        let mut sources = BTreeSet::new();
        let mut repartition_sources = BTreeSet::new();
        let mut repartition_sinks = BTreeSet::new();
        let mut stores = BTreeSet::new();
        for node in &subtopology.nodes {
            match &node.kind {
                NodeKind::Source { topics } => {
                    for topic in topics {
                        if is_repartition(topic) {
                            &mut repartition_sources
                        } else {
                            &mut sources
                        }
                        .insert(topic.clone());
                    }
                }
                NodeKind::Processor { stores: used } => stores.extend(used.iter().cloned()),
                NodeKind::Sink { topic: Some(topic) } if is_repartition(topic) => {
                    repartition_sinks.insert(topic.clone());
                }
                NodeKind::Sink { .. } => {}
            }
        }
        let mut sub = SubtopologyBuilder::new(subtopology.id.to_string()).source_topics(sources);
        for topic in repartition_sources {
            sub = sub.repartition_source_topic(topic, 0);
        }
        for topic in repartition_sinks {
            sub = sub.repartition_sink_topic(topic);
        }
        for store in stores {
            sub = sub.state_changelog_topic(format!("{application_id}-{store}-changelog"));
        }
        builder = builder.subtopology(sub);
    }
    builder.build()
}

/// The topics sources read that are not internal: the ones to create when missing.
pub fn source_topics(description: &TopologyDescription) -> BTreeSet<String> {
    let nodes = description
        .subtopologies
        .iter()
        .flat_map(|s| s.nodes.iter())
        .chain(description.global_stores.iter().map(|g| &g.source));
    nodes
        .filter_map(|n| match &n.kind {
            NodeKind::Source { topics } => Some(topics.iter()),
            _ => None,
        })
        .flatten()
        .filter(|t| !is_repartition(t))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_client::topology::streams::{GlobalStore, Node, Subtopology};

    #[test]
    fn internal_topics_follow_kafka_streams_naming() {
        let description = TopologyDescription {
            subtopologies: vec![
                Subtopology {
                    id: 1,
                    nodes: vec![
                        Node::source("rsrc", &["app-agg-repartition"], &["agg"]),
                        Node::processor("agg", &["counts"], &["out"]),
                        Node::sink("out", Some("totals")),
                    ],
                },
                Subtopology {
                    id: 0,
                    nodes: vec![
                        Node::source("src", &["orders"], &["key"]),
                        Node::processor("key", &[], &["rsink"]),
                        Node::sink("rsink", Some("app-agg-repartition")),
                    ],
                },
            ],
            global_stores: vec![GlobalStore {
                id: 2,
                source: Node::source("g", &["products"], &["gp"]),
                processor: Node::processor("gp", &["products-store"], &[]),
            }],
        };
        let topology = assignment_topology(&description, "app", 4).unwrap();
        assert_eq!(topology.epoch, 4);
        let ids: Vec<&str> = topology
            .subtopologies
            .iter()
            .map(|s| s.subtopology_id.as_str())
            .collect();
        assert_eq!(ids, ["0", "1"], "by id, global stores left out");
        let (first, second) = (&topology.subtopologies[0], &topology.subtopologies[1]);
        assert_eq!(first.source_topics, ["orders"]);
        assert_eq!(first.repartition_sink_topics, ["app-agg-repartition"]);
        assert!(second.source_topics.is_empty());
        assert_eq!(
            second.repartition_source_topics[0].name,
            "app-agg-repartition"
        );
        assert_eq!(
            second.state_changelog_topics[0].name,
            "app-counts-changelog"
        );
        assert_eq!(
            source_topics(&description).into_iter().collect::<Vec<_>>(),
            ["orders", "products"]
        );
    }
}
