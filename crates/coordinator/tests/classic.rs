//! Classic groups on one shard, driven by hand: the join and sync phases, KIP-394 member ids,
//! static members, session expiry, leaving, offsets and a reload from the log.
use bytes::Bytes;
use kcoord_coordinator::classic::{
    ClassicAnswer, ClassicGroupConfig, ClassicGroupState, JoinContext, LeavingMember, Reply,
    WaiterId,
};
use kcoord_coordinator::commits::{CommitMember, OffsetToCommit};
use kcoord_coordinator::{tick, CoordinatorShard, ReplayedLog, StreamsGroupConfig};
use kcoord_runtime::{Runtime, Volatile};
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse,
};
use kcoord_wire::ErrorCode;

const GROUP: &str = "consumers";
const SESSION: i32 = 10_000;
const REBALANCE: i32 = 30_000;

struct Group {
    shard: Runtime<CoordinatorShard, Volatile>,
    now: i64,
    answers: Vec<(WaiterId, ClassicAnswer)>,
}

/// A JoinGroup's answer: now, or taken from the answers once it is given.
enum Joined {
    Now(JoinGroupResponse),
    Parked(WaiterId),
}

impl Group {
    fn new(config: ClassicGroupConfig) -> Group {
        let shard =
            CoordinatorShard::new(StreamsGroupConfig::default(), 7).with_classic_groups(config);
        Group {
            shard: Runtime::new(shard, Volatile),
            now: 1_000_000,
            answers: Vec::new(),
        }
    }

    fn no_delay() -> Group {
        Group::new(ClassicGroupConfig {
            initial_rebalance_delay_ms: 0,
            ..Default::default()
        })
    }

    fn collect(&mut self) {
        if self.shard.core().has_classic_answers() {
            let taken = self.shard.run(|s| s.take_classic_answers()).unwrap();
            self.answers.extend(taken.response);
        }
    }

