//! Moves one member's current assignment towards its target assignment, as Kafka 4.4's streams
//! `CurrentAssignmentBuilder` does: tasks the member must give up are revoked first (unless its
//! owned tasks show they are gone already), a task is only granted once every holder that would
//! conflict with it has released it, and a role change that depends on no other member (active to
//! standby, standby to warm-up and back, standby or warm-up promoted to active) happens in place.
use std::collections::{BTreeSet, HashMap};

use kcoord_metadata::{
    MemberState, PendingTasks, ProcessId, StreamsGroup, StreamsGroupMember, Tasks, TasksTuple,
    VecSet,
};

use crate::error::{CoordinatorError, Result};
use crate::shard::Id;

type Task = (Id, i32);

/// Who currently holds each task, assigned or pending revocation, by process id: Kafka's
/// `currentActiveTaskToProcessId` / `currentStandbyTaskToProcessIds` /
/// `currentWarmupTaskToProcessIds`, which include the member being reconciled (as stored before
/// this heartbeat).
#[derive(Debug, Default)]
pub struct TaskOwners {
    active: HashMap<Task, ProcessId>,
    standby: HashMap<Task, BTreeSet<ProcessId>>,
    warmup: HashMap<Task, BTreeSet<ProcessId>>,
}

impl TaskOwners {
    /// The holders in `group`, every member included.
    pub fn of(group: &StreamsGroup) -> TaskOwners {
        let mut owners = TaskOwners::default();
        for m in group.members.values() {
            for tuple in [&**m.assigned(), &**m.pending_revocation()] {
                for task in tasks_of(&tuple.active) {
                    owners.active.insert(task, m.process_id.clone());
                }
                for task in tasks_of(&tuple.standby) {
                    owners
                        .standby
                        .entry(task)
                        .or_default()
                        .insert(m.process_id.clone());
                }
                for task in tasks_of(&tuple.warmup) {
                    owners
                        .warmup
                        .entry(task)
                        .or_default()
                        .insert(m.process_id.clone());
                }
            }
        }
        owners
    }

    fn in_process(
        map: &HashMap<Task, BTreeSet<ProcessId>>,
        task: &Task,
        process: &ProcessId,
    ) -> bool {
        map.get(task).is_some_and(|p| p.contains(process))
    }
}

fn tasks_of(tasks: &Tasks) -> impl Iterator<Item = Task> + '_ {
    tasks
        .iter()
        .flat_map(|(s, parts)| parts.iter().map(move |p| (s.clone(), *p)))
}

fn holds(tasks: &Tasks, task: &Task) -> bool {
    tasks.get(&task.0).is_some_and(|p| p.contains(&task.1))
}

fn insert(tasks: &mut Tasks, task: &Task) {
    tasks.entry(task.0.clone()).or_default().insert(task.1);
}

/// Removes the task; true if it was there. An emptied sub-topology goes.
fn remove(tasks: &mut Tasks, task: &Task) -> bool {
    let Some(parts) = tasks.get_mut(&task.0) else {
        return false;
    };
    let removed = parts.remove(&task.1);
    if parts.is_empty() {
        tasks.remove(&task.0);
    }
    removed
}

fn contains_any(owned: &Tasks, pending: &Tasks) -> bool {
    pending.iter().any(|(s, parts)| {
        owned
            .get(s)
            .is_some_and(|o| parts.iter().any(|p| o.contains(p)))
    })
}

/// `hasNotReleased`: without a report the tasks count as still held.
fn has_not_released(pending: &TasksTuple, owned: Option<&TasksTuple>) -> bool {
    match owned {
        None => true,
        Some(o) => {
            contains_any(&o.active, &pending.active)
                || contains_any(&o.standby, &pending.standby)
                || contains_any(&o.warmup, &pending.warmup)
        }
    }
}

/// current ∩ target, current − target, and target − current minus unreleased tasks.
struct Difference {
    kept: Tasks,
    revoke: Tasks,
    grant: Tasks,
    unreleased: bool,
}

