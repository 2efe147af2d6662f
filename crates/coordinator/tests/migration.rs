//! Kafka 4.4's online migration between classic and consumer groups: a consumer-protocol
//! member upgrades a classic group with members, classic members live on in the consumer group
//! (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), and the group goes back to classic when its
//! last consumer-protocol member leaves, each as `group.consumer.migration.policy` allows.
mod consumer_support;
mod support;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use consumer_support::{Consumer, GROUP};
use kcoord_coordinator::classic::{
    ClassicAnswer, ClassicGroupConfig, ClassicGroupState, JoinContext, LeavingMember, Reply,
};
use kcoord_coordinator::consumer::MigrationPolicy;
use kcoord_coordinator::consumer_protocol::{read_assignment, write_assignment};
use kcoord_coordinator::{ConsumerGroupConfig, CoordinatorShard, ReplayedLog};
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kcoord_wire::ErrorCode;
use support::{config, Harness};

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 6;

fn harness(policy: MigrationPolicy) -> Harness {
    let shard = CoordinatorShard::new(config(), 7)
        .with_consumer_config(ConsumerGroupConfig {
            assignment_interval_ms: 0,
            migration_policy: policy,
            ..Default::default()
        })
        .with_classic_groups(ClassicGroupConfig {
            initial_rebalance_delay_ms: 0,
            ..Default::default()
        });
    let mut h = Harness::with_shard(shard);
    h.create_topic(TOPIC, PARTITIONS);
    h
}

/// A `ConsumerProtocolSubscription` v1 to [`TOPIC`], owning `owned`.
fn subscription(owned: &BTreeSet<i32>) -> Bytes {
    let mut b = vec![0, 1];
    b.extend(1i32.to_be_bytes());
    b.extend((TOPIC.len() as i16).to_be_bytes());
    b.extend(TOPIC.as_bytes());
    b.extend((-1i32).to_be_bytes());
    if owned.is_empty() {
        b.extend(0i32.to_be_bytes());
    } else {
        b.extend(1i32.to_be_bytes());
        b.extend((TOPIC.len() as i16).to_be_bytes());
        b.extend(TOPIC.as_bytes());
        b.extend((owned.len() as i32).to_be_bytes());
        for p in owned {
            b.extend(p.to_be_bytes());
        }
    }
    Bytes::from(b)
}

/// The partitions of [`TOPIC`] an encoded assignment gives.
fn partitions(assignment: &[u8]) -> BTreeSet<i32> {
    read_assignment(assignment)
        .unwrap()
        .partitions
        .into_iter()
        .filter(|(t, _)| t == TOPIC)
        .flat_map(|(_, p)| p)
        .collect()
}

/// A classic consumer (cooperative: it reports what it owns when it rejoins).
struct Classic {
    id: String,
    instance: Option<String>,
    generation: i32,
    owned: BTreeSet<i32>,
}

impl Classic {
    fn new() -> Classic {
        Classic {
            id: String::new(),
            instance: None,
            generation: -1,
            owned: BTreeSet::new(),
        }
    }

