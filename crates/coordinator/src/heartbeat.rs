//! StreamsGroupHeartbeat (KIP-1071), following Apache Kafka 4.4's `GroupMetadataManager`, plus
//! one extension: a member joining with a higher topology epoch replaces the group topology.
use std::borrow::Cow;
use std::collections::BTreeMap;

use kcoord_metadata::{
    Endpoint, MemberState, Record, StreamsGroup, StreamsGroupMember, Tasks, TasksTuple, TopicsImage,
};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    self as req, StreamsGroupHeartbeatRequest,
};
use kcoord_wire::messages::streams_group_heartbeat_response::{
    self as resp, StreamsGroupHeartbeatResponse,
};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::error::{CoordinatorError, Result};
use crate::reconcile::{reconcile, TaskOwners};
use crate::records;
use crate::shard::CoordinatorShard;
use crate::target;
use crate::topology::{ConfiguredTopology, CreatableTopic};
use crate::validate::{self, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};

/// Heartbeat status codes (`StreamsGroupHeartbeatResponse.Status`).
pub mod status {
    pub const STALE_TOPOLOGY: i8 = 0;
    pub const MISSING_SOURCE_TOPICS: i8 = 1;
    pub const INCORRECTLY_PARTITIONED_TOPICS: i8 = 2;
    pub const MISSING_INTERNAL_TOPICS: i8 = 3;
    pub const SHUTDOWN_APPLICATION: i8 = 4;
    pub const ASSIGNMENT_DELAYED: i8 = 5;
    pub const MISSING_CLIENT_TAGS: i8 = 6;
}

/// Who is asking, as the network layer knows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeartbeatContext<'a> {
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub api_version: i16,
}

/// The outcome of a heartbeat: the response (without the KIP-1331 fields, which depend on the
/// plugin and the negotiated version), the internal topics to create, and what the KIP-1331
/// layer needs to decide on a topology push.
#[derive(Debug, Clone)]
pub struct HeartbeatResult {
    pub response: StreamsGroupHeartbeatResponse,
    pub internal_topics_to_create: Vec<CreatableTopic>,
    /// The group's current TopologyDescriptionId, unless the member is STALE_TOPOLOGY or left.
    pub topology_description_id: Option<Uuid>,
}

impl CoordinatorShard {
    pub fn streams_group_heartbeat(
        &mut self,
        ctx: &HeartbeatContext,
        request: &StreamsGroupHeartbeatRequest,
        topics: &TopicsImage,
        now: i64,
    ) -> Result<HeartbeatResult> {
        validate::heartbeat_request(request)?;
        if let Some(topology) = &request.topology {
            validate::topology_topic_names(topology)?;
        }
        if request.member_epoch == LEAVE_EPOCH || request.member_epoch == STATIC_LEAVE_EPOCH {
            return self.leave(request);
        }
        if let Some(steady) = self.steady_heartbeat(ctx, request, now) {
            return Ok(steady);
        }
        self.join_or_heartbeat(ctx, request, topics, now)
    }

    fn existing_group(&self, group_id: &str) -> Result<&StreamsGroup> {
        self.group(group_id)
            .ok_or_else(|| self.missing_streams_group(group_id, false))
    }

    /// The error for a streams group that does not exist: another type of group (offsets
    /// only) is "not a streams group"; else `getStreamsGroupOrThrow`'s words for a heartbeat,
    /// `group()`'s for the other paths (`any`).
    pub(crate) fn missing_streams_group(&self, group_id: &str, any: bool) -> CoordinatorError {
        if self.state().offsets.group(group_id).is_some() {
            CoordinatorError::not_a_streams_group(group_id)
        } else if any {
            CoordinatorError::any_group_not_found(group_id)
        } else {
            CoordinatorError::group_not_found(group_id)
        }
    }

