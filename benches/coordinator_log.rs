//! Coordinator log bench (issue 12): offset commits against a daemon that keeps groups in a log
//! directory, compared in the same run with the disk's own fsync rate, and the time a restart
//! takes to load many groups and offsets. JSON lines.
//!
//! ```text
//! cargo bench --bench coordinator_log                        # commits, then the restart
//! cargo bench --bench coordinator_log -- --connections 64 --inflight 4 --seconds 5
//! cargo bench --bench coordinator_log -- --skip-commits --groups 100000 --offsets-per-group 10
//! ```
//!
//! **Commits** (`"bench":"offset_commit"`): the bench starts the `kcoord` binary Cargo built
//! alongside it with `log.dirs` in a temp dir under `--dir` (default: the system temp dir, so
//! the same disk as the fsync loop below), opens `--connections` C (64) connections, and keeps
//! `--inflight` P (4) OffsetCommit v9 requests in flight on each for `--seconds` (5, after 1 of
//! warm-up): each request commits one partition of the connection's own group, with ever higher
//! offsets, as a simple (non-member) commit. Every answer must be NONE. It reports commits/s and
//! latency percentiles. When it stops, the daemon logs how many shard files its writer wrote
//! and synced and how many records they carried: `records_per_file_sync`, the batch size B of
//! its group commits. Then, in the same directory, a loop writes 64 bytes and `fdatasync`s a
//! file for the same time: the disk's own fsync rate F. The goal (issue 12) is commits/s
//! within 2x of F x B: `ratio` = commits/s / (F x B) >= 0.5. The same load against a daemon
//! without a log directory gives the in-memory rate for reference.
//!
//! **Restart** (`"bench":"coordinator_restart"`): the bench fills a daemon with `--groups` G
//! (100,000) groups of `--offsets-per-group` (10) committed offsets each (one OffsetCommit per
//! group, many in flight), stops it (SIGTERM), starts it again on the same directory and times
//! how long until every shard answers (OffsetFetch of one group per shard no longer answers
//! COORDINATOR_LOAD_IN_PROGRESS), then checks a sample of groups has every offset. Goal < 5 s.
//!
//! Under `cargo test --all-targets` (no `--bench`) it runs a smoke configuration (small and
//! short) and fails only on an error, not on a missed goal.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;

use std::collections::VecDeque;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcoord_client::Connection;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::{CreateTopicsRequest, OffsetCommitRequest, OffsetFetchRequest};
use kcoord_wire::ErrorCode;

const TOPIC: &str = "bench-commits";
const GOAL_RATIO: f64 = 0.5;
const GOAL_RESTART_S: f64 = 5.0;

#[derive(Debug, Clone)]
struct Settings {
    connections: usize,
    inflight: usize,
    seconds: f64,
    warmup: f64,
    groups: usize,
    offsets_per_group: usize,
    shards: usize,
    dir: std::path::PathBuf,
    commits: bool,
    restart: bool,
    /// `--no-fsync`: the daemon with `group.coordinator.log.fsync=false`.
    fsync: bool,
}

fn settings() -> Result<Settings, String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let bench = argv.iter().any(|a| a == "--bench");
    let mut s = Settings {
        connections: if bench { 64 } else { 4 },
        inflight: if bench { 4 } else { 2 },
        seconds: if bench { 5.0 } else { 0.3 },
        warmup: if bench { 1.0 } else { 0.1 },
        groups: if bench { 100_000 } else { 200 },
        offsets_per_group: 10,
        shards: 50,
        dir: std::env::temp_dir(),
        commits: true,
        restart: true,
        fsync: true,
    };
    let mut i = 0;
    while i < argv.len() {
        let flag = argv[i].as_str();
        let mut value = || {
            i += 1;
            argv.get(i)
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag {
            "--bench" => {}
            "--connections" => s.connections = args::positive(&value()?)?,
            "--inflight" => s.inflight = args::positive(&value()?)?,
            "--seconds" => s.seconds = args::seconds(&value()?)?,
            "--warmup" => s.warmup = args::seconds(&value()?)?,
            "--groups" => s.groups = args::positive(&value()?)?,
            "--offsets-per-group" => s.offsets_per_group = args::positive(&value()?)?,
            "--shards" => s.shards = args::positive(&value()?)?,
            "--dir" => s.dir = value()?.into(),
            "--skip-commits" => s.commits = false,
            "--skip-restart" => s.restart = false,
            "--no-fsync" => s.fsync = false,
            other => return Err(format!("unknown flag {other}")),
        }
        i += 1;
    }
    Ok(s)
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coordinator_log: {e}");
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
            eprintln!("coordinator_log: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        if s.commits {
            commits(&s).await?;
        }
        if s.restart {
            restart(&s).await?;
        }
        Ok::<(), String>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coordinator_log: {e}");
            ExitCode::FAILURE
        }
    }
}

