//! What every request can see: the shared server state, the listener it arrived on and who
//! sent it.

use std::net::SocketAddr;
use std::sync::Arc;

use kcoord_wire::messages::RequestHeader;

use crate::catalog::TopicCatalog;
use crate::config::{Config, ListenerKind, SecurityProtocol};
use crate::features::Features;

/// A bound listener with the address it advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    pub name: String,
    pub kind: ListenerKind,
    pub security_protocol: SecurityProtocol,
    /// The address actually bound (port 0 in the config resolved by the OS).
    pub local_addr: SocketAddr,
    pub advertised_host: String,
    pub advertised_port: u16,
}

/// State shared by all connections. Read-only for handlers; the parts that change
/// (the topic catalog) are published as immutable snapshots.
#[derive(Debug)]
pub struct ServerState {
    pub config: Arc<Config>,
    pub listeners: Vec<Arc<ListenerInfo>>,
    pub topics: TopicCatalog,
    pub features: Features,
}

impl ServerState {
    pub fn new(config: Arc<Config>, listeners: Vec<ListenerInfo>) -> Self {
        ServerState {
            config,
            listeners: listeners.into_iter().map(Arc::new).collect(),
            topics: TopicCatalog::default(),
            features: Features::default(),
        }
    }

    pub fn node_id(&self) -> i32 {
        self.config.node_id
    }

    pub fn cluster_id(&self) -> &str {
        &self.config.cluster_id
    }
}

/// The context a handler gets for one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    pub server: &'a ServerState,
    pub listener: &'a ListenerInfo,
    pub peer: SocketAddr,
    pub header: &'a RequestHeader,
}

impl RequestContext<'_> {
    pub fn node_id(&self) -> i32 {
        self.server.node_id()
    }

    pub fn cluster_id(&self) -> &str {
        self.server.cluster_id()
    }

    /// This node as clients reach it through the listener the request came in on.
    pub fn this_node(&self) -> Node {
        Node {
            id: self.node_id(),
            host: self.listener.advertised_host.clone(),
            port: i32::from(self.listener.advertised_port),
        }
    }
}

/// A node endpoint as the protocol carries it. Kafka's `Node.noNode()` is id -1, host "",
/// port -1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

impl Node {
    pub fn none() -> Node {
        Node {
            id: -1,
            host: String::new(),
            port: -1,
        }
    }
}
