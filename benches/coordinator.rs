//! The coordinator's share of the heartbeat benchmarks, without sockets, tasks or the noisy
//! machine in the way: one sans-IO `CoordinatorShard` driven by its runtime (`kcoord_runtime`,
//! in memory), as the daemon drives it under the shard's lock. One JSON line.
//!
//! ```text
//! cargo bench --bench coordinator                              # 1,000 groups x 10 members
//! cargo bench --bench coordinator -- --groups 5000 --heartbeats 2000000
//! cargo bench --bench coordinator -- --protocol consumer      # KIP-848 consumer members
//! ```
//!
//! `--groups G` (1000) groups of `--members M` (10) members, each group with one stateless
//! subtopology on a topic of `--partitions N` (10) partitions, join one shard (initial
//! rebalance delay and assignment interval 0) and heartbeat until every group is Stable. Then
//! `--heartbeats H` (1,000,000) steady-state heartbeats go round-robin over all members, the
//! clock advancing 1 ms every `G*M/100` heartbeats (so the members' session deadlines spread
//! as in a real run), twice: as Kafka's Java client sends them (owned tasks null), then with
//! the owned tasks listed. Each must be accepted with no change; after each, the shard's next
//! deadline is asked for twice, as the daemon's shard task does. Reported: ns and heap
//! allocations per heartbeat (a counting global allocator), and, after the setup, the live heap
//! per member and how it splits between the group state (measured by cloning it), the encoded
//! metadata log (key and value bytes plus the per-record struct), the rebalance timelines
//! (rebuilt from the log, as a load rebuilds them) and the rest (timers, soft state, allocator
//! slack, what the live timelines hold beyond the rebuilt ones, and what the clone shares with
//! the state instead of copying: the tasks a member and its target hold once).
//!
//! With `--protocol consumer` the members are KIP-848 consumers subscribed to the topic, and
//! only the join and the live heap are measured (`coordinator/consumers.rs`).
//!
//! The shard's heartbeat is one of several costs of a heartbeat in the daemon (decode,
//! channel hop to the shard task, encode, socket write); `load --api heartbeat` measures the
//! whole. Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke
//! configuration (20 groups, 5,000 heartbeats).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use kcoord_coordinator::{
    group_state, CoordinatorShard, GroupState, HeartbeatContext, HeartbeatResult,
    StreamsGroupConfig,
};
use kcoord_metadata::{Record, Store};
use kcoord_runtime::{Runtime, Volatile};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    StreamsGroupHeartbeatRequest, Subtopology, TaskIds, Topology,
};
use kcoord_wire::messages::streams_group_heartbeat_response::StreamsGroupHeartbeatResponse;
use kcoord_wire::records::{PartitionRecord, TopicRecord};

/// Counts allocations and live bytes.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TOPIC: &str = "bench-source";

#[path = "coordinator/consumers.rs"]
mod consumers;

