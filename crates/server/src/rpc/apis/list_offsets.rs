//! ListOffsets (key 2), v1-11, after Kafka's `KafkaApis.handleListOffsetRequest` and
//! `UnifiedLog.fetchOffsetByTimestamp` without tiered storage
//! (docs/kafka-data-plane-facts.md §5): LATEST is the high watermark, or with READ_COMMITTED
//! the last stable offset; EARLIEST and EARLIEST_LOCAL the log start offset, MAX_TIMESTAMP
//! the first record with the largest timestamp, a timestamp the first record at or after it
//! (offset -1 and timestamp -1 when there is none, or, as Kafka's `Partition`
//! `lastFetchableOffset` bounds it, when it is at or past the last stable offset for
//! READ_COMMITTED, the high watermark otherwise); LATEST_TIERED and
//! EARLIEST_PENDING_UPLOAD find nothing. Each special value needs the version that introduced
//! it (UNSUPPORTED_VERSION otherwise); a partition named twice is INVALID_REQUEST, once.

use std::collections::HashSet;

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kcoord_wire::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kcoord_wire::ErrorCode;
use tracing::warn;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::catalog::TopicImage;
use crate::runtime::partitions::Partition;
use crate::state::RequestContext;

/// ListOffsets as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ListOffsets, 1, 11)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Topic)]);

serve!(sync handle);

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;
const EARLIEST_PENDING_UPLOAD: i64 = -6;
/// Kafka's `IsolationLevel.READ_COMMITTED`.
const READ_COMMITTED: i8 = 1;

/// The version that introduced each special timestamp (Kafka's `timestampMinSupportedVersion`).
fn min_version(timestamp: i64) -> Option<i16> {
    match timestamp {
        t if t >= 0 => Some(1),
        LATEST | EARLIEST => Some(1),
        MAX_TIMESTAMP => Some(7),
        EARLIEST_LOCAL => Some(8),
        LATEST_TIERED => Some(9),
        EARLIEST_PENDING_UPLOAD => Some(11),
        _ => None,
    }
}

pub fn handle(
    ctx: &RequestContext<'_>,
    req: ListOffsetsRequest,
    version: i16,
) -> ListOffsetsResponse {
    let image = ctx.server.topics.snapshot();
    let mut seen = HashSet::new();
    let duplicates: HashSet<(String, i32)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.clone(), p.partition_index))
        })
        .filter(|k| !seen.insert(k.clone()))
        .collect();
    let mut answered = HashSet::new();
    // Kafka's `partitionByAuthorized`: the refused topics are answered after the others, in
    // request order, every partition they list TOPIC_AUTHORIZATION_FAILED (repeats too: they
    // never reach the duplicate check).
    let (topics, refused): (Vec<_>, Vec<_>) = req
        .topics
        .iter()
        .map(|t| {
            if !authorize(ctx, AclOperation::Describe, ResourceType::Topic, &t.name) {
                return (false, refused_topic(t));
            }
            let topic = image.get(&t.name);
            let partitions = t
                .partitions
                .iter()
                .filter(|p| answered.insert((t.name.clone(), p.partition_index)))
                .map(|p| {
                    let duplicate = duplicates.contains(&(t.name.clone(), p.partition_index));
                    let committed = req.isolation_level == READ_COMMITTED;
                    partition_answer(ctx, topic, p, duplicate, version, committed)
                })
                .collect();
            let answer = ListOffsetsTopicResponse {
                name: t.name.clone(),
                partitions,
                ..Default::default()
            };
            (true, answer)
        })
        .partition(|(allowed, _)| *allowed);
    ListOffsetsResponse {
        throttle_time_ms: 0,
        topics: topics.into_iter().chain(refused).map(|(_, t)| t).collect(),
        ..Default::default()
    }
}

/// A topic the principal may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED on every partition it
/// lists.
fn refused_topic(
    t: &kcoord_wire::messages::list_offsets_request::ListOffsetsTopic,
) -> ListOffsetsTopicResponse {
    let partitions = t
        .partitions
        .iter()
        .map(|p| ListOffsetsPartitionResponse {
            partition_index: p.partition_index,
            error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
            timestamp: -1,
            offset: -1,
            leader_epoch: -1,
            ..Default::default()
        })
        .collect();
    ListOffsetsTopicResponse {
        name: t.name.clone(),
        partitions,
        ..Default::default()
    }
}

/// One partition's answer: INVALID_REQUEST when the request names it twice (`duplicate`), else
/// the offset its log holds for the timestamp asked.
fn partition_answer(
    ctx: &RequestContext<'_>,
    topic: Option<&TopicImage>,
    p: &kcoord_wire::messages::list_offsets_request::ListOffsetsPartition,
    duplicate: bool,
    version: i16,
    committed: bool,
) -> ListOffsetsPartitionResponse {
    let mut answer = ListOffsetsPartitionResponse {
        partition_index: p.partition_index,
        timestamp: -1,
        offset: -1,
        leader_epoch: -1,
        ..Default::default()
    };
    let result = if duplicate {
        Err(ErrorCode::INVALID_REQUEST)
    } else {
        topic
            .and_then(|topic| ctx.server.partitions.get(topic.id, p.partition_index))
            .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
            .and_then(|partition| {
                lookup(
                    &partition,
                    p.timestamp,
                    p.current_leader_epoch,
                    version,
                    committed,
                )
            })
    };
    match result {
        Ok(found) => {
            answer.offset = found.offset;
            answer.timestamp = found.timestamp;
            if version >= 4 {
                answer.leader_epoch = found.leader_epoch;
            }
        }
        Err(code) => answer.error_code = code.code(),
    }
    answer
}

