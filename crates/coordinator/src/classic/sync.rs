//! SyncGroup on a classic group, after Kafka 4.4's `classicGroupSyncToClassicGroup`: followers
//! wait for the leader's assignment, which is written with the group and then handed to
//! every member.
use std::collections::BTreeMap;

use bytes::Bytes;
use kcoord_wire::messages::{SyncGroupRequest, SyncGroupResponse};
use kcoord_wire::ErrorCode;

use super::change::{sync_error, Change};
use super::{ClassicGroup, ClassicGroupState, Reply};
use crate::shard::{CoordinatorShard, Id};
use crate::Outcome;

use ClassicGroupState::*;

type SyncOutcome = Outcome<Reply<SyncGroupResponse>>;

impl CoordinatorShard {
    /// SyncGroup (`classicGroupSync`).
    pub fn classic_sync(&self, req: &SyncGroupRequest, now: i64) -> SyncOutcome {
        let now_error = |code| Outcome::answer(Reply::Now(sync_error(code)));
        let Some(group) = self.classic.groups.get(req.group_id.as_str()) else {
            return match self.consumer_group(&req.group_id) {
                Some(consumer) => self
                    .classic_sync_to_consumer_group(consumer, req, now)
                    .map(Reply::Now),
                None => now_error(ErrorCode::UNKNOWN_MEMBER_ID),
            };
        };
        if group.is(Empty) {
            return now_error(ErrorCode::UNKNOWN_MEMBER_ID);
        }
        if let Err(code) = validate_sync(group, req) {
            return now_error(code);
        }
        let member_id = req.member_id.as_str();
        match group.state {
            PreparingRebalance => now_error(ErrorCode::REBALANCE_IN_PROGRESS),
            CompletingRebalance => {
                let mut change = Change::of(self, (**group).clone(), now);
                let waiter = change.park();
                if let Some(member) = change.group.member_mut(member_id) {
                    member.awaiting_sync = Some(waiter);
                }
                change.remove_pending_sync_member(member_id);
                if change.group.is_leader(member_id) {
                    store_leader_assignment(&mut change, req);
                }
                change.finish(Reply::Parked(waiter))
            }
            Stable => {
                let mut change = Change::of(self, (**group).clone(), now);
                change.remove_pending_sync_member(member_id);
                let response = SyncGroupResponse {
                    protocol_type: change.group.protocol_type.clone(),
                    protocol_name: change.group.protocol_name.clone(),
                    assignment: change
                        .group
                        .member(member_id)
                        .map(|m| m.assignment.clone())
                        .unwrap_or_default(),
                    ..Default::default()
                };
                change.finish(Reply::Now(response))
            }
            Empty | Dead => now_error(ErrorCode::COORDINATOR_NOT_AVAILABLE),
        }
    }
}

/// Kafka's `validateSyncGroup`.
fn validate_sync(group: &ClassicGroup, req: &SyncGroupRequest) -> Result<(), ErrorCode> {
    if group.is(Dead) {
        return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    group.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
    if req.generation_id != group.generation_id {
        return Err(ErrorCode::ILLEGAL_GENERATION);
    }
    let inconsistent = |asked: &Option<String>, actual: &Option<String>| matches!((asked, actual), (Some(a), Some(b)) if a != b);
    if inconsistent(&req.protocol_type, &group.protocol_type)
        || inconsistent(&req.protocol_name, &group.protocol_name)
    {
        return Err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
    }
    Ok(())
}

/// The leader's assignment (an empty one for the members it left out) is written with the
/// group; once it is, every waiting member gets its part and the group is Stable. Kafka does
/// the second half when the write completes; here the answers wait for the record to be
/// durable before they leave.
fn store_leader_assignment(change: &mut Change<'_>, req: &SyncGroupRequest) {
    let mut assignment: BTreeMap<Id, Bytes> = req
        .assignments
        .iter()
        // Copies, so the group does not pin the leader's request buffer (as in `join.rs`).
        .map(|a| {
            let assignment = Bytes::copy_from_slice(&a.assignment);
            (Id::from(a.member_id.as_str()), assignment)
        })
        .collect();
    for member_id in change.group.members.keys() {
        assignment.entry(member_id.clone()).or_default();
    }
    let record = change.group.record(&assignment);
    change.record(record);
    change.set_and_propagate_assignment(&assignment);
    let now = change.now;
    change.group.transition(Stable, now);
}
