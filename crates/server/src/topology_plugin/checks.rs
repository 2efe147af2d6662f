//! The threads `requires_topology_push` runs on: a few threads of the plugin's own, each
//! with a bounded queue, so a plugin that blocks holds its own threads and never a runtime
//! worker.
//!
//! A heartbeat hands its question to a thread and waits for the answer within a budget
//! (`TopologyDescriptions::requires_push_for`); a thread whose queue is full is skipped, and
//! when every queue is full the question is not asked at all. Questions whose heartbeat
//! stopped waiting are dropped unasked when their turn comes: a "yes" then would make the
//! plugin wait for a push nobody was asked for.

use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use kcoord_plugin_api::{RequestContext as PluginContext, Uuid};
use tokio::sync::oneshot;

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

/// A question on its way to a check thread, with where to send the answer.
pub(super) struct Job {
    pub check: Check,
    pub reply: oneshot::Sender<(Check, Answer)>,
}

/// The plugin's check threads. Dropping this ends them once they finish what they are doing
/// (a thread stuck in the plugin stays stuck, and only that thread).
pub(super) struct CheckThreads {
    queues: Box<[SyncSender<Job>]>,
}

impl CheckThreads {
    /// `threads` threads, each with a queue of `capacity` questions.
    pub fn start(
        plugin: &Arc<Plugin>,
        threads: usize,
        capacity: usize,
    ) -> io::Result<CheckThreads> {
        let mut queues = Vec::with_capacity(threads);
        for i in 0..threads {
            let (tx, rx) = mpsc::sync_channel(capacity);
            let plugin = Arc::clone(plugin);
            std::thread::Builder::new()
                // Linux keeps 15 bytes of a thread's name.
                .name(format!("plugin-check-{i}"))
                .spawn(move || serve(&*plugin, rx))?;
            queues.push(tx);
        }
        Ok(CheckThreads {
            queues: queues.into(),
        })
    }

    /// Queues `job` on the first thread with room, starting from `start` (callers spread
    /// their starts so the threads share the work); false, dropping the job, when every queue
    /// is full, i.e. every thread has a backlog.
    pub fn submit(&self, mut job: Job, start: usize) -> bool {
        let n = self.queues.len();
        for k in 0..n {
            match self.queues[(start + k) % n].try_send(job) {
                Ok(()) => return true,
                Err(TrySendError::Full(back) | TrySendError::Disconnected(back)) => job = back,
            }
        }
        false
    }
}

/// A check thread: answers its queue until the daemon drops the sending side.
fn serve(plugin: &Plugin, jobs: Receiver<Job>) {
    for Job { check, reply } in jobs.iter() {
        if reply.is_closed() {
            continue;
        }
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| {
            plugin.requires_topology_push(&check.ctx, &check.group_id, check.id)
        }))
        .map_err(|panic| panic_message(panic.as_ref()));
        let _ = reply.send((check, answer));
    }
}
