//! Rebalance bench: a join storm of N members into one new streams group; how long until the
//! group is Stable and how many heartbeats that took. One JSON line per profile (and repeat).
//!
//! ```text
//! cargo bench --bench rebalance                                # 100 members, both profiles
//! cargo bench --bench rebalance -- --profiles immediate --repeat 3 --heartbeat-interval-ms 1000
//! ```
//!
//! Each profile gets its own `kcoord` child process (the binary Cargo built alongside the
//! bench):
//! - `defaults`: Kafka's defaults: `group.streams.initial.rebalance.delay.ms=3000`,
//!   `group.streams.assignment.interval.ms=1000`, `group.streams.heartbeat.interval.ms=5000`;
//! - `immediate`: no initial rebalance delay and no assignment interval (both 0).
//!
//! `--heartbeat-interval-ms H` sets `group.streams.heartbeat.interval.ms` (and lowers
//! `group.streams.min.heartbeat.interval.ms` to it when needed) in every profile.
//!
//! The group reads one source topic of `--partitions` (100) partitions with one stateless
//! subtopology, so it has that many active tasks. Each of the `--members` (100) members has its
//! own connection (as each Kafka Streams client has), opened beforehand; then all send their
//! join heartbeat at the same instant (a barrier) and from then on each heartbeats exactly when
//! the step API says: at once while joining, when its owned tasks changed (to acknowledge
//! them) or when asked to hurry, and otherwise after the heartbeat interval the coordinator
//! gave it. Time-to-stable runs from the barrier to the response after which every member has
//! reported its tasks (state Stable), all at the same member epoch, with their active tasks
//! complete and disjoint; `heartbeats` counts the heartbeats sent until then (joins included).
//! StreamsGroupDescribe then confirms the coordinator sees the group Stable. Each storm is
//! bounded by `--timeout` seconds (60); a storm that does not converge fails the bench.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration (5
//! members, 10 partitions, profile `immediate`, heartbeat interval 200 ms).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcoord_client::streams::{
    HeartbeatOutcome, MemberState, OwnedTasksReporting, StreamsMember, StreamsMemberConfig,
};
use kcoord_wire::api::ApiKey;
use tokio::sync::{watch, Barrier};

const SOURCE_TOPIC: &str = "bench-source";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Profile {
    Defaults,
    Immediate,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::Defaults => "defaults",
            Profile::Immediate => "immediate",
        }
    }

    /// (initial rebalance delay, assignment interval) in ms.
    fn delays(self) -> (i32, i32) {
        match self {
            Profile::Defaults => (3000, 1000),
            Profile::Immediate => (0, 0),
        }
    }
}

