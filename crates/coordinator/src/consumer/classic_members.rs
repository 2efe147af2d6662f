//! Classic-protocol members living in a consumer group: SyncGroup, Heartbeat and LeaveGroup
//! as Kafka 4.4's `classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup`
//! and `classicGroupLeaveToConsumerGroup` serve them, and the join and sync timeouts of such a
//! member (`consumerGroupJoinKey`, `consumerGroupSyncKey`). The JoinGroup is in
//! `classic_join`. Such a member reconciles only when it rejoins: a heartbeat answers
//! REBALANCE_IN_PROGRESS while it has something to catch up on, and SyncGroup hands it its
//! current assignment in the consumer protocol.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, ConsumerMemberState};
use kcoord_wire::messages::leave_group_response::MemberResponse;
use kcoord_wire::messages::{HeartbeatRequest, SyncGroupRequest, SyncGroupResponse};
use kcoord_wire::ErrorCode;

use crate::classic::{ClassicEffect, ClassicTask, ClassicTimer, LeavingMember};
use crate::consumer_protocol;
use crate::effects::{Effect, MemberEffect};
use crate::shard::CoordinatorShard;
use crate::tick::TickEvent;
use crate::Outcome;

impl CoordinatorShard {
    /// SyncGroup from a classic member of a consumer group: its current assignment, once it
    /// has caught up with the group's target.
    pub(crate) fn classic_sync_to_consumer_group(
        &self,
        group: &ConsumerGroup,
        req: &SyncGroupRequest,
        now: i64,
    ) -> Outcome<SyncGroupResponse> {
        let error = |code: ErrorCode| SyncGroupResponse {
            error_code: code.code(),
            ..Default::default()
        };
        if group.members.is_empty() {
            return Outcome::answer(error(ErrorCode::UNKNOWN_MEMBER_ID));
        }
        let member = match classic_member(
            group,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
        ) {
            Ok(m) => m,
            Err(code) => return Outcome::answer(error(code)),
        };
        let protocol = first_protocol(member);
        let type_differs = req
            .protocol_type
            .as_deref()
            .is_some_and(|t| t != super::CONSUMER);
        let name_differs = req
            .protocol_name
            .as_deref()
            .is_some_and(|n| Some(n) != protocol.map(|p| p.name.as_str()));
        if type_differs || name_differs {
            return Outcome::answer(error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
        }
        if group.target_assignment_epoch > member.member_epoch
            && member.state != ConsumerMemberState::UnrevokedPartitions
        {
            return Outcome::answer(error(ErrorCode::REBALANCE_IN_PROGRESS))
                .with_effects(self.join_timeout_if_absent(group, member, now));
        }
        let version = protocol.map(|p| consumer_protocol::read_version(&p.metadata));
        let Some(Ok(version)) = version else {
            return Outcome::answer(error(ErrorCode::UNKNOWN_SERVER_ERROR));
        };
        let mut named: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        for (topic, partitions) in &member.assigned {
            if let Some(t) = self.topics().get_by_id(topic) {
                named.insert(t.name.clone(), partitions.keys().copied().collect());
            }
        }
        let response = SyncGroupResponse {
            protocol_type: req.protocol_type.clone(),
            protocol_name: req.protocol_name.clone(),
            assignment: consumer_protocol::write_assignment(&named, version),
            ..Default::default()
        };
        let sync = ClassicTimer::ConsumerSync {
            group_id: group.group_id.as_str().into(),
            member_id: member.member_id.clone(),
        };
        Outcome::answer(response).with_effects(vec![
            Effect::Classic(ClassicEffect::Cancel(sync)),
            session_timer(group, member, now),
        ])
    }

    /// Heartbeat from a classic member of a consumer group: REBALANCE_IN_PROGRESS when it is
    /// behind the target assignment, revoking, or waiting on partitions that are free now.
    pub(crate) fn classic_heartbeat_to_consumer_group(
        &self,
        group: &ConsumerGroup,
        req: &HeartbeatRequest,
        now: i64,
    ) -> Outcome<ErrorCode> {
        let member = match classic_member(
            group,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
        ) {
            Ok(m) => m,
            Err(code) => return Outcome::answer(code),
        };
        let mut effects = vec![session_timer(group, member, now)];
        let rejoin = member.member_epoch < group.target_assignment_epoch
            || member.state == ConsumerMemberState::UnrevokedPartitions
            || (member.state == ConsumerMemberState::UnreleasedPartitions
                && !waiting_on_unreleased_partition(group, member));
        if !rejoin {
            return Outcome::answer(ErrorCode::NONE).with_effects(effects);
        }
        effects.extend(self.join_timeout_if_absent(group, member, now));
        Outcome::answer(ErrorCode::REBALANCE_IN_PROGRESS).with_effects(effects)
    }

    /// LeaveGroup on a consumer group: every member named (of either protocol, as an admin
    /// removes members) is fenced, which may downgrade the group.
    pub(crate) fn classic_leave_to_consumer_group(
        &self,
        group: &ConsumerGroup,
        members: &[LeavingMember],
        now: i64,
    ) -> Outcome<Result<Vec<MemberResponse>, ErrorCode>> {
        let mut answers = Vec::with_capacity(members.len());
        let mut valid: Vec<&ConsumerGroupMember> = Vec::new();
        for leaving in members {
            let found = leaving_member(group, leaving);
            answers.push(MemberResponse {
                member_id: leaving.member_id.clone(),
                group_instance_id: leaving.group_instance_id.clone(),
                error_code: found.err().map_or(0, ErrorCode::code),
                ..Default::default()
            });
            if let Ok(m) = found {
                if !valid.iter().any(|v| v.member_id == m.member_id) {
                    valid.push(m);
                }
            }
        }
        match self.fence_consumer_members(group, &valid, now) {
            Ok((records, effects)) => Outcome {
                records: crate::at_latest_version(records),
                response: Ok(answers),
                effects,
            },
            Err(e) => Outcome::answer(Err(e.code)),
        }
    }

    /// A classic member that did not rejoin, or sync, within its rebalance timeout is fenced.
    pub(crate) fn fence_classic_member_in_time(
        &self,
        group_id: &str,
        member_id: &str,
        now: i64,
    ) -> Outcome<Option<TickEvent>> {
        let Some(group) = self.consumer_group(group_id) else {
            return Outcome::answer(None);
        };
        let Some(member) = group.members.get(member_id) else {
            return Outcome::answer(None);
        };
        match self.fence_consumer_members(group, &[member], now) {
            Ok((records, effects)) => Outcome {
                records: crate::at_latest_version(records),
                response: Some(TickEvent::RebalanceTimedOut {
                    group_id: group_id.to_owned(),
                    member_id: member_id.to_owned(),
                }),
                effects,
            },
            Err(_) => Outcome::answer(None),
        }
    }

    /// `scheduleConsumerGroupJoinTimeoutIfAbsent`.
    pub(super) fn join_timeout_if_absent(
        &self,
        group: &ConsumerGroup,
        member: &ConsumerGroupMember,
        now: i64,
    ) -> Vec<Effect> {
        let timer = ClassicTimer::ConsumerJoin {
            group_id: group.group_id.as_str().into(),
            member_id: member.member_id.clone(),
        };
        if self.classic.timers.is_armed(&timer) {
            return Vec::new();
        }
        vec![Effect::Classic(ClassicEffect::Schedule {
            timer,
            deadline: now + i64::from(member.rebalance_timeout_ms.max(0)),
            task: ClassicTask::FenceConsumerMember,
        })]
    }
}

/// `validateConsumerGroupMember`, `throwIfMemberDoesNotUseClassicProtocol` and
/// `throwIfGenerationIdUnmatched`.
fn classic_member<'g>(
    group: &'g ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
) -> Result<&'g ConsumerGroupMember, ErrorCode> {
    let member = match instance_id {
        None => group.members.get(member_id),
        Some(instance) => group.static_member(instance),
    }
    .ok_or(ErrorCode::UNKNOWN_MEMBER_ID)?;
    if member.member_id != member_id {
        return Err(ErrorCode::FENCED_INSTANCE_ID);
    }
    if !member.uses_classic_protocol() {
        return Err(ErrorCode::UNKNOWN_MEMBER_ID);
    }
    if member.member_epoch != generation_id {
        return Err(ErrorCode::ILLEGAL_GENERATION);
    }
    Ok(member)
}

