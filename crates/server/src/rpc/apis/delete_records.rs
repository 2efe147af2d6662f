//! DeleteRecords (key 21), v0-2, after Kafka's `ReplicaManager.deleteRecords` and
//! `UnifiedLog.maybeIncrementLogStartOffset` (docs/kafka-data-plane-facts.md §7): the log
//! start offset moves to the requested offset (-1: the high watermark); beyond the high
//! watermark, or below -1, is OFFSET_OUT_OF_RANGE; a compact-only topic is POLICY_VIOLATION;
//! an internal topic INVALID_TOPIC_EXCEPTION. The answer's low watermark is the new log start
//! offset. Segments wholly below it are dropped at once (Kafka waits for its retention pass).
//! Kafka Streams purges repartition topics with it.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kcoord_wire::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DeleteRecords as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DeleteRecords, 0, 2)
    .asks(&[Check::new(AclOperation::Delete, ResourceType::Topic)]);

serve!(sync handle);

/// Kafka's `DeleteRecordsRequest.HIGH_WATERMARK`.
const HIGH_WATERMARK: i64 = -1;

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DeleteRecordsRequest,
    _version: i16,
) -> DeleteRecordsResponse {
    let image = ctx.server.topics.snapshot();
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let topic = image.get(&t.name);
            let allowed = authorize(ctx, AclOperation::Delete, ResourceType::Topic, &t.name);
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let result = if !allowed {
                        Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
                    } else {
                        match topic.and_then(|topic| ctx.server.partitions.get(topic.id, p.partition_index).map(|part| (topic, part))) {
                            None => Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                            Some((topic, _)) if topic.is_internal() => Err(ErrorCode::INVALID_TOPIC_EXCEPTION),
                            Some((_, part)) => {
                                let mut log = part.log();
                                if log.config().cleanup_compact && !log.config().cleanup_delete {
                                    Err(ErrorCode::POLICY_VIOLATION)
                                } else {
                                    let offset = if p.offset == HIGH_WATERMARK { log.high_watermark() } else { p.offset };
                                    let moved = log.delete_records_before(offset).map_err(|_| ErrorCode::OFFSET_OUT_OF_RANGE);
                                    if let Ok(start) = moved {
                                        info!(partition = %part.name(), log_start_offset = start, "DeleteRecords");
                                    }
                                    moved
                                }
                            }
                        }
                    };
                    DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark: result.unwrap_or(-1),
                        error_code: result.err().map_or(0, ErrorCode::code),
                        ..Default::default()
                    }
                })
                .collect();
            DeleteRecordsTopicResult {
                name: t.name.clone(),
                partitions,
                ..Default::default()
            }
        })
        .collect();
    DeleteRecordsResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

/// The authorization matrix's rows of DeleteRecords ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(DeleteRecords 2 on Broker, DeleteRecordsRequest {
                topics: vec![with(|t: &mut delete_records_request::DeleteRecordsTopic| {
                    t.name = TOPIC.into();
                    t.partitions = vec![delete_records_request::DeleteRecordsPartition {
                        partition_index: 0,
                        offset: 0,
                        ..Default::default()
                    }];
                })],
                timeout_ms: 1000,
                ..Default::default()
            },
            needs [(Delete, Topic, TOPIC)],
            DeleteRecordsResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED")]
}
