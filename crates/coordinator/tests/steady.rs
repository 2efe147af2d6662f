//! The steady-state heartbeat path (`src/steady.rs`) must answer exactly as the full path:
//! two shards, one with the short path turned off, go through the same operations and must
//! give the same answers and reach the same state and timers.
mod support;

use kcoord_coordinator::{CoordinatorShard, HeartbeatContext, StreamsGroupConfig};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    Endpoint, StreamsGroupHeartbeatRequest, TaskIds,
};
use proptest::prelude::*;
use support::*;

/// The same shard twice: `fast` takes the steady path, `full` never does.
struct Twins {
    fast: Harness,
    full: Harness,
}

impl Twins {
    fn new(config: StreamsGroupConfig) -> Twins {
        let fast = Harness::new(config.clone());
        let full = Harness::with_shard(CoordinatorShard::new(config, 7).with_steady_path(false));
        Twins { fast, full }
    }

    fn create_topic(&mut self, name: &str, partitions: i32) {
        self.fast.create_topic(name, partitions);
        self.full.create_topic(name, partitions);
    }

    fn advance(&mut self, ms: i64) {
        self.fast.advance(ms);
        self.full.advance(ms);
    }

    /// Sends `req` to both and checks that answers, state and next deadline agree.
    fn heartbeat(
        &mut self,
        req: &StreamsGroupHeartbeatRequest,
        client_id: &str,
    ) -> Result<
        kcoord_wire::messages::streams_group_heartbeat_response::StreamsGroupHeartbeatResponse,
        String,
    > {
        let ctx = HeartbeatContext {
            client_id,
            client_host: "/127.0.0.1",
            api_version: 2,
        };
        let mut answers = [&mut self.fast, &mut self.full].map(|h| {
            h.run(|s, now| s.streams_group_heartbeat(&ctx, req, now))
                .map_err(|e| format!("{e:?}"))
                .map(|r| {
                    (
                        format!("{:?}", r.internal_topics_to_create),
                        r.topology_description_id,
                        r.response,
                    )
                })
        });
        assert_eq!(
            answers[0], answers[1],
            "the steady path answered differently for {req:?}"
        );
        assert_eq!(self.fast.shard.state(), self.full.shard.state());
        assert_eq!(
            self.fast.shard.next_deadline(),
            self.full.shard.next_deadline()
        );
        let [fast, _] = &mut answers;
        std::mem::replace(fast, Err(String::new())).map(|(_, _, response)| response)
    }
}

