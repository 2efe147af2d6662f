//! Scenario tests of the sans-IO streams group coordinator: plain function calls with a fake
//! clock, no sockets.
mod support;

use std::collections::BTreeSet;

use kcoord_coordinator::heartbeat::status;
use kcoord_coordinator::{group_state, GroupState, StreamsGroupConfig};
use kcoord_metadata::Store;
use kcoord_wire::messages::streams_group_heartbeat_request::{
    CopartitionGroup, Subtopology, Topology,
};
use kcoord_wire::ErrorCode;
use support::*;

#[test]
fn r1_join_creates_the_group_with_a_fresh_topology_description_id() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = Member::new("a", "p1", simple_topology(1));
    let result = a.beat(&mut h);
    let group = h.shard.group(GROUP).unwrap();
    assert!(group.topology_description_id.is_some());
    assert_eq!(
        result.topology_description_id,
        group.topology_description_id
    );
    assert_eq!(group.topology.as_ref().unwrap().epoch, 1);
    // Kafka 4.4 creates a group at epoch 1; the first join bumps it to 2.
    assert_eq!(group.group_epoch, 2);
    assert_eq!(a.epoch, 2);
    assert_eq!(a.active_count(), 4);
    // A second group gets a different id.
    let mut other = Member::new("x", "p9", simple_topology(1));
    let mut req = other.request();
    req.group_id = "other".into();
    let r = h.heartbeat(&req).unwrap();
    other.adopt(&r.response);
    assert_ne!(
        h.shard.group("other").unwrap().topology_description_id,
        group_topology_id(&h)
    );
    h.assert_replay_matches();
}

fn group_topology_id(h: &Harness) -> Option<uuid::Uuid> {
    h.shard.group(GROUP).unwrap().topology_description_id
}

#[test]
fn three_members_share_twelve_tasks_evenly() {
    let mut h = Harness::new(config());
    h.create_topic("input", 12);
    let mut members: Vec<Member> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, id)| Member::new(id, &format!("p{i}"), simple_topology(1)))
        .collect();
    converge(&mut h, &mut members);
    for m in &members {
        assert_eq!(m.active_count(), 4, "{} has {:?}", m.id, m.active);
    }
    assert_complete_and_disjoint(&members, "0", 12);
    h.assert_replay_matches();
}

#[test]
fn tasks_are_revoked_before_they_are_reassigned() {
    let mut h = Harness::new(config());
    h.create_topic("input", 6);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    assert_eq!(a.active_count(), 6);
    let mut b = Member::new("b", "p2", simple_topology(1));
    b.beat(&mut h);
    // b's tasks are still owned by a: nothing can be granted yet.
    assert_eq!(b.active_count(), 0, "b must not get tasks a still owns");
    let g = h.shard.group(GROUP).unwrap();
    assert_eq!(
        g.members["b"].state,
        kcoord_metadata::MemberState::UnreleasedTasks
    );
    // a is told to keep only its share; it stays in its epoch until it confirms.
    let old_epoch = a.epoch;
    let before = a.active.clone();
    let mut req = a.request();
    let r = h.heartbeat(&req).unwrap();
    assert_eq!(r.response.member_epoch, old_epoch);
    assert_eq!(
        h.shard.group(GROUP).unwrap().members["a"].state,
        kcoord_metadata::MemberState::UnrevokedTasks
    );
    a.adopt(&r.response);
    assert_eq!(a.active_count(), 3);
    // Still reporting the revoked tasks (a's view before adopting): b gets nothing.
    let mut stale_a = a.clone();
    stale_a.active = before;
    req = stale_a.request();
    h.heartbeat(&req).unwrap();
    b.beat(&mut h);
    assert_eq!(b.active_count(), 0);
    // a confirms the revocation; then b receives the released tasks.
    a.beat(&mut h);
    assert!(a.epoch > old_epoch);
    b.beat(&mut h);
    assert_eq!(b.active_count(), 3);
    assert_complete_and_disjoint(&[a, b], "0", 6);
    h.assert_replay_matches();
}

