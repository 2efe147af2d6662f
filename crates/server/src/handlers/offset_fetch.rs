//! OffsetFetch (key 9), v1-10, after Kafka's `KafkaApis.handleOffsetFetchRequest` and
//! `OffsetMetadataManager.fetchOffsets` / `fetchAllOffsets`.
//!
//! v1-7 carry one group (GroupId + Topics, a null topic list meaning all of them); v8+ a list of
//! groups, each with an optional member id and epoch (v9+), and from v10 topics named by id
//! (an unknown id answers UNKNOWN_TOPIC_ID for each of its partitions). The group's shard
//! checks the member (kafka-wire-facts.md §4.9: admins without a member id pass; otherwise the
//! member must exist and its epoch match) and reads the committed offsets; a partition without
//! one answers offset -1. A group-level error is the group's ErrorCode from v2 (top-level
//! before v8) and each partition's before that. RequireStable needs no waiting: there are no
//! transactions here.

use std::collections::BTreeMap;

use kcoord_coordinator::CoordinatorError;
use kcoord_metadata::CommittedOffset;
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kcoord_wire::messages::{OffsetFetchRequest, OffsetFetchResponse};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::catalog::TopicsImage;
use crate::state::RequestContext;

const BATCH_VERSION: i16 = 8;
const TOPIC_ID_VERSION: i16 = 10;
/// From this version a group error is not repeated on every partition.
const TOP_LEVEL_ERROR_VERSION: i16 = 2;
const INVALID_OFFSET: i64 = -1;
const NO_LEADER_EPOCH: i32 = -1;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    let groups: Vec<OffsetFetchRequestGroup> = if version >= BATCH_VERSION {
        req.groups
    } else {
        // Kafka's `OffsetFetchRequest.groups()`: the single group, no member, epoch -1.
        vec![OffsetFetchRequestGroup {
            group_id: req.group_id,
            member_id: None,
            member_epoch: -1,
            topics: req.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| OffsetFetchRequestTopics {
                        name: t.name,
                        partition_indexes: t.partition_indexes,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }]
    };
    let image = ctx.server.topics.snapshot();
    let mut answers = Vec::with_capacity(groups.len());
    for group in groups {
        answers.push(fetch_group(ctx, &image, group, version).await);
    }
    build(answers, version)
}