    fn leave(&mut self, request: &StreamsGroupHeartbeatRequest) -> Result<HeartbeatResult> {
        if self.group(&request.group_id).is_none() {
            return Err(self.missing_streams_group(&request.group_id, true));
        }
        if request.shutdown_application {
            // Kafka records the request before it looks the member up (`streamsGroupLeave`).
            let member_id = request.member_id.clone();
            self.soft_mut(&request.group_id)
                .shutdown_requested_by
                .get_or_insert(member_id);
        }
        let group = self.existing_group(&request.group_id)?;
        let member = match &request.instance_id {
            None => group
                .members
                .get(request.member_id.as_str())
                .ok_or_else(|| {
                    CoordinatorError::unknown_member(&group.group_id, &request.member_id)
                })?,
            Some(instance) => {
                let m = static_member(group, instance).ok_or_else(|| {
                    CoordinatorError::new(
                        ErrorCode::UNKNOWN_MEMBER_ID,
                        format!("Instance id {instance} is unknown."),
                    )
                })?;
                if m.member_id != request.member_id {
                    return Err(fenced_instance(&request.member_id, instance, &m.member_id));
                }
                m
            }
        };
        let member_id = member.member_id.clone();
        let group_id = group.group_id.clone();
        let records = if request.member_epoch == STATIC_LEAVE_EPOCH {
            // A static member's temporary leave keeps its assignment for the rejoin.
            let mut leaving = member.clone();
            leaving.member_epoch = STATIC_LEAVE_EPOCH;
            leaving.pending_revocation = Default::default();
            for epoch in leaving.active_task_epochs.values_mut() {
                *epoch = 0;
            }
            vec![records::current_assignment(&group_id, &leaving)]
        } else {
            self.stats.rebalanced();
            records::fence_member(group, &member_id)
        };
        if request.member_epoch == LEAVE_EPOCH {
            self.timers.cancel_member(&group_id, &member_id);
            self.forget_member_offsets(&group_id, &member_id);
        }
        self.append(records)?;
        self.forget_if_empty(&group_id);
        Ok(HeartbeatResult {
            response: StreamsGroupHeartbeatResponse {
                member_id: request.member_id.clone(),
                member_epoch: request.member_epoch,
                status: Some(Vec::new()),
                ..Default::default()
            },
            internal_topics_to_create: Vec::new(),
            topology_description_id: None,
        })
    }

