//! The shard's timers as data: a queue ordered by deadline, and each member's armed timers.
//! Nothing here reads a clock; the runtime's owner asks for the next deadline and ticks then.
//!
//! A group's member timers ([`GroupTimers`]) are kept in whatever the shard keeps per group
//! ([`HoldsTimers`]: the group's soft state), not in a map of their own: a steady heartbeat
//! has just read that entry to answer, so pushing its member's session back finds the group
//! in the cache instead of looking it up in a second map of every group (two cache misses per
//! heartbeat in a large fleet, and a map entry per group).
use std::collections::BTreeSet;

pub(crate) use kcoord_metadata::Id;
use kcoord_metadata::VecMap;

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

/// `member`'s session deadline, none until set, in `members`.
fn session_of<'a>(members: &'a mut VecMap<Id, Deadline>, member: &str) -> &'a mut Deadline {
    members.entry(member.into()).or_default()
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

/// A deadline or none, in 8 bytes (an `Option<i64>` takes 16): a shard keeps two per member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Deadline(i64);

impl Default for Deadline {
    fn default() -> Self {
        Deadline::NONE
    }
}

impl Deadline {
    const NONE: Deadline = Deadline(i64::MIN);

    fn get(self) -> Option<i64> {
        (self != Deadline::NONE).then_some(self.0)
    }
}

/// One group's timers: its members', and the one queue entry its members' sessions share.
///
/// Every heartbeat pushes its member's session deadline back. The group's session entry stays
/// where it is, never later than any of its members' deadlines; when it comes due, the members
/// whose sessions are due fire and the entry moves to the earliest deadline left. So a
/// heartbeat costs two map lookups and no B-tree work (moving a queue entry each time was a
/// tenth of the daemon's heartbeat cost), and the queue holds one session entry per group, not
/// one per member (122 bytes each).
///
/// A rebalance timer (armed only while a member revokes tasks) is kept apart from the sessions,
/// so that a member's entry is its id and one deadline.
#[derive(Debug, Default)]
pub(crate) struct GroupTimers {
    session_queued: Deadline,
    /// Every member with a timer, and its session deadline. Sorted by member id (a binary
    /// search per heartbeat, where a hash map looked up about as fast) in room that follows
    /// the group's size: a hash map's buckets and their slack took 54 bytes per member.
    members: VecMap<Id, Deadline>,
    /// The members whose rebalance timer is armed: its deadline and the member epoch it was
    /// armed for. Boxed, and only while one is armed: a group revokes now and then and is idle
    /// in between, and every group's entry would otherwise carry an empty map's 40 bytes.
    rebalances: Option<Box<FastMap<Id, (i64, i32)>>>,
}

impl GroupTimers {
    /// No member has an entry (a member whose session fired keeps its entry until it goes).
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Arms `member`'s rebalance timer; returns the one it replaces.
    fn arm_rebalance(&mut self, member: &str, deadline: i64, epoch: i32) -> Option<(i64, i32)> {
        self.rebalances
            .get_or_insert_with(Box::default)
            .insert(member.into(), (deadline, epoch))
    }

    /// Disarms `member`'s rebalance timer; returns it if it was armed. The map goes with its
    /// last timer.
    fn disarm_rebalance(&mut self, member: &str) -> Option<(i64, i32)> {
        let rebalances = self.rebalances.as_mut()?;
        let disarmed = rebalances.remove(member);
        if rebalances.is_empty() {
            self.rebalances = None;
        }
        disarmed
    }
}

/// What the shard keeps per group, holding the group's member timers.
pub(crate) trait HoldsTimers: Default {
    fn timers(&self) -> &GroupTimers;
    fn timers_mut(&mut self) -> &mut GroupTimers;
}

impl HoldsTimers for GroupTimers {
    fn timers(&self) -> &GroupTimers {
        self
    }

    fn timers_mut(&mut self) -> &mut GroupTimers {
        self
    }
}

