//! A streams member's tasks: the maps records 21 and 22 carry, and the two ways a member holds
//! them cheaply (pending revocation boxed only when there is some; assigned tasks shared with
//! the member's target).
use std::sync::Arc;

use thin_vec::ThinVec;

use super::streams::Id;
use super::vec_map::{VecMap, VecSet};

/// Sub-topology id -> partitions. A member usually holds one or two sub-topologies, so sorted
/// vectors (not B-trees) keep a member's state small; iteration is in key order all the same.
pub type Tasks = VecMap<Id, VecSet<i32>>;

/// Active, standby and warm-up tasks of one member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TasksTuple {
    pub active: Tasks,
    pub standby: Tasks,
    pub warmup: Tasks,
}

impl TasksTuple {
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.standby.is_empty() && self.warmup.is_empty()
    }
}

/// A member's tasks pending revocation: empty except while the member revokes, so boxed only
/// when there are some, which keeps 64 bytes out of every idle member. Read it through `Deref`
/// as a [`TasksTuple`]. Empty is always stored as `None`, so the derived equality is the
/// tuples' equality.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PendingTasks(Option<Box<TasksTuple>>);

static NO_TASKS: TasksTuple = TasksTuple {
    active: VecMap::new(),
    standby: VecMap::new(),
    warmup: VecMap::new(),
};

impl std::ops::Deref for PendingTasks {
    type Target = TasksTuple;

    fn deref(&self) -> &TasksTuple {
        self.0.as_deref().unwrap_or(&NO_TASKS)
    }
}

impl From<TasksTuple> for PendingTasks {
    fn from(tasks: TasksTuple) -> Self {
        PendingTasks((!tasks.is_empty()).then(|| Box::new(tasks)))
    }
}

impl std::fmt::Debug for PendingTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        TasksTuple::fmt(self, f)
    }
}

/// A member's assigned tasks, or its target's: one allocation shared by both when they are
/// equal, which a settled member's always are (replay shares them, see
/// [`SharedTasks::share_if_equal`]). Kafka keeps two copies; here the second costs a pointer
/// (about 60 bytes less per member). Read it through `Deref` as a [`TasksTuple`]; no tasks
/// allocate nothing. Equality is the tuples' equality, however they are held.
#[derive(Clone, Default)]
pub struct SharedTasks(Option<Arc<TasksTuple>>);

impl SharedTasks {
    /// The tuple to change, copied first if another holder shares it.
    pub fn make_mut(&mut self) -> &mut TasksTuple {
        Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }

    /// Holds `other`'s allocation instead of its own when the two are equal.
    pub fn share_if_equal(&mut self, other: &SharedTasks) {
        if !self.is_shared_with(other) && **self == **other {
            *self = other.clone();
        }
    }

    /// Whether both hold one allocation.
    pub fn is_shared_with(&self, other: &SharedTasks) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl std::ops::Deref for SharedTasks {
    type Target = TasksTuple;

    fn deref(&self) -> &TasksTuple {
        self.0.as_deref().unwrap_or(&NO_TASKS)
    }
}

impl From<TasksTuple> for SharedTasks {
    fn from(tasks: TasksTuple) -> Self {
        SharedTasks((!tasks.is_empty()).then(|| Arc::new(tasks)))
    }
}

impl PartialEq for SharedTasks {
    fn eq(&self, other: &SharedTasks) -> bool {
        self.is_shared_with(other) || **self == **other
    }
}

impl Eq for SharedTasks {}

impl PartialEq<TasksTuple> for SharedTasks {
    fn eq(&self, other: &TasksTuple) -> bool {
        **self == *other
    }
}

impl std::fmt::Debug for SharedTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        TasksTuple::fmt(self, f)
    }
}

/// The member epoch at which each of a member's active tasks was given, for offset-commit
/// validation: one epoch per task of its assigned active tasks and then of its active tasks
/// pending revocation, each in task order, read against those tasks
/// ([`TaskEpochs::get`]). A member's tasks nearly always share one epoch (those it got in one
/// assignment), kept as that number alone, without an allocation; a map of (sub-topology id,
/// partition) to epoch took 32 bytes and more per task. Built only by [`TaskEpochs::of`], so
/// that equal epochs compare equal however they were given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEpochs {
    /// Every task's epoch, when `each` is empty; [`NO_EPOCH`] when none has one.
    same: i32,
    /// Each task's epoch ([`NO_EPOCH`]: none), when they differ.
    each: ThinVec<i32>,
}

