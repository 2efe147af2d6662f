//! StreamsGroupDescribe (key 89), v0-1, after Kafka's `KafkaApis.handleStreamsGroupDescribe`.
//!
//! A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED (Kafka checks this
//! before anything else; the answers stay in request order here). Each other group is
//! described by the shard that owns it (an empty id is INVALID_GROUP_ID, an unknown one
//! GROUP_ID_NOT_FOUND, per group). AuthorizedOperations, when asked for, is what the
//! authorizer hook grants on the group (everything a group supports, without an authorizer).
//!
//! v1 with IncludeTopologyDescription (KIP-1331): once the rest of the response is assembled,
//! the topology description plugin's `get_topology` is called for every group described
//! without error, with the group's current TopologyDescriptionId (read on its shard together
//! with the description), all at once, each on its own task and all bounded by one
//! `group.streams.topology.description.timeout.ms`. A description → AVAILABLE (3, sent so the
//! Kafka 4.4 readers know; the specification's readers ignore the status when the description
//! is there); none, no id, or no plugin configured → NOT_STORED (1); an error, a panic or the
//! timeout → ERROR (2), logged at WARN. Not asked for (or v0) → NOT_REQUESTED (0). The
//! group's ErrorCode is never changed by any of it, and no further authorization applies: the
//! DESCRIBE on the GROUP checked first covers the description (R31), so a group the principal
//! may not describe never reaches the plugin.

use kcoord_coordinator::description::to_describe;
use kcoord_plugin_api::Uuid;
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::messages::{StreamsGroupDescribeRequest, StreamsGroupDescribeResponse};
use kcoord_wire::ErrorCode;
use tracing::warn;

use super::groups::per_group;
use crate::authz::{authorize, authorized_operations, AclOperation, ResourceType};
use crate::shards::ShardError;
use crate::state::RequestContext;
use crate::topology_plugin::plugin_context;

/// `TopologyDescriptionStatus` values.
pub const TOPOLOGY_DESCRIPTION_NOT_REQUESTED: i8 = 0;
pub const TOPOLOGY_DESCRIPTION_NOT_STORED: i8 = 1;
pub const TOPOLOGY_DESCRIPTION_ERROR: i8 = 2;
pub const TOPOLOGY_DESCRIPTION_AVAILABLE: i8 = 3;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: StreamsGroupDescribeRequest,
    version: i16,
) -> StreamsGroupDescribeResponse {
    let authorized: Vec<bool> = req
        .group_ids
        .iter()
        .map(|id| authorize(ctx, AclOperation::Describe, ResourceType::Group, id))
        .collect();
    let to_describe: Vec<String> = req
        .group_ids
        .iter()
        .zip(&authorized)
        .filter(|(_, ok)| **ok)
        .map(|(id, _)| id.clone())
        .collect();
    let answers = per_group(
        &ctx.server.coordinators,
        &to_describe,
        |shard, _, _, ids| {
            let described = shard.describe_streams_groups(ids);
            described
                .into_iter()
                .zip(ids)
                .map(|(group, id)| {
                    let description_id = shard.group(id).and_then(|g| g.topology_description_id);
                    (group, description_id)
                })
                .collect::<Vec<_>>()
        },
    )
    .await;
    let mut answers = answers.into_iter();
    let mut description_ids = Vec::with_capacity(req.group_ids.len());
    let mut groups: Vec<DescribedGroup> = req
        .group_ids
        .iter()
        .zip(authorized)
        .map(|(id, authorized)| {
            if !authorized {
                description_ids.push(None);
                return DescribedGroup {
                    group_id: id.clone(),
                    error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
                    ..Default::default()
                };
            }
            // One answer per authorized id, in order; a missing one is a failed shard.
            let answer = answers.next().unwrap_or(Err(ShardError::Failed));
            if id.is_empty() {
                description_ids.push(None);
                return DescribedGroup {
                    group_id: String::new(),
                    error_code: ErrorCode::INVALID_GROUP_ID.code(),
                    ..Default::default()
                };
            }
            let (mut group, description_id) = match answer {
                Ok(answer) => answer,
                Err(e) => (
                    DescribedGroup {
                        group_id: id.clone(),
                        error_code: e.error_code().code(),
                        ..Default::default()
                    },
                    None,
                ),
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
    if version >= 1 && req.include_topology_description {
        attach_topology_descriptions(ctx, &mut groups, &description_ids).await;
    }
    StreamsGroupDescribeResponse {
        throttle_time_ms: 0,
        groups,
        ..Default::default()
    }
}

/// Fills TopologyDescription / TopologyDescriptionStatus of the groups described without
/// error; `ids[i]` is group i's current TopologyDescriptionId.
async fn attach_topology_descriptions(
    ctx: &RequestContext<'_>,
    groups: &mut [DescribedGroup],
    ids: &[Option<Uuid>],
) {
    let topology = &ctx.server.topology;
    let mut calls = Vec::new();
    for (i, group) in groups.iter_mut().enumerate() {
        if group.error_code != ErrorCode::NONE.code() {
            continue;
        }
        group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED;
        if let (true, Some(id)) = (topology.is_enabled(), ids.get(i).copied().flatten()) {
            // Started here, all of them, before any is awaited: they run concurrently.
            let call = topology.get(plugin_context(ctx), group.group_id.clone(), id);
            calls.push((i, id, call));
        }
    }
    for (i, id, call) in calls {
        let group = &mut groups[i];
        match call.outcome().await {
            Ok(Some(description)) => {
                group.topology_description = Some(to_describe(&description));
                group.topology_description_status = TOPOLOGY_DESCRIPTION_AVAILABLE;
            }
            Ok(None) => group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED,
            Err(e) => {
                warn!(
                    group = %group.group_id, topology_description_id = %id, error = %e,
                    "topology description plugin failed to return the topology description; describe answers ERROR"
                );
                group.topology_description_status = TOPOLOGY_DESCRIPTION_ERROR;
            }
        }
    }
}

#[cfg(test)]
mod tests;
