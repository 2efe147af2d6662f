//! Behaviour that follows Apache Kafka 4.4's streams group coordinator where kcoord used to
//! differ (issue 11); the facts are in docs/kafka-coordinator-facts.md.
mod support;

use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, TaskIds, Topology};
use kcoord_wire::ErrorCode;
use support::*;

fn two_sources(first: &str, second: &str) -> Topology {
    Topology {
        epoch: 1,
        subtopologies: vec![
            Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![first.into(), second.into()],
                ..Default::default()
            },
            Subtopology {
                subtopology_id: "1".into(),
                source_topics: vec!["other".into()],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

fn stable_member(h: &mut Harness) -> Member {
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(h);
    a.beat(h);
    a
}

#[test]
fn a_heartbeat_at_the_previous_epoch_without_owned_task_lists_is_fenced() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let a = stable_member(&mut h);
    let b = Member::new("b", "p2", simple_topology(1));
    let mut members = vec![a, b];
    converge(&mut h, &mut members);
    let a = members[0].clone();
    let member = h.shard.group(GROUP).unwrap().members["a"].clone();
    assert!(member.previous_member_epoch > 0, "{member:?}");
    let mut lost = a.clone();
    lost.epoch = member.previous_member_epoch;
    // With its owned tasks (a subset of the assignment) the lost response is tolerated...
    assert!(h.heartbeat(&lost.request()).is_ok());
    // ... but without them Kafka cannot tell, and fences.
    let mut req = lost.request();
    req.active_tasks = None;
    req.standby_tasks = None;
    req.warmup_tasks = None;
    let err = h.heartbeat(&req).unwrap_err();
    assert_eq!(err.code, ErrorCode::FENCED_MEMBER_EPOCH);
    assert_eq!(
        err.message.as_deref(),
        Some(&*format!(
            "The streams group member has a smaller member epoch ({}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
            member.previous_member_epoch, member.member_epoch
        ))
    );
    // An owned entry for a sub-topology the member holds nothing of is not contained either.
    let mut req = lost.request();
    req.standby_tasks = Some(vec![TaskIds {
        subtopology_id: "0".into(),
        partitions: vec![],
        ..Default::default()
    }]);
    assert_eq!(
        h.heartbeat(&req).unwrap_err().code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
}

#[test]
fn a_rejoin_with_the_source_topics_in_another_order_is_a_topology_update() {
    let mut h = Harness::new(config());
    for t in ["x", "y", "other"] {
        h.create_topic(t, 1);
    }
    let mut a = Member::new("a", "p1", two_sources("x", "y"));
    a.beat(&mut h);
    let swapped = Member::new("b", "p2", two_sources("y", "x"));
    let err = h.heartbeat(&swapped.request()).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        err.message.as_deref(),
        Some("Topology updates are not supported yet.")
    );
}

#[test]
fn a_rejoin_with_the_subtopologies_in_another_order_is_the_same_topology() {
    let mut h = Harness::new(config());
    for t in ["x", "y", "other"] {
        h.create_topic(t, 1);
    }
    let mut a = Member::new("a", "p1", two_sources("x", "y"));
    a.beat(&mut h);
    let mut reordered = two_sources("x", "y");
    reordered.subtopologies.reverse();
    let mut b = Member::new("b", "p2", reordered);
    assert!(h.heartbeat(&b.request()).is_ok());
    b.beat(&mut h);
}

#[test]
fn an_owned_task_out_of_range_gets_kafkas_invalid_task_message() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let a = stable_member(&mut h);
    let mut req = a.request();
    req.active_tasks = Some(vec![TaskIds {
        subtopology_id: "0".into(),
        partitions: vec![7],
        ..Default::default()
    }]);
    let err = h.heartbeat(&req).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        err.message.as_deref(),
        Some("Task 7 for subtopology 0 is invalid. Number of tasks for this subtopology: 4")
    );
    req.active_tasks = Some(vec![TaskIds {
        subtopology_id: "9".into(),
        partitions: vec![0],
        ..Default::default()
    }]);
    assert_eq!(
        h.heartbeat(&req).unwrap_err().message.as_deref(),
        Some("Subtopology 9 does not exist in the topology.")
    );
}