struct Settings {
    members: usize,
    partitions: usize,
    profiles: Vec<Profile>,
    repeat: usize,
    heartbeat_interval_ms: Option<i32>,
    timeout: f64,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut s = if bench {
        Settings {
            members: 100,
            partitions: 100,
            profiles: vec![Profile::Defaults, Profile::Immediate],
            repeat: 1,
            heartbeat_interval_ms: None,
            timeout: 60.0,
        }
    } else {
        Settings {
            members: 5,
            partitions: 10,
            profiles: vec![Profile::Immediate],
            repeat: 1,
            heartbeat_interval_ms: Some(200),
            timeout: 30.0,
        }
    };
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        let value = args.get(i + 1).map(String::as_str);
        let number = |v: Option<&str>| -> Result<usize, String> {
            v.and_then(|v| v.parse::<usize>().ok())
                .filter(|v| (1..=100_000).contains(v))
                .ok_or_else(|| format!("{name} needs a number from 1 to 100000"))
        };
        match name {
            "--members" => s.members = number(value)?,
            "--partitions" => s.partitions = number(value)?,
            "--repeat" => s.repeat = number(value)?,
            "--heartbeat-interval-ms" => s.heartbeat_interval_ms = Some(number(value)? as i32),
            "--timeout" => {
                s.timeout = value
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| *v > 0.0 && *v <= 3600.0)
                    .ok_or("--timeout needs seconds between 0 and 3600")?
            }
            "--profiles" => {
                s.profiles = value
                    .ok_or("--profiles needs a list")?
                    .split(',')
                    .map(|p| match p.trim() {
                        "defaults" => Ok(Profile::Defaults),
                        "immediate" => Ok(Profile::Immediate),
                        other => Err(format!("unknown profile {other:?} (defaults, immediate)")),
                    })
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
    Ok(s)
}

/// What the members last reported, for the convergence check.
#[derive(Clone, Default)]
struct Seen {
    epoch: i32,
    stable: bool,
    active: Vec<(String, i32)>,
}

struct Shared {
    members: usize,
    seen: Mutex<Vec<Seen>>,
    tasks: usize,
    sent: AtomicU64,
    joins: AtomicU64,
    fenced: AtomicU64,
    retried: AtomicU64,
    /// Set once, by the response that completes convergence: (time since the barrier, sent).
    done: watch::Sender<Option<(Duration, u64)>>,
    /// When every member's join had been answered.
    joined: Mutex<(usize, Option<Duration>)>,
}

impl Shared {
    fn converged(seen: &[Seen], tasks: usize) -> bool {
        let Some(epoch) = seen.first().map(|s| s.epoch) else {
            return true;
        };
        if epoch <= 0 || !seen.iter().all(|s| s.stable && s.epoch == epoch) {
            return false;
        }
        let mut all = BTreeSet::new();
        let mut count = 0;
        for s in seen {
            count += s.active.len();
            all.extend(s.active.iter());
        }
        count == tasks && all.len() == tasks
    }
}

/// One member on its own connection, heartbeating when the step API says, until the group
/// converged (or the deadline).
async fn member_task(
    index: usize,
    mut member: StreamsMember,
    mut pipe: fleet::Pipe,
    version: i16,
    shared: Arc<Shared>,
    barrier: Arc<Barrier>,
    deadline: Instant,
) -> Result<u64, String> {
    let mut done = shared.done.subscribe();
    barrier.wait().await;
    let start = Instant::now();
    let mut own = 0u64;
    let mut frames = Vec::new();
    loop {
        if done.borrow().is_some() {
            return Ok(own);
        }
        let delay = if own == 0 {
            Duration::ZERO
        } else {
            member.next_heartbeat_delay()
        };
        if !delay.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = done.changed() => return Ok(own),
                _ = tokio::time::sleep_until(deadline.into()) => return Ok(own),
            }
        }
        if Instant::now() >= deadline {
            return Ok(own);
        }
        let joining = member.state() == MemberState::Joining || member.member_epoch() == 0;
        let request = fleet::next_heartbeat(&mut member, false)?;
        let id = pipe.next_id();
        fleet::encode_request(
            ApiKey::StreamsGroupHeartbeat,
            version,
            id,
            &request,
            &mut pipe.out,
        )?;
        pipe.flush().await?;
        own += 1;
        shared.sent.fetch_add(1, Ordering::SeqCst);
        if joining {
            shared.joins.fetch_add(1, Ordering::Relaxed);
        }
        frames.clear();
        pipe.read_frames(&mut frames).await?;
        let frame = frames.pop().ok_or("no frame")?;
        let outcome = fleet::apply_response(&mut member, version, id, frame)?;
        match outcome {
            HeartbeatOutcome::Accepted { .. } => {}
            HeartbeatOutcome::Fenced { .. } => {
                shared.fenced.fetch_add(1, Ordering::Relaxed);
            }
            HeartbeatOutcome::Retry { .. } => {
                shared.retried.fetch_add(1, Ordering::Relaxed);
            }
        }
        if own == 1 {
            let mut joined = shared.joined.lock().unwrap_or_else(|e| e.into_inner());
            joined.0 += 1;
            if joined.0 == shared.members {
                joined.1 = Some(start.elapsed());
            }
        }
        let mut seen = shared.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen[index] = Seen {
            epoch: member.member_epoch(),
            stable: member.state() == MemberState::Stable,
            active: member
                .assignment()
                .active_tasks()
                .map(|(s, p)| (s.to_string(), p))
                .collect(),
        };
        if Shared::converged(&seen, shared.tasks) && shared.done.borrow().is_none() {
            let sent = shared.sent.load(Ordering::SeqCst);
            let _ = shared.done.send(Some((start.elapsed(), sent)));
            return Ok(own);
        }
    }
}

