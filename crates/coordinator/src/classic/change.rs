//! One job's change to a classic group: a working copy of the group that Kafka's operations
//! (`prepareRebalance`, `completeClassicGroupJoin`, `propagateAssignment`, ...) change in place,
//! collecting the records, timers and answers they decide. [`Change::finish`] turns it into
//! the job's outcome; the shard itself is only read.
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kcoord_metadata::Record;
use kcoord_wire::messages::{JoinGroupResponse, SyncGroupResponse};
use kcoord_wire::ErrorCode;

use super::{
    ClassicAnswer, ClassicEffect, ClassicGroup, ClassicGroupConfig, ClassicGroupState, ClassicTask,
    ClassicTimer, WaiterId,
};
use crate::effects::Effect;
use crate::shard::{CoordinatorShard, Id};
use crate::Outcome;

use ClassicGroupState::*;

pub(crate) struct Change<'a> {
    shard: &'a CoordinatorShard,
    pub(crate) group: ClassicGroup,
    pub(crate) now: i64,
    effects: Vec<Effect>,
    records: Vec<Record>,
    minted: u64,
}

/// A JoinGroup answer for the group's current generation.
pub(crate) fn join_response(
    group: &ClassicGroup,
    member_id: &str,
    leader_view: bool,
) -> JoinGroupResponse {
    JoinGroupResponse {
        members: if leader_view {
            group.join_members()
        } else {
            Vec::new()
        },
        member_id: member_id.to_owned(),
        generation_id: group.generation_id,
        protocol_name: group.protocol_name.clone(),
        protocol_type: group.protocol_type.clone(),
        leader: group.leader_id.as_deref().unwrap_or_default().to_owned(),
        ..Default::default()
    }
}

/// A JoinGroup answered with `code` alone.
pub(crate) fn join_error(member_id: &str, code: ErrorCode) -> JoinGroupResponse {
    JoinGroupResponse {
        member_id: member_id.to_owned(),
        error_code: code.code(),
        ..Default::default()
    }
}

pub(crate) fn sync_error(code: ErrorCode) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

impl<'a> Change<'a> {
    pub(crate) fn of(shard: &'a CoordinatorShard, group: ClassicGroup, now: i64) -> Self {
        Change {
            shard,
            group,
            now,
            effects: Vec::new(),
            records: Vec::new(),
            minted: 0,
        }
    }

    pub(crate) fn config(&self) -> &ClassicGroupConfig {
        &self.shard.classic.config
    }

    /// A new waiter id for the request this job parks.
    pub(crate) fn park(&mut self) -> WaiterId {
        let id = self.shard.classic.next_waiter + self.minted;
        self.minted += 1;
        id
    }

    fn answer(&mut self, waiter: WaiterId, answer: ClassicAnswer) {
        self.effects.push(Effect::Classic(ClassicEffect::Answer(
            waiter,
            Box::new(answer),
        )));
    }

    /// Answers the member's parked JoinGroup, if any (Kafka's `completeJoinFuture`).
    pub(crate) fn complete_join(&mut self, member_id: &str, response: JoinGroupResponse) -> bool {
        let waiter = self
            .group
            .member_mut(member_id)
            .and_then(|m| m.awaiting_join.take());
        match waiter {
            Some(waiter) => {
                self.answer(waiter, ClassicAnswer::Join(response));
                true
            }
            None => false,
        }
    }

    /// Answers the member's parked SyncGroup, if any (Kafka's `completeSyncFuture`).
    pub(crate) fn complete_sync(&mut self, member_id: &str, response: SyncGroupResponse) -> bool {
        let waiter = self
            .group
            .member_mut(member_id)
            .and_then(|m| m.awaiting_sync.take());
        match waiter {
            Some(waiter) => {
                self.answer(waiter, ClassicAnswer::Sync(response));
                true
            }
            None => false,
        }
    }

