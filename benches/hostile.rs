//! Hostile bench (issue 13): a steady streams heartbeat load while other connections, one
//! attack at a time, try to hurt it; one JSON line per phase.
//!
//! ```text
//! cargo bench --bench hostile -- --phase-s 20                 # the issue's run
//! cargo bench --bench hostile -- --attacks half_frames,plugin_blocks --phase-s 10
//! ```
//!
//! The daemon runs in this process on a runtime of its own (two workers, as on a 2-core
//! machine), because one attack is its topology description plugin: [`HostilePlugin`] behaves
//! (answers at once, never asks for a push) until a phase tells it to block, panic, fail or
//! sleep in every call. The load and the attackers run on another runtime.
//!
//! Load: `--groups G` (100) groups of `--members M` (10) members, each heartbeating every
//! `--interval-ms I` (1000) over `--connections C` (8) connections (heartbeat v2, so every
//! heartbeat asks the plugin whether it needs a push); every answer must be "accepted,
//! nothing changed": an error, a fencing (an expired session) or an assignment change counts
//! as an error. Sessions keep Kafka's 45 s default.
//!
//! Phases of `--phase-s S` (20) seconds, quiet and attacked in turn (quiet, attack 1, quiet,
//! attack 2, ..., quiet); latencies of the first `--settle-s` (2) seconds of each phase are not
//! kept. Each attack phase's line compares its heartbeat p99 with the mean p99 of the quiet
//! phases on either side of it (goal: at most 1.10) and reports the phase's errors (goal: 0).
//! The attacks (`--attacks`, default all, in this order):
//! - `huge_arrays`: 2 connections send, in a loop, 16 MiB frames that declare 16 million
//!   OffsetCommit topics (or StreamsGroupDescribe group ids) and carry zeros;
//! - `many_names`: 2 connections send, in a loop, a StreamsGroupDescribe naming 4 million
//!   empty group ids in one 4 MiB frame (valid input that decodes to ~25x its size);
//! - `repeated_groups`: 2 connections send, in a loop, a StreamsGroupDescribe and an
//!   OffsetFetch v9 naming one of the load's groups 200,000 times;
//! - `half_frames`: 500 connections each send half a request frame and stop (reconnecting
//!   when the daemon closes them);
//! - `connection_flood`: 2 connections' worth of tasks connect and close as fast as they can,
//!   while 2,000 more connect and stay idle;
//! - `plugin_blocks`, `plugin_panics`, `plugin_errors`, `plugin_sleeps`: the plugin blocks
//!   (until the phase ends), panics, fails, or sleeps 2 s in every call, while one connection
//!   describes the load's groups with their topology descriptions in a loop;
//! - `lag_reads`: not an attack but operators' pages: one reader asks the JSON API for every
//!   group's lag in turn (`/api/v1/groups/{id}/lag`), a sweep a second (groups × 4 partitions
//!   a sweep: 400 with the defaults; the web page reads an open group's lag every 3 s).
//!
//! An attack named more than once (`--attacks lag_reads,lag_reads,lag_reads,lag_reads`) also
//! gets a line comparing its phases' p99s with all the quiet phases' by ranks: the medians, the
//! chance that an attacked phase's p99 exceeds a quiet one's (`above_share`, 0.5 when they
//! cannot be told apart) and the one-sided permutation p-value of "the attacked phases are
//! slower".
//!
//! The bench exits with status 1 when any heartbeat failed, in any phase; the latency goal is
//! reported in each attack line (`goal_met`), not enforced, since the machine's noise decides
//! too much of a 20 s p99.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration
//! (2 groups of 3, phases of 1.5 s, every attack scaled down to 1%) so the code stays
//! exercised.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/noise.rs"]
mod noise;
#[path = "support/produce.rs"]
mod produce;
#[path = "support/secure.rs"]
mod secure;
#[path = "support/steady.rs"]
mod steady;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use kcoord_plugin_api::{
    PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::FrameDecoder;
use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kcoord_wire::messages::{OffsetFetchRequest, StreamsGroupDescribeRequest};
use steady::{SteadyStats, Window};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SOURCE_TOPIC: &str = "hostile-source";

#[derive(Debug, Clone)]
struct Options {
    groups: usize,
    members: usize,
    interval: Duration,
    connections: usize,
    phase: Duration,
    settle: Duration,
    attacks: Vec<Attack>,
    /// Scales the attacks' sizes and counts (1.0 in a real run).
    scale: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attack {
    HugeArrays,
    ManyNames,
    RepeatedGroups,
    HalfFrames,
    ConnectionFlood,
    Plugin(Mode),
    LagReads,
}

const ALL_ATTACKS: [Attack; 10] = [
    Attack::HugeArrays,
    Attack::ManyNames,
    Attack::RepeatedGroups,
    Attack::HalfFrames,
    Attack::ConnectionFlood,
    Attack::Plugin(Mode::Block),
    Attack::Plugin(Mode::Panic),
    Attack::Plugin(Mode::Fail),
    Attack::Plugin(Mode::Sleep),
    Attack::LagReads,
];

impl Attack {
    fn name(self) -> &'static str {
        match self {
            Attack::HugeArrays => "huge_arrays",
            Attack::ManyNames => "many_names",
            Attack::RepeatedGroups => "repeated_groups",
            Attack::HalfFrames => "half_frames",
            Attack::ConnectionFlood => "connection_flood",
            Attack::Plugin(Mode::Block) => "plugin_blocks",
            Attack::Plugin(Mode::Panic) => "plugin_panics",
            Attack::Plugin(Mode::Fail) => "plugin_errors",
            Attack::Plugin(Mode::Sleep) => "plugin_sleeps",
            Attack::Plugin(Mode::Behave) => "plugin_behaves",
            Attack::LagReads => "lag_reads",
        }
    }

