use kcoord_metadata::Id;

use super::*;
use crate::timeline::{TaskList, TaskRef};

fn tasks(n: i32, extra: usize) -> TaskList {
    let tasks: Vec<TaskRef> = (0..n)
        .map(|p| (Id::from(["0", "10", "9"][p as usize % 3]), p * 7 - 3))
        .collect();
    TaskList {
        count: tasks.len() + extra,
        tasks,
    }
}

/// Events of every shape the timeline makes, with times and epochs that go down as well as up,
/// that are unknown (-1) or far apart.
fn every_shape() -> Vec<TimelineEvent> {
    let mut events = Vec::new();
    let times = [1_733_000_000_000, -1, 1_733_000_000_000, 5, i64::MAX, 0];
    let epochs = [0, 7, 3, i32::MAX, 1];
    let process_ids = [
        None,
        Some("8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9c11"),
        Some("app-process-é"),
        Some(""),
    ];
    for (i, kind) in [
        EventKind::GroupEpochBumped,
        EventKind::MemberJoined,
        EventKind::MemberLeft,
        EventKind::MemberFenced,
        EventKind::MemberRemoved,
        EventKind::TargetAssignmentComputed,
        EventKind::TargetAssignmentChanged,
        EventKind::MemberReconciled,
        EventKind::TopologyUpdated,
    ]
    .into_iter()
    .enumerate()
    {
        for (j, process_id) in process_ids.iter().enumerate() {
            let n = i * process_ids.len() + j;
            let mut e = TimelineEvent::new(kind, epochs[n % epochs.len()], times[n % times.len()]);
            if !n.is_multiple_of(3) {
                e = e.member(&format!("member-{}", n % 4));
            }
            e.process_id = process_id.map(str::to_owned);
            e.instance_id = (n % 5 == 1).then(|| "instance-a".to_owned());
            e.reason = [None, Some(Removal::Left), Some(Removal::RebalanceTimeout)][n % 3];
            match kind {
                EventKind::MemberReconciled => {
                    e.member_epoch = Some(epochs[(n + 1) % epochs.len()]);
                    e.took_ms = [None, Some(0), Some(61_000)][n % 3];
                }
                EventKind::TargetAssignmentComputed => e.assignment_epoch = Some(0),
                EventKind::TopologyUpdated => e.topology_epoch = Some(i32::MAX),
                EventKind::TargetAssignmentChanged => {
                    let (gained, lost) = [(1, 0), (0, 1), (3, 0), (2, 5)][j];
                    e.gained = tasks(gained, j);
                    e.lost = tasks(lost, 0);
                }
                _ => {}
            }
            events.push(e);
        }
    }
    events
}

/// `events`, kept whole, and the sub-topologies they name.
fn log_of(events: &[TimelineEvent]) -> (EventLog, Subtopologies) {
    let mut subtopologies = Subtopologies::default();
    let mut log = EventLog::default();
    for e in events {
        let member_id = e.member_id.as_deref().map(SharedId::from);
        log.push(Stored::of(e.clone(), member_id, &mut subtopologies));
    }
    (log, subtopologies)
}

#[test]
fn every_event_packed_reads_back_as_it_was() {
    let events = every_shape();
    let (mut log, subtopologies) = log_of(&events);
    let whole = log.views(&subtopologies);
    assert_eq!(whole, events, "as kept whole");
    log.seal(0);
    assert_eq!(log.open.len(), 0);
    assert_eq!(log.packed_events, events.len());
    assert_eq!(log.views(&subtopologies), events, "as packed");
}

#[test]
fn the_newest_events_stay_whole_until_sealed_and_read_in_order() {
    let events = every_shape();
    let (mut log, subtopologies) = log_of(&events);
    log.seal(5);
    assert_eq!(log.open.len(), 5);
    for e in log.newest_mut(2) {
        e.time_ms = 42;
    }
    let mut expected = events.clone();
    for e in expected.iter_mut().rev().take(2) {
        e.time_ms = 42;
    }
    assert_eq!(log.views(&subtopologies), expected);
}

#[test]
fn dropping_the_oldest_events_leaves_the_others_as_they_were() {
    let events = every_shape();
    let (mut log, subtopologies) = log_of(&events);
    log.seal(3);
    for dropped in 1..=events.len() {
        log.pop_front();
        assert_eq!(log.len(), events.len() - dropped);
        assert_eq!(
            log.views(&subtopologies),
            events[dropped..],
            "{dropped} dropped"
        );
    }
}

