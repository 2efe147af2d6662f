//! The simulated disk: the shard's durable log as the daemon's writer task keeps it
//! (`crates/server/src/runtime/shard_log.rs` and `shards/writer.rs`), with the writer's timing
//! in the driver's hands. A job's batch is queued when the runtime appends it; a sync writes
//! queued batches to the file in order (a group commit), each job's records a batch of the
//! file; a failed write loses whatever was queued; a crash loses it too, but may leave the
//! first bytes of the write it interrupted in the file. The file is held in memory byte for
//! byte as the daemon's file log writes it (`kcoord_metadata::file_log`, with
//! [`file_log::image_bytes`] and [`file_log::batch_bytes`]) and read back with the daemon's
//! reader ([`file_log::read_image`]: its torn-tail rules), so a restarted or rebuilt shard
//! replays what the daemon would load, through a real [`MetadataLog`].
use std::collections::VecDeque;
use std::convert::Infallible;

use kcoord_metadata::file_log::{self, entry_size};
use kcoord_metadata::{LogRecord, MetadataLog};
use kcoord_runtime::Log;

/// The shard's log compacts itself once this many keyed records were appended since its last
/// compaction (the daemon's logs wait for 1024): a shard is read back from the file with this
/// floor, so that runs of a few hundred steps compact the live log many times, and every
/// check of replay against the live state covers compacted logs.
const COMPACTION_FLOOR: usize = 64;

/// A bug planted on purpose, to show that the checks catch what it breaks (`PlantedBug::None`
/// is the daemon as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlantedBug {
    #[default]
    None,
    /// The disk reports a batch durable as soon as it is queued (an fsync that was skipped, a
    /// write cache that lies): requests are answered before their records are on disk.
    AcknowledgesBeforeSync,
    /// A request whose job wrote nothing is answered at once, though it may have read records
    /// still queued (a steady heartbeat told the epoch a queued batch gave its member).
    AnswersReadsAtOnce,
    /// The disk silently drops the last record of every batch of two or more it writes.
    LosesLastRecordOfBatch,
    /// When the disk refuses a write, the writer fails the waiting requests but does not rebuild
    /// the shard from the file, so memory keeps changes the file lacks.
    KeepsMemoryAfterFailedWrite,
    /// The marker writer completes a transaction before it writes the transaction's last
    /// marker: a crash in between leaves that partition without its marker.
    CompletesBeforeLastMarker,
    /// The marker writer acts on the prepared transactions it reads at once, not once they are
    /// durable: a crash can take back a decision whose markers are written.
    MarksUndurableDecisions,
    /// A parked JoinGroup or SyncGroup is answered as soon as a job decides its answer, not
    /// once that job's records are durable: a crash can take back the generation whose
    /// assignment a SyncGroup answer handed out.
    AnswersParkedAtOnce,
}

/// Where a write that a crash interrupts stops: how much of it reaches the file, which the
/// daemon's reader then cuts back to the last whole batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TornWrites {
    /// After a whole record (the CI setting): the entries of the write's first records are
    /// in the file, whole, and may end inside a batch.
    #[default]
    AtRecords,
    /// Inside a record (`KCOORD_SIM_TORN=inside`): as `AtRecords`, and the first half of the
    /// next record's entry too (when at least one record reached the file).
    InsideRecords,
}

/// The file and the writer's queue of one shard. The runtime's receipt for a batch is the
/// offset that must be durable before the request that wrote it (or read what was queued
/// before it) is answered, as `ShardLog::submit` makes a request wait.
#[derive(Debug, Clone)]
pub struct SimDisk {
    /// The file's bytes: its records in offset order (offsets have gaps once the file was
    /// compacted), framed as the daemon's file log frames them.
    file: Vec<u8>,
    /// Every offset below this one is in the file (or was compacted away).
    durable_next: u64,
    /// Batches queued for the writer, oldest first.
    queued: VecDeque<Vec<LogRecord>>,
    bug: PlantedBug,
    torn: TornWrites,
}

impl Log for SimDisk {
    type Receipt = u64;
    type Error = Infallible;

    fn append(&mut self, entries: &[LogRecord], next_offset: u64) -> Result<u64, Infallible> {
        if entries.is_empty() {
            if self.bug == PlantedBug::AnswersReadsAtOnce {
                return Ok(0);
            }
        } else {
            self.queued.push_back(entries.to_vec());
        }
        Ok(next_offset)
    }
}

impl SimDisk {
    /// An empty file.
    pub fn new(bug: PlantedBug, torn: TornWrites) -> SimDisk {
        SimDisk {
            file: file_log::image_bytes(&MetadataLog::new()).expect("an empty log has no record"),
            durable_next: 0,
            queued: VecDeque::new(),
            bug,
            torn,
        }
    }

    pub fn bug(&self) -> PlantedBug {
        self.bug
    }

