//! A join or a full heartbeat, in Kafka's steps (`GroupMetadataManager.streamsGroupHeartbeat`):
//! the member's metadata, the group's topology, its configuration against the catalog, the
//! group epoch, the target assignment, the member's reconciliation, and the answer. Each step
//! adds to the heartbeat's records, effects and statuses; nothing changes until the runtime
//! commits them.
use std::borrow::Cow;
use std::sync::Arc;

use kcoord_metadata::{MemberState, Record, StreamsGroup, StreamsGroupMember, TasksTuple};
use kcoord_wire::messages::streams_group_heartbeat_request::StreamsGroupHeartbeatRequest;
use kcoord_wire::messages::streams_group_heartbeat_response::{
    self as resp, StreamsGroupHeartbeatResponse,
};
use kcoord_wire::records::StreamsGroupTopologyValue;
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use super::member::{
    assignment_state_equal, check_group_size, epoch_relevant_change, metadata_equal,
    rebalance_timer, resolve_member, updated_member,
};
use super::response::{
    delayed, invalid_owned_tasks, members_after, members_view, missing_client_tags, owned_tasks,
    response_tasks, target_view,
};
use super::{refused, status, HeartbeatContext, HeartbeatResult};
use crate::configured_topology::ConfiguredTopology;
use crate::effects::{Effect, GroupEffect, MemberEffect};
use crate::error::{CoordinatorError, Result};
use crate::reconcile::{reconcile, TaskOwners};
use crate::record_builders;
use crate::shard::{CoordinatorShard, GroupSettings};
use crate::soft_state::MemberTaskOffsets;
use crate::target;
use crate::validate::JOIN_EPOCH;
use crate::Outcome;

/// One join or full heartbeat being decided.
pub(super) struct JoinOrHeartbeat<'a> {
    shard: &'a CoordinatorShard,
    ctx: &'a HeartbeatContext<'a>,
    request: &'a StreamsGroupHeartbeatRequest,
    now: i64,
    group_id: &'a str,
    joining: bool,
    settings: &'a GroupSettings,
    records: Vec<Record>,
    effects: Vec<Effect>,
    statuses: Vec<resp::Status>,
}

/// The member before and after the request's metadata.
struct MemberChange<'m> {
    /// As stored (or new, or the replacement of a static member).
    member: &'m StreamsGroupMember,
    updated: Cow<'m, StreamsGroupMember>,
    /// The static member this join replaces.
    replaced: Option<&'m StreamsGroupMember>,
}

/// The group's topology after the request: the request's, when it initialises or replaces the
/// group's (the group's own is only borrowed, never copied).
struct TopologyChange {
    new_topology: Option<StreamsGroupTopologyValue>,
    replaced: bool,
    epoch: i32,
    /// The member's topology epoch is behind the group's.
    stale: bool,
}

/// What the group becomes.
struct GroupChange {
    group_epoch: i32,
    description_id: Option<Uuid>,
    configured: Arc<ConfiguredTopology>,
    reported_offsets: Option<MemberTaskOffsets>,
}

impl<'a> JoinOrHeartbeat<'a> {
    pub(super) fn new(
        shard: &'a CoordinatorShard,
        ctx: &'a HeartbeatContext<'a>,
        request: &'a StreamsGroupHeartbeatRequest,
        now: i64,
    ) -> Self {
        let group_id = request.group_id.as_str();
        JoinOrHeartbeat {
            shard,
            ctx,
            request,
            now,
            group_id,
            joining: request.member_epoch == JOIN_EPOCH,
            settings: shard.settings(group_id),
            records: Vec::new(),
            effects: Vec::new(),
            statuses: Vec::new(),
        }
    }

    pub(super) fn run(mut self) -> Outcome<Result<HeartbeatResult>> {
        let created = self.shard.group(self.group_id).is_none();
        // Stands in for the group until it exists; allocates only when the group is new.
        let empty = if created {
            StreamsGroup::new(self.group_id)
        } else {
            StreamsGroup::default()
        };
        let group = self.shard.group(self.group_id).unwrap_or(&empty);
        match self.decide(group, created) {
            Ok(result) => Outcome {
                records: crate::at_latest_version(self.records),
                response: Ok(result),
                effects: self.effects,
            },
            Err(e) => refused(e, self.effects),
        }
    }

