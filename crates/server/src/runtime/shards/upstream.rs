//! A shard whose log lives in the upstream cluster (gateway mode,
//! [`crate::runtime::upstream_log`]): it claims its partition and replays it when it loads,
//! then one task per shard writes what its jobs queue, one transaction per round, and answers
//! the requests waiting for it once the transaction is committed.
//!
//! A write the cluster refuses for a reason other than fencing (a broker down, a timeout) is
//! handled as the file log handles a full disk: the shard is rebuilt from what the partition
//! holds, so memory never keeps a change the log lacks, and the waiting requests get
//! NOT_COORDINATOR. A fenced write means another writer has claimed the shard: the shard stops
//! serving (COORDINATOR_NOT_AVAILABLE, on which clients look their coordinator up again) and
//! writes no more until [`serve_while_owned`] claims it again.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kcoord_coordinator::ReplayedLog;
use tokio::sync::{watch, Notify};
use tracing::{error, info, warn};

use super::handle::{ShardSink, Shared};
use super::task::ShardTask;
use crate::runtime::ownership::Ownership;
use crate::runtime::shard_log::{FailureLog, ShardLog};
use crate::runtime::upstream_log::{self, CoordinatorLogError, CoordinatorLogs, ShardLogWriter};
use crate::support::clock;
use crate::support::shutdown::stopped;

/// The longest wait between two tries to claim a shard the cluster does not let us claim yet.
const MAX_CLAIM_BACKOFF: Duration = Duration::from_secs(30);

/// A shard's upstream log once claimed: what writes to it, and the runtime's side of it.
pub(super) struct Claimed {
    pub writer: ShardLogWriter,
    pub log: Arc<ShardLog>,
    /// Notified when the shard's jobs queue records.
    pub wake: Arc<Notify>,
}

/// How a tenure of serving the shard ended.
enum Ended {
    Stopped,
    /// The nodes' group gave the shard to another node.
    Moved,
    /// Another node's claim fenced this one's writes.
    Fenced,
}

/// Serves the shard while this node owns it: claims and loads it when the nodes' group gives
/// it to this node, runs its timers and its writer, and empties it (NOT_COORDINATOR) when the
/// group gives it to another node.
///
/// Fenced, it tries again a second later if the group still says the shard is this node's: the
/// claim that fenced it may be a late one of the shard's previous node, which lost it to this
/// one while claiming (and empties it as soon as it sees that), and claiming back then fences
/// that node for good. Two nodes that both believe they hold a shard only do so until the
/// group's assignment reaches both.
pub(super) async fn serve_while_owned(
    task: &ShardTask,
    logs: Arc<CoordinatorLogs>,
    mut ownership: watch::Receiver<Ownership>,
    mut stop: watch::Receiver<bool>,
) {
    let shared = &task.shared;
    loop {
        if !owned(task, &mut ownership, &mut stop).await {
            return;
        }
        task.owned_and_loading();
        let Some(claimed) = load(shared, &logs, &mut stop).await else {
            return;
        };
        task.loaded();
        let (end_tenure, tenure) = watch::channel(false);
        let mut writer = tokio::spawn(write(
            Arc::clone(shared),
            Arc::clone(&logs),
            claimed,
            tenure,
        ));
        let ended = tokio::select! {
            () = task.run_timers(&mut stop) => Ended::Stopped,
            () = moved(&mut ownership, shared.index) => Ended::Moved,
            _ = &mut writer => Ended::Fenced,
        };
        end_tenure.send_replace(true);
        if !matches!(ended, Ended::Fenced) {
            let _ = writer.await;
        }
        task.not_owned();
        match ended {
            Ended::Stopped => return,
            Ended::Moved => {
                info!(
                    shard = shared.index,
                    "the coordinator shard moved to another kcoord node"
                );
            }
            Ended::Fenced => tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stopped(&mut stop) => return,
            },
        }
    }
}

