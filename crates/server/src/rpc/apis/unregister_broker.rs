//! UnregisterBroker (key 64), v0: removing a broker's registration (`kafka-cluster unregister`). A
//! standalone node neither lists nor serves it (it has no such way to drop a broker's
//! registration); a gateway forwards it to the cluster as it came and lists it at the versions both
//! serve (docs/gateway.md).

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// UnregisterBroker as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::UnregisterBroker, 0, 0).gateway_only();

crate::rpc::forwarded_only!();
