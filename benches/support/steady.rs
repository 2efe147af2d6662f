//! Shared by the `soak` and `hostile` benches: streams members heartbeating at a steady pace,
//! the way real members do (each one every heartbeat interval, spread evenly over it), with
//! every answer checked and every latency kept.
//!
//! In steady state a heartbeat must come back accepted and change nothing; anything else
//! (an error, a fencing, an assignment change, no answer within [`fleet::IO_TIMEOUT`]) counts
//! as an error of the run.
#![allow(dead_code)] // each bench uses its own part

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kcoord_client::streams::{HeartbeatOutcome, OwnedTasksReporting, StreamsMember};
use kcoord_wire::api::ApiKey;

use crate::fleet::{self, Pipe};

/// The measured part of a run: answers received in `[from, end]` are counted.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub from: Instant,
    pub end: Instant,
}

impl Window {
    pub fn contains(&self, at: Instant) -> bool {
        at >= self.from && at <= self.end
    }
}

/// What the members of one connection saw.
#[derive(Debug, Default, Clone)]
pub struct SteadyStats {
    /// Answers inside the window, and their latencies (ns).
    pub heartbeats: u64,
    pub latencies_ns: Vec<u32>,
    /// Every answer, in the window or not.
    pub total: u64,
    /// Answers that were not "accepted, nothing changed", anywhere in the run.
    pub errors: u64,
    pub first_error: Option<String>,
}

