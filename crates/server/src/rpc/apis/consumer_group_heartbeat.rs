//! ConsumerGroupHeartbeat (key 68), v0-1, after Kafka's `KafkaApis.handleConsumerGroupHeartbeat`
//! (KIP-848 consumer groups, `group.protocol=consumer`).
//!
//! In Kafka's order: READ on the group (GROUP_AUTHORIZATION_FAILED); DESCRIBE on every topic of
//! SubscribedTopicNames when the list is not empty (one refused: TOPIC_AUTHORIZATION_FAILED for
//! the whole heartbeat, without a message, as Kafka answers it); then the group's coordinator
//! shard runs the heartbeat (request validation, join/leave, reconciliation; its errors become
//! ErrorCode and ErrorMessage). A SubscribedTopicRegex resolves only to the topics the
//! principal may DESCRIBE, as Kafka's `TopicRegexResolver` filters them with the context of the
//! member whose heartbeat resolved it.

use kcoord_coordinator::ConsumerHeartbeatContext;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kcoord_wire::ErrorCode;
use tracing::debug;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;
use crate::support::logging::{capped, log_per_group};

/// ConsumerGroupHeartbeat as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ConsumerGroupHeartbeat, 0, 1).asks(&[
    Check::new(AclOperation::Read, ResourceType::Group),
    Check::new(AclOperation::Describe, ResourceType::Topic),
]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: ConsumerGroupHeartbeatRequest,
    version: i16,
) -> ConsumerGroupHeartbeatResponse {
    if !authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id) {
        return error_response(ErrorCode::GROUP_AUTHORIZATION_FAILED, None);
    }
    if let Some(names) = req.subscribed_topic_names.as_ref() {
        let mut seen = std::collections::HashSet::new();
        let denied = names
            .iter()
            .filter(|n| seen.insert(n.as_str()))
            .any(|n| !authorize(ctx, AclOperation::Describe, ResourceType::Topic, n));
        if denied {
            return error_response(ErrorCode::TOPIC_AUTHORIZATION_FAILED, None);
        }
    }
    let may_describe =
        |topic: &str| authorize(ctx, AclOperation::Describe, ResourceType::Topic, topic);
    let heartbeat = ConsumerHeartbeatContext {
        client_id: ctx.header.client_id.as_deref().unwrap_or_default(),
        client_host: ctx.client_host,
        api_version: version,
        may_describe: &may_describe,
    };
    let shard = ctx.server.coordinators.for_group(&req.group_id);
    let outcome = shard
        .call(|shard, now| shard.consumer_group_heartbeat(&heartbeat, &req, now))
        .await;
    let (group, member) = (&req.group_id, &req.member_id);
    match outcome {
        Err(e) => {
            log_per_group!(
                warn, ctx.server.group_lines, "heartbeat failed", group,
                group = %capped(group), member = %capped(member), shard = shard.index(), error = %e,
                "consumer group heartbeat failed"
            );
            error_response(e.error_code(), None)
        }
        Ok(Err(e)) => {
            debug!(%group, %member, error = %e, "consumer group heartbeat refused");
            error_response(e.code, e.message)
        }
        Ok(Ok(response)) => response,
    }
}

fn error_response(code: ErrorCode, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse {
        error_code: code.code(),
        error_message: message,
        ..Default::default()
    }
}

/// The authorization matrix's rows of ConsumerGroupHeartbeat ([`crate::rpc::authorize`]'s matrix
/// tests): each request with the ACLs that allow it and what an allowed and a refused principal
/// get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(ConsumerGroupHeartbeat ("group") 1 on Broker, consumer_join(CONSUMER_JOINING),
            needs [(Read, Group, CONSUMER_JOINING), (Describe, Topic, TOPIC)],
            ConsumerGroupHeartbeatResponse => |r| code(r.error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(ConsumerGroupHeartbeat ("topics") 1 on Broker, consumer_join(CONSUMER_JOINING),
            also [(Read, Group, CONSUMER_JOINING)],
            needs [(Describe, Topic, TOPIC)],
            ConsumerGroupHeartbeatResponse => |r| code(r.error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