#[test]
fn leaving_an_unknown_group_is_group_not_found_in_kafkas_words() {
    let mut h = Harness::new(config());
    let mut leave = Member::new("a", "p1", simple_topology(1)).request();
    leave.member_epoch = -1;
    leave.topology = None;
    let err = h.heartbeat(&leave).unwrap_err();
    assert_eq!(err.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(err.message.as_deref(), Some("Group app not found."));
    // A heartbeat that is not a join uses getStreamsGroupOrThrow's words.
    let mut beat = Member::new("a", "p1", simple_topology(1));
    beat.epoch = 4;
    assert_eq!(
        h.heartbeat(&beat.request()).unwrap_err().message.as_deref(),
        Some("Streams group app not found.")
    );
}

#[test]
fn a_group_with_only_committed_offsets_is_not_a_streams_group() {
    let mut h = Harness::new(config());
    h.create_topic("input", 1);
    h.run(|s, now| {
        s.commit_offsets(
            GROUP,
            "",
            -1,
            9,
            &[kcoord_coordinator::commits::OffsetToCommit {
                topic: "input".into(),
                topic_id: uuid::Uuid::nil(),
                partition: 0,
                offset: 5,
                leader_epoch: -1,
                metadata: None,
            }],
            now,
        )
    })
    .unwrap();
    let mut beat = Member::new("a", "p1", simple_topology(1));
    beat.epoch = 4;
    let err = h.heartbeat(&beat.request()).unwrap_err();
    assert_eq!(err.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        err.message.as_deref(),
        Some("Group app is not a streams group.")
    );
    let described = h.shard.describe_streams_groups(&[GROUP.to_string()]);
    assert_eq!(
        described[0].error_message.as_deref(),
        Some("Group app is not a streams group.")
    );
    // A join turns it into a streams group, keeping the offsets.
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    assert_eq!(h.shard.committed_offsets(GROUP).len(), 1);
}

fn static_member(id: &str, instance: &str) -> Member {
    let mut m = Member::new(id, "p1", simple_topology(1));
    m.instance = Some(instance.into());
    m
}

#[test]
fn a_static_member_rejoining_with_its_own_member_id_is_unreleased_unless_it_left_with_minus_2() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = static_member("a1", "instance-a");
    a.beat(&mut h);
    a.beat(&mut h);
    let tasks = a.active.clone();
    assert_eq!(tasks.values().map(|p| p.len()).sum::<usize>(), 4);
    // Rejoining at epoch 0 while the instance id is held: refused, even for the same member id.
    let mut rejoin = a.clone();
    rejoin.epoch = 0;
    rejoin.active.clear();
    let err = h.heartbeat(&rejoin.request()).unwrap_err();
    assert_eq!(err.code, ErrorCode::UNRELEASED_INSTANCE_ID);
    assert_eq!(
        err.message.as_deref(),
        Some("Static member a1 with instance id instance-a cannot join the group because the instance id is owned by a1 member.")
    );
    // After a static leave (-2) the same member id rejoins and gets its tasks back, without a
    // rebalance (the group epoch does not move).
    let mut leave = a.request();
    leave.member_epoch = -2;
    h.heartbeat(&leave).unwrap();
    let epoch_before = h.shard.group(GROUP).unwrap().group_epoch;
    let r = rejoin.beat(&mut h);
    assert_eq!(r.response.member_id, "a1");
    assert_eq!(rejoin.active, tasks);
    let g = h.shard.group(GROUP).unwrap();
    assert_eq!(g.group_epoch, epoch_before);
    assert_eq!(rejoin.epoch, g.target_assignment_epoch);
    assert_eq!(g.members["a1"].member_epoch, g.target_assignment_epoch);
    // Its session timer survives the replacement of itself.
    h.advance(30_000);
    assert!(h.shard.group(GROUP).unwrap().members.contains_key("a1"));
    h.advance(20_000);
    assert!(!h.shard.group(GROUP).unwrap().members.contains_key("a1"));
    h.assert_replay_matches();
}

#[test]
fn a_static_member_replaced_under_a_new_member_id_keeps_the_group_epoch() {
    let mut h = Harness::new(config());
    h.create_topic("input", 4);
    let mut a = static_member("a1", "instance-a");
    a.beat(&mut h);
    a.beat(&mut h);
    let tasks = a.active.clone();
    let mut leave = a.request();
    leave.member_epoch = -2;
    let r = h.heartbeat(&leave).unwrap();
    assert_eq!(r.response.member_epoch, -2);
    let epoch_before = h.shard.group(GROUP).unwrap().group_epoch;
    let mut b = static_member("a2", "instance-a");
    let r = b.beat(&mut h);
    assert_eq!(r.response.member_id, "a2");
    assert_eq!(b.active, tasks);
    let g = h.shard.group(GROUP).unwrap();
    assert_eq!(g.group_epoch, epoch_before);
    assert!(!g.members.contains_key("a1"));
    assert_eq!(
        g.target_assignment.get("a2").map(|t| &t.active),
        Some(&g.members["a2"].assigned().active)
    );
    h.assert_replay_matches();
}

