//! ElectLeaders (key 43), v0-2: electing partition leaders (`kafka-leader-election`). A standalone
//! node neither lists nor serves it (each of its partitions has one replica, its leader since the
//! partition was made); a gateway forwards it to the cluster as it came and lists it at the
//! versions both serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// ElectLeaders as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ElectLeaders, 0, 2).gateway_only();

crate::rpc::forwarded_only!();