    pub fn queued_batches(&self) -> usize {
        self.queued.len()
    }

    /// What the disk tells the writer is durable: every offset below this one.
    pub fn durable_offset(&self) -> u64 {
        match self.bug {
            PlantedBug::AcknowledgesBeforeSync => self
                .queued
                .back()
                .and_then(|batch| batch.last())
                .map_or(self.durable_next, |last| last.offset + 1),
            _ => self.durable_next,
        }
    }

    /// Writes and syncs the `batches` oldest queued batches, each a batch of the file.
    pub fn sync(&mut self, batches: usize) {
        let batches = batches.min(self.queued.len());
        for mut batch in self.queued.drain(..batches) {
            let Some(next) = batch.last().map(|last| last.offset + 1) else {
                continue;
            };
            if self.bug == PlantedBug::LosesLastRecordOfBatch && batch.len() >= 2 {
                batch.pop();
            }
            self.file.extend(encoded(&batch));
            self.durable_next = next;
        }
    }

    pub fn queued_records(&self) -> usize {
        self.queued.iter().map(Vec::len).sum()
    }

    /// The process dies while the writer writes the queue (one write: every queued batch, each
    /// a batch of the file): the entries of its first `records` records reach the file (and,
    /// with [`TornWrites::InsideRecords`], half of the next one), the rest never do. Then the
    /// file is read back and cut as the restarting daemon's file log cuts it: back to the end
    /// of the last whole batch. Fails when the reader calls the file corrupt.
    pub fn write_torn(&mut self, records: usize) -> Result<(), String> {
        let mut write: Vec<u8> = Vec::new();
        let mut landed = None;
        let mut left = records;
        for batch in self.queued.drain(..) {
            if landed.is_none() && left < batch.len() {
                let whole: usize = batch[..left].iter().map(entry_bytes).sum();
                let inside = match (self.torn, batch.get(left)) {
                    (TornWrites::InsideRecords, Some(next)) if records > 0 => entry_bytes(next) / 2,
                    _ => 0,
                };
                landed = Some(write.len() + whole + inside);
            }
            left = left.saturating_sub(batch.len());
            write.extend(encoded(&batch));
        }
        let landed = landed.unwrap_or(write.len());
        self.file.extend_from_slice(&write[..landed]);
        let (log, cut) = file_log::read_image(&self.file)
            .map_err(|e| format!("the file log refuses the torn file: {e}"))?;
        if let Some(cut) = cut {
            self.file.truncate(cut.position as usize);
        }
        self.durable_next = self.durable_next.max(log.next_offset());
        Ok(())
    }

    /// The disk refused a write, or the process died: what was queued never reaches the file.
    pub fn drop_queued(&mut self) {
        self.queued.clear();
    }

    /// The file rewritten as its own records compacted, read back from it (memory keeps no
    /// copy, as `writer.rs`'s `compact`); what is queued stays queued, written after it.
    pub fn compact_file(&mut self) -> Result<(), String> {
        let mut log = self.read_back()?;
        log.compact();
        self.file = file_log::image_bytes(&log).map_err(|e| format!("the rewrite: {e}"))?;
        Ok(())
    }

    /// What the shard's state stems from: the file read back, then every queued batch.
    pub fn whole_log(&self) -> Result<MetadataLog, String> {
        let mut log = self.read_back()?;
        for r in self.queued.iter().flatten().cloned() {
            log.push_at(r.offset, r.record_type, r.version, r.key, r.value)
                .map_err(|e| format!("the queue's offsets go back: {e}"))?;
        }
        Ok(log)
    }

    /// The file read back, as a restarted shard or the writer after a failed write reads it
    /// (`file_log::open`, whose cut `write_torn` made already: nothing is left to cut).
    pub fn read_back(&self) -> Result<MetadataLog, String> {
        let (file, cut) = file_log::read_image(&self.file)
            .map_err(|e| format!("the file log refuses the shard's file: {e}"))?;
        if let Some(cut) = cut {
            return Err(format!("the shard's file has a tail to cut: {cut}"));
        }
        let mut log = MetadataLog::with_compaction_floor(COMPACTION_FLOOR);
        for r in file.iter().map(|r| r.to_record()) {
            log.push_at(r.offset, r.record_type, r.version, r.key, r.value)
                .map_err(|e| format!("the file's offsets go back: {e}"))?;
        }
        log.advance_next_offset(self.durable_next.max(file.next_offset()))
            .map_err(|e| format!("the file's next offset: {e}"))?;
        Ok(log)
    }
}

/// The bytes of one batch in the file.
fn encoded(batch: &[LogRecord]) -> Vec<u8> {
    file_log::batch_bytes(batch).expect("the runtime's records fit an entry")
}

/// The bytes of one record's entry in the file.
fn entry_bytes(record: &LogRecord) -> usize {
    entry_size(record.key.as_deref(), record.value.as_deref())
}