    fn join_request(
        member: &str,
        instance: Option<&str>,
        protocols: &[(&str, &str)],
    ) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: GROUP.into(),
            session_timeout_ms: SESSION,
            rebalance_timeout_ms: REBALANCE,
            member_id: member.into(),
            group_instance_id: instance.map(str::to_owned),
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|(name, meta)| JoinGroupRequestProtocol {
                    name: (*name).into(),
                    metadata: Bytes::from(meta.to_string()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn join_with(&mut self, req: &JoinGroupRequest, version: i16) -> Joined {
        let ctx = JoinContext {
            client_id: "client",
            client_host: "/127.0.0.1",
            api_version: version,
        };
        let now = self.now;
        let reply = self
            .shard
            .run(|s| s.classic_join(ctx, req, now))
            .unwrap()
            .response;
        // Whatever came due (a zero initial delay) fires, as the shard's timer task would.
        self.advance(0);
        match reply {
            Reply::Now(r) => Joined::Now(r),
            Reply::Parked(w) => Joined::Parked(w),
        }
    }

    fn join(&mut self, member: &str) -> Joined {
        self.join_with(&Self::join_request(member, None, &[("range", "m")]), 9)
    }

    /// A dynamic member's first join: MEMBER_ID_REQUIRED with its id, then the real join.
    fn new_member(&mut self) -> (String, WaiterId) {
        let Joined::Now(first) = self.join("") else {
            panic!("parked first join")
        };
        assert_eq!(first.error_code, ErrorCode::MEMBER_ID_REQUIRED.code());
        let id = first.member_id;
        match self.join(&id) {
            Joined::Parked(w) => (id, w),
            Joined::Now(r) => panic!("second join answered now: {r:?}"),
        }
    }

    fn join_answer(&mut self, waiter: WaiterId) -> Option<JoinGroupResponse> {
        let at = self.answers.iter().position(|(w, _)| *w == waiter)?;
        match self.answers.remove(at).1 {
            ClassicAnswer::Join(r) => Some(r),
            other => panic!("not a join answer: {other:?}"),
        }
    }

    fn sync_answer(&mut self, waiter: WaiterId) -> Option<SyncGroupResponse> {
        let at = self.answers.iter().position(|(w, _)| *w == waiter)?;
        match self.answers.remove(at).1 {
            ClassicAnswer::Sync(r) => Some(r),
            other => panic!("not a sync answer: {other:?}"),
        }
    }

    fn sync(
        &mut self,
        member: &str,
        generation: i32,
        assignments: &[(&str, &str)],
    ) -> Reply<SyncGroupResponse> {
        let req = SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id: generation,
            member_id: member.into(),
            assignments: assignments
                .iter()
                .map(|(m, a)| SyncGroupRequestAssignment {
                    member_id: (*m).into(),
                    assignment: Bytes::from(a.to_string()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let now = self.now;
        let reply = self
            .shard
            .run(|s| s.classic_sync(&req, now))
            .unwrap()
            .response;
        self.collect();
        reply
    }

    fn heartbeat(&mut self, member: &str, generation: i32) -> ErrorCode {
        let req = HeartbeatRequest {
            group_id: GROUP.into(),
            generation_id: generation,
            member_id: member.into(),
            ..Default::default()
        };
        let now = self.now;
        self.shard
            .run(|s| s.classic_heartbeat(&req, now))
            .unwrap()
            .response
    }

    fn advance(&mut self, ms: i64) {
        self.now += ms;
        let t = tick(&mut self.shard, self.now);
        assert!(t.diverged.is_none() && t.failures.is_empty(), "{t:?}");
        self.collect();
    }

    fn state(&self) -> ClassicGroupState {
        self.shard.core().classic_group(GROUP).expect("group").state
    }
}

#[test]
fn two_members_join_sync_and_get_the_leaders_assignment() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    // One member, no initial delay: the join completes at once, with `a` leading.
    let ja = g.join_answer(wa).expect("a joined");
    assert_eq!(
        (ja.generation_id, ja.leader.as_str(), ja.members.len()),
        (1, a.as_str(), 1)
    );
    assert_eq!(ja.protocol_name.as_deref(), Some("range"));
    let Reply::Parked(sa) = g.sync(&a, 1, &[(&a, "a-parts")]) else {
        panic!()
    };
    assert_eq!(
        g.sync_answer(sa).unwrap().assignment,
        Bytes::from("a-parts")
    );
    assert_eq!(g.state(), ClassicGroupState::Stable);

    // A second member: the group rebalances, waiting for `a` to rejoin.
    let (b, wb) = g.new_member();
    assert_eq!(g.state(), ClassicGroupState::PreparingRebalance);
    assert!(g.join_answer(wb).is_none());
    assert_eq!(g.heartbeat(&a, 1), ErrorCode::REBALANCE_IN_PROGRESS);
    let Joined::Parked(wa) = g.join(&a) else {
        panic!()
    };
    let (ja, jb) = (g.join_answer(wa).unwrap(), g.join_answer(wb).unwrap());
    assert_eq!((ja.generation_id, jb.generation_id), (2, 2));
    assert_eq!(ja.members.len(), 2, "the leader sees every member");
    assert!(jb.members.is_empty(), "a follower sees none");
    assert_eq!(g.state(), ClassicGroupState::CompletingRebalance);

    // The follower's SyncGroup waits for the leader's.
    let Reply::Parked(sb) = g.sync(&b, 2, &[]) else {
        panic!()
    };
    assert!(g.sync_answer(sb).is_none());
    let Reply::Parked(sa) = g.sync(&a, 2, &[(&a, "pa"), (&b, "pb")]) else {
        panic!()
    };
    assert_eq!(g.sync_answer(sb).unwrap().assignment, Bytes::from("pb"));
    assert_eq!(g.sync_answer(sa).unwrap().assignment, Bytes::from("pa"));
    assert_eq!(g.state(), ClassicGroupState::Stable);
    assert_eq!(g.heartbeat(&b, 2), ErrorCode::NONE);
    assert_eq!(g.heartbeat(&b, 1), ErrorCode::ILLEGAL_GENERATION);
    assert_eq!(g.heartbeat("nobody", 2), ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn the_initial_rebalance_delay_gathers_members_before_the_first_generation() {
    let mut g = Group::new(ClassicGroupConfig {
        initial_rebalance_delay_ms: 3_000,
        ..Default::default()
    });
    let (_, wa) = g.new_member();
    g.advance(2_000);
    let (_, wb) = g.new_member();
    // b joined during the delay: it is extended by another delay.
    g.advance(1_500);
    assert!(g.join_answer(wa).is_none());
    g.advance(3_000);
    let (ja, jb) = (g.join_answer(wa).unwrap(), g.join_answer(wb).unwrap());
    assert_eq!((ja.generation_id, jb.generation_id), (1, 1));
    assert_eq!(ja.members.len() + jb.members.len(), 2);
}

#[test]
fn a_member_that_does_not_rejoin_in_time_is_dropped_from_the_next_generation() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    g.join_answer(wa).unwrap();
    g.sync(&a, 1, &[]);
    let (b, wb) = g.new_member();
    // `a` never rejoins: after the rebalance timeout the generation goes on without it.
    g.advance(i64::from(REBALANCE));
    let jb = g
        .join_answer(wb)
        .expect("b's join completes on the timeout");
    assert_eq!(
        (jb.generation_id, jb.leader.as_str(), jb.members.len()),
        (2, b.as_str(), 1)
    );
    assert_eq!(g.heartbeat(&a, 2), ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn a_silent_member_expires_and_the_group_rebalances_without_it() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    g.join_answer(wa).unwrap();
    g.sync(&a, 1, &[]);
    g.advance(i64::from(SESSION) - 1);
    assert_eq!(g.heartbeat(&a, 1), ErrorCode::NONE);
    g.advance(i64::from(SESSION) - 1);
    assert_eq!(
        g.state(),
        ClassicGroupState::Stable,
        "the heartbeat pushed the session back"
    );
    g.advance(2);
    // Its only member gone, the group is empty at the next generation and written so.
    assert_eq!(g.state(), ClassicGroupState::Empty);
    let group = g.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(group.generation_id, 2);
    let stored = g.shard.core().state().classic_groups.get(GROUP).unwrap();
    assert!(stored.members.is_empty() && stored.generation == 2);
}

#[test]
fn a_pending_member_id_not_used_within_the_session_is_forgotten() {
    let mut g = Group::no_delay();
    let Joined::Now(first) = g.join("") else {
        panic!()
    };
    g.advance(i64::from(SESSION) + 1);
    let Joined::Now(again) = g.join(&first.member_id) else {
        panic!()
    };
    assert_eq!(again.error_code, ErrorCode::UNKNOWN_MEMBER_ID.code());
}

#[test]
fn a_static_member_that_restarts_takes_its_place_without_a_rebalance() {
    let mut g = Group::no_delay();
    let req = Group::join_request("", Some("instance-1"), &[("range", "m")]);
    let Joined::Parked(w) = g.join_with(&req, 9) else {
        panic!()
    };
    let first = g.join_answer(w).unwrap();
    g.sync(&first.member_id, 1, &[(&first.member_id, "parts")]);
    // The same instance joins with no member id: it replaces the old member, keeps its
    // assignment, and as the leader on v9 is told to skip the assignment.
    let Joined::Now(second) = g.join_with(&req, 9) else {
        panic!("a rebalance")
    };
    assert_ne!(second.member_id, first.member_id);
    assert!(second.skip_assignment);
    assert_eq!(second.generation_id, 1);
    assert_eq!(g.state(), ClassicGroupState::Stable);
    assert_eq!(
        g.heartbeat(&first.member_id, 1),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    let Reply::Now(synced) = g.sync(&second.member_id, 1, &[]) else {
        panic!()
    };
    assert_eq!(synced.assignment, Bytes::from("parts"));
    // The old member id, named with the instance id, is fenced.
    let hb = HeartbeatRequest {
        group_id: GROUP.into(),
        generation_id: 1,
        member_id: first.member_id.clone(),
        group_instance_id: Some("instance-1".into()),
        ..Default::default()
    };
    let now = g.now;
    let code = g
        .shard
        .run(|s| s.classic_heartbeat(&hb, now))
        .unwrap()
        .response;
    assert_eq!(code, ErrorCode::FENCED_INSTANCE_ID);
}

#[test]
fn leaving_members_trigger_a_rebalance_and_unknown_ones_are_answered_per_member() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    g.join_answer(wa).unwrap();
    g.sync(&a, 1, &[]);
    let leaving = [
        LeavingMember {
            member_id: a.clone(),
            group_instance_id: None,
        },
        LeavingMember {
            member_id: "ghost".into(),
            group_instance_id: None,
        },
    ];
    let now = g.now;
    let answers = g
        .shard
        .run(|s| s.classic_leave(GROUP, &leaving, now))
        .unwrap()
        .response
        .unwrap();
    let codes: Vec<i16> = answers.iter().map(|m| m.error_code).collect();
    assert_eq!(codes, vec![0, ErrorCode::UNKNOWN_MEMBER_ID.code()]);
    // The last member left: an empty generation.
    assert_eq!(g.state(), ClassicGroupState::Empty);
}

#[test]
fn protocols_must_overlap_and_the_group_size_is_bounded() {
    for max_size in [1, i32::MAX] {
        let mut g = Group::new(ClassicGroupConfig {
            initial_rebalance_delay_ms: 0,
            max_size,
            ..Default::default()
        });
        let (a, wa) = g.new_member();
        g.join_answer(wa).unwrap();
        g.sync(&a, 1, &[]);
        let other = Group::join_request("", None, &[("roundrobin", "m")]);
        let Joined::Now(r) = g.join_with(&other, 9) else {
            panic!()
        };
        // The size is checked first (Kafka's `acceptJoiningMember`), then the protocols.
        let expected = if max_size == 1 {
            ErrorCode::GROUP_MAX_SIZE_REACHED
        } else {
            ErrorCode::INCONSISTENT_GROUP_PROTOCOL
        };
        assert_eq!(r.error_code, expected.code(), "max size {max_size}");
        assert_eq!(g.state(), ClassicGroupState::Stable);
    }
}

#[test]
fn offset_commits_check_the_member_and_generation() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    g.join_answer(wa).unwrap();
    let offsets = [OffsetToCommit {
        topic: "t".into(),
        partition: 0,
        offset: 5,
        topic_id: uuid::Uuid::nil(),
        leader_epoch: -1,
        metadata: None,
    }];
    let commit = |g: &mut Group, member: &str, generation: i32| {
        let who = CommitMember {
            member_id: member,
            group_instance_id: None,
            generation_or_epoch: generation,
        };
        let now = g.now;
        g.shard
            .run(|s| s.commit_offsets_of(&who, GROUP, 8, &offsets, now))
            .unwrap()
            .response
            .map_err(|e| e.code)
    };
    assert_eq!(
        commit(&mut g, &a, 1),
        Err(ErrorCode::REBALANCE_IN_PROGRESS),
        "before the sync"
    );
    g.sync(&a, 1, &[]);
    assert_eq!(commit(&mut g, &a, 0), Err(ErrorCode::ILLEGAL_GENERATION));
    assert_eq!(
        commit(&mut g, "ghost", 1),
        Err(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    assert_eq!(
        commit(&mut g, "", -1),
        Err(ErrorCode::UNKNOWN_MEMBER_ID),
        "an admin commit while it has members"
    );
    assert_eq!(commit(&mut g, &a, 1), Ok(vec![ErrorCode::NONE]));
}

#[test]
fn a_reload_brings_back_the_last_written_generation_with_fresh_sessions() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    g.join_answer(wa).unwrap();
    g.sync(&a, 1, &[(&a, "parts")]);
    let replayed = ReplayedLog::keeping_records(g.shard.core().store().log()).unwrap();
    let reloaded = g.shard.core().reloaded(replayed, g.now);
    g.shard.replace_core(reloaded);
    let group = g.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(
        (group.state, group.generation_id),
        (ClassicGroupState::Stable, 1)
    );
    assert_eq!(group.member(&a).unwrap().assignment, Bytes::from("parts"));
    assert_eq!(g.heartbeat(&a, 1), ErrorCode::NONE);
    // Its session was started afresh at the reload: silence expires it.
    g.advance(i64::from(SESSION) + 1);
    assert_eq!(g.state(), ClassicGroupState::Empty);
}

/// A consumer's subscription to `topics` as Kafka's `ConsumerProtocol` writes it (version 0:
/// the topics, then no user data).
fn subscription(topics: &[&str]) -> Vec<u8> {
    let mut b = 0i16.to_be_bytes().to_vec();
    b.extend((topics.len() as i32).to_be_bytes());
    for t in topics {
        b.extend((t.len() as i16).to_be_bytes());
        b.extend(t.as_bytes());
    }
    b.extend((-1i32).to_be_bytes());
    b
}

#[test]
fn offset_delete_refuses_the_topics_a_consumer_group_subscribes_to_until_it_is_empty() {
    let mut g = Group::no_delay();
    let mut req = Group::join_request("", None, &[]);
    req.protocols = vec![JoinGroupRequestProtocol {
        name: "range".into(),
        metadata: Bytes::from(subscription(&["t"])),
        ..Default::default()
    }];
    let Joined::Now(first) = g.join_with(&req, 9) else {
        panic!("parked first join")
    };
    req.member_id = first.member_id.clone();
    let Joined::Parked(wa) = g.join_with(&req, 9) else {
        panic!("answered now")
    };
    g.join_answer(wa).unwrap();
    let a = first.member_id;
    let delete = |g: &mut Group| {
        let topics = [("t".to_string(), vec![0]), ("other".to_string(), vec![0])];
        let codes = g
            .shard
            .run(|s| s.delete_offsets(GROUP, &topics))
            .unwrap()
            .response;
        codes.map_err(|e| e.code)
    };
    // A classic group with no committed offset exists all the same (Kafka's group lookup).
    assert_eq!(
        delete(&mut g),
        Ok(vec![
            vec![ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC],
            vec![ErrorCode::NONE]
        ])
    );
    g.sync(&a, 1, &[]);
    assert_eq!(
        delete(&mut g).unwrap()[0],
        vec![ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC]
    );
    // The subscription survives a reload (Kafka computes it when it loads the group).
    let replayed = ReplayedLog::keeping_records(g.shard.core().store().log()).unwrap();
    let reloaded = g.shard.core().reloaded(replayed, g.now);
    g.shard.replace_core(reloaded);
    assert_eq!(
        delete(&mut g).unwrap()[0],
        vec![ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC]
    );
    let leaving = [LeavingMember {
        member_id: a.clone(),
        group_instance_id: None,
    }];
    let now = g.now;
    g.shard
        .run(|s| s.classic_leave(GROUP, &leaving, now))
        .unwrap();
    assert_eq!(g.state(), ClassicGroupState::Empty);
    assert_eq!(delete(&mut g).unwrap()[0], vec![ErrorCode::NONE]);
}

/// Found by the simulation (`seeded_group_runs_keep_every_invariant`, seed 32): a group whose
/// last members expired while a new member's id was pending (handed out with
/// MEMBER_ID_REQUIRED) waits in PreparingRebalance with no member; the new member's JoinGroup
/// was refused INCONSISTENT_GROUP_PROTOCOL, fatal to Kafka's consumer, because no protocol was
/// supported by "every member" of none. Kafka counts (`supportedProtocols.get(name) ==
/// numMembers()`, 0 == 0): it joins.
#[test]
fn a_pending_member_joins_a_group_whose_members_all_expired() {
    let mut g = Group::no_delay();
    let (a, wa) = g.new_member();
    g.join_answer(wa).unwrap();
    g.sync(&a, 1, &[(&a, "parts")]);
    g.advance(i64::from(SESSION) - 100);
    let Joined::Now(first) = g.join("") else {
        panic!("parked first join")
    };
    assert_eq!(first.error_code, ErrorCode::MEMBER_ID_REQUIRED.code());
    // `a` expires; `b`'s id is still pending, so the join phase waits for it.
    g.advance(101);
    let group = g.shard.core().classic_group(GROUP).unwrap();
    assert_eq!(
        (group.state, group.members.len()),
        (ClassicGroupState::PreparingRebalance, 0)
    );
    let b = first.member_id;
    let answer = match g.join(&b) {
        Joined::Now(r) => r,
        Joined::Parked(w) => g.join_answer(w).expect("the join phase completes"),
    };
    assert_eq!(answer.error_code, ErrorCode::NONE.code(), "{answer:?}");
    assert_eq!(
        (answer.generation_id, answer.leader.as_str()),
        (2, b.as_str())
    );
}

/// A member's metadata and assignment are copies: a decoded request's `Bytes` share the
/// connection's read buffer, which a member kept for its lifetime would pin.
#[test]
fn a_member_keeps_copies_not_slices_of_the_requests_buffers() {
    let mut g = Group::no_delay();
    let Joined::Now(first) = g.join("") else {
        panic!("parked first join")
    };
    let id = first.member_id;
    let buffer = Bytes::from(vec![7u8; 4096]);
    let mut req = Group::join_request(&id, None, &[("range", "m")]);
    req.protocols[0].metadata = buffer.slice(100..110);
    let Joined::Parked(w) = g.join_with(&req, 9) else {
        panic!("the join was answered at once")
    };
    let generation = g.join_answer(w).expect("joined").generation_id;
    let request_assignment = Bytes::from(vec![9u8; 4096]);
    let sync = SyncGroupRequest {
        group_id: GROUP.into(),
        generation_id: generation,
        member_id: id.clone(),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: id.clone(),
            assignment: request_assignment.slice(0..8),
            ..Default::default()
        }],
        ..Default::default()
    };
    let now = g.now;
    g.shard.run(|s| s.classic_sync(&sync, now)).unwrap();
    let member = g
        .shard
        .core()
        .classic_group(GROUP)
        .unwrap()
        .member(&id)
        .unwrap();
    let within = |b: &Bytes, of: &Bytes| of.as_ptr_range().contains(&b.as_ptr());
    let metadata = member.metadata("range").unwrap();
    assert_eq!(metadata.as_ref(), &[7u8; 10]);
    assert!(!within(metadata, &buffer), "the metadata pins the request");
    assert!(
        !within(&member.assignment, &request_assignment),
        "the assignment pins the request"
    );
}
