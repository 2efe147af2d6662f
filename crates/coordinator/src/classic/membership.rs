//! Heartbeat and LeaveGroup on a classic group, after Kafka 4.4's
//! `classicGroupHeartbeatToClassicGroup` and `classicGroupLeaveToClassicGroup`.
use kcoord_wire::messages::leave_group_response::MemberResponse;
use kcoord_wire::messages::HeartbeatRequest;
use kcoord_wire::ErrorCode;

use super::change::{join_error, Change};
use super::{ClassicEffect, ClassicGroupState, ClassicTask, ClassicTimer};
use crate::effects::Effect;
use crate::shard::CoordinatorShard;
use crate::Outcome;

use ClassicGroupState::*;

/// One member a LeaveGroup names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeavingMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

impl CoordinatorShard {
    /// Heartbeat: the member's session starts again; REBALANCE_IN_PROGRESS tells it to rejoin.
    pub fn classic_heartbeat(&self, req: &HeartbeatRequest, now: i64) -> Outcome<ErrorCode> {
        let Some(group) = self.classic.groups.get(req.group_id.as_str()) else {
            return match self.consumer_group(&req.group_id) {
                Some(consumer) => self.classic_heartbeat_to_consumer_group(consumer, req, now),
                None => Outcome::answer(ErrorCode::UNKNOWN_MEMBER_ID),
            };
        };
        if group.is(Dead) {
            return Outcome::answer(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
        if let Err(code) = group.validate_member(&req.member_id, req.group_instance_id.as_deref()) {
            return Outcome::answer(code);
        }
        if req.generation_id != group.generation_id {
            return Outcome::answer(ErrorCode::ILLEGAL_GENERATION);
        }
        let code = match group.state {
            Empty => return Outcome::answer(ErrorCode::UNKNOWN_MEMBER_ID),
            PreparingRebalance => ErrorCode::REBALANCE_IN_PROGRESS,
            _ => ErrorCode::NONE,
        };
        let session = group
            .member(&req.member_id)
            .map_or(0, |m| m.session_timeout_ms);
        Outcome::answer(code).with_effect(Effect::Classic(ClassicEffect::Schedule {
            timer: ClassicTimer::Heartbeat {
                group_id: group.group_id.clone(),
                member_id: req.member_id.as_str().into(),
            },
            deadline: now + i64::from(session),
            task: ClassicTask::ExpireHeartbeat,
        }))
    }

    /// LeaveGroup: one answer per member named (Kafka's `classicGroupLeaveToClassicGroup`);
    /// `Err` when the group is not a classic group here.
    pub fn classic_leave(
        &self,
        group_id: &str,
        members: &[LeavingMember],
        now: i64,
    ) -> Outcome<Result<Vec<MemberResponse>, ErrorCode>> {
        let Some(group) = self.classic.groups.get(group_id) else {
            return match self.consumer_group(group_id) {
                Some(consumer) => self.classic_leave_to_consumer_group(consumer, members, now),
                None => Outcome::answer(Err(ErrorCode::UNKNOWN_MEMBER_ID)),
            };
        };
        if group.is(Dead) {
            return Outcome::answer(Err(ErrorCode::COORDINATOR_NOT_AVAILABLE));
        }
        let mut change = Change::of(self, (**group).clone(), now);
        let mut answers = Vec::with_capacity(members.len());
        let mut left = false;
        for leaving in members {
            let code = leave_one(&mut change, leaving);
            left |= code == ErrorCode::NONE;
            answers.push(MemberResponse {
                member_id: leaving.member_id.clone(),
                group_instance_id: leaving.group_instance_id.clone(),
                error_code: code.code(),
                ..Default::default()
            });
        }
        if left {
            match change.group.state {
                Stable | CompletingRebalance => change.maybe_prepare_rebalance_or_complete_join(),
                PreparingRebalance => change.maybe_complete_join_phase(),
                Empty | Dead => {}
            }
        }
        change.finish(Ok(answers))
    }
}

/// One member's leave; its error code.
fn leave_one(change: &mut Change<'_>, leaving: &LeavingMember) -> ErrorCode {
    let instance = leaving.group_instance_id.as_deref();
    if leaving.member_id.is_empty() {
        // An admin removes a static member by its instance id alone.
        let Some(member_id) = instance.and_then(|i| change.group.static_members.get(i).cloned())
        else {
            return ErrorCode::UNKNOWN_MEMBER_ID;
        };
        remove_current_member(change, &member_id);
        return ErrorCode::NONE;
    }
    if change
        .group
        .pending_join
        .contains(leaving.member_id.as_str())
    {
        change.group.remove(&leaving.member_id);
        let timer = change.heartbeat_timer(&leaving.member_id);
        change.cancel(timer);
        return ErrorCode::NONE;
    }
    match change.group.validate_member(&leaving.member_id, instance) {
        Ok(()) => {
            remove_current_member(change, &leaving.member_id);
            ErrorCode::NONE
        }
        Err(code) => code,
    }
}

/// Kafka's `removeCurrentMemberFromClassicGroup`. A SyncGroup the member still has parked is
/// answered UNKNOWN_MEMBER_ID too (Kafka leaves it to time out), so that no request waits for
/// a member that is gone.
fn remove_current_member(change: &mut Change<'_>, member_id: &str) {
    let timer = change.heartbeat_timer(member_id);
    change.cancel(timer);
    change.complete_join(member_id, join_error("", ErrorCode::UNKNOWN_MEMBER_ID));
    change.complete_sync(
        member_id,
        super::change::sync_error(ErrorCode::UNKNOWN_MEMBER_ID),
    );
    change.group.remove(member_id);
}