    fn parse(name: &str) -> Result<Attack, String> {
        ALL_ATTACKS
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| format!("unknown attack {name:?}"))
    }
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut o = if bench {
        Options {
            groups: 100,
            members: 10,
            interval: Duration::from_millis(1000),
            connections: 8,
            phase: Duration::from_secs(20),
            settle: Duration::from_secs(2),
            attacks: ALL_ATTACKS.to_vec(),
            scale: 1.0,
        }
    } else {
        Options {
            groups: 2,
            members: 3,
            interval: Duration::from_millis(200),
            connections: 2,
            phase: Duration::from_millis(1500),
            settle: Duration::from_millis(300),
            attacks: ALL_ATTACKS.to_vec(),
            scale: 0.01,
        }
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--groups" => o.groups = args::positive(value()?)?,
            "--members" => o.members = args::positive(value()?)?,
            "--interval-ms" => o.interval = Duration::from_millis(args::positive(value()?)? as u64),
            "--connections" => o.connections = args::positive(value()?)?,
            "--phase-s" => o.phase = Duration::from_secs_f64(args::seconds(value()?)?),
            "--settle-s" => o.settle = Duration::from_secs_f64(args::seconds(value()?)?),
            "--attacks" => o.attacks = args::list(value()?, Attack::parse)?,
            "--bench" => {}
            other if bench && other.starts_with("--") => {
                return Err(format!("unknown flag {other}"))
            }
            _ => {} // libtest's arguments in smoke mode
        }
    }
    if o.settle >= o.phase {
        return Err("--settle-s must be shorter than a phase".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("hostile: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hostile: {e}");
            ExitCode::FAILURE
        }
    }
}

fn runtime(name: &str) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the {name} runtime: {e}"))
}

/// Starts the daemon, sets up the load, runs the phases; whether no heartbeat failed (the
/// latency goals are reported, not enforced: the machine's noise decides too much of them).
fn run(o: &Options) -> Result<bool, String> {
    // The daemon's own panic report (one line a minute per place), not the default one with a
    // backtrace per panic: the plugin phases panic thousands of times.
    std::panic::set_hook(kcoord_server::panic_hook());
    let plugin = Arc::new(HostilePlugin::default());
    let server_runtime = runtime("daemon")?;
    let handle = server_runtime.block_on(start_daemon(Arc::clone(&plugin)))?;
    let addr = handle
        .broker_addr()
        .ok_or("the daemon has no broker listener")?
        .to_string();
    let http = handle
        .http_addr()
        .ok_or("the daemon has no HTTP listener")?
        .to_string();
    let load_runtime = runtime("load")?;
    let outcome = load_runtime.block_on(phases((&addr, &http), o, &plugin));
    plugin.set(Mode::Behave);
    server_runtime.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(60), handle.shutdown()).await;
    });
    outcome
}