async fn storm(
    s: &Settings,
    profile: Profile,
    repeat: usize,
    daemon: &common::Daemon,
    client: &kcoord_client::Client,
    version: i16,
) -> Result<String, String> {
    let addr = daemon.bootstrap();
    let group = format!("rebalance-{}-{repeat}", profile.name());
    let topology = fleet::topology(SOURCE_TOPIC);
    let shared = Arc::new(Shared {
        members: s.members,
        seen: Mutex::new(vec![Seen::default(); s.members]),
        tasks: s.partitions,
        sent: AtomicU64::new(0),
        joins: AtomicU64::new(0),
        fenced: AtomicU64::new(0),
        retried: AtomicU64::new(0),
        done: watch::channel(None).0,
        joined: Mutex::new((0, None)),
    });
    let barrier = Arc::new(Barrier::new(s.members));
    let mut pipes = Vec::with_capacity(s.members);
    for _ in 0..s.members {
        pipes.push(fleet::Pipe::connect(&addr).await?);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(s.timeout);
    let mut tasks = Vec::with_capacity(s.members);
    for (index, pipe) in pipes.into_iter().enumerate() {
        let config = StreamsMemberConfig::new(group.clone(), Arc::clone(&topology))
            .with_heartbeat_version(version)
            .with_owned_tasks(OwnedTasksReporting::WhenChanged);
        let member = StreamsMember::new(client, config);
        tasks.push(tokio::spawn(member_task(
            index,
            member,
            pipe,
            version,
            Arc::clone(&shared),
            Arc::clone(&barrier),
            deadline,
        )));
    }
    let mut per_member = Vec::with_capacity(s.members);
    for task in tasks {
        per_member.push(task.await.map_err(|e| format!("member task: {e}"))??);
    }
    let Some((elapsed, heartbeats)) = *shared.done.borrow() else {
        return Err(format!(
            "the {} group did not converge within {} s ({} heartbeats sent)",
            profile.name(),
            s.timeout,
            shared.sent.load(Ordering::SeqCst)
        ));
    };
    // The coordinator agrees.
    let described = fleet::describe(&client.bootstrap(), std::slice::from_ref(&group)).await?;
    let described = described.first().ok_or("no describe answer")?;
    fleet::check_stable(described, s.members, s.partitions)?;

    let (initial_delay, assignment_interval) = profile.delays();
    let interval = s.heartbeat_interval_ms.unwrap_or(5000);
    let joined = shared.joined.lock().map_or(None, |j| j.1);
    let mut line = String::new();
    let _ = write!(
        line,
        r#"{{"bench":"rebalance","profile":"{}","repeat":{repeat},"members":{},"partitions":{},"initial_rebalance_delay_ms":{initial_delay},"assignment_interval_ms":{assignment_interval},"heartbeat_interval_ms":{interval},"time_to_stable_ms":{:.1},"heartbeats":{heartbeats},"heartbeats_per_member":{:.2},"max_heartbeats_per_member":{},"joins":{},"fenced":{},"retried":{},"all_joined_ms":{},"group_epoch":{},"stable":true,"version":{version}}}"#,
        profile.name(),
        s.members,
        s.partitions,
        elapsed.as_secs_f64() * 1e3,
        heartbeats as f64 / s.members as f64,
        per_member.iter().max().copied().unwrap_or(0),
        shared.joins.load(Ordering::Relaxed),
        shared.fenced.load(Ordering::Relaxed),
        shared.retried.load(Ordering::Relaxed),
        joined.map_or_else(
            || "null".into(),
            |d| format!("{:.1}", d.as_secs_f64() * 1e3)
        ),
        described.group_epoch,
    );
    Ok(line)
}

fn daemon_config(s: &Settings, profile: Profile) -> Vec<String> {
    let (delay, interval) = profile.delays();
    let mut lines = vec![
        format!("group.streams.initial.rebalance.delay.ms={delay}"),
        format!("group.streams.assignment.interval.ms={interval}"),
        "log.level=warn".to_string(),
    ];
    if let Some(h) = s.heartbeat_interval_ms {
        lines.push(format!("group.streams.heartbeat.interval.ms={h}"));
        if h < 5000 {
            lines.push(format!("group.streams.min.heartbeat.interval.ms={h}"));
        }
        if h > 15000 {
            lines.push(format!("group.streams.max.heartbeat.interval.ms={h}"));
        }
    }
    lines
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rebalance: {e}");
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
            eprintln!("rebalance: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = false;
    for &profile in &s.profiles {
        let lines = daemon_config(&s, profile);
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let daemon = common::Daemon::start(&refs);
        let result: Result<(), String> = runtime.block_on(async {
            let client = fleet::connect_client(&daemon.bootstrap()).await?;
            fleet::create_topic(&client.bootstrap(), SOURCE_TOPIC, s.partitions as i32).await?;
            let version = fleet::heartbeat_version(&client).await?;
            for repeat in 1..=s.repeat {
                let line = storm(&s, profile, repeat, &daemon, &client, version).await?;
                println!("{line}");
            }
            Ok(())
        });
        if let Err(e) = result {
            eprintln!(
                "rebalance: profile {}: {e}\n--- daemon stderr ---\n{}",
                profile.name(),
                daemon.stderr_log()
            );
            failed = true;
            continue;
        }
        if !daemon.is_alive() {
            eprintln!("rebalance: the daemon died\n{}", daemon.stderr_log());
            failed = true;
            continue;
        }
        daemon.stop();
    }
    drop(runtime);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
