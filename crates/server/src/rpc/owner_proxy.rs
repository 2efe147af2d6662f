//! In gateway mode with several kcoord nodes (docs/gateway.md, "Several kcoord nodes"), any
//! node answers for every group: a request about groups whose coordinator shard another node
//! serves is passed to that node, whose answer goes back to the client as it came. Clients
//! therefore never need to know which node serves what: FindCoordinator stays the cluster's
//! answer (on this node's ports), and Kafka's clients, which keep one connection per broker id,
//! never hold a connection to the wrong kcoord node.
//!
//! A passed-on request carries a marker in its client id (with the client's host and id), so
//! the receiving node serves it itself (never passing it on again, should the two nodes
//! disagree for a moment on who serves the shard: it answers NOT_COORDINATOR then, and the
//! client retries) and records the client's id and host rather than the node's. The nodes
//! connect to each other with the `gateway.node.client.*` settings, and the marker counts only
//! on a connection whose principal `gateway.node.principals` names (any, when it is unset).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use kcoord_wire::api::ApiKey;
use kcoord_wire::budget::decode_request;
use kcoord_wire::messages::{
    RequestHeader, StreamsGroupHeartbeatRequest, StreamsGroupTopologyDescriptionUpdateRequest,
    UpdateStreamsGroupTopologyDescriptionRequest,
};

use kcoord_acl::KafkaPrincipal;

use crate::gateway::forward::Forwarder;
use crate::gateway::Gateway;
use crate::runtime::shards::shard_index;
use crate::state::ServerState;

/// Starts the client id of a request one node passes to another.
const MARKER: &str = "\u{1}kcoord-node\u{1}";

/// One client connection's links to the other kcoord nodes, opened on first use.
#[derive(Debug)]
pub struct NodeLinks {
    gateway: Arc<Gateway>,
    links: Mutex<HashMap<String, Arc<Forwarder>>>,
}