    fn join_request(&self) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: GROUP.into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 20_000,
            member_id: self.id.clone(),
            group_instance_id: self.instance.clone(),
            protocol_type: "consumer".into(),
            protocols: ["range", "cooperative-sticky"]
                .iter()
                .map(|name| JoinGroupRequestProtocol {
                    name: (*name).into(),
                    metadata: subscription(&self.owned),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// A JoinGroup (v5); a parked one is answered from the shard's outbox.
    fn join(&mut self, h: &mut Harness) -> Option<JoinGroupResponse> {
        let reply = send_join(h, &self.join_request(), 5);
        h.tick();
        let r = match reply {
            Reply::Now(r) => r,
            Reply::Parked(w) => match take(h).into_iter().find(|(id, _)| *id == w)?.1 {
                ClassicAnswer::Join(r) => r,
                other => panic!("{other:?}"),
            },
        };
        if r.error_code == ErrorCode::MEMBER_ID_REQUIRED.code() {
            self.id = r.member_id;
            return self.join(h);
        }
        if r.error_code == 0 {
            self.id = r.member_id.clone();
            self.generation = r.generation_id;
        }
        Some(r)
    }

    fn sync_request(&self, assignments: &[(&str, Bytes)]) -> SyncGroupRequest {
        SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id: self.generation,
            member_id: self.id.clone(),
            group_instance_id: self.instance.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: assignments
                .iter()
                .map(|(m, a)| SyncGroupRequestAssignment {
                    member_id: (*m).into(),
                    assignment: a.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn sync(
        &mut self,
        h: &mut Harness,
        assignments: &[(&str, Bytes)],
    ) -> Option<SyncGroupResponse> {
        let req = self.sync_request(assignments);
        let now = h.now;
        let reply = h.shard.run(|s| s.classic_sync(&req, now)).unwrap().response;
        let r = match reply {
            Reply::Now(r) => r,
            Reply::Parked(w) => match take(h).into_iter().find(|(id, _)| *id == w)?.1 {
                ClassicAnswer::Sync(r) => r,
                other => panic!("{other:?}"),
            },
        };
        if r.error_code == 0 {
            self.owned = partitions(&r.assignment);
        }
        Some(r)
    }

    fn heartbeat(&self, h: &mut Harness) -> ErrorCode {
        let req = HeartbeatRequest {
            group_id: GROUP.into(),
            generation_id: self.generation,
            member_id: self.id.clone(),
            group_instance_id: self.instance.clone(),
            ..Default::default()
        };
        let now = h.now;
        h.shard
            .run(|s| s.classic_heartbeat(&req, now))
            .unwrap()
            .response
    }

    /// Heartbeats, rejoining and syncing when told to; whether it had to.
    fn step(&mut self, h: &mut Harness) -> bool {
        let code = self.heartbeat(h);
        if code == ErrorCode::NONE {
            return false;
        }
        assert!(
            [
                ErrorCode::REBALANCE_IN_PROGRESS,
                ErrorCode::ILLEGAL_GENERATION
            ]
            .contains(&code),
            "{code:?}"
        );
        let joined = self.join(h).expect("a join answer");
        assert_eq!(joined.error_code, 0, "{joined:?}");
        let synced = self.sync(h, &[]).expect("a sync answer");
        assert!(
            [0, ErrorCode::REBALANCE_IN_PROGRESS.code()].contains(&synced.error_code),
            "{synced:?}"
        );
        true
    }
}

/// Sends a JoinGroup at `version`; its reply, parked or not.
fn send_join(h: &mut Harness, req: &JoinGroupRequest, version: i16) -> Reply<JoinGroupResponse> {
    let ctx = JoinContext {
        client_id: "classic",
        client_host: "/127.0.0.1",
        api_version: version,
    };
    let now = h.now;
    h.shard
        .run(|s| s.classic_join(ctx, req, now))
        .unwrap()
        .response
}

fn take(h: &mut Harness) -> Vec<(u64, ClassicAnswer)> {
    if !h.shard.core().has_classic_answers() {
        return Vec::new();
    }
    h.shard.run(|s| s.take_classic_answers()).unwrap().response
}

/// A Stable classic group of two members (a leads) at generation 1: a owns 0-2, b 3-5.
fn classic_group(h: &mut Harness) -> (Classic, Classic) {
    classic_group_with(h, of(&[3, 4, 5]))
}

/// An assignment of [`TOPIC`]'s `partitions`.
fn of(partitions: &[i32]) -> Bytes {
    write_assignment(
        &BTreeMap::from([(TOPIC.to_string(), partitions.iter().copied().collect())]),
        1,
    )
}

/// The classic group, with the leader giving b `b_assignment`.
fn classic_group_with(h: &mut Harness, b_assignment: Bytes) -> (Classic, Classic) {
    let (mut a, mut b) = (Classic::new(), Classic::new());
    // Both join before the (zero) initial delay ends, so one generation takes both.
    for m in [&a, &b] {
        send_join(h, &m.join_request(), 3);
    }
    // The zero delay is extended once as a member joined during it.
    h.tick();
    h.tick();
    let answers = take(h);
    let joined: Vec<JoinGroupResponse> = answers
        .into_iter()
        .filter_map(|(_, a)| match a {
            ClassicAnswer::Join(r) => Some(r),
            _ => None,
        })
        .collect();
    let leader = joined.iter().find(|r| r.leader == r.member_id).unwrap();
    let follower = joined.iter().find(|r| r.leader != r.member_id).unwrap();
    (a.id, a.generation) = (leader.member_id.clone(), leader.generation_id);
    (b.id, b.generation) = (follower.member_id.clone(), follower.generation_id);
    let b_id = b.id.clone();
    let a_id = a.id.clone();
    // The follower's SyncGroup waits for the leader's.
    let req = b.sync_request(&[]);
    let now = h.now;
    h.shard.run(|s| s.classic_sync(&req, now)).unwrap();
    a.sync(h, &[(&a_id, of(&[0, 1, 2])), (&b_id, b_assignment)]);
    b.owned = [3, 4, 5].into();
    assert_eq!(a.owned, [0, 1, 2].into());
    let classic = h.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(
        (classic.state, classic.generation_id),
        (ClassicGroupState::Stable, 1)
    );
    (a, b)
}

/// Steps every member until the group is Stable and every partition is owned once.
fn settle(h: &mut Harness, classic: &mut [&mut Classic], consumers: &mut [&mut Consumer]) {
    for _ in 0..20 {
        for c in consumers.iter_mut() {
            c.beat(h);
        }
        let mut moved = false;
        for c in classic.iter_mut() {
            moved |= c.step(h);
        }
        let mut owned: Vec<i32> = classic
            .iter()
            .flat_map(|c| c.owned.iter().copied())
            .collect();
        owned.extend(
            consumers
                .iter()
                .flat_map(|c| c.owned.values().flatten().copied()),
        );
        owned.sort_unstable();
        if !moved && owned == (0..PARTITIONS).collect::<Vec<_>>() {
            return;
        }
    }
    panic!("the group did not settle");
}

fn consumer_group(h: &Harness) -> &kcoord_metadata::ConsumerGroup {
    h.shard
        .state()
        .consumer_groups
        .get(GROUP)
        .expect("a consumer group")
}

#[test]
fn a_consumer_upgrades_a_live_classic_group_and_its_members_go_on_in_it() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (mut a, mut b) = classic_group(&mut h);
    let mut c = Consumer::new("c", &[TOPIC]);
    let r = c.beat(&mut h);
    assert!(h.shard.core().classic_group(GROUP).is_none());
    assert!(
        h.shard.state().classic_groups.get(GROUP).is_none(),
        "its tombstone"
    );
    let g = consumer_group(&h);
    // The generation became the group epoch, which c's join bumped.
    assert_eq!(
        (g.group_epoch, g.target_assignment_epoch, r.member_epoch),
        (2, 2, 2)
    );
    let classic_a = &g.members[a.id.as_str()];
    let meta = classic_a
        .classic_member_metadata
        .as_ref()
        .expect("classic metadata");
    assert_eq!(meta.session_timeout_ms, 10_000);
    let names: Vec<&str> = meta
        .supported_protocols
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["range", "cooperative-sticky"]);
    assert_eq!(classic_a.member_epoch, 1);
    let topic = h.catalog.state().topics.get(TOPIC).unwrap().id;
    assert_eq!(
        classic_a
            .assigned
            .get(&topic)
            .unwrap()
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        [0, 1, 2],
        "the classic assignment carried over"
    );
    assert_eq!(c.count(), 0, "c waits for the classic members to release");
    // The classic members hear of the rebalance on their heartbeat.
    assert_eq!(a.heartbeat(&mut h), ErrorCode::REBALANCE_IN_PROGRESS);
    settle(&mut h, &mut [&mut a, &mut b], &mut [&mut c]);
    assert_eq!((a.owned.len(), b.owned.len(), c.count()), (2, 2, 2));
    let g = consumer_group(&h);
    assert_eq!(a.generation, g.members[a.id.as_str()].member_epoch);
    // ConsumerGroupDescribe tells the classic members apart (MemberType 0).
    let described = h
        .shard
        .core()
        .describe_consumer_groups(&[GROUP.to_string()]);
    let mut types: Vec<i8> = described[0].members.iter().map(|m| m.member_type).collect();
    types.sort_unstable();
    assert_eq!(types, [0, 0, 1]);
    h.assert_replay_matches();
    // A restart brings the consumer group back with its classic members.
    let replayed = ReplayedLog::keeping_records(h.shard.core().store().log()).unwrap();
    let reloaded = h.shard.core().reloaded(replayed, h.now);
    h.shard.replace_core(reloaded);
    assert!(consumer_group(&h).members[b.id.as_str()].uses_classic_protocol());
    assert_eq!(b.heartbeat(&mut h), ErrorCode::NONE);
}

#[test]
fn the_last_consumer_leaving_downgrades_the_group_and_the_classic_members_rebalance() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (mut a, mut b) = classic_group(&mut h);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.beat(&mut h);
    settle(&mut h, &mut [&mut a, &mut b], &mut [&mut c]);
    let epoch = consumer_group(&h).group_epoch;
    c.leave(&mut h, -1);
    assert!(
        h.shard.state().consumer_groups.get(GROUP).is_none(),
        "its tombstones"
    );
    let classic = h
        .shard
        .core()
        .classic_group(GROUP)
        .expect("a classic group again");
    assert_eq!(classic.state, ClassicGroupState::PreparingRebalance);
    assert_eq!(classic.generation_id, epoch);
    assert_eq!(classic.protocol_name.as_deref(), Some("range"));
    let record = h
        .shard
        .state()
        .classic_groups
        .get(GROUP)
        .expect("its record");
    assert_eq!(record.members.len(), 2);
    // Each member's record carries its target assignment in the consumer protocol.
    let written: BTreeSet<i32> = record
        .members
        .iter()
        .flat_map(|m| partitions(&m.assignment))
        .collect();
    assert_eq!(written.len(), 4);
    h.assert_replay_matches();
    // The members rejoin as classic members of a classic group.
    assert_eq!(a.heartbeat(&mut h), ErrorCode::REBALANCE_IN_PROGRESS);
    let parked = send_join(&mut h, &a.join_request(), 5);
    assert!(matches!(parked, Reply::Parked(_)), "a waits for b");
    let jb = b.join(&mut h).unwrap();
    assert_eq!(jb.generation_id, epoch + 1);
    let classic = h.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(classic.state, ClassicGroupState::CompletingRebalance);
}

#[test]
fn a_classic_member_joins_a_consumer_group_and_is_served_its_assignment() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.beat(&mut h);
    let mut d = Classic::new();
    let joined = d.join(&mut h).unwrap();
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert!(joined.members.is_empty() && joined.leader.is_empty());
    let member = &consumer_group(&h).members[d.id.as_str()];
    assert_eq!(joined.generation_id, member.member_epoch);
    // A protocol name other than the one the join answered is refused.
    let mut req = d.sync_request(&[]);
    req.protocol_name = Some("roundrobin".into());
    let now = h.now;
    let refused = h.shard.run(|s| s.classic_sync(&req, now)).unwrap().response;
    assert!(
        matches!(refused, Reply::Now(r) if r.error_code == ErrorCode::INCONSISTENT_GROUP_PROTOCOL.code())
    );
    let mut stale = Classic::new();
    stale.id = d.id.clone();
    stale.generation = d.generation + 5;
    assert_eq!(stale.heartbeat(&mut h), ErrorCode::ILLEGAL_GENERATION);
    stale.id = "c".into();
    stale.generation = c.epoch;
    assert_eq!(
        stale.heartbeat(&mut h),
        ErrorCode::UNKNOWN_MEMBER_ID,
        "c speaks the consumer protocol"
    );
    settle(&mut h, &mut [&mut d], &mut [&mut c]);
    assert_eq!((d.owned.len(), c.count()), (3, 3));
    // A member that must revoke hears REBALANCE_IN_PROGRESS until it rejoins.
    let mut e = Consumer::new("e", &[TOPIC]);
    e.beat(&mut h);
    assert_eq!(d.heartbeat(&mut h), ErrorCode::REBALANCE_IN_PROGRESS);
    settle(&mut h, &mut [&mut d], &mut [&mut c, &mut e]);
    // LeaveGroup removes the classic member; the consumers stay a consumer group.
    let leaving = [LeavingMember {
        member_id: d.id.clone(),
        group_instance_id: None,
    }];
    let now = h.now;
    let left = h
        .shard
        .run(|s| s.classic_leave(GROUP, &leaving, now))
        .unwrap()
        .response;
    assert_eq!(left.unwrap()[0].error_code, 0);
    assert!(!consumer_group(&h).members.contains_key(d.id.as_str()));
    h.assert_replay_matches();
}

#[test]
fn a_classic_member_that_never_syncs_is_fenced_after_its_rebalance_timeout() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.beat(&mut h);
    let mut d = Classic::new();
    d.join(&mut h).unwrap();
    h.now += 15_000;
    c.beat(&mut h);
    h.advance(6_000);
    assert!(!consumer_group(&h).members.contains_key(d.id.as_str()));
    h.assert_replay_matches();
}

