//! DescribeShareGroupOffsets (key 90), v0-1: a share group's start offsets (`kafka-share-groups
//! --describe --offsets`). A standalone node neither lists nor serves it (kcoord has no share
//! groups); a gateway forwards it to the cluster as it came and lists it at the versions both serve
//! (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// DescribeShareGroupOffsets as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeShareGroupOffsets, 0, 1).gateway_only();

crate::rpc::forwarded_only!();