    /// Answers a request that was parked but whose member no longer holds it.
    pub(crate) fn answer_join(&mut self, waiter: WaiterId, response: JoinGroupResponse) {
        self.answer(waiter, ClassicAnswer::Join(response));
    }

    fn schedule(&mut self, timer: ClassicTimer, after_ms: i64, task: ClassicTask) {
        self.effects.push(Effect::Classic(ClassicEffect::Schedule {
            timer,
            deadline: self.now + after_ms.max(0),
            task,
        }));
    }

    pub(crate) fn cancel(&mut self, timer: ClassicTimer) {
        self.effects
            .push(Effect::Classic(ClassicEffect::Cancel(timer)));
    }

    pub(crate) fn heartbeat_timer(&self, member_id: &str) -> ClassicTimer {
        ClassicTimer::Heartbeat {
            group_id: self.group.group_id.clone(),
            member_id: member_id.into(),
        }
    }

    fn join_timer(&self) -> ClassicTimer {
        ClassicTimer::Join {
            group_id: self.group.group_id.clone(),
        }
    }

    fn sync_timer(&self) -> ClassicTimer {
        ClassicTimer::Sync {
            group_id: self.group.group_id.clone(),
        }
    }

    /// Kafka's `rescheduleClassicGroupMemberHeartbeat`.
    pub(crate) fn reschedule_heartbeat(&mut self, member_id: &str, timeout_ms: i32) {
        let timer = self.heartbeat_timer(member_id);
        self.schedule(timer, i64::from(timeout_ms), ClassicTask::ExpireHeartbeat);
    }

    pub(crate) fn has_records(&self) -> bool {
        !self.records.is_empty()
    }

    pub(crate) fn record(&mut self, record: Record) {
        self.records.push(record);
    }

    /// The job's outcome: its records, then the group's new state, timers and answers.
    pub(crate) fn finish<R>(self, response: R) -> Outcome<R> {
        let (records, effects) = self.into_parts();
        Outcome {
            records: crate::at_latest_version(records),
            response,
            effects,
        }
    }

    /// The job's records and effects, for a job that writes more than this group's.
    pub(crate) fn into_parts(self) -> (Vec<Record>, Vec<Effect>) {
        let mut effects = Vec::with_capacity(self.effects.len() + 2);
        effects.push(Effect::Classic(ClassicEffect::Group {
            group_id: self.group.group_id.clone(),
            group: Some(Arc::new(self.group)),
        }));
        effects.extend(self.effects);
        if self.minted > 0 {
            effects.push(Effect::Classic(ClassicEffect::WaitersMinted(self.minted)));
        }
        (self.records, effects)
    }

    /// Kafka's `maybePrepareRebalanceOrCompleteJoin`.
    pub(crate) fn maybe_prepare_rebalance_or_complete_join(&mut self) {
        if self.group.can_rebalance() {
            self.prepare_rebalance();
        } else {
            self.maybe_complete_join_phase();
        }
    }

    /// Kafka's `prepareRebalance`.
    pub(crate) fn prepare_rebalance(&mut self) {
        if self.group.is(CompletingRebalance) {
            self.reset_and_propagate_assignment_with_error(ErrorCode::REBALANCE_IN_PROGRESS);
        }
        self.remove_sync_expiration();
        let initial = self.group.is(Empty);
        if initial {
            let delay = self.config().initial_rebalance_delay_ms;
            let remaining = (self.group.rebalance_timeout_ms() - delay).max(0);
            let timer = self.join_timer();
            self.schedule(
                timer,
                i64::from(delay),
                ClassicTask::InitialDelay {
                    delay_ms: delay,
                    remaining_ms: remaining,
                },
            );
        }
        self.group.transition(PreparingRebalance, self.now);
        if !initial {
            self.maybe_complete_join_else_schedule();
        }
    }

    /// Kafka's `maybeCompleteJoinPhase`: not during the initial rebalance, and only once
    /// everyone rejoined.
    pub(crate) fn maybe_complete_join_phase(&mut self) {
        if self.group.is(PreparingRebalance)
            && self.group.previous_state != Empty
            && self.group.has_all_members_joined()
        {
            self.complete_join_phase();
        }
    }

