//! One shard at run time: its runtime ([`kcoord_runtime::Runtime`] over a
//! [`CoordinatorShard`]) behind a lock, the log its batches go to, and the counts the node
//! reads without the lock. A request runs its handler as one job on the connection task that
//! read it ([`ShardHandle::call`]).
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use kcoord_coordinator::{CoordinatorShard, Effect, Outcome, ReplayedLog};
use kcoord_metadata::LogRecord;
use kcoord_runtime::{Log, Refused, RunError, Runtime};
use kcoord_wire::ErrorCode;
use tokio::sync::{watch, Notify};
use tracing::error;

use crate::metrics::{GroupCount, Metrics};
use crate::runtime::shard_log::{DurableWait, ShardLog};
use crate::support::clock::Stamp;

/// Why a shard could not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// The shard is not running (shutting down).
    #[error("the coordinator shard is not available")]
    Unavailable,
    /// The job panicked, or its batch could not be appended (a record too large for the log);
    /// the shard logged it and goes on serving other groups.
    #[error("the coordinator shard failed while handling the request")]
    Failed,
    /// The shard is still replaying its log.
    #[error("the coordinator shard is loading")]
    Loading,
    /// The job's records (or records it read) could not be written to the shard's log, so the
    /// shard was rebuilt from the log without them.
    #[error("the coordinator shard could not write its log")]
    NotDurable,
    /// The request was parked and the shard forgot it (rebuilt from its log).
    #[error("the coordinator shard was rebuilt while the request waited")]
    Moved,
    /// Another kcoord node serves this shard (gateway mode with several nodes).
    #[error("another kcoord node serves this coordinator shard")]
    NotOwned,
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
            ShardError::NotDurable | ShardError::Moved => ErrorCode::NOT_COORDINATOR,
            // The client looks the coordinator up again, and FindCoordinator names the owner.
            ShardError::NotOwned => ErrorCode::NOT_COORDINATOR,
        }
    }
}

/// Where a shard's batches go: nowhere beyond memory, or its durable log, whose writer task
/// writes them in a group commit; the receipt says what the request waits for.
#[derive(Debug, Clone, Default)]
pub(super) enum ShardSink {
    #[default]
    Memory,
    Durable(Arc<ShardLog>),
}

impl Log for ShardSink {
    type Receipt = DurableWait;
    type Error = std::convert::Infallible;

    fn append(
        &mut self,
        entries: &[LogRecord],
        next_offset: u64,
    ) -> Result<DurableWait, Self::Error> {
        Ok(match self {
            ShardSink::Memory => DurableWait::Ready,
            ShardSink::Durable(log) => log.submit(entries.to_vec(), next_offset),
        })
    }
}

/// A shard's runtime.
pub(super) type ShardRuntime = Runtime<CoordinatorShard, ShardSink>;

/// What the lock protects.
pub(super) struct Locked {
    pub(super) runtime: ShardRuntime,
    /// The deadline the timer task sleeps until (`i64::MAX`: none). Kept under the lock so a
    /// request that arms an earlier deadline always sees what the timer task is waiting for.
    pub(super) armed: i64,
    /// JoinGroup and SyncGroup requests waiting for their group.
    pub(super) parked: super::parked::Parked,
}

pub(super) struct Shared {
    pub(super) index: usize,
    pub(super) locked: Mutex<Locked>,
    /// Wakes the timer task when a request brought the next deadline forward.
    pub(super) deadline_moved: Notify,
    pub(super) stopped: AtomicBool,
    /// False while another kcoord node serves the shard (gateway mode with several nodes):
    /// changed under the lock, with the shard's state, so a job that holds the lock sees both.
    pub(super) owned: AtomicBool,
    /// Set once loading has finished: read on every request, where the `loading` watch would
    /// take its read lock.
    pub(super) loaded: AtomicBool,
    /// The shard's durable log, once loaded (never, when groups are kept in memory).
    pub(super) log: OnceLock<Arc<ShardLog>>,
    /// Jobs run so far (requests, ticks, catalog changes).
    pub(super) jobs: AtomicU64,
    /// The groups this shard held after its last job, and the node's total of those counts:
    /// what `group.coordinator.max.groups` is checked against. Shards creating groups at the
    /// same moment may each see the other's before it counts, so the node can pass the bound by
    /// at most one group per shard.
    pub(super) groups: AtomicUsize,
    pub(super) groups_total: Arc<AtomicUsize>,
    /// Rebalances, assignments and their jobs' time; the log's appends and fsyncs.
    pub(super) metrics: Arc<Metrics>,
    /// Wakes the marker task when a timer aborted a transaction or a load found prepared ones.
    pub(super) markers: Arc<Notify>,
}