#[test]
fn a_classic_members_session_expiry_can_downgrade_nothing_but_a_consumers_can() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (mut a, mut b) = classic_group(&mut h);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.beat(&mut h);
    settle(&mut h, &mut [&mut a, &mut b], &mut [&mut c]);
    // c goes silent while the classic members heartbeat: its session (45 s) expires.
    for _ in 0..10 {
        h.advance(5_000);
        a.heartbeat(&mut h);
        b.heartbeat(&mut h);
    }
    assert!(h.shard.state().consumer_groups.get(GROUP).is_none());
    assert!(h.shard.core().classic_group(GROUP).is_some());
    h.assert_replay_matches();
}

/// What a consumer's join to a Stable classic group with members answers under `policy`.
fn upgrade_under(policy: MigrationPolicy) -> Result<(), String> {
    let mut h = harness(policy);
    classic_group(&mut h);
    let c = Consumer::new("c", &[TOPIC]);
    c.send(&mut h, &c.request())
        .map(|_| ())
        .map_err(|e| format!("{:?} {}", e.code, e.message.unwrap_or_default()))
}

/// Whether the last consumer leaving downgrades the group under `policy` (the group is
/// upgraded first under bidirectional, then runs with `policy`).
fn downgrades_under(policy: MigrationPolicy) -> bool {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (mut a, mut b) = classic_group(&mut h);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.beat(&mut h);
    settle(&mut h, &mut [&mut a, &mut b], &mut [&mut c]);
    let mut consumer = h.shard.core().consumer_config().clone();
    consumer.migration_policy = policy;
    let replayed = ReplayedLog::keeping_records(h.shard.core().store().log()).unwrap();
    let reloaded = CoordinatorShard::new(config(), 7)
        .with_consumer_config(consumer)
        .with_classic_groups(h.shard.core().classic_config().clone())
        .reloaded(replayed, h.now);
    h.shard.replace_core(reloaded);
    h.publish_topics();
    c.leave(&mut h, -1);
    h.shard.core().classic_group(GROUP).is_some()
}