fn without_owned_tasks(mut req: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatRequest {
    req.active_tasks = None;
    req.standby_tasks = None;
    req.warmup_tasks = None;
    req
}

#[test]
fn steady_heartbeats_take_the_short_path_and_answer_as_the_full_path() {
    let mut t = Twins::new(config());
    t.create_topic("input", 6);
    let mut members: Vec<Member> = (0..3)
        .map(|i| Member::new(&format!("m{i}"), "p", simple_topology(1)))
        .collect();
    for _ in 0..4 {
        for m in members.iter_mut() {
            let response = t.heartbeat(&m.request(), "client").unwrap();
            m.adopt(&response);
        }
    }
    assert_eq!(t.fast.shard.steady_hits(), 3, "the last round was steady");
    let before = t.fast.shard.steady_hits();
    for round in 0..10 {
        for m in members.iter_mut() {
            // As Kafka's Java client sends it: owned tasks only when they changed.
            let req = if round % 2 == 0 {
                without_owned_tasks(m.request())
            } else {
                m.request()
            };
            let response = t.heartbeat(&req, "client").unwrap();
            assert_eq!(response.active_tasks, None);
            m.adopt(&response);
        }
        t.advance(1_000);
    }
    assert_eq!(t.fast.shard.steady_hits() - before, 30);
    assert_eq!(t.full.shard.steady_hits(), 0);
    // Anything that changes the member goes the full way (and is answered alike).
    let mut req = without_owned_tasks(members[0].request());
    req.user_endpoint = Some(Endpoint {
        host: "h".into(),
        port: 1,
        ..Default::default()
    });
    t.heartbeat(&req, "client").unwrap();
    let hits = t.fast.shard.steady_hits();
    t.heartbeat(&without_owned_tasks(members[1].request()), "another-client")
        .unwrap();
    let mut bad = members[2].request();
    bad.active_tasks = Some(vec![TaskIds {
        subtopology_id: "nope".into(),
        partitions: vec![0],
        ..Default::default()
    }]);
    assert!(t.heartbeat(&bad, "client").is_err());
    assert_eq!(t.fast.shard.steady_hits(), hits);
}

#[derive(Debug, Clone)]
enum Op {
    Beat { member: usize, owned: bool },
    OtherClient(usize),
    StaleEndpointEpoch(usize),
    Endpoint(usize, u16),
    Rack(usize),
    Process(usize),
    Rejoin(usize),
    Leave(usize),
    Advance(i64),
    CreateTopic(i32),
    Upgrade(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        24 => (0usize..4, any::<bool>()).prop_map(|(member, owned)| Op::Beat { member, owned }),
        1 => (0usize..4).prop_map(Op::OtherClient),
        1 => (0usize..4).prop_map(Op::StaleEndpointEpoch),
        1 => (0usize..4, 1u16..3).prop_map(|(m, p)| Op::Endpoint(m, p)),
        1 => (0usize..4).prop_map(Op::Rack),
        1 => (0usize..4).prop_map(Op::Process),
        1 => (0usize..4).prop_map(Op::Rejoin),
        1 => (0usize..4).prop_map(Op::Leave),
        8 => (0i64..2_000).prop_map(Op::Advance),
        1 => (0i64..60_000).prop_map(Op::Advance),
        1 => (1i32..8).prop_map(Op::CreateTopic),
        1 => (0usize..4).prop_map(Op::Upgrade),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Whatever the members do, the shard with the steady path gives the same answers and
    /// reaches the same state as the shard without it.
    #[test]
    fn the_steady_path_never_answers_differently_from_the_full_path(
        partitions in proptest::option::weighted(0.9, 1i32..8),
        // A shutdown request lasts until the group is empty, so it comes in few runs.
        shutdown_at in proptest::option::weighted(0.2, 0usize..160),
        // So does a member that upgrades alone: the others stay behind (STALE_TOPOLOGY).
        lone_upgrade_at in proptest::option::weighted(0.2, 0usize..160),
        ops in proptest::collection::vec(op(), 1..160),
    ) {
        let mut t = Twins::new(StreamsGroupConfig { initial_rebalance_delay_ms: 1_000, assignment_interval_ms: 500, ..Default::default() });
        let mut members: Vec<Member> = (0..4).map(|i| Member::new(&format!("m{i}"), &format!("p{}", i % 2), simple_topology(1))).collect();
        // Mostly a catalog that can serve the topology, so that groups settle.
        let mut topics = 0;
        if let Some(n) = partitions {
            t.create_topic("input", n);
            topics += 1;
        }
        let reset = |m: &mut Member| { m.epoch = 0; m.active.clear(); m.standby.clear(); };
        for (n, op) in ops.into_iter().enumerate() {
            let (i, mut req, client) = match &op {
                Op::Beat { member, owned } => {
                    let req = members[*member].request();
                    (*member, if *owned { req } else { without_owned_tasks(req) }, 0)
                }
                Op::OtherClient(i) => (*i, without_owned_tasks(members[*i].request()), 1u8),
                Op::StaleEndpointEpoch(i) => {
                    let mut req = without_owned_tasks(members[*i].request());
                    req.endpoint_information_epoch = -1;
                    (*i, req, 0)
                }
                Op::Endpoint(i, port) => {
                    let mut req = without_owned_tasks(members[*i].request());
                    req.user_endpoint = Some(Endpoint { host: "host".into(), port: *port, ..Default::default() });
                    (*i, req, 0)
                }
                Op::Rack(i) => {
                    let mut req = without_owned_tasks(members[*i].request());
                    req.rack_id = Some("rack".into());
                    (*i, req, 0)
                }
                Op::Process(i) => {
                    members[*i].process = format!("{}-moved", members[*i].process);
                    (*i, without_owned_tasks(members[*i].request()), 0)
                }
                Op::Rejoin(i) => { reset(&mut members[*i]); (*i, members[*i].request(), 0) }
                Op::Leave(i) => {
                    let mut req = members[*i].request();
                    req.member_epoch = -1;
                    (*i, req, 0)
                }
                Op::Advance(ms) => { t.advance(*ms); continue; }
                Op::CreateTopic(n) => {
                    if topics == 0 { t.create_topic("input", *n); topics += 1; }
                    continue;
                }
                // A rolling upgrade: member `i` rejoins with the new topology first, the others
                // at their next heartbeat.
                Op::Upgrade(i) => {
                    let epoch = members[*i].topology.epoch + 1;
                    for m in members.iter_mut() {
                        m.topology = simple_topology(epoch);
                        reset(m);
                    }
                    (*i, members[*i].request(), 0)
                }
            };
            req.shutdown_application = shutdown_at == Some(n);
            if lone_upgrade_at == Some(n) {
                members[i].topology = simple_topology(members[i].topology.epoch + 1);
                reset(&mut members[i]);
                req = members[i].request();
            }
            if let Some(last) = &members[i].last {
                if !matches!(op, Op::StaleEndpointEpoch(_)) {
                    req.endpoint_information_epoch = last.endpoint_information_epoch;
                }
            }
            match t.heartbeat(&req, if client == 0 { "client" } else { "other" }) {
                Ok(r) if req.member_epoch >= 0 => members[i].adopt(&r),
                _ => reset(&mut members[i]),
            }
        }
    }
}
