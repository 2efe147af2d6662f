//! Memory bench: resident memory of the daemon per idle streams group member. One JSON line.
//!
//! ```text
//! cargo bench --bench memory                                   # 10,000 groups x 10 members
//! cargo bench --bench memory -- --groups 1000 --checkpoints 100,1000
//! ```
//!
//! The bench starts the `kcoord` binary Cargo built alongside it (for `cargo bench`: the
//! optimized one) as a child process, with `group.streams.initial.rebalance.delay.ms=0` and
//! `group.streams.assignment.interval.ms=0` (so each group converges in a few heartbeats) and a
//! 10-minute session timeout (`group.streams.session.timeout.ms` and its max, so no member
//! expires while the others join; a member is idle once its group is Stable), creates the
//! source topic (`--partitions`, 10), opens its `--connections` (16) and sends one ApiVersions
//! on each, and reads the empty daemon's `VmRSS` from `/proc/<pid>/status`. Then it adds the
//! groups of `--members` (10) members up to each checkpoint in `--checkpoints` (default 1%,
//! 10% and 100% of `--groups`): every new member joins, and the bench heartbeats the members
//! of every group that has not converged, one pass at a time (`--inflight` 16 per
//! connection), until each group is Stable as its members see it; after `--settle` seconds
//! (1) of quiet it reads `VmRSS` again. Per member = (RSS - empty RSS) / members. After the
//! last reading, StreamsGroupDescribe confirms every group is Stable with every member at the
//! group epoch and a complete, disjoint assignment. The whole run is bounded by `--timeout`
//! seconds (600).
//!
//! Each checkpoint also reads the daemon's live heap bytes (`kcoord_heap_live_bytes` on
//! `/metrics`, its counting allocator) and then heartbeats every member `--steady-passes` (2)
//! times more, or as many times as `--steady-heartbeats` (1,000,000 in all; the CPU time is
//! read in 10 ms ticks) needs, the groups Stable, for the daemon's CPU per steady heartbeat at
//! that fleet size
//! (the members' own client, so the bench's CPU is not the point). The summary's `flat` field
//! compares checkpoints of at least 1,000 members: the largest live bytes per member and CPU per
//! heartbeat over the smallest (issue 27: flat within 20% from 1,000 to 1,000,000 members).
//!
//! ```text
//! cargo bench --bench memory -- --groups 100000 --checkpoints 100,1000,10000,100000 --timeout 3000
//! ```
//!
//! `--durable` keeps the groups in a log directory (`log.dirs`, a temp dir), as a deployment
//! that keeps its groups across restarts does (and as Kafka always does); by default they are
//! kept in memory only, the quick start's setting.
//!
//! Goal (issue 3): at most 2 KiB per member. Under `cargo test --all-targets` (no `--bench`
//! argument) it runs a smoke configuration (10 groups of 3 members) and exits with status 1
//! only on a failure, not on a missed goal.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use kcoord_client::streams::OwnedTasksReporting;

const SOURCE_TOPIC: &str = "bench-source";
const GOAL_BYTES: f64 = 2048.0;