#[test]
fn each_migration_policy_refuses_what_kafka_refuses() {
    let disabled = format!(
        "GROUP_ID_NOT_FOUND Cannot upgrade classic group {GROUP} to consumer group because online upgrade is disabled."
    );
    assert_eq!(
        upgrade_under(MigrationPolicy::Disabled),
        Err(disabled.clone())
    );
    assert_eq!(upgrade_under(MigrationPolicy::Downgrade), Err(disabled));
    assert_eq!(upgrade_under(MigrationPolicy::Upgrade), Ok(()));
    assert_eq!(upgrade_under(MigrationPolicy::Bidirectional), Ok(()));
    assert!(downgrades_under(MigrationPolicy::Bidirectional));
    assert!(downgrades_under(MigrationPolicy::Downgrade));
    assert!(!downgrades_under(MigrationPolicy::Upgrade));
    assert!(!downgrades_under(MigrationPolicy::Disabled));
    // Disabled: a classic member may not join a consumer group either.
    let mut h = harness(MigrationPolicy::Disabled);
    Consumer::new("c", &[TOPIC]).beat(&mut h);
    let refused = Classic::new().join(&mut h).unwrap();
    assert_eq!(
        refused.error_code,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL.code()
    );
    assert_eq!(
        MigrationPolicy::parse("BiDirectional"),
        Some(MigrationPolicy::Bidirectional)
    );
    assert_eq!(MigrationPolicy::parse("sideways"), None);
}

