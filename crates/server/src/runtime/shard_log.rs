//! A coordinator shard's durable log at run time: the records of every job of the shard are
//! queued here (under the shard's lock, so in offset order), and the writer task
//! (`shards/writer.rs`, one for all shards) writes whatever has queued up in one write and one
//! fsync: a group commit. A request whose job appended records (or that read records not yet
//! durable) is answered once they are.
//!
//! Each job's records stay one batch in the file ([`Queued`]): the file log reads a batch back
//! whole or not at all, so a crash in the middle of a write leaves whole jobs on disk, never
//! part of one (a group half deleted). The jobs of one write are separate batches rather than
//! one: either is safe, since none of them is acknowledged before the write's fsync, but
//! separate batches keep what the runtime promises (a job's batch is all or nothing) the file's
//! unit too, as the controller's log has it, and a torn write keeps the whole jobs before the
//! tear.
//!
//! A request that must wait registers, under the shard's lock, for the offset it needs; waiters
//! therefore queue in offset order, and a synced batch wakes exactly those it covers (not every
//! waiter of the shard at every sync).
//!
//! If the file refuses a batch (a full disk, an I/O error), memory is ahead of the file: the
//! writer takes the shard's lock, drops what is queued, rebuilds the shard from the file and
//! fails every waiter ([`NotDurable`], answered with Kafka's retriable NOT_COORDINATOR), so a
//! change is acknowledged only if it is on disk, and memory never keeps a change the file lacks.
//! Offsets are then given out again from the file's end; no waiter of the old ones is left to
//! mistake a new record for its own.
//!
//! Memory keeps no copy of the records ([`kcoord_metadata::MetadataLog::offsets_only`]): an
//! idle member is held once, as state, not a second time as its records. Whatever needs them
//! reads the file: its compaction, and the rebuild after a bug left the shard's state apart
//! from its log ([`ShardLog::request_reload`]: the same rebuild as after a refused write).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcoord_metadata::file_log::{self, FileLogError, LogWriter};
use kcoord_metadata::{LogRecord, MetadataLog};
use tokio::sync::{oneshot, Notify};
use tracing::{error, info, warn};

use crate::config::coordinator_log::CoordinatorLogSettings;

/// A record a request depends on was not made durable: the log refused it, so it was undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotDurable;

/// What a request waits for before it is answered.
#[derive(Debug)]
pub enum DurableWait {
    /// Everything it wrote or read is durable already.
    Ready,
    /// Woken once the offset it needs is durable; dropped (an error) if that never happens.
    Pending(oneshot::Receiver<()>),
}

impl DurableWait {
    pub async fn wait(self) -> Result<(), NotDurable> {
        match self {
            DurableWait::Ready => Ok(()),
            DurableWait::Pending(durable) => durable.await.map_err(|_| NotDurable),
        }
    }
}

/// The shard's side of its durable log.
#[derive(Debug)]
pub struct ShardLog {
    dir: PathBuf,
    /// Records waiting for the writer.
    queue: Mutex<Queued>,
    /// The writer task's (shared by every shard).
    wake: Arc<Notify>,
    /// Every record below this offset is durable. Read without a lock on every request: a
    /// request whose records are all durable (every steady heartbeat) takes no lock here.
    durable: AtomicU64,
    /// (offset needed, wake-up), in offset order.
    waiters: Mutex<VecDeque<(u64, oneshot::Sender<()>)>>,
    /// Set when the shard's state stopped following its log (a bug the runtime caught): memory
    /// keeps no copy of the records, so the log's writer reloads the shard from the durable log.
    reload: AtomicBool,
}

/// Records queued for the writer, job by job: each job's records are one batch of the file.
#[derive(Debug, Default)]
pub struct Queued {
    records: Vec<LogRecord>,
    /// Where each batch ends in `records` (the index after its last record), in order.
    ends: Vec<usize>,
}

impl Queued {
    /// Queues one job's records as a batch.
    fn push(&mut self, batch: Vec<LogRecord>) {
        if batch.is_empty() {
            return;
        }
        self.records.extend(batch);
        self.ends.push(self.records.len());
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records queued, of every batch.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn last(&self) -> Option<&LogRecord> {
        self.records.last()
    }

    /// The batches, oldest first.
    pub fn batches(&self) -> impl Iterator<Item = &[LogRecord]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.records[start..end])
    }
}

/// The file in the shards' directory that records how many shards wrote it.
const SHARD_COUNT_FILE: &str = "shards";

