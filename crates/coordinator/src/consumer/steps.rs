//! The steps a consumer-protocol heartbeat and a classic member's JoinGroup share (Kafka's
//! `updateSubscriptionMetadata`, `maybeUpdateTargetAssignment`, `maybeReconcile`): each adds
//! its records and effects to what the request has decided so far.
use std::collections::BTreeSet;

use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, ConsumerMemberState, Record};
use kcoord_wire::messages::consumer_group_heartbeat_request::TopicPartitions as Owned;
use uuid::Uuid;

use super::reconcile::Reconciliation;
use super::subscription::{self, member_topic_names};
use super::{records, target};
use crate::effects::{Effect, MemberEffect};
use crate::error::Result;
use crate::shard::{CoordinatorShard, Id};

/// What a request has decided so far.
#[derive(Default)]
pub(super) struct Decided {
    pub records: Vec<Record>,
    pub effects: Vec<Effect>,
}

impl CoordinatorShard {
    /// `updateSubscriptionMetadata`: the metadata hash over what the group subscribes to now;
    /// the group epoch moves when it changed or the subscription did.
    pub(super) fn consumer_bump(&self, work: &mut ConsumerGroup, bump: bool, d: &mut Decided) {
        let names = subscription::subscribed_topic_names(work.members.values(), work);
        let hash = subscription::metadata_hash(&names, self.topics());
        if !bump && hash == work.metadata_hash {
            return;
        }
        work.group_epoch += 1;
        work.metadata_hash = hash;
        d.records
            .push(records::group_epoch(&work.group_id, work.group_epoch, hash));
        if work.has_partition_metadata {
            d.records
                .push(records::partition_metadata_tombstone(&work.group_id));
        }
        d.effects.push(Effect::Rebalanced);
    }

    /// `maybeUpdateTargetAssignment`: the member's target at the group's assignment epoch.
    /// Within `group.consumer.assignment.interval.ms` of the last computation the last target
    /// stands (`canComputeNextTargetAssignment`); a later request computes the new one.
    pub(super) fn consumer_assign(
        &self,
        work: &mut ConsumerGroup,
        assignor: &str,
        member_id: &str,
        now: i64,
        d: &mut Decided,
    ) -> Result<kcoord_metadata::TopicPartitions> {
        let interval = self
            .consumer_settings(&work.group_id)
            .assignment_interval_ms;
        if work.target_assignment_epoch < work.group_epoch
            && crate::target::can_compute(work.target_assignment_timestamp, interval, now)
        {
            let epoch = work.group_epoch;
            let (recs, assignment) = target::compute(work, assignor, self.topics(), epoch, now)?;
            d.records.extend(recs);
            d.effects.push(Effect::AssignmentComputed);
            work.target_assignment = assignment
                .into_iter()
                .map(|(id, parts)| (Id::from(id.as_str()), parts))
                .collect();
            work.target_assignment_epoch = epoch;
            work.target_assignment_timestamp = now;
        }
        Ok(work
            .target_assignment
            .get(member_id)
            .cloned()
            .unwrap_or_default())
    }

    /// `maybeReconcile`: the member moved towards its target; a new state is a record, and
    /// arms (or cancels) the rebalance timer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn consumer_reconcile(
        &self,
        work: &ConsumerGroup,
        member: &ConsumerGroupMember,
        target: &kcoord_metadata::TopicPartitions,
        subscription_changed: bool,
        owned: Option<&[Owned]>,
        now: i64,
        d: &mut Decided,
    ) -> Result<ConsumerGroupMember> {
        let epoch = work.target_assignment_epoch;
        if !subscription_changed && member.is_reconciled_to(epoch) {
            return Ok(member.clone());
        }
        let names: BTreeSet<String> = member_topic_names(member, work);
        let ids: BTreeSet<Uuid> = target::topic_ids(&names, self.topics());
        let partition_epoch = |t: &Uuid, p: i32| work.current_partition_epoch(t, p);
        let updated = Reconciliation {
            target_epoch: epoch,
            target,
            subscription_changed,
            subscribed_topic_ids: &ids,
            partition_epoch: &partition_epoch,
            owned,
        }
        .build(member)?;
        if updated != *member {
            d.records
                .push(records::current_assignment(&work.group_id, &updated));
            let (group_id, member_id) =
                (Id::from(work.group_id.as_str()), updated.member_id.clone());
            d.effects.push(Effect::Member(match updated.state {
                ConsumerMemberState::UnrevokedPartitions => MemberEffect::RebalanceTimer {
                    group_id,
                    member_id,
                    deadline: now + i64::from(updated.rebalance_timeout_ms.max(0)),
                    epoch: updated.member_epoch,
                },
                _ => MemberEffect::CancelRebalanceTimer {
                    group_id,
                    member_id,
                },
            }));
        }
        Ok(updated)
    }
}