async fn fetch_group(
    ctx: &RequestContext<'_>,
    image: &TopicsImage,
    group: OffsetFetchRequestGroup,
    version: i16,
) -> OffsetFetchResponseGroup {
    let use_ids = version >= TOPIC_ID_VERSION;
    let shard = ctx.server.coordinators.for_group(&group.group_id);
    let group_id = group.group_id.clone();
    let member_id = group.member_id.clone();
    let epoch = group.member_epoch;

    let Some(requested) = &group.topics else {
        let all = shard
            .call(move |shard, _, _| -> Result<_, CoordinatorError> {
                shard.validate_offset_fetch(&group_id, member_id.as_deref(), epoch)?;
                Ok(shard.committed_offsets(&group_id))
            })
            .await;
        let offsets = match all {
            Ok(Ok(offsets)) => offsets,
            Ok(Err(e)) => return group_error(&group, e.code, version),
            Err(e) => return group_error(&group, e.error_code(), version),
        };
        let mut by_topic: BTreeMap<String, Vec<OffsetFetchResponsePartitions>> = BTreeMap::new();
        for (topic, partition, committed) in offsets {
            by_topic
                .entry(topic)
                .or_default()
                .push(found(partition, Some(&committed)));
        }
        let mut topics = Vec::with_capacity(by_topic.len());
        for (name, partitions) in by_topic {
            if use_ids {
                // A topic whose id is unknown cannot be named in v10: it is left out.
                let Some(id) = image.get(&name).map(|t| t.id) else {
                    continue;
                };
                topics.push(OffsetFetchResponseTopics {
                    name: String::new(),
                    topic_id: id,
                    partitions,
                    ..Default::default()
                });
            } else {
                topics.push(OffsetFetchResponseTopics {
                    name,
                    partitions,
                    ..Default::default()
                });
            }
        }
        return OffsetFetchResponseGroup {
            group_id: group.group_id,
            topics,
            ..Default::default()
        };
    };

    // (name, id, partitions) of the topics the shard is asked about; unknown ids answered here.
    let mut known: Vec<(String, Uuid, Vec<i32>)> = Vec::new();
    let mut unknown: Vec<OffsetFetchResponseTopics> = Vec::new();
    for t in requested {
        if use_ids {
            match image.get_by_id(&t.topic_id) {
                Some(topic) => {
                    known.push((topic.name.clone(), t.topic_id, t.partition_indexes.clone()))
                }
                None => unknown.push(OffsetFetchResponseTopics {
                    name: String::new(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|p| OffsetFetchResponsePartitions {
                            partition_index: *p,
                            committed_offset: INVALID_OFFSET,
                            committed_leader_epoch: NO_LEADER_EPOCH,
                            metadata: Some(String::new()),
                            error_code: ErrorCode::UNKNOWN_TOPIC_ID.code(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
            }
        } else {
            known.push((t.name.clone(), Uuid::nil(), t.partition_indexes.clone()));
        }
    }
    let lookups: Vec<(String, Vec<i32>)> = known
        .iter()
        .map(|(name, _, parts)| (name.clone(), parts.clone()))
        .collect();
    let fetched = shard
        .call(move |shard, _, _| -> Result<_, CoordinatorError> {
            shard.validate_offset_fetch(&group_id, member_id.as_deref(), epoch)?;
            let offsets = &shard.state().offsets;
            Ok(lookups
                .iter()
                .map(|(name, parts)| {
                    parts
                        .iter()
                        .map(|p| found(*p, offsets.get(&group_id, name, *p)))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>())
        })
        .await;
    let per_topic = match fetched {
        Ok(Ok(per_topic)) => per_topic,
        Ok(Err(e)) => return group_error(&group, e.code, version),
        Err(e) => return group_error(&group, e.error_code(), version),
    };
    let mut topics: Vec<OffsetFetchResponseTopics> = known
        .into_iter()
        .zip(per_topic)
        .map(|((name, id, _), partitions)| OffsetFetchResponseTopics {
            name: if use_ids { String::new() } else { name },
            topic_id: id,
            partitions,
            ..Default::default()
        })
        .collect();
    topics.extend(unknown);
    OffsetFetchResponseGroup {
        group_id: group.group_id,
        topics,
        ..Default::default()
    }
}

/// One partition's answer: the committed offset, or -1 when there is none.
fn found(partition: i32, committed: Option<&CommittedOffset>) -> OffsetFetchResponsePartitions {
    match committed {
        Some(c) => OffsetFetchResponsePartitions {
            partition_index: partition,
            committed_offset: c.offset,
            committed_leader_epoch: c.leader_epoch,
            metadata: Some(c.metadata.clone()),
            error_code: ErrorCode::NONE.code(),
            ..Default::default()
        },
        None => OffsetFetchResponsePartitions {
            partition_index: partition,
            committed_offset: INVALID_OFFSET,
            committed_leader_epoch: NO_LEADER_EPOCH,
            metadata: Some(String::new()),
            error_code: ErrorCode::NONE.code(),
            ..Default::default()
        },
    }
}

/// Kafka's `OffsetFetchResponse.groupError`.
fn group_error(
    group: &OffsetFetchRequestGroup,
    error: ErrorCode,
    version: i16,
) -> OffsetFetchResponseGroup {
    if version >= TOP_LEVEL_ERROR_VERSION {
        return OffsetFetchResponseGroup {
            group_id: group.group_id.clone(),
            error_code: error.code(),
            ..Default::default()
        };
    }
    OffsetFetchResponseGroup {
        group_id: group.group_id.clone(),
        topics: group
            .topics
            .iter()
            .flatten()
            .map(|t| OffsetFetchResponseTopics {
                name: t.name.clone(),
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|p| OffsetFetchResponsePartitions {
                        partition_index: *p,
                        error_code: error.code(),
                        committed_offset: INVALID_OFFSET,
                        metadata: Some(String::new()),
                        committed_leader_epoch: NO_LEADER_EPOCH,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Kafka's `OffsetFetchResponse.Builder.build`: the groups as they are from v8, else the one
/// group in the v1-7 layout.
fn build(groups: Vec<OffsetFetchResponseGroup>, version: i16) -> OffsetFetchResponse {
    if version >= BATCH_VERSION {
        return OffsetFetchResponse {
            throttle_time_ms: 0,
            groups,
            ..Default::default()
        };
    }
    let Some(group) = groups.into_iter().next() else {
        return OffsetFetchResponse::default();
    };
    OffsetFetchResponse {
        throttle_time_ms: 0,
        error_code: if version >= TOP_LEVEL_ERROR_VERSION {
            group.error_code
        } else {
            ErrorCode::NONE.code()
        },
        topics: group
            .topics
            .into_iter()
            .map(|t| OffsetFetchResponseTopic {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| OffsetFetchResponsePartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: p.committed_leader_epoch,
                        metadata: p.metadata,
                        error_code: p.error_code,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