/// No epoch (epochs are never negative).
const NO_EPOCH: i32 = i32::MIN;

impl Default for TaskEpochs {
    fn default() -> Self {
        TaskEpochs {
            same: NO_EPOCH,
            each: ThinVec::new(),
        }
    }
}

impl TaskEpochs {
    /// The epochs of `assigned` and then `pending` active tasks, as `epoch_of(sub-topology id,
    /// partition, whether pending)` gives each.
    pub fn of(
        assigned: &Tasks,
        pending: &Tasks,
        mut epoch_of: impl FnMut(&str, i32, bool) -> Option<i32>,
    ) -> TaskEpochs {
        let each: Vec<i32> = in_order(assigned)
            .map(|(s, p)| (s, p, false))
            .chain(in_order(pending).map(|(s, p)| (s, p, true)))
            .map(|(s, p, pending)| epoch_of(s, p, pending).unwrap_or(NO_EPOCH))
            .collect();
        match each.split_first() {
            Some((first, rest)) if rest.iter().all(|e| e == first) => TaskEpochs {
                same: *first,
                each: ThinVec::new(),
            },
            Some(_) => TaskEpochs {
                same: NO_EPOCH,
                each: each.into_iter().collect(),
            },
            None => TaskEpochs::default(),
        }
    }

    /// The epoch of task (`subtopology`, `partition`) among the `assigned` and `pending` active
    /// tasks these epochs were built for: its pending revocation's when it is pending.
    pub fn get(
        &self,
        assigned: &Tasks,
        pending: &Tasks,
        subtopology: &str,
        partition: i32,
    ) -> Option<i32> {
        let at = match position(pending, subtopology, partition) {
            Some(at) => count(assigned) + at,
            None => position(assigned, subtopology, partition)?,
        };
        let epoch = if self.each.is_empty() {
            self.same
        } else {
            *self.each.get(at)?
        };
        (epoch != NO_EPOCH).then_some(epoch)
    }
}

/// `tasks` as (sub-topology id, partition), in order.
fn in_order(tasks: &Tasks) -> impl Iterator<Item = (&str, i32)> {
    tasks
        .iter()
        .flat_map(|(s, parts)| parts.iter().map(move |p| (s.as_str(), *p)))
}

fn count(tasks: &Tasks) -> usize {
    tasks.values().map(|parts| parts.len()).sum()
}

