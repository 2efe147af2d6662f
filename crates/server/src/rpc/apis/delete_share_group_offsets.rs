//! DeleteShareGroupOffsets (key 92), v0-0: deleting a share group's offsets of a topic
//! (`kafka-share-groups --delete-offsets`). A standalone node neither lists nor serves it (kcoord
//! has no share groups); a gateway forwards it to the cluster as it came and lists it at the
//! versions both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// DeleteShareGroupOffsets as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DeleteShareGroupOffsets, 0, 0).gateway_only();

crate::rpc::forwarded_only!();