    /// Kafka's `maybeCompleteJoinElseSchedule`.
    fn maybe_complete_join_else_schedule(&mut self) {
        if self.group.has_all_members_joined() {
            self.complete_join_phase();
        } else {
            let timer = self.join_timer();
            let timeout = i64::from(self.group.rebalance_timeout_ms());
            self.schedule(timer, timeout, ClassicTask::CompleteJoin);
        }
    }

    /// Kafka's `tryCompleteInitialRebalanceElseSchedule`.
    pub(crate) fn try_complete_initial_rebalance(&mut self, delay_ms: i32, remaining_ms: i32) {
        if self.group.new_member_added && remaining_ms != 0 {
            self.group.new_member_added = false;
            let next_delay = self.config().initial_rebalance_delay_ms.min(remaining_ms);
            let next_remaining = (remaining_ms - delay_ms).max(0);
            let timer = self.join_timer();
            self.schedule(
                timer,
                i64::from(next_delay),
                ClassicTask::InitialDelay {
                    delay_ms: next_delay,
                    remaining_ms: next_remaining,
                },
            );
        } else {
            self.complete_join_phase();
        }
    }

    /// Kafka's `completeClassicGroupJoin`: dynamic members that did not rejoin go, the next
    /// generation starts, and every member gets its JoinGroup answer (the leader with every
    /// member's metadata); an empty group is written as such.
    pub(crate) fn complete_join_phase(&mut self) {
        let timer = self.join_timer();
        self.cancel(timer);
        let gone: Vec<Id> = self
            .group
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in gone {
            self.group.remove(&member_id);
            let timer = self.heartbeat_timer(&member_id);
            self.cancel(timer);
        }
        if self.group.is(Dead) {
            return;
        }
        if !self.group.maybe_elect_new_joined_leader() && !self.group.members.is_empty() {
            // Nobody rejoined: wait another rebalance timeout for the sessions to expire.
            let timer = self.join_timer();
            let timeout = i64::from(self.group.rebalance_timeout_ms());
            self.schedule(timer, timeout, ClassicTask::CompleteJoin);
            return;
        }
        self.group.init_next_generation(self.now);
        if self.group.is(Empty) {
            let record = self.group.record(&BTreeMap::new());
            self.record(record);
            return;
        }
        let members: Vec<(Id, i32)> = self
            .group
            .members
            .values()
            .map(|m| (m.member_id.clone(), m.session_timeout_ms))
            .collect();
        for (member_id, session_timeout_ms) in members {
            let leader = self.group.is_leader(&member_id);
            let response = join_response(&self.group, &member_id, leader);
            self.complete_join(&member_id, response);
            self.reschedule_heartbeat(&member_id, session_timeout_ms);
            if let Some(member) = self.group.member_mut(&member_id) {
                member.is_new = false;
            }
            self.group.pending_sync.insert(member_id);
        }
        let timer = self.sync_timer();
        let timeout = i64::from(self.group.rebalance_timeout_ms());
        let generation = self.group.generation_id;
        self.schedule(timer, timeout, ClassicTask::ExpireSync { generation });
    }

    /// Kafka's `resetAndPropagateAssignmentWithError`.
    pub(crate) fn reset_and_propagate_assignment_with_error(&mut self, error: ErrorCode) {
        let ids: Vec<Id> = self.group.members.keys().cloned().collect();
        for id in &ids {
            if let Some(member) = self.group.member_mut(id) {
                member.assignment = Bytes::new();
            }
        }
        self.propagate_assignment(error);
    }

    /// Kafka's `setAndPropagateAssignment`.
    pub(crate) fn set_and_propagate_assignment(&mut self, assignment: &BTreeMap<Id, Bytes>) {
        let ids: Vec<Id> = self.group.members.keys().cloned().collect();
        for id in &ids {
            if let Some(member) = self.group.member_mut(id) {
                member.assignment = assignment.get(id).cloned().unwrap_or_default();
            }
        }
        self.propagate_assignment(ErrorCode::NONE);
    }

