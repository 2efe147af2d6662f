//! One task writes the durable logs of every shard: each round it takes what every shard has
//! queued and writes and fsyncs each shard's queued batches (one per job, each read back whole
//! or not at all: `shard_log.rs`) to its file in one write, the files side by side (each fsync
//! is its own device flush, and the disk serves them faster together than one after another).
//! A shard's requests are answered as soon as its file is synced (BENCHMARKS.md, "Coordinator
//! log").

use std::sync::Arc;

use kcoord_coordinator::ReplayedLog;
use kcoord_metadata::LogWriter;
use tokio::sync::{mpsc, watch, Notify};
use tracing::{error, info};

use super::Shared;
use crate::runtime::shard_log::{self, FailureLog, Queued, ShardLog};
use crate::support::clock;

/// A shard whose log has loaded, handed to the writer task.
pub(super) struct Loaded {
    pub shared: Arc<Shared>,
    pub writer: LogWriter,
}

struct Shard {
    shared: Arc<Shared>,
    log: Arc<ShardLog>,
    /// `None` while the writer is lent to a blocking write, or after the shard stopped.
    writer: Option<LogWriter>,
    rewrite_at: u64,
    failures: FailureLog,
}

/// Counts of the writer's work since it started.
#[derive(Debug, Default)]
struct Totals {
    /// Rounds that wrote something.
    rounds: u64,
    /// Files written (and, with fsync, synced): one per shard per round.
    file_writes: u64,
    records: u64,
}

/// One shard's part of a round.
struct Write {
    index: usize,
    batch: Queued,
    writer: LogWriter,
}

/// Runs until `stop`: registers shards as they load, writes a round whenever one queued records.
pub(super) async fn run(
    mut loaded: mpsc::UnboundedReceiver<Loaded>,
    wake: Arc<Notify>,
    fsync: bool,
    mut stop: watch::Receiver<bool>,
) {
    let mut shards: Vec<Shard> = Vec::new();
    let mut registering = true;
    let mut totals = Totals::default();
    loop {
        let stopping = tokio::select! {
            next = loaded.recv(), if registering => {
                match next {
                    Some(Loaded { shared, writer }) => {
                        if let Some(log) = shared.log.get().cloned() {
                            shards.push(Shard {
                                rewrite_at: shard_log::rewrite_threshold(writer.len_bytes()),
                                shared,
                                log,
                                writer: Some(writer),
                                failures: FailureLog::default(),
                            });
                        }
                    }
                    None => registering = false,
                }
                // A shard's jobs may have queued records (and woken this task, while the shard
                // was not here yet to be written) before its registration arrived: a round now.
                false
            }
            () = wake.notified() => false,
            _ = crate::support::shutdown::stopped(&mut stop) => true,
        };
        write_round(&mut shards, fsync, &mut totals).await;
        reload_requested(&mut shards).await;
        if stopping {
            // Whatever a job queues after this is never written: its request is refused.
            for shard in &shards {
                shard.log.start_new_epoch(shard.log.durable_offset());
            }
            // What the group commits amounted to (the coordinator_log bench reads this line).
            info!(
                rounds = totals.rounds,
                file_writes = totals.file_writes,
                records = totals.records,
                fsync,
                "coordinator log writer stopped"
            );
            return;
        }
    }
}

/// Writes every queued batch, then syncs the files written; acknowledges each shard's batch
/// once its file is synced, and undoes the batches of the shards whose file refused them.
async fn write_round(shards: &mut [Shard], fsync: bool, totals: &mut Totals) {
    let mut round = Vec::new();
    for (index, shard) in shards.iter_mut().enumerate() {
        let batch = shard.log.take_queued();
        if batch.is_empty() {
            continue;
        }
        match shard.writer.take() {
            Some(writer) => round.push(Write {
                index,
                batch,
                writer,
            }),
            // The shard stopped (its file could not be read back): whoever waits for these
            // records is refused rather than left waiting.
            None => shard.log.start_new_epoch(shard.log.durable_offset()),
        }
    }
    if round.is_empty() {
        return;
    }
    totals.rounds += 1;
    totals.file_writes += round.len() as u64;
    totals.records += round.iter().map(|w| w.batch.len() as u64).sum::<u64>();
    // Each file is written and synced on its own blocking thread: fsyncs side by side are
    // served faster than one after another, and each shard is answered as soon as its own file
    // is synced, not when the slowest of the round is.
    let mut running = tokio::task::JoinSet::new();
    for mut w in round {
        let log = Arc::clone(&shards[w.index].log);
        let metrics = shards[w.index].shared.metrics.coordinator_log.clone();
        running.spawn_blocking(move || {
            let next = w.batch.last().map_or(0, |r| r.offset + 1);
            let before = w.writer.len_bytes();
            let mut result = log.write_unsynced(&mut w.writer, &w.batch);
            if result.is_ok() {
                metrics.appended(w.batch.len(), w.writer.len_bytes().saturating_sub(before));
            }
            if fsync && result.is_ok() {
                let started = std::time::Instant::now();
                result = w.writer.sync();
                metrics.synced(started.elapsed());
            }
            (w.index, w.writer, result.map(|()| next))
        });
    }
    while let Some(done) = running.join_next().await {
        let Ok((index, writer, outcome)) = done else {
            error!("the coordinator log writer panicked; the shards it was writing stop");
            for shard in shards.iter().filter(|s| s.writer.is_none()) {
                stop_shard(&shard.shared, &shard.log);
            }
            continue;
        };
        let shard = &mut shards[index];
        match outcome {
            Ok(next) => {
                shard.failures.recovered(shard.shared.index);
                shard.log.durable_up_to(next);
                shard.writer = Some(writer);
                if shard
                    .writer
                    .as_ref()
                    .is_some_and(|w| w.len_bytes() >= shard.rewrite_at)
                {
                    compact(shard).await;
                }
            }
            Err(e) => {
                shard.failures.failed(shard.shared.index, &e);
                shard.writer = reload_after_failure(&shard.shared, &shard.log, writer).await;
            }
        }
    }
}

