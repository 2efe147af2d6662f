//! Kafka's consumer `CurrentAssignmentBuilder`: moves a member's current assignment towards
//! the target one, revoking before assigning. A partition is given to a member only once no
//! other member owns it or revokes it ("unreleased"), and a member that must give partitions
//! up keeps its epoch until it reports them gone ("unrevoked").
use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::{
    ConsumerGroupMember, ConsumerMemberState, PartitionEpochs, TopicPartitions, VecMap, VecSet,
};
use kcoord_wire::messages::consumer_group_heartbeat_request::TopicPartitions as Owned;
use uuid::Uuid;

use crate::error::{CoordinatorError, Result};

/// What the reconciliation is given besides the member.
pub struct Reconciliation<'a> {
    pub target_epoch: i32,
    pub target: &'a TopicPartitions,
    pub subscription_changed: bool,
    /// The ids of the topics the member subscribes to (names and resolved regex) that exist.
    pub subscribed_topic_ids: &'a BTreeSet<Uuid>,
    /// The epoch of whoever owns or revokes a partition in the group, or -1.
    pub partition_epoch: &'a dyn Fn(&Uuid, i32) -> i32,
    /// What the member reported owning (`None`: not reported in this heartbeat).
    pub owned: Option<&'a [Owned]>,
}

impl Reconciliation<'_> {
    /// The member after this heartbeat (the same as `member` when nothing moves).
    pub fn build(&self, member: &ConsumerGroupMember) -> Result<ConsumerGroupMember> {
        match member.state {
            ConsumerMemberState::Stable => {
                if member.member_epoch != self.target_epoch {
                    Ok(self.next(member, member.member_epoch))
                } else if self.subscription_changed {
                    Ok(self.drop_unsubscribed(member))
                } else {
                    Ok(member.clone())
                }
            }
            ConsumerMemberState::UnrevokedPartitions => {
                if self.owns_any(&member.pending_revocation) {
                    if self.subscription_changed {
                        return Ok(self.drop_unsubscribed(member));
                    }
                    return Ok(member.clone());
                }
                Ok(self.next(member, member.member_epoch))
            }
            ConsumerMemberState::UnreleasedPartitions => Ok(self.next(member, member.member_epoch)),
            ConsumerMemberState::Unknown => {
                if self.owned.is_none_or(|o| !o.is_empty()) {
                    return Err(CoordinatorError::fenced(
                        "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.",
                    ));
                }
                Ok(self.next(member, self.target_epoch))
            }
        }
    }

    /// `ownsRevokedPartitions`: whether the member still reports owning one of `revoking`
    /// (not reporting counts as owning).
    fn owns_any(&self, revoking: &PartitionEpochs) -> bool {
        let Some(owned) = self.owned else {
            return true;
        };
        owned.iter().any(|t| {
            revoking
                .get(&t.topic_id)
                .is_some_and(|r| t.partitions.iter().any(|p| r.contains_key(p)))
        })
    }

    /// `updateCurrentAssignment`: the partitions of topics the member no longer subscribes to
    /// move to pending revocation, without a new epoch.
    fn drop_unsubscribed(&self, member: &ConsumerGroupMember) -> ConsumerGroupMember {
        let subscribed = self.subscribed_topic_ids;
        let (mut assigned, mut pending) =
            (member.assigned.clone(), member.pending_revocation.clone());
        if subscribed.is_empty() && member.pending_revocation.is_empty() {
            pending = std::mem::take(&mut assigned);
        } else {
            for (topic, parts) in &member.assigned {
                if !subscribed.contains(topic) {
                    assigned.remove(topic);
                    pending
                        .entry(*topic)
                        .or_default()
                        .extend(parts.iter().map(|(p, e)| (*p, *e)));
                }
            }
        }
        if assigned == member.assigned {
            return member.clone();
        }
        let mut out = member.clone();
        out.previous_member_epoch = member.member_epoch;
        out.assigned = assigned;
        if !pending.is_empty() && self.owns_any(&pending) {
            out.state = ConsumerMemberState::UnrevokedPartitions;
            out.pending_revocation = pending;
        }
        out
    }

    /// `computeNextAssignment`.
    fn next(&self, member: &ConsumerGroupMember, epoch: i32) -> ConsumerGroupMember {
        let mut unreleased = false;
        let mut assigned = PartitionEpochs::new();
        let mut revoking = PartitionEpochs::new();
        let mut to_assign: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
        let topics: BTreeSet<Uuid> = self
            .target
            .keys()
            .chain(member.assigned.keys())
            .copied()
            .collect();
        let empty = VecSet::new();
        let no_epochs = VecMap::new();
        for topic in topics {
            let target = if self.subscribed_topic_ids.contains(&topic) {
                self.target.get(&topic).unwrap_or(&empty)
            } else {
                &empty
            };
            let current = member.assigned.get(&topic).unwrap_or(&no_epochs);
            let kept: VecMap<i32, i32> = current
                .iter()
                .filter(|(p, _)| target.contains(p))
                .map(|(p, e)| (*p, *e))
                .collect();
            let gone: VecMap<i32, i32> = current
                .iter()
                .filter(|(p, _)| !kept.contains_key(p))
                .map(|(p, e)| (*p, *e))
                .collect();
            let pending_here = member.pending_revocation.get(&topic);
            let mut new: BTreeSet<i32> = BTreeSet::new();
            for p in target.iter().filter(|p| !kept.contains_key(p)) {
                let elsewhere = (self.partition_epoch)(&topic, *p) != -1
                    && !pending_here.is_some_and(|r| r.contains_key(p));
                if elsewhere {
                    unreleased = true;
                } else {
                    new.insert(*p);
                }
            }
            if !kept.is_empty() {
                assigned.insert(topic, kept);
            }
            if !gone.is_empty() {
                revoking.insert(topic, gone);
            }
            if !new.is_empty() {
                to_assign.insert(topic, new);
            }
        }
        let mut out = member.clone();
        out.previous_member_epoch = member.member_epoch;
        if !revoking.is_empty() && self.owns_any(&revoking) {
            out.state = ConsumerMemberState::UnrevokedPartitions;
            out.member_epoch = epoch;
            out.assigned = assigned;
            out.pending_revocation = revoking;
            return out;
        }
        for (topic, parts) in to_assign {
            let entry = assigned.entry(topic).or_default();
            for p in parts {
                entry.insert(p, self.target_epoch);
            }
        }
        out.state = if unreleased {
            ConsumerMemberState::UnreleasedPartitions
        } else {
            ConsumerMemberState::Stable
        };
        out.member_epoch = self.target_epoch;
        out.assigned = assigned;
        out.pending_revocation = PartitionEpochs::new();
        out
    }
}
