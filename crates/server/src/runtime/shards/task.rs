//! Each shard's task: it loads the shard's log at startup (the shard answers
//! COORDINATOR_LOAD_IN_PROGRESS meanwhile), then runs its timers, sleeping until the shard's
//! next deadline and calling [`kcoord_coordinator::tick`] with the wall clock (read here and
//! nowhere in the coordinator crate). A request that brings the next deadline forward wakes it.
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kcoord_coordinator::{ReplayedLog, TickEvent};
use tokio::sync::{mpsc, watch, Notify};
use tracing::{error, info};

use super::handle::{ShardSink, Shared};
use super::{upstream, writer};
use crate::runtime::ownership::Ownership;
use crate::runtime::shard_log::{self, ShardLog};
use crate::runtime::upstream_log::CoordinatorLogs;
use crate::support::clock::{self, Stamp};

/// Holds every shard in its loading state until [`LoadGate::open`], so that tests can observe
/// COORDINATOR_LOAD_IN_PROGRESS deterministically (`Extensions::load_gate`).
#[derive(Debug, Clone)]
pub struct LoadGate {
    open: Arc<watch::Sender<bool>>,
}

impl Default for LoadGate {
    fn default() -> Self {
        LoadGate::new()
    }
}

impl LoadGate {
    /// A closed gate.
    pub fn new() -> Self {
        LoadGate {
            open: Arc::new(watch::channel(false).0),
        }
    }

    /// Lets the shards finish loading.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    async fn wait(&self) {
        let mut open = self.open.subscribe();
        // The sender lives in `self`, so this only ends when the gate opens.
        let _ = open.wait_for(|open| *open).await;
    }
}

/// The shards' timer tasks, built but not yet running, and the task writing their logs.
pub struct ShardTasks {
    pub(super) tasks: Vec<ShardTask>,
    /// With a log directory: the writer's queue of loaded shards, and whether it fsyncs.
    pub(super) writer: Option<(mpsc::UnboundedReceiver<writer::Loaded>, Arc<Notify>, bool)>,
}

pub(super) struct ShardTask {
    pub(super) shared: Arc<Shared>,
    pub(super) loading: watch::Sender<bool>,
    pub(super) gate: Option<LoadGate>,
    /// Where the shard's log is (`None`: in memory).
    pub(super) log_dir: Option<PathBuf>,
    /// Hands the loaded shard's log to the writer task, and wakes it when records queue.
    pub(super) to_writer: Option<(mpsc::UnboundedSender<writer::Loaded>, Arc<Notify>)>,
    /// In gateway mode: the upstream topic the shard's log lives in (instead of a file), and
    /// which kcoord node serves the shard.
    pub(super) upstream: Option<(Arc<CoordinatorLogs>, watch::Receiver<Ownership>)>,
}

impl ShardTasks {
    /// Every shard stays loading until `gate` opens.
    pub fn with_load_gate(mut self, gate: LoadGate) -> Self {
        for task in &mut self.tasks {
            task.gate = Some(gate.clone());
            task.shared.loaded.store(false, Ordering::Release);
            task.loading.send_replace(true);
        }
        self
    }

    /// Every shard keeps its log in the upstream cluster's `logs` topic (gateway mode), not in
    /// memory or a file: each loads by claiming its partition when `ownership` says this node
    /// serves it, and unloads when it moves to another node.
    pub fn with_upstream_logs(
        mut self,
        logs: Arc<CoordinatorLogs>,
        ownership: watch::Receiver<Ownership>,
    ) -> Self {
        for task in &mut self.tasks {
            task.upstream = Some((Arc::clone(&logs), ownership.clone()));
            task.log_dir = None;
            task.to_writer = None;
            task.shared.loaded.store(false, Ordering::Release);
            task.loading.send_replace(true);
        }
        self.writer = None;
        self
    }

    /// Starts every shard task; they stop when `stop` turns true (or its sender is dropped).
    pub fn spawn(self, stop: &watch::Receiver<bool>) -> Vec<tokio::task::JoinHandle<()>> {
        let mut running: Vec<_> = self
            .tasks
            .into_iter()
            .map(|task| tokio::spawn(task.run(stop.clone())))
            .collect();
        if let Some((loaded, wake, fsync)) = self.writer {
            running.push(tokio::spawn(writer::run(loaded, wake, fsync, stop.clone())));
        }
        running
    }
}

/// A shard whose task ended, or was never started, refuses requests (COORDINATOR_NOT_AVAILABLE).
impl Drop for ShardTask {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Release);
        // Dropping `loading` (the sender) ends every wait for the load to finish.
    }
}