/// Readies the shards' log directory at startup (blocking): creates it, locks it for this
/// process (a second daemon on the same `log.dirs` must not start: the lock is held as long as
/// the returned file is open), records the shard count, and refuses a count other than the one
/// the logs were written with (groups hash to shards by that count; another would strand them
/// in the wrong shard). `None` when groups are kept in memory.
pub fn prepare_dir(
    settings: &CoordinatorLogSettings,
    shards: usize,
) -> Result<Option<std::fs::File>, String> {
    let Some(dir) = &settings.dir else {
        return Ok(None);
    };
    let shown = dir.display();
    std::fs::create_dir_all(dir).map_err(|e| format!("{shown}: {e}"))?;
    let lock = file_log::lock_dir(dir).map_err(|e| e.to_string())?;
    let path = dir.join(SHARD_COUNT_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let written = text.trim();
            if written != shards.to_string() {
                return Err(format!(
                    "{}: the coordinator logs were written with offsets.topic.num.partitions={written}; it is {shards} now, and changing it would lose groups",
                    path.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(&path, format!("{shards}\n"))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    Ok(Some(lock))
}

/// Says once, at startup, where groups and offsets are kept.
pub fn log_where(settings: &CoordinatorLogSettings, shards: usize) {
    match &settings.dir {
        None => info!("streams groups and committed offsets are kept in memory only: set log.dirs (or metadata.log.dir) to keep them across restarts"),
        Some(dir) => info!(dir = %dir.display(), shards, fsync = settings.fsync, "streams groups and committed offsets are kept in the coordinator logs"),
    }
}

/// Reads the log in `dir` back (creating it when missing), cutting a torn tail with a WARN;
/// blocking. Returns the writer that appends after it and its records.
pub fn open(dir: &Path) -> Result<(LogWriter, MetadataLog), FileLogError> {
    let loaded = file_log::open(dir)?;
    if let Some(cut) = &loaded.cut {
        warn!(
            dir = %dir.display(),
            bytes = cut.bytes,
            "coordinator shard log: {cut} (an append that was never acknowledged)"
        );
    }
    Ok((loaded.writer, loaded.log))
}

impl ShardLog {
    /// The runtime side of the log in `dir`, whose file continues at `next_offset`; `wake` is
    /// the writer task's, notified whenever records are queued.
    pub fn new(dir: &Path, next_offset: u64, wake: Arc<Notify>) -> ShardLog {
        ShardLog {
            dir: dir.to_path_buf(),
            queue: Mutex::new(Queued::default()),
            wake,
            durable: AtomicU64::new(next_offset),
            waiters: Mutex::new(VecDeque::new()),
            reload: AtomicBool::new(false),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every record below this offset (of the current epoch) is durable.
    pub fn durable_offset(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Queues a job's records (call it under the shard's lock, so that records and waiters
    /// queue in offset order) and says what the request must wait for: its own records, or,
    /// when it has none, the records queued before it, which it may have read.
    pub fn submit(&self, records: Vec<LogRecord>, next_offset: u64) -> DurableWait {
        if records.is_empty() && self.durable.load(Ordering::Acquire) >= next_offset {
            return DurableWait::Ready;
        }
        let (durable, wait) = oneshot::channel();
        {
            let mut waiters = lock(&self.waiters);
            // Under the waiters' lock: `durable_up_to` stores before it drains.
            if records.is_empty() && self.durable.load(Ordering::Acquire) >= next_offset {
                return DurableWait::Ready;
            }
            waiters.push_back((next_offset, durable));
        }
        if !records.is_empty() {
            self.lock_queue().push(records);
            self.wake.notify_one();
        }
        DurableWait::Pending(wait)
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Queued> {
        lock(&self.queue)
    }

    /// Takes everything queued.
    pub fn take_queued(&self) -> Queued {
        std::mem::take(&mut *self.lock_queue())
    }

    /// Writes the queued batches in one write, each a batch of the file, without syncing them
    /// (the writer syncs a round's files after writing them all); blocking.
    pub fn write_unsynced(
        &self,
        writer: &mut LogWriter,
        queued: &Queued,
    ) -> Result<(), FileLogError> {
        writer.write_batches(queued.batches())
    }

    /// Replaces the file with its records compacted (latest record of each key, tombstones
    /// dropped with what they delete), read back from the file itself, which memory keeps no
    /// copy of; blocking. Returns the compacted log's record count.
    pub fn compact(&self, writer: &mut LogWriter) -> Result<usize, FileLogError> {
        let mut log = writer.read_back()?;
        log.compact();
        writer.rewrite(&log)?;
        Ok(log.len())
    }

    /// Asks the log's writer to rebuild the shard from the durable log (as after a refused
    /// write: what is queued then is dropped and its requests refused). Call it under the
    /// shard's lock, having marked the shard as loading so that no job runs on its state.
    pub fn request_reload(&self) {
        self.reload.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Whether the shard waits to be rebuilt from the durable log.
    pub fn reload_requested(&self) -> bool {
        self.reload.load(Ordering::Acquire)
    }

    /// Every record before `next` is durable: wakes the requests that waited for them.
    pub fn durable_up_to(&self, next: u64) {
        self.durable.store(next, Ordering::Release);
        let mut waiters = lock(&self.waiters);
        while waiters.front().is_some_and(|(offset, _)| *offset <= next) {
            if let Some((_, wake)) = waiters.pop_front() {
                // The request may have gone (its connection closed): nothing to wake then.
                let _ = wake.send(());
            }
        }
    }

    /// The file refused records (or the writer stopped): everything queued is dropped, every
    /// waiter fails, and offsets go on from `durable` (the file's next offset). Call it under
    /// the shard's lock, after rebuilding the shard from the file, so that no job queues
    /// records of the dropped ones afterwards.
    pub fn start_new_epoch(&self, durable: u64) {
        self.reload.store(false, Ordering::Release);
        *self.lock_queue() = Queued::default();
        self.durable.store(durable, Ordering::Release);
        // Dropping the senders fails the waits.
        lock(&self.waiters).clear();
    }
}

/// Locks a mutex that only ever holds whole values (pushes and takes), so a poisoned one is
/// still consistent.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The smallest file worth compacting.
const MIN_REWRITE_BYTES: u64 = 1 << 20;

/// The file size at which a file of `len` bytes (just loaded or rewritten) is compacted next:
/// twice that, so rewrites cost amortized O(1) per appended byte.
pub fn rewrite_threshold(len: u64) -> u64 {
    len.saturating_mul(2).max(MIN_REWRITE_BYTES)
}

/// Logs a failed write at most once a minute per shard (a full disk fails every change).
#[derive(Debug, Default)]
pub struct FailureLog {
    last: Option<Instant>,
    suppressed: u64,
}

impl FailureLog {
    pub fn failed(&mut self, shard: usize, error: &dyn std::fmt::Display) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < Duration::from_secs(60))
        {
            self.suppressed += 1;
            return;
        }
        error!(
            shard,
            error = %error,
            suppressed = self.suppressed,
            "a coordinator shard could not write its log: the changes were undone and refused (NOT_COORDINATOR); later ones are tried again"
        );
        self.last = Some(now);
        self.suppressed = 0;
    }

    pub fn recovered(&mut self, shard: usize) {
        if self.last.take().is_some() {
            info!(shard, "a coordinator shard writes its log again");
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn records(offsets: std::ops::Range<u64>) -> Vec<LogRecord> {
        offsets
            .map(|offset| LogRecord {
                offset,
                record_type: 1,
                version: 0,
                key: Some(Bytes::from(format!("k{offset}"))),
                value: Some(Bytes::from_static(b"value")),
            })
            .collect()
    }

    /// Three jobs queued, written in one write: a crash that tears the write inside the second
    /// job's records leaves the first job whole and nothing of the second.
    #[test]
    fn each_job_queued_is_a_batch_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (mut writer, _) = open(dir.path()).unwrap();
        let log = ShardLog::new(dir.path(), 0, Arc::new(Notify::new()));
        let jobs = [records(0..2), records(2..5), records(5..6)];
        for job in &jobs {
            let next = job.last().map_or(0, |r| r.offset + 1);
            drop(log.submit(job.clone(), next));
        }
        // A job that wrote nothing queues no batch.
        drop(log.submit(Vec::new(), 6));
        let queued = log.take_queued();
        assert_eq!(queued.len(), 6);
        assert_eq!(queued.batches().collect::<Vec<_>>(), jobs.each_ref());
        log.write_unsynced(&mut writer, &queued).unwrap();
        writer.sync().unwrap();
        drop(writer);

        let path = dir.path().join(file_log::FILE_NAME);
        let whole = std::fs::read(&path).unwrap();
        let first_job_end = whole.len()
            - file_log::batch_bytes(&jobs[1]).unwrap().len()
            - file_log::batch_bytes(&jobs[2]).unwrap().len();
        // Torn after the second job's first two records.
        let two: usize = jobs[1][..2]
            .iter()
            .map(|r| file_log::entry_size(r.key.as_deref(), r.value.as_deref()))
            .sum();
        std::fs::write(&path, &whole[..first_job_end + two]).unwrap();
        let (_, loaded) = open(dir.path()).unwrap();
        assert_eq!(loaded.records(), jobs[0]);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            first_job_end
        );
    }
}