/// Sub-topology 0 reads `input` and writes the repartition topic `app-rep`, which
/// sub-topology 1 reads.
fn repartition_topology() -> Topology {
    use kcoord_wire::messages::streams_group_heartbeat_request::TopicInfo;
    Topology {
        epoch: 1,
        subtopologies: vec![
            Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["input".into()],
                repartition_sink_topics: vec!["app-rep".into()],
                ..Default::default()
            },
            Subtopology {
                subtopology_id: "1".into(),
                repartition_source_topics: vec![TopicInfo {
                    name: "app-rep".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

fn commit(topic: &str, partition: i32) -> kcoord_coordinator::commits::OffsetToCommit {
    kcoord_coordinator::commits::OffsetToCommit {
        topic: topic.into(),
        topic_id: uuid::Uuid::nil(),
        partition,
        offset: 1,
        leader_epoch: -1,
        metadata: None,
    }
}

#[test]
fn an_older_epoch_commit_to_a_repartition_source_topic_passes_the_per_task_check() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    h.create_topic("app-rep", 2);
    let mut a = Member::new("a", "p1", repartition_topology());
    a.beat(&mut h);
    a.beat(&mut h);
    let first_epoch = a.epoch;
    assert_eq!(
        a.active.get("1").map(|p| p.len()),
        Some(2),
        "{:?}",
        a.active
    );
    // b joins: a keeps some tasks (still assigned at the first epoch) and moves on.
    let b = Member::new("b", "p2", repartition_topology());
    let mut members = vec![a, b];
    converge(&mut h, &mut members);
    let a = &members[0];
    assert!(a.epoch > first_epoch);
    let kept = *a.active["1"]
        .iter()
        .next()
        .expect("a keeps a task of sub-topology 1");
    // A commit at the first epoch for the kept repartition-source task is accepted.
    assert_eq!(
        h.run(|s, now| s.commit_offsets(
            GROUP,
            "a",
            first_epoch,
            9,
            &[commit("app-rep", kept)],
            now
        ))
        .unwrap(),
        vec![ErrorCode::NONE]
    );
    // One for a task a no longer holds is stale, in Kafka's words.
    let gone = 1 - kept;
    let err = h
        .run(|s, now| s.commit_offsets(GROUP, "a", first_epoch, 9, &[commit("app-rep", gone)], now))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::STALE_MEMBER_EPOCH);
    assert_eq!(
        err.message.as_deref(),
        Some(&*format!(
            "Task 1-{gone} is not assigned or pending revocation for member."
        ))
    );
    // A topic outside the topology (the repartition *sink* of sub-topology 0 is a source of 1,
    // so use another one).
    let err = h
        .run(|s, now| s.commit_offsets(GROUP, "a", first_epoch, 9, &[commit("elsewhere", 0)], now))
        .unwrap_err();
    assert_eq!(
        err.message.as_deref(),
        Some("Topic elsewhere is not in the topology.")
    );
    // A partition with too large metadata is answered without the task check.
    let mut big = commit("elsewhere", 0);
    big.metadata = Some("x".repeat(4097));
    assert_eq!(
        h.run(|s, now| s.commit_offsets(GROUP, "a", first_epoch, 9, &[big], now))
            .unwrap(),
        vec![ErrorCode::OFFSET_METADATA_TOO_LARGE]
    );
}

fn offsets(
    list: &[(&str, i32, i64)],
) -> Option<Vec<kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset>> {
    Some(
        list.iter()
            .map(
                |(s, p, o)| kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset {
                    subtopology_id: (*s).into(),
                    partition: *p,
                    offset: *o,
                    ..Default::default()
                },
            )
            .collect(),
    )
}

type Reported = Vec<(String, i32, i64)>;

fn described_offsets(h: &Harness, member: &str) -> (Reported, Reported) {
    let g = &h.shard.describe_streams_groups(&[GROUP.to_string()])[0];
    let m = g.members.iter().find(|m| m.member_id == member).unwrap();
    let flat = |l: &Vec<kcoord_wire::messages::streams_group_describe_response::TaskOffset>| {
        l.iter()
            .map(|t| (t.subtopology_id.clone(), t.partition, t.offset))
            .collect::<Vec<_>>()
    };
    (flat(&m.task_offsets), flat(&m.task_end_offsets))
}

#[test]
fn reported_task_offsets_are_described_and_a_null_list_keeps_the_last_report() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut a = Member::new("a", "p1", stateful_topology(1));
    let mut join = a.request();
    join.task_offsets = offsets(&[("0", 1, 100), ("0", 0, 7)]);
    join.task_end_offsets = offsets(&[("0", 1, 150)]);
    let r = h.heartbeat(&join).unwrap();
    a.adopt(&r.response);
    assert_eq!(
        described_offsets(&h, "a"),
        (
            vec![("0".into(), 0, 7), ("0".into(), 1, 100)],
            vec![("0".into(), 1, 150)]
        )
    );
    // Only the offsets reported: the end offsets stay.
    let mut beat = a.request();
    beat.task_offsets = offsets(&[("0", 0, 9)]);
    a.adopt(&h.heartbeat(&beat).unwrap().response);
    assert_eq!(
        described_offsets(&h, "a"),
        (vec![("0".into(), 0, 9)], vec![("0".into(), 1, 150)])
    );
    // Nothing reported: nothing changes.
    a.beat(&mut h);
    assert_eq!(described_offsets(&h, "a").0, vec![("0".into(), 0, 9)]);
    // A task reported twice is refused.
    let mut dup = a.request();
    dup.task_end_offsets = offsets(&[("0", 1, 1), ("0", 1, 2)]);
    let err = h.heartbeat(&dup).unwrap_err();
    assert_eq!(err.code, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        err.message.as_deref(),
        Some("Task offsets contain a duplicate entry for subtopology 0 and partition 1.")
    );
    assert_eq!(described_offsets(&h, "a").1, vec![("0".into(), 1, 150)]);
    // Offsets are not records: replay does not need them, and a rejoin of a new member with
    // the same id after leaving starts empty.
    let mut leave = a.request();
    leave.member_epoch = -1;
    h.heartbeat(&leave).unwrap();
    let b = Member::new("b", "p2", stateful_topology(1));
    let mut b2 = b.clone();
    b2.beat(&mut h);
    let mut again = Member::new("a", "p1", stateful_topology(1));
    again.beat(&mut h);
    assert_eq!(described_offsets(&h, "a"), (vec![], vec![]));
    h.assert_replay_matches();
}

fn cold_start_with_reports(a_reports: i32, b_reports: i32) -> (Vec<i32>, Vec<i32>) {
    let mut h = Harness::new(kcoord_coordinator::StreamsGroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..config()
    });
    h.create_topic("input", 2);
    h.create_topic("app-store-changelog", 2);
    let mut a = Member::new("a", "p1", stateful_topology(1));
    let mut b = Member::new("b", "p2", stateful_topology(1));
    for (m, task) in [(&mut a, a_reports), (&mut b, b_reports)] {
        let mut join = m.request();
        join.task_offsets = offsets(&[("0", task, 1_000)]);
        let r = h.heartbeat(&join).unwrap();
        m.adopt(&r.response);
    }
    h.advance(3_000);
    let g = h.shard.group(GROUP).unwrap();
    let active = |id: &str| -> Vec<i32> {
        g.target_assignment[id]
            .active
            .get("0")
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default()
    };
    (active("a"), active("b"))
}

#[test]
fn the_assignor_gives_a_task_to_the_member_that_reports_its_state() {
    // Kafka's sticky assignor counts reported task offsets as previous standby ownership, so on
    // a cold start each member gets the task whose state it has, whichever way round.
    assert_eq!(cold_start_with_reports(1, 0), (vec![1], vec![0]));
    assert_eq!(cold_start_with_reports(0, 1), (vec![0], vec![1]));
}

/// Kafka bumps the endpoint information epoch on the group object of the heartbeat; the one
/// that creates the group is dropped for the replayed group, so its answer says 0 and the group
/// stays at 0, while the endpoints it sends are those of the bumped epoch.
#[test]
fn the_heartbeat_that_creates_the_group_answers_endpoint_epoch_0() {
    use kcoord_wire::messages::streams_group_heartbeat_request::Endpoint;
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let with_endpoint = |m: &Member| {
        let mut req = m.request();
        req.user_endpoint = Some(Endpoint {
            host: format!("{}.example", m.id),
            port: 8080,
            ..Default::default()
        });
        req
    };
    let a = Member::new("a", "p1", simple_topology(1));
    let first = h.heartbeat(&with_endpoint(&a)).unwrap().response;
    assert_eq!(first.endpoint_information_epoch, 0);
    assert!(first.partitions_by_user_endpoint.is_some());

    // A second member with an endpoint bumps the persisted epoch from 0 to 1.
    let b = Member::new("b", "p2", simple_topology(1));
    let second = h.heartbeat(&with_endpoint(&b)).unwrap().response;
    assert_eq!(second.endpoint_information_epoch, 1);
}