    fn decide(&mut self, group: &StreamsGroup, created: bool) -> Result<HeartbeatResult> {
        if !self.joining && created {
            return Err(self.shard.missing_streams_group(self.group_id, false));
        }
        // A group known only by its committed offsets is not new to the count.
        if created && self.shard.state().offsets.group(self.group_id).is_none() {
            self.shard.check_room_for_group()?;
        }
        let minted = self.mint_description_id(group, created);
        if self.joining {
            check_group_size(group, self.request, self.settings.config.max_size)?;
        }
        let (member, replaced) = resolve_member(group, self.request, self.joining)?;
        let change = MemberChange {
            updated: updated_member(&member, self.request, self.ctx, self.joining),
            member: &member,
            replaced: replaced.as_ref(),
        };
        let mut bump = self.member_records(group, &change);
        let topology = self.topology_records(group, &change.updated, &mut bump)?;
        let description_id = match (topology.replaced, created) {
            (true, _) | (_, true) => minted,
            (false, false) => group.topology_description_id,
        };
        let decided =
            self.group_records(group, &change, &topology, description_id, created, bump)?;
        let reconciled = self.reconcile(group, &change, &decided)?;
        self.member_effects(&change, &reconciled, &decided);
        Ok(self.answer(group, &change, &reconciled, &topology, &decided, created))
    }

    /// A TopologyDescriptionId for a new group, or for a join that replaces the topology
    /// (a higher topology epoch than the group's).
    fn mint_description_id(&mut self, group: &StreamsGroup, created: bool) -> Option<Uuid> {
        let upgrade = self
            .request
            .topology
            .as_ref()
            .zip(group.topology_epoch())
            .is_some_and(|(t, epoch)| t.epoch > epoch);
        (created || upgrade).then(|| {
            self.effects.push(Effect::IdsMinted(1));
            self.shard.mint_id(0)
        })
    }

    /// Step 1: the member's metadata (and a replaced static member's records). Returns whether
    /// the group epoch must be bumped for it.
    fn member_records(&mut self, group: &StreamsGroup, change: &MemberChange) -> bool {
        // A static replacement is not a new member: it copies the old one (Kafka compares the
        // copy with the updated member, so an unchanged rejoin bumps nothing).
        let is_new_member = change.replaced.is_none()
            && !group.members.contains_key(change.member.member_id.as_str());
        if let Some(old) = change.replaced {
            self.records
                .extend(record_builders::replace_member(group, old, change.member));
        }
        let updated = &*change.updated;
        if !is_new_member && metadata_equal(change.member, updated) {
            return false;
        }
        self.records
            .push(record_builders::member_metadata(self.group_id, updated));
        is_new_member
            || self.request.instance_id.is_none()
            || epoch_relevant_change(change.member, updated)
    }

    /// Step 2: the topology, initialised by the first joiner; a higher epoch replaces it
    /// (kcoord's extension).
    fn topology_records(
        &mut self,
        group: &StreamsGroup,
        updated: &StreamsGroupMember,
        bump: &mut bool,
    ) -> Result<TopologyChange> {
        let mut new_topology = None;
        let mut replaced = false;
        if let Some(t) = &self.request.topology {
            let from_request = record_builders::topology_value(t);
            match &group.topology {
                None => {
                    self.records
                        .push(record_builders::topology(self.group_id, &from_request));
                    new_topology = Some(from_request);
                }
                Some(current) if current.epoch > t.epoch => {}
                Some(current) if current.epoch < t.epoch => {
                    self.records
                        .push(record_builders::topology(self.group_id, &from_request));
                    new_topology = Some(from_request);
                    replaced = true;
                    *bump = true;
                }
                Some(current) if !record_builders::same_topology(current, &from_request) => {
                    return Err(CoordinatorError::invalid_request(
                        "Topology updates are not supported yet.",
                    ));
                }
                Some(_) => {}
            }
        }
        let epoch = match (&new_topology, &group.topology) {
            (Some(t), _) | (None, Some(t)) => t.epoch,
            (None, None) => return Err(no_topology()),
        };
        let stale = updated.topology_epoch < epoch;
        if stale {
            self.statuses.push(resp::Status {
                status_code: status::STALE_TOPOLOGY,
                status_detail: format!(
                    "The member's topology epoch {} is behind the group's topology epoch {}.",
                    updated.topology_epoch, epoch
                ),
                ..Default::default()
            });
        }
        Ok(TopologyChange {
            new_topology,
            replaced,
            epoch,
            stale,
        })
    }