struct Settings {
    groups: usize,
    members: usize,
    partitions: usize,
    checkpoints: Vec<usize>,
    connections: usize,
    inflight: usize,
    settle: f64,
    timeout: f64,
    steady_passes: usize,
    steady_heartbeats: usize,
    /// Groups kept in a log directory (`log.dirs`, a temp dir) rather than in memory only.
    durable: bool,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut s = if bench {
        Settings {
            groups: 10_000,
            members: 10,
            partitions: 10,
            checkpoints: Vec::new(),
            connections: 16,
            inflight: 16,
            settle: 1.0,
            timeout: 600.0,
            steady_passes: 2,
            steady_heartbeats: 1_000_000,
            durable: false,
        }
    } else {
        Settings {
            groups: 10,
            members: 3,
            partitions: 4,
            checkpoints: Vec::new(),
            connections: 2,
            inflight: 4,
            settle: 0.1,
            timeout: 60.0,
            steady_passes: 1,
            steady_heartbeats: 100,
            durable: false,
        }
    };
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        let value = args.get(i + 1).map(String::as_str);
        let number = |v: Option<&str>| -> Result<usize, String> {
            v.and_then(|v| v.parse::<usize>().ok())
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("{name} needs a positive number"))
        };
        let seconds = |v: Option<&str>| -> Result<f64, String> {
            v.and_then(|v| v.parse::<f64>().ok())
                .filter(|v| (0.0..=7200.0).contains(v))
                .ok_or_else(|| format!("{name} needs seconds between 0 and 7200"))
        };
        match name {
            "--groups" => s.groups = number(value)?,
            "--members" => s.members = number(value)?,
            "--partitions" => s.partitions = number(value)?,
            "--connections" => s.connections = number(value)?,
            "--inflight" => s.inflight = number(value)?,
            "--settle" => s.settle = seconds(value)?,
            "--timeout" => s.timeout = seconds(value)?,
            "--steady-passes" => s.steady_passes = number(value)?,
            "--steady-heartbeats" => s.steady_heartbeats = number(value)?,
            "--durable" => {
                s.durable = true;
                i += 1;
                continue;
            }
            "--checkpoints" => {
                s.checkpoints = value
                    .ok_or("--checkpoints needs a list")?
                    .split(',')
                    .map(|v| number(Some(v.trim())))
                    .collect::<Result<_, _>>()?
            }
            // libtest's and cargo's own arguments.
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
    if s.checkpoints.is_empty() {
        s.checkpoints = [s.groups / 100, s.groups / 10, s.groups]
            .into_iter()
            .filter(|&c| c > 0)
            .collect();
    }
    s.checkpoints.retain(|&c| c <= s.groups);
    s.checkpoints.sort_unstable();
    s.checkpoints.dedup();
    if s.checkpoints.last() != Some(&s.groups) {
        s.checkpoints.push(s.groups);
    }
    Ok(s)
}

struct Checkpoint {
    groups: usize,
    members: usize,
    rss_kib: u64,
    /// `kcoord_heap_live_bytes`.
    live_bytes: u64,
    join_seconds: f64,
    passes: u64,
    heartbeats: u64,
    /// Daemon CPU per steady heartbeat, µs.
    steady_cpu_us: Option<f64>,
}

