//! AlterShareGroupOffsets (key 91), v0-0: resetting a share group's start offsets
//! (`kafka-share-groups --reset-offsets`). A standalone node neither lists nor serves it (kcoord
//! has no share groups); a gateway forwards it to the cluster as it came and lists it at the
//! versions both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// AlterShareGroupOffsets as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AlterShareGroupOffsets, 0, 0).gateway_only();

crate::rpc::forwarded_only!();
