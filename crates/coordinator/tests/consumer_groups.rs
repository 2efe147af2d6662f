//! KIP-848 consumer groups on a shard: join, reconciliation (revoke before assign), leave,
//! fencing, timeouts, static membership, assignors, regular expressions, and the shared group
//! operations, each checked against Kafka 4.4's `GroupMetadataManager` behaviour.
mod consumer_support;
mod support;

use consumer_support::{assert_disjoint_and_complete, settle, state, Consumer, GROUP};
use kcoord_coordinator::{CoordinatorShard, GroupState};
use kcoord_metadata::ConsumerMemberState;
use kcoord_wire::ErrorCode;
use support::{config, Harness};
use uuid::Uuid;

/// A shard whose consumer groups compute every target assignment at once (an assignment
/// interval of 0, as the differential suite runs Kafka), with a topic of six partitions.
fn harness() -> Harness {
    harness_with_interval(0)
}

fn harness_with_interval(assignment_interval_ms: i32) -> Harness {
    let shard = CoordinatorShard::new(config(), 7).with_consumer_config(
        kcoord_coordinator::ConsumerGroupConfig {
            assignment_interval_ms,
            ..Default::default()
        },
    );
    let mut h = Harness::with_shard(shard);
    h.create_topic("orders", 6);
    h
}

fn topic(h: &Harness, name: &str) -> Uuid {
    h.catalog.state().topics.get(name).unwrap().id
}

#[test]
fn a_first_member_joins_and_gets_every_partition() {
    let mut h = harness();
    let mut a = Consumer::new("a", &["orders"]);
    let r = a.beat(&mut h);
    assert_eq!(
        r.member_epoch, 2,
        "group epoch 1 bumped by the subscription"
    );
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(a.count(), 6);
    assert_eq!(state(&h), GroupState::Stable);
    let r = a.beat(&mut h);
    assert!(
        r.assignment.is_none(),
        "a steady heartbeat carries no assignment"
    );
    h.assert_replay_matches();
}

#[test]
fn a_second_member_waits_until_the_first_revokes() {
    let mut h = harness();
    let t = topic(&h, "orders");
    let mut a = Consumer::new("a", &["orders"]);
    a.beat(&mut h);
    let mut b = Consumer::new("b", &["orders"]);
    let r = b.beat(&mut h);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(b.count(), 0, "b's partitions are still a's: unreleased");
    let member_b = &h.shard.state().consumer_groups.get(GROUP).unwrap().members["b"];
    assert_eq!(member_b.state, ConsumerMemberState::UnreleasedPartitions);
    a.beat(&mut h);
    assert_eq!(a.count(), 3, "a is asked to revoke three");
    assert_eq!(a.epoch, 2, "a keeps its epoch while it revokes");
    assert_eq!(state(&h), GroupState::Reconciling);
    a.beat(&mut h);
    assert_eq!(a.epoch, 3);
    b.beat(&mut h);
    assert_eq!(b.count(), 3);
    let mut members = [a, b];
    settle(&mut h, &mut members);
    assert_disjoint_and_complete(&members, t, 6);
    h.assert_replay_matches();
}

#[test]
fn leaving_bumps_the_epoch_and_the_last_leave_empties_the_group() {
    let mut h = harness();
    let t = topic(&h, "orders");
    let mut members = [
        Consumer::new("a", &["orders"]),
        Consumer::new("b", &["orders"]),
    ];
    settle(&mut h, &mut members);
    let epoch = h
        .shard
        .state()
        .consumer_groups
        .get(GROUP)
        .unwrap()
        .group_epoch;
    let r = members[1].leave(&mut h, -1);
    assert_eq!((r.member_epoch, r.member_id.as_deref()), (-1, Some("b")));
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert_eq!(g.group_epoch, epoch + 1);
    assert!(!g.members.contains_key("b") && !g.target_assignment.contains_key("b"));
    let mut rest = [Consumer::new("a", &[])];
    rest[0].id = members[0].id.clone();
    rest[0].epoch = members[0].epoch;
    rest[0].owned = members[0].owned.clone();
    settle(&mut h, &mut rest);
    assert_disjoint_and_complete(&rest, t, 6);
    rest[0].leave(&mut h, -1);
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert_eq!(state(&h), GroupState::Empty);
    assert_eq!(g.target_assignment_epoch, g.group_epoch);
    h.assert_replay_matches();
}