    fn join_or_heartbeat(
        &mut self,
        ctx: &HeartbeatContext,
        request: &StreamsGroupHeartbeatRequest,
        topics: &TopicsImage,
        now: i64,
    ) -> Result<HeartbeatResult> {
        let group_id = request.group_id.as_str();
        let joining = request.member_epoch == JOIN_EPOCH;
        let settings = self.group_settings(group_id);
        let mut records: Vec<Record> = Vec::new();
        let mut statuses: Vec<resp::Status> = Vec::new();

        // The group: created on join (with a fresh TopologyDescriptionId), else it must exist.
        let created = self.group(group_id).is_none();
        if !joining && created {
            return Err(self.missing_streams_group(group_id, false));
        }
        // A group known only by its committed offsets is not new to the count.
        if created && self.store.state().offsets.group(group_id).is_none() {
            self.check_room_for_group()?;
        }
        let new_id = if created { Some(self.mint_id()) } else { None };
        let upgrade_id = self.mint_id_if_upgrade(group_id, request);
        // Stands in for the group until it exists; allocates only when the group is new.
        let empty = if created {
            new_group(group_id)
        } else {
            StreamsGroup::default()
        };
        let group_ref = self.group(group_id).unwrap_or(&empty);
        if joining {
            check_group_size(group_ref, request, settings.config.max_size)?;
        }
        let (member, replaced) = resolve_member(group_ref, request, joining)?;
        // A static replacement is not a new member: it copies the old one (Kafka compares the
        // copy with the updated member, so an unchanged rejoin bumps nothing).
        let is_new_member =
            replaced.is_none() && !group_ref.members.contains_key(member.member_id.as_str());
        let was_empty = group_ref.members.is_empty();
        let mut description_id = new_id.or(group_ref.topology_description_id);

        // Static member replacement: the new member id takes over the old one's state.
        if let Some(old) = &replaced {
            records.extend(records::replace_member(group_ref, old, &member));
        }

        // 1. Member metadata.
        let updated = updated_member(&member, request, ctx, joining);
        let mut bump = false;
        if is_new_member || !metadata_equal(&member, &updated) {
            records.push(records::member_metadata(group_id, &updated));
            bump = is_new_member
                || request.instance_id.is_none()
                || epoch_relevant_change(&member, &updated);
        }

        // 2. Topology: initialised by the first joiner; a higher epoch replaces it (extension).
        // `new_topology` is the request's when it initialises or replaces the group's; the
        // group's own is only borrowed (below), never copied.
        let mut new_topology = None;
        let mut topology_replaced = false;
        if let Some(t) = &request.topology {
            let from_request = records::topology_value(t);
            match &group_ref.topology {
                None => {
                    records.push(records::topology(group_id, &from_request));
                    new_topology = Some(from_request);
                }
                Some(current) if current.epoch > t.epoch => {}
                Some(current) if current.epoch < t.epoch => {
                    records.push(records::topology(group_id, &from_request));
                    new_topology = Some(from_request);
                    topology_replaced = true;
                    description_id = upgrade_id;
                    bump = true;
                }
                Some(current) if !records::same_topology(current, &from_request) => {
                    return Err(CoordinatorError::invalid_request(
                        "Topology updates are not supported yet.",
                    ));
                }
                Some(_) => {}
            }
        }
        let topology_epoch = match (&new_topology, &group_ref.topology) {
            (Some(t), _) | (None, Some(t)) => t.epoch,
            (None, None) => {
                return Err(CoordinatorError::new(
                    ErrorCode::UNKNOWN_SERVER_ERROR,
                    "The group has no topology.",
                ));
            }
        };
        let stale = updated.topology_epoch < topology_epoch;
        if stale {
            statuses.push(resp::Status {
                status_code: status::STALE_TOPOLOGY,
                status_detail: format!(
                    "The member's topology epoch {} is behind the group's topology epoch {}.",
                    updated.topology_epoch, topology_epoch
                ),
                ..Default::default()
            });
        }

        // 3. Configure the topology against the topic catalog.
        let group_epoch_before = group_ref.group_epoch;
        let metadata_hash_before = group_ref.metadata_hash;
        let validated_before = group_ref.validated_topology_epoch;
        let configs_changed =
            group_ref.last_assignment_configs.as_ref() != Some(&settings.assignment_configs);
        let target_epoch_before = group_ref.target_assignment_epoch;
        let target_timestamp = group_ref.target_assignment_timestamp;
        if topology_replaced {
            self.soft_mut(group_id).configured = None;
        }
        let (metadata_hash, configured) = {
            // Disjoint fields: the topology is borrowed from the log's state while the soft
            // state caches its configuration.
            let topology = match &new_topology {
                Some(t) => t,
                None => self
                    .store
                    .state()
                    .streams_groups
                    .get(group_id)
                    .and_then(|g| g.topology.as_ref())
                    .ok_or_else(|| {
                        CoordinatorError::new(
                            ErrorCode::UNKNOWN_SERVER_ERROR,
                            "The group has no topology.",
                        )
                    })?,
            };
            crate::shard::configured_topology_in(&mut self.soft, group_id, topology, topics)?
        };
        // Borrow the group again: configuring touched the shard's soft state.
        let group_ref = self.group(group_id).unwrap_or(&empty);
        if metadata_hash != metadata_hash_before {
            bump = true;
        }
        let validated_epoch = if configured.status.is_none() {
            topology_epoch
        } else {
            -1
        };
        if configured.status.is_none() {
            for tasks in [
                &request.active_tasks,
                &request.standby_tasks,
                &request.warmup_tasks,
            ]
            .into_iter()
            .flatten()
            {
                invalid_tasks(&configured, tasks)?;
            }
        }
        // TaskOffsets / TaskEndOffsets: kept in memory after the task checks (Kafka updates
        // them only when at least one list is reported; a null list keeps the last one).
        let reported_offsets =
            if request.task_offsets.is_some() || request.task_end_offsets.is_some() {
                let previous = self
                    .soft
                    .get(group_id)
                    .and_then(|s| s.task_offsets.get(updated.member_id.as_str()))
                    .cloned()
                    .unwrap_or_default();
                Some(previous.update(
                    request.task_offsets.as_deref(),
                    request.task_end_offsets.as_deref(),
                )?)
            } else {
                None
            };
        if validated_epoch != validated_before {
            bump = true;
        }
        if configs_changed {
            bump = true;
        }
        let group_epoch = if bump {
            self.stats.rebalanced();
            group_epoch_before + 1
        } else {
            group_epoch_before
        };
        if bump || created || topology_replaced {
            records.push(records::group_metadata(
                group_id,
                group_epoch,
                metadata_hash,
                validated_epoch,
                &settings.assignment_configs,
                group_ref,
                description_id,
            ));
        }

        // 4. Target assignment: only the member's own slice is needed unless it is recomputed.
        let delay = if was_empty && settings.config.initial_rebalance_delay_ms > 0 {
            let deadline = now + i64::from(settings.config.initial_rebalance_delay_ms);
            Some(self.arm_initial_delay(group_id, deadline))
        } else {
            self.soft
                .get(group_id)
                .and_then(|s| s.initial_delay_deadline)
        }
        .filter(|d| *d > now);
        let group_ref = self.group(group_id).unwrap_or(&empty);
        // The member's slice of the target: `None` = the group's current one, looked up only if
        // the member has to be reconciled (the group does not change before that).
        // During the initial delay Kafka reconciles the member towards the group's current
        // assignment epoch with an empty target (`maybeUpdateStreamsTargetAssignment` returns
        // `Map.of()`): a member of a new group gets epoch 1 and no tasks.
        let (target_epoch, computed_target) = if delay.is_some() {
            statuses.push(delayed(
                "Assignment delayed due to the configured initial rebalance delay.",
            ));
            (target_epoch_before, Some(TasksTuple::default()))
        } else if target_epoch_before >= group_epoch {
            (target_epoch_before, None)
        } else if !target::can_compute(
            target_timestamp,
            settings.config.assignment_interval_ms,
            now,
        ) {
            statuses.push(delayed(
                "Assignment delayed due to the configured assignment interval.",
            ));
            (target_epoch_before, None)
        } else {
            let members = members_view(group_ref, &updated, replaced.as_ref());
            let previous = target_view(group_ref, replaced.as_ref(), &updated.member_id);
            let mut offsets = self.task_offsets(group_id);
            if let Some(old) = &replaced {
                offsets.remove(old.member_id.as_str());
            }
            if let Some(reported) = &reported_offsets {
                offsets.insert(updated.member_id.to_string(), reported.clone());
            }
            self.stats.assigned();
            let computed = target::compute(
                &members,
                &configured,
                settings.config.num_standby_replicas,
                &offsets,
            );
            records.extend(target::records(
                group_id,
                &previous,
                &computed,
                group_epoch,
                now,
            ));
            (
                group_epoch,
                Some(
                    computed
                        .get(updated.member_id.as_str())
                        .cloned()
                        .unwrap_or_default(),
                ),
            )
        };

        // 5. Reconcile the member towards its target.
        let settled = updated.state == MemberState::Stable && updated.member_epoch == target_epoch;
        let reconciled: Cow<'_, StreamsGroupMember> = if settled {
            updated
        } else {
            let member_target = computed_target.unwrap_or_else(|| {
                let id = replaced
                    .as_ref()
                    .map_or(updated.member_id.as_str(), |old| old.member_id.as_str());
                group_ref
                    .target_assignment
                    .get(id)
                    .cloned()
                    .unwrap_or_default()
            });
            let owners = TaskOwners::of(group_ref);
            Cow::Owned(reconcile(
                &updated,
                target_epoch,
                &member_target,
                &owners,
                owned_tasks(request).as_ref(),
            )?)
        };
        if !assignment_state_equal(&reconciled, &member) {
            records.push(records::current_assignment(group_id, &reconciled));
        }