impl SteadyStats {
    pub fn add(&mut self, other: SteadyStats) {
        self.heartbeats += other.heartbeats;
        self.latencies_ns.extend(other.latencies_ns);
        self.total += other.total;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn error(&mut self, what: String) {
        self.errors += 1;
        self.first_error.get_or_insert(what);
    }

    /// Nearest-rank percentile of the window's latencies, in ms.
    pub fn percentile_ms(&mut self, p: f64) -> f64 {
        self.latencies_ns.sort_unstable();
        crate::produce::percentile_us(&self.latencies_ns, p) / 1000.0
    }
}

/// Sets up `groups` groups of `per_group` members, each group on one stateless subtopology of
/// `topic` (`tasks` partitions, created here), joined and Stable; the pipes they settled on.
pub async fn settled_fleet(
    addr: &str,
    prefix: &str,
    topic: &str,
    groups: usize,
    per_group: usize,
    tasks: usize,
    connections: usize,
) -> Result<(fleet::Fleet, Vec<Pipe>), String> {
    let client = fleet::connect_client(addr).await?;
    fleet::create_topic(&client.bootstrap(), topic, tasks as i32).await?;
    let version = fleet::heartbeat_version(&client).await?;
    let mut members = fleet::Fleet::new(per_group, tasks, prefix, version);
    members.add_groups(
        &client,
        &fleet::topology(topic),
        groups,
        OwnedTasksReporting::WhenChanged,
    );
    let ids: Vec<String> = (0..groups).map(|g| fleet::group_id(prefix, g)).collect();
    fleet::find_coordinators(&client, &ids).await?;
    let mut pipes = Vec::with_capacity(connections);
    for _ in 0..connections {
        pipes.push(Pipe::connect(addr).await?);
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    members.settle(&mut pipes, 16, 0..groups, deadline).await?;
    for group in fleet::describe(&client.bootstrap(), &ids).await? {
        fleet::check_stable(&group, per_group, tasks)?;
    }
    Ok((members, pipes))
}

/// Heartbeats `members` over `pipe`, each one every `interval` (member `k` of `n` at offset
/// `k * interval / n`), at most `inflight` requests outstanding, until `stop_at`; then waits
/// for the answers still due. The pipe comes back unless it broke (a read or write failed,
/// an answer did not come): its later answers could not be matched to their requests.
pub async fn heartbeat_steadily(
    mut pipe: Pipe,
    mut members: Vec<(usize, StreamsMember)>,
    version: i16,
    interval: Duration,
    inflight: usize,
    window: Window,
    stop_at: Instant,
) -> (Option<Pipe>, Vec<(usize, StreamsMember)>, SteadyStats) {
    let mut stats = SteadyStats::default();
    let result = drive(
        &mut pipe,
        &mut members,
        version,
        interval,
        inflight.max(1),
        window,
        stop_at,
        &mut stats,
    )
    .await;
    match result {
        Ok(()) => (Some(pipe), members, stats),
        Err(e) => {
            stats.error(e);
            (None, members, stats)
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    pipe: &mut Pipe,
    members: &mut [(usize, StreamsMember)],
    version: i16,
    interval: Duration,
    inflight: usize,
    window: Window,
    stop_at: Instant,
    stats: &mut SteadyStats,
) -> Result<(), String> {
    if members.is_empty() {
        return Ok(());
    }
    let step = interval / members.len() as u32;
    let mut next = 0usize;
    let mut next_due = Instant::now();
    let mut outstanding: VecDeque<(usize, i32, Instant)> = VecDeque::with_capacity(inflight);
    let mut frames: Vec<Bytes> = Vec::new();
    loop {
        let now = Instant::now();
        while outstanding.len() < inflight && now >= next_due && now < stop_at {
            let request = fleet::next_heartbeat(&mut members[next].1, false)?;
            let id = pipe.next_id();
            fleet::encode_request(
                ApiKey::StreamsGroupHeartbeat,
                version,
                id,
                &request,
                &mut pipe.out,
            )?;
            outstanding.push_back((next, id, now));
            next = (next + 1) % members.len();
            // A late send does not bunch the ones after it.
            next_due = (next_due + step).max(now);
        }
        pipe.flush().await?;
        if outstanding.is_empty() {
            if now >= stop_at {
                return Ok(());
            }
            tokio::time::sleep_until(next_due.min(stop_at).into()).await;
            continue;
        }
        let wake = (outstanding.len() < inflight && now < stop_at).then_some(next_due);
        frames.clear();
        tokio::select! {
            read = pipe.read_frames(&mut frames) => read?,
            _ = tokio::time::sleep_until(wake.unwrap_or(stop_at).into()), if wake.is_some() => continue,
        }
        let answered = Instant::now();
        for frame in frames.drain(..) {
            let (at, id, sent) = outstanding
                .pop_front()
                .ok_or("an answer nobody asked for")?;
            let member = &mut members[at].1;
            stats.total += 1;
            match fleet::apply_response(member, version, id, frame)? {
                HeartbeatOutcome::Accepted {
                    assignment_changed: false,
                } => {}
                other => stats.error(format!(
                    "member {} of {}: {other:?}",
                    member.member_id(),
                    member.group_id()
                )),
            }
            if window.contains(answered) {
                stats.heartbeats += 1;
                let ns = answered.duration_since(sent).as_nanos();
                stats
                    .latencies_ns
                    .push(u32::try_from(ns).unwrap_or(u32::MAX));
            }
        }
    }
}

/// Runs every pipe's share of `members` (member `i` on pipe `i % pipes`) with
/// [`heartbeat_steadily`] and puts pipes and members back (a broken pipe replaced by a new
/// connection to `addr`); the summed stats.
#[allow(clippy::too_many_arguments)]
pub async fn heartbeat_all(
    addr: &str,
    pipes: &mut Vec<Pipe>,
    members: &mut Vec<StreamsMember>,
    version: i16,
    interval: Duration,
    inflight: usize,
    window: Window,
    stop_at: Instant,
) -> Result<SteadyStats, String> {
    let n = pipes.len().max(1);
    let mut shares: Vec<Vec<(usize, StreamsMember)>> = (0..n).map(|_| Vec::new()).collect();
    for (i, m) in std::mem::take(members).into_iter().enumerate() {
        shares[i % n].push((i, m));
    }
    let mut tasks = Vec::with_capacity(n);
    for (pipe, share) in std::mem::take(pipes).into_iter().zip(shares) {
        tasks.push(tokio::spawn(heartbeat_steadily(
            pipe, share, version, interval, inflight, window, stop_at,
        )));
    }
    let mut stats = SteadyStats::default();
    let mut back = Vec::new();
    for task in tasks {
        let (pipe, share, s) = task.await.map_err(|e| format!("heartbeat task: {e}"))?;
        pipes.push(match pipe {
            Some(pipe) => pipe,
            None => Pipe::connect(addr).await?,
        });
        back.extend(share);
        stats.add(s);
    }
    back.sort_unstable_by_key(|(i, _)| *i);
    *members = back.into_iter().map(|(_, m)| m).collect();
    Ok(stats)
}

/// Least-squares slope of `(seconds, value)` samples, per minute; `None` with fewer than two.
pub fn slope_per_minute(samples: &[(f64, f64)]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean_t = samples.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_v = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let cov: f64 = samples
        .iter()
        .map(|(t, v)| (t - mean_t) * (v - mean_v))
        .sum();
    let var: f64 = samples.iter().map(|(t, _)| (t - mean_t).powi(2)).sum();
    (var > 0.0).then(|| cov / var * 60.0)
}
