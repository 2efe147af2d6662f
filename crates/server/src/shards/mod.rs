//! The coordinator shards at run time: `offsets.topic.num.partitions` shards, each one sans-IO
//! [`CoordinatorShard`] owning the groups whose id hashes to it, as Kafka partitions
//! `__consumer_offsets`.
//!
//! A request runs on the connection task that received it, holding its shard's lock for the
//! few microseconds the shard needs: no channel, no reply oneshot, no cross-thread wake-up on
//! the heartbeat path. Requests of one shard are thereby serialized (as Kafka's coordinator
//! runtime serializes a partition's events), and requests of different shards run in parallel.
//! A request whose work grows with a list the client chose (many groups, partitions or offsets)
//! runs as several small jobs and yields between them (`handlers::groups`, OffsetFetch), or is
//! refused before its job when it could not be written anyway (an OffsetCommit larger than one
//! batch), so no client holds a shard, and the heartbeats of its groups, for long.
//! A connection answers its requests one after another, so a client's pipelined requests are
//! handled in the order sent, and the responses of one read batch leave in one write.
//!
//! Timers run on one task per shard, which sleeps until the shard's next deadline and then
//! calls `tick` with the wall clock (read here and nowhere in the coordinator crate). A request
//! that brings the next deadline forward wakes it.
//!
//! Every job on a shard (a request, a timer tick, a catalog change) runs as one unit: the records
//! it appends come out as one batch, a job that panics or has a batch refused is undone whole,
//! and with a durable log (`group.coordinator.log.*`) the batch is queued for the shard's
//! writer and the request is answered once it is on disk ([`crate::shard_log`]). At startup each
//! shard replays its own log on its own task; until it has, its groups answer
//! COORDINATOR_LOAD_IN_PROGRESS and the other shards serve.
//!
//! Topic catalog changes arrive from the controller through [`Coordinators::topics_changed`],
//! which returns once every shard holds the new catalog, so a request sent after a CreateTopics
//! answer is always handled against it.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use kcoord_coordinator::offsets::DeletedTopic;
use kcoord_coordinator::runtime::JobEnd;
use kcoord_coordinator::timers::TickEvent;
use kcoord_coordinator::{CoordinatorShard, StreamsGroupConfig};
use kcoord_metadata::TopicsImage;
use kcoord_wire::ErrorCode;
use tokio::sync::{mpsc, watch, Notify};
use tracing::{error, info};

use crate::clock::{self, Stamp};
use crate::config::coordinator_log::CoordinatorLogSettings;
use crate::metrics::Metrics;
use crate::shard_log::{self, DurableWait, ShardLog};

mod writer;

/// Why a shard could not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// The shard is not running (shutting down).
    #[error("the coordinator shard is not available")]
    Unavailable,
    /// The job panicked; the shard logged it and goes on serving other groups.
    #[error("the coordinator shard failed while handling the request")]
    Failed,
    /// The shard is still replaying its log.
    #[error("the coordinator shard is loading")]
    Loading,
    /// The job's records (or records it read) could not be written to the shard's log, so they
    /// were undone.
    #[error("the coordinator shard could not write its log")]
    NotDurable,
}

impl ShardError {
    /// The Kafka error a client gets instead of an answer.
    pub fn error_code(self) -> ErrorCode {
        match self {
            ShardError::Unavailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ShardError::Failed => ErrorCode::UNKNOWN_SERVER_ERROR,
            ShardError::Loading => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            // Kafka's group coordinator answers a write its log could not take (a storage error)
            // with NOT_COORDINATOR (`GroupCoordinatorService.normalizeException`): the client
            // looks the coordinator up again and retries.
            ShardError::NotDurable => ErrorCode::NOT_COORDINATOR,
        }
    }
}

/// What the lock protects.
struct Locked {
    shard: CoordinatorShard,
    topics: Arc<TopicsImage>,
    /// The deadline the timer task sleeps until (`i64::MAX`: none). Kept under the lock so a
    /// request that arms an earlier deadline always sees what the timer task is waiting for.
    armed: i64,
}