        self.append(records)?;
        self.update_timers(group_id, &member, &reconciled, replaced.as_ref(), now);
        if let Some(old) = &replaced {
            self.forget_member_offsets(group_id, &old.member_id);
        }
        if let Some(reported) = reported_offsets {
            self.soft_mut(group_id)
                .task_offsets
                .insert(reconciled.member_id.to_string(), reported);
        }
        if request.shutdown_application {
            self.soft_mut(group_id)
                .shutdown_requested_by
                .get_or_insert_with(|| reconciled.member_id.to_string());
        }

        // 6. The response.
        let endpoint_changed = member.user_endpoint != reconciled.user_endpoint;
        let tasks_changed = reconciled.assigned != member.assigned;
        let soft = self.soft_mut(group_id);
        let endpoint_bumped =
            endpoint_changed || (tasks_changed && reconciled.user_endpoint.is_some());
        // Kafka bumps the epoch on the group object of this heartbeat; when the heartbeat
        // created the group, that object is dropped for the replayed one (at 0), and the
        // response says 0, though the endpoints are sent against the bumped epoch.
        let endpoint_epoch = soft.endpoint_information_epoch + i32::from(endpoint_bumped);
        if !created {
            soft.endpoint_information_epoch = endpoint_epoch;
        }
        let answered_endpoint_epoch = if created { 0 } else { endpoint_epoch };
        if let Some(s) = &configured.status {
            statuses.push(resp::Status {
                status_code: s.code(),
                status_detail: s.detail().to_string(),
                ..Default::default()
            });
        }
        if let Some(by) = &soft.shutdown_requested_by {
            statuses.push(resp::Status {
                status_code: status::SHUTDOWN_APPLICATION,
                status_detail: format!(
                    "Streams group member {by} encountered a fatal error and requested a shutdown for the entire application."
                ),
                ..Default::default()
            });
        }
        if let Some(s) = missing_client_tags(
            &settings.config.rack_aware_assignment_tags,
            &reconciled,
            ctx.api_version,
        ) {
            statuses.push(s);
        }

