//! OffsetForLeaderEpoch (key 23), v2-4, after Kafka's `Partition.lastOffsetForLeaderEpoch`
//! with one leader epoch per partition, which never changes on a single node
//! (docs/kafka-data-plane-facts.md §6): the current epoch ends at the log end offset; a later
//! epoch, or -1, has no end (-1, -1, no error); an epoch below -1 ends where the current one
//! starts, the log start offset. The replica id is ignored, as Kafka ignores it.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kcoord_wire::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// OffsetForLeaderEpoch as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::OffsetForLeaderEpoch, 2, 4).asks(&[
    Check::new(AclOperation::Describe, ResourceType::Topic),
    Check::new(AclOperation::ClusterAction, ResourceType::Cluster),
]);

serve!(sync handle);

pub fn handle(
    ctx: &RequestContext<'_>,
    req: OffsetForLeaderEpochRequest,
    _version: i16,
) -> OffsetForLeaderEpochResponse {
    let image = ctx.server.topics.snapshot();
    // CLUSTER_ACTION on the cluster (a follower broker) allows every topic.
    let cluster_action = authorize(
        ctx,
        AclOperation::ClusterAction,
        ResourceType::Cluster,
        crate::rpc::apis::broker_registration::KAFKA_CLUSTER,
    );
    let (topics, refused): (Vec<_>, Vec<_>) = req
        .topics
        .iter()
        .map(|t| {
            let topic = image.get(&t.topic);
            let allowed = cluster_action
                || authorize(ctx, AclOperation::Describe, ResourceType::Topic, &t.topic);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut answer = EpochEndOffset {
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                        ..Default::default()
                    };
                    let partition =
                        topic.and_then(|topic| ctx.server.partitions.get(topic.id, p.partition));
                    match (allowed, partition) {
                        (false, _) => {
                            answer.error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()
                        }
                        (true, None) => {
                            answer.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
                        }
                        (true, Some(part)) => {
                            let current = p.current_leader_epoch;
                            if current >= 0 && current < part.leader_epoch {
                                answer.error_code = ErrorCode::FENCED_LEADER_EPOCH.code();
                            } else if current > part.leader_epoch {
                                answer.error_code = ErrorCode::UNKNOWN_LEADER_EPOCH.code();
                            } else if p.leader_epoch == part.leader_epoch {
                                answer.leader_epoch = part.leader_epoch;
                                answer.end_offset = part.log().log_end_offset();
                            } else if p.leader_epoch < -1 {
                                answer.leader_epoch = p.leader_epoch;
                                answer.end_offset = part.log().log_start_offset();
                            }
                        }
                    }
                    answer
                })
                .collect();
            let answer = OffsetForLeaderTopicResult {
                topic: t.topic.clone(),
                partitions,
                ..Default::default()
            };
            (allowed, answer)
        })
        // Kafka's `partitionByAuthorized`: the refused topics after the others.
        .partition(|(allowed, _)| *allowed);
    let topics = topics.into_iter().chain(refused).map(|(_, t)| t).collect();
    OffsetForLeaderEpochResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

/// The authorization matrix's rows of OffsetForLeaderEpoch ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(OffsetForLeaderEpoch ("topic") 4 on Broker, OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics: vec![with(|t: &mut offset_for_leader_epoch_request::OffsetForLeaderTopic| {
                    t.topic = TOPIC.into();
                    t.partitions = vec![offset_for_leader_epoch_request::OffsetForLeaderPartition {
                        current_leader_epoch: -1,
                        ..Default::default()
                    }];
                })],
                ..Default::default()
            },
            needs [(Describe, Topic, TOPIC)],
            OffsetForLeaderEpochResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(OffsetForLeaderEpoch ("cluster") 4 on Broker, OffsetForLeaderEpochRequest {
                replica_id: 2,
                topics: vec![with(|t: &mut offset_for_leader_epoch_request::OffsetForLeaderTopic| {
                    t.topic = TOPIC.into();
                    t.partitions = vec![offset_for_leader_epoch_request::OffsetForLeaderPartition {
                        current_leader_epoch: -1,
                        ..Default::default()
                    }];
                })],
                ..Default::default()
            },
            needs [(ClusterAction, Cluster, CLUSTER)],
            OffsetForLeaderEpochResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kcoord_wire::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::authorize::{AclOperation, ResourceType};
    use crate::rpc::testing::{create_topic, running_with_authorizer, Ctx};
    use crate::security::Authorizer;

    /// Allows DESCRIBE on the topic "b" only.
    #[derive(Debug)]
    struct OnlyB;

    impl Authorizer for OnlyB {
        fn authorize(
            &self,
            _: &crate::security::Requester<'_>,
            operation: AclOperation,
            resource: ResourceType,
            name: &str,
        ) -> bool {
            (operation, resource, name) == (AclOperation::Describe, ResourceType::Topic, "b")
        }
    }

    #[tokio::test]
    async fn refused_topics_come_last() {
        let node = running_with_authorizer("", Arc::new(OnlyB));
        create_topic(&node.state, "a", 1).await;
        create_topic(&node.state, "b", 1).await;
        let topic = |name: &str| OffsetForLeaderTopic {
            topic: name.into(),
            partitions: vec![OffsetForLeaderPartition {
                current_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        };
        let req = OffsetForLeaderEpochRequest {
            replica_id: -1,
            topics: vec![topic("a"), topic("b")],
            ..Default::default()
        };
        let c = Ctx::new(&node.state, ListenerKind::Broker);
        let resp = handle(&c.ctx(&node.state), req, 4);
        let answers: Vec<(&str, i16)> = resp
            .topics
            .iter()
            .map(|t| (t.topic.as_str(), t.partitions[0].error_code))
            .collect();
        assert_eq!(
            answers,
            vec![
                ("b", ErrorCode::NONE.code()),
                ("a", ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()),
            ]
        );
    }
}
