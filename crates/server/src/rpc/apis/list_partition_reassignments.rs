//! ListPartitionReassignments (key 46), v0: the replica moves in progress (`kafka-reassign-
//! partitions --verify`). A standalone node neither lists nor serves it (its partitions live on
//! this node alone); a gateway forwards it to the cluster as it came and lists it at the versions
//! both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// ListPartitionReassignments as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ListPartitionReassignments, 0, 0).gateway_only();

crate::rpc::forwarded_only!();
