//! Heartbeat (key 12), v0-4, after Kafka's `KafkaApis.handleHeartbeatRequest`: READ on the
//! group (GROUP_AUTHORIZATION_FAILED), then the classic group's shard: the member's session
//! starts again, and REBALANCE_IN_PROGRESS tells it to rejoin. Nothing is written.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{HeartbeatRequest, HeartbeatResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// Heartbeat as kcoord serves it.
pub const RPC: Rpc =
    Rpc::new(ApiKey::Heartbeat, 0, 4).asks(&[Check::new(AclOperation::Read, ResourceType::Group)]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: HeartbeatRequest,
    _version: i16,
) -> HeartbeatResponse {
    let code = if authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        let shard = ctx.server.coordinators.for_group(&req.group_id);
        shard
            .call(|s, now| s.classic_heartbeat(&req, now))
            .await
            .unwrap_or_else(|e| e.error_code())
    } else {
        ErrorCode::GROUP_AUTHORIZATION_FAILED
    };
    HeartbeatResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of Heartbeat ([`crate::rpc::authorize`]'s matrix tests).
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(Heartbeat 4 on Broker, HeartbeatRequest {
                group_id: GROUP.into(),
                member_id: "m".into(),
                ..Default::default()
            },
            needs [(Read, Group, GROUP)],
            HeartbeatResponse => |r| code(r.error_code),
            allowed "UNKNOWN_MEMBER_ID", denied "GROUP_AUTHORIZATION_FAILED")]
}
