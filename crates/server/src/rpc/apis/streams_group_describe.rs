//! StreamsGroupDescribe (key 89), v0-1, after Kafka's `KafkaApis.handleStreamsGroupDescribe`.
//!
//! A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED (Kafka checks this
//! before anything else; the answers stay in request order here). Each other group is
//! described by the shard that owns it (an empty id is INVALID_GROUP_ID, an unknown one
//! GROUP_ID_NOT_FOUND, per group). AuthorizedOperations, when asked for, is what the
//! authorizer hook grants on the group (everything a group supports, without an authorizer).
//!
//! A group named more than once is answered at each occurrence, as Kafka answers it, but
//! authorized, described and read from the plugin once; the copies are bounded by
//! [`crate::rpc::groups::MAX_REPEATED_ANSWER_BYTES`], past which a repeat is INVALID_REQUEST. The
//! shards describe at most [`crate::rpc::groups::GROUPS_PER_JOB`] groups per job, so a long list
//! never holds a shard (and the heartbeats of its groups) for long.
//!
//! v1 with IncludeTopologyDescription (KIP-1331): once the rest of the response is assembled,
//! the topology description plugin's `get_topology` is called for every group described
//! without error, with the group's current TopologyDescriptionId (read on its shard together
//! with the description), concurrently, each on its own task and bounded by
//! `group.streams.topology.description.timeout.ms`: at most [`MAX_CONCURRENT_READS`] at a
//! time, and none started once that timeout has passed since the first started (such a group
//! answers ERROR, with one WARN for the request). A description → AVAILABLE (3, sent so the
//! Kafka 4.4 readers know; the specification's readers ignore the status when the description
//! is there); none, no id, or no plugin configured → NOT_STORED (1); an error, a panic or the
//! timeout → ERROR (2), logged at WARN. Not asked for (or v0) → NOT_REQUESTED (0). The
//! group's ErrorCode is never changed by any of it, and no further authorization applies: the
//! DESCRIBE on the GROUP checked first covers the description (R31), so a group the principal
//! may not describe never reaches the plugin.
//!
//! With an authorizer, as in Kafka, a group whose topology names a topic the principal may not
//! DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED ("The described group uses topics that the
//! client is not authorized to describe."), before any description is read for it.

use std::collections::VecDeque;

use kcoord_coordinator::description::to_describe;
use kcoord_plugin_api::Uuid;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::messages::{StreamsGroupDescribeRequest, StreamsGroupDescribeResponse};
use kcoord_wire::{Encodable, ErrorCode};
use tracing::warn;

use crate::rpc::authorize::{
    authorize, authorized_operations, AclOperation, ResourceType, TopicDescribeVerdicts,
};
use crate::rpc::groups::{per_group, Distinct, RepeatBudget};
use crate::rpc::plugin_context::plugin_context;
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::shards::ShardError;
use crate::state::RequestContext;
use crate::support::logging::{capped, log_per_group};

/// StreamsGroupDescribe as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::StreamsGroupDescribe, 0, 1)
    .asks(&[
        Check::new(AclOperation::Describe, ResourceType::Group),
        Check::new(AclOperation::Describe, ResourceType::Topic),
    ])
    .local_in_gateway();

serve!(async handle);

/// `TopologyDescriptionStatus` values.
pub const TOPOLOGY_DESCRIPTION_NOT_REQUESTED: i8 = 0;
pub const TOPOLOGY_DESCRIPTION_NOT_STORED: i8 = 1;
pub const TOPOLOGY_DESCRIPTION_ERROR: i8 = 2;
pub const TOPOLOGY_DESCRIPTION_AVAILABLE: i8 = 3;