/// The member id of a group's session entry in the queue: no member's (member ids are never
/// empty).
fn whole_group() -> Id {
    Id::default()
}

/// What is due at some `now`: the timers to fire, in (deadline, group, member) order, and the
/// groups' session entries that came due before any of their members' real deadlines, to be
/// queued again at the earliest. Found without changing anything; [`Timers::take`] then
/// changes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DueTimers {
    pub fire: Vec<DueTimer>,
    /// (queued at, group, the earliest session deadline left).
    requeue: Vec<(i64, Id, i64)>,
    /// Queue entries with nothing left to fire, dropped.
    orphans: Vec<(i64, Id, Id, TimerKind)>,
}

impl DueTimers {
    pub fn is_empty(&self) -> bool {
        self.fire.is_empty() && self.requeue.is_empty() && self.orphans.is_empty()
    }
}

/// The queue of every group's timers. Each method is given the shard's per-group entries
/// (`groups`, looked up by `&str`, without allocating), where the groups' member timers are.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// (deadline, group, member, kind), in that order; a group's session entry has no member
    /// ([`whole_group`]). Ids compare as their text.
    queue: BTreeSet<(i64, Id, Id, TimerKind)>,
}

impl Timers {
    pub(crate) fn schedule_session<G: HoldsTimers>(
        &mut self,
        groups: &mut FastMap<Id, G>,
        group: &str,
        member: &str,
        deadline: i64,
    ) {
        // Almost every heartbeat: the group's entry is no later than the new deadline.
        if let Some(g) = groups.get_mut(group).map(G::timers_mut) {
            let queued = g.session_queued.get();
            if let (Some(m), true) = (
                g.members.get_mut(member),
                queued.is_some_and(|q| q <= deadline),
            ) {
                *m = Deadline(deadline);
                return;
            }
        }
        let g = entry_or_default(groups, group).timers_mut();
        *session_of(&mut g.members, member) = Deadline(deadline);
        match g.session_queued.get() {
            Some(queued) if queued <= deadline => {}
            earlier => {
                if let Some(queued) = earlier {
                    self.queue
                        .remove(&(queued, group.into(), whole_group(), TimerKind::Session));
                }
                g.session_queued = Deadline(deadline);
                self.queue
                    .insert((deadline, group.into(), whole_group(), TimerKind::Session));
            }
        }
    }