    /// Steps 3 and 4: the topology configured against the catalog, the member's reported
    /// task offsets, the group epoch and the group's metadata record.
    fn group_records(
        &mut self,
        group: &StreamsGroup,
        change: &MemberChange,
        topology: &TopologyChange,
        description_id: Option<Uuid>,
        created: bool,
        mut bump: bool,
    ) -> Result<GroupChange> {
        let current = match (&topology.new_topology, &group.topology) {
            (Some(t), _) | (None, Some(t)) => t,
            (None, None) => return Err(no_topology()),
        };
        let (metadata_hash, configured) = self.shard.configured_topology(
            self.group_id,
            current,
            topology.replaced,
            &mut self.effects,
        )?;
        let validated_epoch = if configured.status.is_none() {
            invalid_owned_tasks(&configured, self.request)?;
            topology.epoch
        } else {
            -1
        };
        let reported_offsets = self.reported_offsets(&change.updated.member_id)?;
        let configs_changed =
            group.last_assignment_configs.as_ref() != Some(&self.settings.assignment_configs);
        bump |= metadata_hash != group.metadata_hash
            || validated_epoch != group.validated_topology_epoch
            || configs_changed;
        let group_epoch = group.group_epoch + i32::from(bump);
        if bump {
            self.effects.push(Effect::Rebalanced);
        }
        if bump || created || topology.replaced {
            self.records.push(record_builders::group_metadata(
                self.group_id,
                group_epoch,
                metadata_hash,
                validated_epoch,
                &self.settings.assignment_configs,
                group,
                record_builders::DescriptionId {
                    id: description_id,
                    topology_epoch: current.epoch,
                    now: self.now,
                },
            ));
        }
        Ok(GroupChange {
            group_epoch,
            description_id,
            configured,
            reported_offsets,
        })
    }

    /// TaskOffsets / TaskEndOffsets: kept in memory after the task checks (Kafka updates them
    /// only when at least one list is reported; a null list keeps the last one).
    fn reported_offsets(&self, member_id: &str) -> Result<Option<MemberTaskOffsets>> {
        let request = self.request;
        if request.task_offsets.is_none() && request.task_end_offsets.is_none() {
            return Ok(None);
        }
        let previous = self
            .shard
            .soft(self.group_id)
            .and_then(|s| s.task_offsets.get(member_id))
            .cloned()
            .unwrap_or_default();
        previous
            .update(
                request.task_offsets.as_deref(),
                request.task_end_offsets.as_deref(),
            )
            .map(Some)
    }

    /// The initial rebalance delay in force, armed by the join that finds the group empty.
    fn initial_delay(&mut self, was_empty: bool) -> Option<i64> {
        let armed = self
            .shard
            .soft(self.group_id)
            .and_then(|s| s.initial_delay_deadline);
        let delay_ms = self.settings.config.initial_rebalance_delay_ms;
        let deadline = if was_empty && delay_ms > 0 && armed.is_none() {
            let deadline = self.now + i64::from(delay_ms);
            self.effects.push(Effect::Group(GroupEffect::InitialDelay {
                group_id: self.group_id.into(),
                deadline,
            }));
            Some(deadline)
        } else {
            armed
        };
        deadline.filter(|d| *d > self.now)
    }

