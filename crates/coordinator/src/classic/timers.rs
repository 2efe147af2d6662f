//! The classic groups' timers, keyed as Kafka keys them (`classicGroupHeartbeatKey`,
//! `classicGroupJoinKey`, `classicGroupSyncKey`): scheduling a key again replaces its task.
//!
//! Every heartbeat pushes its member's deadline back; moving the queue entry each time would
//! be a B-tree remove and insert per heartbeat, so the entry stays where it is and, when it
//! comes due early, goes back in the queue at the real deadline. A timer that fires carries
//! the sequence number it was armed with, so one replaced or cancelled in between (by a job
//! that ran before it in the same tick) does nothing.
use std::collections::BTreeSet;

use crate::shard::{FastMap, Id};

/// What a timer is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClassicTimer {
    /// A member's session (or a pending member's, or a new member's join).
    Heartbeat { group_id: Id, member_id: Id },
    /// The end of the join phase.
    Join { group_id: Id },
    /// The end of the sync phase.
    Sync { group_id: Id },
    /// A classic member of a consumer group told to rejoin (Kafka's `consumerGroupJoinKey`).
    ConsumerJoin { group_id: Id, member_id: Id },
    /// A classic member of a consumer group that joined and must sync
    /// (`consumerGroupSyncKey`).
    ConsumerSync { group_id: Id, member_id: Id },
}

impl ClassicTimer {
    pub fn group_id(&self) -> &Id {
        match self {
            ClassicTimer::Heartbeat { group_id, .. }
            | ClassicTimer::Join { group_id }
            | ClassicTimer::Sync { group_id }
            | ClassicTimer::ConsumerJoin { group_id, .. }
            | ClassicTimer::ConsumerSync { group_id, .. } => group_id,
        }
    }
}

/// What a timer does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicTask {
    ExpireHeartbeat,
    CompleteJoin,
    /// Kafka's `InitialDelayedJoin`: the initial rebalance delay, extended while members join.
    InitialDelay {
        delay_ms: i32,
        remaining_ms: i32,
    },
    /// Removes the members of `generation` that have not sent SyncGroup.
    ExpireSync {
        generation: i32,
    },
    /// Fences a classic member of a consumer group that did not rejoin or sync in time.
    FenceConsumerMember,
}

#[derive(Debug, Clone, Copy)]
struct Armed {
    deadline: i64,
    /// Where the key sits in the queue: never later than `deadline`.
    queued: i64,
    task: ClassicTask,
    seq: u64,
}

/// A timer that came due: fire it only if it is still armed with `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueClassicTimer {
    pub timer: ClassicTimer,
    pub task: ClassicTask,
    pub seq: u64,
}

#[derive(Debug, Default)]
pub(crate) struct ClassicTimers {
    queue: BTreeSet<(i64, ClassicTimer)>,
    armed: FastMap<ClassicTimer, Armed>,
    next_seq: u64,
}

impl ClassicTimers {
    pub(crate) fn schedule(&mut self, timer: ClassicTimer, deadline: i64, task: ClassicTask) {
        self.next_seq += 1;
        let seq = self.next_seq;
        if let Some(armed) = self.armed.get_mut(&timer) {
            if armed.queued <= deadline {
                *armed = Armed {
                    deadline,
                    task,
                    seq,
                    ..*armed
                };
                return;
            }
            self.queue.remove(&(armed.queued, timer.clone()));
        }
        self.queue.insert((deadline, timer.clone()));
        self.armed.insert(
            timer,
            Armed {
                deadline,
                queued: deadline,
                task,
                seq,
            },
        );
    }

    /// Whether `timer` is armed (Kafka's `scheduleIfAbsent` leaves an armed one as it is).
    pub(crate) fn is_armed(&self, timer: &ClassicTimer) -> bool {
        self.armed.contains_key(timer)
    }

    pub(crate) fn cancel(&mut self, timer: &ClassicTimer) {
        if let Some(armed) = self.armed.remove(timer) {
            self.queue.remove(&(armed.queued, timer.clone()));
        }
    }

    /// Whether `due` is still armed as it was when it came due.
    pub(crate) fn is_current(&self, due: &DueClassicTimer) -> bool {
        self.armed.get(&due.timer).is_some_and(|a| a.seq == due.seq)
    }

    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.queue.first().map(|(d, _)| *d)
    }

    /// The timers due at `now`, in deadline order, and the entries that sat in the queue
    /// ahead of their real deadline (to be queued again there by [`ClassicTimers::requeue`]).
    pub(crate) fn due(&self, now: i64) -> (Vec<DueClassicTimer>, Vec<ClassicTimer>) {
        let mut fire = Vec::new();
        let mut early = Vec::new();
        for (at, timer) in self.queue.iter().take_while(|(at, _)| *at <= now) {
            match self.armed.get(timer) {
                Some(armed) if armed.deadline <= now => fire.push(DueClassicTimer {
                    timer: timer.clone(),
                    task: armed.task,
                    seq: armed.seq,
                }),
                Some(armed) if armed.queued == *at => early.push(timer.clone()),
                _ => {}
            }
        }
        (fire, early)
    }

    /// Moves the queue entries of `early` to their real deadlines.
    pub(crate) fn requeue(&mut self, early: &[ClassicTimer]) {
        for timer in early {
            if let Some(armed) = self.armed.get_mut(timer) {
                self.queue.remove(&(armed.queued, timer.clone()));
                armed.queued = armed.deadline;
                self.queue.insert((armed.deadline, timer.clone()));
            }
        }
    }

    /// Drops every timer of `group_id` (the group is gone).
    pub(crate) fn cancel_group(&mut self, group_id: &str) {
        let of_group: Vec<ClassicTimer> = self
            .armed
            .keys()
            .filter(|t| t.group_id().as_str() == group_id)
            .cloned()
            .collect();
        for timer in &of_group {
            self.cancel(timer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(member: &str) -> ClassicTimer {
        ClassicTimer::Heartbeat {
            group_id: "g".into(),
            member_id: member.into(),
        }
    }

    #[test]
    fn a_pushed_back_deadline_fires_at_its_real_time_not_its_queued_one() {
        let mut timers = ClassicTimers::default();
        timers.schedule(hb("a"), 100, ClassicTask::ExpireHeartbeat);
        timers.schedule(hb("a"), 150, ClassicTask::ExpireHeartbeat);
        let (fire, early) = timers.due(120);
        assert!(fire.is_empty());
        assert_eq!(early, vec![hb("a")]);
        timers.requeue(&early);
        assert_eq!(timers.next_deadline(), Some(150));
        let (fire, _) = timers.due(150);
        assert_eq!(fire.len(), 1);
        assert!(timers.is_current(&fire[0]));
    }

    #[test]
    fn a_replaced_or_cancelled_timer_is_no_longer_current() {
        let mut timers = ClassicTimers::default();
        timers.schedule(hb("a"), 100, ClassicTask::ExpireHeartbeat);
        let (fire, _) = timers.due(100);
        timers.schedule(hb("a"), 50, ClassicTask::ExpireHeartbeat);
        assert!(!timers.is_current(&fire[0]));
        timers.cancel(&hb("a"));
        assert_eq!(timers.next_deadline(), None);
        timers.schedule(hb("b"), 10, ClassicTask::ExpireHeartbeat);
        timers.cancel_group("g");
        assert_eq!(timers.next_deadline(), None);
    }
}
