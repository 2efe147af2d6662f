//! Shared harness of the coordinator scenario tests: a shard, a topic catalog, a fake clock and
//! simulated Streams members.
#![allow(dead_code)]
use std::collections::{BTreeMap, BTreeSet};

use std::sync::Arc;

use kcoord_coordinator::{
    group_state, CoordinatorError, CoordinatorShard, Effect, GroupState, HeartbeatContext,
    HeartbeatResult, Outcome, StreamsGroupConfig,
};
use kcoord_metadata::{Record, Store};
use kcoord_runtime::{Runtime, Volatile};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    StreamsGroupHeartbeatRequest, Subtopology, TaskIds, TopicInfo, Topology,
};
use kcoord_wire::messages::streams_group_heartbeat_response::StreamsGroupHeartbeatResponse;
use kcoord_wire::records::{PartitionRecord, TopicRecord};

pub const GROUP: &str = "app";

pub fn config() -> StreamsGroupConfig {
    StreamsGroupConfig {
        initial_rebalance_delay_ms: 0,
        assignment_interval_ms: 0,
        ..Default::default()
    }
}

/// A coordinator shard on an in-memory runtime, a topic catalog and a clock.
pub struct Harness {
    pub shard: Runtime<CoordinatorShard, Volatile>,
    pub catalog: Store,
    pub now: i64,
    pub next_topic: u128,
}

impl Harness {
    pub fn new(config: StreamsGroupConfig) -> Harness {
        Harness::with_shard(CoordinatorShard::new(config, 7))
    }

    /// A harness around `shard` (configured before it runs).
    pub fn with_shard(shard: CoordinatorShard) -> Harness {
        Harness {
            shard: Runtime::new(shard, Volatile),
            catalog: Store::new(),
            now: 1_000_000,
            next_topic: 1,
        }
    }

    pub fn create_topic(&mut self, name: &str, partitions: i32) {
        let id = uuid::Uuid::from_u128(self.next_topic);
        self.next_topic += 1;
        let mut records = vec![Record::Topic(TopicRecord {
            name: name.into(),
            topic_id: id,
            ..Default::default()
        })];
        for p in 0..partitions {
            records.push(Record::Partition(PartitionRecord {
                partition_id: p,
                topic_id: id,
                leader: 1,
                replicas: vec![1],
                isr: vec![1],
                ..Default::default()
            }));
        }
        self.catalog.append(records).unwrap();
        self.publish_topics();
    }

    /// Gives the shard the catalog's topics, as the controller does after a change.
    pub fn publish_topics(&mut self) {
        let topics = Arc::new(self.catalog.state().topics.clone());
        self.shard.run(|s| s.topics_changed(topics)).unwrap();
    }

    /// Runs a handler on the shard and commits its outcome: its answer, or the error a client
    /// gets when the runtime refused it.
    pub fn run<R>(
        &mut self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> Outcome<Result<R, CoordinatorError>>,
    ) -> Result<R, CoordinatorError> {
        let now = self.now;
        match self
            .shard
            .run(|s| kcoord_coordinator::timeline::stamped(handler(s, now), now))
        {
            Ok(done) => done.response,
            Err(refused) => Err(CoordinatorError::not_committed(&refused.error)),
        }
    }

    /// Starts the periodic search for expired offsets, as the daemon does once a shard loaded.
    pub fn start_offset_expiry(&mut self) {
        self.run(|s, now| s.start_offset_expiry(now).map(Ok))
            .unwrap();
    }

    /// Applies an input to the shard.
    pub fn input(&mut self, effect: Effect) {
        self.shard.input(effect);
    }

    pub fn heartbeat_v(
        &mut self,
        req: &StreamsGroupHeartbeatRequest,
        version: i16,
    ) -> Result<HeartbeatResult, kcoord_coordinator::CoordinatorError> {
        let ctx = HeartbeatContext {
            client_id: "client",
            client_host: "/127.0.0.1",
            api_version: version,
        };
        self.run(|s, now| s.streams_group_heartbeat(&ctx, req, now))
    }

    pub fn heartbeat(
        &mut self,
        req: &StreamsGroupHeartbeatRequest,
    ) -> Result<HeartbeatResult, kcoord_coordinator::CoordinatorError> {
        self.heartbeat_v(req, 1)
    }

    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        self.tick();
    }

    /// Runs what is due now; panics if a job failed.
    pub fn tick(&mut self) -> Vec<kcoord_coordinator::TickEvent> {
        let tick = kcoord_coordinator::tick(&mut self.shard, self.now);
        assert!(
            tick.failures.is_empty() && tick.diverged.is_none(),
            "{tick:?}"
        );
        tick.events
    }

    pub fn assert_replay_matches(&self) {
        let replayed = Store::replay_log(self.shard.store().log()).unwrap();
        assert_eq!(
            replayed.state(),
            self.shard.state(),
            "replaying the log must rebuild the live state"
        );
    }
}

