//! AlterReplicaLogDirs (key 34), v1-2: moving replicas between a broker's log directories (`kafka-
//! reassign-partitions` with log directories). A standalone node neither lists nor serves it (it
//! does not move partitions between its log directories); a gateway forwards it to the cluster as
//! it came and lists it at the versions both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// AlterReplicaLogDirs as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AlterReplicaLogDirs, 1, 2).gateway_only();

crate::rpc::forwarded_only!();
