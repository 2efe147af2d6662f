//! Each streams group's rebalance timeline (issue 26): derived from the group's records as
//! they replay, with the times the runtime stamped on them, bounded, and the same when the
//! shard is rebuilt from its log.
mod support;

use kcoord_coordinator::record_builders::Removal;
use kcoord_coordinator::timeline::{
    EventKind, TaskRef, TimelineEvent, Timelines, MAX_TIMELINE_EVENTS,
};
use support::*;

fn events(h: &Harness) -> Vec<TimelineEvent> {
    h.shard.timeline(GROUP).unwrap().events().collect()
}

/// (kind, member) of each event, oldest first.
fn kinds(events: &[TimelineEvent]) -> Vec<(EventKind, Option<String>)> {
    events
        .iter()
        .map(|e| (e.kind, e.member_id.as_deref().map(str::to_owned)))
        .collect()
}

fn rebuilt(h: &Harness) -> Vec<TimelineEvent> {
    Timelines::from_log(h.shard.store().log())
        .get(GROUP)
        .unwrap()
        .events()
        .collect()
}

#[test]
fn joins_assignments_and_reconciliations_are_recorded_with_their_times() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = Member::new("a", "p1", simple_topology(1));
    let joined_at = h.now;
    a.beat(&mut h);
    let first = events(&h);
    use EventKind::*;
    let a_ = Some("a".to_string());
    assert_eq!(
        kinds(&first),
        [
            (MemberJoined, a_.clone()),
            (TopologyUpdated, None),
            (GroupEpochBumped, None),
            (TargetAssignmentChanged, a_.clone()),
            (TargetAssignmentComputed, None),
            (MemberReconciled, a_.clone()),
        ]
    );
    let all_four: Vec<TaskRef> = (0..4).map(|p| ("0".into(), p)).collect();
    assert_eq!(
        (
            &first[3].gained.tasks,
            first[3].gained.count,
            first[3].lost.count
        ),
        (&all_four, 4, 0)
    );
    assert!(first.iter().all(|e| e.time_ms == joined_at), "{first:?}");
    assert_eq!(first[0].process_id.as_deref(), Some("p1"));
    assert_eq!(first[0].group_epoch, 2, "the join's epoch: {first:?}");
    assert_eq!(first[5].took_ms, Some(0));

    // b joins later; a must give tasks up first, so it reconciles a while after the bump.
    h.advance(1_000);
    let mut b = Member::new("b", "p2", simple_topology(1));
    let bumped_at = h.now;
    b.beat(&mut h);
    h.advance(2_500);
    let mut members = [a, b];
    converge(&mut h, &mut members);
    let all = events(&h);
    assert!(
        all[..first.len()] == first[..],
        "later batches leave earlier events as they were: {all:?}"
    );
    let epoch = h.shard.group(GROUP).unwrap().group_epoch;
    let bump = all.iter().rfind(|e| e.kind == GroupEpochBumped).unwrap();
    assert_eq!((bump.group_epoch, bump.time_ms), (epoch, bumped_at));
    let a_done = all
        .iter()
        .rfind(|e| e.kind == MemberReconciled && e.member_id.as_deref() == Some("a"))
        .unwrap();
    assert_eq!(a_done.member_epoch, Some(epoch));
    assert_eq!(a_done.took_ms, Some(2_500), "{all:?}");
    assert_eq!(rebuilt(&h), all, "the log rebuilds the same timeline");
}

#[test]
fn a_member_that_leaves_and_one_that_is_fenced_are_told_apart() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut members = [
        Member::new("a", "p1", simple_topology(1)),
        Member::new("b", "p2", simple_topology(1)),
        Member::new("c", "p3", simple_topology(1)),
    ];
    converge(&mut h, &mut members);
    // a leaves; then b stops beating: its session times out, and c takes its tasks.
    let mut leaving = members[0].clone();
    leaving.epoch = -1;
    h.heartbeat(&leaving.request()).unwrap();
    members[2].beat(&mut h);
    members[1].beat(&mut h);
    let b_target: Vec<TaskRef> = h.shard.group(GROUP).unwrap().target_assignment["b"]
        .active
        .iter()
        .flat_map(|(s, ps)| ps.iter().map(move |p| (s.as_str().into(), *p)))
        .collect();
    assert!(!b_target.is_empty());
    let session = i64::from(h.shard.config().session_timeout_ms);
    let mut c = members[2].clone();
    for _ in 0..3 {
        h.advance(session / 3 + 1);
        c.beat(&mut h);
    }
    let all = events(&h);
    let removed: Vec<(EventKind, Option<String>, Option<Removal>)> = all
        .iter()
        .filter(|e| matches!(e.kind, EventKind::MemberLeft | EventKind::MemberFenced))
        .map(|e| (e.kind, e.member_id.as_deref().map(str::to_owned), e.reason))
        .collect();
    assert_eq!(
        removed,
        [
            (EventKind::MemberLeft, Some("a".into()), Some(Removal::Left)),
            (
                EventKind::MemberFenced,
                Some("b".into()),
                Some(Removal::SessionTimeout)
            ),
        ]
    );
    assert!(!all.iter().any(|e| e.kind == EventKind::MemberRemoved));
    let fenced_at = all
        .iter()
        .position(|e| e.kind == EventKind::MemberFenced)
        .unwrap();
    let moved: Vec<TaskRef> = all[fenced_at..]
        .iter()
        .filter(|e| e.kind == EventKind::TargetAssignmentChanged)
        .inspect(|e| assert_eq!(e.member_id.as_deref(), Some("c")))
        .flat_map(|e| e.gained.tasks.clone())
        .collect();
    assert_eq!(moved, b_target, "b's tasks moved to c");
    assert_eq!(rebuilt(&h), all);
}