#[test]
fn a_custom_assignors_user_data_refuses_the_upgrade() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    // b's assignment from a custom assignor carries user data.
    let mut custom = of(&[3]).to_vec();
    custom.truncate(custom.len() - 4);
    custom.extend(1i32.to_be_bytes());
    custom.push(7);
    classic_group_with(&mut h, Bytes::from(custom));
    let c = Consumer::new("c", &[TOPIC]);
    let refused = c.send(&mut h, &c.request()).unwrap_err();
    assert_eq!(refused.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert!(refused
        .message
        .unwrap()
        .contains("an unsupported custom assignor is in use"));
    assert!(
        h.shard.core().classic_group(GROUP).is_some(),
        "the group stays classic"
    );
}

#[test]
fn a_classic_static_member_replacing_the_last_consumer_downgrades_the_group() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let (mut a, mut b) = classic_group(&mut h);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.instance_id = Some("instance-c".into());
    c.beat(&mut h);
    settle(&mut h, &mut [&mut a, &mut b], &mut [&mut c]);
    let epoch = consumer_group(&h).group_epoch;
    // The instance restarts with the classic protocol, owning what c owned.
    let mut restarted = Classic::new();
    restarted.instance = Some("instance-c".into());
    let joined = restarted.join(&mut h).unwrap();
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert!(h.shard.state().consumer_groups.get(GROUP).is_none());
    let classic = h
        .shard
        .core()
        .classic_group(GROUP)
        .expect("a classic group again");
    assert_eq!(classic.generation_id, epoch);
    assert_eq!(classic.members.len(), 3);
    assert!(classic.members.contains_key(restarted.id.as_str()));
    assert!(!classic.members.contains_key("c"));
    h.assert_replay_matches();
}

