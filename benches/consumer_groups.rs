//! Consumer groups against Apache Kafka 4.4 (issue 24): classic groups (JoinGroup, SyncGroup,
//! Heartbeat) and KIP-848 consumer groups (ConsumerGroupHeartbeat). One JSON line per
//! measurement, then one summary line per goal.
//!
//! ```text
//! cargo bench --bench consumer_groups -- --kafka --pin-servers 1 --pin-load 0
//! cargo bench --bench consumer_groups -- --measure storm --protocols classic --storm-members 200
//! ```
//!
//! It starts the `kcoord` binary Cargo built alongside it and, with `--kafka`, an Apache Kafka
//! 4.4 broker (`support/kafka.rs`), both with the same group settings:
//! `group.initial.rebalance.delay.ms` (`--initial-delay-ms`, 0) and
//! `group.consumer.heartbeat.interval.ms` (`--heartbeat-interval-ms`, 500; Kafka's
//! `group.consumer.min.heartbeat.interval.ms` lowered to it), 600 s sessions and
//! `group.consumer.assignment.interval.ms=0` (a new target assignment computed at once, not
//! batched). Every member is on its own connection
//! (`support/groups.rs`); a classic member heartbeats every `--heartbeat-interval-ms` once it
//! holds an assignment, a KIP-848 member at the interval the server gives it and at once to
//! acknowledge a new assignment.
//!
//! `--measure` (all three by default), each for every `--protocols` (`classic,consumer`):
//! - `heartbeat`: `--groups` (100) groups of `--members` (10) on a topic of `--partitions` (10)
//!   partitions join and become stable; then `--connections` (8) connections keep `--inflight`
//!   (16) steady heartbeats each in flight (classic Heartbeat v4, ConsumerGroupHeartbeat v1 as
//!   the Java consumer sends it when nothing changed), each member's request encoded once and
//!   replayed, every answer equal to the member's first (`replay::Rotation`). Kafka first gets
//!   `--kafka-warmup` seconds (20) of this load, unmeasured, for its JIT; then `--rounds` (3)
//!   of `--seconds` (5) per server and protocol, alternating. Server CPU is user + system time
//!   of its process (`/proc/<pid>/stat`) over the measured window. Goal: kcoord >= 10x Kafka's
//!   heartbeats per server CPU-second.
//! - `storm`: `--storm-members` (1000) members, connected beforehand, all start joining one
//!   new group at once (`--storm-partitions` partitions, default one per member); the time
//!   until every member holds its assignment of one generation (classic: JoinGroup and
//!   SyncGroup answered, the leader's range assignment) or one member epoch (KIP-848), the
//!   assignments complete and disjoint. `--storm-repeat` (1) storms per server and protocol.
//!   Each line also gives the generation or epoch the group settled at and the server's CPU
//!   seconds from the first connection to the last member's return. Goal: kcoord 5x faster.
//! - `memory`: `--memory-groups` (1000) groups of `--members` join and become stable, their
//!   connections closed; per member, after `--settle` seconds (2): kcoord's live heap growth
//!   (`kcoord_heap_live_bytes`, its counted allocator) against Kafka's live heap growth (`jcmd
//!   GC.class_histogram`, which runs a full collection first), the resident sets beside them.
//!   Goal: kcoord <= 1/5 of Kafka.
//!
//! `--pin-servers CPUS` / `--pin-load CPUS` pin the servers and this process with `taskset`.
//! `--durable` has kcoord keep its groups in a log directory (a temp dir), as Kafka keeps its
//! logs on disk; by default they are kept in memory only.
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration
//! against kcoord alone (3 groups of 3 members, a storm of 5, 0.2 s runs) and fails only on an
//! error, never on a missed goal.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/groups.rs"]
mod groups;
#[path = "support/kafka.rs"]
mod kafka;
#[path = "support/replay.rs"]
mod replay;
#[path = "support/secure.rs"]
mod secure;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use args::{list, positive, seconds};
use bytes::Bytes;
use groups::{Protocol, Settled};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{ConsumerGroupHeartbeatResponse, HeartbeatResponse};
use kcoord_wire::Decodable;

const HB_TOPIC: &str = "bench-hb";
const STORM_TOPIC: &str = "bench-storm";
const MEMORY_TOPIC: &str = "bench-memory";
/// Groups joining at once while setting up (each member has its own connection).
const SETUP_CONCURRENCY: usize = 20;

