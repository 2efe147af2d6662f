//! OffsetForLeaderEpoch (key 23), v2-4, after Kafka's `Partition.lastOffsetForLeaderEpoch`
//! with one leader epoch per partition, which never changes on a single node
//! (docs/kafka-data-plane-facts.md §6): the current epoch ends at the log end offset; a later
//! epoch, or -1, has no end (-1, -1, no error); an epoch below -1 ends where the current one
//! starts, the log start offset. The replica id is ignored, as Kafka ignores it.

use kcoord_wire::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kcoord_wire::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kcoord_wire::ErrorCode;

use crate::authz::{authorize, AclOperation, ResourceType};
use crate::state::RequestContext;

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
        crate::handlers::broker_registration::KAFKA_CLUSTER,
    );
    let topics = req
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
            OffsetForLeaderTopicResult {
                topic: t.topic.clone(),
                partitions,
                ..Default::default()
            }
        })
        .collect();
    OffsetForLeaderEpochResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}
