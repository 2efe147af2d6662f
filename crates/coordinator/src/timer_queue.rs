//! The shard's timers as data: a queue ordered by deadline, and each member's armed timers.
//! Nothing here reads a clock; the runtime's owner asks for the next deadline and ticks then.
use std::collections::BTreeSet;

pub(crate) use kcoord_metadata::Id;

/// hashbrown's maps (foldhash, seeded per map) for the per-heartbeat lookups: a fraction of
/// SipHash's cost on short ids.
pub(crate) type FastMap<K, V> = hashbrown::HashMap<K, V>;

/// `map[key]`, inserted with its default when missing (without building the key otherwise).
pub(crate) fn entry_or_default<'a, V: Default>(
    map: &'a mut FastMap<Id, V>,
    key: &str,
) -> &'a mut V {
    kcoord_metadata::entry_by_str(map, key, V::default)
}

/// What a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerKind {
    /// The member's session: it expires without heartbeats.
    Session,
    /// Armed while the member is revoking tasks; carries the member epoch it was armed for.
    Rebalance(i32),
}

/// A timer that came due, as `tick` handles it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DueTimer {
    /// When it was due (its real deadline, not where it sat in the queue).
    pub deadline: i64,
    pub group_id: Id,
    pub member_id: Id,
    pub kind: TimerKind,
}

/// A deadline or none, in 8 bytes (an `Option<i64>` takes 16): a shard keeps three per member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Deadline(i64);

impl Deadline {
    const NONE: Deadline = Deadline(i64::MIN);

    fn get(self) -> Option<i64> {
        (self != Deadline::NONE).then_some(self.0)
    }

    fn of(at: Option<i64>) -> Deadline {
        at.map_or(Deadline::NONE, Deadline)
    }

    fn replace(&mut self, at: Option<i64>) -> Option<i64> {
        std::mem::replace(self, Deadline::of(at)).get()
    }
}

/// The timers armed for one member, in a map keyed by its id.
#[derive(Debug)]
struct MemberTimers {
    /// The session deadline.
    session: Deadline,
    /// The deadline the session timer sits under in the queue: never later than `session`.
    /// Every heartbeat pushes the deadline back, and moving the queue entry each time (a
    /// B-tree remove and insert) was a tenth of the daemon's heartbeat cost; instead the entry
    /// stays where it is and, when it comes due early, it is re-queued at the real deadline:
    /// about once per session timeout instead of once per heartbeat.
    session_queued: Deadline,
    rebalance: Deadline,
    /// The member epoch the rebalance timer was armed for.
    rebalance_epoch: i32,
}

impl Default for MemberTimers {
    fn default() -> Self {
        MemberTimers {
            session: Deadline::NONE,
            session_queued: Deadline::NONE,
            rebalance: Deadline::NONE,
            rebalance_epoch: 0,
        }
    }
}

impl MemberTimers {
    fn rebalance(&self) -> Option<(i64, i32)> {
        self.rebalance.get().map(|at| (at, self.rebalance_epoch))
    }

    fn replace_rebalance(&mut self, timer: Option<(i64, i32)>) -> Option<(i64, i32)> {
        let old = self.rebalance();
        self.rebalance = Deadline::of(timer.map(|(at, _)| at));
        self.rebalance_epoch = timer.map_or(0, |(_, epoch)| epoch);
        old
    }
}

/// What is due at some `now`: the timers to fire, in (deadline, group, member) order, and the
/// session timers that sat in the queue under an earlier deadline than their real one, to be
/// queued again at it. Found without changing anything; [`Timers::take`] then changes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DueTimers {
    pub fire: Vec<DueTimer>,
    /// (queued at, group, member, real deadline).
    requeue: Vec<(i64, Id, Id, i64)>,
    /// Queue entries of members with no timers left, dropped.
    orphans: Vec<(i64, Id, Id, TimerKind)>,
}

impl DueTimers {
    pub fn is_empty(&self) -> bool {
        self.fire.is_empty() && self.requeue.is_empty() && self.orphans.is_empty()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// (deadline, group, member, kind), in that order: ids compare as their text, so due
    /// timers come out ordered by deadline, then group and member id.
    queue: BTreeSet<(i64, Id, Id, TimerKind)>,
    /// group -> member -> its armed timers; looked up by `&str`, without allocating.
    by_member: FastMap<Id, FastMap<Id, MemberTimers>>,
}

/// A member's timers, created when it has none.
fn member_entry<'a>(
    by_member: &'a mut FastMap<Id, FastMap<Id, MemberTimers>>,
    group: &str,
    member: &str,
) -> &'a mut MemberTimers {
    entry_or_default(entry_or_default(by_member, group), member)
}

impl Timers {
    fn member(&self, group: &str, member: &str) -> Option<&MemberTimers> {
        self.by_member.get(group).and_then(|m| m.get(member))
    }

    fn member_mut(&mut self, group: &str, member: &str) -> Option<&mut MemberTimers> {
        self.by_member
            .get_mut(group)
            .and_then(|m| m.get_mut(member))
    }