struct Options {
    kafka: bool,
    /// kcoord keeps its groups in a log directory (a temp dir), as Kafka always does.
    durable: bool,
    protocols: Vec<Protocol>,
    measures: Vec<String>,
    groups: usize,
    members: usize,
    partitions: usize,
    connections: usize,
    inflight: usize,
    seconds: f64,
    rounds: usize,
    kafka_warmup: f64,
    storm_members: usize,
    storm_partitions: Option<usize>,
    storm_repeat: usize,
    memory_groups: usize,
    settle: f64,
    interval_ms: usize,
    initial_delay_ms: usize,
    timeout: f64,
    pin_servers: Option<String>,
    pin_load: Option<String>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut o = Options {
        kafka: false,
        durable: false,
        protocols: vec![Protocol::Classic, Protocol::Consumer],
        measures: ["heartbeat", "storm", "memory"].map(String::from).to_vec(),
        groups: if bench { 100 } else { 3 },
        members: if bench { 10 } else { 3 },
        partitions: 10,
        connections: if bench { 8 } else { 2 },
        inflight: if bench { 16 } else { 2 },
        seconds: if bench { 5.0 } else { 0.2 },
        rounds: if bench { 3 } else { 1 },
        kafka_warmup: 20.0,
        storm_members: if bench { 1000 } else { 5 },
        storm_partitions: None,
        storm_repeat: 1,
        memory_groups: if bench { 1000 } else { 3 },
        settle: if bench { 2.0 } else { 0.1 },
        interval_ms: if bench { 500 } else { 100 },
        initial_delay_ms: 0,
        timeout: 120.0,
        pin_servers: None,
        pin_load: None,
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--kafka" || flag == "--durable" {
            o.kafka |= flag == "--kafka";
            o.durable |= flag == "--durable";
            i += 1;
            continue;
        }
        let known = flag.starts_with("--")
            && !matches!(flag, "--bench" | "--nocapture" | "--quiet" | "--exact");
        let Some(value) = args.get(i + 1).filter(|_| known) else {
            i += 1; // libtest's own arguments under `cargo test`
            continue;
        };
        let n = || positive(value).map_err(|e| format!("{flag}: {e}"));
        match flag {
            "--protocols" => {
                o.protocols = list(value, |p| {
                    Protocol::parse(p).ok_or(format!("unknown protocol {p:?}"))
                })?
            }
            "--measure" => o.measures = list(value, |m| Ok(m.to_string()))?,
            "--groups" => o.groups = n()?,
            "--members" => o.members = n()?,
            "--partitions" => o.partitions = n()?,
            "--connections" => o.connections = n()?,
            "--inflight" => o.inflight = n()?,
            "--seconds" => o.seconds = seconds(value)?,
            "--rounds" => o.rounds = n()?,
            "--kafka-warmup" => o.kafka_warmup = seconds(value)?,
            "--storm-members" => o.storm_members = n()?,
            "--storm-partitions" => o.storm_partitions = Some(n()?),
            "--storm-repeat" => o.storm_repeat = n()?,
            "--memory-groups" => o.memory_groups = n()?,
            "--settle" => o.settle = seconds(value)?,
            "--heartbeat-interval-ms" => o.interval_ms = n()?,
            "--initial-delay-ms" => o.initial_delay_ms = value.parse().map_err(|_| flag)?,
            "--timeout" => o.timeout = seconds(value)?,
            "--pin-servers" => o.pin_servers = Some(value.clone()),
            "--pin-load" => o.pin_load = Some(value.clone()),
            _ => return Err(format!("unknown flag {flag}")),
        }
        i += 2;
    }
    if let Some(m) = o
        .measures
        .iter()
        .find(|m| !["heartbeat", "storm", "memory"].contains(&m.as_str()))
    {
        return Err(format!("unknown measure {m:?}"));
    }
    Ok(o)
}

impl Options {
    fn measures(&self, name: &str) -> bool {
        self.measures.iter().any(|m| m == name)
    }

    fn storm_partitions(&self) -> usize {
        self.storm_partitions.unwrap_or(self.storm_members)
    }

