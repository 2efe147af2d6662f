//! The threads `requires_topology_push` runs on: a few threads of the plugin's own, each
//! with a bounded queue, so a plugin that blocks holds its own threads and never a runtime
//! worker.
//!
//! A heartbeat hands its question to a thread and waits for the answer within a budget
//! (`TopologyDescriptions::requires_push_for`); a thread whose queue is full is skipped, and
//! when every queue is full the question is not asked at all. Questions whose heartbeat
//! stopped waiting are dropped unasked when their turn comes: a "yes" then would make the
//! plugin wait for a push nobody was asked for. The one exception is a probe of a failing
//! plugin (see `health`): asked on purpose with nobody waiting, only its time is used.
//!
//! A thread whose current question has been in the plugin for longer than the heartbeat's
//! budget is stuck, and gets no new questions until it comes back: otherwise every heartbeat
//! would wait out the budget in its queue until the queue filled. So a plugin that starts to
//! block delays the heartbeats of one budget's time, and after that none.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcoord_plugin_api::{RequestContext as PluginContext, Uuid};
use tokio::sync::oneshot;

use super::health::Health;
use super::{panic_message, Plugin};

/// One `requires_topology_push` question. Handed back with the answer, so the heartbeat path
/// reuses its buffers instead of allocating them per heartbeat.
#[derive(Debug)]
pub(super) struct Check {
    pub ctx: PluginContext,
    pub group_id: String,
    pub id: Uuid,
}

/// The plugin's answer, or the message of its panic.
pub(super) type Answer = Result<bool, String>;

/// A question on its way to a check thread, with where its answer goes.
pub(super) struct Job {
    pub check: Check,
    pub reply: Reply,
}

/// Where a check thread puts its answer.
pub(super) enum Reply {
    /// Back to the heartbeat waiting for it.
    Heartbeat(oneshot::Sender<(Check, Answer)>),
    /// Nobody waits: the plugin is failing and this question only finds out whether it
    /// answers within `budget` again (its answer is not used).
    Probe {
        health: Arc<Health>,
        budget: Duration,
    },
}

/// The plugin's check threads. Dropping this ends them once they finish what they are doing
/// (a thread stuck in the plugin stays stuck, and only that thread).
pub(super) struct CheckThreads {
    lanes: Box<[Lane]>,
    /// What [`Busy`] times are measured from.
    origin: Instant,
}

/// One check thread, as the heartbeats see it.
struct Lane {
    queue: SyncSender<Job>,
    busy: Arc<Busy>,
}

/// Since when a check thread has been in the plugin: nanoseconds after the threads' origin,
/// plus one; zero while it is not in the plugin.
#[derive(Default)]
struct Busy(AtomicU64);

impl Busy {
    fn enter(&self, origin: Instant) {
        let since = u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.0.store(since.saturating_add(1), Ordering::Release);
    }

    fn leave(&self) {
        self.0.store(0, Ordering::Release);
    }

    /// Whether the thread has been in the plugin for longer than `stuck_after` at `now`.
    fn stuck(&self, origin: Instant, now: Instant, stuck_after: Duration) -> bool {
        match self.0.load(Ordering::Acquire) {
            0 => false,
            since => {
                let entered = origin + Duration::from_nanos(since - 1);
                now.saturating_duration_since(entered) > stuck_after
            }
        }
    }
}

impl CheckThreads {
    /// `threads` threads, each with a queue of `capacity` questions.
    pub fn start(
        plugin: &Arc<Plugin>,
        threads: usize,
        capacity: usize,
    ) -> io::Result<CheckThreads> {
        let origin = Instant::now();
        let mut lanes = Vec::with_capacity(threads);
        for i in 0..threads {
            let (tx, rx) = mpsc::sync_channel(capacity);
            let plugin = Arc::clone(plugin);
            let busy = Arc::new(Busy::default());
            let in_plugin = Arc::clone(&busy);
            std::thread::Builder::new()
                // Linux keeps 15 bytes of a thread's name.
                .name(format!("plugin-check-{i}"))
                .spawn(move || serve(&*plugin, rx, &in_plugin, origin))?;
            lanes.push(Lane { queue: tx, busy });
        }
        Ok(CheckThreads {
            lanes: lanes.into(),
            origin,
        })
    }

    /// Queues `job` on the first thread with room that is not stuck (in the plugin for longer
    /// than `stuck_after`), starting from `start` (callers spread their starts so the threads
    /// share the work); false, dropping the job, when there is none.
    pub fn submit(&self, mut job: Job, start: usize, stuck_after: Duration) -> bool {
        let n = self.lanes.len();
        let now = Instant::now();
        for k in 0..n {
            let lane = &self.lanes[(start + k) % n];
            if lane.busy.stuck(self.origin, now, stuck_after) {
                continue;
            }
            match lane.queue.try_send(job) {
                Ok(()) => return true,
                Err(TrySendError::Full(back) | TrySendError::Disconnected(back)) => job = back,
            }
        }
        false
    }
}

/// A check thread: answers its queue until the daemon drops the sending side.
fn serve(plugin: &Plugin, jobs: Receiver<Job>, busy: &Busy, origin: Instant) {
    for Job { check, reply } in jobs.iter() {
        if let Reply::Heartbeat(reply) = &reply {
            if reply.is_closed() {
                continue;
            }
        }
        let started = Instant::now();
        busy.enter(origin);
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| {
            plugin.requires_topology_push(&check.ctx, &check.group_id, check.id)
        }))
        .map_err(|panic| panic_message(panic.as_ref()));
        busy.leave();
        match reply {
            Reply::Heartbeat(reply) => {
                let _ = reply.send((check, answer));
            }
            // A panic is an answer too (R7); only its time counts.
            Reply::Probe { health, budget } => {
                if started.elapsed() <= budget {
                    health.answered();
                }
            }
        }
    }
}