async fn run(s: &Settings, daemon: &common::Daemon) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs_f64(s.timeout);
    let pid = daemon.pid().ok_or("the daemon has no pid")?;
    let rss = || fleet::proc_status_kib(pid, "VmRSS").ok_or("cannot read VmRSS");
    let addr = daemon.bootstrap();
    let client = fleet::connect_client(&addr).await?;
    fleet::create_topic(&client.bootstrap(), SOURCE_TOPIC, s.partitions as i32).await?;
    let version = fleet::heartbeat_version(&client).await?;
    let mut pipes = Vec::new();
    for _ in 0..s.connections {
        let mut pipe = fleet::Pipe::connect(&addr).await?;
        // One request each, so the daemon's per-connection buffers count as empty.
        let id = pipe.next_id();
        let request = kcoord_wire::messages::ApiVersionsRequest {
            client_software_name: fleet::CLIENT_ID.into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        };
        fleet::encode_request(
            kcoord_wire::api::ApiKey::ApiVersions,
            3,
            id,
            &request,
            &mut pipe.out,
        )?;
        pipe.flush().await?;
        let mut frames = Vec::new();
        pipe.read_frames(&mut frames).await?;
        pipes.push(pipe);
    }
    tokio::time::sleep(Duration::from_secs_f64(s.settle)).await;
    let empty_kib = rss()?;
    let live = || daemon.metric("kcoord_heap_live_bytes").map(|b| b as u64);
    let empty_live = live()?;

    let topology = fleet::topology(SOURCE_TOPIC);
    let mut fleet = fleet::Fleet::new(s.members, s.partitions, "mem", version);
    let mut checkpoints = Vec::new();
    let started = Instant::now();
    for &target in &s.checkpoints {
        let first = fleet.groups();
        let t0 = Instant::now();
        fleet.add_groups(
            &client,
            &topology,
            target - first,
            OwnedTasksReporting::WhenChanged,
        );
        let settled = fleet
            .settle(&mut pipes, s.inflight, first..target, deadline)
            .await?;
        let join_seconds = t0.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_secs_f64(s.settle)).await;
        let rss_kib = rss()?;
        let live_bytes = live()?;
        let steady_cpu_us = steady_cpu(s, &mut pipes, &mut fleet, version, pid).await?;
        eprintln!(
            "memory: {} groups ({} members) Stable after {:.1} s, {} passes; VmRSS {} KiB, live {} B, {:?} µs per steady heartbeat",
            target,
            fleet.members.len(),
            join_seconds,
            settled.passes,
            rss_kib,
            live_bytes,
            steady_cpu_us
        );
        checkpoints.push(Checkpoint {
            groups: target,
            members: fleet.members.len(),
            rss_kib,
            live_bytes,
            join_seconds,
            passes: settled.passes,
            heartbeats: settled.heartbeats.heartbeats,
            steady_cpu_us,
        });
    }
    let hwm_kib = fleet::proc_status_kib(pid, "VmHWM");
    let anon_kib = fleet::proc_status_kib(pid, "RssAnon");

    // The coordinator agrees: every group Stable.
    let ids: Vec<String> = (0..s.groups).map(|g| fleet::group_id("mem", g)).collect();
    for group in fleet::describe(&client.bootstrap(), &ids).await? {
        fleet::check_stable(&group, s.members, s.partitions)?;
    }

    let last = checkpoints.last().ok_or("no checkpoint")?;
    let per_member =
        |c: &Checkpoint| (c.rss_kib.saturating_sub(empty_kib) as f64) * 1024.0 / c.members as f64;
    let bytes = per_member(last);
    let live_per_member =
        |c: &Checkpoint| c.live_bytes.saturating_sub(empty_live) as f64 / c.members as f64;
    let flat = flatness(&checkpoints, &live_per_member);
    let mut line = String::new();
    let _ = write!(
        line,
        r#"{{"bench":"memory","durable":{},"groups":{},"members_per_group":{},"members":{},"partitions":{},"empty_rss_kib":{empty_kib},"rss_kib":{},"rss_anon_kib":{},"hwm_kib":{},"bytes_per_member":{bytes:.0},"goal_bytes_per_member":{GOAL_BYTES:.0},"goal_met":{},"join_seconds":{:.1},"heartbeats":{},"empty_live_bytes":{empty_live},"flat":{flat},"checkpoints":["#,
        s.durable,
        s.groups,
        s.members,
        last.members,
        s.partitions,
        last.rss_kib,
        anon_kib.map_or_else(|| "null".into(), |k| k.to_string()),
        hwm_kib.map_or_else(|| "null".into(), |k| k.to_string()),
        bytes <= GOAL_BYTES,
        started.elapsed().as_secs_f64(),
        checkpoints.iter().map(|c| c.heartbeats).sum::<u64>(),
    );
    for (i, c) in checkpoints.iter().enumerate() {
        let _ = write!(
            line,
            r#"{}{{"groups":{},"members":{},"rss_kib":{},"bytes_per_member":{:.0},"live_bytes_per_member":{:.0},"steady_cpu_us_per_hb":{},"join_seconds":{:.1},"passes":{},"heartbeats":{}}}"#,
            if i == 0 { "" } else { "," },
            c.groups,
            c.members,
            c.rss_kib,
            per_member(c),
            live_per_member(c),
            c.steady_cpu_us
                .map_or_else(|| "null".to_owned(), |us| format!("{us:.3}")),
            c.join_seconds,
            c.passes,
            c.heartbeats
        );
    }
    line.push_str("]}");
    Ok(line)
}