async fn start_daemon(plugin: Arc<HostilePlugin>) -> Result<kcoord_server::ServerHandle, String> {
    let text = "node.id=1\n\
        listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
        group.streams.initial.rebalance.delay.ms=0\n\
        group.streams.assignment.interval.ms=0\n\
        http.listener=127.0.0.1:0\n";
    let config = kcoord_server::Config::parse("hostile", text).map_err(|e| e.to_string())?;
    let extensions = kcoord_server::Extensions {
        plugin: Some(plugin as Arc<kcoord_server::runtime::topology_plugin::Plugin>),
        ..Default::default()
    };
    kcoord_server::start_with(config, extensions)
        .await
        .map_err(|e| e.to_string())
}

/// `addrs`: the broker listener and the HTTP listener.
async fn phases(
    (addr, http): (&str, &str),
    o: &Options,
    plugin: &Arc<HostilePlugin>,
) -> Result<bool, String> {
    let (mut fleet, mut pipes) = steady::settled_fleet(
        addr,
        "hostile",
        SOURCE_TOPIC,
        o.groups,
        o.members,
        4,
        o.connections,
    )
    .await?;
    let groups: Vec<String> = (0..o.groups)
        .map(|g| fleet::group_id("hostile", g))
        .collect();
    let mut quiet = vec![steady_phase(addr, &mut fleet, &mut pipes, o).await?];
    let mut attacked = Vec::new();
    for &attack in &o.attacks {
        let stop_at = Instant::now() + o.phase;
        let attackers = start_attack(attack, (addr, http), &groups, o, plugin, stop_at);
        let stats = steady_phase(addr, &mut fleet, &mut pipes, o).await?;
        plugin.set(Mode::Behave);
        let report = attackers.await.map_err(|e| format!("attack task: {e}"))?;
        attacked.push((attack, stats, report));
        quiet.push(steady_phase(addr, &mut fleet, &mut pipes, o).await?);
    }
    let mut errors = 0;
    for (i, q) in quiet.iter_mut().enumerate() {
        errors += q.errors;
        println!("{}", phase_line("quiet", i, q, None));
    }
    for (i, (attack, stats, report)) in attacked.iter_mut().enumerate() {
        let before = quiet[i].percentile_ms(99.0);
        let after = quiet[i + 1].percentile_ms(99.0);
        let baseline = (before + after) / 2.0;
        let ratio = stats.percentile_ms(99.0) / baseline;
        errors += stats.errors;
        println!(
            "{}",
            phase_line(attack.name(), i, stats, Some((baseline, ratio, report)))
        );
    }
    let quiet_p99: Vec<f64> = quiet.iter_mut().map(|q| q.percentile_ms(99.0)).collect();
    for line in repeated_attack_lines(&mut attacked, &quiet_p99) {
        println!("{line}");
    }
    Ok(errors == 0)
}

/// For an attack run in several phases, one line comparing their p99s with every quiet
/// phase's by ranks ([`noise::compare`]): one phase's ratio says little on a shared machine.
fn repeated_attack_lines(
    attacked: &mut [(Attack, SteadyStats, AttackReport)],
    quiet_p99: &[f64],
) -> Vec<String> {
    let mut lines = Vec::new();
    for attack in ALL_ATTACKS {
        let p99: Vec<f64> = attacked
            .iter_mut()
            .filter(|(a, _, _)| *a == attack)
            .map(|(_, stats, _)| stats.percentile_ms(99.0))
            .collect();
        if p99.len() < 2 {
            continue;
        }
        if let Some(c) = noise::compare(&p99, quiet_p99) {
            lines.push(format!(
                r#"{{"bench":"hostile","attack":"{}","phases":{},"quiet_phases":{},"p99_median_ms":{:.3},"quiet_p99_median_ms":{:.3},"median_ratio":{:.3},"above_share":{:.3},"p_value":{:.3}}}"#,
                attack.name(),
                p99.len(),
                quiet_p99.len(),
                c.median,
                c.baseline_median,
                c.median / c.baseline_median,
                c.above_share,
                c.p_value,
            ));
        }
    }
    lines
}

/// One phase of the steady load; the latencies after its settle time.
async fn steady_phase(
    addr: &str,
    fleet: &mut fleet::Fleet,
    pipes: &mut Vec<fleet::Pipe>,
    o: &Options,
) -> Result<SteadyStats, String> {
    let start = Instant::now();
    let window = Window {
        from: start + o.settle,
        end: start + o.phase,
    };
    steady::heartbeat_all(
        addr,
        pipes,
        &mut fleet.members,
        fleet.version,
        o.interval,
        64,
        window,
        window.end,
    )
    .await
}