struct Shared {
    index: usize,
    locked: Mutex<Locked>,
    /// Wakes the timer task when a request brought the next deadline forward.
    deadline_moved: Notify,
    stopped: AtomicBool,
    /// Set once loading has finished: read on every request, where the `loading` watch would
    /// take its read lock.
    loaded: AtomicBool,
    /// The shard's durable log, once loaded (never, when groups are kept in memory).
    log: OnceLock<Arc<ShardLog>>,
    /// Jobs run so far (requests, ticks, catalog changes).
    jobs: AtomicU64,
    /// The groups this shard held after its last job, and the node's total of those counts:
    /// what `group.coordinator.max.groups` is checked against. Shards creating groups at the
    /// same moment may each see the other's before it counts, so the node can pass the bound by
    /// at most one group per shard.
    groups: AtomicUsize,
    groups_total: Arc<AtomicUsize>,
    /// Rebalances, assignments and their jobs' time; the log's appends and fsyncs.
    metrics: Arc<Metrics>,
}

/// One shard as seen from a connection.
#[derive(Clone)]
pub struct ShardHandle {
    shared: Arc<Shared>,
    /// True until the shard's task has finished its startup work (replaying what it owns; today
    /// there is nothing to replay, so only a [`LoadGate`] keeps it true). Handlers that must
    /// answer COORDINATOR_LOAD_IN_PROGRESS meanwhile read it; other requests wait for it.
    loading: watch::Receiver<bool>,
}

impl std::fmt::Debug for ShardHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardHandle")
            .field("index", &self.shared.index)
            .finish_non_exhaustive()
    }
}

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

