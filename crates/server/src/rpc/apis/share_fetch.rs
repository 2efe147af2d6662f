//! ShareFetch (key 78), v1-2: a share consumer's fetch of records it acquires. A standalone node
//! neither lists nor serves it (kcoord has no share groups); a gateway forwards it to the cluster
//! and lists it at the versions both serve, with the leaders its answer names (when one moved)
//! mapped onto kcoord's ports, as Produce and Fetch answers are (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// ShareFetch as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ShareFetch, 1, 2)
    .gateway_only()
    .rewritten_in_gateway();

crate::rpc::forwarded_only!();