/// Heartbeats every member `s.steady_passes` times (all Stable): the daemon's CPU per
/// heartbeat in µs, or none when the CPU time cannot be read or no heartbeat was sent.
async fn steady_cpu(
    s: &Settings,
    pipes: &mut Vec<fleet::Pipe>,
    fleet: &mut fleet::Fleet,
    version: i16,
    pid: u32,
) -> Result<Option<f64>, String> {
    let pid = pid.to_string();
    let before = fleet::cpu_seconds(&pid);
    let mut heartbeats = 0;
    let passes = s
        .steady_passes
        .max(s.steady_heartbeats.div_ceil(fleet.members.len().max(1)));
    for _ in 0..passes {
        let pass =
            fleet::heartbeat_pass(pipes, &mut fleet.members, s.inflight, version, |_| true).await?;
        heartbeats += pass.heartbeats;
    }
    let after = fleet::cpu_seconds(&pid);
    Ok(match (before, after) {
        (Some(b), Some(a)) if heartbeats > 0 => Some((a - b) * 1e6 / heartbeats as f64),
        _ => None,
    })
}

/// `{"live_ratio":..,"cpu_ratio":..,"goal_ratio":1.2,"goal_met":..}` over the checkpoints of at
/// least 1,000 members: the largest per-member figure over the smallest; null without two
/// such checkpoints.
fn flatness(checkpoints: &[Checkpoint], live: &dyn Fn(&Checkpoint) -> f64) -> String {
    let big: Vec<&Checkpoint> = checkpoints.iter().filter(|c| c.members >= 1000).collect();
    if big.len() < 2 {
        return "null".to_owned();
    }
    let ratio = |values: Vec<f64>| {
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        (min > 0.0).then(|| max / min)
    };
    let live_ratio = ratio(big.iter().map(|c| live(c)).collect());
    let cpu = big
        .iter()
        .map(|c| c.steady_cpu_us)
        .collect::<Option<Vec<f64>>>();
    let cpu_ratio = cpu.and_then(ratio);
    let shown = |r: Option<f64>| r.map_or_else(|| "null".to_owned(), |r| format!("{r:.3}"));
    let met = live_ratio.is_some_and(|r| r <= 1.2) && cpu_ratio.is_some_and(|r| r <= 1.2);
    format!(
        r#"{{"live_ratio":{},"cpu_ratio":{},"goal_ratio":1.2,"goal_met":{met}}}"#,
        shown(live_ratio),
        shown(cpu_ratio)
    )
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("memory: {e}");
            return ExitCode::from(2);
        }
    };
    let log_dir = match s.durable.then(tempfile::tempdir).transpose() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("memory: cannot make the log directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut config = vec![
        "group.streams.initial.rebalance.delay.ms=0".to_owned(),
        "group.streams.assignment.interval.ms=0".to_owned(),
        "group.streams.session.timeout.ms=600000".to_owned(),
        "group.streams.max.session.timeout.ms=600000".to_owned(),
        "log.level=warn".to_owned(),
        "http.listener=127.0.0.1:0".to_owned(),
    ];
    if let Some(dir) = &log_dir {
        config.push(format!("log.dirs={}", dir.path().display()));
    }
    let daemon = common::Daemon::start(&config.iter().map(String::as_str).collect::<Vec<_>>());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("memory: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(&s, &daemon));
    // Close every connection before stopping the daemon.
    drop(runtime);
    match result {
        Ok(line) => {
            println!("{line}");
            if !daemon.is_alive() {
                eprintln!("memory: the daemon died\n{}", daemon.stderr_log());
                return ExitCode::FAILURE;
            }
            daemon.stop();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "memory: {e}\n--- daemon stderr ---\n{}",
                daemon.stderr_log()
            );
            ExitCode::FAILURE
        }
    }
}
