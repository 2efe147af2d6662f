//! `/api/v1/groups/{groupId}/timeline`: the group's rebalances as the coordinator's own
//! records tell them (`kcoord_coordinator::timeline`), newest last, and the members still
//! reconciling to the group epoch with how long they have been at it: who is holding the
//! rebalance up. The group is described first, so authorization and "no such group" are
//! those of the other endpoints.
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use kcoord_coordinator::record_builders::Removal;
use kcoord_coordinator::timeline::{EventKind, TaskList, TimelineEvent};
use serde::Serialize;

use super::api::{describe_one, Peer};
use super::error::ApiError;
use super::no_store;
use crate::state::ServerState;
use crate::support::clock;

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new().route("/api/v1/groups/{group_id}/timeline", get(timeline))
}

/// `GET .../timeline`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineDocument {
    pub group_id: String,
    pub group_epoch: i32,
    /// When the group epoch last went up; none when no record said it.
    pub group_epoch_since_ms: Option<i64>,
    /// Members whose epoch is not yet the group epoch, longest waiting first.
    pub reconciling: Vec<Reconciling>,
    /// Oldest first; at most the last 256.
    pub events: Vec<Event>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciling {
    pub member_id: String,
    pub process_id: String,
    pub instance_id: Option<String>,
    pub member_epoch: i32,
    /// Since the group epoch went up; none when that time is not known.
    pub waiting_ms: Option<i64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// None when no record of the group said the time.
    pub time_ms: Option<i64>,
    /// `GROUP_EPOCH_BUMPED`, `MEMBER_JOINED`, `MEMBER_LEFT`, `MEMBER_FENCED`, `MEMBER_REMOVED`,
    /// `TARGET_ASSIGNMENT_COMPUTED`, `TARGET_ASSIGNMENT_CHANGED`, `MEMBER_RECONCILED` or
    /// `TOPOLOGY_UPDATED`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub group_epoch: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_epoch: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment_epoch: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_epoch: Option<i32>,
    /// `LEFT`, `SESSION_TIMEOUT` or `REBALANCE_TIMEOUT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// For `MEMBER_RECONCILED`: from the group epoch bump to the member reaching it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub took_ms: Option<i64>,
    /// For `TARGET_ASSIGNMENT_CHANGED`: the active tasks the member's target gained and lost
    /// (sub-topology id -> partitions, the first 16), and how many there were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gained_active_tasks: Option<TaskChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_active_tasks: Option<TaskChange>,
}

#[derive(Debug, Serialize)]
pub struct TaskChange {
    pub tasks: BTreeMap<String, Vec<i32>>,
    pub count: usize,
}

impl TaskChange {
    fn of(list: &TaskList, kind: EventKind) -> Option<TaskChange> {
        let mut tasks: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (subtopology, partition) in &list.tasks {
            tasks
                .entry(subtopology.to_string())
                .or_default()
                .push(*partition);
        }
        (kind == EventKind::TargetAssignmentChanged).then_some(TaskChange {
            tasks,
            count: list.count,
        })
    }
}

async fn timeline(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let group = describe_one(&server, peer, group_id, false).await?;
    let id = group.group_id.clone();
    let read = server
        .coordinators
        .for_group(&id)
        .peek(|shard| {
            shard
                .timeline(&id)
                .map(|t| (t.events().map(|e| event(&e)).collect(), t.epoch_since_ms()))
        })
        .map_err(|e| ApiError::kafka(e.error_code().code(), None))?;
    let (events, since): (Vec<Event>, i64) = read.unwrap_or_default();
    let since = (since >= 0).then_some(since);
    let now = clock::now_ms();
    let mut reconciling: Vec<Reconciling> = group
        .members
        .iter()
        .filter(|m| m.member_epoch != group.group_epoch)
        .map(|m| Reconciling {
            member_id: m.member_id.clone(),
            process_id: m.process_id.clone(),
            instance_id: m.instance_id.clone(),
            member_epoch: m.member_epoch,
            waiting_ms: since.map(|s| (now - s).max(0)),
        })
        .collect();
    reconciling.sort_by_key(|r| r.member_epoch);
    let document = TimelineDocument {
        group_id: id,
        group_epoch: group.group_epoch,
        group_epoch_since_ms: since,
        reconciling,
        events,
    };
    Ok((no_store(), Json(document)).into_response())
}

fn event(e: &TimelineEvent) -> Event {
    Event {
        time_ms: (e.time_ms >= 0).then_some(e.time_ms),
        kind: kind_name(e.kind),
        group_epoch: e.group_epoch,
        member_id: e.member_id.as_ref().map(|m| m.to_string()),
        process_id: e.process_id.clone(),
        instance_id: e.instance_id.clone(),
        member_epoch: e.member_epoch,
        assignment_epoch: e.assignment_epoch,
        topology_epoch: e.topology_epoch,
        reason: e.reason.map(|r| match r {
            Removal::Left => "LEFT",
            Removal::SessionTimeout => "SESSION_TIMEOUT",
            Removal::RebalanceTimeout => "REBALANCE_TIMEOUT",
        }),
        took_ms: e.took_ms,
        gained_active_tasks: TaskChange::of(&e.gained, e.kind),
        lost_active_tasks: TaskChange::of(&e.lost, e.kind),
    }
}

fn kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::GroupEpochBumped => "GROUP_EPOCH_BUMPED",
        EventKind::MemberJoined => "MEMBER_JOINED",
        EventKind::MemberLeft => "MEMBER_LEFT",
        EventKind::MemberFenced => "MEMBER_FENCED",
        EventKind::MemberRemoved => "MEMBER_REMOVED",
        EventKind::TargetAssignmentComputed => "TARGET_ASSIGNMENT_COMPUTED",
        EventKind::TargetAssignmentChanged => "TARGET_ASSIGNMENT_CHANGED",
        EventKind::MemberReconciled => "MEMBER_RECONCILED",
        EventKind::TopologyUpdated => "TOPOLOGY_UPDATED",
    }
}
