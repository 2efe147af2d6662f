use kcoord_wire::records::streams_group_target_assignment_member_value::TaskIds;
use kcoord_wire::records::{
    StreamsGroupTargetAssignmentMemberKey, StreamsGroupTargetAssignmentMemberValue,
};

use super::*;

fn target(member: &str, tasks: &[(&str, &[i32])]) -> Record {
    let key = StreamsGroupTargetAssignmentMemberKey {
        group_id: "g".into(),
        member_id: member.into(),
        ..Default::default()
    };
    let active_tasks = tasks
        .iter()
        .map(|(subtopology, partitions)| TaskIds {
            subtopology_id: (*subtopology).into(),
            partitions: partitions.to_vec(),
            ..Default::default()
        })
        .collect();
    let value = StreamsGroupTargetAssignmentMemberValue {
        active_tasks,
        ..Default::default()
    };
    Record::StreamsGroupTargetAssignmentMember(key, Some(value))
}

fn moved(timeline: &GroupTimeline) -> Vec<(Vec<TaskRef>, Vec<TaskRef>)> {
    timeline
        .events()
        .map(|e| (e.gained.tasks, e.lost.tasks))
        .collect()
}

fn tasks(list: &[(&str, i32)]) -> Vec<TaskRef> {
    list.iter().map(|(s, p)| (Id::from(*s), *p)).collect()
}

/// Tasks are listed by sub-topology id, then partition, whatever order the timeline first saw
/// the sub-topologies in ("9" sorts after "10").
#[test]
fn a_targets_moved_tasks_are_listed_in_task_order() {
    let mut timeline = GroupTimeline::new();
    timeline.observe(&target("a", &[("9", &[1, 0]), ("10", &[2])]));
    timeline.observe(&target("a", &[("10", &[2, 0]), ("2", &[5])]));
    assert_eq!(
        moved(&timeline),
        [
            (tasks(&[("10", 2), ("9", 0), ("9", 1)]), vec![]),
            (tasks(&[("10", 0), ("2", 5)]), tasks(&[("9", 0), ("9", 1)])),
        ]
    );
    // The same target again moves nothing.
    timeline.observe(&target("a", &[("2", &[5]), ("10", &[0, 2])]));
    assert_eq!(timeline.events().len(), 2);
}
