//! StreamsGroupTopologyDescriptionUpdate (key 93), v0: Kafka 4.4's push (KIP-1331 as merged).
//! A member asked by a heartbeat (v1, TopologyDescriptionRequired) pushes its full topology
//! description for its topology epoch; the coordinator maps that epoch to the group's current
//! TopologyDescriptionId and hands the description to the same plugin method as key 95.
//!
//! In order (`topology_push.rs` explains the shared steps):
//! 1. READ on the GROUP, else GROUP_AUTHORIZATION_FAILED;
//! 2. a plugin is configured, else UNSUPPORTED_VERSION (and not in ApiVersions);
//! 3. an empty GroupId or MemberId is INVALID_REQUEST (as in Kafka);
//! 4. COORDINATOR_LOAD_IN_PROGRESS while the group's shard is loading;
//! 5. GROUP_ID_NOT_FOUND for an unknown group;
//! 6. UNKNOWN_MEMBER_ID when the member is not in the group; INVALID_REQUEST when
//!    TopologyEpoch is not the group's current topology epoch (as in Kafka, which checks the
//!    member first) and when the description is malformed;
//! 7. `set_topology(group, the group's current TopologyDescriptionId, description)`: NONE on
//!    success; the plugin's InvalidRequest → INVALID_REQUEST; TooLarge →
//!    TOPOLOGY_DESCRIPTION_UPDATE_FAILED (135) with a message saying it was too large (Kafka
//!    4.4 clients do not know 137); any other error, a panic or the timeout → 135; each logged
//!    at WARN.

use kcoord_coordinator::description;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::AclOperation;
use crate::rpc::authorize::ResourceType;
use crate::rpc::topology_push::{self, Dialect, Refusal};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// StreamsGroupTopologyDescriptionUpdate as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::StreamsGroupTopologyDescriptionUpdate, 0, 0)
    .asks(&[Check::new(AclOperation::Read, ResourceType::Group)])
    .only_with_topology_plugin()
    .local_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: StreamsGroupTopologyDescriptionUpdateRequest,
    _version: i16,
) -> StreamsGroupTopologyDescriptionUpdateResponse {
    let (error_code, error_message) = Refusal::response_fields(push(ctx, req).await);
    StreamsGroupTopologyDescriptionUpdateResponse {
        throttle_time_ms: 0,
        error_code,
        error_message,
        ..Default::default()
    }
}

async fn push(
    ctx: &RequestContext<'_>,
    req: StreamsGroupTopologyDescriptionUpdateRequest,
) -> Result<(), Refusal> {
    topology_push::admit(ctx, &req.group_id, Some(&req.member_id))?;
    let facts = topology_push::group_facts(ctx, &req.group_id, Some(&req.member_id)).await?;
    if !facts.member_known {
        return Err(Refusal::new(
            ErrorCode::UNKNOWN_MEMBER_ID,
            format!(
                "Member {} is not a member of group {}.",
                req.member_id, req.group_id
            ),
        ));
    }
    if facts.topology_epoch != Some(req.topology_epoch) {
        let current = facts
            .topology_epoch
            .map_or_else(|| "none".to_owned(), |e| e.to_string());
        return Err(Refusal::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "Topology epoch {} does not match the group's current topology epoch {current}.",
                req.topology_epoch
            ),
        ));
    }
    // Every group gets an id when it is created; only a group replayed from records written
    // before KIP-1331 lacks one, and then no heartbeat has asked for this push.
    let Some(id) = facts.topology_description_id else {
        return Err(Refusal::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "Streams group {} has no topology description id yet.",
                req.group_id
            ),
        ));
    };
    let description = description::from_kafka_push(&req.topology_description)?;
    topology_push::store(ctx, Dialect::Kafka44, &req.group_id, id, description).await
}

/// The authorization matrix's rows of StreamsGroupTopologyDescriptionUpdate ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        // KIP-1331's pushes, READ (not ALTER) on the group; the node has the `memory` plugin.
        row!(StreamsGroupTopologyDescriptionUpdate 0 on Broker, StreamsGroupTopologyDescriptionUpdateRequest {
                group_id: STREAMS.into(),
                member_id: MEMBER.into(),
                topology_epoch: 1,
                ..Default::default()
            },
            needs [(Read, Group, STREAMS)],
            StreamsGroupTopologyDescriptionUpdateResponse => |r| code(r.error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