#[test]
fn a_lost_response_is_tolerated_but_older_epochs_are_fenced() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let mut b = Member::new("b", "p2", simple_topology(1));
    let mut members = vec![a, b.clone()];
    converge(&mut h, &mut members);
    let a = &members[0];
    let member = h.shard.group(GROUP).unwrap().members["a"].clone();
    assert!(member.previous_member_epoch < member.member_epoch);
    // The member missed the response that bumped its epoch: previous epoch + owned subset is fine.
    let mut lost = a.clone();
    lost.epoch = member.previous_member_epoch;
    assert!(h.heartbeat(&lost.request()).is_ok());
    // An epoch that is neither current nor previous is fenced.
    let mut older = a.clone();
    older.epoch = member.previous_member_epoch - 1;
    if older.epoch > 0 {
        assert_eq!(
            h.heartbeat(&older.request()).unwrap_err().code,
            ErrorCode::FENCED_MEMBER_EPOCH
        );
    }
    // A greater epoch is fenced too.
    let mut ahead = a.clone();
    ahead.epoch += 5;
    assert_eq!(
        h.heartbeat(&ahead.request()).unwrap_err().code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
    b.epoch = 99;
    assert_eq!(
        h.heartbeat(&b.request()).unwrap_err().code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
}

#[test]
fn a_static_member_rejoins_under_a_new_member_id() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = Member::new("a1", "p1", simple_topology(1));
    a.instance = Some("instance-a".into());
    a.beat(&mut h);
    let tasks = a.active.clone();
    // A second member with the same instance id is refused while a1 holds it.
    let mut intruder = Member::new("a2", "p1", simple_topology(1));
    intruder.instance = Some("instance-a".into());
    assert_eq!(
        h.heartbeat(&intruder.request()).unwrap_err().code,
        ErrorCode::UNRELEASED_INSTANCE_ID
    );
    // Temporary leave (-2): the assignment is kept.
    let mut leave = a.request();
    leave.member_epoch = -2;
    let r = h.heartbeat(&leave).unwrap();
    assert_eq!(r.response.member_epoch, -2);
    assert_eq!(h.shard.group(GROUP).unwrap().members["a1"].member_epoch, -2);
    // The rejoin under a new member id takes over a1's tasks.
    let r = intruder.beat(&mut h);
    assert_eq!(r.response.member_id, "a2");
    assert_eq!(intruder.active, tasks);
    let g = h.shard.group(GROUP).unwrap();
    assert!(!g.members.contains_key("a1"));
    assert!(g.members.contains_key("a2"));
    h.assert_replay_matches();
}

#[test]
fn an_expired_session_fences_the_member_and_its_tasks_move() {
    let mut h = Harness::new(StreamsGroupConfig {
        session_timeout_ms: 45_000,
        ..config()
    });
    h.create_topic("input", 4);
    let mut members = vec![
        Member::new("a", "p1", simple_topology(1)),
        Member::new("b", "p2", simple_topology(1)),
    ];
    converge(&mut h, &mut members);
    let epoch_before = h.shard.group(GROUP).unwrap().group_epoch;
    // b keeps heartbeating; a goes silent.
    for _ in 0..10 {
        h.advance(5_000);
        members[1].beat(&mut h);
    }
    let g = h.shard.group(GROUP).unwrap();
    assert!(!g.members.contains_key("a"), "a's session expired");
    assert!(g.group_epoch > epoch_before);
    members[1].beat(&mut h);
    assert_eq!(members[1].active_count(), 4, "b now runs every task");
    h.assert_replay_matches();
}