#[test]
fn a_static_classic_member_restarts_in_a_consumer_group_and_fences_its_old_self() {
    let mut h = harness(MigrationPolicy::Bidirectional);
    let mut c = Consumer::new("c", &[TOPIC]);
    c.beat(&mut h);
    let mut d = Classic::new();
    d.instance = Some("instance-d".into());
    assert_eq!(d.join(&mut h).unwrap().error_code, 0);
    settle(&mut h, &mut [&mut d], &mut [&mut c]);
    let old = Classic {
        id: d.id.clone(),
        instance: d.instance.clone(),
        generation: d.generation,
        owned: BTreeSet::new(),
    };
    // The restarted instance joins without a member id and takes d's place and partitions.
    d.id = String::new();
    let joined = d.join(&mut h).unwrap();
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_ne!(d.id, old.id);
    let g = consumer_group(&h);
    assert!(!g.members.contains_key(old.id.as_str()));
    assert_eq!(g.members[d.id.as_str()].instance_id(), Some("instance-d"));
    assert_eq!(old.heartbeat(&mut h), ErrorCode::FENCED_INSTANCE_ID);
    // A JoinGroup with an instance id nobody holds and a member id is refused.
    let mut stranger = Classic::new();
    stranger.id = "someone".into();
    stranger.instance = Some("instance-x".into());
    let refused = stranger.join(&mut h).unwrap();
    assert_eq!(refused.error_code, ErrorCode::UNKNOWN_MEMBER_ID.code());
    settle(&mut h, &mut [&mut d], &mut [&mut c]);
    assert_eq!(d.owned.len() + c.count(), PARTITIONS as usize);
    h.assert_replay_matches();
}
