//! What happens when time passes: session and rebalance timeouts fence members, the end of
//! the initial rebalance delay computes the held-back target assignment, and expired offsets
//! go. The runtime's owner calls [`tick`] with the current time; nothing here reads a clock.
//! Each thing that comes due is a job of its own (one batch), as in Kafka, where each timer
//! is its own write: fencing a member bumps the group epoch, and a second fencing in the same
//! group must see the first.
use kcoord_metadata::MemberState;
use kcoord_runtime::{Log, Refused, RunError, Runtime};

use crate::effects::{Effect, GroupEffect, MemberEffect};
use crate::error::Result;
use crate::record_builders;
use crate::shard::CoordinatorShard;
use crate::target;
use crate::timeline::stamped;
use crate::timer_queue::{DueTimer, TimerKind};
use crate::Outcome;

/// Something `tick` did, for logging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickEvent {
    SessionExpired {
        group_id: String,
        member_id: String,
    },
    RebalanceTimedOut {
        group_id: String,
        member_id: String,
    },
    AssignmentComputed {
        group_id: String,
        epoch: i32,
    },
    /// Committed offsets removed because they expired.
    OffsetsExpired {
        group_id: String,
        count: usize,
    },
    /// An empty group without offsets, deleted by the expiry pass.
    GroupExpired {
        group_id: String,
    },
    /// An ongoing transaction outlived its timeout: its producer is fenced and it is aborted.
    TransactionTimedOut {
        transactional_id: String,
        producer_id: i64,
    },
    /// An idle transactional id outlived `transactional.id.expiration.ms`.
    TransactionalIdExpired {
        transactional_id: String,
    },
    /// A classic group's member went without heartbeats for its session timeout (or a new or
    /// pending member never came back) and was removed.
    ClassicMemberExpired {
        group_id: String,
        member_id: String,
    },
}

/// What a tick did: its events, the jobs that failed (logged by the owner, the others went
/// on), and whether the shard's state stopped following its log, in which case the tick
/// stopped there and the owner must rebuild the shard.
#[derive(Debug, Default)]
pub struct Tick {
    pub events: Vec<TickEvent>,
    pub failures: Vec<String>,
    pub diverged: Option<String>,
}

/// Runs every job due at `now` on `runtime`.
pub fn tick<L: Log>(runtime: &mut Runtime<CoordinatorShard, L>, now: i64) -> Tick {
    let mut tick = Tick::default();
    let due = match runtime.run(|shard| shard.take_due_timers(now)) {
        Ok(done) => done.response,
        Err(refused) => {
            tick.failed(refused);
            return tick;
        }
    };
    for timer in &due {
        let fired = runtime.run(|shard| stamped(shard.fire_timer(timer, now), now));
        if !tick.record(fired.map(|done| done.response.map(Ok))) {
            return tick;
        }
    }
    if !tick_classic(runtime, now, &mut tick) {
        return tick;
    }
    for group_id in runtime.ended_initial_delays(now) {
        let ended = runtime.run(|shard| stamped(shard.end_initial_delay(&group_id, now), now));
        if !tick.record(ended.map(|done| done.response)) {
            return tick;
        }
    }
    if runtime.offset_expiry_due(now) {
        match runtime.run(|shard| shard.expire_offsets(now)) {
            Ok(done) => tick.events.extend(done.response),
            Err(refused) => tick.failed(refused),
        }
    }
    if tick.diverged.is_none() && runtime.transaction_checks_due(now) {
        match runtime.run(|shard| shard.check_transactions(now)) {
            Ok(done) => tick.events.extend(done.response),
            Err(refused) => tick.failed(refused),
        }
    }
    tick
}

/// The classic groups' due timers, each its own job; false when the tick must stop.
fn tick_classic<L: Log>(
    runtime: &mut Runtime<CoordinatorShard, L>,
    now: i64,
    tick: &mut Tick,
) -> bool {
    let due = match runtime.run(|shard| shard.take_due_classic_timers(now)) {
        Ok(done) => done.response,
        Err(refused) => {
            tick.failed(refused);
            return tick.diverged.is_none();
        }
    };
    for timer in &due {
        let fired = runtime.run(|shard| shard.fire_classic_timer(timer, now));
        if !tick.record(fired.map(|done| done.response.map(Ok))) {
            return false;
        }
    }
    true
}

impl Tick {
    /// Keeps what one job gave; false when the tick must stop.
    fn record<E: std::error::Error>(
        &mut self,
        job: std::result::Result<Option<Result<TickEvent>>, Refused<impl Sized, E>>,
    ) -> bool {
        match job {
            Ok(Some(Ok(event))) => self.events.push(event),
            Ok(Some(Err(e))) => self.failures.push(e.to_string()),
            Ok(None) => {}
            Err(refused) => self.failed(refused),
        }
        self.diverged.is_none()
    }

