//! Moves one member's current assignment towards its target assignment (Kafka's streams
//! `CurrentAssignmentBuilder`): tasks the member must give up are revoked first, and a task is
//! only granted once every other holder that would conflict with it has released it.
use std::collections::{BTreeSet, HashMap};

use kcoord_metadata::{
    MemberState, PendingTasks, StreamsGroup, StreamsGroupMember, TaskEpochs, Tasks, TasksTuple,
    VecSet,
};

use crate::error::{CoordinatorError, Result};

type Task = (String, i32);

/// Who currently holds each task (assigned or pending revocation), other than the member being
/// reconciled: `member id -> process id` per role.
#[derive(Debug, Default)]
pub struct TaskOwners {
    active: HashMap<Task, String>,
    standby: HashMap<Task, BTreeSet<String>>,
    warmup: HashMap<Task, BTreeSet<String>>,
}

impl TaskOwners {
    /// The holders in `group`, leaving out `except` (the member being reconciled).
    pub fn of(group: &StreamsGroup, except: &str) -> TaskOwners {
        let mut owners = TaskOwners::default();
        for m in group.members.values().filter(|m| m.member_id != except) {
            for tuple in [&m.assigned, &*m.pending_revocation] {
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

    fn in_process(map: &HashMap<Task, BTreeSet<String>>, task: &Task, process: &str) -> bool {
        map.get(task).is_some_and(|p| p.contains(process))
    }

    /// An active task has one owner group-wide, and a process never runs a task twice.
    fn active_unreleased(&self, task: &Task, process: &str) -> bool {
        self.active.contains_key(task)
            || Self::in_process(&self.standby, task, process)
            || Self::in_process(&self.warmup, task, process)
    }

    /// Replicas only conflict within a process.
    fn replica_unreleased(&self, task: &Task, process: &str) -> bool {
        self.active.get(task).is_some_and(|p| p == process)
            || Self::in_process(&self.standby, task, process)
            || Self::in_process(&self.warmup, task, process)
    }
}

fn tasks_of(tasks: &Tasks) -> impl Iterator<Item = Task> + '_ {
    tasks
        .iter()
        .flat_map(|(s, parts)| parts.iter().map(move |p| (s.clone(), *p)))
}

fn contains_any(owned: &Tasks, pending: &Tasks) -> bool {
    pending.iter().any(|(s, parts)| {
        owned
            .get(s)
            .is_some_and(|o| parts.iter().any(|p| o.contains(p)))
    })
}

/// The member still reports (or did not report) a task it was asked to revoke.
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
    let subtopologies: BTreeSet<&String> = current.keys().chain(target.keys()).collect();
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
        )),
        MemberState::UnrevokedTasks => {
            if has_not_released(&member.pending_revocation, owned) {
                Ok(member.clone())
            } else {
                Ok(next_assignment(
                    member,
                    member.member_epoch + 1,
                    target_epoch,
                    target,
                    owners,
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
            ))
        }
    }
}

fn next_assignment(
    member: &StreamsGroupMember,
    epoch_if_revoking: i32,
    target_epoch: i32,
    target: &TasksTuple,
    owners: &TaskOwners,
) -> StreamsGroupMember {
    let process = member.process_id.as_str();
    let active = difference(&member.assigned.active, &target.active, |t| {
        owners.active_unreleased(t, process)
    });
    let standby = difference(&member.assigned.standby, &target.standby, |t| {
        owners.replica_unreleased(t, process)
    });
    let warmup = difference(&member.assigned.warmup, &target.warmup, |t| {
        owners.replica_unreleased(t, process)
    });
    let unreleased = active.unreleased || standby.unreleased || warmup.unreleased;
    let mut next = member.clone();
    // Epochs cover assigned and pending-revocation active tasks (offset commits check both).
    let kept_epochs: TaskEpochs = member
        .active_task_epochs
        .iter()
        .filter(|((s, p), _)| active.kept.get(s).is_some_and(|ps| ps.contains(p)))
        .map(|(k, v)| (k.clone(), *v))
        .collect();

    if !active.revoke.is_empty() || !standby.revoke.is_empty() || !warmup.revoke.is_empty() {
        // Revoke first; the member stays in its epoch until it confirms.
        next.state = MemberState::UnrevokedTasks;
        set_epoch(&mut next, epoch_if_revoking);
        next.assigned = TasksTuple {
            active: active.kept,
            standby: standby.kept,
            warmup: warmup.kept,
        };
        next.pending_revocation = TasksTuple {
            active: active.revoke,
            standby: standby.revoke,
            warmup: warmup.revoke,
        }
        .into();
        return next;
    }
    let mut epochs = kept_epochs;
    for task in tasks_of(&active.grant) {
        epochs.insert(task, target_epoch);
    }
    next.state = if unreleased {
        MemberState::UnreleasedTasks
    } else {
        MemberState::Stable
    };
    set_epoch(&mut next, target_epoch);
    next.assigned = TasksTuple {
        active: union(&active.kept, &active.grant),
        standby: union(&standby.kept, &standby.grant),
        warmup: union(&warmup.kept, &warmup.grant),
    };
    next.active_task_epochs = epochs;
    next.pending_revocation = PendingTasks::default();
    next
}

