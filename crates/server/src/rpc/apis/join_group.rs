//! JoinGroup (key 11), v0-9, after Kafka's `KafkaApis.handleJoinGroupRequest` and
//! `GroupCoordinatorService.joinGroup`: READ on the group (else GROUP_AUTHORIZATION_FAILED),
//! then the group's shard runs the join (`kcoord_coordinator::classic`). A join that must wait
//! for the rest of the group (a rebalance) is parked on the shard and answered when the join
//! phase completes, as Kafka answers it from a future; the connection serves nothing else
//! meanwhile, as Kafka mutes a channel with a request in flight.
//!
//! v0 has no RebalanceTimeoutMs: the session timeout stands in for it (Kafka's
//! `JoinGroupRequest` does the same). Before v4 a new member is admitted at once; from v4 it
//! first gets MEMBER_ID_REQUIRED with its id (KIP-394). Before v7 ProtocolName cannot be null:
//! an error answer carries "".

use kcoord_coordinator::classic::{ClassicAnswer, JoinContext};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{JoinGroupRequest, JoinGroupResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// JoinGroup as kcoord serves it.
pub const RPC: Rpc =
    Rpc::new(ApiKey::JoinGroup, 0, 9).asks(&[Check::new(AclOperation::Read, ResourceType::Group)]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    mut req: JoinGroupRequest,
    version: i16,
) -> JoinGroupResponse {
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        return for_version(
            error_response(ErrorCode::GROUP_AUTHORIZATION_FAILED),
            version,
        );
    }
    if version == 0 {
        req.rebalance_timeout_ms = req.session_timeout_ms;
    }
    let join = JoinContext {
        client_id: ctx.header.client_id.as_deref().unwrap_or_default(),
        client_host: ctx.client_host,
        api_version: version,
    };
    let shard = ctx.server.coordinators.for_group(&req.group_id);
    let joined = shard
        .call_parked(
            |s, now| s.classic_join(join, &req, now),
            |answer| match answer {
                ClassicAnswer::Join(response) => Some(response),
                ClassicAnswer::Sync(_) => None,
            },
        )
        .await;
    let response = joined.unwrap_or_else(|e| error_response(e.error_code()));
    for_version(response, version)
}

/// Kafka's `JoinGroupRequest.getErrorResponse`.
fn error_response(code: ErrorCode) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: code.code(),
        generation_id: -1,
        ..Default::default()
    }
}

/// What `version` can carry: before v7 the protocol name is never null.
fn for_version(mut response: JoinGroupResponse, version: i16) -> JoinGroupResponse {
    if version < 7 && response.protocol_name.is_none() {
        response.protocol_name = Some(String::new());
    }
    response
}

/// The authorization matrix's rows of JoinGroup ([`crate::rpc::authorize`]'s matrix tests).
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(JoinGroup 9 on Broker, tests::join_request("", GROUP),
            needs [(Read, Group, GROUP)],
            JoinGroupResponse => |r| code(r.error_code),
            allowed "MEMBER_ID_REQUIRED", denied "GROUP_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
pub(crate) mod tests;
