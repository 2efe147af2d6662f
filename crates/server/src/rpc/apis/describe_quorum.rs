//! DescribeQuorum (key 55), v0-2: the metadata quorum's voters and observers (`kafka-metadata-
//! quorum`). A standalone node neither lists nor serves it (its metadata log is one node's, not a
//! Raft quorum); a gateway forwards it to the cluster as it came and lists it at the versions both
//! serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// DescribeQuorum as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeQuorum, 0, 2).gateway_only();

crate::rpc::forwarded_only!();
