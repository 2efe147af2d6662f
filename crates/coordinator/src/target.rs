//! The target assignment: when it may be recomputed, how (the sticky assignor over the
//! configured topology), and the records that persist its delta.
use std::collections::BTreeMap;

use kcoord_metadata::{Record, SharedTasks, StreamsGroupMember, Tasks, TasksTuple};

use crate::assignor::{assign, AssignorInput, AssignorMember, AssignorSubtopology};
use crate::configured_topology::ConfiguredTopology;
use crate::record_builders;
use crate::shard::Id;
use crate::soft_state::MemberTaskOffsets;
use crate::task::TaskId;

/// `canComputeNextTargetAssignment`: no previous assignment (timestamp 0), a zero interval,
/// a clock that went backwards, or the interval has passed.
pub fn can_compute(last_timestamp: i64, interval_ms: i32, now: i64) -> bool {
    last_timestamp == 0
        || interval_ms == 0
        || now < last_timestamp
        || now >= last_timestamp + i64::from(interval_ms)
}

fn task_set(tasks: &Tasks) -> std::collections::BTreeSet<TaskId> {
    tasks
        .iter()
        .flat_map(|(s, ps)| ps.iter().map(move |p| TaskId::new(s.clone(), *p)))
        .collect()
}

fn to_tasks(set: &std::collections::BTreeSet<TaskId>) -> Tasks {
    let mut out = Tasks::new();
    for t in set {
        out.entry(Id::from(t.subtopology.as_str()))
            .or_default()
            .insert(t.partition);
    }
    out
}

/// Runs the assignor for `members`. A topology that is not ready assigns nothing.
///
/// `offsets` are the members' reported task offsets: the assignor ranks standby candidates by
/// them and counts a member reporting a task's state as a (weaker) candidate for it.
pub fn compute(
    members: &kcoord_metadata::KeyedMap<StreamsGroupMember>,
    configured: &ConfiguredTopology,
    num_standby_replicas: i32,
    offsets: &BTreeMap<String, MemberTaskOffsets>,
) -> BTreeMap<String, TasksTuple> {
    let input = AssignorInput {
        subtopologies: configured
            .subtopologies
            .values()
            .map(|s| AssignorSubtopology {
                id: s.id.clone(),
                num_tasks: s.num_tasks,
                stateful: s.stateful,
            })
            .collect(),
        members: members
            .values()
            .map(|m| AssignorMember {
                member_id: m.member_id.to_string(),
                process_id: m.process_id.to_string(),
                rack_id: m.rack_id().map(str::to_owned),
                client_tags: m.client_tags().clone(),
                previous_active: task_set(&m.assigned().active),
                previous_standby: task_set(&m.assigned().standby),
                previous_warmup: task_set(&m.assigned().warmup),
                task_offsets: offsets
                    .get(m.member_id.as_str())
                    .map(|o| o.offsets.clone())
                    .unwrap_or_default(),
            })
            .collect(),
        num_standby_replicas,
    };
    assign(&input)
        .into_iter()
        .map(|(member, a)| {
            (
                member,
                TasksTuple {
                    active: to_tasks(&a.active),
                    standby: to_tasks(&a.standby),
                    warmup: to_tasks(&a.warmup),
                },
            )
        })
        .collect()
}

/// Records for the members whose target changed, then the new assignment epoch.
pub fn records(
    group_id: &str,
    previous: &kcoord_metadata::VecMap<kcoord_metadata::Id, SharedTasks>,
    next: &BTreeMap<String, TasksTuple>,
    epoch: i32,
    now: i64,
) -> Vec<Record> {
    let mut out: Vec<Record> = next
        .iter()
        .filter(|(member, tasks)| previous.get(member.as_str()).map(|t| &**t) != Some(*tasks))
        .map(|(member, tasks)| record_builders::target_member(group_id, member, tasks))
        .collect();
    out.push(record_builders::target_metadata(group_id, epoch, now));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assignment_interval_holds_back_recomputation() {
        assert!(can_compute(0, 1000, 5));
        assert!(can_compute(100, 0, 101));
        assert!(!can_compute(100, 1000, 500));
        assert!(can_compute(100, 1000, 1100));
        assert!(
            can_compute(100, 1000, 50),
            "a clock that went backwards does not block"
        );
    }
}
