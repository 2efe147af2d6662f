//! OffsetDelete (key 47), v0, after Kafka's `KafkaApis.handleOffsetDeleteRequest`,
//! `GroupCoordinatorService.deleteOffsets` and `OffsetMetadataManager.deleteOffsets`.
//!
//! In Kafka's order: DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the request);
//! per topic, READ on it (else TOPIC_AUTHORIZATION_FAILED on each of its partitions), then the
//! topic and each partition must exist (else UNKNOWN_TOPIC_OR_PARTITION); an empty group id is
//! INVALID_GROUP_ID. The group's shard then answers the remaining partitions: an unknown group
//! is GROUP_ID_NOT_FOUND for the request (and the partition answers are dropped, as Kafka's
//! error response carries none); a topic a non-empty streams group consumes (source or
//! repartition source topic), or that the current generation of a classic `consumer` group
//! subscribes to, is GROUP_SUBSCRIBED_TO_TOPIC; otherwise the committed offset, if
//! any, is tombstoned and the partition answers NONE. As in Kafka the refused partitions come
//! first in the response, then the shard's answers merged into them by topic. In gateway mode
//! the offsets the shard allows deleting are deleted in the cluster, where they are kept, and
//! answer the cluster's code (`gateway/deletes.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kcoord_wire::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;
use crate::support::logging::{capped, log_per_group};

