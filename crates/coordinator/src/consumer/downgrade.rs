//! Fencing members of a consumer group, and Kafka 4.4's online downgrade that may follow
//! (`consumerGroupFenceMembers`, `validateOnlineDowngradeWithFencedMembers`,
//! `convertToClassicGroup`): when the members that stay all speak the classic protocol, the
//! policy allows it and they fit in a classic group, the consumer group's records go and a
//! classic group takes its place (`classic::downgrade`).
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, Record};

use super::{leave, records};
use crate::classic::{ClassicEffect, ClassicTimer};
use crate::effects::{Effect, MemberEffect};
use crate::error::Result;
use crate::shard::CoordinatorShard;

impl CoordinatorShard {
    /// The records and effects that remove `members` from `group`, downgrading it when Kafka
    /// would.
    pub(crate) fn fence_consumer_members(
        &self,
        group: &ConsumerGroup,
        members: &[&ConsumerGroupMember],
        now: i64,
    ) -> Result<(Vec<Record>, Vec<Effect>)> {
        if members.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        if self.may_downgrade(group, members) {
            let leaving: Vec<&str> = members.iter().map(|m| m.member_id.as_str()).collect();
            let (classic_records, classic_effects) =
                self.downgrade_to_classic(group, &leaving, now, true)?;
            let mut out = records::delete_group(group);
            out.extend(classic_records);
            let mut effects = forget_members(&group.group_id, group.members.keys());
            effects.push(Effect::Rebalanced);
            effects.extend(classic_effects);
            return Ok((out, effects));
        }
        let mut effects: Vec<Effect> = members
            .iter()
            .flat_map(|m| classic_member_timers(&group.group_id, &m.member_id))
            .map(|t| Effect::Classic(ClassicEffect::Cancel(t)))
            .collect();
        let (out, more) = leave::fence_members(group, members, self.topics());
        effects.extend(more);
        Ok((out, effects))
    }

    /// `validateOnlineDowngradeWithReplacedMember`: a classic static member takes the place
    /// of the group's only consumer-protocol member.
    pub(super) fn may_downgrade_replacing(
        &self,
        group: &ConsumerGroup,
        replaced: &ConsumerGroupMember,
    ) -> bool {
        let classic = group
            .members
            .values()
            .filter(|m| m.uses_classic_protocol())
            .count();
        !replaced.uses_classic_protocol()
            && classic + 1 == group.members.len()
            && self.consumer.migration_policy.is_downgrade_enabled()
            && group.members.len() <= usize::try_from(self.classic_config().max_size).unwrap_or(0)
    }

    /// `validateOnlineDowngradeWithFencedMembers`.
    fn may_downgrade(&self, group: &ConsumerGroup, members: &[&ConsumerGroupMember]) -> bool {
        let remaining = leave::remaining(group, members);
        !remaining.is_empty()
            && remaining.iter().all(|m| m.uses_classic_protocol())
            && self.consumer.migration_policy.is_downgrade_enabled()
            && remaining.len() <= usize::try_from(self.classic_config().max_size).unwrap_or(0)
    }
}

/// Every timer of the members of a group that is no longer a consumer group goes.
pub(super) fn forget_members<'a>(
    group_id: &str,
    members: impl Iterator<Item = &'a crate::shard::Id>,
) -> Vec<Effect> {
    let mut effects = Vec::new();
    for member_id in members {
        effects.push(Effect::Member(MemberEffect::Gone {
            group_id: group_id.into(),
            member_id: member_id.clone(),
        }));
        effects.extend(
            classic_member_timers(group_id, member_id)
                .map(|t| Effect::Classic(ClassicEffect::Cancel(t))),
        );
    }
    effects
}

/// The join and sync timers a classic member of a consumer group may have armed.
pub(crate) fn classic_member_timers(
    group_id: &str,
    member_id: &str,
) -> impl Iterator<Item = ClassicTimer> {
    [
        ClassicTimer::ConsumerJoin {
            group_id: group_id.into(),
            member_id: member_id.into(),
        },
        ClassicTimer::ConsumerSync {
            group_id: group_id.into(),
            member_id: member_id.into(),
        },
    ]
    .into_iter()
}