fn difference(current: &Tasks, target: &Tasks, unreleased: impl Fn(&Task) -> bool) -> Difference {
    let mut d = Difference {
        kept: Tasks::new(),
        revoke: Tasks::new(),
        grant: Tasks::new(),
        unreleased: false,
    };
    let empty = VecSet::new();
    let subtopologies: BTreeSet<&Id> = current.keys().chain(target.keys()).collect();
    for s in subtopologies {
        let cur = current.get(s).unwrap_or(&empty);
        let tgt = target.get(s).unwrap_or(&empty);
        let kept: VecSet<i32> = cur.intersection(tgt).copied().collect();
        let revoke: VecSet<i32> = cur.difference(&kept).copied().collect();
        let mut grant = VecSet::new();
        for p in tgt.difference(&kept) {
            if unreleased(&(s.clone(), *p)) {
                d.unreleased = true;
            } else {
                grant.insert(*p);
            }
        }
        for (set, out) in [
            (kept, &mut d.kept),
            (revoke, &mut d.revoke),
            (grant, &mut d.grant),
        ] {
            if !set.is_empty() {
                out.insert(s.clone(), set);
            }
        }
    }
    d
}

fn union(a: &Tasks, b: &Tasks) -> Tasks {
    let mut out = a.clone();
    for (s, parts) in b {
        out.entry(s.clone())
            .or_default()
            .extend(parts.iter().copied());
    }
    out
}

/// The member's next state given the target assignment of `target_epoch`.
///
/// `owned` is what the member reported in this heartbeat (`None` if it did not report).
pub fn reconcile(
    member: &StreamsGroupMember,
    target_epoch: i32,
    target: &TasksTuple,
    owners: &TaskOwners,
    owned: Option<&TasksTuple>,
) -> Result<StreamsGroupMember> {
    match member.state {
        MemberState::Stable if member.member_epoch == target_epoch => Ok(member.clone()),
        MemberState::Stable | MemberState::UnreleasedTasks => Ok(next_assignment(
            member,
            member.member_epoch,
            target_epoch,
            target,
            owners,
            owned,
        )),
        MemberState::UnrevokedTasks => {
            if has_not_released(member.pending_revocation(), owned) {
                Ok(member.clone())
            } else {
                Ok(next_assignment(
                    member,
                    member.member_epoch + 1,
                    target_epoch,
                    target,
                    owners,
                    owned,
                ))
            }
        }
        MemberState::Unknown => {
            if owned.is_none_or(|o| !o.is_empty()) {
                return Err(CoordinatorError::fenced(
                    "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.",
                ));
            }
            Ok(next_assignment(
                member,
                target_epoch,
                target_epoch,
                target,
                owners,
                owned,
            ))
        }
    }
}

/// `CurrentAssignmentBuilder.computeNextAssignment` and `buildNewMember`.
fn next_assignment(
    member: &StreamsGroupMember,
    epoch_if_revoking: i32,
    target_epoch: i32,
    target: &TasksTuple,
    owners: &TaskOwners,
    owned: Option<&TasksTuple>,
) -> StreamsGroupMember {
    let cur = &member.assigned();
    let Differences {
        active,
        mut standby,
        mut warmup,
    } = differences(cur, target, owners, &member.process_id);
    let unreleased = active.unreleased || standby.unreleased || warmup.unreleased;
    change_roles_in_place(cur, target, &mut standby, &mut warmup);
    let revoke = TasksTuple {
        active: active.revoke,
        standby: standby.revoke,
        warmup: warmup.revoke,
    };
    let revoking = !revoke.is_empty() && has_not_released(&revoke, owned);
    keep_replicas_until_promoted(
        cur,
        target,
        &active.grant,
        revoking,
        &mut standby.kept,
        &mut warmup.kept,
    );
    let kept = TasksTuple {
        active: active.kept,
        standby: standby.kept,
        warmup: warmup.kept,
    };
    if revoking {
        return revoking_member(member, epoch_if_revoking, kept, revoke);
    }
    let granted = TasksTuple {
        active: active.grant,
        standby: standby.grant,
        warmup: warmup.grant,
    };
    granted_member(member, target_epoch, unreleased, &kept, &granted)
}