    /// The group settings both servers get.
    fn shared_settings(&self) -> Vec<String> {
        vec![
            format!("group.initial.rebalance.delay.ms={}", self.initial_delay_ms),
            format!("group.consumer.heartbeat.interval.ms={}", self.interval_ms),
            format!(
                "group.consumer.session.timeout.ms={}",
                groups::SESSION_TIMEOUT_MS
            ),
            format!(
                "group.max.session.timeout.ms={}",
                groups::SESSION_TIMEOUT_MS
            ),
            // Kafka batches target assignments (1 s by default) and so does kcoord since
            // `4517df7`; both compute at once here.
            "group.consumer.assignment.interval.ms=0".to_string(),
        ]
    }

    /// Kafka's bounds for them (kcoord does not read these keys).
    fn kafka_settings(&self) -> Vec<String> {
        let mut settings = self.shared_settings();
        settings.extend([
            format!(
                "group.consumer.min.heartbeat.interval.ms={}",
                self.interval_ms
            ),
            format!(
                "group.consumer.max.session.timeout.ms={}",
                groups::SESSION_TIMEOUT_MS
            ),
        ]);
        settings
    }
}

/// One server under test: kcoord or Kafka, and the members it holds for the heartbeat runs.
struct Target {
    name: &'static str,
    addr: String,
    pid: u32,
    daemon: Option<common::Daemon>,
    kafka: Option<kafka::KafkaBroker>,
    steady: Vec<(Protocol, Vec<Settled>)>,
    /// kcoord's log directory with `--durable`, removed with the target.
    _log_dir: Option<tempfile::TempDir>,
}

