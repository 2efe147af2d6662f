//! What time does to classic groups: their timers firing (sessions, the end of the join and
//! sync phases, the initial rebalance delay), each its own job as in Kafka.
use std::collections::BTreeMap;

use super::change::Change;
use super::{ClassicEffect, ClassicTask, ClassicTimer, DueClassicTimer};
use crate::effects::Effect;
use crate::shard::CoordinatorShard;
use crate::tick::TickEvent;
use crate::Outcome;

impl CoordinatorShard {
    /// The classic timers due at `now`; queue entries that came due before their real deadline
    /// move to it.
    pub fn take_due_classic_timers(&self, now: i64) -> Outcome<Vec<DueClassicTimer>> {
        let (due, early) = self.classic.timers.due(now);
        let outcome = Outcome::answer(due);
        if early.is_empty() {
            outcome
        } else {
            outcome.with_effect(Effect::Classic(ClassicEffect::Requeue(early)))
        }
    }

    /// A due classic timer, if it is still armed as it came due.
    pub fn fire_classic_timer(
        &self,
        due: &DueClassicTimer,
        now: i64,
    ) -> Outcome<Option<TickEvent>> {
        if !self.classic.timers.is_current(due) {
            return Outcome::answer(None);
        }
        let fired = Effect::Classic(ClassicEffect::Cancel(due.timer.clone()));
        let group_id = due.timer.group_id();
        if let ClassicTimer::ConsumerJoin { member_id, .. }
        | ClassicTimer::ConsumerSync { member_id, .. } = &due.timer
        {
            let mut outcome = self.fence_classic_member_in_time(group_id, member_id, now);
            outcome.effects.insert(0, fired);
            return outcome;
        }
        let Some(group) = self.classic.groups.get(group_id) else {
            return Outcome::answer(None).with_effect(fired);
        };
        let mut change = Change::of(self, (**group).clone(), now);
        let event = match (&due.timer, due.task) {
            (ClassicTimer::Heartbeat { member_id, .. }, _) => change
                .expire_heartbeat(member_id)
                .then(|| TickEvent::ClassicMemberExpired {
                    group_id: group_id.to_string(),
                    member_id: member_id.to_string(),
                }),
            (_, ClassicTask::CompleteJoin) => {
                change.complete_join_phase();
                None
            }
            (
                _,
                ClassicTask::InitialDelay {
                    delay_ms,
                    remaining_ms,
                },
            ) => {
                change.try_complete_initial_rebalance(delay_ms, remaining_ms);
                None
            }
            (_, ClassicTask::ExpireSync { generation }) => {
                change.expire_pending_sync(generation);
                None
            }
            (_, ClassicTask::ExpireHeartbeat | ClassicTask::FenceConsumerMember) => None,
        };
        let mut outcome = change.finish(event);
        outcome.effects.insert(0, fired);
        outcome
    }

    /// An empty classic group with no offsets left is deleted (Kafka's `cleanupGroupMetadata`);
    /// its tombstone.
    pub(crate) fn expire_classic_group(&self, group_id: &str) -> Option<kcoord_metadata::Record> {
        let group = self.classic.groups.get(group_id)?;
        if !group.is(super::ClassicGroupState::Empty) {
            return None;
        }
        let mut record = group.record(&BTreeMap::new());
        if let kcoord_metadata::Record::GroupMetadata(_, value) = &mut record {
            *value = None;
        }
        Some(record)
    }
}
