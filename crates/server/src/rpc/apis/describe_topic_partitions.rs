//! DescribeTopicPartitions (key 75), v0, after Kafka's `DescribeTopicPartitionsRequestHandler`
//! and `KRaftMetadataCache.describeTopicResponse`: the topics named (none: every topic the
//! principal may DESCRIBE, the others left out unsaid) from the cursor's topic on, in name
//! order, each with its partitions from the cursor's partition (0 for later topics), at most
//! `ResponsePartitionLimit` partitions (capped at Kafka's `max.request.partition.size.limit`
//! default, 2,000, and at least 1) in all: where the answer stops, `NextCursor` says where to
//! go on. A named topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED (after
//! the others, as Kafka adds them), an unknown one UNKNOWN_TOPIC_OR_PARTITION (or
//! INVALID_TOPIC_EXCEPTION for a name Kafka refuses). A cursor whose topic is not among those
//! named, or whose partition is negative, is INVALID_REQUEST for every topic named. kcoord has no
//! eligible leader replicas (KIP-966: one replica per partition), so both ELR lists are empty,
//! as Kafka reports a partition without any. `kafka-topics --describe` uses this API.

use std::collections::BTreeSet;

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kcoord_wire::messages::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::rpc::authorize::{authorize, authorized_operations, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::catalog::{is_internal_topic, TopicImage, TopicsImage};
use crate::state::RequestContext;

/// DescribeTopicPartitions as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeTopicPartitions, 0, 0)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Topic)]);

serve!(sync handle);

/// Kafka's default `max.request.partition.size.limit`: the most partitions one answer holds,
/// whatever the request asks.
pub const MAX_PARTITIONS: i32 = 2000;

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeTopicPartitionsRequest,
    _version: i16,
) -> DescribeTopicPartitionsResponse {
    let image = ctx.server.topics.snapshot();
    let every_topic = req.topics.is_empty();
    let (cursor_topic, cursor_partition) = req
        .cursor
        .as_ref()
        .map_or(("", 0), |c| (c.topic_name.as_str(), c.partition_index));
    let topics: BTreeSet<&str> = if every_topic {
        image.iter().map(|t| t.name.as_str()).collect()
    } else {
        req.topics.iter().map(|t| t.name.as_str()).collect()
    };
    let topics: BTreeSet<&str> = topics.into_iter().filter(|t| *t >= cursor_topic).collect();
    let cursor_named = every_topic || req.cursor.is_none() || topics.contains(cursor_topic);
    if !cursor_named || cursor_partition < 0 {
        return invalid_request(&req);
    }
    let mut denied = Vec::new();
    let allowed: Vec<&str> = topics
        .into_iter()
        .filter(|name| {
            let may = authorize(ctx, AclOperation::Describe, ResourceType::Topic, name);
            if !may && !every_topic {
                denied.push(refused(ErrorCode::TOPIC_AUTHORIZATION_FAILED, name, false));
            }
            may
        })
        .collect();
    let limit = req.response_partition_limit.clamp(1, MAX_PARTITIONS);
    let start = |name: &str| {
        if name == cursor_topic {
            cursor_partition
        } else {
            0
        }
    };
    let mut response = describe(&image, &allowed, start, limit, every_topic);
    for topic in &mut response.topics {
        if let Some(name) = topic.name.as_deref() {
            topic.topic_authorized_operations =
                authorized_operations(ctx, ResourceType::Topic, name);
        }
    }
    response.topics.extend(denied);
    response
}

/// The answer for `topics` (in order), each from its `start` partition, at most `limit`
/// partitions in all; unknown topics left out when `every_topic` (the catalog changed since).
fn describe(
    image: &TopicsImage,
    topics: &[&str],
    start: impl Fn(&str) -> i32,
    limit: i32,
    every_topic: bool,
) -> DescribeTopicPartitionsResponse {
    let mut response = DescribeTopicPartitionsResponse::default();
    let mut remaining = limit;
    for name in topics {
        if remaining == 0 {
            // The next answer starts with this topic, at its first partition.
            response.next_cursor = Some(cursor(name, 0));
            break;
        }
        let Some(topic) = image.get(name) else {
            if !every_topic {
                let code = match kcoord_metadata::validate_topic_name(name) {
                    Ok(()) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    Err(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
                };
                response
                    .topics
                    .push(refused(code, name, is_internal_topic(name)));
            }
            continue;
        };
        let (partitions, next) = partitions(topic, start(name), remaining);
        remaining -= i32::try_from(partitions.len()).unwrap_or(remaining);
        response.topics.push(DescribeTopicPartitionsResponseTopic {
            error_code: ErrorCode::NONE.code(),
            name: Some(topic.name.clone()),
            topic_id: topic.id,
            is_internal: topic.is_internal(),
            partitions,
            ..Default::default()
        });
        if let Some(next) = next {
            response.next_cursor = Some(cursor(name, next));
            break;
        }
    }
    response
}

/// `topic`'s partitions from `start`, at most `most`, and the first one left out, if any.
fn partitions(
    topic: &TopicImage,
    start: i32,
    most: i32,
) -> (Vec<DescribeTopicPartitionsResponsePartition>, Option<i32>) {
    let count = topic.partition_count();
    let end = count.min(start.saturating_add(most));
    let described = (start..end)
        .filter_map(|index| topic.partitions.get(&index))
        .map(|p| DescribeTopicPartitionsResponsePartition {
            error_code: ErrorCode::NONE.code(),
            partition_index: p.partition,
            leader_id: p.leader,
            leader_epoch: p.leader_epoch,
            replica_nodes: p.replicas.clone(),
            isr_nodes: p.isr.clone(),
            eligible_leader_replicas: Some(Vec::new()),
            last_known_elr: Some(Vec::new()),
            offline_replicas: Vec::new(),
            ..Default::default()
        })
        .collect();
    (described, (end < count).then_some(end))
}

fn cursor(topic: &str, partition_index: i32) -> Cursor {
    Cursor {
        topic_name: topic.to_owned(),
        partition_index,
        ..Default::default()
    }
}

fn refused(code: ErrorCode, name: &str, is_internal: bool) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic {
        error_code: code.code(),
        name: Some(name.to_owned()),
        topic_id: Uuid::nil(),
        is_internal,
        ..Default::default()
    }
}

/// Kafka's `DescribeTopicPartitionsRequest.getErrorResponse` for an invalid cursor: every topic
/// named, INVALID_REQUEST.
fn invalid_request(req: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    DescribeTopicPartitionsResponse {
        topics: req
            .topics
            .iter()
            .map(|t| refused(ErrorCode::INVALID_REQUEST, &t.name, false))
            .collect(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of DescribeTopicPartitions.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    use kcoord_wire::messages::describe_topic_partitions_request::TopicRequest;
    let request = DescribeTopicPartitionsRequest {
        topics: vec![TopicRequest {
            name: TOPIC.into(),
            ..Default::default()
        }],
        response_partition_limit: 2000,
        ..Default::default()
    };
    vec![row!(DescribeTopicPartitions 0 on Broker, request,
            needs [(Describe, Topic, TOPIC)],
            DescribeTopicPartitionsResponse => |r| code(r.topics[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
#[path = "describe_topic_partitions/tests.rs"]
mod tests;