/// The member's active, standby and warm-up differences.
struct Differences {
    active: Difference,
    standby: Difference,
    warmup: Difference,
}

/// The differences between the member's current tasks `cur` and its `target`, where a task is
/// granted only once no holder that would conflict with it (in the process `me` or elsewhere)
/// still holds it.
fn differences(
    cur: &TasksTuple,
    target: &TasksTuple,
    owners: &TaskOwners,
    me: &ProcessId,
) -> Differences {
    let active_here = |t: &Task| owners.active.get(t).is_some_and(|p| p == me);
    let standby_here = |t: &Task| TaskOwners::in_process(&owners.standby, t, me);
    let warmup_here = |t: &Task| TaskOwners::in_process(&owners.warmup, t, me);
    // `isUnreleasedActiveTask`: an active task has one owner group-wide, and the process must
    // not hold it as a replica through another member.
    let active = difference(&cur.active, &target.active, |t| {
        owners.active.contains_key(t)
            || (standby_here(t) && !holds(&cur.standby, t))
            || (warmup_here(t) && !holds(&cur.warmup, t))
    });
    // `isUnreleasedStandbyTask`.
    let standby = difference(&cur.standby, &target.standby, |t| {
        (active_here(t) && !holds(&cur.active, t))
            || standby_here(t)
            || (warmup_here(t) && !holds(&cur.warmup, t))
    });
    // `isUnreleasedWarmupTask`: unlike a standby, a warm-up waits for the process's own active.
    let warmup = difference(&cur.warmup, &target.warmup, |t| {
        active_here(t) || (standby_here(t) && !holds(&cur.standby, t)) || warmup_here(t)
    });
    Differences {
        active,
        standby,
        warmup,
    }
}

/// Role changes that depend on no other member take effect at once. A demoted active task
/// stays pending revocation: the group must see it released before its next owner gets it.
/// A standby or warm-up promoted to active needs no revocation by the client (but see
/// [`keep_replicas_until_promoted`]).
fn change_roles_in_place(
    cur: &TasksTuple,
    target: &TasksTuple,
    standby: &mut Difference,
    warmup: &mut Difference,
) {
    for t in tasks_of(&cur.active) {
        if remove(&mut standby.grant, &t) {
            insert(&mut standby.kept, &t);
        }
    }
    for t in tasks_of(&cur.standby) {
        if remove(&mut warmup.grant, &t) {
            insert(&mut warmup.kept, &t);
            remove(&mut standby.revoke, &t);
        }
    }
    for t in tasks_of(&cur.warmup) {
        if remove(&mut standby.grant, &t) {
            insert(&mut standby.kept, &t);
            remove(&mut warmup.revoke, &t);
        }
    }
    for t in tasks_of(&cur.standby) {
        if holds(&target.active, &t) {
            remove(&mut standby.revoke, &t);
        }
    }
    for t in tasks_of(&cur.warmup) {
        if holds(&target.active, &t) {
            remove(&mut warmup.revoke, &t);
        }
    }
}

/// A standby or warm-up promoted to active stays with the member as a replica until the active
/// task is granted to it (in `active_grant`, and the member is not `revoking`).
fn keep_replicas_until_promoted(
    cur: &TasksTuple,
    target: &TasksTuple,
    active_grant: &Tasks,
    revoking: bool,
    standby_kept: &mut Tasks,
    warmup_kept: &mut Tasks,
) {
    for t in tasks_of(&cur.standby) {
        let promoted_now = !revoking && holds(active_grant, &t);
        if holds(&target.active, &t) && !promoted_now {
            insert(standby_kept, &t);
        }
    }
    for t in tasks_of(&cur.warmup) {
        let promoted_now = !revoking && holds(active_grant, &t);
        if holds(&target.active, &t) && !promoted_now {
            insert(warmup_kept, &t);
        }
    }
}

