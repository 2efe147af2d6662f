//! The simulated disk: the shard's durable log as the daemon's writer task keeps it
//! (`crates/server/src/runtime/shard_log.rs` and `shards/writer.rs`), with the writer's timing in the
//! driver's hands. A job's batch is queued when the runtime appends it; a sync writes queued
//! batches to the file in order (a group commit); a failed write loses whatever was queued; a
//! crash loses it too. The file's records are real [`LogRecord`]s, and a restarted or rebuilt
//! shard replays them through a real [`MetadataLog`].
use std::collections::VecDeque;
use std::convert::Infallible;

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
}

/// Where a write that a crash interrupts is cut when the file is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TornWrites {
    /// At a batch boundary: whatever reached the file is whole batches, as a file whose
    /// entries were batches (Kafka's record batches) would be read back.
    #[default]
    AtBatches,
    /// At a record boundary, as the daemon's `file_log` reads a torn tail back today (each
    /// record is an entry with its own checksum): the last batch may be cut short.
    AtRecords,
}

/// The file and the writer's queue of one shard. The runtime's receipt for a batch is the
/// offset that must be durable before the request that wrote it (or read what was queued
/// before it) is answered, as `ShardLog::submit` makes a request wait.
#[derive(Debug, Clone)]
pub struct SimDisk {
    /// The file's records, in offset order (offsets have gaps once the file was compacted).
    durable: Vec<LogRecord>,
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
            durable: Vec::new(),
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

    /// Writes and syncs the `batches` oldest queued batches.
    pub fn sync(&mut self, batches: usize) {
        let batches = batches.min(self.queued.len());
        for mut batch in self.queued.drain(..batches) {
            let Some(next) = batch.last().map(|last| last.offset + 1) else {
                continue;
            };
            if self.bug == PlantedBug::LosesLastRecordOfBatch && batch.len() >= 2 {
                batch.pop();
            }
            self.durable.extend(batch);
            self.durable_next = next;
        }
    }

    pub fn queued_records(&self) -> usize {
        self.queued.iter().map(Vec::len).sum()
    }

    /// The process dies while the writer writes the queue: its first `records` records reach
    /// the file, and reading it back cuts the torn tail where [`TornWrites`] says (with
    /// `AtBatches`, back to the last whole batch); the rest never reach it.
    pub fn write_torn(&mut self, records: usize) {
        let mut left = records;
        let mut written: Vec<LogRecord> = Vec::new();
        for batch in self.queued.drain(..) {
            let whole = batch.len() <= left;
            if !whole && (self.torn == TornWrites::AtBatches || left == 0) {
                break;
            }
            let taken = batch.len().min(left);
            written.extend(batch.into_iter().take(taken));
            left -= taken;
        }
        if let Some(last) = written.last() {
            self.durable_next = self.durable_next.max(last.offset + 1);
        }
        self.durable.extend(written);
    }

    /// The disk refused a write, or the process died: what was queued never reaches the file.
    pub fn drop_queued(&mut self) {
        self.queued.clear();
    }

    /// The file rewritten as `snapshot`, the shard's compacted log, which holds every queued
    /// record too (the writer takes the queue with the snapshot, as `writer.rs`'s `compact`).
    pub fn rewrite(&mut self, snapshot: &MetadataLog) {
        self.durable = snapshot.records();
        self.durable_next = snapshot.next_offset();
        self.queued.clear();
    }

    /// The file read back, as a restarted shard or the writer after a failed write reads it.
    pub fn read_back(&self) -> MetadataLog {
        let mut log = MetadataLog::with_compaction_floor(COMPACTION_FLOOR);
        for r in &self.durable {
            log.push_at(
                r.offset,
                r.record_type,
                r.version,
                r.key.clone(),
                r.value.clone(),
            )
            .expect("the file's offsets only grow");
        }
        log.advance_next_offset(self.durable_next)
            .expect("the file's next offset is past its records");
        log
    }
}