fn phase_line(
    phase: &str,
    index: usize,
    stats: &mut SteadyStats,
    attack: Option<(f64, f64, &AttackReport)>,
) -> String {
    let p50 = stats.percentile_ms(50.0);
    let p99 = stats.percentile_ms(99.0);
    let max = stats.percentile_ms(100.0);
    let mut line = format!(
        r#"{{"bench":"hostile","phase":"{phase}","index":{index},"heartbeats":{},"errors":{},"first_error":{},"p50_ms":{p50:.3},"p99_ms":{p99:.3},"max_ms":{max:.3}"#,
        stats.heartbeats,
        stats.errors,
        stats
            .first_error
            .as_deref()
            .map_or("null".into(), |e| serde_json::Value::from(e).to_string()),
    );
    if let Some((baseline, ratio, report)) = attack {
        line.push_str(&format!(
            r#","quiet_p99_ms":{baseline:.3},"p99_ratio":{ratio:.3},"goal_met":{},"attack_requests":{},"attack_answers":{},"attack_closed":{}"#,
            stats.errors == 0 && ratio <= 1.10,
            report.requests,
            report.answers,
            report.closed,
        ));
    }
    line.push('}');
    line
}

// ---------------------------------------------------------------------------------------------
// Attacks

#[derive(Debug, Default, Clone, Copy)]
struct AttackReport {
    /// Requests (or connections) the attackers sent.
    requests: u64,
    /// Responses they got.
    answers: u64,
    /// Times the daemon closed an attacking connection.
    closed: u64,
}

impl AttackReport {
    fn add(&mut self, other: AttackReport) {
        self.requests += other.requests;
        self.answers += other.answers;
        self.closed += other.closed;
    }
}

/// Starts `attack` until `stop_at`; the task sums its attackers' reports.
fn start_attack(
    attack: Attack,
    (addr, http): (&str, &str),
    groups: &[String],
    o: &Options,
    plugin: &Arc<HostilePlugin>,
    stop_at: Instant,
) -> tokio::task::JoinHandle<AttackReport> {
    let scaled = |n: usize| ((n as f64 * o.scale) as usize).max(1);
    let mut tasks: Vec<tokio::task::JoinHandle<AttackReport>> = Vec::new();
    let addr = addr.to_string();
    let group = groups.first().cloned().unwrap_or_default();
    match attack {
        Attack::HugeArrays => {
            let frames = Arc::new(vec![
                huge_array_frame(ApiKey::OffsetCommit, 9, scaled(16 << 20)),
                huge_array_frame(ApiKey::StreamsGroupDescribe, 0, scaled(16 << 20)),
            ]);
            for _ in 0..2 {
                tasks.push(tokio::spawn(send_in_loop(
                    addr.clone(),
                    Arc::clone(&frames),
                    stop_at,
                )));
            }
        }
        Attack::ManyNames => {
            let request = StreamsGroupDescribeRequest {
                group_ids: vec![String::new(); scaled(4 << 20)],
                ..Default::default()
            };
            let frames = Arc::new(vec![encode(ApiKey::StreamsGroupDescribe, 0, &request)]);
            for _ in 0..2 {
                tasks.push(tokio::spawn(send_in_loop(
                    addr.clone(),
                    Arc::clone(&frames),
                    stop_at,
                )));
            }
        }
        Attack::RepeatedGroups => {
            let n = scaled(200_000);
            let describe = StreamsGroupDescribeRequest {
                group_ids: vec![group.clone(); n],
                ..Default::default()
            };
            let fetch = OffsetFetchRequest {
                groups: vec![
                    OffsetFetchRequestGroup {
                        group_id: group.clone(),
                        member_epoch: -1,
                        ..Default::default()
                    };
                    n
                ],
                ..Default::default()
            };
            let frames = Arc::new(vec![
                encode(ApiKey::StreamsGroupDescribe, 0, &describe),
                encode(ApiKey::OffsetFetch, 9, &fetch),
            ]);
            for _ in 0..2 {
                tasks.push(tokio::spawn(send_in_loop(
                    addr.clone(),
                    Arc::clone(&frames),
                    stop_at,
                )));
            }
        }
        Attack::HalfFrames => {
            for _ in 0..scaled(500) {
                tasks.push(tokio::spawn(half_frame(addr.clone(), stop_at)));
            }
        }
        Attack::ConnectionFlood => {
            for _ in 0..2 {
                tasks.push(tokio::spawn(connect_and_close(addr.clone(), stop_at)));
            }
            for _ in 0..scaled(2000) {
                tasks.push(tokio::spawn(connect_and_idle(addr.clone(), stop_at)));
            }
        }
        Attack::LagReads => {
            let (http, groups) = (http.to_string(), groups.to_vec());
            tasks.push(tokio::task::spawn_blocking(move || {
                read_lag_in_loop(&http, &groups, stop_at)
            }));
        }
        Attack::Plugin(mode) => {
            plugin.set(mode);
            let request = StreamsGroupDescribeRequest {
                group_ids: groups.to_vec(),
                include_topology_description: true,
                ..Default::default()
            };
            let frames = Arc::new(vec![encode(ApiKey::StreamsGroupDescribe, 1, &request)]);
            tasks.push(tokio::spawn(send_in_loop(addr.clone(), frames, stop_at)));
        }
    }
    tokio::spawn(async move {
        let mut report = AttackReport::default();
        for task in tasks {
            if let Ok(r) = task.await {
                report.add(r);
            }
        }
        report
    })
}

