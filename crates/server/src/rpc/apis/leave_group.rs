//! LeaveGroup (key 13), v0-5, after Kafka's `KafkaApis.handleLeaveGroupRequest`: READ on the
//! group (GROUP_AUTHORIZATION_FAILED), then the classic group's shard removes each member named
//! (v3+: a batch, where an admin may name a static member by its instance id alone) and
//! rebalances the group. v0-2 name one member and carry its error as the response's error, as
//! Kafka's `LeaveGroupResponse` does for them.

use kcoord_coordinator::classic::LeavingMember;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::leave_group_response::MemberResponse;
use kcoord_wire::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// LeaveGroup as kcoord serves it.
pub const RPC: Rpc =
    Rpc::new(ApiKey::LeaveGroup, 0, 5).asks(&[Check::new(AclOperation::Read, ResourceType::Group)]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: LeaveGroupRequest,
    version: i16,
) -> LeaveGroupResponse {
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        return error_response(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    }
    let leaving: Vec<LeavingMember> = if version < 3 {
        vec![LeavingMember {
            member_id: req.member_id.clone(),
            group_instance_id: None,
        }]
    } else {
        req.members
            .iter()
            .map(|m| LeavingMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
            })
            .collect()
    };
    let shard = ctx.server.coordinators.for_group(&req.group_id);
    let left = shard
        .call(|s, now| s.classic_leave(&req.group_id, &leaving, now))
        .await;
    let members = match left {
        Ok(Ok(members)) => members,
        // Kafka answers a group it does not hold member by member.
        Ok(Err(ErrorCode::UNKNOWN_MEMBER_ID)) => {
            each_member(&leaving, ErrorCode::UNKNOWN_MEMBER_ID)
        }
        Ok(Err(code)) => return error_response(code),
        Err(e) => return error_response(e.error_code()),
    };
    let mut response = LeaveGroupResponse {
        members,
        ..Default::default()
    };
    if version < 3 {
        // One member, whose error is the response's.
        response.error_code = response.members.first().map_or(0, |m| m.error_code);
        response.members.clear();
    }
    response
}

fn each_member(leaving: &[LeavingMember], code: ErrorCode) -> Vec<MemberResponse> {
    leaving
        .iter()
        .map(|m| MemberResponse {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            error_code: code.code(),
            ..Default::default()
        })
        .collect()
}

fn error_response(code: ErrorCode) -> LeaveGroupResponse {
    LeaveGroupResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of LeaveGroup ([`crate::rpc::authorize`]'s matrix tests).
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(LeaveGroup 5 on Broker, LeaveGroupRequest {
                group_id: GROUP.into(),
                members: vec![kcoord_wire::messages::leave_group_request::MemberIdentity {
                    member_id: "m".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            needs [(Read, Group, GROUP)],
            // A refusal is the response's error; an unknown member is the member's.
            LeaveGroupResponse => |r| code(r.members.first().map_or(r.error_code, |m| m.error_code)),
            allowed "UNKNOWN_MEMBER_ID", denied "GROUP_AUTHORIZATION_FAILED")]
}
