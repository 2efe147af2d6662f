//! A consumer leaving: -1 removes the member (a static member too), -2 is a static member's
//! temporary leave that keeps its assignment for the rejoin (`consumerGroupLeave`).
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, Record};
use kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use kcoord_wire::ErrorCode;

use super::{member, records, subscription};
use crate::effects::{Effect, MemberEffect};
use crate::error::{CoordinatorError, Result};
use crate::shard::CoordinatorShard;
use crate::validate::STATIC_LEAVE_EPOCH;
use crate::Outcome;

impl CoordinatorShard {
    pub(super) fn consumer_group_leave(
        &self,
        request: &ConsumerGroupHeartbeatRequest,
        now: i64,
    ) -> Outcome<Result<ConsumerGroupHeartbeatResponse>> {
        match self.consumer_leave_records(request, now) {
            Ok((records, effects, epoch)) => Outcome {
                records: crate::at_latest_version(records),
                response: Ok(ConsumerGroupHeartbeatResponse {
                    member_id: Some(request.member_id.clone()),
                    member_epoch: epoch,
                    ..Default::default()
                }),
                effects,
            },
            Err(e) => Outcome::answer(Err(e)),
        }
    }

    fn consumer_leave_records(
        &self,
        request: &ConsumerGroupHeartbeatRequest,
        now: i64,
    ) -> Result<(Vec<Record>, Vec<Effect>, i32)> {
        let gid = request.group_id.as_str();
        let Some(group) = self.state().consumer_groups.get(gid) else {
            // `consumerGroup(groupId)`: "Group X not found." or of another type.
            return Err(if self.is_other_group_type(gid) {
                super::not_a_consumer_group(gid)
            } else {
                CoordinatorError::any_group_not_found(gid)
            });
        };
        let Some(instance_id) = request.instance_id.as_deref() else {
            let m = group
                .members
                .get(request.member_id.as_str())
                .ok_or_else(|| CoordinatorError::unknown_member(gid, &request.member_id))?;
            let (records, effects) = self.fence_consumer_members(group, &[m], now)?;
            return Ok((records, effects, request.member_epoch));
        };
        let m = group.static_member(instance_id).ok_or_else(|| {
            CoordinatorError::new(
                ErrorCode::UNKNOWN_MEMBER_ID,
                format!("Instance id {instance_id} is unknown."),
            )
        })?;
        member::check_not_fenced(m, &request.member_id, instance_id)?;
        if request.member_epoch == STATIC_LEAVE_EPOCH {
            let mut leaving = m.clone();
            leaving.member_epoch = STATIC_LEAVE_EPOCH;
            leaving.pending_revocation.clear();
            for parts in leaving.assigned.values_mut() {
                for epoch in parts.values_mut() {
                    *epoch = 0;
                }
            }
            return Ok((
                vec![records::current_assignment(gid, &leaving)],
                Vec::new(),
                STATIC_LEAVE_EPOCH,
            ));
        }
        let (records, effects) = self.fence_consumer_members(group, &[m], now)?;
        Ok((records, effects, request.member_epoch))
    }
}

/// `consumerGroupFenceMembers`: the members' records go, regexes nobody subscribes to any
/// more go, and the group epoch is bumped; a group left empty gets a target assignment epoch
/// equal to its group epoch (timestamp 0, as a new group's).
pub(crate) fn fence_members(
    group: &ConsumerGroup,
    members: &[&ConsumerGroupMember],
    topics: &kcoord_metadata::TopicsImage,
) -> (Vec<Record>, Vec<Effect>) {
    let gid = group.group_id.as_str();
    let mut records = Vec::new();
    let mut effects = vec![Effect::Rebalanced];
    for m in members {
        records.extend(records::remove_member(gid, &m.member_id));
        effects.push(Effect::Member(MemberEffect::Gone {
            group_id: gid.into(),
            member_id: m.member_id.clone(),
        }));
    }
    let leaving = |id: &str| members.iter().any(|m| m.member_id == id);
    let remaining = remaining(group, members);
    for regex in group.resolved_regexes.keys() {
        if !remaining.iter().any(|m| &m.subscribed_topic_regex == regex) {
            records.push(records::regex(gid, regex, None));
        }
    }
    let mut rest = group.clone();
    rest.members.retain(|m| !leaving(&m.member_id));
    rest.resolved_regexes
        .retain(|regex, _| remaining.iter().any(|m| &m.subscribed_topic_regex == regex));
    let names = subscription::subscribed_topic_names(rest.members.values(), &rest);
    let hash = subscription::metadata_hash(&names, topics);
    let epoch = group.group_epoch + 1;
    records.push(records::group_epoch(gid, epoch, hash));
    if remaining.is_empty() {
        records.push(records::target_metadata(gid, epoch, 0));
    }
    (records, effects)
}

/// The members of `group` other than `leaving`.
pub(super) fn remaining<'g>(
    group: &'g ConsumerGroup,
    leaving: &[&ConsumerGroupMember],
) -> Vec<&'g ConsumerGroupMember> {
    group
        .members
        .values()
        .filter(|m| !leaving.iter().any(|l| l.member_id == m.member_id))
        .collect()
}
