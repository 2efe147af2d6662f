//! A streams member's tasks: the maps records 21 and 22 carry, and the two ways a member holds
//! them cheaply (pending revocation boxed only when there is some; assigned tasks shared with
//! the member's target).
use std::sync::Arc;

use super::streams::Id;
use super::vec_map::{VecMap, VecSet};

/// Sub-topology id -> partitions. A member usually holds one or two sub-topologies, so sorted
/// vectors (not B-trees) keep a member's state small; iteration is in key order all the same.
pub type Tasks = VecMap<Id, VecSet<i32>>;

/// `(sub-topology id, partition)` -> the member epoch at which the active task was given.
pub type TaskEpochs = VecMap<(Id, i32), i32>;

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
}
