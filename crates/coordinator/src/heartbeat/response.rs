//! Pieces of a heartbeat's answer and of its checks: statuses, task lists, and the views of
//! the group the assignor and the endpoints are computed from.
use std::collections::BTreeMap;

use kcoord_metadata::{Id, SharedTasks, StreamsGroup, StreamsGroupMember, Tasks, TasksTuple};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    self as req, StreamsGroupHeartbeatRequest,
};
use kcoord_wire::messages::streams_group_heartbeat_response as resp;

use super::status;
use crate::configured_topology::ConfiguredTopology;
use crate::error::{CoordinatorError, Result};

pub(super) fn delayed(detail: &str) -> resp::Status {
    resp::Status {
        status_code: status::ASSIGNMENT_DELAYED,
        status_detail: detail.to_string(),
        ..Default::default()
    }
}

/// MISSING_CLIENT_TAGS is only sent to clients that know it (request version 1+).
pub(crate) fn missing_client_tags(
    required: &[String],
    member: &StreamsGroupMember,
    api_version: i16,
) -> Option<resp::Status> {
    if api_version < 1 {
        return None;
    }
    let missing: Vec<&str> = required
        .iter()
        .map(String::as_str)
        .filter(|t| !member.client_tags().contains_key(*t))
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(resp::Status {
        status_code: status::MISSING_CLIENT_TAGS,
        status_detail: format!(
            "Missing required client tags for rack-aware standby assignment: [{}]. Configure them via 'client.tag.<tagKey>' in your Streams config.",
            missing.join(", ")
        ),
        ..Default::default()
    })
}

/// `throwIfRequestContainsInvalidTasks`.
pub(crate) fn invalid_tasks(configured: &ConfiguredTopology, tasks: &[req::TaskIds]) -> Result<()> {
    for t in tasks {
        let Some(sub) = configured.subtopologies.get(&t.subtopology_id) else {
            return Err(CoordinatorError::invalid_request(format!(
                "Subtopology {} does not exist in the topology.",
                t.subtopology_id
            )));
        };
        if let Some(p) = t
            .partitions
            .iter()
            .find(|p| **p < 0 || **p >= sub.num_tasks)
        {
            return Err(CoordinatorError::invalid_request(format!(
                "Task {p} for subtopology {} is invalid. Number of tasks for this subtopology: {}",
                t.subtopology_id, sub.num_tasks
            )));
        }
    }
    Ok(())
}

/// Every owned-task list of the request against the topology.
pub(super) fn invalid_owned_tasks(
    configured: &ConfiguredTopology,
    request: &StreamsGroupHeartbeatRequest,
) -> Result<()> {
    [
        &request.active_tasks,
        &request.standby_tasks,
        &request.warmup_tasks,
    ]
    .into_iter()
    .flatten()
    .try_for_each(|tasks| invalid_tasks(configured, tasks))
}

fn to_tasks(ids: &[req::TaskIds]) -> Tasks {
    let mut out = Tasks::new();
    for t in ids {
        out.entry(Id::from(t.subtopology_id.as_str()))
            .or_default()
            .extend(t.partitions.iter().copied());
    }
    out.retain(|_, p| !p.is_empty());
    out
}

pub(super) fn owned_tasks(request: &StreamsGroupHeartbeatRequest) -> Option<TasksTuple> {
    match (
        &request.active_tasks,
        &request.standby_tasks,
        &request.warmup_tasks,
    ) {
        (Some(a), Some(s), Some(w)) => Some(TasksTuple {
            active: to_tasks(a),
            standby: to_tasks(s),
            warmup: to_tasks(w),
        }),
        _ => None,
    }
}

/// The members as the assignor should see them: the group's, with the updated member in place
/// (and a replaced static member gone).
pub(super) fn members_view(
    group: &StreamsGroup,
    updated: &StreamsGroupMember,
    replaced: Option<&StreamsGroupMember>,
) -> kcoord_metadata::KeyedMap<StreamsGroupMember> {
    let mut members = group.members.clone();
    if let Some(old) = replaced {
        members.remove(old.member_id.as_str());
    }
    members.insert(updated.clone());
    members
}

/// The members once the heartbeat's records are replayed: the group's, with the reconciled
/// member in place and a replaced static member gone, in member id order.
pub(super) fn members_after<'a>(
    group: &'a StreamsGroup,
    reconciled: &'a StreamsGroupMember,
    replaced: Option<&StreamsGroupMember>,
) -> Vec<&'a StreamsGroupMember> {
    let mut members: BTreeMap<&str, &StreamsGroupMember> = group
        .members
        .values()
        .map(|m| (m.member_id.as_str(), m))
        .collect();
    if let Some(old) = replaced {
        members.remove(old.member_id.as_str());
    }
    members.insert(reconciled.member_id.as_str(), reconciled);
    members.into_values().collect()
}

/// The current target assignment, with a replaced static member's entry moved to its new id.
pub(super) fn target_view(
    group: &StreamsGroup,
    replaced: Option<&StreamsGroupMember>,
    new_id: &str,
) -> kcoord_metadata::VecMap<Id, SharedTasks> {
    let mut target = group.target_assignment.clone();
    if let Some(old) = replaced {
        if let Some(t) = target.remove(old.member_id.as_str()) {
            target.insert(new_id.into(), t);
        }
    }
    target
}

pub(super) fn response_tasks(tasks: &Tasks) -> Vec<resp::TaskIds> {
    tasks
        .iter()
        .map(|(s, p)| resp::TaskIds {
            subtopology_id: s.to_string(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}