        let mut response = StreamsGroupHeartbeatResponse {
            member_id: reconciled.member_id.to_string(),
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: settings.config.heartbeat_interval_ms,
            task_offset_interval_ms: settings.config.task_offset_interval_ms,
            acceptable_recovery_lag: settings.config.acceptable_recovery_lag,
            endpoint_information_epoch: answered_endpoint_epoch,
            ..Default::default()
        };
        if joining || tasks_changed {
            response.active_tasks = Some(response_tasks(&reconciled.assigned.active));
            response.standby_tasks = Some(response_tasks(&reconciled.assigned.standby));
            response.warmup_tasks = Some(response_tasks(&reconciled.assigned.warmup));
        }
        let group_now = self.existing_group(group_id)?;
        if request.endpoint_information_epoch != endpoint_epoch {
            response.partitions_by_user_endpoint = Some(
                crate::endpoints::partitions_by_user_endpoint(group_now, &configured, topics),
            );
        }
        response.status = Some(statuses);
        Ok(HeartbeatResult {
            response,
            internal_topics_to_create: configured.internal_topics_to_create.clone(),
            topology_description_id: if stale {
                None
            } else {
                group_now.topology_description_id
            },
        })
    }

    /// A join with a higher topology epoch than the group's gets a new TopologyDescriptionId.
    fn mint_id_if_upgrade(
        &mut self,
        group_id: &str,
        request: &StreamsGroupHeartbeatRequest,
    ) -> Option<Uuid> {
        let request_epoch = request.topology.as_ref()?.epoch;
        let group_epoch = self.group(group_id)?.topology_epoch()?;
        (request_epoch > group_epoch).then(|| self.mint_id())
    }

    fn update_timers(
        &mut self,
        group_id: &str,
        before: &StreamsGroupMember,
        after: &StreamsGroupMember,
        replaced: Option<&StreamsGroupMember>,
        now: i64,
    ) {
        let session = now + i64::from(self.group_settings(group_id).config.session_timeout_ms);
        self.timers
            .schedule_session(group_id, &after.member_id, session);
        if let Some(old) = replaced.filter(|old| old.member_id != after.member_id) {
            self.timers.cancel_member(group_id, &old.member_id);
        }
        if after.state == MemberState::UnrevokedTasks {
            if before.state != MemberState::UnrevokedTasks
                || before.member_epoch != after.member_epoch
            {
                let deadline = now + i64::from(after.rebalance_timeout_ms.max(0));
                self.timers.schedule_rebalance(
                    group_id,
                    &after.member_id,
                    deadline,
                    after.member_epoch,
                );
            }
        } else if before.state == MemberState::UnrevokedTasks {
            self.timers.cancel_rebalance(group_id, &after.member_id);
        }
    }
}

