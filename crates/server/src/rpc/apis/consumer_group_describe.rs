//! ConsumerGroupDescribe (key 69), v0-1, after Kafka's `KafkaApis.handleConsumerGroupDescribe`.
//!
//! A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED; each other group is
//! described by the shard that owns it (an empty id is INVALID_GROUP_ID, an unknown one
//! GROUP_ID_NOT_FOUND "Group X not found.", a streams group "Group X is not a consumer
//! group."). AuthorizedOperations, when asked for, is what the authorizer grants on the group.
//! With an authorizer, as in Kafka, a group whose members' assignment or target assignment
//! holds a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED ("The
//! group has described topic(s) that the client is not authorized to describe.") with no
//! members. Answers stay in request order (Kafka lists the refused groups first).

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::consumer_group_describe_response::DescribedGroup;
use kcoord_wire::messages::{ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse};
use kcoord_wire::{Encodable, ErrorCode};

use crate::rpc::authorize::{
    authorize, authorized_operations, AclOperation, ResourceType, TopicDescribeVerdicts,
};
use crate::rpc::groups::{per_group, Distinct, RepeatBudget};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::shards::ShardError;
use crate::state::RequestContext;

/// ConsumerGroupDescribe as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ConsumerGroupDescribe, 0, 1).asks(&[
    Check::new(AclOperation::Describe, ResourceType::Group),
    Check::new(AclOperation::Describe, ResourceType::Topic),
]);

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: ConsumerGroupDescribeRequest,
    version: i16,
) -> ConsumerGroupDescribeResponse {
    let distinct = Distinct::of(&req.group_ids);
    let authorized: Vec<bool> = distinct
        .ids
        .iter()
        .map(|id| authorize(ctx, AclOperation::Describe, ResourceType::Group, id))
        .collect();
    let to_describe: Vec<String> = distinct
        .ids
        .iter()
        .zip(&authorized)
        .filter(|(id, ok)| **ok && !id.is_empty())
        .map(|(id, _)| id.clone())
        .collect();
    let mut answers = per_group(&ctx.server.coordinators, &to_describe, |shard, _, ids| {
        kcoord_coordinator::Outcome::answer(shard.describe_consumer_groups(ids))
    })
    .await
    .into_iter();
    let mut groups: Vec<DescribedGroup> = distinct
        .ids
        .iter()
        .zip(authorized)
        .map(|(id, authorized)| {
            if !authorized {
                return error_group(id, ErrorCode::GROUP_AUTHORIZATION_FAILED);
            }
            if id.is_empty() {
                return error_group(id, ErrorCode::INVALID_GROUP_ID);
            }
            let mut group = match answers.next().unwrap_or(Err(ShardError::Failed)) {
                Ok(group) => group,
                Err(e) => error_group(id, e.error_code()),
            };
            if group.error_code == ErrorCode::NONE.code() && req.include_authorized_operations {
                group.authorized_operations =
                    authorized_operations(ctx, ResourceType::Group, &group.group_id);
            }
            group
        })
        .collect();
    if ctx.server.authorizer.is_some() {
        refuse_undescribable_topics(ctx, &mut groups);
    }
    let groups = distinct.expand(
        groups,
        &mut RepeatBudget::default(),
        |group| group.compute_size(version).unwrap_or(usize::MAX),
        |id| error_group(id, ErrorCode::INVALID_REQUEST),
    );
    ConsumerGroupDescribeResponse {
        throttle_time_ms: 0,
        groups,
        ..Default::default()
    }
}

/// Kafka's last check, made only with an authorizer: DESCRIBE on every topic of the members'
/// assignments and target assignments (asked once per name).
fn refuse_undescribable_topics(ctx: &RequestContext<'_>, groups: &mut [DescribedGroup]) {
    let mut verdicts = TopicDescribeVerdicts::default();
    for group in groups.iter_mut() {
        let names = group.members.iter().flat_map(|m| {
            m.assignment
                .topic_partitions
                .iter()
                .chain(&m.target_assignment.topic_partitions)
                .map(|t| &t.topic_name)
        });
        let denied = !verdicts.all_describable(ctx, names);
        if denied {
            *group = DescribedGroup {
                error_message: Some(
                    "The group has described topic(s) that the client is not authorized to describe."
                        .to_owned(),
                ),
                ..error_group(&group.group_id, ErrorCode::TOPIC_AUTHORIZATION_FAILED)
            };
        }
    }
}

fn error_group(group_id: &str, code: ErrorCode) -> DescribedGroup {
    DescribedGroup {
        group_id: group_id.to_owned(),
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of ConsumerGroupDescribe ([`crate::rpc::authorize`]'s matrix
/// tests).
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(ConsumerGroupDescribe ("group") 0 on Broker, consumer_describe(),
            needs [(Describe, Group, CONSUMER), (Describe, Topic, TOPIC)],
            ConsumerGroupDescribeResponse => |r| refusal(r.groups[0].error_code, r.groups[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(ConsumerGroupDescribe ("topics") 0 on Broker, consumer_describe(),
            also [(Describe, Group, CONSUMER)],
            needs [(Describe, Topic, TOPIC)],
            ConsumerGroupDescribeResponse => |r| refusal(r.groups[0].error_code, r.groups[0].error_message.as_deref()),
            allowed "NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: The group has described topic(s) that the client is not authorized to describe."),
    ]
}

#[cfg(test)]
mod tests;
