//! ShareGroupHeartbeat (key 76), v1-1: a share consumer's heartbeat to its share group (KIP-932). A
//! standalone node neither lists nor serves it (kcoord has no share groups); a gateway forwards it
//! to the cluster as it came and lists it at the versions both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// ShareGroupHeartbeat as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ShareGroupHeartbeat, 1, 1).gateway_only();

crate::rpc::forwarded_only!();