/// Waits until the nodes' group gives the shard to this node, emptying it while another node
/// has it; false on `stop` or when no assignment can come any more.
async fn owned(
    task: &ShardTask,
    ownership: &mut watch::Receiver<Ownership>,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    loop {
        match ownership.borrow_and_update().owns(task.shared.index) {
            Some(true) => return true,
            Some(false) => task.not_owned(),
            None => {}
        }
        tokio::select! {
            changed = ownership.changed() => if changed.is_err() { return false },
            _ = stopped(stop) => return false,
        }
    }
}

/// Resolves once the nodes' group gives `shard` to another node.
async fn moved(ownership: &mut watch::Receiver<Ownership>, shard: usize) {
    loop {
        if ownership.borrow_and_update().owns(shard) == Some(false) {
            return;
        }
        if ownership.changed().await.is_err() {
            // No more assignments come: the shard stays here.
            std::future::pending::<()>().await;
        }
    }
}

/// Claims the shard's partition and replays it into the shard ([`claim`]); `None` when `stop`
/// came first or the log cannot be loaded (logged: the shard then stays unavailable).
pub(super) async fn load(
    shared: &Arc<Shared>,
    logs: &CoordinatorLogs,
    stop: &mut watch::Receiver<bool>,
) -> Option<Claimed> {
    let started = std::time::Instant::now();
    let (writer, records) = claim(shared, logs, stop).await?;
    let replayed = match ReplayedLog::durable(&records) {
        Ok(replayed) => replayed,
        Err(e) => {
            error!(shard = shared.index, error = %e, "the coordinator shard's upstream log does not replay; its groups are unavailable");
            return None;
        }
    };
    let wake = Arc::new(Notify::new());
    let label = format!("{}-{}", logs.topic(), shared.index);
    let log = Arc::new(ShardLog::new(
        Path::new(&label),
        records.next_offset(),
        Arc::clone(&wake),
    ));
    let mut locked = shared.lock();
    let loaded = locked.runtime.reloaded(replayed, clock::now_ms());
    locked.runtime.replace_core(loaded);
    locked.runtime.set_log(ShardSink::Durable(Arc::clone(&log)));
    shared.publish_groups(&locked.runtime);
    let groups = locked.runtime.state().group_count();
    drop(locked);
    let _ = shared.log.set(Arc::clone(&log));
    info!(
        shard = shared.index,
        records = records.len(),
        groups,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "coordinator shard loaded from the upstream cluster"
    );
    Some(Claimed { writer, log, wake })
}

/// Writes the shard's queued records until `stop`, or until another writer fences it.
pub(super) async fn write(
    shared: Arc<Shared>,
    logs: Arc<CoordinatorLogs>,
    claimed: Claimed,
    mut stop: watch::Receiver<bool>,
) {
    let Claimed {
        mut writer,
        log,
        wake,
    } = claimed;
    let mut failures = FailureLog::default();
    loop {
        tokio::select! {
            () = wake.notified() => {}
            _ = crate::support::shutdown::stopped(&mut stop) => break,
        }
        let queued = log.take_queued();
        let mut reload = log.reload_requested();
        if let Some(next) = queued.last().map(|r| r.offset + 1) {
            let records: Vec<_> = queued.batches().flatten().cloned().collect();
            match writer.append(&records).await {
                Ok(()) => {
                    failures.recovered(shared.index);
                    shared
                        .metrics
                        .coordinator_log
                        .appended(records.len(), records_bytes(&records));
                    log.durable_up_to(next);
                }
                Err(e) if upstream_log::is_fenced(&e) => {
                    fenced(&shared, &log, &e);
                    return;
                }
                Err(e) => {
                    failures.failed(shared.index, &e);
                    reload = true;
                }
            }
        }
        // After a failed write, or when the shard's state stopped following its log (memory
        // keeps no copy of the records): the shard is rebuilt from its partition.
        if reload {
            match reclaim(&shared, &logs, &log, &writer, &mut stop).await {
                Some(claimed) => writer = claimed,
                None => return,
            }
        }
    }
    // Whatever a job queues after this is never written: its request is refused.
    log.start_new_epoch(log.durable_offset());
}