/// Revoke first: the member keeps `kept`, gives up `revoke`, and stays in its epoch until it
/// confirms.
fn revoking_member(
    member: &StreamsGroupMember,
    epoch: i32,
    kept: TasksTuple,
    revoke: TasksTuple,
) -> StreamsGroupMember {
    let mut next = member.clone();
    next.state = MemberState::UnrevokedTasks;
    set_epoch(&mut next, epoch);
    // Offset commits at an older member epoch are checked against these epochs: a kept or
    // revoked task keeps the one it was given at.
    next.set_tasks(kept.into(), revoke.into(), |s, p, _| {
        member.active_task_epoch(s, p)
    });
    next
}

/// Nothing left to revoke: the member holds `kept` and `granted` at `target_epoch`, stable
/// unless some of its target is `unreleased` by other members.
fn granted_member(
    member: &StreamsGroupMember,
    target_epoch: i32,
    unreleased: bool,
    kept: &TasksTuple,
    granted: &TasksTuple,
) -> StreamsGroupMember {
    let mut next = member.clone();
    next.state = if unreleased {
        MemberState::UnreleasedTasks
    } else {
        MemberState::Stable
    };
    set_epoch(&mut next, target_epoch);
    let assigned = TasksTuple {
        active: union(&kept.active, &granted.active),
        standby: union(&kept.standby, &granted.standby),
        warmup: union(&kept.warmup, &granted.warmup),
    };
    // A granted task is given at the target epoch; a kept one keeps its epoch.
    next.set_tasks(
        assigned.into(),
        PendingTasks::default(),
        |s, p, _| match granted
            .active
            .get(s)
            .is_some_and(|parts| parts.contains(&p))
        {
            true => Some(target_epoch),
            false => member.active_task_epoch(s, p),
        },
    );
    next
}