/// Rewrites the shard's file as its records compacted, read back from the file (memory keeps
/// no copy), as Kafka's cleaner compacts `__consumer_offsets`, so the file and the time to load
/// it stay in proportion to the live groups and offsets rather than to their history. What jobs
/// queue meanwhile is written after it in the next round.
async fn compact(shard: &mut Shard) {
    let Some(mut writer) = shard.writer.take() else {
        return;
    };
    let before = writer.len_bytes();
    let log = Arc::clone(&shard.log);
    let rewritten = tokio::task::spawn_blocking(move || {
        let result = log.compact(&mut writer);
        (writer, result)
    })
    .await;
    let Ok((writer, result)) = rewritten else {
        error!(
            shard = shard.shared.index,
            "rewriting the coordinator log panicked; the shard stops"
        );
        stop_shard(&shard.shared, &shard.log);
        return;
    };
    match result {
        Ok(records) => {
            info!(
                shard = shard.shared.index,
                before_bytes = before,
                after_bytes = writer.len_bytes(),
                records,
                "compacted the coordinator shard's log"
            );
            shard.rewrite_at = shard_log::rewrite_threshold(writer.len_bytes());
            shard.writer = Some(writer);
        }
        Err(e) => {
            error!(shard = shard.shared.index, error = %e, "could not rewrite the coordinator shard's log");
            shard.writer = reload_after_failure(&shard.shared, &shard.log, writer).await;
        }
    }
}

/// Rebuilds the shards whose state stopped following their log (a bug the runtime caught) from
/// their files, which memory keeps no copy of.
async fn reload_requested(shards: &mut [Shard]) {
    for shard in shards.iter_mut() {
        if !shard.log.reload_requested() {
            continue;
        }
        if let Some(writer) = shard.writer.take() {
            shard.writer = reload_after_failure(&shard.shared, &shard.log, writer).await;
        }
    }
}

/// The file refused records the shard had applied (or the shard's state stopped following its
/// log): reads the file back and rebuilds the shard from it, so memory holds exactly what is on
/// disk. `None` (logged) when even that fails: the
/// shard stops (COORDINATOR_NOT_AVAILABLE) rather than serve groups the file may contradict.
async fn reload_after_failure(
    shared: &Arc<Shared>,
    log: &Arc<ShardLog>,
    writer: LogWriter,
) -> Option<LogWriter> {
    // The reopened file replaces this writer (and its lock on the directory).
    drop(writer);
    let dir = log.dir().to_path_buf();
    // Only this task writes the file, so what it reads back is what the shard must become;
    // reading and replaying it happen off the runtime's workers and off the shard's lock.
    let reopened = tokio::task::spawn_blocking(move || {
        let (writer, records) = shard_log::open(&dir).map_err(|e| e.to_string())?;
        let replayed = ReplayedLog::durable(&records)
            .map_err(|e| format!("{}: the log does not replay: {e}", dir.display()))?;
        Ok::<_, String>((writer, replayed))
    })
    .await;
    let (writer, replayed) = match reopened {
        Ok(Ok(opened)) => opened,
        Ok(Err(e)) => {
            error!(shard = shared.index, error = %e, "cannot read the coordinator shard's log back; the shard stops");
            stop_shard(shared, log);
            return None;
        }
        Err(_) => {
            stop_shard(shared, log);
            return None;
        }
    };
    let mut locked = shared.lock();
    locked.parked.clear();
    let reloaded = locked.runtime.reloaded(replayed, clock::now_ms());
    locked.runtime.replace_core(reloaded);
    shared.publish_groups(&locked.runtime);
    log.start_new_epoch(writer.next_offset());
    shared
        .loaded
        .store(true, std::sync::atomic::Ordering::Release);
    drop(locked);
    shared.deadline_moved.notify_one();
    Some(writer)
}

fn stop_shard(shared: &Shared, log: &ShardLog) {
    shared
        .stopped
        .store(true, std::sync::atomic::Ordering::Release);
    log.start_new_epoch(0);
}