    /// Step 4: the target assignment epoch, and the member's slice of the target when it was
    /// computed (or held back) now; `None` means the group's current target.
    fn target(
        &mut self,
        group: &StreamsGroup,
        change: &MemberChange,
        decided: &GroupChange,
    ) -> (i32, Option<TasksTuple>) {
        let config = &self.settings.config;
        if self.initial_delay(group.members.is_empty()).is_some() {
            // Kafka reconciles the member towards the group's current assignment epoch with an
            // empty target (`maybeUpdateStreamsTargetAssignment` returns `Map.of()`): a member
            // of a new group gets epoch 1 and no tasks.
            self.statuses.push(delayed(
                "Assignment delayed due to the configured initial rebalance delay.",
            ));
            return (group.target_assignment_epoch, Some(TasksTuple::default()));
        }
        if group.target_assignment_epoch >= decided.group_epoch {
            return (group.target_assignment_epoch, None);
        }
        let interval = config.assignment_interval_ms;
        if !target::can_compute(group.target_assignment_timestamp, interval, self.now) {
            self.statuses.push(delayed(
                "Assignment delayed due to the configured assignment interval.",
            ));
            return (group.target_assignment_epoch, None);
        }
        let updated = &*change.updated;
        let members = members_view(group, updated, change.replaced);
        let previous = target_view(group, change.replaced, &updated.member_id);
        let mut offsets = self.shard.task_offsets(self.group_id);
        if let Some(old) = change.replaced {
            offsets.remove(old.member_id.as_str());
        }
        if let Some(reported) = &decided.reported_offsets {
            offsets.insert(updated.member_id.to_string(), reported.clone());
        }
        self.effects.push(Effect::AssignmentComputed);
        let computed = target::compute(
            &members,
            &decided.configured,
            config.num_standby_replicas,
            &offsets,
        );
        let epoch = decided.group_epoch;
        self.records.extend(target::records(
            self.group_id,
            &previous,
            &computed,
            epoch,
            self.now,
        ));
        let slice = computed.get(updated.member_id.as_str()).cloned();
        (epoch, Some(slice.unwrap_or_default()))
    }