/// A group as Kafka creates it (group and assignment epoch 1, `StreamsGroup::new`).
pub(crate) fn new_group(group_id: &str) -> StreamsGroup {
    StreamsGroup::new(group_id)
}

fn delayed(detail: &str) -> resp::Status {
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
        .filter(|t| !member.client_tags.contains_key(*t))
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

fn fenced_instance(member_id: &str, instance: &str, owner: &str) -> CoordinatorError {
    CoordinatorError::new(
        ErrorCode::FENCED_INSTANCE_ID,
        format!(
            "Static member {member_id} with instance id {instance} was fenced by member {owner}."
        ),
    )
}

pub(crate) fn static_member<'a>(
    group: &'a StreamsGroup,
    instance_id: &str,
) -> Option<&'a StreamsGroupMember> {
    group
        .members
        .values()
        .find(|m| m.instance_id.as_deref() == Some(instance_id))
}

fn check_group_size(
    group: &StreamsGroup,
    request: &StreamsGroupHeartbeatRequest,
    max_size: i32,
) -> Result<()> {
    if let Some(instance) = &request.instance_id {
        if static_member(group, instance).is_some() {
            return Ok(());
        }
    }
    if group.members.len() >= max_size.max(0) as usize
        && !group.members.contains_key(request.member_id.as_str())
    {
        return Err(CoordinatorError::new(
            ErrorCode::GROUP_MAX_SIZE_REACHED,
            format!("The streams group has reached its maximum capacity of {max_size} members."),
        ));
    }
    Ok(())
}