/// After a failed write (or a state apart from its log): gives up the open transaction and
/// rebuilds the shard from what its partition holds; `None` when another writer has the shard
/// now, or on `stop`.
async fn reclaim(
    shared: &Arc<Shared>,
    logs: &CoordinatorLogs,
    log: &Arc<ShardLog>,
    writer: &ShardLogWriter,
    stop: &mut watch::Receiver<bool>,
) -> Option<ShardLogWriter> {
    // Aborting with our epoch says whether the shard is still ours: a fenced abort means
    // another node claimed it, and claiming it back would fence that node in turn.
    if let Err(e) = writer.abort().await {
        if upstream_log::is_fenced(&e) {
            fenced(shared, log, &e);
            return None;
        }
    }
    let (writer, records) = claim(shared, logs, stop).await?;
    let replayed = match ReplayedLog::durable(&records) {
        Ok(replayed) => replayed,
        Err(e) => {
            error!(shard = shared.index, error = %e, "the coordinator shard's upstream log does not replay; the shard stops");
            stop_shard(shared, log);
            return None;
        }
    };
    let mut locked = shared.lock();
    locked.parked.clear();
    let reloaded = locked.runtime.reloaded(replayed, clock::now_ms());
    locked.runtime.replace_core(reloaded);
    shared.publish_groups(&locked.runtime);
    log.start_new_epoch(records.next_offset());
    shared.loaded.store(true, Ordering::Release);
    drop(locked);
    shared.deadline_moved.notify_one();
    Some(writer)
}

/// Claims the shard's partition, trying again with a growing backoff while the cluster cannot
/// be reached or will not let us yet; `None` on `stop`, or (logged) when the partition holds
/// something that is not a coordinator log.
async fn claim(
    shared: &Shared,
    logs: &CoordinatorLogs,
    stop: &mut watch::Receiver<bool>,
) -> Option<(ShardLogWriter, kcoord_metadata::MetadataLog)> {
    let mut backoff = Duration::from_millis(100);
    loop {
        let claimed = tokio::select! {
            claimed = logs.claim(shared.index) => claimed,
            _ = crate::support::shutdown::stopped(stop) => return None,
        };
        match claimed {
            Ok(claimed) => return Some(claimed),
            Err(e @ CoordinatorLogError::NotARecord { .. }) => {
                error!(shard = shared.index, error = %e, "cannot read the coordinator shard's log from the upstream cluster; its groups are unavailable");
                return None;
            }
            Err(e) => {
                warn!(shard = shared.index, error = %e, retry_in_ms = backoff.as_millis() as u64, "cannot claim the coordinator shard's log in the upstream cluster yet");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = crate::support::shutdown::stopped(stop) => return None,
                }
                backoff = (backoff * 2).min(MAX_CLAIM_BACKOFF);
            }
        }
    }
}

fn fenced(shared: &Shared, log: &ShardLog, error: &CoordinatorLogError) {
    // Routine while the nodes' group moves shards (a late claim of the node that lost one).
    warn!(
        shard = shared.index,
        error = %error,
        "another writer claimed this coordinator shard's upstream log: the shard stops serving here, and is claimed again if the kcoord nodes' group still gives it to this node"
    );
    stop_shard(shared, log);
}

fn stop_shard(shared: &Shared, log: &ShardLog) {
    shared.stopped.store(true, Ordering::Release);
    log.start_new_epoch(log.durable_offset());
}

/// The bytes of keys and values written, for the log's metrics.
fn records_bytes(records: &[kcoord_metadata::LogRecord]) -> u64 {
    records
        .iter()
        .map(|r| {
            (r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len())) as u64
        })
        .sum()
}