#[test]
fn a_member_that_does_not_revoke_within_the_rebalance_timeout_is_fenced() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let mut b = Member::new("b", "p2", simple_topology(1));
    b.beat(&mut h);
    // a is asked to revoke but never confirms (keeps reporting all four tasks).
    let stubborn = a.request();
    h.heartbeat(&stubborn).unwrap();
    assert_eq!(
        h.shard.group(GROUP).unwrap().members["a"].state,
        kcoord_metadata::MemberState::UnrevokedTasks
    );
    h.advance(29_000);
    h.heartbeat(&stubborn).unwrap();
    assert!(h.shard.group(GROUP).unwrap().members.contains_key("a"));
    h.advance(2_000);
    assert!(
        !h.shard.group(GROUP).unwrap().members.contains_key("a"),
        "rebalance timeout (30 s) fenced a"
    );
    b.beat(&mut h);
    assert_eq!(b.active_count(), 4);
}

#[test]
fn missing_source_topics_hold_the_group_until_the_topic_is_created() {
    let mut h = Harness::new(config());
    let mut a = Member::new("a", "p1", simple_topology(1));
    let r = a.beat(&mut h);
    let statuses = r.response.status.clone().unwrap();
    assert_eq!(statuses[0].status_code, status::MISSING_SOURCE_TOPICS);
    assert_eq!(
        statuses[0].status_detail,
        "Source topics input are missing."
    );
    assert_eq!(
        group_state(h.shard.group(GROUP).unwrap()),
        GroupState::NotReady
    );
    assert_eq!(a.active_count(), 0);
    h.create_topic("input", 3);
    a.beat(&mut h);
    assert_eq!(a.active_count(), 3);
    assert!(a.statuses().is_empty());
    assert_eq!(
        group_state(h.shard.group(GROUP).unwrap()),
        GroupState::Stable
    );
}

#[test]
fn internal_topics_are_requested_with_computed_partitions() {
    let mut h = Harness::new(config());
    h.create_topic("input", 5);
    let mut a = Member::new("a", "p1", stateful_topology(1));
    let r = a.beat(&mut h);
    assert_eq!(a.statuses(), vec![status::MISSING_INTERNAL_TOPICS]);
    assert_eq!(r.internal_topics_to_create.len(), 1);
    let t = &r.internal_topics_to_create[0];
    assert_eq!(t.name, "app-store-changelog");
    assert_eq!(t.partitions, 5);
    assert_eq!(t.replication_factor, -1);
    // Once the server creates it, tasks are assigned.
    h.create_topic("app-store-changelog", 5);
    let r = a.beat(&mut h);
    assert!(r.internal_topics_to_create.is_empty());
    assert_eq!(a.active_count(), 5);
}