/// The member a LeaveGroup names; an admin names a static member by its instance id alone.
fn leaving_member<'g>(
    group: &'g ConsumerGroup,
    leaving: &LeavingMember,
) -> Result<&'g ConsumerGroupMember, ErrorCode> {
    let Some(instance) = leaving.group_instance_id.as_deref() else {
        return group
            .members
            .get(leaving.member_id.as_str())
            .ok_or(ErrorCode::UNKNOWN_MEMBER_ID);
    };
    let member = group
        .static_member(instance)
        .ok_or(ErrorCode::UNKNOWN_MEMBER_ID)?;
    if !leaving.member_id.is_empty() && member.member_id != leaving.member_id {
        return Err(ErrorCode::FENCED_INSTANCE_ID);
    }
    Ok(member)
}

/// The protocol a classic member's JoinGroup answer named: its most preferred.
pub(super) fn first_protocol(
    member: &ConsumerGroupMember,
) -> Option<&kcoord_wire::records::consumer_group_member_metadata_value::ClassicProtocol> {
    member
        .classic_member_metadata
        .as_ref()
        .and_then(|c| c.supported_protocols.first())
}

/// The member's session, with its classic session timeout.
fn session_timer(group: &ConsumerGroup, member: &ConsumerGroupMember, now: i64) -> Effect {
    let session = member
        .classic_member_metadata
        .as_ref()
        .map_or(0, |c| c.session_timeout_ms);
    Effect::Member(MemberEffect::SessionTimer {
        group_id: group.group_id.as_str().into(),
        member_id: member.member_id.clone(),
        deadline: now + i64::from(session),
    })
}

/// `waitingOnUnreleasedPartition`: a target partition the member lacks is still owned by
/// another member.
fn waiting_on_unreleased_partition(group: &ConsumerGroup, member: &ConsumerGroupMember) -> bool {
    if member.state != ConsumerMemberState::UnreleasedPartitions {
        return false;
    }
    let Some(target) = group.target_assignment.get(member.member_id.as_str()) else {
        return false;
    };
    target.iter().any(|(topic, partitions)| {
        partitions.iter().any(|p| {
            !member
                .assigned
                .get(topic)
                .is_some_and(|a| a.contains_key(p))
                && group.current_partition_epoch(topic, *p) != -1
        })
    })
}