impl Target {
    /// Memory to compare, live bytes against live bytes: kcoord's counted heap
    /// (`kcoord_heap_live_bytes`), Kafka's live heap after a full collection; and the resident
    /// set of either.
    fn memory(&self) -> Result<(u64, u64), String> {
        let rss = fleet::proc_status_kib(self.pid, "VmRSS").ok_or("no VmRSS")? * 1024;
        match (&self.kafka, &self.daemon) {
            (Some(broker), _) => Ok((broker.live_heap_bytes()?, rss)),
            (None, Some(daemon)) => Ok((daemon.metric("kcoord_heap_live_bytes")? as u64, rss)),
            (None, None) => Err(format!("{}: neither kcoord nor Kafka", self.name)),
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("consumer_groups: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("consumer_groups: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match start_targets(&options).and_then(|mut t| runtime.block_on(bench(&options, &mut t))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("consumer_groups: {e}");
            ExitCode::FAILURE
        }
    }
}

fn start_targets(o: &Options) -> Result<Vec<Target>, String> {
    let mut config = o.shared_settings();
    // `/metrics` tells the daemon's live heap bytes.
    config.push("http.listener=127.0.0.1:0".to_string());
    let log_dir = o
        .durable
        .then(tempfile::tempdir)
        .transpose()
        .map_err(|e| format!("the log directory: {e}"))?;
    if let Some(dir) = &log_dir {
        config.push(format!("log.dirs={}", dir.path().display()));
    }
    let daemon = common::Daemon::try_start_with_config(&common::config_text(
        &config.iter().map(String::as_str).collect::<Vec<_>>(),
    ))?;
    let mut targets = vec![Target {
        name: "kcoord",
        addr: daemon.bootstrap(),
        pid: daemon.pid().ok_or("no daemon pid")?,
        daemon: Some(daemon),
        kafka: None,
        steady: Vec::new(),
        _log_dir: log_dir,
    }];
    if o.kafka {
        let broker = kafka::KafkaBroker::start(&o.kafka_settings())?;
        targets.push(Target {
            name: "kafka",
            addr: broker.bootstrap(),
            pid: broker.pid(),
            daemon: None,
            kafka: Some(broker),
            steady: Vec::new(),
            _log_dir: None,
        });
    }
    if let Some(cpus) = &o.pin_servers {
        for t in &targets {
            fleet::pin(t.pid, cpus)?;
        }
    }
    if let Some(cpus) = &o.pin_load {
        fleet::pin(std::process::id(), cpus)?;
    }
    Ok(targets)
}

async fn bench(o: &Options, targets: &mut [Target]) -> Result<(), String> {
    for t in targets.iter() {
        prepare(o, t).await?;
    }
    if o.measures("heartbeat") {
        heartbeats(o, targets).await?;
    }
    if o.measures("storm") {
        storms(o, targets).await?;
    }
    if o.measures("memory") {
        memory(o, targets).await?;
    }
    // Members' connections are closed; stop the servers (kcoord must exit cleanly).
    for t in targets.iter_mut() {
        if let Some(daemon) = t.daemon.take() {
            let status = daemon.terminate();
            if !status.success() {
                return Err(format!("kcoord exited with {status}"));
            }
        }
    }
    Ok(())
}

/// The topics, and the group coordinators found (Kafka creates `__consumer_offsets` then).
async fn prepare(o: &Options, t: &Target) -> Result<(), String> {
    let client = fleet::connect_client(&t.addr).await?;
    let conn = &client.bootstrap();
    fleet::create_topic(conn, HB_TOPIC, o.partitions as i32).await?;
    fleet::create_topic(conn, STORM_TOPIC, o.storm_partitions() as i32).await?;
    fleet::create_topic(conn, MEMORY_TOPIC, o.partitions as i32).await?;
    fleet::find_coordinators(&client, &["bench-probe".to_string()]).await
}

fn group_name(kind: &str, protocol: Protocol, g: usize) -> String {
    format!("{kind}-{}-{g:05}", protocol.name())
}

fn spec(
    o: &Options,
    t: &Target,
    protocol: Protocol,
    topic: &str,
    members: usize,
    partitions: usize,
) -> groups::Spec {
    groups::Spec {
        addr: t.addr.clone(),
        protocol,
        topic: topic.into(),
        members,
        partitions,
        interval: Duration::from_millis(o.interval_ms as u64),
        timeout: Duration::from_secs_f64(o.timeout),
    }
}

/// `groups` groups of `o.members` join (a few groups at a time) until each is stable.
async fn set_up(
    o: &Options,
    t: &Target,
    protocol: Protocol,
    kind: &str,
    topic: &str,
    groups: usize,
) -> Result<Vec<Settled>, String> {
    let client = fleet::connect_client(&t.addr).await?;
    let ids: Vec<String> = (0..groups).map(|g| group_name(kind, protocol, g)).collect();
    fleet::find_coordinators(&client, &ids).await?;
    let limit = Arc::new(tokio::sync::Semaphore::new(SETUP_CONCURRENCY));
    let spec = spec(o, t, protocol, topic, o.members, o.partitions);
    let mut tasks = Vec::with_capacity(groups);
    for id in ids {
        let (spec, limit) = (spec.clone(), Arc::clone(&limit));
        tasks.push(tokio::spawn(async move {
            let _permit = limit.acquire().await.map_err(|e| e.to_string())?;
            groups::run_group(&spec, &id)
                .await
                .map(|(settled, _)| settled)
        }));
    }
    let mut all = Vec::with_capacity(groups * o.members);
    for task in tasks {
        all.extend(task.await.map_err(|e| format!("group task: {e}"))??);
    }
    Ok(all)
}

fn check_classic(body: &mut Bytes) -> Result<(), String> {
    let r = HeartbeatResponse::decode(body, groups::HEARTBEAT_VERSION)
        .map_err(|e| format!("Heartbeat response: {e}"))?;
    match r.error_code {
        0 => Ok(()),
        code => Err(format!("Heartbeat: error {code}")),
    }
}

fn check_consumer(body: &mut Bytes) -> Result<(), String> {
    let r = ConsumerGroupHeartbeatResponse::decode(body, groups::CONSUMER_HEARTBEAT_VERSION)
        .map_err(|e| format!("ConsumerGroupHeartbeat response: {e}"))?;
    match (r.error_code, &r.assignment) {
        (0, None) => Ok(()),
        (0, Some(_)) => Err("a steady heartbeat got a new assignment".into()),
        (code, _) => Err(format!(
            "ConsumerGroupHeartbeat: error {code} {:?}",
            r.error_message
        )),
    }
}

/// One generator per connection over `members` (member `i` on connection `i % C`).
fn rotations(
    o: &Options,
    protocol: Protocol,
    members: &[Settled],
) -> Result<Vec<Box<dyn replay::Generator>>, String> {
    let mut shares: Vec<Vec<&Settled>> = vec![Vec::new(); o.connections];
    for (i, m) in members.iter().enumerate() {
        shares[i % o.connections].push(m);
    }
    shares
        .into_iter()
        .filter(|share| !share.is_empty())
        .map(|share| -> Result<Box<dyn replay::Generator>, String> {
            Ok(Box::new(match protocol {
                Protocol::Classic => {
                    let requests: Vec<_> = share
                        .iter()
                        .map(|m| groups::heartbeat_request(&m.group_id, &m.member_id, m.epoch))
                        .collect();
                    let v = groups::HEARTBEAT_VERSION;
                    replay::Rotation::new(ApiKey::Heartbeat, v, &requests, check_classic)?
                }
                Protocol::Consumer => {
                    let requests: Vec<_> = share
                        .iter()
                        .map(|m| groups::consumer_heartbeat_request(m))
                        .collect();
                    let (api, v) = (
                        ApiKey::ConsumerGroupHeartbeat,
                        groups::CONSUMER_HEARTBEAT_VERSION,
                    );
                    replay::Rotation::new(api, v, &requests, check_consumer)?
                }
            }))
        })
        .collect()
}

/// One measured run; returns (heartbeats, server CPU seconds).
async fn run(
    o: &Options,
    t: &Target,
    protocol: Protocol,
    seconds: f64,
    warmup: f64,
) -> Result<(u64, f64), String> {
    let members = &t
        .steady
        .iter()
        .find(|(p, _)| *p == protocol)
        .ok_or("no members set up")?
        .1;
    let generators = rotations(o, protocol, members)?;
    let dial = secure::Dial::plaintext(t.addr.clone());
    let (m, _) = replay::measure(&dial, generators, o.inflight, warmup, seconds, Some(t.pid)).await;
    if m.errors > 0 || m.requests == 0 {
        return Err(format!(
            "{} {} heartbeats: {} errors, {} answered ({:?})",
            t.name,
            protocol.name(),
            m.errors,
            m.requests,
            m.first_error
        ));
    }
    Ok((m.requests, m.daemon_cpu_s.unwrap_or(0.0)))
}

async fn heartbeats(o: &Options, targets: &mut [Target]) -> Result<(), String> {
    for t in targets.iter_mut() {
        for &protocol in &o.protocols {
            let settled = set_up(o, t, protocol, "hb", HB_TOPIC, o.groups).await?;
            t.steady.push((protocol, settled));
        }
    }
    for t in targets.iter().filter(|t| t.kafka.is_some()) {
        for &protocol in &o.protocols {
            let share = o.kafka_warmup / o.protocols.len() as f64;
            run(o, t, protocol, share, 0.0).await?;
        }
    }
    // Per protocol and server: (heartbeats, CPU seconds) over all rounds.
    let mut totals = vec![vec![(0u64, 0f64); targets.len()]; o.protocols.len()];
    for round in 1..=o.rounds {
        for (p, &protocol) in o.protocols.iter().enumerate() {
            for (k, t) in targets.iter().enumerate() {
                let (n, cpu) = run(o, t, protocol, o.seconds, 1.0).await?;
                totals[p][k].0 += n;
                totals[p][k].1 += cpu;
                println!(
                    r#"{{"bench":"consumer_heartbeat","server":"{}","protocol":"{}","round":{round},"groups":{},"members":{},"connections":{},"inflight":{},"hb_per_s":{:.0},"server_cpu_us_per_hb":{:.2},"hb_per_server_cpu_s":{:.0}}}"#,
                    t.name,
                    protocol.name(),
                    o.groups,
                    o.members,
                    o.connections,
                    o.inflight,
                    n as f64 / o.seconds,
                    cpu * 1e6 / n as f64,
                    n as f64 / cpu.max(1e-9),
                );
            }
        }
    }
    if targets.len() == 2 {
        for (p, &protocol) in o.protocols.iter().enumerate() {
            let rate = |(n, cpu): (u64, f64)| n as f64 / cpu.max(1e-9);
            let ratio = rate(totals[p][0]) / rate(totals[p][1]);
            println!(
                r#"{{"bench":"vs_kafka_consumer_heartbeat","protocol":"{}","rounds":{},"kcoord_hb_per_server_cpu_s":{:.0},"kafka_hb_per_server_cpu_s":{:.0},"ratio":{ratio:.2},"goal_ratio":10,"goal_met":{}}}"#,
                protocol.name(),
                o.rounds,
                rate(totals[p][0]),
                rate(totals[p][1]),
                ratio >= 10.0
            );
        }
    }
    Ok(())
}

async fn storms(o: &Options, targets: &[Target]) -> Result<(), String> {
    for &protocol in &o.protocols {
        let mut best = Vec::new();
        for t in targets {
            let client = fleet::connect_client(&t.addr).await?;
            let ids: Vec<String> = (0..o.storm_repeat)
                .map(|r| group_name("storm", protocol, r))
                .collect();
            fleet::find_coordinators(&client, &ids).await?;
            let mut times = Vec::new();
            let (members, partitions) = (o.storm_members, o.storm_partitions());
            let spec = spec(o, t, protocol, STORM_TOPIC, members, partitions);
            for id in &ids {
                let cpu_before = fleet::cpu_seconds(&t.pid.to_string());
                let (settled, took) = groups::run_group(&spec, id).await?;
                let cpu = fleet::cpu_seconds(&t.pid.to_string())
                    .zip(cpu_before)
                    .map_or(-1.0, |(after, before)| after - before);
                // The generation (classic) or member epoch (KIP-848) the group settled at.
                let epoch = settled.iter().map(|m| m.epoch).max().unwrap_or(0);
                println!(
                    r#"{{"bench":"join_storm","server":"{}","protocol":"{}","members":{members},"partitions":{partitions},"initial_delay_ms":{},"heartbeat_interval_ms":{},"stable_s":{:.3},"settled_epoch":{epoch},"server_cpu_s":{cpu:.2}}}"#,
                    t.name,
                    protocol.name(),
                    o.initial_delay_ms,
                    o.interval_ms,
                    took.as_secs_f64()
                );
                times.push(took.as_secs_f64());
            }
            best.push(times.iter().copied().fold(f64::INFINITY, f64::min));
        }
        if let [kcoord, kafka] = best[..] {
            let ratio = kafka / kcoord;
            println!(
                r#"{{"bench":"vs_kafka_join_storm","protocol":"{}","members":{},"kcoord_best_s":{kcoord:.3},"kafka_best_s":{kafka:.3},"ratio":{ratio:.2},"goal_ratio":5,"goal_met":{}}}"#,
                protocol.name(),
                o.storm_members,
                ratio >= 5.0
            );
        }
    }
    Ok(())
}

async fn memory(o: &Options, targets: &[Target]) -> Result<(), String> {
    let members = (o.memory_groups * o.members) as f64;
    for &protocol in &o.protocols {
        let mut per_member = Vec::new();
        for t in targets {
            // A first group of the protocol, unmeasured: Kafka creates `__consumer_offsets` (50
            // partitions) and loads the protocol's classes with it, which would otherwise count
            // as the members' when memory is measured first.
            set_up(o, t, protocol, "memwarm", MEMORY_TOPIC, 1).await?;
            tokio::time::sleep(Duration::from_secs_f64(o.settle)).await;
            let (before, rss_before) = t.memory()?;
            set_up(o, t, protocol, "mem", MEMORY_TOPIC, o.memory_groups).await?;
            tokio::time::sleep(Duration::from_secs_f64(o.settle)).await;
            let (after, rss_after) = t.memory()?;
            let bytes = (after as f64 - before as f64) / members;
            let rss = (rss_after as f64 - rss_before as f64) / members;
            println!(
                r#"{{"bench":"consumer_memory","server":"{}","protocol":"{}","members":{members},"measured":"{}","bytes_per_member":{bytes:.0},"rss_bytes_per_member":{rss:.0}}}"#,
                t.name,
                protocol.name(),
                if t.kafka.is_some() {
                    "live heap after full GC"
                } else {
                    "counted live heap"
                },
            );
            per_member.push(bytes);
        }
        if let [kcoord, kafka] = per_member[..] {
            let ratio = kcoord / kafka;
            println!(
                r#"{{"bench":"vs_kafka_consumer_memory","protocol":"{}","members":{members},"kcoord_bytes_per_member":{kcoord:.0},"kafka_live_heap_bytes_per_member":{kafka:.0},"ratio":{ratio:.3},"goal_ratio":0.2,"goal_met":{}}}"#,
                protocol.name(),
                ratio <= 0.2
            );
        }
    }
    Ok(())
}