#[test]
fn the_timeline_keeps_its_newest_events_within_its_bound() {
    let mut h = Harness::new(config());
    h.create_topic("input", 1);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    // Every join and leave of another member adds events.
    for i in 0..MAX_TIMELINE_EVENTS {
        let mut m = Member::new(&format!("m{i}"), "p", simple_topology(1));
        m.beat(&mut h);
        m.epoch = -1;
        h.heartbeat(&m.request()).unwrap();
    }
    let all = events(&h);
    assert_eq!(all.len(), MAX_TIMELINE_EVENTS);
    let last = format!("m{}", MAX_TIMELINE_EVENTS - 1);
    assert!(all
        .iter()
        .any(|e| e.kind == EventKind::MemberLeft && e.member_id.as_deref() == Some(&*last)));
    assert!(!all
        .iter()
        .any(|e| e.kind == EventKind::MemberJoined && e.member_id.as_deref() == Some("a")));
}

/// A member of `group` joining, as its record says it.
fn joined(group: &str, member: &str) -> kcoord_metadata::Record {
    use kcoord_wire::records::{StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue};
    kcoord_metadata::Record::StreamsGroupMemberMetadata(
        StreamsGroupMemberMetadataKey {
            group_id: group.to_owned(),
            member_id: member.to_owned(),
            ..Default::default()
        },
        Some(StreamsGroupMemberMetadataValue {
            process_id: "p".to_owned(),
            ..Default::default()
        }),
    )
}

/// With more groups than the shard's budget gives full histories, each keeps its share (never
/// less than the minimum), so a shard's timelines stay bounded; a group keeps its newest events.
#[test]
fn many_groups_share_the_shards_budget_of_events() {
    use kcoord_coordinator::timeline::{MIN_TIMELINE_EVENTS, SHARD_TIMELINE_EVENTS};
    let groups = 2 * SHARD_TIMELINE_EVENTS / MAX_TIMELINE_EVENTS;
    let share = SHARD_TIMELINE_EVENTS / groups;
    assert!((MIN_TIMELINE_EVENTS..MAX_TIMELINE_EVENTS).contains(&share));
    let mut timelines = Timelines::default();
    // The first group fills its whole history while it is alone.
    for m in 0..MAX_TIMELINE_EVENTS {
        timelines.observe(&joined("g0", &format!("m{m}")));
    }
    assert_eq!(
        timelines.get("g0").unwrap().events().len(),
        MAX_TIMELINE_EVENTS
    );
    for g in 1..groups {
        timelines.observe(&joined(&format!("g{g}"), "m0"));
    }
    // Once the shard has `groups` groups, g0's next event leaves it its share, newest kept.
    timelines.observe(&joined("g0", "newest"));
    let g0: Vec<TimelineEvent> = timelines.get("g0").unwrap().events().collect();
    assert_eq!(g0.len(), share);
    assert_eq!(g0.last().unwrap().member_id.as_deref(), Some("newest"));
    let older = format!("m{}", MAX_TIMELINE_EVENTS - share + 1);
    assert_eq!(g0[0].member_id.as_deref(), Some(older.as_str()));
}

/// A timeline holds little room beyond the bytes its events take, as it grows and once its share
/// shrinks: grown by doubling, a history capped at 65 events once held room for 128.
#[test]
fn a_full_timeline_holds_little_room_beyond_its_events() {
    use kcoord_coordinator::timeline::SHARD_TIMELINE_EVENTS;
    let groups = 1000;
    let share = SHARD_TIMELINE_EVENTS / groups;
    let mut timelines = Timelines::default();
    for g in 1..groups {
        timelines.observe(&joined(&format!("g{g}"), "m0"));
    }
    for m in 0..3 * share {
        timelines.observe(&joined("g0", &format!("m{m}")));
        let (used, held) = timelines.get("g0").unwrap().event_bytes();
        assert!(
            held <= used + used / 2 + 64,
            "{held} bytes held for {used} used by {} events",
            timelines.get("g0").unwrap().events().len()
        );
    }
    assert_eq!(timelines.get("g0").unwrap().events().len(), share);
}
