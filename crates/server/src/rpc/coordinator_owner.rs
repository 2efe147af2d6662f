//! In gateway mode, FindCoordinator's answer is the cluster's with its coordinator placed at a
//! kcoord node: for a group, the node serving the group's coordinator shard (kcoord nodes share
//! the shards, docs/gateway.md), on the port standing for the cluster's coordinator of the
//! group. A streams group's requests are then served by the node holding its shard, and a
//! classic or consumer group's are forwarded by that node to the cluster's coordinator. A
//! transactional id's coordinator is placed at this node.

use bytes::Bytes;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::FindCoordinatorRequest;
use kcoord_wire::Decodable;

use crate::gateway::forward::Change;
use crate::gateway::mapping::{self, Endpoints};
use crate::runtime::shards::shard_index;
use crate::state::RequestContext;

/// FindCoordinator's key type of groups (the only one before v1).
const GROUP: i8 = 0;

/// How the cluster's answer to this request is changed: FindCoordinator's coordinators placed
/// at their shards' nodes, any other answer's brokers at this node.
pub(crate) fn change(ctx: &RequestContext<'_>, api: ApiKey, version: i16, body: &Bytes) -> Change {
    let Some(gateway) = ctx.server.gateway.as_ref() else {
        return Change::Brokers;
    };
    if api != ApiKey::FindCoordinator {
        return Change::Brokers;
    }
    let Ok(request) = FindCoordinatorRequest::decode(&mut body.clone(), version) else {
        // The cluster answers it as Kafka does; its brokers are still ours to place.
        return Change::Brokers;
    };
    let ownership = gateway.ownership();
    let here = gateway.endpoints().clone();
    let shards = ctx.server.coordinators.len();
    let groups = request.key_type == GROUP;
    let key = request.key;
    Change::With(Box::new(move |body| {
        let endpoints = |key: &str| -> Endpoints {
            let owner = groups
                .then(|| ownership.endpoints_of(shard_index(key, shards)))
                .flatten();
            match owner {
                Some(node) => Endpoints {
                    host: node.host.clone(),
                    port_start: node.port_start,
                },
                None => here.clone(),
            }
        };
        mapping::rewrite_coordinators(version, body, &key, &endpoints).map_err(|e| e.to_string())
    }))
}