impl ShardTask {
    async fn run(self, mut stop: watch::Receiver<bool>) {
        if let Some(gate) = &self.gate {
            tokio::select! {
                _ = gate.wait() => {}
                _ = crate::support::shutdown::stopped(&mut stop) => return,
            }
        }
        if let Some((logs, ownership)) = self.upstream.clone() {
            upstream::serve_while_owned(&self, logs, ownership, stop).await;
            return;
        }
        let writer = match &self.log_dir {
            None => None,
            Some(dir) => match self.load(dir).await {
                Some(writer) => Some(writer),
                // Logged by `load`; the task ends, so the shard answers COORDINATOR_NOT_AVAILABLE.
                None => return,
            },
        };
        self.loaded();
        if let (Some(writer), Some((to_writer, _))) = (writer, &self.to_writer) {
            let loaded = writer::Loaded {
                shared: Arc::clone(&self.shared),
                writer,
            };
            if to_writer.send(loaded).is_err() {
                // The writer task is gone (shutting down): nothing this shard queues is written.
                return;
            }
        }
        self.run_timers(&mut stop).await;
    }

    /// Another kcoord node serves the shard: it answers NOT_COORDINATOR and holds nothing.
    pub(super) fn not_owned(&self) {
        let mut locked = self.shared.lock();
        self.shared.owned.store(false, Ordering::Release);
        locked.parked.clear();
        let empty = locked
            .runtime
            .reloaded(ReplayedLog::empty(), clock::now_ms());
        locked.runtime.replace_core(empty);
        locked.runtime.set_log(ShardSink::Memory);
        self.shared.publish_groups(&locked.runtime);
        drop(locked);
        self.shared.loaded.store(true, Ordering::Release);
        // Requests waiting for the load go on, and are answered NOT_COORDINATOR.
        self.loading.send_replace(false);
    }

    /// This node serves the shard from now on, once it has loaded it.
    pub(super) fn owned_and_loading(&self) {
        let _locked = self.shared.lock();
        self.shared.loaded.store(false, Ordering::Release);
        self.loading.send_replace(true);
        self.shared.stopped.store(false, Ordering::Release);
        self.shared.owned.store(true, Ordering::Release);
    }

    /// The shard serves from now on.
    pub(super) fn loaded(&self) {
        self.shared.loaded.store(true, Ordering::Release);
        self.loading.send_replace(false);
        self.start_offset_expiry();
        // A transaction decided before a restart has its markers written now.
        self.shared.markers.notify_one();
    }

    /// Arms the periodic expiry of committed offsets, as Kafka does once a shard is loaded;
    /// not a job of its own (nothing is written, and `jobs_run` counts requests' work).
    fn start_offset_expiry(&self) {
        let mut locked = self.shared.lock();
        let now = clock::now_ms();
        let outcome = locked.runtime.start_offset_expiry(now);
        if let Err(refused) = locked.runtime.commit(outcome) {
            error!(shard = self.shared.index, error = %refused.error, "could not start the expiry of committed offsets");
        }
        let outcome = locked.runtime.start_transaction_checks(now);
        if let Err(refused) = locked.runtime.commit(outcome) {
            error!(shard = self.shared.index, error = %refused.error, "could not start the transaction timeouts");
        }
    }