#[test]
fn incorrectly_partitioned_topics_are_reported() {
    let mut h = Harness::new(config());
    h.create_topic("left", 3);
    h.create_topic("right", 4);
    let topology = Topology {
        epoch: 1,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec!["left".into(), "right".into()],
            copartition_groups: vec![CopartitionGroup {
                source_topics: vec![0, 1],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut a = Member::new("a", "p1", topology);
    a.beat(&mut h);
    assert_eq!(a.statuses(), vec![status::INCORRECTLY_PARTITIONED_TOPICS]);
    assert_eq!(a.active_count(), 0);
}

#[test]
fn a_shutdown_request_reaches_every_member() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut members = vec![
        Member::new("a", "p1", simple_topology(1)),
        Member::new("b", "p2", simple_topology(1)),
    ];
    converge(&mut h, &mut members);
    let mut req = members[0].request();
    req.shutdown_application = true;
    let r = h.heartbeat(&req).unwrap();
    let s = r.response.status.unwrap();
    assert!(s.iter().any(|s| s.status_code == status::SHUTDOWN_APPLICATION
        && s.status_detail == "Streams group member a encountered a fatal error and requested a shutdown for the entire application."));
    members[1].beat(&mut h);
    assert!(members[1]
        .statuses()
        .contains(&status::SHUTDOWN_APPLICATION));
}

#[test]
fn r2_r5_a_topology_upgrade_mints_a_new_id_and_marks_old_members_stale() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let first_id = group_topology_id(&h).unwrap();
    let epoch_before = h.shard.group(GROUP).unwrap().group_epoch;
    // A heartbeat that changes nothing mints nothing.
    a.beat(&mut h);
    assert_eq!(group_topology_id(&h), Some(first_id));
    // b joins with topology epoch 2: the group topology is replaced.
    let mut b = Member::new("b", "p2", simple_topology(2));
    let r = b.beat(&mut h);
    let g = h.shard.group(GROUP).unwrap();
    assert_eq!(g.topology.as_ref().unwrap().epoch, 2);
    assert!(g.group_epoch > epoch_before);
    let second_id = g.topology_description_id.unwrap();
    assert_ne!(second_id, first_id);
    assert_eq!(r.topology_description_id, Some(second_id));
    // a is still on epoch 1: STALE_TOPOLOGY, keeps working, and gets no id.
    let r = a.beat(&mut h);
    assert!(a.statuses().contains(&status::STALE_TOPOLOGY));
    assert_eq!(r.topology_description_id, None);
    // A different topology at the same epoch is still invalid.
    let mut c = Member::new(
        "c",
        "p3",
        Topology {
            epoch: 2,
            subtopologies: vec![],
            ..Default::default()
        },
    );
    let err = h.heartbeat(&c.request()).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        err.message.as_deref(),
        Some("Topology updates are not supported yet.")
    );
    // A lower epoch joiner keeps the group topology and is stale.
    c.topology = simple_topology(1);
    c.beat(&mut h);
    assert!(c.statuses().contains(&status::STALE_TOPOLOGY));
    assert_eq!(
        h.shard.group(GROUP).unwrap().topology_description_id,
        Some(second_id)
    );
    h.assert_replay_matches();
}

#[test]
fn r3_the_topology_description_id_survives_replay() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let id = group_topology_id(&h);
    let replayed = Store::replay_log(h.shard.store().log()).unwrap();
    assert_eq!(
        replayed
            .state()
            .streams_groups
            .get(GROUP)
            .unwrap()
            .topology_description_id,
        id
    );
    // Fencing a member rewrites the group metadata record and must keep the id.
    a.epoch = -1;
    h.heartbeat(&a.request()).unwrap();
    let replayed = Store::replay_log(h.shard.store().log()).unwrap();
    assert_eq!(
        replayed
            .state()
            .streams_groups
            .get(GROUP)
            .unwrap()
            .topology_description_id,
        id
    );
}

#[test]
fn leaving_removes_the_member_and_bumps_the_group_epoch() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let epoch = h.shard.group(GROUP).unwrap().group_epoch;
    let mut req = a.request();
    req.member_epoch = -1;
    let r = h.heartbeat(&req).unwrap();
    assert_eq!(r.response.member_epoch, -1);
    assert_eq!(r.response.member_id, "a");
    let g = h.shard.group(GROUP).unwrap();
    assert!(g.members.is_empty());
    assert_eq!(g.group_epoch, epoch + 1);
    assert_eq!(
        g.target_assignment_epoch,
        epoch + 1,
        "the last member leaving moves the assignment epoch"
    );
    assert_eq!(group_state(g), GroupState::Empty);
    h.assert_replay_matches();
}