/// One shard as seen from a connection.
#[derive(Clone)]
pub struct ShardHandle {
    pub(super) shared: Arc<Shared>,
    /// True until the shard's task has finished its startup work (replaying its log; a
    /// [`super::LoadGate`] can hold it longer). Handlers that must answer
    /// COORDINATOR_LOAD_IN_PROGRESS meanwhile read it; other requests wait for it.
    pub(super) loading: watch::Receiver<bool>,
}

impl std::fmt::Debug for ShardHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardHandle")
            .field("index", &self.shared.index)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Publishes how many groups `shard` holds now.
    pub(super) fn publish_groups(&self, shard: &CoordinatorShard) {
        let now = shard.state().group_count();
        let before = self.groups.swap(now, Ordering::AcqRel);
        if now >= before {
            self.groups_total.fetch_add(now - before, Ordering::AcqRel);
        } else {
            self.groups_total.fetch_sub(before - now, Ordering::AcqRel);
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Locked> {
        // The runtime catches panics in jobs, so a poisoned lock would mean a panic in this
        // module's own bookkeeping; the state is still the shard's last consistent one.
        self.locked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs one job under the lock, at `started`'s time: the runtime commits `handler`'s
    /// outcome (its batch queued for the durable log). Returns the response and what to wait
    /// for before answering.
    pub(super) fn run_job<R>(
        &self,
        locked: &mut Locked,
        started: Stamp,
        handler: impl FnOnce(&CoordinatorShard, i64) -> Outcome<R>,
    ) -> Result<(R, DurableWait), ShardError> {
        let elsewhere = self
            .groups_total
            .load(Ordering::Acquire)
            .saturating_sub(self.groups.load(Ordering::Acquire));
        locked.runtime.input(Effect::GroupsElsewhere(elsewhere));
        let before = locked.runtime.stats();
        self.jobs.fetch_add(1, Ordering::Relaxed);
        let now = started.ms();
        let ran = locked
            .runtime
            .run(|shard| kcoord_coordinator::timeline::stamped(handler(shard, now), now));
        let answer = match ran {
            Ok(done) => Ok((done.response, done.receipt)),
            Err(refused) => Err(self.refused(locked, refused, now)),
        };
        self.publish_groups(&locked.runtime);
        // The clock is read again only for a job that computed an assignment.
        self.metrics
            .groups
            .job_ran(before, locked.runtime.stats(), || started.elapsed());
        answer
    }

    /// Logs why a job's outcome was not committed; rebuilds the shard from its log when its
    /// state no longer follows it.
    fn refused<R>(
        &self,
        locked: &mut Locked,
        refused: Refused<R, std::convert::Infallible>,
        now: i64,
    ) -> ShardError {
        match refused.error {
            RunError::Diverged(reason) => {
                error!(shard = self.index, reason = %reason, "a coordinator job left the shard's state apart from its log; the shard is rebuilt from the log");
                self.rebuild(locked, now);
            }
            other => error!(
                shard = self.index,
                error = %other,
                "a coordinator job was refused; nothing of it was applied and it was answered UNKNOWN_SERVER_ERROR"
            ),
        }
        ShardError::Failed
    }

    /// Replaces the shard's state by its log replayed. Groups kept in memory only: the shard's
    /// own copy of its records, at once. A durable log: memory keeps no copy, so the shard
    /// answers COORDINATOR_LOAD_IN_PROGRESS and runs no timers until the log's writer has
    /// rebuilt it from the file or the upstream partition, as after a refused write.
    pub(super) fn rebuild(&self, locked: &mut Locked, now: i64) {
        locked.parked.clear();
        let runtime = &mut locked.runtime;
        if let ShardSink::Durable(log) = runtime.log() {
            self.loaded.store(false, Ordering::Release);
            log.request_reload();
            return;
        }
        match ReplayedLog::keeping_records(runtime.store().log()) {
            Ok(replayed) => {
                let rebuilt = runtime.reloaded(replayed, now);
                runtime.replace_core(rebuilt);
            }
            Err(e) => {
                error!(shard = self.index, error = %e, "the coordinator shard's log does not replay; the shard stops");
                self.stopped.store(true, Ordering::Release);
            }
        }
    }
}

impl Shared {
    /// Wakes the timer task when the job brought the next deadline forward.
    pub(super) fn wake_timers(&self, locked: &Locked) {
        if locked
            .runtime
            .next_deadline()
            .is_some_and(|d| d < locked.armed)
        {
            self.deadline_moved.notify_one();
        }
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

    /// Calls `each` with the type, state and member count of every group the shard holds
    /// (streams, classic and consumer groups), under its lock (for `/metrics`: a pass over
    /// the groups, no allocation).
    pub fn census(&self, mut each: impl FnMut(GroupCount)) {
        let locked = self.shared.lock();
        let shard = locked.runtime.core();
        for group in shard.state().streams_groups.iter() {
            let state = kcoord_coordinator::group_state(group).as_str();
            each(GroupCount::of("streams", state, group.members.len()));
        }
        for group in shard.classic_groups() {
            each(GroupCount::of(
                "classic",
                group.state.name(),
                group.members.len(),
            ));
        }
        for group in shard.state().consumer_groups.iter() {
            let state = kcoord_coordinator::consumer::admin::consumer_group_state(group).as_str();
            each(GroupCount::of("consumer", state, group.members.len()));
        }
    }

    /// Transactions ongoing or with markers to write (for `/metrics`).
    pub fn open_transactions(&self) -> usize {
        let locked = self.shared.lock();
        let transactions = &locked.runtime.state().transactions;
        transactions
            .iter()
            .filter(|t| !t.state.is_idle() && t.state != kcoord_metadata::TransactionState::Dead)
            .count()
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

    /// Runs `handler` on the shard as one job and returns its response, once every record the
    /// job appended or read is durable. A loading shard answers [`ShardError::Loading`] at
    /// once, as Kafka's coordinator answers COORDINATOR_LOAD_IN_PROGRESS.
    pub async fn call<R>(
        &self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> Outcome<R>,
    ) -> Result<R, ShardError> {
        self.ready()?;
        let (value, wait) = {
            let mut locked = self.shared.lock();
            // The shard may have moved to another node while this request waited for the lock.
            self.ready()?;
            let ran = self.shared.run_job(&mut locked, Stamp::now(), handler);
            // A job of any kind (a LeaveGroup, a DeleteGroups) may answer parked requests.
            self.shared.deliver(&mut locked);
            self.shared.wake_timers(&locked);
            ran?
        };
        wait.wait().await.map_err(|_| ShardError::NotDurable)?;
        Ok(value)
    }

    /// Whether the shard takes requests: COORDINATOR_LOAD_IN_PROGRESS while it loads, as
    /// Kafka's coordinator answers.
    pub(super) fn ready(&self) -> Result<(), ShardError> {
        if !self.shared.owned.load(Ordering::Acquire) {
            return Err(ShardError::NotOwned);
        }
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
        Ok(())
    }

    /// Reads the shard's state as it is now, under its lock, without waiting for its log to be
    /// durable (for checks Kafka also makes against memory, like a transaction's partitions).
    pub fn peek<R>(&self, read: impl FnOnce(&CoordinatorShard) -> R) -> Result<R, ShardError> {
        if !self.shared.owned.load(Ordering::Acquire) {
            return Err(ShardError::NotOwned);
        }
        if self.is_loading() {
            return Err(ShardError::Loading);
        }
        if self.shared.stopped.load(Ordering::Acquire) {
            return Err(ShardError::Unavailable);
        }
        let locked = self.shared.lock();
        self.ready()?;
        Ok(read(locked.runtime.core()))
    }

    /// Reads the shard: `read`'s answer, once everything it may have read is durable.
    pub async fn read<R>(
        &self,
        read: impl FnOnce(&CoordinatorShard) -> R,
    ) -> Result<R, ShardError> {
        self.call(|shard, _| Outcome::answer(read(shard))).await
    }
}
