//! The steady-state heartbeat: a member of a settled group reporting that nothing changed,
//! which is almost every heartbeat a coordinator sees. It writes no record and changes nothing
//! but the member's session deadline (its one effect), so it is answered from borrowed state:
//! no copy of the member, no record batch, no reconciliation.
//!
//! [`CoordinatorShard::steady_heartbeat`] answers only when every condition under which the
//! full path (`heartbeat.rs`) would write nothing and answer with the plain response holds;
//! otherwise it declines and the full path runs. Its answer must equal the full path's, which
//! `tests/steady.rs` checks by driving two shards, one with this path disabled, through the
//! same random operations.
use kcoord_metadata::{MemberState, StreamsGroup, StreamsGroupMember};
use kcoord_wire::messages::streams_group_heartbeat_request::StreamsGroupHeartbeatRequest;
use kcoord_wire::messages::streams_group_heartbeat_response::StreamsGroupHeartbeatResponse;

use crate::configured_topology::ConfiguredTopology;
use crate::effects::{Effect, MemberEffect};
use crate::error::Result;
use crate::heartbeat::{invalid_tasks, missing_client_tags, HeartbeatContext, HeartbeatResult};
use crate::shard::CoordinatorShard;
use crate::soft_state::GroupSoftState;
use crate::Outcome;

impl CoordinatorShard {
    /// The answer to a steady-state heartbeat, or `None` when the full path must run. Call it
    /// after the request has been validated.
    pub(crate) fn steady_heartbeat(
        &self,
        ctx: &HeartbeatContext,
        request: &StreamsGroupHeartbeatRequest,
        now: i64,
    ) -> Option<Outcome<Result<HeartbeatResult>>> {
        if !self.steady_path || !plain_request(request) {
            return None;
        }
        let group = self.store.state().streams_groups.get(&request.group_id)?;
        let member = group.members.get(request.member_id.as_str())?;
        let soft = self.soft.get(request.group_id.as_str())?;
        let settings = self.settings(&request.group_id);
        let configured = settled_topology(group, soft, &settings.assignment_configs, now)?;
        if !(member_settled(group, member, request, ctx)
            && owned_tasks_valid(request, configured)
            && soft.endpoint_information_epoch == request.endpoint_information_epoch
            && missing_client_tags(
                &settings.config.rack_aware_assignment_tags,
                member,
                ctx.api_version,
            )
            .is_none())
        {
            return None;
        }
        let response = StreamsGroupHeartbeatResponse {
            member_id: member.member_id.to_string(),
            member_epoch: member.member_epoch,
            heartbeat_interval_ms: settings.config.heartbeat_interval_ms,
            task_offset_interval_ms: settings.config.task_offset_interval_ms,
            acceptable_recovery_lag: settings.config.acceptable_recovery_lag,
            endpoint_information_epoch: soft.endpoint_information_epoch,
            status: Some(Vec::new()),
            ..Default::default()
        };
        let steady = Effect::Member(MemberEffect::SteadyHeartbeat {
            group_id: request.group_id.as_str().into(),
            member_id: member.member_id.clone(),
            deadline: now + i64::from(settings.config.session_timeout_ms),
        });
        Some(Outcome {
            records: Vec::new(),
            response: Ok(HeartbeatResult {
                response,
                internal_topics_to_create: Vec::new(),
                topology_description_id: group.topology_description_id,
            }),
            effects: vec![steady],
        })
    }
}

/// A heartbeat of a dynamic member that brings no topology and asks nothing special.
fn plain_request(request: &StreamsGroupHeartbeatRequest) -> bool {
    request.member_epoch > 0
        && request.instance_id.is_none()
        && request.topology.is_none()
        && !request.shutdown_application
        && request.client_tags.is_none()
        && request.task_offsets.is_none()
        && request.task_end_offsets.is_none()
}

/// A settled member's owned tasks are not reconciled, only validated against the topology as
/// the full path does; an invalid list declines, so that the full path reports it.
fn owned_tasks_valid(
    request: &StreamsGroupHeartbeatRequest,
    configured: &ConfiguredTopology,
) -> bool {
    [
        &request.active_tasks,
        &request.standby_tasks,
        &request.warmup_tasks,
    ]
    .into_iter()
    .flatten()
    .all(|tasks| invalid_tasks(configured, tasks).is_ok())
}

/// The group's configured topology, when nothing about the group would change: its topology
/// is configured, ready and validated against the catalog it was hashed with, the assignment
/// configs are the shard's, the target is at the group epoch, and no delay, internal topic or
/// shutdown request is pending.
fn settled_topology<'a>(
    group: &StreamsGroup,
    soft: &'a GroupSoftState,
    assignment_configs: &std::sync::Arc<std::collections::BTreeMap<String, String>>,
    now: i64,
) -> Option<&'a ConfiguredTopology> {
    let topology_epoch = group.topology_epoch()?;
    let (configured_epoch, hash, configured) = soft.configured.as_ref()?;
    let settled = *configured_epoch == topology_epoch
        && *hash == group.metadata_hash
        && configured.status.is_none()
        && configured.internal_topics_to_create.is_empty()
        && group.validated_topology_epoch == topology_epoch
        && group.last_assignment_configs.as_ref() == Some(assignment_configs)
        && group.target_assignment_epoch >= group.group_epoch
        && soft.initial_delay_deadline.is_none_or(|d| d <= now)
        && soft.shutdown_requested_by.is_none();
    settled.then_some(&**configured)
}

/// The member is reconciled at the group's target and the request changes none of its metadata
/// (a null field means unchanged, as in Kafka's member builder).
fn member_settled(
    group: &StreamsGroup,
    member: &StreamsGroupMember,
    request: &StreamsGroupHeartbeatRequest,
    ctx: &HeartbeatContext,
) -> bool {
    let unchanged_endpoint = request.user_endpoint.as_ref().is_none_or(|e| {
        member
            .user_endpoint()
            .as_ref()
            .is_some_and(|m| m.host == e.host && m.port == e.port)
    });
    member.member_epoch == request.member_epoch
        && member.state == MemberState::Stable
        && member.member_epoch == group.target_assignment_epoch
        && group.topology_epoch() == Some(member.topology_epoch)
        && member.client_id == ctx.client_id
        && member.client_host == ctx.client_host
        && (request.rebalance_timeout_ms == -1
            || request.rebalance_timeout_ms == member.rebalance_timeout_ms)
        && request
            .rack_id
            .as_ref()
            .is_none_or(|r| member.rack_id() == Some(r.as_str()))
        && request
            .process_id
            .as_ref()
            .is_none_or(|p| member.process_id == **p)
        && unchanged_endpoint
}