    pub(crate) fn schedule_rebalance<G: HoldsTimers>(
        &mut self,
        groups: &mut FastMap<Id, G>,
        group: &str,
        member: &str,
        deadline: i64,
        epoch: i32,
    ) {
        let g = entry_or_default(groups, group).timers_mut();
        session_of(&mut g.members, member);
        if let Some((old, old_epoch)) = g.arm_rebalance(member, deadline, epoch) {
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

    pub(crate) fn cancel_rebalance<G: HoldsTimers>(
        &mut self,
        groups: &mut FastMap<Id, G>,
        group: &str,
        member: &str,
    ) {
        let Some(g) = groups.get_mut(group).map(G::timers_mut) else {
            return;
        };
        if let Some((old, epoch)) = g.disarm_rebalance(member) {
            self.queue.remove(&(
                old,
                group.into(),
                member.into(),
                TimerKind::Rebalance(epoch),
            ));
        }
    }

    /// Disarms `member`'s timers. The group's timers are left empty (their room freed) when it
    /// was the last member with any; the caller decides whether the group's entry goes.
    pub(crate) fn cancel_member<G: HoldsTimers>(
        &mut self,
        groups: &mut FastMap<Id, G>,
        group: &str,
        member: &str,
    ) {
        let Some(g) = groups.get_mut(group).map(G::timers_mut) else {
            return;
        };
        if g.members.remove(member).is_none() {
            return;
        }
        if let Some((d, e)) = g.disarm_rebalance(member) {
            self.queue
                .remove(&(d, group.into(), member.into(), TimerKind::Rebalance(e)));
        }
        // The group's session entry stays for the others; with none left, it goes.
        if g.members.is_empty() {
            if let Some(queued) = g.session_queued.get() {
                self.queue
                    .remove(&(queued, group.into(), whole_group(), TimerKind::Session));
            }
            *g = GroupTimers::default();
        }
    }

    /// The timers due at `now` (see [`DueTimers`]); changes nothing.
    pub(crate) fn due<G: HoldsTimers>(&self, groups: &FastMap<Id, G>, now: i64) -> DueTimers {
        let mut due = DueTimers::default();
        for queued_entry in self.queue.iter().take_while(|e| e.0 <= now) {
            let (queued, group, member, kind) = queued_entry;
            let Some(g) = groups.get(group).map(G::timers) else {
                due.orphans.push(queued_entry.clone());
                continue;
            };
            match kind {
                TimerKind::Session => {
                    let mut earliest_left: Option<i64> = None;
                    for (member_id, session) in &g.members {
                        let Some(deadline) = session.get() else {
                            continue;
                        };
                        if deadline <= now {
                            due.fire.push(DueTimer {
                                deadline,
                                group_id: group.clone(),
                                member_id: member_id.clone(),
                                kind: TimerKind::Session,
                            });
                        } else {
                            earliest_left =
                                Some(earliest_left.map_or(deadline, |e| e.min(deadline)));
                        }
                    }
                    match earliest_left {
                        Some(at) => due.requeue.push((*queued, group.clone(), at)),
                        None => due.orphans.push(queued_entry.clone()),
                    }
                }
                TimerKind::Rebalance(_) => match g.members.get(member) {
                    Some(_) => due.fire.push(DueTimer {
                        deadline: *queued,
                        group_id: group.clone(),
                        member_id: member.clone(),
                        kind: *kind,
                    }),
                    None => due.orphans.push(queued_entry.clone()),
                },
            }
        }
        due.fire.sort();
        due
    }

    /// Takes what [`Timers::due`] found: the fired timers are disarmed and leave the queue,
    /// the groups' session entries move to their earliest deadline left.
    pub(crate) fn take<G: HoldsTimers>(&mut self, groups: &mut FastMap<Id, G>, due: &DueTimers) {
        for orphan in &due.orphans {
            self.queue.remove(orphan);
            if orphan.3 == TimerKind::Session {
                if let Some(g) = groups.get_mut(&orphan.1).map(G::timers_mut) {
                    g.session_queued = Deadline::NONE;
                }
            }
        }
        for (queued, group, deadline) in &due.requeue {
            self.queue
                .remove(&(*queued, group.clone(), whole_group(), TimerKind::Session));
            if let Some(g) = groups.get_mut(group).map(G::timers_mut) {
                g.session_queued = Deadline(*deadline);
            }
            self.queue
                .insert((*deadline, group.clone(), whole_group(), TimerKind::Session));
        }
        for timer in &due.fire {
            let Some(g) = groups.get_mut(&timer.group_id).map(G::timers_mut) else {
                continue;
            };
            match timer.kind {
                // The group's entry moved or left above.
                TimerKind::Session => {
                    if let Some(session) = g.members.get_mut(&timer.member_id) {
                        *session = Deadline::NONE;
                    }
                }
                TimerKind::Rebalance(_) => {
                    if let Some((queued, _)) = g.disarm_rebalance(&timer.member_id) {
                        self.queue.remove(&(
                            queued,
                            timer.group_id.clone(),
                            timer.member_id.clone(),
                            timer.kind,
                        ));
                    }
                }
            }
        }
    }

    /// No later than the earliest pending deadline (a group's session entry may sit under an
    /// earlier one; ticking then fires nothing and moves it), so the owner knows when to tick
    /// next.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.queue.first().map(|e| e.0)
    }
}

#[cfg(test)]
mod tests;