/// Finds or creates the member; returns it and, for a static rejoin, the member it replaces.
fn resolve_member(
    group: &StreamsGroup,
    request: &StreamsGroupHeartbeatRequest,
    joining: bool,
) -> Result<(StreamsGroupMember, Option<StreamsGroupMember>)> {
    let new_member = || StreamsGroupMember {
        member_id: request.member_id.as_str().into(),
        rebalance_timeout_ms: -1,
        ..Default::default()
    };
    let Some(instance) = &request.instance_id else {
        let member = match group.members.get(request.member_id.as_str()) {
            Some(m) => m.clone(),
            None if joining => new_member(),
            None => {
                return Err(CoordinatorError::unknown_member(
                    &group.group_id,
                    &request.member_id,
                ))
            }
        };
        check_epoch(&member, request)?;
        return Ok((member, None));
    };
    let existing = static_member(group, instance);
    if !joining {
        let Some(m) = existing else {
            return Err(CoordinatorError::new(
                ErrorCode::UNKNOWN_MEMBER_ID,
                format!("Instance id {instance} is unknown."),
            ));
        };
        if m.member_id != request.member_id {
            return Err(fenced_instance(&request.member_id, instance, &m.member_id));
        }
        check_epoch(m, request)?;
        return Ok((m.clone(), None));
    }
    // `getOrMaybeCreateStaticStreamsGroupMember`: a held instance id is refused even to its own
    // member id; only after a static leave (-2) does the joiner replace the old member (with
    // the same or a new member id), taking over its assignment at epoch 0.
    match existing {
        None => Ok((group.members.get(request.member_id.as_str()).cloned().unwrap_or_else(new_member), None)),
        Some(old) if old.member_epoch != STATIC_LEAVE_EPOCH => Err(CoordinatorError::new(
            ErrorCode::UNRELEASED_INSTANCE_ID,
            format!(
                "Static member {} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                request.member_id, old.member_id
            ),
        )),
        Some(old) => {
            let mut replacement = old.clone();
            replacement.member_id = request.member_id.as_str().into();
            replacement.member_epoch = 0;
            replacement.previous_member_epoch = 0;
            Ok((replacement, Some(old.clone())))
        }
    }
}