#[test]
fn unknown_groups_members_and_full_groups_are_refused() {
    let mut h = Harness::new(StreamsGroupConfig {
        max_size: 1,
        ..config()
    });
    h.create_topic("input", 2);
    let mut ghost = Member::new("ghost", "p", simple_topology(1));
    ghost.epoch = 3;
    let err = h.heartbeat(&ghost.request()).unwrap_err();
    assert_eq!(err.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(err.message.as_deref(), Some("Streams group app not found."));
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    assert_eq!(
        h.heartbeat(&ghost.request()).unwrap_err().code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    let b = Member::new("b", "p2", simple_topology(1));
    assert_eq!(
        h.heartbeat(&b.request()).unwrap_err().code,
        ErrorCode::GROUP_MAX_SIZE_REACHED
    );
    // A member already in the group is not counted twice when it rejoins.
    a.epoch = 0;
    a.active.clear();
    assert!(h.heartbeat(&a.request()).is_ok());
}

#[test]
fn missing_client_tags_are_only_reported_from_version_1() {
    let mut h = Harness::new(StreamsGroupConfig {
        rack_aware_assignment_tags: vec!["zone".into()],
        ..config()
    });
    h.create_topic("input", 2);
    let a = Member::new("a", "p1", simple_topology(1));
    let r0 = h.heartbeat_v(&a.request(), 0).unwrap();
    assert!(!r0
        .response
        .status
        .unwrap()
        .iter()
        .any(|s| s.status_code == status::MISSING_CLIENT_TAGS));
    let mut b = Member::new("b", "p2", simple_topology(1));
    let r1 = h.heartbeat_v(&b.request(), 1).unwrap();
    b.adopt(&r1.response);
    assert!(b.statuses().contains(&status::MISSING_CLIENT_TAGS));
}

#[test]
fn the_initial_rebalance_delay_coalesces_the_first_joins() {
    let mut h = Harness::new(StreamsGroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..config()
    });
    h.create_topic("input", 4);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    assert!(a.statuses().contains(&status::ASSIGNMENT_DELAYED));
    assert_eq!(a.active_count(), 0);
    let mut b = Member::new("b", "p2", simple_topology(1));
    b.beat(&mut h);
    h.advance(3_000);
    a.beat(&mut h);
    b.beat(&mut h);
    a.beat(&mut h);
    assert_eq!(a.active_count() + b.active_count(), 4);
    assert_eq!(a.active_count(), 2);
}

#[test]
fn a_steady_heartbeat_writes_nothing() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut members = vec![
        Member::new("a", "p1", simple_topology(1)),
        Member::new("b", "p2", simple_topology(1)),
    ];
    converge(&mut h, &mut members);
    let before = h.shard.store().log().len();
    for _ in 0..5 {
        for m in members.iter_mut() {
            let r = m.beat(&mut h);
            assert!(
                r.response.active_tasks.is_none(),
                "an unchanged assignment is not resent"
            );
        }
    }
    assert_eq!(h.shard.store().log().len(), before);
}

mod random_operations {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Beat(usize),
        Rejoin(usize),
        Leave(usize),
        StaticLeave(usize),
        Advance(i64),
        CreateTopic(i32),
        Upgrade(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..4).prop_map(Op::Beat),
            1 => (0usize..4).prop_map(Op::Rejoin),
            1 => (0usize..4).prop_map(Op::Leave),
            1 => (0usize..4).prop_map(Op::StaticLeave),
            1 => (0i64..60_000).prop_map(Op::Advance),
            1 => (1i32..8).prop_map(Op::CreateTopic),
            1 => (0usize..4).prop_map(Op::Upgrade),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Whatever members do, replaying the shard's log rebuilds its live state, and no task is
        /// ever active on two members at once.
        #[test]
        fn replay_rebuilds_the_live_state_after_any_operations(ops in proptest::collection::vec(op(), 1..60)) {
            let mut h = Harness::new(StreamsGroupConfig { initial_rebalance_delay_ms: 1_000, assignment_interval_ms: 500, ..Default::default() });
            let mut members: Vec<Member> = (0..4).map(|i| {
                let mut m = Member::new(&format!("m{i}"), &format!("p{}", i % 2), simple_topology(1));
                if i == 3 { m.instance = Some("static-3".into()); }
                m
            }).collect();
            let mut topics = 0;
            for op in ops {
                match op {
                    Op::Beat(i) | Op::Rejoin(i) => {
                        if matches!(op, Op::Rejoin(_)) {
                            members[i].epoch = 0;
                            members[i].active.clear();
                            members[i].standby.clear();
                        }
                        match h.heartbeat(&members[i].request()) {
                            Ok(r) => members[i].adopt(&r.response),
                            Err(_) => { members[i].epoch = 0; members[i].active.clear(); members[i].standby.clear(); }
                        }
                    }
                    Op::Leave(i) | Op::StaticLeave(i) => {
                        let mut req = members[i].request();
                        req.member_epoch = if matches!(op, Op::Leave(_)) { -1 } else { -2 };
                        let _ = h.heartbeat(&req);
                        members[i].epoch = 0;
                        members[i].active.clear();
                        members[i].standby.clear();
                    }
                    Op::Advance(ms) => h.advance(ms),
                    Op::CreateTopic(n) => {
                        if topics == 0 { h.create_topic("input", n); topics += 1; }
                    }
                    Op::Upgrade(i) => {
                        members[i].topology = simple_topology(members[i].topology.epoch + 1);
                        members[i].epoch = 0;
                        members[i].active.clear();
                        members[i].standby.clear();
                    }
                }
                if let Some(g) = h.shard.group(GROUP) {
                    let mut seen = BTreeSet::new();
                    for m in g.members.values() {
                        for (s, ps) in m.assigned().active.iter().chain(m.pending_revocation().active.iter()) {
                            for p in ps {
                                prop_assert!(seen.insert((s.clone(), *p)), "task {}:{} owned twice", s, p);
                            }
                        }
                    }
                }
            }
            let replayed = Store::replay_log(h.shard.store().log()).unwrap();
            prop_assert_eq!(replayed.state(), h.shard.state());
        }
    }
}