struct Found {
    offset: i64,
    timestamp: i64,
    leader_epoch: i32,
}

const NOTHING: Found = Found {
    offset: -1,
    timestamp: -1,
    leader_epoch: -1,
};

fn lookup(
    partition: &Partition,
    timestamp: i64,
    current_leader_epoch: i32,
    version: i16,
    committed: bool,
) -> Result<Found, ErrorCode> {
    match min_version(timestamp) {
        Some(min) if version >= min => {}
        _ => return Err(ErrorCode::UNSUPPORTED_VERSION),
    }
    if current_leader_epoch >= 0 && current_leader_epoch != partition.leader_epoch {
        return Err(if current_leader_epoch < partition.leader_epoch {
            ErrorCode::FENCED_LEADER_EPOCH
        } else {
            ErrorCode::UNKNOWN_LEADER_EPOCH
        });
    }
    let epoch = partition.leader_epoch;
    let log = partition.log();
    let at = |offset: i64| Found {
        offset,
        timestamp: -1,
        leader_epoch: epoch,
    };
    let last_fetchable = if committed {
        log.last_stable_offset()
    } else {
        log.high_watermark()
    };
    let found = match timestamp {
        LATEST => at(last_fetchable),
        EARLIEST | EARLIEST_LOCAL => at(log.log_start_offset()),
        LATEST_TIERED | EARLIEST_PENDING_UPLOAD => NOTHING,
        MAX_TIMESTAMP => {
            let found = log.max_timestamp_offset();
            record(partition, found)?
        }
        t => {
            let found = log.offset_for_timestamp(t);
            record(partition, found)?
        }
    };
    // Kafka's `ReplicaManager.fetchOffset`: a record found by timestamp at or past the last
    // fetchable offset is not answered (the special timestamps are not bounded).
    let by_timestamp = timestamp >= 0 || timestamp == MAX_TIMESTAMP;
    let fetchable = !by_timestamp || found.offset < last_fetchable;
    Ok(if fetchable { found } else { NOTHING })
}

fn record(
    partition: &Partition,
    found: Result<Option<kcoord_storage::TimestampOffset>, kcoord_storage::StorageError>,
) -> Result<Found, ErrorCode> {
    match found {
        Ok(Some(t)) => Ok(Found {
            offset: t.offset,
            timestamp: t.timestamp,
            leader_epoch: partition.leader_epoch,
        }),
        Ok(None) => Ok(NOTHING),
        Err(e) => {
            warn!(partition = %partition.name(), error = %e, "ListOffsets could not read the log");
            Err(ErrorCode::KAFKA_STORAGE_ERROR)
        }
    }
}

/// The authorization matrix's rows of ListOffsets ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(ListOffsets 9 on Broker, ListOffsetsRequest {
                replica_id: -1,
                topics: vec![with(|t: &mut list_offsets_request::ListOffsetsTopic| {
                    t.name = TOPIC.into();
                    t.partitions = vec![list_offsets_request::ListOffsetsPartition {
                        current_leader_epoch: -1,
                        timestamp: -1,
                        ..Default::default()
                    }];
                })],
                ..Default::default()
            },
            needs [(Describe, Topic, TOPIC)],
            ListOffsetsResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};

    use super::*;
    use crate::config::ListenerKind;
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

    fn topic(name: &str, partitions: &[i32]) -> ListOffsetsTopic {
        ListOffsetsTopic {
            name: name.into(),
            partitions: partitions
                .iter()
                .map(|p| ListOffsetsPartition {
                    partition_index: *p,
                    current_leader_epoch: -1,
                    timestamp: LATEST,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn refused_topics_come_last_with_every_partition_they_list() {
        let node = running_with_authorizer("", Arc::new(OnlyB));
        create_topic(&node.state, "a", 1).await;
        create_topic(&node.state, "b", 1).await;
        let req = ListOffsetsRequest {
            replica_id: -1,
            topics: vec![topic("a", &[0, 0]), topic("b", &[0, 0]), topic("b", &[7])],
            ..Default::default()
        };
        let c = Ctx::new(&node.state, ListenerKind::Broker);
        let resp = handle(&c.ctx(&node.state), req, 9);
        let answers: Vec<(&str, Vec<(i32, i16)>)> = resp
            .topics
            .iter()
            .map(|t| {
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| (p.partition_index, p.error_code))
                    .collect();
                (t.name.as_str(), partitions)
            })
            .collect();
        let (invalid, unknown, refused) = (
            ErrorCode::INVALID_REQUEST.code(),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(),
            ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
        );
        assert_eq!(
            answers,
            vec![
                // A partition named twice is answered once, INVALID_REQUEST.
                ("b", vec![(0, invalid)]),
                ("b", vec![(7, unknown)]),
                ("a", vec![(0, refused), (0, refused)]),
            ]
        );
    }
}