#[test]
fn wrong_epochs_and_unknown_members_are_refused() {
    let mut h = harness();
    let mut a = Consumer::new("a", &["orders"]);
    a.beat(&mut h);
    let mut req = a.request();
    req.member_epoch = a.epoch + 1;
    assert_eq!(
        a.send(&mut h, &req).unwrap_err().code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
    req.member_epoch = 1;
    req.topic_partitions = None;
    assert_eq!(
        a.send(&mut h, &req).unwrap_err().code,
        ErrorCode::FENCED_MEMBER_EPOCH
    );
    req.member_id = "nobody".into();
    req.member_epoch = a.epoch;
    assert_eq!(
        a.send(&mut h, &req).unwrap_err().code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    req.group_id = "elsewhere".into();
    let e = a.send(&mut h, &req).unwrap_err();
    assert_eq!(e.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        e.message.as_deref(),
        Some("Consumer group elsewhere not found.")
    );
    let mut join = Consumer::new("c", &["orders"]).request();
    join.rebalance_timeout_ms = -1;
    assert_eq!(
        a.send(&mut h, &join).unwrap_err().code,
        ErrorCode::INVALID_REQUEST
    );
    join.rebalance_timeout_ms = 1;
    join.server_assignor = Some("sticky".into());
    assert_eq!(
        a.send(&mut h, &join).unwrap_err().code,
        ErrorCode::UNSUPPORTED_ASSIGNOR
    );
}

#[test]
fn the_previous_epoch_with_owned_partitions_in_the_assignment_is_accepted() {
    let mut h = harness();
    let mut a = Consumer::new("a", &["orders"]);
    a.beat(&mut h);
    let mut b = Consumer::new("b", &["orders"]);
    b.beat(&mut h);
    a.beat(&mut h);
    a.beat(&mut h);
    assert_eq!(a.epoch, 3);
    // The answer with epoch 3 was lost: a retries at 2, owning what it owns now.
    let mut req = a.request();
    req.member_epoch = 2;
    let r = a.send(&mut h, &req).unwrap();
    assert_eq!(r.member_epoch, 3);
}

#[test]
fn a_silent_member_is_fenced_when_its_session_expires() {
    let mut h = harness();
    let t = topic(&h, "orders");
    let mut members = [
        Consumer::new("a", &["orders"]),
        Consumer::new("b", &["orders"]),
    ];
    settle(&mut h, &mut members);
    h.now += 30_000;
    members[0].beat(&mut h);
    h.advance(20_000);
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert!(g.members.contains_key("a") && !g.members.contains_key("b"));
    let mut rest = [Consumer::new("a", &[])];
    std::mem::swap(&mut rest[0], &mut members[0]);
    settle(&mut h, &mut rest);
    assert_disjoint_and_complete(&rest, t, 6);
    let req = members[1].request();
    assert_eq!(
        members[1].send(&mut h, &req).unwrap_err().code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn a_member_that_does_not_revoke_in_time_is_fenced() {
    let mut h = harness();
    let mut a = Consumer::new("a", &["orders"]);
    a.beat(&mut h);
    let mut b = Consumer::new("b", &["orders"]);
    b.beat(&mut h);
    // a is told to revoke but keeps reporting all six.
    let mut req = a.request();
    let r = a.send(&mut h, &req).unwrap();
    assert_eq!(
        r.assignment.unwrap().topic_partitions[0].partitions.len(),
        3
    );
    let m = &h.shard.state().consumer_groups.get(GROUP).unwrap().members["a"];
    assert_eq!(m.state, ConsumerMemberState::UnrevokedPartitions);
    req.member_epoch = m.member_epoch;
    for _ in 0..6 {
        h.now += 10_000;
        a.send(&mut h, &req).unwrap();
        b.beat(&mut h);
        h.tick();
    }
    h.advance(1_000);
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert!(
        !g.members.contains_key("a"),
        "fenced by the 60 s rebalance timeout"
    );
}

#[test]
fn a_static_member_leaves_temporarily_and_its_successor_takes_its_partitions() {
    let mut h = harness();
    let t = topic(&h, "orders");
    let mut a = Consumer::new("a1", &["orders"]);
    a.instance_id = Some("instance-a".into());
    let b = Consumer::new("b", &["orders"]);
    let mut members = [a, b];
    settle(&mut h, &mut members);
    let [a, b] = &mut members;
    let owned = a.owned.clone();
    let epoch = h
        .shard
        .state()
        .consumer_groups
        .get(GROUP)
        .unwrap()
        .group_epoch;
    assert_eq!(a.leave(&mut h, -2).member_epoch, -2);
    // Another process with the same instance id while a1 holds it: unreleased before, fenced
    // for a heartbeat under the wrong member id.
    let mut req = a.request();
    req.member_id = "a2".into();
    req.member_epoch = 5;
    assert_eq!(
        a.send(&mut h, &req).unwrap_err().code,
        ErrorCode::FENCED_INSTANCE_ID
    );
    let mut a2 = Consumer::new("a2", &["orders"]);
    a2.instance_id = Some("instance-a".into());
    a2.beat(&mut h);
    assert_eq!(a2.owned, owned, "the successor gets the same partitions");
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert_eq!(g.group_epoch, epoch, "a static rejoin is no rebalance");
    assert!(!g.members.contains_key("a1"));
    let mut a3 = Consumer::new("a3", &["orders"]);
    a3.instance_id = Some("instance-a".into());
    let req = a3.request();
    assert_eq!(
        a3.send(&mut h, &req).unwrap_err().code,
        ErrorCode::UNRELEASED_INSTANCE_ID
    );
    b.beat(&mut h);
    assert_disjoint_and_complete(&[a2, std::mem::replace(b, Consumer::new("x", &[]))], t, 6);
    h.assert_replay_matches();
}

#[test]
fn the_range_assignor_gives_consecutive_ranges_per_topic() {
    let mut h = harness();
    h.create_topic("payments", 3);
    let (orders, payments) = (topic(&h, "orders"), topic(&h, "payments"));
    let mut members: Vec<Consumer> = ["a", "b"]
        .iter()
        .map(|id| {
            let mut c = Consumer::new(id, &["orders", "payments"]);
            c.assignor = Some("range".into());
            c
        })
        .collect();
    settle(&mut h, &mut members);
    let parts = |c: &Consumer, t: Uuid| {
        c.owned
            .get(&t)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(parts(&members[0], orders), vec![0, 1, 2]);
    assert_eq!(parts(&members[1], orders), vec![3, 4, 5]);
    assert_eq!(parts(&members[0], payments), vec![0, 1]);
    assert_eq!(parts(&members[1], payments), vec![2]);
    let d = h.shard.describe_consumer_groups(&[GROUP.into()]);
    assert_eq!(d[0].assignor_name, "range");
}

#[test]
fn the_uniform_assignor_is_sticky_and_balanced_when_members_come() {
    let mut h = harness();
    let t = topic(&h, "orders");
    let mut members = vec![
        Consumer::new("a", &["orders"]),
        Consumer::new("b", &["orders"]),
    ];
    settle(&mut h, &mut members);
    let before: Vec<_> = members.iter().map(|m| m.owned[&t].clone()).collect();
    members.push(Consumer::new("c", &["orders"]));
    settle(&mut h, &mut members);
    for (m, old) in members.iter().zip(&before) {
        assert_eq!(m.count(), 2);
        assert!(
            m.owned[&t].is_subset(old),
            "{} kept its own partitions",
            m.id
        );
    }
    assert_disjoint_and_complete(&members, t, 6);
}

#[test]
fn members_with_different_subscriptions_are_balanced_per_topic() {
    let mut h = harness();
    h.create_topic("payments", 4);
    let (orders, payments) = (topic(&h, "orders"), topic(&h, "payments"));
    let mut members = vec![
        Consumer::new("a", &["orders"]),
        Consumer::new("b", &["orders", "payments"]),
        Consumer::new("c", &["payments"]),
    ];
    settle(&mut h, &mut members);
    assert_disjoint_and_complete(&members, orders, 6);
    assert_disjoint_and_complete(&members, payments, 4);
    let counts: Vec<usize> = members.iter().map(Consumer::count).collect();
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{counts:?}"
    );
}

#[test]
fn racks_do_not_change_the_assignment_as_in_kafka_4_4() {
    let assign = |racks: bool| {
        let mut h = harness();
        let mut members = vec![
            Consumer::new("a", &["orders"]),
            Consumer::new("b", &["orders"]),
        ];
        if racks {
            members[0].rack = Some("rack-1".into());
            members[1].rack = Some("rack-2".into());
        }
        settle(&mut h, &mut members);
        let d = h.shard.describe_consumer_groups(&[GROUP.into()]);
        if racks {
            assert_eq!(d[0].members[0].rack_id.as_deref(), Some("rack-1"));
        }
        members.iter().map(|m| m.owned.clone()).collect::<Vec<_>>()
    };
    assert_eq!(assign(false), assign(true));
}

#[test]
fn a_regex_subscription_follows_the_topics_it_matches() {
    let mut h = harness();
    h.create_topic("audit", 2);
    let mut a = Consumer::new("a", &[]);
    a.topics = None;
    a.regex = Some("ord.*".into());
    a.beat(&mut h);
    assert_eq!(a.count(), 6);
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert_eq!(
        g.resolved_regexes["ord.*"].topics.len(),
        1,
        "audit does not match"
    );
    let epoch = g.group_epoch;
    h.create_topic("orders-eu", 2);
    a.beat(&mut h);
    a.beat(&mut h);
    assert_eq!(
        a.count(),
        8,
        "the new topic is picked up at the next heartbeat"
    );
    assert_eq!(
        h.shard
            .state()
            .consumer_groups
            .get(GROUP)
            .unwrap()
            .group_epoch,
        epoch + 1
    );
    a.leave(&mut h, -1);
    assert!(h
        .shard
        .state()
        .consumer_groups
        .get(GROUP)
        .unwrap()
        .resolved_regexes
        .is_empty());
    let mut bad = Consumer::new("b", &[]);
    bad.topics = None;
    bad.regex = Some("(".into());
    let req = bad.request();
    assert_eq!(
        bad.send(&mut h, &req).unwrap_err().code,
        ErrorCode::INVALID_REGULAR_EXPRESSION
    );
    h.assert_replay_matches();
}

#[test]
fn a_regex_resolves_only_to_topics_the_member_may_describe() {
    let mut h = harness();
    h.create_topic("orders-secret", 2);
    let mut a = Consumer::new("a", &[]);
    a.topics = None;
    a.regex = Some("orders.*".into());
    let req = a.request();
    let deny = |t: &str| !t.ends_with("secret");
    let ctx = kcoord_coordinator::ConsumerHeartbeatContext {
        client_id: "c",
        client_host: "/h",
        api_version: 1,
        may_describe: &deny,
    };
    let r = h
        .run(|s, now| s.consumer_group_heartbeat(&ctx, &req, now))
        .unwrap();
    let assigned: usize = r
        .assignment
        .unwrap()
        .topic_partitions
        .iter()
        .map(|t| t.partitions.len())
        .sum();
    assert_eq!(assigned, 6);
}

#[test]
fn more_partitions_lead_to_a_new_target_assignment() {
    let mut h = harness();
    let mut a = Consumer::new("a", &["orders", "later"]);
    a.beat(&mut h);
    assert_eq!(a.count(), 6);
    let epoch = a.epoch;
    h.create_topic("later", 3);
    a.beat(&mut h);
    a.beat(&mut h);
    assert_eq!(a.count(), 9);
    assert_eq!(a.epoch, epoch + 1);
}

#[test]
fn the_group_size_is_bounded_and_a_streams_group_is_not_a_consumer_group() {
    let shard = CoordinatorShard::new(config(), 7).with_consumer_config(
        kcoord_coordinator::ConsumerGroupConfig {
            max_size: 1,
            ..Default::default()
        },
    );
    let mut h = Harness::with_shard(shard);
    h.create_topic("orders", 6);
    Consumer::new("a", &["orders"]).beat(&mut h);
    let b = Consumer::new("b", &["orders"]);
    let req = b.request();
    assert_eq!(
        b.send(&mut h, &req).unwrap_err().code,
        ErrorCode::GROUP_MAX_SIZE_REACHED
    );
    let mut streams = support::Member::new("s", "p", support::simple_topology(0));
    let mut sreq = streams.request();
    sreq.group_id = GROUP.into();
    let e = h.heartbeat(&sreq).unwrap_err();
    assert_eq!(
        e.message.as_deref(),
        Some("Group orders is not a streams group.")
    );
    streams.beat(&mut h);
    let c = Consumer::new("c", &["orders"]);
    let mut req = c.request();
    req.group_id = support::GROUP.into();
    let e = c.send(&mut h, &req).unwrap_err();
    assert_eq!(
        e.message.as_deref(),
        Some(format!("Group {} is not a consumer group.", support::GROUP).as_str())
    );
}

#[test]
fn a_v0_join_without_a_member_id_gets_one_minted() {
    let mut h = harness();
    let mut a = Consumer::new("", &["orders"]);
    a.version = 0;
    let r = a.beat(&mut h);
    let id = r.member_id.unwrap();
    assert_eq!(id.len(), 22);
    assert!(h
        .shard
        .state()
        .consumer_groups
        .get(GROUP)
        .unwrap()
        .members
        .contains_key(id.as_str()));
}

#[test]
fn a_shard_rebuilt_from_its_log_has_every_consumer_group_and_arms_their_sessions() {
    let mut h = harness();
    let mut members = [
        Consumer::new("a", &["orders"]),
        Consumer::new("b", &["orders"]),
    ];
    settle(&mut h, &mut members);
    let log = h.shard.store().log().clone();
    let now = h.now;
    let rebuilt = CoordinatorShard::from_log(config(), 7, &log, now).unwrap();
    assert_eq!(
        rebuilt.state().consumer_groups,
        h.shard.state().consumer_groups
    );
    assert_eq!(rebuilt.state().group_count(), 1);
    assert_eq!(
        rebuilt.next_deadline(),
        Some(now + 45_000),
        "a fresh session per member"
    );
    let mut compacted = rebuilt.store().log().clone();
    compacted.compact();
    let again = CoordinatorShard::from_log(config(), 7, &compacted, now).unwrap();
    assert_eq!(
        again.state().consumer_groups,
        h.shard.state().consumer_groups
    );
}

#[test]
fn offsets_follow_kafkas_member_epoch_rules_and_deletion_needs_an_empty_group() {
    use kcoord_coordinator::commits::OffsetToCommit;
    let mut h = harness();
    let t = topic(&h, "orders");
    let mut a = Consumer::new("a", &["orders"]);
    a.beat(&mut h);
    let offset = |p: i32| OffsetToCommit {
        topic: "orders".into(),
        topic_id: t,
        partition: p,
        offset: 5,
        leader_epoch: -1,
        metadata: None,
    };
    let commit = |h: &mut Harness, member: &str, epoch: i32| {
        h.run(|s, now| s.commit_offsets(GROUP, member, epoch, 9, &[offset(0)], now))
    };
    assert!(commit(&mut h, "a", a.epoch).is_ok());
    assert_eq!(
        commit(&mut h, "a", a.epoch + 1).unwrap_err().code,
        ErrorCode::STALE_MEMBER_EPOCH
    );
    assert_eq!(
        commit(&mut h, "zz", a.epoch).unwrap_err().code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        commit(&mut h, "a", a.epoch - 1).unwrap_err().code,
        ErrorCode::STALE_MEMBER_EPOCH,
        "older than the partition's assignment epoch"
    );
    let v8 = h.run(|s, now| s.commit_offsets(GROUP, "a", a.epoch, 8, &[offset(0)], now));
    assert_eq!(v8.unwrap_err().code, ErrorCode::UNSUPPORTED_VERSION);
    let mut b = Consumer::new("b", &["orders"]);
    b.beat(&mut h);
    a.beat(&mut h);
    a.beat(&mut h);
    // a's epoch moved on; a partition it kept was assigned at its first epoch.
    let kept = *a.owned[&t].iter().next().unwrap();
    let old = h.run(|s, now| s.commit_offsets(GROUP, "a", 2, 9, &[offset(kept)], now));
    assert!(old.is_ok(), "{old:?}");
    assert_eq!(
        h.shard
            .validate_offset_fetch(GROUP, Some("a"), 2)
            .unwrap_err()
            .code,
        ErrorCode::STALE_MEMBER_EPOCH
    );
    assert!(h.shard.validate_offset_fetch(GROUP, None, -1).is_ok());
    let listed = h.shard.list_groups();
    assert_eq!(
        (
            listed[0].group_type.as_str(),
            listed[0].protocol_type.as_str()
        ),
        ("consumer", "consumer")
    );
    assert_eq!(
        h.run(|s, _| s.delete_group(GROUP)).unwrap_err().code,
        ErrorCode::NON_EMPTY_GROUP
    );
    a.leave(&mut h, -1);
    b.leave(&mut h, -1);
    h.run(|s, _| s.delete_group(GROUP)).unwrap();
    assert!(h.shard.state().consumer_groups.get(GROUP).is_none());
    assert!(h.shard.state().offsets.group(GROUP).is_none());
    assert_eq!(h.shard.state().group_count(), 0);
    h.assert_replay_matches();
}

/// A classic JoinGroup (v3: no member id round trip) to [`GROUP`].
fn classic_join(
    h: &mut Harness,
) -> kcoord_coordinator::classic::Reply<kcoord_wire::messages::JoinGroupResponse> {
    classic_join_with(h, "consumer", Vec::new())
}

/// A classic JoinGroup (v3) to `group`.
fn classic_join_to(
    h: &mut Harness,
    group: &str,
) -> kcoord_coordinator::classic::Reply<kcoord_wire::messages::JoinGroupResponse> {
    classic_join_as(h, group, "consumer", Vec::new())
}

/// A classic JoinGroup with the "range" protocol's `metadata` and `protocol_type`.
fn classic_join_with(
    h: &mut Harness,
    protocol_type: &str,
    metadata: Vec<u8>,
) -> kcoord_coordinator::classic::Reply<kcoord_wire::messages::JoinGroupResponse> {
    classic_join_as(h, GROUP, protocol_type, metadata)
}

fn classic_join_as(
    h: &mut Harness,
    group: &str,
    protocol_type: &str,
    metadata: Vec<u8>,
) -> kcoord_coordinator::classic::Reply<kcoord_wire::messages::JoinGroupResponse> {
    let req = kcoord_wire::messages::JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: protocol_type.into(),
        protocols: vec![
            kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: metadata.into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let ctx = kcoord_coordinator::classic::JoinContext {
        client_id: "classic",
        client_host: "/127.0.0.1",
        api_version: 3,
    };
    let now = h.now;
    let reply = h
        .shard
        .run(|s| s.classic_join(ctx, &req, now))
        .unwrap()
        .response;
    // The zero initial rebalance delay of a new group fires at once.
    kcoord_coordinator::tick(&mut h.shard, now);
    reply
}

#[test]
fn an_empty_group_changes_protocol_both_ways_and_a_live_one_does_not() {
    let mut h = harness();
    let mut c = Consumer::new("c", &["orders"]);
    c.beat(&mut h);
    c.leave(&mut h, -1);
    assert_eq!(state(&h), GroupState::Empty);
    // A classic join converts the empty consumer group.
    classic_join(&mut h);
    assert!(h.shard.core().consumer_group(GROUP).is_none());
    assert!(h.shard.core().classic_group(GROUP).is_some());
    assert!(
        h.shard.core().state().classic_groups.get(GROUP).is_some(),
        "written"
    );
    // While the classic group has a member, a consumer cannot join it.
    let mut d = Consumer::new("d", &["orders"]);
    let refused = d.send(&mut h, &d.request()).unwrap_err();
    assert_eq!(refused.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        refused.message.as_deref(),
        Some("Group orders is not a consumer group.")
    );
    // Once the classic group is empty (its member expired), a consumer join converts it back.
    // (the initial rebalance delay ends, then the member neither syncs nor heartbeats)
    for _ in 0..3 {
        h.now += 20_000;
        kcoord_coordinator::tick(&mut h.shard, h.now);
    }
    let classic = h.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(
        classic.state,
        kcoord_coordinator::classic::ClassicGroupState::Empty
    );
    d.beat(&mut h);
    assert!(h.shard.core().classic_group(GROUP).is_none());
    assert!(
        h.shard.core().state().classic_groups.get(GROUP).is_none(),
        "its tombstone"
    );
    assert_eq!(h.shard.core().state().group_count(), 1);
}

/// The refusal of a consumer join to a classic group with members, for each of Kafka's reasons
/// (`validateOnlineUpgrade`, `fromClassicGroup`).
fn refusal_for(protocol_type: &str, metadata: Vec<u8>) -> Option<String> {
    let mut h = harness();
    classic_join_with(&mut h, protocol_type, metadata);
    // The initial rebalance delay ends: the join completes and the protocol is chosen.
    h.now += 5_000;
    kcoord_coordinator::tick(&mut h.shard, h.now);
    let classic = h.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(classic.protocol_name.as_deref(), Some("range"));
    let d = Consumer::new("d", &["orders"]);
    let refused = d.send(&mut h, &d.request()).unwrap_err();
    assert_eq!(refused.code, ErrorCode::GROUP_ID_NOT_FOUND);
    refused.message
}

#[test]
fn a_live_classic_group_is_refused_for_kafkas_reasons() {
    let cannot = |why: &str| {
        Some(format!(
            "Cannot upgrade classic group {GROUP} to consumer group because {why}"
        ))
    };
    assert_eq!(
        refusal_for("connect", b"anything".to_vec()),
        cannot("the group does not use the consumer embedded protocol.")
    );
    assert_eq!(
        refusal_for("consumer", b"subscription".to_vec()),
        cannot("the embedded consumer protocol is malformed.")
    );
    // A well-formed v0 subscription to "orders" is upgraded online (tests/migration.rs).
}

#[test]
fn an_invalid_regex_is_refused_in_re2js_words() {
    let mut h = harness();
    let mut a = Consumer::new("a", &[]);
    a.topics = None;
    for (regex, description) in [
        ("[", "missing closing ]"),
        ("orders(", "missing closing )"),
        ("orders)", "unexpected )"),
        ("*orders", "missing argument to repetition operator"),
        ("or(?<n", "invalid named capture"),
        ("[z-a]", "invalid character class range"),
        ("(?=x)", "invalid or unsupported Perl syntax"),
    ] {
        a.regex = Some(regex.into());
        let refused = a.send(&mut h, &a.request()).unwrap_err();
        assert_eq!(refused.code, ErrorCode::INVALID_REGULAR_EXPRESSION);
        assert_eq!(
            refused.message.unwrap(),
            format!(
                "SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."
            ),
        );
    }
}

#[test]
fn the_assignment_interval_holds_the_target_back_as_kafkas_does() {
    let mut h = harness_with_interval(1_000);
    let mut a = Consumer::new("a", &["orders"]);
    a.beat(&mut h);
    assert_eq!(
        (a.epoch, a.count()),
        (2, 6),
        "the first target is computed at once"
    );
    // b joins within the interval: the group epoch moves, the target stays epoch 2's.
    let mut b = Consumer::new("b", &["orders"]);
    let r = b.beat(&mut h);
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert_eq!((g.group_epoch, g.target_assignment_epoch), (3, 2));
    assert_eq!((r.member_epoch, b.count()), (2, 0));
    a.beat(&mut h);
    assert_eq!(a.count(), 6, "a keeps everything while the target waits");
    // Once the interval has passed, the next heartbeat computes the new target.
    h.now += 1_000;
    a.beat(&mut h);
    let g = h.shard.state().consumer_groups.get(GROUP).unwrap();
    assert_eq!(g.target_assignment_epoch, 3);
    assert_eq!(a.count(), 3, "a is asked to revoke");
    let mut members = [a, b];
    settle(&mut h, &mut members);
    assert_disjoint_and_complete(&members, topic(&h, "orders"), 6);
    h.assert_replay_matches();
}

#[test]
fn a_classic_join_converts_an_empty_streams_group_and_a_live_one_refuses_it() {
    use kcoord_coordinator::classic::Reply;
    let mut h = harness();
    h.create_topic("input", 2);
    let mut streams = support::Member::new("s1", "p1", support::simple_topology(0));
    streams.beat(&mut h);
    let Reply::Now(refused) = classic_join_to(&mut h, support::GROUP) else {
        panic!("a join to a live streams group was parked")
    };
    assert_eq!(
        refused.error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL.code()
    );
    let mut leave = streams.request();
    leave.member_epoch = -1;
    h.heartbeat(&leave).unwrap();
    assert!(
        h.shard.core().group(support::GROUP).is_some(),
        "empty, still there"
    );
    classic_join_to(&mut h, support::GROUP);
    assert!(
        h.shard.core().group(support::GROUP).is_none(),
        "the streams group's records went"
    );
    assert!(h.shard.core().classic_group(support::GROUP).is_some());
    assert_eq!(h.shard.core().state().group_count(), 1);
    h.assert_replay_matches();
}

#[test]
fn a_groups_consumer_configs_set_its_heartbeat_interval_and_session() {
    let mut h = harness();
    let overrides = std::collections::BTreeMap::from([(
        GROUP.to_string(),
        std::collections::BTreeMap::from([
            (
                "consumer.session.timeout.ms".to_string(),
                "50000".to_string(),
            ),
            (
                "consumer.heartbeat.interval.ms".to_string(),
                "7000".to_string(),
            ),
        ]),
    )]);
    h.input(kcoord_coordinator::Effect::ConsumerGroupConfigs(overrides));
    let mut c = Consumer::new("c", &["orders"]);
    let joined = c.beat(&mut h);
    assert_eq!(joined.heartbeat_interval_ms, 7000);
    // The broker's 45 s session would have expired by now; the group's 50 s has not.
    h.advance(46_000);
    h.tick();
    assert_eq!(state(&h), GroupState::Stable);
    h.advance(5_000);
    h.tick();
    assert_eq!(state(&h), GroupState::Empty);
    // Another group runs with the broker's settings.
    let mut other = Consumer::new("o", &["orders"]);
    let req = kcoord_wire::messages::ConsumerGroupHeartbeatRequest {
        group_id: "other".into(),
        ..other.request()
    };
    let answer = other.send(&mut h, &req).unwrap();
    assert_eq!(answer.heartbeat_interval_ms, 5000);
    other.epoch = answer.member_epoch;
}

/// The steady path (`consumer/steady.rs`) answers what the full path answers and leaves the
/// same state: two shards, one with it off, through the same heartbeats, steady and not.
#[test]
fn steady_heartbeats_answer_as_the_full_path_does() {
    let mut answers = Vec::new();
    let mut hits = Vec::new();
    for steady_path in [true, false] {
        let consumer = kcoord_coordinator::ConsumerGroupConfig {
            assignment_interval_ms: 0,
            ..Default::default()
        };
        let shard = CoordinatorShard::new(config(), 7)
            .with_consumer_config(consumer)
            .with_steady_path(steady_path);
        let mut h = Harness::with_shard(shard);
        h.create_topic("orders", 6);
        let mut members = [
            Consumer::new("a", &["orders"]),
            Consumer::new("b", &["orders"]),
        ];
        settle(&mut h, &mut members);
        let mut seen = Vec::new();
        for round in 0..3 {
            for m in members.iter_mut() {
                let mut req = m.request();
                req.topic_partitions = None; // what the Java consumer sends when nothing changed
                seen.push(format!("{:?}", m.send(&mut h, &req)));
            }
            if round == 1 {
                // A new member: the others' steady heartbeats must now take the full path.
                let mut c = Consumer::new("c", &["orders"]);
                seen.push(format!("{:?}", c.beat(&mut h)));
            }
            h.now += 1_000;
        }
        seen.push(format!(
            "{:?}",
            h.shard.state().consumer_groups.get(GROUP).unwrap()
        ));
        hits.push(h.shard.steady_hits());
        answers.push(seen);
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        hits,
        [4, 0],
        "two steady rounds of two members, then a rebalance"
    );
}