    fn failed<R, E: std::error::Error>(&mut self, refused: Refused<R, E>) {
        match refused.error {
            RunError::Diverged(reason) => self.diverged = Some(reason),
            other => self.failures.push(other.to_string()),
        }
    }
}

impl CoordinatorShard {
    /// The timers due at `now`, in firing order; they leave the queue.
    pub fn take_due_timers(&self, now: i64) -> Outcome<Vec<DueTimer>> {
        let due = self.timers.due(&self.soft, now);
        if due.is_empty() {
            return Outcome::answer(Vec::new());
        }
        let fire = due.fire.clone();
        Outcome::answer(fire).with_effect(Effect::TimersTaken(due))
    }

    /// A due timer: the member is fenced if its session expired, or if it is still revoking
    /// the tasks of the epoch its rebalance timer was armed for.
    pub fn fire_timer(&self, timer: &DueTimer, now: i64) -> Outcome<Option<TickEvent>> {
        if let Some(g) = self.consumer_group(&timer.group_id) {
            return self.fire_consumer_timer(g, timer, now);
        }
        let Some(group) = self.group(&timer.group_id) else {
            return Outcome::answer(None);
        };
        let Some(member) = group.members.get(timer.member_id.as_str()) else {
            return Outcome::answer(None);
        };
        let expired = match timer.kind {
            TimerKind::Session => true,
            TimerKind::Rebalance(epoch) => {
                member.state == MemberState::UnrevokedTasks && member.member_epoch == epoch
            }
        };
        if !expired {
            return Outcome::answer(None);
        }
        let (group_id, member_id) = (group.group_id.clone(), member.member_id.to_string());
        let (event, why) = match timer.kind {
            TimerKind::Session => (
                TickEvent::SessionExpired {
                    group_id,
                    member_id,
                },
                record_builders::Removal::SessionTimeout,
            ),
            TimerKind::Rebalance(_) => (
                TickEvent::RebalanceTimedOut {
                    group_id,
                    member_id,
                },
                record_builders::Removal::RebalanceTimeout,
            ),
        };
        Outcome {
            records: crate::at_latest_version(record_builders::fence_member(
                group,
                &timer.member_id,
                why,
            )),
            response: Some(event),
            effects: vec![
                Effect::Rebalanced,
                Effect::Member(MemberEffect::Gone {
                    group_id: timer.group_id.clone(),
                    member_id: timer.member_id.clone(),
                }),
                Effect::Group(GroupEffect::ForgetShutdownIfEmpty {
                    group_id: timer.group_id.clone(),
                }),
            ],
        }
    }

    /// The groups whose initial rebalance delay is over at `now`, by deadline.
    pub fn ended_initial_delays(&self, now: i64) -> Vec<String> {
        self.delays
            .iter()
            .take_while(|(deadline, _)| *deadline <= now)
            .map(|(_, group)| group.clone())
            .collect()
    }

    /// `computeDelayedTargetAssignment`: the delay is disarmed, and the assignment it held
    /// back is computed if the group still needs one.
    pub fn end_initial_delay(
        &self,
        group_id: &str,
        now: i64,
    ) -> Outcome<Option<Result<TickEvent>>> {
        let mut effects = vec![Effect::Group(GroupEffect::ClearInitialDelay {
            group_id: group_id.into(),
        })];
        let Some(group) = self.group(group_id) else {
            return Outcome::answer(None).with_effects(effects);
        };
        let Some(topology) = group.topology.as_ref() else {
            return Outcome::answer(None).with_effects(effects);
        };
        if group.members.is_empty() || group.target_assignment_epoch >= group.group_epoch {
            return Outcome::answer(None).with_effects(effects);
        }
        let configured = match self.configured_topology(group_id, topology, false, &mut effects) {
            Ok((_, configured)) => configured,
            Err(e) => return Outcome::answer(Some(Err(e))).with_effects(effects),
        };
        let epoch = group.group_epoch;
        effects.push(Effect::AssignmentComputed);
        let computed = target::compute(
            &group.members,
            &configured,
            self.settings(group_id).config.num_standby_replicas,
            &self.task_offsets(group_id),
        );
        let records = target::records(group_id, &group.target_assignment, &computed, epoch, now);
        Outcome {
            records: crate::at_latest_version(records),
            response: Some(Ok(TickEvent::AssignmentComputed {
                group_id: group_id.to_owned(),
                epoch,
            })),
            effects,
        }
    }

    /// Whether the periodic search for expired offsets is due.
    pub fn offset_expiry_due(&self, now: i64) -> bool {
        self.expiry_next.is_some_and(|due| due <= now)
    }
}