    /// Replays the shard's log into it; returns the writer that appends to the file, or `None`
    /// (logged) when the file cannot be read: its groups then stay unavailable rather than
    /// being served without what the file holds.
    async fn load(&self, dir: &Path) -> Option<kcoord_metadata::LogWriter> {
        let started = std::time::Instant::now();
        let path = dir.to_path_buf();
        // Reading and replaying a large log takes a while: off the runtime's workers, and off
        // the shard's lock.
        let opened = tokio::task::spawn_blocking(move || {
            let (writer, records) = shard_log::open(&path).map_err(|e| e.to_string())?;
            let replayed = ReplayedLog::durable(&records)
                .map_err(|e| format!("{}: the log does not replay: {e}", path.display()))?;
            Ok::<_, String>((writer, records.len(), replayed))
        })
        .await;
        let (writer, records, replayed) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => {
                error!(shard = self.shared.index, error = %e, "cannot load the coordinator shard's log; its groups are unavailable");
                return None;
            }
            Err(e) => {
                error!(shard = self.shared.index, error = %e, "loading the coordinator shard's log failed");
                return None;
            }
        };
        let wake = self.to_writer.as_ref().map(|(_, wake)| Arc::clone(wake))?;
        let log = Arc::new(ShardLog::new(dir, writer.next_offset(), wake));
        let mut locked = self.shared.lock();
        let loaded = locked.runtime.reloaded(replayed, clock::now_ms());
        locked.runtime.replace_core(loaded);
        locked.runtime.set_log(ShardSink::Durable(Arc::clone(&log)));
        self.shared.publish_groups(&locked.runtime);
        let state = locked.runtime.state();
        let groups = state.streams_groups.len();
        let offsets = state.offsets.iter().map(|(_, o)| o.len()).sum::<usize>();
        drop(locked);
        let _ = self.shared.log.set(log);
        info!(
            shard = self.shared.index,
            records,
            groups,
            offsets,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "coordinator shard loaded"
        );
        Some(writer)
    }

    pub(super) async fn run_timers(&self, stop: &mut watch::Receiver<bool>) {
        let sleep = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(sleep);
        loop {
            let started = Stamp::now();
            let now = started.ms();
            let next = self.tick_if_due(started);
            let wait =
                next.map(|d| Duration::from_millis(u64::try_from(d - now).unwrap_or(0).max(1)));
            if let Some(wait) = wait {
                sleep.as_mut().reset(tokio::time::Instant::now() + wait);
            }
            tokio::select! {
                () = &mut sleep, if wait.is_some() => {}
                () = self.shared.deadline_moved.notified() => {}
                _ = crate::support::shutdown::stopped(stop) => break,
            }
        }
    }

    /// Ticks when a deadline has passed; returns the next deadline, which it arms.
    fn tick_if_due(&self, started: Stamp) -> Option<i64> {
        let mut locked = self.shared.lock();
        if !self.shared.loaded.load(Ordering::Acquire) {
            // Reloading: its timers are armed afresh by the load, which wakes this task.
            return None;
        }
        let now = started.ms();
        if locked.runtime.next_deadline().is_some_and(|d| d <= now) {
            // The fencing records are queued like any job's; nobody waits for them.
            let tick = kcoord_coordinator::tick(&mut locked.runtime, now);
            for event in &tick.events {
                log_tick_event(self.shared.index, event);
                if matches!(event, TickEvent::TransactionTimedOut { .. }) {
                    self.shared.metrics.transactions.timed_out.inc();
                    self.shared.markers.notify_one();
                }
            }
            for failure in &tick.failures {
                error!(shard = self.shared.index, error = %failure, "coordinator timers failed");
            }
            if let Some(reason) = &tick.diverged {
                error!(shard = self.shared.index, reason = %reason, "a coordinator timer left the shard's state apart from its log; the shard is rebuilt from the log");
                self.shared.rebuild(&mut locked, now);
            }
            self.shared.deliver(&mut locked);
            self.shared.publish_groups(&locked.runtime);
        }
        let next = locked.runtime.next_deadline();
        locked.armed = next.unwrap_or(i64::MAX);
        next
    }
}

fn log_tick_event(shard: usize, event: &TickEvent) {
    match event {
        TickEvent::SessionExpired {
            group_id,
            member_id,
        } => info!(
            shard,
            group = %group_id,
            member = %member_id,
            "streams group member fenced: session timeout expired"
        ),
        TickEvent::RebalanceTimedOut {
            group_id,
            member_id,
        } => info!(
            shard,
            group = %group_id,
            member = %member_id,
            "streams group member fenced: it did not revoke its tasks within its rebalance timeout"
        ),
        TickEvent::AssignmentComputed { group_id, epoch } => info!(
            shard,
            group = %group_id,
            epoch,
            "streams group target assignment computed after the initial rebalance delay"
        ),
        TickEvent::OffsetsExpired { group_id, count } => info!(
            shard,
            group = %group_id,
            count,
            "expired committed offsets removed"
        ),
        TickEvent::GroupExpired { group_id } => info!(
            shard,
            group = %group_id,
            "empty group without committed offsets deleted"
        ),
        TickEvent::TransactionTimedOut {
            transactional_id,
            producer_id,
        } => info!(
            shard,
            transactional_id = %transactional_id,
            producer_id,
            "transaction timed out: its producer is fenced and it is aborted"
        ),
        TickEvent::ClassicMemberExpired {
            group_id,
            member_id,
        } => info!(
            shard,
            group = %group_id,
            member = %member_id,
            "classic group member removed: no heartbeat within its session timeout"
        ),
        TickEvent::TransactionalIdExpired { transactional_id } => info!(
            shard,
            transactional_id = %transactional_id,
            "idle transactional id expired"
        ),
    }
}