struct Settings {
    groups: usize,
    members: usize,
    partitions: i32,
    heartbeats: u64,
    /// `--protocol consumer`: KIP-848 consumer group members instead of streams members.
    consumer: bool,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut s = if bench {
        Settings {
            groups: 1000,
            members: 10,
            partitions: 10,
            heartbeats: 1_000_000,
            consumer: false,
        }
    } else {
        Settings {
            groups: 20,
            members: 10,
            partitions: 10,
            heartbeats: 5_000,
            consumer: false,
        }
    };
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        if name == "--protocol" {
            s.consumer = match args.get(i + 1).map(String::as_str) {
                Some("consumer") => true,
                Some("streams") => false,
                other => return Err(format!("--protocol is streams or consumer, not {other:?}")),
            };
            i += 2;
            continue;
        }
        let value = args
            .get(i + 1)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|v| *v > 0);
        let need = || value.ok_or_else(|| format!("{name} needs a positive number"));
        match name {
            "--groups" => s.groups = need()? as usize,
            "--members" => s.members = need()? as usize,
            "--partitions" => s.partitions = i32::try_from(need()?).map_err(|e| e.to_string())?,
            "--heartbeats" => s.heartbeats = need()?,
            _ => {
                if bench && name != "--bench" {
                    return Err(format!("unknown argument {name:?}"));
                }
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Ok(s)
}

/// A simulated member: adopts whatever it is sent, reports its owned tasks when they changed.
struct Member {
    group: String,
    id: String,
    process: String,
    epoch: i32,
    active: BTreeMap<String, BTreeSet<i32>>,
    changed: bool,
}

impl Member {
    fn request(&self, topology: &Topology, always_owned: bool) -> StreamsGroupHeartbeatRequest {
        let joining = self.epoch == 0;
        let owned = joining || self.changed || always_owned;
        let ids = || {
            self.active
                .iter()
                .map(|(s, p)| TaskIds {
                    subtopology_id: s.clone(),
                    partitions: p.iter().copied().collect(),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
        };
        StreamsGroupHeartbeatRequest {
            group_id: self.group.clone(),
            member_id: self.id.clone(),
            member_epoch: self.epoch,
            rebalance_timeout_ms: if joining { 300_000 } else { -1 },
            topology: joining.then(|| topology.clone()),
            process_id: joining.then(|| self.process.clone()),
            active_tasks: owned.then(ids),
            standby_tasks: owned.then(Vec::new),
            warmup_tasks: owned.then(Vec::new),
            ..Default::default()
        }
    }

    /// Adopts the response; true when the assignment changed.
    fn adopt(&mut self, r: &StreamsGroupHeartbeatResponse) -> bool {
        self.epoch = r.member_epoch;
        self.changed = false;
        if let Some(a) = &r.active_tasks {
            let new: BTreeMap<String, BTreeSet<i32>> = a
                .iter()
                .filter(|x| !x.partitions.is_empty())
                .map(|x| {
                    (
                        x.subtopology_id.clone(),
                        x.partitions.iter().copied().collect(),
                    )
                })
                .collect();
            if new != self.active {
                self.active = new;
                self.changed = true;
            }
        }
        self.changed
    }
}

/// One heartbeat through the shard's runtime, as the daemon runs it (minus the lock and the
/// durable log).
fn heartbeat(
    shard: &mut Runtime<CoordinatorShard, Volatile>,
    ctx: &HeartbeatContext,
    request: &StreamsGroupHeartbeatRequest,
    now: i64,
) -> Result<HeartbeatResult, String> {
    let done = shard
        .run(|s| s.streams_group_heartbeat(ctx, request, now))
        .map_err(|refused| refused.error.to_string())?;
    done.response.map_err(|e| e.to_string())
}

fn json_f(x: f64) -> String {
    format!("{x:.1}")
}

fn run(s: &Settings) -> Result<String, String> {
    let config = StreamsGroupConfig {
        initial_rebalance_delay_ms: 0,
        assignment_interval_ms: 0,
        ..Default::default()
    };
    // As for streams groups, targets are computed at once (no assignment interval).
    let consumer = kcoord_coordinator::consumer::ConsumerGroupConfig {
        assignment_interval_ms: 0,
        ..Default::default()
    };
    let shard = CoordinatorShard::new(config, 7).with_consumer_config(consumer);
    let mut shard = Runtime::new(shard, Volatile);
    let mut catalog = Store::new();
    let topic_id = uuid::Uuid::from_u128(1);
    let mut records = vec![Record::Topic(TopicRecord {
        name: TOPIC.into(),
        topic_id,
        ..Default::default()
    })];
    for p in 0..s.partitions {
        records.push(Record::Partition(PartitionRecord {
            partition_id: p,
            topic_id,
            leader: 1,
            replicas: vec![1],
            isr: vec![1],
            ..Default::default()
        }));
    }
    catalog.append(records).map_err(|e| e.to_string())?;
    let topics = Arc::new(catalog.state().topics.clone());
    shard
        .run(|s| s.topics_changed(topics))
        .map_err(|e| e.error.to_string())?;
    if s.consumer {
        return consumers::run(s, shard);
    }
    let topology = Topology {
        epoch: 0,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec![TOPIC.into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ctx = HeartbeatContext {
        client_id: "kcoord-bench",
        client_host: "/127.0.0.1",
        api_version: 2,
    };
    let mut now: i64 = 1_000_000;

    let live_before = LIVE.load(Ordering::Relaxed);
    let mut members: Vec<Member> = (0..s.groups * s.members)
        .map(|i| Member {
            group: format!("bench-{:05}", i / s.members),
            // As Kafka Streams makes them: a UUID in Kafka's 22-character base64 form.
            id: kcoord_wire::kafka_uuid(&uuid::Uuid::from_u128(1_000_000 + i as u128)),
            process: uuid::Uuid::from_u128(2_000_000 + i as u128).to_string(),
            epoch: 0,
            active: BTreeMap::new(),
            changed: false,
        })
        .collect();
    let members_heap = LIVE.load(Ordering::Relaxed) - live_before;
    let live_start = LIVE.load(Ordering::Relaxed);

    // Join and converge, in passes.
    let mut passes = 0;
    loop {
        passes += 1;
        if passes > 50 {
            return Err("the groups did not converge in 50 passes".into());
        }
        for m in members.iter_mut() {
            let result = heartbeat(&mut shard, &ctx, &m.request(&topology, false), now)
                .map_err(|e| format!("{} in {}: {e}", m.id, m.group))?;
            m.adopt(&result.response);
        }
        now += 1;
        let stable = (0..s.groups).all(|g| {
            let group = shard.group(&members[g * s.members].group);
            group.is_some_and(|g| group_state(g) == GroupState::Stable)
                && members[g * s.members..(g + 1) * s.members]
                    .iter()
                    .all(|m| !m.changed && m.epoch > 0)
        });
        if stable {
            break;
        }
    }
    let n = members.len();
    let live_after_setup = LIVE.load(Ordering::Relaxed);
    // The bench's own members learnt their tasks during the setup: their maps are not the
    // shard's (measured by copying them).
    let mut copies = Vec::with_capacity(n);
    let before_copies = LIVE.load(Ordering::Relaxed);
    copies.extend(members.iter().map(|m| m.active.clone()));
    let members_active_heap = LIVE.load(Ordering::Relaxed) - before_copies;
    drop(copies);
    let members_heap = members_heap + members_active_heap;
    let shard_heap = live_after_setup - live_start - members_active_heap;
    // The group state alone, by cloning it.
    let before_clone = LIVE.load(Ordering::Relaxed);
    let state_copy = shard.state().clone();
    let state_heap = LIVE.load(Ordering::Relaxed) - before_clone;
    drop(state_copy);
    let log = shard.store().log();
    let log_records = log.len();
    let log_heap = log.heap_bytes();
    // The rebalance timelines alone, rebuilt from the log as a load rebuilds them (a clone
    // would share their member ids with the live ones, and weigh less than they do).
    let before_timelines = LIVE.load(Ordering::Relaxed);
    let timelines = kcoord_coordinator::timeline::Timelines::from_log(log);
    let timeline_heap = LIVE.load(Ordering::Relaxed) - before_timelines;
    drop(timelines);

    // Steady state: the requests do not change, so they are built once, outside the timing.
    let tick_every = (n / 100).max(1) as u64;
    let mut measure = |always: bool, now: &mut i64| -> Result<(f64, f64), String> {
        let requests: Vec<StreamsGroupHeartbeatRequest> = members
            .iter()
            .map(|m| m.request(&topology, always))
            .collect();
        let allocations = ALLOCATIONS.load(Ordering::Relaxed);
        let start = Instant::now();
        for k in 0..s.heartbeats {
            let at = (k % n as u64) as usize;
            let result = heartbeat(&mut shard, &ctx, &requests[at], *now)
                .map_err(|e| format!("steady heartbeat of {}: {e}", members[at].id))?;
            // The server's shard task asks for the next deadline twice per job.
            std::hint::black_box(shard.next_deadline());
            std::hint::black_box(shard.next_deadline());
            let r = &result.response;
            if r.active_tasks.is_some() || r.member_epoch != members[at].epoch || r.error_code != 0
            {
                return Err(format!("{} changed in steady state", members[at].id));
            }
            if k % tick_every == tick_every - 1 {
                *now += 1;
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / s.heartbeats as f64;
        let allocs =
            (ALLOCATIONS.load(Ordering::Relaxed) - allocations) as f64 / s.heartbeats as f64;
        Ok((ns, allocs))
    };
    let (ns_changed, allocs_changed) = measure(false, &mut now)?;
    let (ns_always, allocs_always) = measure(true, &mut now)?;
    let per = |bytes: i64| bytes as f64 / n as f64;
    Ok(format!(
        r#"{{"bench":"coordinator","groups":{},"members":{n},"partitions":{},"heartbeats":{},"setup_passes":{passes},"hb_changed_ns":{},"hb_changed_allocs":{:.1},"hb_always_ns":{},"hb_always_allocs":{:.1},"heap_bytes_per_member":{},"state_bytes_per_member":{},"log_bytes_per_member":{},"log_records_per_member":{:.2},"timeline_bytes_per_member":{},"other_bytes_per_member":{},"bench_members_bytes_per_member":{}}}"#,
        s.groups,
        s.partitions,
        s.heartbeats,
        json_f(ns_changed),
        allocs_changed,
        json_f(ns_always),
        allocs_always,
        json_f(per(shard_heap)),
        json_f(per(state_heap)),
        json_f(per(log_heap as i64)),
        log_records as f64 / n as f64,
        json_f(per(timeline_heap)),
        json_f(per(shard_heap
            - state_heap
            - log_heap as i64
            - timeline_heap)),
        json_f(per(members_heap)),
    ))
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coordinator: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&s) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("coordinator: {e}");
            ExitCode::FAILURE
        }
    }
}