impl Shared {
    /// Publishes how many groups `shard` holds now.
    fn publish_groups(&self, shard: &CoordinatorShard) {
        let now = shard.state().group_count();
        let before = self.groups.swap(now, Ordering::AcqRel);
        if now >= before {
            self.groups_total.fetch_add(now - before, Ordering::AcqRel);
        } else {
            self.groups_total.fetch_sub(before - now, Ordering::AcqRel);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Locked> {
        // Jobs run under `catch_unwind` inside the lock, so a poisoned lock would mean a panic
        // in this module's own bookkeeping; the state is still the shard's last consistent one.
        self.locked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ShardHandle {
    pub fn index(&self) -> usize {
        self.shared.index
    }

    /// How many jobs the shard has run: each holds its lock once, so a request that ran many
    /// jobs let others in between them.
    pub fn jobs_run(&self) -> u64 {
        self.shared.jobs.load(Ordering::Relaxed)
    }

    /// Calls `each` with the state and member count of every streams group the shard holds,
    /// under its lock (for `/metrics`: a pass over the groups, no allocation).
    pub fn census(&self, mut each: impl FnMut(kcoord_wire::GroupState, usize)) {
        let locked = self.shared.lock();
        for group in locked.shard.state().streams_groups.iter() {
            each(kcoord_coordinator::group_state(group), group.members.len());
        }
    }

    /// Whether the shard is still loading (COORDINATOR_LOAD_IN_PROGRESS).
    pub fn is_loading(&self) -> bool {
        !self.shared.loaded.load(Ordering::Acquire)
    }

    /// Waits until the shard has loaded (returns at once if it has, or once the shard stopped).
    pub async fn loaded(&self) {
        let mut loading = self.loading.clone();
        let _ = loading.wait_for(|loading| !*loading).await;
    }

    /// Runs `f` on the shard as one job and returns what it returned, once every record the
    /// job appended or read is durable. A loading shard answers [`ShardError::Loading`] at once,
    /// as Kafka's coordinator answers COORDINATOR_LOAD_IN_PROGRESS.
    pub async fn call<R, F>(&self, f: F) -> Result<R, ShardError>
    where
        F: FnOnce(&mut CoordinatorShard, &TopicsImage, i64) -> R,
    {
        if self.is_loading() {
            return Err(if self.shared.stopped.load(Ordering::Acquire) {
                ShardError::Unavailable
            } else {
                ShardError::Loading
            });
        }
        if self.shared.stopped.load(Ordering::Acquire) {
            return Err(ShardError::Unavailable);
        }
        let (value, wait) = {
            let mut locked = self.shared.lock();
            let ran = self.shared.run_job(&mut locked, Stamp::now(), f);
            if locked
                .shard
                .next_deadline()
                .is_some_and(|d| d < locked.armed)
            {
                self.shared.deadline_moved.notify_one();
            }
            ran?
        };
        if let Some(wait) = wait {
            wait.wait().await.map_err(|_| ShardError::NotDurable)?;
        }
        Ok(value)
    }
}

impl Shared {
    /// Runs one job under the lock, at `started`'s time: `f`'s records are one batch, queued
    /// for the durable log; a job that panics, or had a batch refused, is undone whole. Returns
    /// `f`'s value and what to wait for before answering.
    fn run_job<R, F>(
        &self,
        locked: &mut Locked,
        started: Stamp,
        f: F,
    ) -> Result<(R, Option<DurableWait>), ShardError>
    where
        F: FnOnce(&mut CoordinatorShard, &TopicsImage, i64) -> R,
    {
        let elsewhere = self
            .groups_total
            .load(Ordering::Acquire)
            .saturating_sub(self.groups.load(Ordering::Acquire));
        locked.shard.set_groups_elsewhere(elsewhere);
        let before = locked.shard.stats();
        let ran = self.run_job_counted(locked, started.ms(), f);
        self.publish_groups(&locked.shard);
        // The clock is read again only for a job that computed an assignment.
        self.metrics
            .groups
            .job_ran(before, locked.shard.stats(), || started.elapsed());
        ran
    }

    fn run_job_counted<R, F>(
        &self,
        locked: &mut Locked,
        now: i64,
        f: F,
    ) -> Result<(R, Option<DurableWait>), ShardError>
    where
        F: FnOnce(&mut CoordinatorShard, &TopicsImage, i64) -> R,
    {
        let Locked { shard, topics, .. } = locked;
        self.jobs.fetch_add(1, Ordering::Relaxed);
        let mark = shard.begin_job();
        // A bug must not take every group of the shard down with it: the caller gets
        // UNKNOWN_SERVER_ERROR, whatever the job changed is undone, and the shard keeps serving.
        let value = match std::panic::catch_unwind(AssertUnwindSafe(|| f(shard, topics, now))) {
            Ok(value) => value,
            Err(_) => {
                error!(
                    shard = self.index,
                    "a coordinator job panicked; its changes were undone and it was answered UNKNOWN_SERVER_ERROR"
                );
                if let Err(e) = shard.undo_job(mark, now) {
                    error!(shard = self.index, error = %e, "undoing a failed coordinator job failed");
                }
                return Err(ShardError::Failed);
            }
        };
        let records = match shard.end_job(mark, now) {
            Ok(JobEnd::Appended(records)) => records,
            // The job answered the refusal itself (its value says so); nothing was kept.
            Ok(JobEnd::RolledBack) => Vec::new(),
            Err(e) => {
                error!(shard = self.index, error = %e, "undoing a failed coordinator job failed");
                return Err(ShardError::Failed);
            }
        };
        let wait = self
            .log
            .get()
            .map(|log| log.submit(records, shard.store().log().next_offset()));
        Ok((value, wait))
    }
}

/// Every shard; routes a group to its owner.
#[derive(Debug, Clone)]
pub struct Coordinators {
    shards: Arc<[ShardHandle]>,
}

/// The shards' timer tasks, built but not yet running, and the task writing their logs.
pub struct ShardTasks {
    tasks: Vec<ShardTask>,
    /// With a log directory: the writer's queue of loaded shards, and whether it fsyncs.
    writer: Option<(mpsc::UnboundedReceiver<writer::Loaded>, Arc<Notify>, bool)>,
}

struct ShardTask {
    shared: Arc<Shared>,
    loading: watch::Sender<bool>,
    gate: Option<LoadGate>,
    /// Where the shard's log is (`None`: in memory).
    log_dir: Option<PathBuf>,
    /// Hands the loaded shard's log to the writer task, and wakes it when records queue.
    to_writer: Option<(mpsc::UnboundedSender<writer::Loaded>, Arc<Notify>)>,
}

impl Coordinators {
    /// `count` shards (at least one) configured with `config`, in memory, without a bound on
    /// the groups.
    pub fn new(count: usize, config: &StreamsGroupConfig) -> (Coordinators, ShardTasks) {
        Self::with_logs(
            count,
            config,
            &CoordinatorLogSettings::default(),
            usize::MAX,
            Arc::new(Metrics::new([])),
        )
    }

    /// `count` shards configured with `config`, each keeping its log in `<dir>/<index>` when
    /// `logs` names a directory, holding at most `max_groups` groups together, counting their
    /// work in `metrics`.
    pub fn with_logs(
        count: usize,
        config: &StreamsGroupConfig,
        logs: &CoordinatorLogSettings,
        max_groups: usize,
        metrics: Arc<Metrics>,
    ) -> (Coordinators, ShardTasks) {
        let count = count.max(1);
        let groups_total = Arc::new(AtomicUsize::new(0));
        let wake = Arc::new(Notify::new());
        let (to_writer, loaded) = mpsc::unbounded_channel();
        let mut handles = Vec::with_capacity(count);
        let mut tasks = Vec::with_capacity(count);
        for index in 0..count {
            // Groups kept in memory have nothing to load: such a shard serves from the start.
            let in_memory = logs.dir.is_none();
            let (loading, loading_rx) = watch::channel(!in_memory);
            // The seed only drives the TopologyDescriptionIds a shard mints; it must differ
            // between shards and runs, not be secret.
            let seed = uuid::Uuid::new_v4().as_u64_pair().0 ^ index as u64;
            let mut shard = CoordinatorShard::new(config.clone(), seed);
            shard.set_max_groups(max_groups);
            let shared = Arc::new(Shared {
                index,
                locked: Mutex::new(Locked {
                    shard,
                    topics: Arc::new(TopicsImage::default()),
                    armed: i64::MAX,
                }),
                deadline_moved: Notify::new(),
                stopped: AtomicBool::new(false),
                loaded: AtomicBool::new(in_memory),
                log: OnceLock::new(),
                jobs: AtomicU64::new(0),
                groups: AtomicUsize::new(0),
                groups_total: Arc::clone(&groups_total),
                metrics: Arc::clone(&metrics),
            });
            handles.push(ShardHandle {
                shared: Arc::clone(&shared),
                loading: loading_rx,
            });
            tasks.push(ShardTask {
                shared,
                loading,
                gate: None,
                log_dir: logs.dir.as_ref().map(|d| d.join(index.to_string())),
                to_writer: logs
                    .dir
                    .is_some()
                    .then(|| (to_writer.clone(), Arc::clone(&wake))),
            });
        }
        (
            Coordinators {
                shards: handles.into(),
            },
            ShardTasks {
                tasks,
                writer: logs.dir.is_some().then_some((loaded, wake, logs.fsync)),
            },
        )
    }

    pub fn len(&self) -> usize {
        self.shards.len()
    }

    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// The shard that owns `group_id`.
    pub fn for_group(&self, group_id: &str) -> &ShardHandle {
        &self.shards[shard_index(group_id, self.shards.len())]
    }

    pub fn all(&self) -> impl Iterator<Item = &ShardHandle> {
        self.shards.iter()
    }

    /// Gives every shard the new catalog; returns once all of them hold it. The topics of the
    /// shard's previous catalog that are gone (by id) are deleted topics: their committed
    /// offsets are removed from every group (Kafka's `GroupCoordinatorService.onMetadataUpdate`
    /// → `onTopicsDeleted` on every shard).
    pub async fn topics_changed(&self, image: &Arc<TopicsImage>) {
        for handle in self.shards.iter() {
            let mut locked = handle.shared.lock();
            let deleted: Vec<DeletedTopic> = locked
                .topics
                .iter()
                .filter(|t| image.get_by_id(&t.id).is_none())
                .map(|t| DeletedTopic {
                    name: t.name.clone(),
                    id: t.id,
                })
                .collect();
            locked.topics = Arc::clone(image);
            locked.shard.topics_changed();
            if deleted.is_empty() {
                continue;
            }
            let ran = handle
                .shared
                .run_job(&mut locked, Stamp::now(), |shard, _, _| {
                    shard.on_topics_deleted(&deleted)
                });
            match ran {
                Ok((Ok(0), _)) => {}
                Ok((Ok(removed), _)) => info!(
                    shard = handle.index(),
                    removed,
                    topics = ?deleted.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
                    "removed the committed offsets of deleted topics"
                ),
                Ok((Err(e), _)) => error!(
                    shard = handle.index(),
                    error = %e,
                    "removing the committed offsets of deleted topics failed"
                ),
                Err(_) => {}
            }
        }
    }
}

impl Coordinators {
    /// Gives every shard the settings of the groups it owns that have config overrides
    /// (Kafka's `GroupConfigManager.updateGroupConfig`, run when a group's ConfigRecords are
    /// published); returns once all of them run with them.
    pub async fn group_configs_changed(
        &self,
        image: &kcoord_metadata::GroupConfigsImage,
        rules: &crate::group_configs::GroupConfigRules,
    ) {
        let mut per_shard: Vec<std::collections::BTreeMap<String, StreamsGroupConfig>> =
            vec![Default::default(); self.shards.len()];
        for (group, overrides) in image.iter() {
            let index = shard_index(group, self.shards.len());
            per_shard[index].insert(group.to_owned(), rules.effective(overrides));
        }
        for (handle, configs) in self.shards.iter().zip(per_shard) {
            let mut locked = handle.shared.lock();
            locked.shard.set_group_configs(configs);
        }
    }
}

/// Kafka's `Utils.abs(groupId.hashCode()) % partitions`: Java's `String.hashCode` over UTF-16
/// units, so the mapping is stable across runs and platforms.
pub fn shard_index(group_id: &str, shards: usize) -> usize {
    let hash = group_id.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    (hash & 0x7fff_ffff) as usize % shards.max(1)
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
                _ = crate::net::stopped(&mut stop) => return,
            }
        }
        let writer = match &self.log_dir {
            None => None,
            Some(dir) => match self.load(dir).await {
                Some(writer) => Some(writer),
                // Logged by `load`; the task ends, so the shard answers COORDINATOR_NOT_AVAILABLE.
                None => return,
            },
        };
        self.shared.loaded.store(true, Ordering::Release);
        self.loading.send_replace(false);
        self.shared
            .lock()
            .shard
            .start_offset_expiry(clock::now_ms());
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

    /// Replays the shard's log into it; returns the writer that appends to the file, or `None`
    /// (logged) when the file cannot be read: its groups then stay unavailable rather than
    /// being served without what the file holds.
    async fn load(&self, dir: &std::path::Path) -> Option<kcoord_metadata::LogWriter> {
        let started = std::time::Instant::now();
        let path = dir.to_path_buf();
        // Reading and replaying a large log takes a while: off the runtime's workers, and off
        // the shard's lock.
        let opened = tokio::task::spawn_blocking(move || {
            let (writer, records) = shard_log::open(&path).map_err(|e| e.to_string())?;
            let store = kcoord_metadata::Store::replay_log(&records)
                .map_err(|e| format!("{}: the log does not replay: {e}", path.display()))?;
            Ok::<_, String>((writer, records.len(), store))
        })
        .await;
        let (writer, records, store) = match opened {
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
        let mut locked = self.shared.lock();
        locked.shard.reset_to_store(store, clock::now_ms());
        self.shared.publish_groups(&locked.shard);
        let groups = locked.shard.state().streams_groups.len();
        let offsets = locked
            .shard
            .state()
            .offsets
            .iter()
            .map(|(_, o)| o.len())
            .sum::<usize>();
        drop(locked);
        let wake = self.to_writer.as_ref().map(|(_, wake)| Arc::clone(wake))?;
        let log = ShardLog::new(dir, writer.next_offset(), wake);
        let _ = self.shared.log.set(Arc::new(log));
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

    async fn run_timers(&self, stop: &mut watch::Receiver<bool>) {
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
                _ = crate::net::stopped(stop) => break,
            }
        }
    }

    /// Ticks when a deadline has passed; returns the next deadline, which it arms.
    fn tick_if_due(&self, started: Stamp) -> Option<i64> {
        let mut locked = self.shared.lock();
        if locked
            .shard
            .next_deadline()
            .is_some_and(|d| d <= started.ms())
        {
            // The fencing records are queued like any job's; nobody waits for them.
            match self
                .shared
                .run_job(&mut locked, started, |shard, topics, now| {
                    shard.tick(topics, now)
                }) {
                Ok((Ok(events), _)) => {
                    for event in events {
                        log_tick_event(self.shared.index, &event);
                    }
                }
                Ok((Err(e), _)) => {
                    error!(shard = self.shared.index, error = %e, "coordinator timers failed")
                }
                Err(_) => {}
            }
        }
        let next = locked.shard.next_deadline();
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_index_is_javas_string_hash() {
        // "orders".hashCode() == -1008770331 in Java; abs-masked: 1138713317.
        assert_eq!(shard_index("orders", 1 << 31), 1_138_713_317);
        assert_eq!(shard_index("orders", 50), 1_138_713_317 % 50);
        assert_eq!(shard_index("", 4), 0);
        for n in 1..8 {
            for g in ["a", "group-1", "ünïcode", "x".repeat(300).as_str()] {
                assert!(shard_index(g, n) < n);
                assert_eq!(shard_index(g, n), shard_index(g, n));
            }
        }
    }

    #[tokio::test]
    async fn jobs_run_on_the_shard_and_panics_do_not_kill_it_and_stopped_shards_refuse() {
        let (coordinators, tasks) = Coordinators::new(2, &StreamsGroupConfig::default());
        let (stop_tx, stop) = watch::channel(false);
        let joins = tasks.spawn(&stop);
        let shard = coordinators.for_group("g");
        let groups = shard.call(|s, _, now| (s.group_ids(), now > 0)).await;
        assert_eq!(groups, Ok((Vec::new(), true)));
        let panicked = shard.call(|_, _, _| -> u8 { panic!("boom") }).await;
        assert_eq!(panicked, Err(ShardError::Failed));
        assert_eq!(shard.call(|_, _, _| 5).await, Ok(5));
        let _ = stop_tx.send(true);
        for j in joins {
            j.await.unwrap();
        }
        assert_eq!(shard.call(|_, _, _| 5).await, Err(ShardError::Unavailable));
    }

    fn commit(
        shard: &mut CoordinatorShard,
        group: &str,
        offset: i64,
        now: i64,
    ) -> Vec<kcoord_wire::ErrorCode> {
        let offsets = [kcoord_coordinator::groups::OffsetToCommit {
            topic: "t".into(),
            topic_id: uuid::Uuid::nil(),
            partition: 0,
            offset,
            leader_epoch: -1,
            metadata: None,
        }];
        shard
            .commit_offsets(group, "", -1, 9, &offsets, now)
            .expect("a simple commit")
    }

    #[tokio::test]
    async fn a_job_that_panics_after_appending_is_undone_whole() {
        let (coordinators, _tasks) = Coordinators::new(1, &StreamsGroupConfig::default());
        let shard = coordinators.for_group("g");
        assert!(shard.call(|s, _, now| commit(s, "g", 1, now)).await.is_ok());
        let undone = shard
            .call(|s, _, now| {
                commit(s, "g", 2, now);
                commit(s, "h", 5, now);
                panic!("a bug after the records applied")
            })
            .await;
        assert_eq!(undone, Err(ShardError::Failed));
        let (g, h, records) = shard
            .call(|s, _, _| {
                (
                    s.state().offsets.get("g", "t", 0).map(|c| c.offset),
                    s.state().offsets.group("h").is_some(),
                    s.store().log().next_offset(),
                )
            })
            .await
            .expect("the shard still serves");
        assert_eq!((g, h, records), (Some(1), false, 1));
    }

    #[tokio::test]
    async fn topic_changes_reach_every_shard() {
        let (coordinators, tasks) = Coordinators::new(3, &StreamsGroupConfig::default());
        let (_stop_tx, stop) = watch::channel(false);
        tasks.spawn(&stop);
        let mut store = kcoord_metadata::Store::new();
        store
            .append(vec![kcoord_metadata::Record::Topic(
                kcoord_wire::records::TopicRecord {
                    name: "t".into(),
                    topic_id: uuid::Uuid::from_u128(3),
                    ..Default::default()
                },
            )])
            .unwrap();
        coordinators
            .topics_changed(&Arc::new(store.state().topics.clone()))
            .await;
        for shard in coordinators.all() {
            assert_eq!(shard.call(|_, topics, _| topics.len()).await, Ok(1));
        }
    }
}
