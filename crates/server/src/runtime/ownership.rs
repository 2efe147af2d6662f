//! Which kcoord node serves each coordinator shard (gateway mode with several nodes): the
//! assignment the kcoord nodes' group in the cluster makes (`gateway/nodes.rs`), as the shards
//! and the request routing read it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Where a node is reached: its broker listener's advertised host, its
/// `gateway.broker.port.start`, and its broker listener (`host:port`), where the other nodes
/// send the requests of the groups it serves; and its HTTP listener (`host:port`, on the same
/// host), where the others send the JSON API requests of those groups, if it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeEndpoints {
    pub host: String,
    pub port_start: u16,
    pub listener: String,
    /// Absent from the metadata of a node that predates it.
    #[serde(default)]
    pub http: Option<String>,
}

/// Every shard's node, as one rebalance of the nodes' group assigned them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardOwners {
    /// By shard index: the member id of the node serving it.
    pub owners: Vec<String>,
    /// Each member's endpoints.
    pub nodes: BTreeMap<String, NodeEndpoints>,
}

/// The owners as this node knows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ownership {
    /// None until this node's first rebalance completed.
    pub owners: Option<Arc<ShardOwners>>,
    /// This node's member id in the group.
    pub me: String,
}

impl Ownership {
    /// Whether this node serves `shard`; `None` while that is not known yet.
    pub fn owns(&self, shard: usize) -> Option<bool> {
        let owners = self.owners.as_ref()?;
        Some(owners.owners.get(shard) == Some(&self.me))
    }

    /// The endpoints of the node serving `shard`, when known.
    pub fn endpoints_of(&self, shard: usize) -> Option<&NodeEndpoints> {
        let owners = self.owners.as_ref()?;
        owners.nodes.get(owners.owners.get(shard)?)
    }

    /// The broker listeners of the other nodes of the group.
    pub fn other_nodes(&self) -> Vec<&str> {
        self.others().map(|node| node.listener.as_str()).collect()
    }

    /// The HTTP listeners of the other nodes of the group that have one.
    pub fn other_http_listeners(&self) -> Vec<&str> {
        self.others()
            .filter_map(|node| node.http.as_deref())
            .collect()
    }

    fn others(&self) -> impl Iterator<Item = &NodeEndpoints> {
        let nodes = self.owners.as_ref().map(|owners| &owners.nodes);
        nodes
            .into_iter()
            .flatten()
            .filter(|(member, _)| **member != self.me)
            .map(|(_, node)| node)
    }

    /// Where the requests of `shard`'s groups go: `None` here (this node serves it, or no
    /// assignment is known yet), else the serving node.
    pub fn elsewhere(&self, shard: usize) -> Option<&NodeEndpoints> {
        if self.owns(shard) != Some(false) {
            return None;
        }
        self.endpoints_of(shard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_says_whose_each_shard_is() {
        let owners = ShardOwners {
            owners: vec!["a".into(), "b".into()],
            nodes: BTreeMap::from([
                (
                    "a".into(),
                    NodeEndpoints {
                        host: "h1".into(),
                        port_start: 100,
                        listener: "h1:9092".into(),
                        http: Some("h1:8080".into()),
                    },
                ),
                (
                    "b".into(),
                    NodeEndpoints {
                        host: "h2".into(),
                        port_start: 200,
                        listener: "h2:9092".into(),
                        http: None,
                    },
                ),
            ]),
        };
        let unknown = Ownership::default();
        assert_eq!(unknown.owns(0), None);
        let known = Ownership {
            owners: Some(Arc::new(owners)),
            me: "b".into(),
        };
        assert_eq!(known.owns(0), Some(false));
        assert_eq!(known.owns(1), Some(true));
        assert_eq!(known.owns(2), Some(false));
        assert_eq!(known.endpoints_of(0).map(|e| e.port_start), Some(100));
        assert_eq!(known.endpoints_of(2), None);
        assert_eq!(
            known.elsewhere(0).map(|n| n.listener.as_str()),
            Some("h1:9092")
        );
        assert_eq!(known.elsewhere(1), None);
        assert_eq!(unknown.elsewhere(0), None);
        assert_eq!(known.other_nodes(), ["h1:9092"]);
        assert_eq!(known.other_http_listeners(), ["h1:8080"]);
        assert!(unknown.other_nodes().is_empty());
    }
}
