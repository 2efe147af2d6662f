//! UpdateFeatures (key 57), v0-2: changing finalized feature levels (`kafka-features upgrade`,
//! `downgrade`, `disable`). A standalone node neither lists nor serves it (its feature levels are
//! fixed: docs/differences.md, "Versions and features"); a gateway forwards it to the cluster as it
//! came and lists it at the versions both serve (docs/gateway.md), then learns the cluster
//! again each second for a few seconds, since its own ApiVersions lists the cluster's features.

use kcoord_wire::api::ApiKey;

use crate::rpc::Rpc;

/// UpdateFeatures as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::UpdateFeatures, 0, 2)
    .gateway_only()
    .refreshed_in_gateway();

crate::rpc::forwarded_only!();
