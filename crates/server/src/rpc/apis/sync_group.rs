//! SyncGroup (key 14), v0-5, after Kafka's `KafkaApis.handleSyncGroupRequest`: from v5
//! ProtocolType and ProtocolName are mandatory (else INCONSISTENT_GROUP_PROTOCOL), then READ
//! on the group (GROUP_AUTHORIZATION_FAILED), then the group's shard. A follower's SyncGroup
//! waits, parked on the shard, until the leader's assignment is written; then every member
//! gets its part.

use kcoord_coordinator::classic::ClassicAnswer;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{SyncGroupRequest, SyncGroupResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// SyncGroup as kcoord serves it.
pub const RPC: Rpc =
    Rpc::new(ApiKey::SyncGroup, 0, 5).asks(&[Check::new(AclOperation::Read, ResourceType::Group)]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: SyncGroupRequest,
    version: i16,
) -> SyncGroupResponse {
    if version >= 5 && (req.protocol_type.is_none() || req.protocol_name.is_none()) {
        return error_response(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
    }
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        return error_response(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    }
    let shard = ctx.server.coordinators.for_group(&req.group_id);
    shard
        .call_parked(
            |s, now| s.classic_sync(&req, now),
            |answer| match answer {
                ClassicAnswer::Sync(response) => Some(response),
                ClassicAnswer::Join(_) => None,
            },
        )
        .await
        .unwrap_or_else(|e| error_response(e.error_code()))
}

fn error_response(code: ErrorCode) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of SyncGroup ([`crate::rpc::authorize`]'s matrix tests).
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(SyncGroup 5 on Broker, SyncGroupRequest {
                group_id: GROUP.into(),
                member_id: "m".into(),
                protocol_type: Some("consumer".into()),
                protocol_name: Some("range".into()),
                ..Default::default()
            },
            needs [(Read, Group, GROUP)],
            SyncGroupResponse => |r| code(r.error_code),
            allowed "UNKNOWN_MEMBER_ID", denied "GROUP_AUTHORIZATION_FAILED")]
}
