//! Tasks as a member owns them: sets of partitions by subtopology, the same shape for active,
//! standby and warm-up tasks.

use std::collections::{BTreeMap, BTreeSet};

use kcoord_wire::messages::{
    streams_group_describe_response as describe, streams_group_heartbeat_request as req,
    streams_group_heartbeat_response as resp,
};

/// Task ids by subtopology: `subtopology id -> partitions`. A subtopology with no partition is
/// never stored, so two equal sets of tasks always compare equal.
pub type Tasks = BTreeMap<String, BTreeSet<i32>>;

/// The tasks of one member (Kafka's `StreamsGroupMemberAssignment`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    pub active: Tasks,
    pub standby: Tasks,
    pub warmup: Tasks,
}

impl Assignment {
    /// True when the member has no task at all.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.standby.is_empty() && self.warmup.is_empty()
    }

    /// Number of active tasks.
    pub fn active_count(&self) -> usize {
        count(&self.active)
    }

    /// Number of active, standby and warm-up tasks together.
    pub fn task_count(&self) -> usize {
        count(&self.active) + count(&self.standby) + count(&self.warmup)
    }

    /// Every active task as `(subtopology id, partition)`, in order.
    pub fn active_tasks(&self) -> impl Iterator<Item = (&str, i32)> + '_ {
        iter(&self.active)
    }

    /// Every standby task as `(subtopology id, partition)`, in order.
    pub fn standby_tasks(&self) -> impl Iterator<Item = (&str, i32)> + '_ {
        iter(&self.standby)
    }

    pub(crate) fn from_describe(a: &describe::Assignment) -> Assignment {
        let tasks = |ids: &[describe::TaskIds]| {
            tasks_from(ids.iter().map(|t| (&t.subtopology_id, &t.partitions)))
        };
        Assignment {
            active: tasks(&a.active_tasks),
            standby: tasks(&a.standby_tasks),
            warmup: tasks(&a.warmup_tasks),
        }
    }
}

fn count(tasks: &Tasks) -> usize {
    tasks.values().map(BTreeSet::len).sum()
}

fn iter(tasks: &Tasks) -> impl Iterator<Item = (&str, i32)> + '_ {
    tasks
        .iter()
        .flat_map(|(s, parts)| parts.iter().map(move |p| (s.as_str(), *p)))
}

/// Builds [`Tasks`] from `(subtopology, partitions)` pairs, merging repeated subtopologies.
pub fn tasks_from<'a, S, P>(pairs: impl IntoIterator<Item = (S, P)>) -> Tasks
where
    S: AsRef<str> + 'a,
    P: IntoIterator<Item = &'a i32>,
{
    let mut tasks = Tasks::new();
    for (subtopology, partitions) in pairs {
        let partitions: BTreeSet<i32> = partitions.into_iter().copied().collect();
        if !partitions.is_empty() {
            tasks
                .entry(subtopology.as_ref().to_string())
                .or_default()
                .extend(partitions);
        }
    }
    tasks
}

pub(crate) fn from_response(ids: &[resp::TaskIds]) -> Tasks {
    tasks_from(ids.iter().map(|t| (&t.subtopology_id, &t.partitions)))
}

pub(crate) fn to_request(tasks: &Tasks) -> Vec<req::TaskIds> {
    tasks
        .iter()
        .map(|(s, parts)| req::TaskIds {
            subtopology_id: s.clone(),
            partitions: parts.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_task_sets_compare_equal_whatever_the_wire_shape() {
        let a = from_response(&[
            resp::TaskIds {
                subtopology_id: "0".into(),
                partitions: vec![2, 0],
                ..Default::default()
            },
            resp::TaskIds {
                subtopology_id: "1".into(),
                partitions: vec![],
                ..Default::default()
            },
            resp::TaskIds {
                subtopology_id: "0".into(),
                partitions: vec![1],
                ..Default::default()
            },
        ]);
        let b = tasks_from([("0", &[0, 1, 2])]);
        assert_eq!(a, b);
        let assignment = Assignment {
            active: a,
            ..Default::default()
        };
        assert_eq!(assignment.active_count(), 3);
        assert_eq!(
            assignment.active_tasks().collect::<Vec<_>>(),
            vec![("0", 0), ("0", 1), ("0", 2)]
        );
        assert_eq!(to_request(&assignment.active)[0].partitions, vec![0, 1, 2]);
    }
}