/// Kafka's `updateMemberEpoch`: the previous epoch becomes the current one, even when the epoch
/// does not change (a member moving from UNRELEASED_TASKS to STABLE within an epoch then has
/// previous epoch = epoch).
fn set_epoch(member: &mut StreamsGroupMember, epoch: i32) {
    member.previous_member_epoch = member.member_epoch;
    member.member_epoch = epoch;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(spec: &[(&str, &[i32])]) -> Tasks {
        spec.iter()
            .map(|(s, p)| (Id::from(*s), p.iter().copied().collect()))
            .collect()
    }

    fn member(id: &str, process: &str, epoch: i32, active: Tasks) -> StreamsGroupMember {
        let mut member = StreamsGroupMember::new(id);
        member.process_id = process.into();
        member.member_epoch = epoch;
        let assigned = TasksTuple {
            active,
            ..Default::default()
        };
        member.set_tasks(assigned.into(), Default::default(), |_, _, _| None);
        member
    }

    fn group(members: Vec<StreamsGroupMember>) -> StreamsGroup {
        StreamsGroup {
            members: members.into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_stable_member_at_the_target_epoch_is_unchanged() {
        let m = member("a", "p1", 3, tasks(&[("0", &[0])]));
        let target = TasksTuple {
            active: tasks(&[("0", &[0])]),
            ..Default::default()
        };
        let next = reconcile(&m, 3, &target, &TaskOwners::default(), None).unwrap();
        assert_eq!(next, m);
    }

    #[test]
    fn free_tasks_are_granted_at_the_target_epoch() {
        let m = member("a", "p1", 1, Tasks::new());
        let target = TasksTuple {
            active: tasks(&[("0", &[0, 1])]),
            ..Default::default()
        };
        let next = reconcile(&m, 2, &target, &TaskOwners::default(), None).unwrap();
        assert_eq!(next.member_epoch, 2);
        assert_eq!(next.previous_member_epoch, 1);
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.assigned().active, tasks(&[("0", &[0, 1])]));
        assert_eq!(next.active_task_epoch("0", 1), Some(2));
    }

    #[test]
    fn tasks_to_give_up_are_revoked_before_anything_is_granted() {
        let m = member("a", "p1", 1, tasks(&[("0", &[0, 1])]));
        let target = TasksTuple {
            active: tasks(&[("0", &[1, 2])]),
            ..Default::default()
        };
        let next = reconcile(&m, 2, &target, &TaskOwners::default(), None).unwrap();
        assert_eq!(next.state, MemberState::UnrevokedTasks);
        assert_eq!(next.member_epoch, 1, "the epoch waits for the revocation");
        assert_eq!(next.assigned().active, tasks(&[("0", &[1])]));
        assert_eq!(next.pending_revocation().active, tasks(&[("0", &[0])]));
        // Still reporting task 0: no progress.
        let still = TasksTuple {
            active: tasks(&[("0", &[0, 1])]),
            ..Default::default()
        };
        assert_eq!(
            reconcile(&next, 2, &target, &TaskOwners::default(), Some(&still)).unwrap(),
            next
        );
        // Not reporting at all: no progress either.
        assert_eq!(
            reconcile(&next, 2, &target, &TaskOwners::default(), None).unwrap(),
            next
        );
        // Revoked: task 2 is granted and the member reaches the target epoch.
        let revoked = TasksTuple {
            active: tasks(&[("0", &[1])]),
            ..Default::default()
        };
        let done = reconcile(&next, 2, &target, &TaskOwners::default(), Some(&revoked)).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.member_epoch, 2);
        assert_eq!(done.assigned().active, tasks(&[("0", &[1, 2])]));
        assert!(done.pending_revocation().is_empty());
    }

    #[test]
    fn a_task_still_owned_elsewhere_is_held_back() {
        let holder = member("b", "p2", 1, tasks(&[("0", &[0])]));
        let m = member("a", "p1", 1, Tasks::new());
        let g = group(vec![holder, m.clone()]);
        let owners = TaskOwners::of(&g);
        let target = TasksTuple {
            active: tasks(&[("0", &[0, 1])]),
            ..Default::default()
        };
        let next = reconcile(&m, 2, &target, &owners, None).unwrap();
        assert_eq!(next.state, MemberState::UnreleasedTasks);
        assert_eq!(next.assigned().active, tasks(&[("0", &[1])]));
        assert_eq!(next.member_epoch, 2);
        // Once released, the next heartbeat grants it.
        let g = group(vec![member("b", "p2", 2, Tasks::new()), next.clone()]);
        let done = reconcile(&next, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned().active, tasks(&[("0", &[0, 1])]));
    }

    #[test]
    fn a_standby_is_not_granted_where_the_process_runs_the_task() {
        let holder = member("b", "p1", 1, tasks(&[("0", &[0])]));
        let m = member("a", "p1", 1, Tasks::new());
        let g = group(vec![holder, m.clone()]);
        let target = TasksTuple {
            standby: tasks(&[("0", &[0])]),
            ..Default::default()
        };
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert!(next.assigned().standby.is_empty());
        assert_eq!(next.state, MemberState::UnreleasedTasks);
        // Another process is fine.
        let other = member("c", "p2", 1, Tasks::new());
        let g = group(vec![
            member("b", "p1", 1, tasks(&[("0", &[0])])),
            other.clone(),
        ]);
        let next = reconcile(&other, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(next.assigned().standby, tasks(&[("0", &[0])]));
    }

    fn tuple(active: Tasks, standby: Tasks, warmup: Tasks) -> TasksTuple {
        TasksTuple {
            active,
            standby,
            warmup,
        }
    }

    #[test]
    fn owned_tasks_that_already_exclude_the_revoked_ones_skip_unrevoked_tasks() {
        let m = member("a", "p1", 1, tasks(&[("0", &[0, 1])]));
        let target = tuple(tasks(&[("0", &[1, 2])]), Tasks::new(), Tasks::new());
        let owned = tuple(tasks(&[("0", &[1])]), Tasks::new(), Tasks::new());
        let g = group(vec![m.clone()]);
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), Some(&owned)).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 2);
        assert_eq!(next.assigned().active, tasks(&[("0", &[1, 2])]));
        assert!(next.pending_revocation().is_empty());
    }

    #[test]
    fn a_standby_is_promoted_to_active_in_place() {
        let mut m = member("a", "p1", 1, Tasks::new());
        let replicas = TasksTuple {
            standby: tasks(&[("0", &[0])]),
            ..Default::default()
        };
        m.set_tasks(replicas.into(), Default::default(), |_, _, _| None);
        let g = group(vec![m.clone()]);
        let target = tuple(tasks(&[("0", &[0])]), Tasks::new(), Tasks::new());
        // Even without owned tasks: a promotion asks the client to revoke nothing.
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 2);
        assert_eq!(next.assigned().active, tasks(&[("0", &[0])]));
        assert!(next.assigned().standby.is_empty());
        assert!(next.pending_revocation().is_empty());
        assert_eq!(next.active_task_epoch("0", 0), Some(2));
    }

    #[test]
    fn a_promoted_warmup_stays_until_the_active_owner_releases_the_task() {
        let holder = member("b", "p2", 1, tasks(&[("0", &[0])]));
        let mut m = member("a", "p1", 1, Tasks::new());
        let replicas = TasksTuple {
            warmup: tasks(&[("0", &[0])]),
            ..Default::default()
        };
        m.set_tasks(replicas.into(), Default::default(), |_, _, _| None);
        let g = group(vec![holder, m.clone()]);
        let target = tuple(tasks(&[("0", &[0])]), Tasks::new(), Tasks::new());
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(next.state, MemberState::UnreleasedTasks);
        assert_eq!(next.member_epoch, 2);
        assert!(next.assigned().active.is_empty());
        assert_eq!(
            next.assigned().warmup,
            tasks(&[("0", &[0])]),
            "kept for the promotion"
        );
        // Released by b: promoted in place.
        let g = group(vec![member("b", "p2", 2, Tasks::new()), next.clone()]);
        let done = reconcile(&next, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned().active, tasks(&[("0", &[0])]));
        assert!(done.assigned().warmup.is_empty());
    }

    #[test]
    fn an_active_task_demoted_to_standby_becomes_standby_at_once_and_is_revoked_as_active() {
        let m = member("a", "p1", 1, tasks(&[("0", &[0])]));
        let g = group(vec![m.clone()]);
        let target = tuple(Tasks::new(), tasks(&[("0", &[0])]), Tasks::new());
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(next.state, MemberState::UnrevokedTasks);
        assert_eq!(next.member_epoch, 1);
        assert_eq!(next.assigned().standby, tasks(&[("0", &[0])]));
        assert!(next.assigned().active.is_empty());
        assert_eq!(next.pending_revocation().active, tasks(&[("0", &[0])]));
    }

    #[test]
    fn a_standby_turned_warmup_needs_no_revocation() {
        let mut m = member("a", "p1", 1, Tasks::new());
        let replicas = TasksTuple {
            standby: tasks(&[("0", &[3])]),
            ..Default::default()
        };
        m.set_tasks(replicas.into(), Default::default(), |_, _, _| None);
        let g = group(vec![m.clone()]);
        let target = tuple(Tasks::new(), Tasks::new(), tasks(&[("0", &[3])]));
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 2);
        assert_eq!(next.assigned().warmup, tasks(&[("0", &[3])]));
        assert!(next.assigned().standby.is_empty());
    }

    #[test]
    fn the_previous_epoch_moves_even_when_the_epoch_does_not() {
        let holder = member("b", "p2", 2, tasks(&[("0", &[0])]));
        let mut m = member("a", "p1", 2, Tasks::new());
        m.previous_member_epoch = 1;
        m.state = MemberState::UnreleasedTasks;
        let g = group(vec![holder, m.clone()]);
        let target = tuple(tasks(&[("0", &[0])]), Tasks::new(), Tasks::new());
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g), None).unwrap();
        assert_eq!(next.state, MemberState::UnreleasedTasks);
        assert_eq!((next.member_epoch, next.previous_member_epoch), (2, 2));
    }
}
