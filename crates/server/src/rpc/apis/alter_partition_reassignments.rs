//! AlterPartitionReassignments (key 45), v0-1: moving partition replicas between brokers (`kafka-
//! reassign-partitions --execute`). A standalone node neither lists nor serves it (its partitions
//! live on this node alone); a gateway forwards it to the cluster as it came and lists it at the
//! versions both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// AlterPartitionReassignments as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::AlterPartitionReassignments, 0, 1).gateway_only();

crate::rpc::forwarded_only!();