impl NodeLinks {
    pub fn new(gateway: Arc<Gateway>) -> NodeLinks {
        NodeLinks {
            gateway,
            links: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `principal` may pass requests on as another node: only then is the marker of a
    /// passed-on request taken as one (otherwise it is just part of the client id).
    pub fn trust(&self, principal: &kcoord_acl::KafkaPrincipal) -> bool {
        self.gateway.trusts_as_node(principal)
    }

    /// The link to the node whose broker listener is `listener`.
    pub fn to(&self, listener: &str) -> Arc<Forwarder> {
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(links.entry(listener.to_owned()).or_insert_with(|| {
            Arc::new(Forwarder::to_node(
                Arc::clone(&self.gateway),
                listener.to_owned(),
            ))
        }))
    }
}

/// Where to pass this request: the node that serves every group it names, when that is
/// another node, at its port for `broker` (the upstream broker the client's port stands for, so
/// that what that node forwards goes to the same broker: a group's coordinator), or at its
/// broker listener on the bootstrap port. `None` when this node serves some of them (a batch
/// naming groups of several nodes is split first: `split.rs`), or the request names none or
/// does not decode.
pub(crate) fn serving_node(
    server: &ServerState,
    api: ApiKey,
    version: i16,
    body: &Bytes,
    broker: Option<i32>,
) -> Option<String> {
    let gateway = server.gateway.as_ref()?;
    // Alone, this node serves every shard: no request is decoded to find out.
    if !gateway.has_other_nodes() {
        return None;
    }
    let ownership = gateway.ownership();
    let groups = named_groups(api, version, body.clone());
    let shards = server.coordinators.len();
    let mut nodes = groups
        .iter()
        .map(|g| node_serving(&ownership, g, shards, broker));
    let first = nodes.next()??;
    nodes
        .all(|node| node.as_ref() == Some(&first))
        .then_some(first)
}

/// Where another node serves `group` (of `shards` shards): at its port for `broker`, or at its
/// broker listener; `None` when this node serves it.
pub(crate) fn node_serving(
    ownership: &crate::gateway::nodes::Ownership,
    group: &str,
    shards: usize,
    broker: Option<i32>,
) -> Option<String> {
    let node = ownership.elsewhere(shard_index(group, shards))?;
    Some(match broker {
        None => node.listener.clone(),
        Some(id) => {
            let port = i64::from(node.port_start) + i64::from(id);
            format!("{}:{port}", node.host)
        }
    })
}

/// The groups a request about groups names (none when it names none or does not decode).
fn named_groups(api: ApiKey, version: i16, body: Bytes) -> Vec<String> {
    let groups = match api {
        ApiKey::StreamsGroupHeartbeat => {
            decode_request::<StreamsGroupHeartbeatRequest>(&body, version).map(|r| vec![r.group_id])
        }
        ApiKey::StreamsGroupTopologyDescriptionUpdate => {
            decode_request::<StreamsGroupTopologyDescriptionUpdateRequest>(&body, version)
                .map(|r| vec![r.group_id])
        }
        ApiKey::UpdateStreamsGroupTopologyDescription => {
            decode_request::<UpdateStreamsGroupTopologyDescriptionRequest>(&body, version)
                .map(|r| vec![r.group_id])
        }
        // The batches (StreamsGroupDescribe among them) and the offsets RPCs.
        _ => Some(crate::rpc::by_group::named_groups(api, version, body)),
    };
    groups.unwrap_or_default()
}

/// The header a request is passed on with: the client's host, principal and id behind the
/// marker. The principal is length-prefixed: a name the cluster authenticated may hold any
/// character, and must not be able to end early and make another principal.
pub(crate) fn passed_on(
    header: &RequestHeader,
    client_host: &str,
    principal: &KafkaPrincipal,
) -> RequestHeader {
    let client_id = header.client_id.as_deref().unwrap_or("");
    let principal = principal.to_string();
    RequestHeader {
        client_id: Some(format!(
            "{MARKER}{client_host}\u{1}{}:{principal}{client_id}",
            principal.len()
        )),
        ..header.clone()
    }
}

/// Who a passed-on request came from, as the passing node saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PassedOn {
    /// The client's host, as Kafka records a member's.
    pub client_host: String,
    pub principal: KafkaPrincipal,
}

impl PassedOn {
    /// The client's address for host ACLs (port 0: only the host counts).
    pub fn peer(&self) -> Option<std::net::SocketAddr> {
        let ip = self.client_host.strip_prefix('/')?.parse().ok()?;
        Some(std::net::SocketAddr::new(ip, 0))
    }
}

/// For a request another node passed on: the client's host and principal, with the client's
/// own id put back in `header`. `None` for a request straight from a client, or one whose
/// marker does not read.
pub(crate) fn take_marker(header: &mut RequestHeader) -> Option<PassedOn> {
    let marked = header.client_id.as_deref()?.strip_prefix(MARKER)?;
    let (host, rest) = marked.split_once('\u{1}')?;
    let (length, rest) = rest.split_once(':')?;
    let length: usize = length.parse().ok()?;
    let principal = KafkaPrincipal::parse(rest.get(..length)?).ok()?;
    let client_id = rest.get(length..)?.to_owned();
    let passed = PassedOn {
        client_host: host.to_owned(),
        principal,
    };
    header.client_id = Some(client_id);
    Some(passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_on_request_keeps_its_clients_id_host_and_principal() {
        let header = RequestHeader {
            client_id: Some("app-1-StreamThread-1-consumer".into()),
            correlation_id: 7,
            ..Default::default()
        };
        let alice = KafkaPrincipal::user("alice");
        let mut passed = passed_on(&header, "/10.0.0.9", &alice);
        assert_ne!(passed.client_id, header.client_id);
        let from = take_marker(&mut passed).unwrap();
        assert_eq!(
            (from.client_host.as_str(), &from.principal),
            ("/10.0.0.9", &alice)
        );
        assert_eq!(from.peer(), Some("10.0.0.9:0".parse().unwrap()));
        assert_eq!(passed, header);
        let mut direct = header.clone();
        assert_eq!(take_marker(&mut direct), None);
        assert_eq!(direct, header);
    }

    #[test]
    fn a_principal_holding_the_markers_separators_stays_whole() {
        let header = RequestHeader {
            client_id: Some("c".into()),
            ..Default::default()
        };
        let odd = KafkaPrincipal::user("eve\u{1}3:User:admin");
        let mut passed = passed_on(&header, "/10.0.0.9", &odd);
        let from = take_marker(&mut passed).unwrap();
        assert_eq!(from.principal, odd);
        assert_eq!(passed.client_id.as_deref(), Some("c"));
        // A marker whose length runs past the end, or is no number, is no marker.
        for forged in ["/h\u{1}99:User:a", "/h\u{1}x:User:a", "/h\u{1}User:a"] {
            let mut header = RequestHeader {
                client_id: Some(format!("{MARKER}{forged}")),
                ..Default::default()
            };
            assert_eq!(take_marker(&mut header), None, "{forged:?}");
        }
    }
}