    /// Step 5: the member reconciled towards its target, and its assignment record when it
    /// changed.
    fn reconcile<'m>(
        &mut self,
        group: &StreamsGroup,
        change: &'m MemberChange,
        decided: &GroupChange,
    ) -> Result<Cow<'m, StreamsGroupMember>> {
        let (target_epoch, computed_target) = self.target(group, change, decided);
        let updated = &change.updated;
        let settled = updated.state == MemberState::Stable && updated.member_epoch == target_epoch;
        let reconciled = if settled {
            Cow::Borrowed(&**updated)
        } else {
            let member_target = computed_target.unwrap_or_else(|| {
                let id = change
                    .replaced
                    .map_or(updated.member_id.as_str(), |old| old.member_id.as_str());
                group
                    .target_assignment
                    .get(id)
                    .map_or_else(TasksTuple::default, |t| (**t).clone())
            });
            Cow::Owned(reconcile(
                updated,
                target_epoch,
                &member_target,
                &TaskOwners::of(group),
                owned_tasks(self.request).as_ref(),
            )?)
        };
        if !assignment_state_equal(&reconciled, change.member) {
            self.records.push(record_builders::current_assignment(
                self.group_id,
                &reconciled,
            ));
        }
        Ok(reconciled)
    }

    /// The member's timers, the offsets it reported, and its shutdown request.
    fn member_effects(
        &mut self,
        change: &MemberChange,
        reconciled: &StreamsGroupMember,
        decided: &GroupChange,
    ) {
        let group_id = || self.group_id.into();
        let session = self.now + i64::from(self.settings.config.session_timeout_ms);
        self.effects
            .push(Effect::Member(MemberEffect::SessionTimer {
                group_id: group_id(),
                member_id: reconciled.member_id.clone(),
                deadline: session,
            }));
        if let Some(old) = change.replaced {
            let gone = if old.member_id != reconciled.member_id {
                MemberEffect::Gone {
                    group_id: group_id(),
                    member_id: old.member_id.clone(),
                }
            } else {
                MemberEffect::TaskOffsets {
                    group_id: group_id(),
                    member_id: old.member_id.clone(),
                    offsets: None,
                }
            };
            self.effects.push(Effect::Member(gone));
        }
        if let Some(timer) = rebalance_timer(change.member, reconciled, self.group_id, self.now) {
            self.effects.push(Effect::Member(timer));
        }
        if let Some(reported) = &decided.reported_offsets {
            self.effects.push(Effect::Member(MemberEffect::TaskOffsets {
                group_id: group_id(),
                member_id: reconciled.member_id.clone(),
                offsets: Some(reported.clone()),
            }));
        }
        if self.request.shutdown_application {
            self.effects
                .push(Effect::Group(GroupEffect::ShutdownRequested {
                    group_id: group_id(),
                    member_id: reconciled.member_id.to_string(),
                }));
        }
    }

    /// Step 6: the response.
    fn answer(
        &mut self,
        group: &StreamsGroup,
        change: &MemberChange,
        reconciled: &StreamsGroupMember,
        topology: &TopologyChange,
        decided: &GroupChange,
        created: bool,
    ) -> HeartbeatResult {
        let endpoint_epoch = self.endpoint_information_epoch(change.member, reconciled, created);
        self.push_statuses(reconciled, &decided.configured);
        let config = &self.settings.config;
        let tasks_changed = reconciled.assigned() != change.member.assigned();
        let mut response = StreamsGroupHeartbeatResponse {
            member_id: reconciled.member_id.to_string(),
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: config.heartbeat_interval_ms,
            task_offset_interval_ms: config.task_offset_interval_ms,
            acceptable_recovery_lag: config.acceptable_recovery_lag,
            // Kafka bumps the epoch on the group object of this heartbeat; when the heartbeat
            // created the group, that object is dropped for the replayed one (at 0), and the
            // response says 0, though the endpoints are sent against the bumped epoch.
            endpoint_information_epoch: if created { 0 } else { endpoint_epoch },
            ..Default::default()
        };
        if self.joining || tasks_changed {
            response.active_tasks = Some(response_tasks(&reconciled.assigned().active));
            response.standby_tasks = Some(response_tasks(&reconciled.assigned().standby));
            response.warmup_tasks = Some(response_tasks(&reconciled.assigned().warmup));
        }
        if self.request.endpoint_information_epoch != endpoint_epoch {
            let members = members_after(group, reconciled, change.replaced);
            response.partitions_by_user_endpoint =
                Some(crate::endpoints::partitions_by_user_endpoint(
                    members,
                    &decided.configured,
                    &self.shard.topics,
                ));
        }
        response.status = Some(std::mem::take(&mut self.statuses));
        HeartbeatResult {
            response,
            internal_topics_to_create: decided.configured.internal_topics_to_create.clone(),
            topology_description_id: if topology.stale {
                None
            } else {
                decided.description_id
            },
        }
    }

    /// The group's endpoint epoch after this heartbeat: bumped when the member's endpoint
    /// changed, or its tasks changed and it has an endpoint.
    fn endpoint_information_epoch(
        &mut self,
        before: &StreamsGroupMember,
        reconciled: &StreamsGroupMember,
        created: bool,
    ) -> i32 {
        let current = self
            .shard
            .soft(self.group_id)
            .map_or(0, |s| s.endpoint_information_epoch);
        let bumped = before.user_endpoint() != reconciled.user_endpoint()
            || (reconciled.assigned() != before.assigned() && reconciled.user_endpoint().is_some());
        let epoch = current + i32::from(bumped);
        if bumped && !created {
            self.effects
                .push(Effect::Group(GroupEffect::EndpointInformationEpoch {
                    group_id: self.group_id.into(),
                    epoch,
                }));
        }
        epoch
    }

    /// The statuses that do not come from a step: the topology's, a shutdown request, missing
    /// client tags.
    fn push_statuses(&mut self, reconciled: &StreamsGroupMember, configured: &ConfiguredTopology) {
        if let Some(s) = &configured.status {
            self.statuses.push(resp::Status {
                status_code: s.code(),
                status_detail: s.detail().to_string(),
                ..Default::default()
            });
        }
        let requested_before = self
            .shard
            .soft(self.group_id)
            .and_then(|s| s.shutdown_requested_by.clone());
        let requested_now = self
            .request
            .shutdown_application
            .then(|| reconciled.member_id.to_string());
        if let Some(by) = requested_before.or(requested_now) {
            self.statuses.push(resp::Status {
                status_code: status::SHUTDOWN_APPLICATION,
                status_detail: format!(
                    "Streams group member {by} encountered a fatal error and requested a shutdown for the entire application."
                ),
                ..Default::default()
            });
        }
        let tags = &self.settings.config.rack_aware_assignment_tags;
        if let Some(s) = missing_client_tags(tags, reconciled, self.ctx.api_version) {
            self.statuses.push(s);
        }
    }
}

fn no_topology() -> CoordinatorError {
    CoordinatorError::new(
        ErrorCode::UNKNOWN_SERVER_ERROR,
        "The group has no topology.",
    )
}