fn encode<R: kcoord_wire::Encodable>(api: ApiKey, version: i16, request: &R) -> Vec<u8> {
    let mut out = BytesMut::new();
    match fleet::encode_request(api, version, 0, request, &mut out) {
        Ok(()) => out.to_vec(),
        Err(e) => panic!("the bench cannot encode its own attack: {e}"),
    }
}

/// A flexible-version request frame whose body is one compact array count of `count`
/// elements followed by zeros up to about `count` bytes: as many elements as the frame could
/// hold, if each took one byte.
fn huge_array_frame(api: ApiKey, version: i16, count: usize) -> Vec<u8> {
    let mut body = BytesMut::new();
    body.put_i16(api.key());
    body.put_i16(version);
    body.put_i32(0); // correlation id
    body.put_i16(-1); // null client id
    body.put_u8(0); // no tagged fields
    let mut n = count as u64 + 1;
    while n >= 0x80 {
        body.put_u8((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    body.put_u8(n as u8);
    body.put_bytes(0, count);
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.extend_from_slice(&body);
    frame.to_vec()
}

/// Sends `frames` in turn over one connection, waiting for each answer (or the close, then
/// reconnecting), until `stop_at`.
/// Operators' pages (or a UI) reading every group's lag in turn, one request at a time, a
/// sweep a second (`GET /api/v1/groups/{id}/lag`: each group's committed and end offsets, so
/// groups × partitions lags a sweep).
fn read_lag_in_loop(http: &str, groups: &[String], stop_at: Instant) -> AttackReport {
    let mut report = AttackReport::default();
    let agent = ureq::Agent::new_with_defaults();
    while Instant::now() < stop_at {
        let sweep = Instant::now();
        for group in groups {
            report.requests += 1;
            let url = format!("http://{http}/api/v1/groups/{group}/lag");
            let read = agent
                .get(&url)
                .call()
                .and_then(|mut answer| answer.body_mut().read_to_string());
            match read {
                Ok(_) => report.answers += 1,
                Err(_) => report.closed += 1,
            }
            if Instant::now() >= stop_at {
                break;
            }
        }
        // One sweep a second: every group's page re-read 3x faster than the web page does.
        if let Some(pause) = LAG_SWEEP.checked_sub(sweep.elapsed()) {
            std::thread::sleep(pause.min(stop_at.saturating_duration_since(Instant::now())));
        }
    }
    report
}

/// How often the lag reader sweeps every group.
const LAG_SWEEP: Duration = Duration::from_secs(1);

async fn send_in_loop(addr: String, frames: Arc<Vec<Vec<u8>>>, stop_at: Instant) -> AttackReport {
    let mut report = AttackReport::default();
    let mut i = 0;
    while Instant::now() < stop_at {
        let Ok(Ok(mut stream)) =
            tokio::time::timeout_at(stop_at.into(), TcpStream::connect(&addr)).await
        else {
            break;
        };
        loop {
            let frame = &frames[i % frames.len()];
            i += 1;
            report.requests += 1;
            if stream.write_all(frame).await.is_err() {
                report.closed += 1;
                break;
            }
            match tokio::time::timeout_at(stop_at.into(), read_one(&mut stream)).await {
                Ok(true) => report.answers += 1,
                Ok(false) => {
                    report.closed += 1;
                    break;
                }
                Err(_) => return report,
            }
            if Instant::now() >= stop_at {
                return report;
            }
        }
    }
    report
}

/// Reads one response frame; false when the connection closed first.
async fn read_one(stream: &mut TcpStream) -> bool {
    let decoder = FrameDecoder::new(1 << 30);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        match decoder.decode(&mut buf) {
            Ok(Some(_)) => return true,
            Ok(None) => {}
            Err(_) => return false,
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

/// Half of a 1 MiB request, then nothing, until the daemon closes the connection (then again)
/// or `stop_at`.
async fn half_frame(addr: String, stop_at: Instant) -> AttackReport {
    let mut report = AttackReport::default();
    let mut half = (1i32 << 20).to_be_bytes().to_vec();
    half.extend(std::iter::repeat_n(0u8, 512 * 1024));
    while Instant::now() < stop_at {
        let Ok(Ok(mut stream)) =
            tokio::time::timeout_at(stop_at.into(), TcpStream::connect(&addr)).await
        else {
            break;
        };
        report.requests += 1;
        if stream.write_all(&half).await.is_err() {
            report.closed += 1;
            continue;
        }
        let mut byte = [0u8; 1];
        match tokio::time::timeout_at(stop_at.into(), stream.read(&mut byte)).await {
            Ok(_) => report.closed += 1,
            Err(_) => break,
        }
    }
    report
}

async fn connect_and_close(addr: String, stop_at: Instant) -> AttackReport {
    let mut report = AttackReport::default();
    while Instant::now() < stop_at {
        report.requests += 1;
        if let Ok(Ok(stream)) =
            tokio::time::timeout_at(stop_at.into(), TcpStream::connect(&addr)).await
        {
            drop(stream);
        }
    }
    report
}

async fn connect_and_idle(addr: String, stop_at: Instant) -> AttackReport {
    let mut report = AttackReport {
        requests: 1,
        ..Default::default()
    };
    if let Ok(Ok(mut stream)) =
        tokio::time::timeout_at(stop_at.into(), TcpStream::connect(&addr)).await
    {
        let mut byte = [0u8; 1];
        // An answer before the phase ends can only be the daemon closing the connection.
        if tokio::time::timeout_at(stop_at.into(), stream.read(&mut byte))
            .await
            .is_ok()
        {
            report.closed += 1;
        }
    }
    report
}

// ---------------------------------------------------------------------------------------------
// The plugin

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    Behave = 0,
    Block = 1,
    Panic = 2,
    Fail = 3,
    Sleep = 4,
}

/// A topology description plugin that stores nothing and never asks for a push, until told to
/// misbehave in every call.
#[derive(Default)]
struct HostilePlugin {
    mode: AtomicU8,
}

impl HostilePlugin {
    fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    fn mode(&self) -> Mode {
        match self.mode.load(Ordering::SeqCst) {
            1 => Mode::Block,
            2 => Mode::Panic,
            3 => Mode::Fail,
            4 => Mode::Sleep,
            _ => Mode::Behave,
        }
    }

    /// What a badly written plugin does: holds the calling thread.
    fn misbehave(&self) -> Result<(), PluginError> {
        match self.mode() {
            Mode::Behave => Ok(()),
            Mode::Block => {
                while self.mode() == Mode::Block {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(())
            }
            Mode::Panic => panic!("the hostile plugin panics"),
            Mode::Fail => Err(PluginError::Other("the hostile plugin fails".into())),
            Mode::Sleep => {
                std::thread::sleep(Duration::from_secs(2));
                Ok(())
            }
        }
    }
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for HostilePlugin {
    fn requires_topology_push(&self, _ctx: &RequestContext, _group: &str, _id: Uuid) -> bool {
        let _ = self.misbehave();
        false
    }

    async fn set_topology(
        &self,
        _ctx: &RequestContext,
        _group: &str,
        _id: Uuid,
        _description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.misbehave()
    }

    async fn delete_topology(
        &self,
        _ctx: &RequestContext,
        _group: &str,
    ) -> Result<(), PluginError> {
        self.misbehave()
    }

    async fn get_topology(
        &self,
        _ctx: &RequestContext,
        _group: &str,
        _id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.misbehave().map(|()| None)
    }
}