    pub(crate) fn schedule_session(&mut self, group: &str, member: &str, deadline: i64) {
        // Almost every heartbeat: the entry in the queue is no later than the new deadline and
        // will be re-queued when it comes due. (A lookup by `&str`: no key is built.)
        if let Some(entry) = self.member_mut(group, member) {
            if entry
                .session_queued
                .get()
                .is_some_and(|queued| queued <= deadline)
            {
                entry.session = Deadline(deadline);
                return;
            }
        }
        let entry = member_entry(&mut self.by_member, group, member);
        entry.session = Deadline(deadline);
        if let Some(queued) = entry.session_queued.replace(Some(deadline)) {
            self.queue
                .remove(&(queued, group.into(), member.into(), TimerKind::Session));
        }
        self.queue
            .insert((deadline, group.into(), member.into(), TimerKind::Session));
    }

    pub(crate) fn schedule_rebalance(
        &mut self,
        group: &str,
        member: &str,
        deadline: i64,
        epoch: i32,
    ) {
        let entry = member_entry(&mut self.by_member, group, member);
        if let Some((old, old_epoch)) = entry.replace_rebalance(Some((deadline, epoch))) {
            self.queue.remove(&(
                old,
                group.into(),
                member.into(),
                TimerKind::Rebalance(old_epoch),
            ));
        }
        self.queue.insert((
            deadline,
            group.into(),
            member.into(),
            TimerKind::Rebalance(epoch),
        ));
    }

    pub(crate) fn cancel_rebalance(&mut self, group: &str, member: &str) {
        let Some(entry) = self.member_mut(group, member) else {
            return;
        };
        if let Some((old, epoch)) = entry.replace_rebalance(None) {
            self.queue.remove(&(
                old,
                group.into(),
                member.into(),
                TimerKind::Rebalance(epoch),
            ));
        }
    }

    pub(crate) fn cancel_member(&mut self, group: &str, member: &str) {
        let Some(members) = self.by_member.get_mut(group) else {
            return;
        };
        let Some(entry) = members.remove(member) else {
            return;
        };
        if members.is_empty() {
            self.by_member.remove(group);
        }
        if let Some(d) = entry.session_queued.get() {
            self.queue
                .remove(&(d, group.into(), member.into(), TimerKind::Session));
        }
        if let Some((d, e)) = entry.rebalance() {
            self.queue
                .remove(&(d, group.into(), member.into(), TimerKind::Rebalance(e)));
        }
    }

    /// The timers due at `now` (see [`DueTimers`]); changes nothing.
    pub(crate) fn due(&self, now: i64) -> DueTimers {
        let mut due = DueTimers::default();
        for (queued, group, member, kind) in self.queue.iter().take_while(|e| e.0 <= now) {
            let Some(entry) = self.member(group, member) else {
                due.orphans
                    .push((*queued, group.clone(), member.clone(), *kind));
                continue;
            };
            let deadline = match kind {
                TimerKind::Session => match entry.session.get() {
                    Some(deadline) if deadline > now => {
                        due.requeue
                            .push((*queued, group.clone(), member.clone(), deadline));
                        continue;
                    }
                    Some(deadline) => deadline,
                    None => *queued,
                },
                TimerKind::Rebalance(_) => *queued,
            };
            due.fire.push(DueTimer {
                deadline,
                group_id: group.clone(),
                member_id: member.clone(),
                kind: *kind,
            });
        }
        due.fire.sort();
        due
    }

    /// Takes what [`Timers::due`] found: the fired timers are disarmed and leave the queue,
    /// the early session timers move to their real deadlines.
    pub(crate) fn take(&mut self, due: &DueTimers) {
        for orphan in &due.orphans {
            self.queue.remove(orphan);
        }
        for (queued, group, member, deadline) in &due.requeue {
            self.queue
                .remove(&(*queued, group.clone(), member.clone(), TimerKind::Session));
            if let Some(entry) = self.member_mut(group, member) {
                entry.session_queued = Deadline(*deadline);
            }
            self.queue
                .insert((*deadline, group.clone(), member.clone(), TimerKind::Session));
        }
        for timer in &due.fire {
            let Some(entry) = self.member_mut(&timer.group_id, &timer.member_id) else {
                continue;
            };
            let queued = match timer.kind {
                TimerKind::Session => {
                    entry.session = Deadline::NONE;
                    entry.session_queued.replace(None)
                }
                TimerKind::Rebalance(_) => entry.replace_rebalance(None).map(|(at, _)| at),
            };
            if let Some(queued) = queued {
                self.queue.remove(&(
                    queued,
                    timer.group_id.clone(),
                    timer.member_id.clone(),
                    timer.kind,
                ));
            }
        }
    }

    /// No later than the earliest pending deadline (a session timer may sit in the queue under
    /// an earlier one; ticking then fires nothing and re-queues it), so the owner knows when
    /// to tick next.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.queue.first().map(|e| e.0)
    }
}

#[cfg(test)]
mod tests;