/// `throwIfStreamsGroupMemberEpochIsInvalid`, with the lost-response tolerance.
fn check_epoch(member: &StreamsGroupMember, request: &StreamsGroupHeartbeatRequest) -> Result<()> {
    let epoch = request.member_epoch;
    if epoch == JOIN_EPOCH {
        return Ok(());
    }
    if epoch > member.member_epoch {
        return Err(CoordinatorError::fenced(format!(
            "The streams group member has a greater member epoch ({epoch}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
            member.member_epoch
        )));
    }
    if epoch < member.member_epoch {
        // Kafka accepts the previous epoch only with all three owned lists reported and each
        // contained in the current assignment (a lost response); a null list fences.
        let lost_response = epoch == member.previous_member_epoch
            && owned_contained(request.active_tasks.as_deref(), &member.assigned.active)
            && owned_contained(request.standby_tasks.as_deref(), &member.assigned.standby)
            && owned_contained(request.warmup_tasks.as_deref(), &member.assigned.warmup);
        if !lost_response {
            return Err(CoordinatorError::fenced(format!(
                "The streams group member has a smaller member epoch ({epoch}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            )));
        }
    }
    Ok(())
}

/// `areOwnedTasksContainedInAssignedTasks`: not reported (null) is not contained, and neither
/// is an entry for a sub-topology the member holds nothing of, even with no partitions.
fn owned_contained(owned: Option<&[req::TaskIds]>, assigned: &Tasks) -> bool {
    let Some(owned) = owned else {
        return false;
    };
    owned.iter().all(|t| {
        assigned
            .get(&t.subtopology_id)
            .is_some_and(|a| t.partitions.iter().all(|p| a.contains(p)))
    })
}

/// The member with the request's metadata applied (null = unchanged, as Kafka's builder does).
/// Borrowed when nothing changes, as in a steady-state heartbeat: the member is copied only to
/// change a field.
fn updated_member<'a>(
    member: &'a StreamsGroupMember,
    request: &StreamsGroupHeartbeatRequest,
    ctx: &HeartbeatContext,
    joining: bool,
) -> Cow<'a, StreamsGroupMember> {
    let mut m = Cow::Borrowed(member);
    if let Some(i) = &request.instance_id {
        if m.instance_id.as_ref() != Some(i) {
            m.to_mut().instance_id = Some(i.clone());
        }
    }
    if let Some(r) = &request.rack_id {
        if m.rack_id.as_ref() != Some(r) {
            m.to_mut().rack_id = Some(r.clone());
        }
    }
    if request.rebalance_timeout_ms != -1 && m.rebalance_timeout_ms != request.rebalance_timeout_ms
    {
        m.to_mut().rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(t) = &request.topology {
        if m.topology_epoch != t.epoch {
            m.to_mut().topology_epoch = t.epoch;
        }
    }
    if m.client_id != ctx.client_id {
        m.to_mut().client_id = ctx.client_id.into();
    }
    if m.client_host != ctx.client_host {
        m.to_mut().client_host = ctx.client_host.into();
    }
    if let Some(p) = &request.process_id {
        if m.process_id != *p {
            m.to_mut().process_id.clone_from(p);
        }
    }
    if let Some(tags) = &request.client_tags {
        let tags: BTreeMap<String, String> = tags
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect();
        if m.client_tags != tags {
            m.to_mut().client_tags = tags;
        }
    }
    if joining || request.user_endpoint.is_some() {
        let endpoint = request.user_endpoint.as_ref().map(|e| Endpoint {
            host: e.host.clone(),
            port: e.port,
        });
        if m.user_endpoint != endpoint {
            m.to_mut().user_endpoint = endpoint;
        }
    }
    m
}

fn metadata_equal(a: &StreamsGroupMember, b: &StreamsGroupMember) -> bool {
    a.member_id == b.member_id
        && a.instance_id == b.instance_id
        && a.rack_id == b.rack_id
        && a.client_id == b.client_id
        && a.client_host == b.client_host
        && a.rebalance_timeout_ms == b.rebalance_timeout_ms
        && a.topology_epoch == b.topology_epoch
        && a.process_id == b.process_id
        && a.user_endpoint == b.user_endpoint
        && a.client_tags == b.client_tags
}

fn assignment_state_equal(a: &StreamsGroupMember, b: &StreamsGroupMember) -> bool {
    a.member_id == b.member_id
        && a.member_epoch == b.member_epoch
        && a.previous_member_epoch == b.previous_member_epoch
        && a.state == b.state
        && a.assigned == b.assigned
        && a.active_task_epochs == b.active_task_epochs
        && a.pending_revocation == b.pending_revocation
}

/// KIP-1071: a static member's rejoin bumps the epoch only for these changes.
fn epoch_relevant_change(a: &StreamsGroupMember, b: &StreamsGroupMember) -> bool {
    a.topology_epoch != b.topology_epoch
        || a.rack_id != b.rack_id
        || a.client_tags != b.client_tags
        || a.process_id != b.process_id
}

fn to_tasks(ids: &[req::TaskIds]) -> Tasks {
    let mut out = Tasks::new();
    for t in ids {
        out.entry(t.subtopology_id.clone())
            .or_default()
            .extend(t.partitions.iter().copied());
    }
    out.retain(|_, p| !p.is_empty());
    out
}

fn owned_tasks(request: &StreamsGroupHeartbeatRequest) -> Option<TasksTuple> {
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

/// The members as the assignor should see them: the group's, with the updated member in place
/// (and a replaced static member gone).
fn members_view(
    group: &StreamsGroup,
    updated: &StreamsGroupMember,
    replaced: Option<&StreamsGroupMember>,
) -> BTreeMap<crate::shard::Id, StreamsGroupMember> {
    let mut members = group.members.clone();
    if let Some(old) = replaced {
        members.remove(old.member_id.as_str());
    }
    members.insert(updated.member_id.as_str().into(), updated.clone());
    members
}

/// The current target assignment, with a replaced static member's entry moved to its new id.
fn target_view(
    group: &StreamsGroup,
    replaced: Option<&StreamsGroupMember>,
    new_id: &str,
) -> BTreeMap<String, TasksTuple> {
    let mut target = group.target_assignment.clone();
    if let Some(old) = replaced {
        if let Some(t) = target.remove(old.member_id.as_str()) {
            target.insert(new_id.to_string(), t);
        }
    }
    target
}

fn response_tasks(tasks: &Tasks) -> Vec<resp::TaskIds> {
    tasks
        .iter()
        .map(|(s, p)| resp::TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}