/// The most `get_topology` calls one describe request has running at a time.
pub const MAX_CONCURRENT_READS: usize = 16;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: StreamsGroupDescribeRequest,
    version: i16,
) -> StreamsGroupDescribeResponse {
    // Each group is authorized, described and read from the plugin once, however often the
    // request names it (Kafka would do all of it per occurrence).
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
    let mut answers = describe_on_shards(ctx, &to_describe).await.into_iter();
    let mut description_ids = Vec::with_capacity(distinct.ids.len());
    let mut groups: Vec<DescribedGroup> = distinct
        .ids
        .iter()
        .zip(authorized)
        .map(|(id, authorized)| {
            if !authorized {
                description_ids.push(None);
                return error_group(id, ErrorCode::GROUP_AUTHORIZATION_FAILED);
            }
            if id.is_empty() {
                description_ids.push(None);
                return error_group(id, ErrorCode::INVALID_GROUP_ID);
            }
            // One answer per described id, in order; a missing one is a failed shard.
            let answer = answers.next().unwrap_or(Err(ShardError::Failed));
            let (mut group, description_id) = match answer {
                Ok(answer) => answer,
                Err(e) => (error_group(id, e.error_code()), None),
            };
            description_ids.push(description_id);
            group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_REQUESTED;
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
    if version >= 1 && req.include_topology_description {
        attach_topology_descriptions(ctx, &mut groups, &description_ids).await;
    }
    let groups = distinct.expand(
        groups,
        &mut RepeatBudget::default(),
        // A group that does not encode at this version is not copied.
        |group| group.compute_size(version).unwrap_or(usize::MAX),
        |id| error_group(id, ErrorCode::INVALID_REQUEST),
    );
    StreamsGroupDescribeResponse {
        throttle_time_ms: 0,
        groups,
        ..Default::default()
    }
}

/// Each group of `group_ids` described on the shard that owns it, with its current
/// TopologyDescriptionId read in the same job.
async fn describe_on_shards(
    ctx: &RequestContext<'_>,
    group_ids: &[String],
) -> Vec<Result<(DescribedGroup, Option<Uuid>), ShardError>> {
    per_group(&ctx.server.coordinators, group_ids, |shard, _, ids| {
        let described = shard.describe_streams_groups(ids);
        kcoord_coordinator::Outcome::answer(
            described
                .into_iter()
                .zip(ids)
                .map(|(group, id)| {
                    let description_id = shard.group(id).and_then(|g| g.topology_description_id);
                    (group, description_id)
                })
                .collect::<Vec<_>>(),
        )
    })
    .await
}

/// Kafka's last check, made only when an authorizer is configured: a group whose topology
/// names a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED instead
/// (DESCRIBE asked once per topic name).
fn refuse_undescribable_topics(ctx: &RequestContext<'_>, groups: &mut [DescribedGroup]) {
    let mut verdicts = TopicDescribeVerdicts::default();
    for group in groups.iter_mut() {
        let Some(topology) = &group.topology else {
            continue;
        };
        let names = topology.subtopologies.iter().flatten().flat_map(|s| {
            s.source_topics
                .iter()
                .chain(&s.repartition_sink_topics)
                .chain(s.state_changelog_topics.iter().map(|t| &t.name))
                .chain(s.repartition_source_topics.iter().map(|t| &t.name))
        });
        let denied = !verdicts.all_describable(ctx, names);
        if denied {
            *group = DescribedGroup {
                error_message: Some(
                    "The described group uses topics that the client is not authorized to describe."
                        .to_owned(),
                ),
                ..error_group(&group.group_id, ErrorCode::TOPIC_AUTHORIZATION_FAILED)
            };
        }
    }
}

/// A group answered with `code` alone.
fn error_group(group_id: &str, code: ErrorCode) -> DescribedGroup {
    DescribedGroup {
        group_id: group_id.to_owned(),
        error_code: code.code(),
        ..Default::default()
    }
}

/// Fills TopologyDescription / TopologyDescriptionStatus of the groups described without
/// error; `ids[i]` is group i's current TopologyDescriptionId. The groups are distinct, so the
/// plugin is read once per group; at most [`MAX_CONCURRENT_READS`] reads run at a time, and
/// no read starts once `group.streams.topology.description.timeout.ms` has passed since the
/// first (those groups answer ERROR), so one request waits at most about twice that bound.
async fn attach_topology_descriptions(
    ctx: &RequestContext<'_>,
    groups: &mut [DescribedGroup],
    ids: &[Option<Uuid>],
) {
    let topology = &ctx.server.topology;
    let mut wanted: VecDeque<(usize, Uuid)> = VecDeque::new();
    for (i, group) in groups.iter_mut().enumerate() {
        if group.error_code != ErrorCode::NONE.code() {
            continue;
        }
        group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED;
        if let (true, Some(id)) = (topology.is_enabled(), ids.get(i).copied().flatten()) {
            wanted.push_back((i, id));
        }
    }
    let Some(timeout) = topology.timeout() else {
        return;
    };
    let last_start = tokio::time::Instant::now() + timeout;
    let mut running = VecDeque::with_capacity(MAX_CONCURRENT_READS);
    let mut not_started = 0usize;
    loop {
        // Started in a window: the window's reads run concurrently.
        while running.len() < MAX_CONCURRENT_READS {
            let Some((i, id)) = wanted.pop_front() else {
                break;
            };
            if tokio::time::Instant::now() >= last_start {
                groups[i].topology_description_status = TOPOLOGY_DESCRIPTION_ERROR;
                not_started += 1;
                continue;
            }
            let call = topology.get(plugin_context(ctx), groups[i].group_id.clone(), id);
            running.push_back((i, id, call));
        }
        let Some((i, id, call)) = running.pop_front() else {
            break;
        };
        let group = &mut groups[i];
        match call.outcome().await {
            Ok(Some(description)) => {
                group.topology_description = Some(to_describe(&description));
                group.topology_description_status = TOPOLOGY_DESCRIPTION_AVAILABLE;
            }
            Ok(None) => group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED,
            Err(e) => {
                log_per_group!(
                    warn, ctx.server.group_lines, "describe: plugin read failed", &group.group_id,
                    group = %capped(&group.group_id), topology_description_id = %id, error = %e,
                    "topology description plugin failed to return the topology description; describe answers ERROR"
                );
                group.topology_description_status = TOPOLOGY_DESCRIPTION_ERROR;
            }
        }
    }
    if not_started > 0 {
        warn!(
            groups = not_started,
            timeout_ms = timeout.as_millis() as u64,
            "topology descriptions not read: the describe request's reads took longer than the plugin timeout; those groups answer ERROR"
        );
    }
}

/// The authorization matrix's rows of StreamsGroupDescribe ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(StreamsGroupDescribe ("group") 0 on Broker, streams_describe(),
            needs [(Describe, Group, STREAMS), (Describe, Topic, TOPIC)],
            StreamsGroupDescribeResponse => |r| refusal(r.groups[0].error_code, r.groups[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(StreamsGroupDescribe ("topics") 0 on Broker, streams_describe(),
            also [(Describe, Group, STREAMS)],
            needs [(Describe, Topic, TOPIC)],
            StreamsGroupDescribeResponse => |r| refusal(r.groups[0].error_code, r.groups[0].error_message.as_deref()),
            allowed "NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: The described group uses topics that the client is not authorized to describe."),
    ]
}

#[cfg(test)]
mod tests;