pub fn simple_topology(epoch: i32) -> Topology {
    Topology {
        epoch,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec!["input".into()],
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn stateful_topology(epoch: i32) -> Topology {
    Topology {
        epoch,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec!["input".into()],
            state_changelog_topics: vec![TopicInfo {
                name: "app-store-changelog".into(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A simulated Streams client: it adopts every assignment it is sent and reports what it owns.
#[derive(Clone)]
pub struct Member {
    pub id: String,
    pub process: String,
    pub instance: Option<String>,
    pub epoch: i32,
    pub active: BTreeMap<String, BTreeSet<i32>>,
    pub standby: BTreeMap<String, BTreeSet<i32>>,
    pub topology: Topology,
    pub last: Option<StreamsGroupHeartbeatResponse>,
}

impl Member {
    pub fn new(id: &str, process: &str, topology: Topology) -> Member {
        Member {
            id: id.into(),
            process: process.into(),
            instance: None,
            epoch: 0,
            active: BTreeMap::new(),
            standby: BTreeMap::new(),
            topology,
            last: None,
        }
    }

    pub fn request(&self) -> StreamsGroupHeartbeatRequest {
        let ids = |t: &BTreeMap<String, BTreeSet<i32>>| {
            t.iter()
                .map(|(s, p)| TaskIds {
                    subtopology_id: s.clone(),
                    partitions: p.iter().copied().collect(),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
        };
        let joining = self.epoch == 0;
        StreamsGroupHeartbeatRequest {
            group_id: GROUP.into(),
            member_id: self.id.clone(),
            member_epoch: self.epoch,
            instance_id: self.instance.clone(),
            rebalance_timeout_ms: if joining { 30_000 } else { -1 },
            topology: joining.then(|| self.topology.clone()),
            process_id: Some(self.process.clone()),
            active_tasks: Some(ids(&self.active)),
            standby_tasks: Some(ids(&self.standby)),
            warmup_tasks: Some(vec![]),
            ..Default::default()
        }
    }

    pub fn adopt(&mut self, r: &StreamsGroupHeartbeatResponse) {
        self.epoch = r.member_epoch;
        let to_map = |t: &Vec<kcoord_wire::messages::streams_group_heartbeat_response::TaskIds>| {
            t.iter()
                .filter(|x| !x.partitions.is_empty())
                .map(|x| {
                    (
                        x.subtopology_id.clone(),
                        x.partitions.iter().copied().collect(),
                    )
                })
                .collect()
        };
        if let Some(a) = &r.active_tasks {
            self.active = to_map(a);
        }
        if let Some(s) = &r.standby_tasks {
            self.standby = to_map(s);
        }
        self.last = Some(r.clone());
    }

    pub fn beat(&mut self, h: &mut Harness) -> HeartbeatResult {
        let result = h
            .heartbeat(&self.request())
            .unwrap_or_else(|e| panic!("{} heartbeat failed: {e}", self.id));
        self.adopt(&result.response);
        result
    }

    pub fn active_count(&self) -> usize {
        self.active.values().map(BTreeSet::len).sum()
    }

    pub fn statuses(&self) -> Vec<i8> {
        self.last
            .as_ref()
            .and_then(|r| r.status.as_ref())
            .map(|s| s.iter().map(|x| x.status_code).collect())
            .unwrap_or_default()
    }
}

/// Heartbeats every member in turn until the group is stable (bounded).
pub fn converge(h: &mut Harness, members: &mut [Member]) {
    for _ in 0..20 {
        for m in members.iter_mut() {
            m.beat(h);
        }
        let g = h.shard.group(GROUP).unwrap();
        if group_state(g) == GroupState::Stable
            && members.iter().all(|m| m.epoch == g.target_assignment_epoch)
        {
            return;
        }
    }
    panic!(
        "the group did not become stable: {:?}",
        group_state(h.shard.group(GROUP).unwrap())
    );
}

pub fn assert_complete_and_disjoint(members: &[Member], subtopology: &str, tasks: i32) {
    let mut seen = BTreeSet::new();
    for m in members {
        for p in m.active.get(subtopology).into_iter().flatten() {
            assert!(
                seen.insert(*p),
                "task {subtopology}:{p} is active on two members"
            );
        }
    }
    assert_eq!(seen, (0..tasks).collect::<BTreeSet<_>>());
}