/// Where the task is in `tasks`' order.
fn position(tasks: &Tasks, subtopology: &str, partition: i32) -> Option<usize> {
    let mut before = 0;
    for (s, parts) in tasks.iter() {
        if s.as_str() == subtopology {
            return parts
                .as_slice()
                .binary_search(&partition)
                .ok()
                .map(|at| before + at);
        }
        before += parts.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(active: &[(&str, &[i32])]) -> TasksTuple {
        TasksTuple {
            active: active
                .iter()
                .map(|(s, p)| (Id::from(*s), p.iter().copied().collect()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn empty_pending_tasks_are_not_boxed_and_equal_the_default() {
        let empty = PendingTasks::from(TasksTuple::default());
        assert!(empty.0.is_none());
        assert_eq!(empty, PendingTasks::default());
        assert!(empty.is_empty());
        assert_eq!(format!("{empty:?}"), format!("{:?}", TasksTuple::default()));
    }

    #[test]
    fn pending_tasks_read_and_compare_as_their_tuple() {
        let pending = PendingTasks::from(tuple(&[("0", &[2, 1])]));
        assert_eq!(*pending, tuple(&[("0", &[1, 2])]));
        assert_eq!(
            pending.active.get("0").map(|p| p.as_slice()),
            Some(&[1, 2][..])
        );
        assert_eq!(pending, PendingTasks::from(tuple(&[("0", &[1, 2])])));
        assert_ne!(pending, PendingTasks::from(tuple(&[("0", &[1])])));
        assert_ne!(pending, PendingTasks::default());
    }

    #[test]
    fn shared_tasks_share_one_allocation_only_when_equal() {
        let target = SharedTasks::from(tuple(&[("0", &[1, 2])]));
        let mut assigned = SharedTasks::from(tuple(&[("0", &[1])]));
        assigned.share_if_equal(&target);
        assert!(
            !assigned.is_shared_with(&target),
            "unequal tasks stay apart"
        );
        assert_ne!(assigned, target);
        let mut assigned = SharedTasks::from(tuple(&[("0", &[2, 1])]));
        assert!(!assigned.is_shared_with(&target));
        assigned.share_if_equal(&target);
        assert!(
            assigned.is_shared_with(&target),
            "equal tasks are held once"
        );
        assert_eq!(assigned, tuple(&[("0", &[1, 2])]));
    }

    #[test]
    fn changing_shared_tasks_copies_them_first() {
        let target = SharedTasks::from(tuple(&[("0", &[1])]));
        let mut assigned = target.clone();
        assigned.make_mut().standby = tuple(&[("1", &[0])]).active;
        assert!(!assigned.is_shared_with(&target));
        assert_eq!(
            target,
            tuple(&[("0", &[1])]),
            "the other holder is unchanged"
        );
        assert_eq!(
            assigned.standby.get("1").map(|p| p.as_slice()),
            Some(&[0][..])
        );
    }

    #[test]
    fn no_shared_tasks_allocate_nothing_and_equal_any_empty_tuple() {
        let empty = SharedTasks::from(TasksTuple::default());
        assert!(empty.0.is_none());
        assert_eq!(empty, SharedTasks::default());
        let mut emptied = SharedTasks::from(tuple(&[("0", &[1])]));
        emptied.make_mut().active.clear();
        assert_eq!(emptied, empty, "an emptied tuple equals no tuple");
        assert_eq!(format!("{empty:?}"), format!("{:?}", TasksTuple::default()));
    }

    #[test]
    fn task_epochs_shared_by_every_task_are_one_number() {
        let assigned = tuple(&[("0", &[1, 3]), ("1", &[0])]).active;
        let pending = tuple(&[("1", &[2])]).active;
        let epochs = TaskEpochs::of(&assigned, &pending, |_, _, _| Some(4));
        assert!(
            epochs.each.is_empty(),
            "one epoch for all, nothing allocated"
        );
        for (s, p) in [("0", 1), ("0", 3), ("1", 0), ("1", 2)] {
            assert_eq!(epochs.get(&assigned, &pending, s, p), Some(4), "{s}-{p}");
        }
        assert_eq!(epochs.get(&assigned, &pending, "0", 2), None, "not a task");
        assert_eq!(
            epochs.get(&assigned, &pending, "2", 0),
            None,
            "no such sub-topology"
        );
        let by_order = TaskEpochs::of(&assigned, &pending, |s, p, _| {
            (s.len() + p as usize > 0).then_some(4)
        });
        assert_eq!(
            epochs, by_order,
            "equal epochs compare equal however they were given"
        );
    }

    #[test]
    fn task_epochs_differing_are_read_per_task_and_pending_wins() {
        let assigned = tuple(&[("0", &[1, 3]), ("1", &[0])]).active;
        let pending = tuple(&[("0", &[3]), ("1", &[2])]).active;
        let epochs = TaskEpochs::of(&assigned, &pending, |s, p, pending| match (s, p, pending) {
            ("0", 1, false) => Some(1),
            ("0", 3, false) => Some(2),
            ("1", 0, false) => None,
            ("0", 3, true) => Some(5),
            ("1", 2, true) => Some(6),
            other => panic!("asked for {other:?}"),
        });
        assert_eq!(epochs.get(&assigned, &pending, "0", 1), Some(1));
        assert_eq!(
            epochs.get(&assigned, &pending, "0", 3),
            Some(5),
            "the pending epoch"
        );
        assert_eq!(
            epochs.get(&assigned, &pending, "1", 0),
            None,
            "given no epoch"
        );
        assert_eq!(epochs.get(&assigned, &pending, "1", 2), Some(6));
        let none = TaskEpochs::of(&assigned, &pending, |_, _, _| None);
        assert_eq!(none.get(&assigned, &pending, "0", 1), None);
        assert_eq!(
            TaskEpochs::of(&Tasks::default(), &Tasks::default(), |_, _, _| Some(1)),
            TaskEpochs::default()
        );
    }
}