#[test]
fn a_removal_is_explained_whether_its_event_is_packed_or_not() {
    let removed = |member: &str| TimelineEvent::new(EventKind::MemberRemoved, 2, 10).member(member);
    let events = vec![
        removed("a"),
        removed("b"),
        TimelineEvent::new(EventKind::GroupEpochBumped, 3, 11),
        removed("a"),
        removed("c"),
    ];
    let (mut log, subtopologies) = log_of(&events);
    log.seal(1);
    log.explain_removal("a", EventKind::MemberFenced, Removal::SessionTimeout);
    log.explain_removal("c", EventKind::MemberLeft, Removal::Left);
    log.explain_removal("nobody", EventKind::MemberLeft, Removal::Left);
    let mut expected = events;
    expected[3].kind = EventKind::MemberFenced;
    expected[3].reason = Some(Removal::SessionTimeout);
    expected[4].kind = EventKind::MemberLeft;
    expected[4].reason = Some(Removal::Left);
    assert_eq!(log.views(&subtopologies), expected);
}

/// A member's id stays named while its events do; once they are gone, packing again forgets it.
#[test]
fn names_of_members_whose_events_are_gone_are_dropped() {
    let mut subtopologies = Subtopologies::default();
    let mut log = EventLog::default();
    for m in 0..1_000 {
        let e = TimelineEvent::new(EventKind::MemberJoined, m, 1_000 + i64::from(m))
            .member(&format!("m{m}"));
        log.push(Stored::of(
            e,
            Some(SharedId::from(format!("m{m}").as_str())),
            &mut subtopologies,
        ));
        log.seal(0);
        while log.len() > 16 {
            log.pop_front();
        }
        assert!(
            log.names.len() <= 2 * 16 + 8 + 1,
            "{} names",
            log.names.len()
        );
    }
    assert!(log.named("m999").is_some());
    assert!(log.named("m0").is_none());
    let views = log.views(&subtopologies);
    assert_eq!(views.len(), 16);
    assert_eq!(views[0].member_id.as_deref(), Some("m984"));
    assert_eq!(views[0].time_ms, 1_984);
}

/// What a timeline costs: a 10-member group's join, as the timeline sees it, packs into a few
/// bytes per event (40 each, plus boxes, kept whole).
#[test]
fn a_groups_join_packs_into_a_few_bytes_per_event() {
    let mut subtopologies = Subtopologies::default();
    let mut log = EventLog::default();
    let mut time = 1_733_000_000_000;
    let mut events = 0;
    for joined in 0..10 {
        time += 300;
        let member = |m: i32| format!("5b9e1c1e-0a51-4c0e-9b64-3cf7a1d2e{m:03}-1");
        let mut e =
            TimelineEvent::new(EventKind::MemberJoined, joined, time).member(&member(joined));
        e.process_id = Some(format!("8f0c2a34-5b7e-4d1a-9c3f-0e2b6a7d9{joined:03}"));
        let mut batch = vec![
            e,
            TimelineEvent::new(EventKind::GroupEpochBumped, joined + 1, time),
        ];
        let mut computed =
            TimelineEvent::new(EventKind::TargetAssignmentComputed, joined + 1, time);
        computed.assignment_epoch = Some(joined + 1);
        batch.push(computed);
        for m in 0..=joined {
            let mut moved =
                TimelineEvent::new(EventKind::TargetAssignmentChanged, joined + 1, time)
                    .member(&member(m));
            (moved.gained, moved.lost) = if m == joined {
                (tasks(1, 0), TaskList::default())
            } else {
                (TaskList::default(), tasks(1, 0))
            };
            batch.push(moved);
            let mut reconciled =
                TimelineEvent::new(EventKind::MemberReconciled, joined + 1, time + 40)
                    .member(&member(m));
            reconciled.member_epoch = Some(joined + 1);
            reconciled.took_ms = Some(40);
            batch.push(reconciled);
        }
        for e in batch {
            let id = e.member_id.as_deref().map(SharedId::from);
            log.push(Stored::of(e, id, &mut subtopologies));
            events += 1;
        }
        log.seal(0);
    }
    let (used, held) = log.bytes();
    assert!(used <= 10 * events, "{used} bytes for {events} events");
    assert!(held <= used + used / 2 + 64, "{held} bytes held for {used}");
}
