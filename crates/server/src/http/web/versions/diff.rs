//! What changed between two topology descriptions of a group: sub-topologies, nodes (by
//! name), edges (successor links), topics and state stores (by name, with the nodes that use
//! them). Everything is sorted, so the same two descriptions always give the same document.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_plugin_api::{Node, NodeKind, StreamsGroupTopologyDescription};
use serde::Serialize;

/// Where global stores' nodes are placed in the node listing.
pub const GLOBAL: &str = "global";

#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct Changes<T, C> {
    pub added: Vec<T>,
    pub removed: Vec<T>,
    pub changed: Vec<C>,
}

/// Edges are only there or not.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct Delta<T> {
    pub added: Vec<T>,
    pub removed: Vec<T>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRef {
    pub name: String,
    pub subtopology: String,
    /// `SOURCE`, `PROCESSOR` or `SINK`.
    #[serde(rename = "type")]
    pub node_type: &'static str,
}

#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct ChangedNode {
    #[serde(flatten)]
    pub node: NodeRef,
    /// Which of `subtopology`, `type`, `topics`, `stores`, `successors` differ.
    pub changes: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
}

/// A topic or store used by other nodes than before.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct ChangedUse {
    pub name: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDiff {
    pub subtopologies: Changes<String, String>,
    pub nodes: Changes<NodeRef, ChangedNode>,
    pub edges: Delta<Edge>,
    pub topics: Changes<String, ChangedUse>,
    pub state_stores: Changes<String, ChangedUse>,
}

/// A node with the sub-topology it is in.
struct Placed<'a> {
    subtopology: &'a str,
    node: &'a Node,
}

impl<'a> Placed<'a> {
    fn reference(&self) -> NodeRef {
        NodeRef {
            name: self.node.name.clone(),
            subtopology: self.subtopology.to_owned(),
            node_type: match self.node.kind {
                NodeKind::Source { .. } => "SOURCE",
                NodeKind::Processor { .. } => "PROCESSOR",
                NodeKind::Sink { .. } => "SINK",
            },
        }
    }

    fn topics(&self) -> Vec<&'a str> {
        match &self.node.kind {
            NodeKind::Source { topics } => topics.iter().map(String::as_str).collect(),
            NodeKind::Sink { topic } => topic.iter().map(String::as_str).collect(),
            NodeKind::Processor { .. } => Vec::new(),
        }
    }

    fn stores(&self) -> Vec<&'a str> {
        match &self.node.kind {
            NodeKind::Processor { stores } => stores.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

fn placed(d: &StreamsGroupTopologyDescription) -> BTreeMap<&str, Placed<'_>> {
    let subtopologies = d
        .subtopologies
        .iter()
        .flat_map(|s| s.nodes.iter().map(move |n| (s.id.as_str(), n)));
    let globals = d
        .global_stores
        .iter()
        .flat_map(|g| [(GLOBAL, &g.source), (GLOBAL, &g.processor)]);
    subtopologies
        .chain(globals)
        .map(|(subtopology, node)| (node.name.as_str(), Placed { subtopology, node }))
        .collect()
}

fn sorted<'a>(list: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
    list.into_iter().collect()
}

fn node_changes(before: &Placed<'_>, after: &Placed<'_>) -> Vec<&'static str> {
    let checks = [
        ("subtopology", before.subtopology != after.subtopology),
        ("type", before.node.node_type() != after.node.node_type()),
        ("topics", sorted(before.topics()) != sorted(after.topics())),
        ("stores", sorted(before.stores()) != sorted(after.stores())),
        (
            "successors",
            sorted(before.node.successors.iter().map(String::as_str))
                != sorted(after.node.successors.iter().map(String::as_str)),
        ),
    ];
    checks
        .into_iter()
        .filter(|(_, c)| *c)
        .map(|(n, _)| n)
        .collect()
}