/// Kafka's `updateMemberEpoch`: the previous epoch remembers the one being replaced.
fn set_epoch(member: &mut StreamsGroupMember, epoch: i32) {
    if member.member_epoch != epoch {
        member.previous_member_epoch = member.member_epoch;
    }
    member.member_epoch = epoch;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(spec: &[(&str, &[i32])]) -> Tasks {
        spec.iter()
            .map(|(s, p)| (s.to_string(), p.iter().copied().collect()))
            .collect()
    }

    fn member(id: &str, process: &str, epoch: i32, active: Tasks) -> StreamsGroupMember {
        StreamsGroupMember {
            member_id: id.into(),
            process_id: process.into(),
            member_epoch: epoch,
            assigned: TasksTuple {
                active,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn group(members: Vec<StreamsGroupMember>) -> StreamsGroup {
        StreamsGroup {
            members: members
                .into_iter()
                .map(|m| (m.member_id.as_str().into(), m))
                .collect(),
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
        assert_eq!(next.assigned.active, tasks(&[("0", &[0, 1])]));
        assert_eq!(next.active_task_epochs.get(&("0".to_string(), 1)), Some(&2));
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
        assert_eq!(next.assigned.active, tasks(&[("0", &[1])]));
        assert_eq!(next.pending_revocation.active, tasks(&[("0", &[0])]));
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
        assert_eq!(done.assigned.active, tasks(&[("0", &[1, 2])]));
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn a_task_still_owned_elsewhere_is_held_back() {
        let holder = member("b", "p2", 1, tasks(&[("0", &[0])]));
        let m = member("a", "p1", 1, Tasks::new());
        let g = group(vec![holder, m.clone()]);
        let owners = TaskOwners::of(&g, "a");
        let target = TasksTuple {
            active: tasks(&[("0", &[0, 1])]),
            ..Default::default()
        };
        let next = reconcile(&m, 2, &target, &owners, None).unwrap();
        assert_eq!(next.state, MemberState::UnreleasedTasks);
        assert_eq!(next.assigned.active, tasks(&[("0", &[1])]));
        assert_eq!(next.member_epoch, 2);
        // Once released, the next heartbeat grants it.
        let g = group(vec![member("b", "p2", 2, Tasks::new()), next.clone()]);
        let done = reconcile(&next, 2, &target, &TaskOwners::of(&g, "a"), None).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned.active, tasks(&[("0", &[0, 1])]));
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
        let next = reconcile(&m, 2, &target, &TaskOwners::of(&g, "a"), None).unwrap();
        assert!(next.assigned.standby.is_empty());
        assert_eq!(next.state, MemberState::UnreleasedTasks);
        // Another process is fine.
        let other = member("c", "p2", 1, Tasks::new());
        let g = group(vec![
            member("b", "p1", 1, tasks(&[("0", &[0])])),
            other.clone(),
        ]);
        let next = reconcile(&other, 2, &target, &TaskOwners::of(&g, "c"), None).unwrap();
        assert_eq!(next.assigned.standby, tasks(&[("0", &[0])]));
    }
}