/// OffsetDelete as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::OffsetDelete, 0, 0)
    .asks(&[
        Check::new(AclOperation::Delete, ResourceType::Group),
        Check::new(AclOperation::Read, ResourceType::Topic),
    ])
    .by_group_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: OffsetDeleteRequest,
    _version: i16,
) -> OffsetDeleteResponse {
    if !authorize(
        ctx,
        AclOperation::Delete,
        ResourceType::Group,
        &req.group_id,
    ) {
        return error(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    }
    let mut answers: Vec<OffsetDeleteResponseTopic> = Vec::new();
    // Where each topic's answer is in `answers`.
    let mut index: HashMap<String, usize> = HashMap::new();
    let to_delete = answer_refused(ctx, &req, &mut answers, &mut index);
    if req.group_id.is_empty() {
        return error(ErrorCode::INVALID_GROUP_ID);
    }
    let group_id = req.group_id.clone();
    let request = distinct_partitions(&to_delete);
    let deleted = ctx
        .server
        .coordinators
        .for_group(&req.group_id)
        .call(|shard, _| shard.delete_offsets(&group_id, &request))
        .await;
    let codes = match deleted {
        Ok(Ok(codes)) => codes,
        Ok(Err(e)) => return error(e.code),
        Err(e) => return error(e.error_code()),
    };
    let codes = match in_the_cluster(ctx, &group_id, &request, codes).await {
        Ok(codes) => codes,
        Err(code) => return error(code),
    };
    answer_deleted(&mut answers, &mut index, &to_delete, &request, &codes);
    OffsetDeleteResponse {
        topics: answers,
        ..Default::default()
    }
}

/// In gateway mode a streams group's offsets are kept in the cluster: the partitions the shard
/// allowed (NONE) are deleted there, and answer the cluster's code. A cluster that cannot be
/// reached is COORDINATOR_NOT_AVAILABLE for the request, which the client retries.
async fn in_the_cluster(
    ctx: &RequestContext<'_>,
    group_id: &str,
    request: &[(String, Vec<i32>)],
    mut codes: Vec<Vec<ErrorCode>>,
) -> Result<Vec<Vec<ErrorCode>>, ErrorCode> {
    let Some(gateway) = ctx.server.gateway.as_ref() else {
        return Ok(codes);
    };
    let allowed: Vec<(String, Vec<i32>)> = request
        .iter()
        .zip(&codes)
        .map(|((topic, partitions), codes)| {
            let ok = partitions.iter().zip(codes);
            let ok = ok.filter(|(_, c)| **c == ErrorCode::NONE).map(|(p, _)| *p);
            (topic.clone(), ok.collect::<Vec<i32>>())
        })
        .filter(|(_, partitions)| !partitions.is_empty())
        .collect();
    if allowed.is_empty() {
        return Ok(codes);
    }
    let upstream = match gateway.delete_offsets_upstream(group_id, &allowed).await {
        Ok(upstream) => upstream,
        Err(e) => {
            log_per_group!(
                warn, ctx.server.group_lines, "offset delete: upstream", group_id,
                group = %capped(group_id), error = %e,
                "cannot delete the group's offsets in the upstream cluster; the client retries"
            );
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
    };
    // `allowed` lists the NONE partitions in `codes`' order, and the cluster answers each in
    // the order asked: its codes replace them one by one.
    let mut upstream = upstream.into_iter().flatten();
    for code in codes.iter_mut().flatten() {
        if *code == ErrorCode::NONE {
            *code = upstream.next().unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
        }
    }
    Ok(codes)
}

/// Answers the partitions refused before the shard (topic not authorized, or topic or partition
/// unknown); returns the others, by topic, as the request lists them.
fn answer_refused(
    ctx: &RequestContext<'_>,
    req: &OffsetDeleteRequest,
    answers: &mut Vec<OffsetDeleteResponseTopic>,
    index: &mut HashMap<String, usize>,
) -> Vec<(String, Vec<i32>)> {
    let image = ctx.server.topics.snapshot();
    let mut to_delete: Vec<(String, Vec<i32>)> = Vec::new();
    for t in &req.topics {
        let refused = if !authorize(ctx, AclOperation::Read, ResourceType::Topic, &t.name) {
            Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
        } else if image.get(&t.name).is_none() {
            Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        } else {
            None
        };
        let mut valid = Vec::new();
        for p in &t.partitions {
            let code = refused.or_else(|| {
                let exists = image
                    .get(&t.name)
                    .is_some_and(|topic| topic.partitions.contains_key(&p.partition_index));
                (!exists).then_some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
            });
            match code {
                Some(code) => add(answers, index, &t.name, p.partition_index, code),
                None => valid.push(p.partition_index),
            }
        }
        if !valid.is_empty() {
            to_delete.push((t.name.clone(), valid));
        }
    }
    to_delete
}

/// The partitions of `to_delete`, each once, sorted by topic and partition. The shard sees each
/// existing partition once, so its work is bounded by the catalog, not by how often the request
/// repeats a partition.
fn distinct_partitions(to_delete: &[(String, Vec<i32>)]) -> Vec<(String, Vec<i32>)> {
    let mut distinct: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    for (topic, partitions) in to_delete {
        distinct
            .entry(topic.as_str())
            .or_default()
            .extend(partitions.iter().copied());
    }
    distinct
        .into_iter()
        .map(|(topic, partitions)| (topic.to_owned(), partitions.into_iter().collect()))
        .collect()
}

/// Answers the partitions of `to_delete`, in request order, with the shard's `codes` for the
/// distinct partitions of `request`.
fn answer_deleted(
    answers: &mut Vec<OffsetDeleteResponseTopic>,
    index: &mut HashMap<String, usize>,
    to_delete: &[(String, Vec<i32>)],
    request: &[(String, Vec<i32>)],
    codes: &[Vec<ErrorCode>],
) {
    let mut decided: HashMap<(&str, i32), ErrorCode> = HashMap::new();
    for ((topic, partitions), codes) in request.iter().zip(codes) {
        for (p, code) in partitions.iter().zip(codes) {
            decided.insert((topic.as_str(), *p), *code);
        }
    }
    for (topic, partitions) in to_delete {
        for p in partitions {
            let code = decided
                .get(&(topic.as_str(), *p))
                .copied()
                .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
            add(answers, index, topic, *p, code);
        }
    }
}

/// Adds a partition answer under its topic (kept in first-seen order), like Kafka's
/// `OffsetDeleteResponse.Builder.addPartition`.
fn add(
    answers: &mut Vec<OffsetDeleteResponseTopic>,
    index: &mut HashMap<String, usize>,
    topic: &str,
    partition: i32,
    code: ErrorCode,
) {
    let i = match index.get(topic) {
        Some(&i) => i,
        None => {
            answers.push(OffsetDeleteResponseTopic {
                name: topic.to_string(),
                ..Default::default()
            });
            index.insert(topic.to_string(), answers.len() - 1);
            answers.len() - 1
        }
    };
    answers[i].partitions.push(OffsetDeleteResponsePartition {
        partition_index: partition,
        error_code: code.code(),
        ..Default::default()
    });
}

fn error(code: ErrorCode) -> OffsetDeleteResponse {
    OffsetDeleteResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of OffsetDelete ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(OffsetDelete ("group") 0 on Broker, offset_delete(),
            needs [(Delete, Group, GROUP), (Read, Topic, TOPIC)],
            OffsetDeleteResponse => |r| offset_deleted(&r),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetDelete ("topic") 0 on Broker, offset_delete(),
            also [(Delete, Group, GROUP)],
            needs [(Read, Topic, TOPIC)],
            OffsetDeleteResponse => |r| offset_deleted(&r),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests;