/// Names (topics or stores) → the nodes using them.
fn uses<'a>(
    nodes: &BTreeMap<&'a str, Placed<'a>>,
    of: impl Fn(&Placed<'a>) -> Vec<&'a str>,
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut uses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, p) in nodes {
        for used in of(p) {
            uses.entry(used).or_default().insert(name);
        }
    }
    uses
}

fn compare_uses(
    before: &BTreeMap<&str, BTreeSet<&str>>,
    after: &BTreeMap<&str, BTreeSet<&str>>,
) -> Changes<String, ChangedUse> {
    let owned = |set: &BTreeSet<&str>| set.iter().map(|s| s.to_string()).collect();
    Changes {
        added: after
            .keys()
            .filter(|k| !before.contains_key(*k))
            .map(|k| k.to_string())
            .collect(),
        removed: before
            .keys()
            .filter(|k| !after.contains_key(*k))
            .map(|k| k.to_string())
            .collect(),
        changed: before
            .iter()
            .filter_map(|(k, b)| {
                let a = after.get(k).filter(|a| *a != b)?;
                Some(ChangedUse {
                    name: k.to_string(),
                    before: owned(b),
                    after: owned(a),
                })
            })
            .collect(),
    }
}

fn edges(nodes: &BTreeMap<&str, Placed<'_>>) -> BTreeSet<Edge> {
    nodes
        .values()
        .flat_map(|p| {
            p.node.successors.iter().map(|s| Edge {
                from: p.node.name.clone(),
                to: s.clone(),
            })
        })
        .collect()
}

fn subtopology_changes(
    before: &StreamsGroupTopologyDescription,
    after: &StreamsGroupTopologyDescription,
    nodes: &Changes<NodeRef, ChangedNode>,
) -> Changes<String, String> {
    let ids = |d: &StreamsGroupTopologyDescription| -> BTreeSet<String> {
        d.subtopologies.iter().map(|s| s.id.clone()).collect()
    };
    let (b, a) = (ids(before), ids(after));
    let touched: BTreeSet<&str> = nodes
        .added
        .iter()
        .chain(&nodes.removed)
        .chain(nodes.changed.iter().map(|c| &c.node))
        .map(|n| n.subtopology.as_str())
        .collect();
    Changes {
        added: a.difference(&b).cloned().collect(),
        removed: b.difference(&a).cloned().collect(),
        changed: a
            .intersection(&b)
            .filter(|s| touched.contains(s.as_str()))
            .cloned()
            .collect(),
    }
}

/// What `after` changed from `before`.
pub fn diff(
    before: &StreamsGroupTopologyDescription,
    after: &StreamsGroupTopologyDescription,
) -> TopologyDiff {
    let (b, a) = (placed(before), placed(after));
    let nodes = Changes {
        added: a
            .iter()
            .filter(|(n, _)| !b.contains_key(*n))
            .map(|(_, p)| p.reference())
            .collect(),
        removed: b
            .iter()
            .filter(|(n, _)| !a.contains_key(*n))
            .map(|(_, p)| p.reference())
            .collect(),
        changed: a
            .iter()
            .filter_map(|(n, after)| {
                let changes = node_changes(b.get(n)?, after);
                (!changes.is_empty()).then(|| ChangedNode {
                    node: after.reference(),
                    changes,
                })
            })
            .collect(),
    };
    let (be, ae) = (edges(&b), edges(&a));
    TopologyDiff {
        subtopologies: subtopology_changes(before, after, &nodes),
        nodes,
        edges: Delta {
            added: ae.difference(&be).cloned().collect(),
            removed: be.difference(&ae).cloned().collect(),
        },
        topics: compare_uses(&uses(&b, |p| p.topics()), &uses(&a, |p| p.topics())),
        state_stores: compare_uses(&uses(&b, |p| p.stores()), &uses(&a, |p| p.stores())),
    }
}

#[cfg(test)]
mod tests;