    /// Kafka's `propagateAssignment`: every parked SyncGroup gets its member's assignment (or
    /// the error), and its session starts again.
    fn propagate_assignment(&mut self, error: ErrorCode) {
        let ok = error == ErrorCode::NONE;
        let members: Vec<(Id, Bytes, i32)> = self
            .group
            .members
            .values()
            .map(|m| {
                (
                    m.member_id.clone(),
                    m.assignment.clone(),
                    m.session_timeout_ms,
                )
            })
            .collect();
        for (member_id, assignment, session_timeout_ms) in members {
            let response = SyncGroupResponse {
                error_code: error.code(),
                protocol_type: self.group.protocol_type.clone().filter(|_| ok),
                protocol_name: self.group.protocol_name.clone().filter(|_| ok),
                assignment,
                ..Default::default()
            };
            if self.complete_sync(&member_id, response) {
                self.reschedule_heartbeat(&member_id, session_timeout_ms);
            }
        }
    }

    /// Kafka's `removeSyncExpiration`.
    pub(crate) fn remove_sync_expiration(&mut self) {
        self.group.pending_sync.clear();
        let timer = self.sync_timer();
        self.cancel(timer);
    }

    /// Kafka's `removePendingSyncMember`.
    pub(crate) fn remove_pending_sync_member(&mut self, member_id: &str) {
        self.group.pending_sync.remove(member_id);
        let done = match self.group.state {
            Dead | Empty | PreparingRebalance => true,
            CompletingRebalance | Stable => self.group.pending_sync.is_empty(),
        };
        if done {
            let timer = self.sync_timer();
            self.cancel(timer);
        }
    }

    /// Kafka's `expirePendingSync`.
    pub(crate) fn expire_pending_sync(&mut self, generation: i32) {
        if generation != self.group.generation_id
            || !matches!(self.group.state, CompletingRebalance | Stable)
            || self.group.pending_sync.is_empty()
        {
            return;
        }
        let pending: Vec<Id> = self.group.pending_sync.iter().cloned().collect();
        for member_id in pending {
            self.group.remove(&member_id);
            let timer = self.heartbeat_timer(&member_id);
            self.cancel(timer);
        }
        self.prepare_rebalance();
    }

    /// Kafka's `removeMemberAndUpdateClassicGroup`: a parked JoinGroup of the member is
    /// answered UNKNOWN_MEMBER_ID (so a live client rejoins), then the group rebalances.
    pub(crate) fn remove_member_and_update(&mut self, member_id: &str) {
        self.complete_join(member_id, join_error("", ErrorCode::UNKNOWN_MEMBER_ID));
        self.group.remove(member_id);
        match self.group.state {
            Stable | CompletingRebalance => self.maybe_prepare_rebalance_or_complete_join(),
            PreparingRebalance if self.group.has_all_members_joined() => self.complete_join_phase(),
            _ => {}
        }
    }

    /// Kafka's `removePendingMemberAndUpdateClassicGroup`.
    pub(crate) fn remove_pending_member_and_update(&mut self, member_id: &str) {
        self.group.remove(member_id);
        if self.group.is(PreparingRebalance) && self.group.has_all_members_joined() {
            self.complete_join_phase();
        }
    }

    /// Kafka's `expireClassicGroupMemberHeartbeat`.
    pub(crate) fn expire_heartbeat(&mut self, member_id: &str) -> bool {
        if self.group.is(Dead) {
            return false;
        }
        if self.group.pending_join.contains(member_id) {
            self.remove_pending_member_and_update(member_id);
            return true;
        }
        match self.group.member(member_id) {
            Some(member) if !member.has_satisfied_heartbeat() => {
                self.remove_member_and_update(member_id);
                true
            }
            _ => false,
        }
    }
}
