//! UpdateStreamsGroupTopologyDescription (key 95), v0: the specification's push (KIP-1331).
//! A member asked by a heartbeat (v2, TopologyDescriptionId) pushes its full topology
//! description under that id; the coordinator hands it to the topology description plugin.
//!
//! In order (`topology_push.rs` explains the shared steps):
//! 1. READ on the GROUP, else GROUP_AUTHORIZATION_FAILED;
//! 2. a plugin is configured, else UNSUPPORTED_VERSION (the RPC is then also missing from
//!    ApiVersions);
//! 3. an empty GroupId is INVALID_REQUEST;
//! 4. COORDINATOR_LOAD_IN_PROGRESS while the group's shard is loading;
//! 5. GROUP_ID_NOT_FOUND for an unknown group;
//! 6. INVALID_REQUEST for the all-zero TopologyDescriptionId (a uuid cannot be null on the
//!    wire, so all-zero is "null", and a push must name an id) and for a malformed description;
//! 7. `set_topology(group, the id from the request unchanged, description)`: NONE on success;
//!    the plugin's InvalidRequest → INVALID_REQUEST, TooLarge → TOPOLOGY_DESCRIPTION_TOO_LARGE
//!    (137), any other error, a panic or the timeout → TOPOLOGY_DESCRIPTION_UPDATE_FAILED
//!    (135), each logged at WARN.
//!
//! The id is not compared with the group's current one: the plugin decides what a push for a
//! superseded id means (the `memory` plugin ignores it).

use kcoord_coordinator::description;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    UpdateStreamsGroupTopologyDescriptionRequest, UpdateStreamsGroupTopologyDescriptionResponse,
};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::AclOperation;
use crate::rpc::authorize::ResourceType;
use crate::rpc::topology_push::{self, Dialect, Refusal};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// UpdateStreamsGroupTopologyDescription as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::UpdateStreamsGroupTopologyDescription, 0, 0)
    .asks(&[Check::new(AclOperation::Read, ResourceType::Group)])
    .only_with_topology_plugin()
    .local_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: UpdateStreamsGroupTopologyDescriptionRequest,
    _version: i16,
) -> UpdateStreamsGroupTopologyDescriptionResponse {
    let (error_code, error_message) = Refusal::response_fields(push(ctx, req).await);
    UpdateStreamsGroupTopologyDescriptionResponse {
        throttle_time_ms: 0,
        error_code,
        error_message,
        ..Default::default()
    }
}

async fn push(
    ctx: &RequestContext<'_>,
    req: UpdateStreamsGroupTopologyDescriptionRequest,
) -> Result<(), Refusal> {
    topology_push::admit(ctx, &req.group_id, None)?;
    topology_push::group_facts(ctx, &req.group_id, None).await?;
    if req.topology_description_id.is_nil() {
        return Err(Refusal::new(
            ErrorCode::INVALID_REQUEST,
            "TopologyDescriptionId must not be null (the all-zero uuid).",
        ));
    }
    let description = description::from_spec_push(&req.topology_description)?;
    topology_push::store(
        ctx,
        Dialect::Specification,
        &req.group_id,
        req.topology_description_id,
        description,
    )
    .await
}

/// The authorization matrix's rows of UpdateStreamsGroupTopologyDescription ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(UpdateStreamsGroupTopologyDescription 0 on Broker, UpdateStreamsGroupTopologyDescriptionRequest {
                group_id: STREAMS.into(),
                topology_description_id: uuid::Uuid::from_u128(1),
                ..Default::default()
            },
            needs [(Read, Group, STREAMS)],
            UpdateStreamsGroupTopologyDescriptionResponse => |r| code(r.error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