#[test]
fn a_member_joining_during_the_initial_delay_gets_epoch_1_and_no_tasks_then_the_assignment() {
    let mut h = Harness::new(StreamsGroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..config()
    });
    h.create_topic("input", 2);
    let mut a = Member::new("a", "p1", simple_topology(1));
    let r = a.beat(&mut h);
    // Kafka 4.4: the new group is at epoch 2 (created at 1, bumped by the join) while its
    // assignment stays at the initial epoch 1; the member reconciles to epoch 1, empty.
    assert_eq!(r.response.member_epoch, 1);
    assert_eq!(r.response.active_tasks.as_deref(), Some(&[][..]));
    assert_eq!(r.response.standby_tasks.as_deref(), Some(&[][..]));
    assert_eq!(r.response.warmup_tasks.as_deref(), Some(&[][..]));
    assert_eq!(a.statuses(), vec![status::ASSIGNMENT_DELAYED]);
    let group = h.shard.group(GROUP).unwrap();
    assert_eq!(group.group_epoch, 2);
    assert_eq!(group.target_assignment_epoch, 1);
    assert_eq!(group_state(group), GroupState::Assigning);
    // Heartbeats at epoch 1 during the delay change nothing.
    let before = h.shard.store().log().len();
    h.advance(1_000);
    let r = a.beat(&mut h);
    assert_eq!(r.response.member_epoch, 1);
    assert_eq!(h.shard.store().log().len(), before);
    // Once the delay is over the assignment of epoch 2 is computed and handed out.
    h.advance(2_000);
    a.beat(&mut h);
    assert_eq!(a.epoch, 2);
    assert_eq!(a.active_count(), 2);
    h.assert_replay_matches();
}

#[test]
fn the_shard_counts_its_rebalances_and_assignments() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    assert_eq!(h.shard.stats(), Default::default());
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let joined = h.shard.stats();
    assert_eq!((joined.rebalances, joined.assignments), (1, 1));
    a.beat(&mut h);
    assert_eq!(
        h.shard.stats(),
        joined,
        "a steady heartbeat changes neither"
    );
    let mut b = Member::new("b", "p2", simple_topology(1));
    b.beat(&mut h);
    let two = h.shard.stats();
    assert_eq!((two.rebalances, two.assignments), (2, 2));
    let mut leave = b.request();
    leave.member_epoch = -1;
    h.heartbeat(&leave).unwrap();
    assert_eq!(
        h.shard.stats().rebalances,
        3,
        "a member leaving bumps the epoch"
    );
}