fn temp_dir(s: &Settings) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("kcoord-bench-")
        .tempdir_in(&s.dir)
        .map_err(|e| format!("a temp dir in {}: {e}", s.dir.display()))
}

fn start(s: &Settings, log_dir: Option<&std::path::Path>) -> common::Daemon {
    let mut config = vec![format!("offsets.topic.num.partitions={}", s.shards)];
    if let Some(dir) = log_dir {
        config.push(format!("log.dirs={}", dir.display()));
        config.push(format!("group.coordinator.log.fsync={}", s.fsync));
    }
    common::Daemon::start(&config.iter().map(String::as_str).collect::<Vec<_>>())
}

async fn connect(daemon: &common::Daemon) -> Result<Connection, String> {
    Ok(daemon
        .client_connection("coordinator-log-bench", Duration::from_secs(60))
        .await)
}

async fn create_topic(conn: &Connection, partitions: usize) -> Result<(), String> {
    let request = CreateTopicsRequest {
        topics: vec![
            kcoord_wire::messages::create_topics_request::CreatableTopic {
                name: TOPIC.into(),
                num_partitions: partitions as i32,
                replication_factor: -1,
                ..Default::default()
            },
        ],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let response = conn.send(request, 7).await.map_err(|e| e.to_string())?;
    match response.topics[0].error_code {
        0 => Ok(()),
        code => Err(format!("CreateTopics answered {code}")),
    }
}

fn commit_request(
    group: &str,
    partitions: std::ops::Range<i32>,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: TOPIC.into(),
            partitions: partitions
                .map(|p| OffsetCommitRequestPartition {
                    partition_index: p,
                    committed_offset: offset,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn check_commit(response: &kcoord_wire::messages::OffsetCommitResponse) -> Result<(), String> {
    for p in response.topics.iter().flat_map(|t| &t.partitions) {
        if p.error_code != 0 {
            return Err(format!("a commit was answered {}", p.error_code));
        }
    }
    Ok(())
}

type CommitAnswer = tokio::task::JoinHandle<
    Result<kcoord_wire::messages::OffsetCommitResponse, kcoord_client::ClientError>,
>;

/// Waits for a commit sent on its own task and checks it was accepted.
async fn committed(answer: CommitAnswer) -> Result<(), String> {
    let response = answer
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    check_commit(&response)
}

/// One connection's commits until `end`: P in flight; latencies of those sent after `measure`.
async fn commit_loop(
    conn: Connection,
    group: String,
    inflight: usize,
    measure: Instant,
    end: Instant,
) -> Result<Vec<u64>, String> {
    let conn = Arc::new(conn);
    let mut latencies = Vec::new();
    let mut pending = VecDeque::new();
    let mut offset = 0i64;
    loop {
        while pending.len() < inflight && Instant::now() < end {
            offset += 1;
            let request = commit_request(&group, 0..1, offset);
            let conn = Arc::clone(&conn);
            let sent = Instant::now();
            pending.push_back((
                sent,
                tokio::spawn(async move { conn.send(request, 9).await }),
            ));
        }
        let Some((sent, answer)) = pending.pop_front() else {
            return Ok(latencies);
        };
        let response = answer
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        check_commit(&response)?;
        if sent >= measure {
            latencies.push(sent.elapsed().as_nanos() as u64);
        }
    }
}

fn percentile_us(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[at.min(sorted.len() - 1)] as f64 / 1_000.0
}

/// Commits/s and sorted latencies of the commit load against `daemon`.
async fn commit_load(s: &Settings, daemon: &common::Daemon) -> Result<(f64, Vec<u64>), String> {
    let admin = connect(daemon).await?;
    wait_loaded(s, &admin, Instant::now()).await?;
    create_topic(&admin, 1).await?;
    let start = Instant::now();
    let measure = start + Duration::from_secs_f64(s.warmup);
    let end = measure + Duration::from_secs_f64(s.seconds);
    let mut tasks = Vec::new();
    for c in 0..s.connections {
        let conn = connect(daemon).await?;
        tasks.push(tokio::spawn(commit_loop(
            conn,
            format!("bench-group-{c}"),
            s.inflight,
            measure,
            end,
        )));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())??);
    }
    latencies.sort_unstable();
    Ok((latencies.len() as f64 / s.seconds, latencies))
}

/// fdatasyncs per second of a file in `dir`, each after a 64-byte write, for `seconds`.
fn fsync_rate(dir: &std::path::Path, seconds: f64) -> Result<(f64, Vec<u64>), String> {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut latencies = Vec::new();
    while Instant::now() < end {
        let t = Instant::now();
        file.write_all(&[7u8; 64]).map_err(|e| e.to_string())?;
        file.sync_data().map_err(|e| e.to_string())?;
        latencies.push(t.elapsed().as_nanos() as u64);
    }
    latencies.sort_unstable();
    Ok((latencies.len() as f64 / seconds, latencies))
}

async fn commits(s: &Settings) -> Result<(), String> {
    let dir = temp_dir(s)?;
    let durable = start(s, Some(dir.path()));
    let (disk_rate, disk) = commit_load(s, &durable).await?;
    let (file_writes, records) = writer_totals(&durable.stop())?;
    let memory_daemon = start(s, None);
    let (memory_rate, memory) = commit_load(s, &memory_daemon).await?;
    memory_daemon.stop();
    let (fsyncs, fsync_latencies) = fsync_rate(dir.path(), s.seconds)?;
    // The daemon's own average group commit: records per file written and synced.
    let batch = if file_writes > 0 {
        records as f64 / file_writes as f64
    } else {
        0.0
    };
    let bound = fsyncs * batch;
    let ratio = if bound > 0.0 { disk_rate / bound } else { 0.0 };
    println!(
        r#"{{"bench":"offset_commit","fsync":{},"shards":{},"connections":{},"inflight":{},"seconds":{:.1},"disk_commits_per_s":{disk_rate:.0},"disk_p50_us":{:.1},"disk_p99_us":{:.1},"memory_commits_per_s":{memory_rate:.0},"memory_p50_us":{:.1},"memory_p99_us":{:.1},"fsyncs_per_s":{fsyncs:.0},"fsync_p50_us":{:.1},"fsync_p99_us":{:.1},"daemon_file_syncs":{file_writes},"daemon_records":{records},"records_per_file_sync":{batch:.1},"in_flight":{},"ratio":{ratio:.3},"goal_ratio":{GOAL_RATIO},"goal_met":{}}}"#,
        s.fsync,
        s.shards,
        s.connections,
        s.inflight,
        s.seconds,
        percentile_us(&disk, 50.0),
        percentile_us(&disk, 99.0),
        percentile_us(&memory, 50.0),
        percentile_us(&memory, 99.0),
        percentile_us(&fsync_latencies, 50.0),
        percentile_us(&fsync_latencies, 99.0),
        s.connections * s.inflight,
        ratio >= GOAL_RATIO,
    );
    Ok(())
}

/// Waits until every shard answers (none says COORDINATOR_LOAD_IN_PROGRESS any more).
async fn wait_loaded(s: &Settings, conn: &Connection, since: Instant) -> Result<(), String> {
    let mut waiting = group_per_shard(s);
    while !waiting.is_empty() {
        let mut still = Vec::new();
        for g in waiting {
            if fetch(conn, &g, 1).await?.is_none() {
                still.push(g);
            }
        }
        waiting = still;
        if since.elapsed() > Duration::from_secs(300) {
            return Err("the shards did not load within 300 s".into());
        }
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

/// (files written and synced, records) from the writer's last line in the daemon's log.
fn writer_totals(log: &str) -> Result<(u64, u64), String> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("coordinator log writer stopped"))
        .ok_or("the daemon did not log its writer's totals")?;
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or(format!("no {name} in {line:?}"))
    };
    Ok((field("file_writes=")?, field("records=")?))
}

/// Commits `offsets_per_group` offsets for each of `groups` groups, many requests in flight.
async fn fill(s: &Settings, daemon: &common::Daemon) -> Result<(), String> {
    let admin = connect(daemon).await?;
    wait_loaded(s, &admin, Instant::now()).await?;
    create_topic(&admin, s.offsets_per_group).await?;
    let mut tasks = Vec::new();
    let per_connection = s.groups.div_ceil(s.connections);
    for c in 0..s.connections {
        let conn = Arc::new(connect(daemon).await?);
        let groups: Vec<usize> =
            (c * per_connection..((c + 1) * per_connection).min(s.groups)).collect();
        let (inflight, per_group) = (s.inflight.max(16), s.offsets_per_group as i32);
        tasks.push(tokio::spawn(async move {
            let mut pending = VecDeque::new();
            for g in groups {
                let request = commit_request(&format!("restart-{g}"), 0..per_group, g as i64);
                let conn = Arc::clone(&conn);
                pending.push_back(tokio::spawn(async move { conn.send(request, 9).await }));
                if pending.len() >= inflight {
                    if let Some(answer) = pending.pop_front() {
                        committed(answer).await?;
                    }
                }
            }
            for answer in pending {
                committed(answer).await?;
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// The committed offsets of `group`, or `None` while its shard loads.
async fn fetch(
    conn: &Connection,
    group: &str,
    partitions: i32,
) -> Result<Option<Vec<i64>>, String> {
    let request = OffsetFetchRequest {
        groups: vec![OffsetFetchRequestGroup {
            group_id: group.into(),
            topics: Some(vec![OffsetFetchRequestTopics {
                name: TOPIC.into(),
                partition_indexes: (0..partitions).collect(),
                ..Default::default()
            }]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = conn.send(request, 9).await.map_err(|e| e.to_string())?;
    let g = &response.groups[0];
    if g.error_code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
        return Ok(None);
    }
    if g.error_code != 0 {
        return Err(format!("OffsetFetch answered {}", g.error_code));
    }
    Ok(Some(
        g.topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.committed_offset)
            .collect(),
    ))
}

/// One group name that hashes to each shard (Java's String.hashCode, as the daemon maps them).
fn group_per_shard(s: &Settings) -> Vec<String> {
    let mut found: Vec<Option<String>> = vec![None; s.shards];
    for g in 0.. {
        let name = format!("restart-{g}");
        let shard = kcoord_server::runtime::shards::shard_index(&name, s.shards);
        if found[shard].is_none() {
            found[shard] = Some(name);
        }
        if found.iter().all(Option::is_some) || g > 10 * s.shards + 1_000_000 {
            break;
        }
    }
    found.into_iter().flatten().collect()
}

async fn restart(s: &Settings) -> Result<(), String> {
    let dir = temp_dir(s)?;
    let daemon = start(s, Some(dir.path()));
    let filling = Instant::now();
    fill(s, &daemon).await?;
    let fill_s = filling.elapsed().as_secs_f64();
    daemon.stop();
    let bytes: u64 = walk_bytes(&dir.path().join("group-coordinator"));

    let started = Instant::now();
    let daemon = start(s, Some(dir.path()));
    let conn = connect(&daemon).await?;
    wait_loaded(s, &conn, started).await?;
    let load_s = started.elapsed().as_secs_f64();

    // A sample of groups, each with every offset it committed.
    let step = (s.groups / 100).max(1);
    for g in (0..s.groups).step_by(step) {
        let offsets = fetch(&conn, &format!("restart-{g}"), s.offsets_per_group as i32)
            .await?
            .ok_or("a shard went back to loading")?;
        if offsets != vec![g as i64; s.offsets_per_group] {
            return Err(format!("group restart-{g} came back with {offsets:?}"));
        }
    }
    let rss_kib = daemon
        .pid()
        .and_then(|pid| fleet::proc_status_kib(pid, "VmRSS"));
    daemon.stop();
    println!(
        r#"{{"bench":"coordinator_restart","groups":{},"offsets":{},"shards":{},"fill_s":{fill_s:.1},"log_bytes":{bytes},"restart_to_all_shards_loaded_s":{load_s:.2},"rss_kib_after_load":{},"goal_s":{GOAL_RESTART_S},"goal_met":{}}}"#,
        s.groups,
        s.groups * s.offsets_per_group,
        s.shards,
        rss_kib.map_or_else(|| "null".to_string(), |k| k.to_string()),
        load_s < GOAL_RESTART_S,
    );
    Ok(())
}

fn walk_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk_bytes(&path)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}
