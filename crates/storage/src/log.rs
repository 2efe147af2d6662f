//! One partition's log: segments in offset order (the last one takes appends), the log start
//! offset, and the producer state. In memory, or in a directory of segment files.
//!
//! With a single replica every appended batch is committed at once, so the high watermark is
//! the log end offset; the last stable offset is below it while a transaction is ongoing
//! (`log/txn.rs`: markers, read_committed reads, the aborted transaction index).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use tracing::{info, warn};

use crate::entry::{BatchEntry, MarkerKind};
use crate::error::{AppendError, ReadError, StorageError};
use crate::format;
use crate::log_config::{LogConfig, TimestampType};
use crate::producer_state::VerificationGuard;
use crate::producer_state::{last_sequence, ProducerBatch, ProducerStates};
use crate::seal::PendingSeal;
use crate::segment::{self, AppendIoError, Chunk, Segment};
use crate::txn::{AbortedIndex, AbortedTxn};

mod compact;
mod open;
mod seal;
mod timestamps;
mod txn;

pub use txn::TxnMarker;

/// The checkpoint of a log start offset moved by DeleteRecords (Kafka keeps these in
/// `log-start-offset-checkpoint`, one file per log dir; one per partition here).
const LOG_START_FILE: &str = "log-start-offset";
/// Where compaction has cleaned up to (Kafka's `cleaner-offset-checkpoint`, per log dir there).
const CLEANER_FILE: &str = "cleaner-offset";

/// A batch that passed validation, about to be appended.
#[derive(Debug, Clone)]
pub struct IncomingBatch {
    /// The whole batch as the producer sent it.
    pub bytes: Bytes,
    pub record_count: i32,
    pub last_offset_delta: i32,
    /// The max timestamp the stored header carries.
    pub max_timestamp: i64,
    /// The timestamp type the stored header carries.
    pub timestamp_type: TimestampType,
    /// The stored header's timestamp type or max timestamp differ from the ones sent: they
    /// are rewritten and the CRC recomputed (Kafka's `setMaxTimestamp`).
    pub rewrite_timestamps: bool,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub is_control: bool,
    pub is_transactional: bool,
    /// `Some(now)` for a LogAppendTime topic: the answer's LogAppendTime.
    pub log_append_time: Option<i64>,
}

impl IncomingBatch {
    /// The batch as its header describes it (CreateTime kept as sent).
    pub fn from_batch(bytes: Bytes) -> Result<IncomingBatch, kcoord_record_batches::RecordsError> {
        let h = kcoord_record_batches::BatchHeader::parse(&bytes)?;
        Ok(IncomingBatch {
            record_count: h.record_count,
            last_offset_delta: h.last_offset_delta,
            max_timestamp: h.max_timestamp,
            timestamp_type: h.timestamp_type(),
            rewrite_timestamps: false,
            producer_id: h.producer_id,
            producer_epoch: h.producer_epoch,
            base_sequence: h.base_sequence,
            is_control: h.is_control(),
            is_transactional: h.is_transactional(),
            log_append_time: None,
            bytes,
        })
    }

    /// What the producer state tracks of this batch; `None` for a control batch or a batch
    /// without a producer id.
    #[inline]
    fn producer_batch(&self) -> Option<ProducerBatch> {
        (self.producer_id >= 0 && !self.is_control).then(|| ProducerBatch {
            producer_id: self.producer_id,
            epoch: self.producer_epoch,
            first_seq: self.base_sequence,
            last_seq: last_sequence(self.base_sequence, self.last_offset_delta),
            is_transactional: self.is_transactional,
        })
    }
}

/// A batch as the validator passed it: the header rewrite it decided travels with it.
impl From<crate::validate::ValidatedBatch> for IncomingBatch {
    fn from(v: crate::validate::ValidatedBatch) -> Self {
        IncomingBatch {
            record_count: v.record_count,
            last_offset_delta: v.header.last_offset_delta,
            max_timestamp: v.max_timestamp,
            timestamp_type: v.timestamp_type,
            rewrite_timestamps: v.crc_changes,
            producer_id: v.header.producer_id,
            producer_epoch: v.header.producer_epoch,
            base_sequence: v.header.base_sequence,
            is_control: v.header.is_control(),
            is_transactional: v.header.is_transactional(),
            log_append_time: v.log_append_time,
            bytes: v.bytes,
        }
    }
}

/// The answer to an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    /// The LogAppendTime given to the batch, else -1 (for a duplicate: the original batch's
    /// timestamp, as Kafka answers).
    pub log_append_time: i64,
    pub log_start_offset: i64,
    /// A retry of a batch already in the log: nothing was appended.
    pub duplicate: bool,
}

/// What a read found.
#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    pub chunks: Vec<Chunk>,
    pub bytes: usize,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// A read_committed read: the aborted transactions overlapping what it read (Kafka's
    /// `FetchDataInfo.abortedTransactions`); `None` for read_uncommitted.
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
}

/// A record found by timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub offset: i64,
    pub timestamp: i64,
}

#[derive(Debug)]
pub struct Log {
    /// `topic-partition`, for messages.
    name: String,
    dir: Option<PathBuf>,
    config: LogConfig,
    /// Never empty; the last one is the active segment.
    segments: Vec<Segment>,
    log_start_offset: i64,
    producers: ProducerStates,
    unflushed_messages: i64,
    oldest_unflushed_ms: Option<i64>,
    /// An I/O error left the active segment in doubt: no more appends until a restart, whose
    /// recovery cuts what is not whole.
    failed: Option<String>,
    /// Compaction has cleaned every offset below this.
    first_dirty: i64,
    /// The earliest tombstone deadline compaction wrote, to clean again once it has passed.
    next_tombstone_deadline: Option<i64>,
    aborted: AbortedIndex,
    /// Seals of rolled segments not known to have run ([`crate::seal`]): a flush settles
    /// them, and one that failed stops appends as a failed write does.
    pending_seals: Vec<Arc<PendingSeal>>,
    /// The same seals, until the daemon takes them to run ([`Log::take_seals`]).
    seals_to_run: Vec<Arc<PendingSeal>>,
}

impl Log {
    /// An empty log in memory.
    pub fn in_memory(name: impl Into<String>, config: LogConfig, now_ms: i64) -> Log {
        Log {
            name: name.into(),
            dir: None,
            config,
            segments: vec![Segment::in_memory(0, now_ms)],
            log_start_offset: 0,
            producers: ProducerStates::default(),
            unflushed_messages: 0,
            oldest_unflushed_ms: None,
            failed: None,
            first_dirty: 0,
            next_tombstone_deadline: None,
            aborted: AbortedIndex::default(),
            pending_seals: Vec::new(),
            seals_to_run: Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The next offset to be assigned; also the high watermark.
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }

    pub fn high_watermark(&self) -> i64 {
        self.log_end_offset()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// Bytes stored in all segments.
    pub fn size(&self) -> u64 {
        self.segments.iter().map(|s| s.size).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    pub fn producers(&self) -> &ProducerStates {
        &self.producers
    }

    fn active(&self) -> &Segment {
        // `segments` is never empty: every constructor and every deletion keeps one.
        &self.segments[self.segments.len() - 1]
    }

    fn active_mut(&mut self) -> &mut Segment {
        let last = self.segments.len() - 1;
        &mut self.segments[last]
    }

    /// Appends one validated batch at the log end, unless it is a retry of one already there.
    /// A transactional batch needs its producer's transaction ongoing here: to start one, see
    /// [`Log::append_verified`].
    pub fn append(
        &mut self,
        batch: &IncomingBatch,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<Appended, AppendError> {
        self.append_verified(batch, leader_epoch, None, now_ms)
    }

    /// [`Log::append`], for a transactional batch that may start its producer's transaction
    /// here: `guard` is the verification the coordinator confirmed
    /// ([`crate::producer_state::verification`]).
    pub fn append_verified(
        &mut self,
        batch: &IncomingBatch,
        leader_epoch: i32,
        guard: Option<VerificationGuard>,
        now_ms: i64,
    ) -> Result<Appended, AppendError> {
        self.note_failed_seals();
        if let Some(reason) = &self.failed {
            return Err(AppendError::Storage(reason.clone()));
        }
        let producer = batch.producer_batch();
        if let Some(p) = &producer {
            if let Some(dup) = self.producers.duplicate_of(p) {
                return Ok(Appended {
                    base_offset: dup.first_offset,
                    last_offset: dup.last_offset,
                    log_append_time: dup.timestamp,
                    log_start_offset: self.log_start_offset,
                    duplicate: true,
                });
            }
            self.check_verification(p, guard)?;
            self.producers.check(p, self.log_end_offset(), &self.name)?;
        }
        let (base_offset, last_offset) = self.write_batch(batch, None, leader_epoch, now_ms)?;
        if let Some(p) = &producer {
            self.producers
                .update(p, base_offset, last_offset, batch.max_timestamp);
        }
        Ok(Appended {
            base_offset,
            last_offset,
            log_append_time: batch.log_append_time.unwrap_or(-1),
            log_start_offset: self.log_start_offset,
            duplicate: false,
        })
    }

    /// Writes a batch at the log end (rolling first if due) and counts it towards the flush;
    /// returns its first and last offsets.
    fn write_batch(
        &mut self,
        batch: &IncomingBatch,
        marker: Option<MarkerKind>,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<(i64, i64), AppendError> {
        let size = batch.bytes.len();
        self.maybe_roll(size, batch.max_timestamp, now_ms)?;
        let base_offset = self.log_end_offset();
        let last_offset = base_offset + i64::from(batch.last_offset_delta);
        let max_timestamp = batch.max_timestamp;
        let entry = BatchEntry {
            base_offset,
            last_offset,
            position: 0,
            size: 0,
            max_timestamp,
            producer_id: batch.producer_id,
            producer_epoch: batch.producer_epoch,
            base_sequence: batch.base_sequence,
            is_control: batch.is_control,
            is_transactional: batch.is_transactional,
            marker,
        };
        let (head, body) = batch.bytes.split_at(format::HEADER_LEN.min(size));
        let mut header = [0u8; format::HEADER_LEN];
        let header = &mut header[..head.len()];
        header.copy_from_slice(head);
        format::assign_offsets(header, base_offset, leader_epoch);
        if batch.rewrite_timestamps {
            format::set_timestamps(header, body, batch.timestamp_type, batch.max_timestamp);
        }
        self.write_to_active(header, body, entry)?;
        self.note_unflushed(batch.record_count, now_ms)?;
        Ok((base_offset, last_offset))
    }

    /// Appends to the active segment; a write that could not be undone fails the log.
    #[inline]
    fn write_to_active(
        &mut self,
        header: &[u8],
        body: &[u8],
        entry: BatchEntry,
    ) -> Result<(), AppendError> {
        match self.active_mut().append(header, body, entry) {
            Ok(()) => Ok(()),
            Err(AppendIoError::Undone(e)) => {
                warn!(log = %self.name, error = %e, "append failed; nothing was written");
                Err(AppendError::Storage(e.to_string()))
            }
            Err(AppendIoError::Damaged { write, cut }) => {
                let reason = format!(
                    "write failed ({write}) and the partial batch could not be cut ({cut})"
                );
                warn!(log = %self.name, %reason, "log refuses appends until restart");
                self.failed = Some(reason.clone());
                Err(AppendError::Storage(reason))
            }
        }
    }

    /// Counts an appended batch of `record_count` records towards `flush.messages`, and
    /// flushes when they are reached.
    #[inline]
    fn note_unflushed(&mut self, record_count: i32, now_ms: i64) -> Result<(), AppendError> {
        self.unflushed_messages += i64::from(record_count.max(1));
        self.oldest_unflushed_ms.get_or_insert(now_ms);
        if self.unflushed_messages >= self.config.flush_messages {
            self.flush()
                .map_err(|e| AppendError::Storage(e.to_string()))?;
        }
        Ok(())
    }

    /// Kafka's `LogSegment.shouldRoll`: the active segment is full, old enough (by the first
    /// batch's timestamp, else its creation), or would overflow 32-bit relative offsets.
    fn maybe_roll(
        &mut self,
        incoming: usize,
        incoming_max_timestamp: i64,
        now_ms: i64,
    ) -> Result<(), AppendError> {
        let active = self.active();
        if active.is_empty() {
            return Ok(());
        }
        let full = active.size + incoming as u64 > self.config.segment_bytes.max(0) as u64;
        let waited = match active.entries.first().map(|e| e.max_timestamp) {
            Some(first) if first >= 0 => incoming_max_timestamp.saturating_sub(first),
            _ => now_ms.saturating_sub(active.created_ms),
        };
        let old = waited > self.config.segment_ms;
        let overflow = self.log_end_offset() - active.base_offset > i64::from(i32::MAX) - 1_000_000;
        if full || old || overflow {
            self.roll(now_ms)
                .map_err(|e| AppendError::Storage(e.to_string()))?;
        }
        Ok(())
    }

    /// Batches from the one holding `offset` on, up to `max_bytes`; with `min_one_batch` the
    /// first batch is returned whole even if it alone is larger (Kafka's "at least one
    /// batch", so a consumer can always make progress).
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, ReadError> {
        self.read_below(offset, max_bytes, min_one_batch, self.log_end_offset())
    }

    /// [`Log::read`] of the batches below `max_offset` (a batch boundary) only.
    fn read_below(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        max_offset: i64,
    ) -> Result<ReadResult, ReadError> {
        let end = self.log_end_offset();
        if offset < self.log_start_offset || offset > end {
            return Err(ReadError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: end,
            });
        }
        let mut result = ReadResult {
            high_watermark: end,
            last_stable_offset: self.last_stable_offset(),
            log_start_offset: self.log_start_offset,
            ..ReadResult::default()
        };
        let mut seg = self.segment_index_for(offset);
        let mut first = true;
        while seg < self.segments.len() {
            let s = &self.segments[seg];
            let mut from = s.entries.partition_point(|e| e.last_offset < offset);
            if !first {
                from = 0;
            }
            let mut to = from;
            while to < s.entries.len() {
                if s.entries[to].base_offset >= max_offset {
                    s.chunks(from, to, &mut result.chunks);
                    return Ok(result);
                }
                let size = s.entries[to].size as usize;
                let fits = result.bytes + size <= max_bytes;
                let first_of_read = min_one_batch && result.bytes == 0;
                if !(fits || first_of_read) {
                    s.chunks(from, to, &mut result.chunks);
                    return Ok(result);
                }
                result.bytes += size;
                to += 1;
            }
            s.chunks(from, to, &mut result.chunks);
            first = false;
            seg += 1;
        }
        Ok(result)
    }

    /// The index of the segment that holds `offset` (or the first after it).
    fn segment_index_for(&self, offset: i64) -> usize {
        self.segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1)
    }

    fn io_error(&self, e: std::io::Error) -> StorageError {
        StorageError::io(self.dir.as_deref().unwrap_or(Path::new("memory")), e)
    }

    /// DeleteRecords: moves the log start offset to `offset` (at most the high watermark) and
    /// drops the segments wholly below it. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, ReadError> {
        let end = self.log_end_offset();
        if offset < 0 || offset > end {
            return Err(ReadError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: end,
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            if let Some(dir) = &self.dir {
                if let Err(e) =
                    segment::write_small_file(&dir.join(LOG_START_FILE), &offset.to_string())
                {
                    warn!(log = %self.name, error = %e, "could not record the new log start offset");
                }
            }
            self.delete_segments_below_log_start();
        }
        Ok(self.log_start_offset)
    }

    fn delete_segments_below_log_start(&mut self) {
        let start = self.log_start_offset;
        self.delete_oldest_while(
            |s, next| {
                next.is_some_and(|n| n.base_offset <= start)
                    || (next.is_none() && !s.is_empty() && s.next_offset() <= start)
            },
            "log start offset",
        );
    }

    /// Deletes segments from the oldest on while `doomed(segment, next)` holds. The active
    /// segment is deleted only when non-empty; a new empty one at the log end replaces it.
    /// Returns how many were deleted.
    fn delete_oldest_while(
        &mut self,
        mut doomed: impl FnMut(&Segment, Option<&Segment>) -> bool,
        reason: &str,
    ) -> usize {
        let mut count = 0;
        while count < self.segments.len() {
            let s = &self.segments[count];
            let next = self.segments.get(count + 1);
            if (next.is_none() && s.is_empty()) || !doomed(s, next) {
                break;
            }
            count += 1;
        }
        if count == 0 {
            return 0;
        }
        if count == self.segments.len() {
            let now = self.active().created_ms.max(0);
            if let Err(e) = self.roll(now) {
                warn!(log = %self.name, error = %e, "could not roll before deleting every segment");
                count -= 1;
                if count == 0 {
                    return 0;
                }
            }
        }
        for s in self.segments.drain(..count) {
            if let Err(e) = s.delete_files() {
                warn!(log = %self.name, error = %e, "could not delete a segment file");
            }
        }
        let first_base = self.segments.first().map_or(0, |s| s.base_offset);
        self.log_start_offset = self.log_start_offset.max(first_base);
        self.aborted.remove_below(first_base);
        info!(log = %self.name, deleted = count, reason, log_start_offset = self.log_start_offset, "deleted segments");
        count
    }

    /// Retention (Kafka's `deleteOldSegments`): with the delete policy, segments whose newest
    /// record is older than `retention.ms`, then the oldest segments while the log is larger
    /// than `retention.bytes` without them. Returns how many segments were deleted.
    pub fn apply_retention(&mut self, now_ms: i64) -> usize {
        let mut deleted = 0;
        if let Some(ms) = self.config.time_retention() {
            deleted += self.delete_oldest_while(
                |s, _| now_ms.saturating_sub(s.max_timestamp()) > ms,
                "retention.ms",
            );
        }
        if let Some(limit) = self.config.size_retention() {
            let mut excess = self.size() as i64 - limit;
            deleted += self.delete_oldest_while(
                |s, _| {
                    let doomed = excess - s.size as i64 >= 0;
                    if doomed {
                        excess -= s.size as i64;
                    }
                    doomed
                },
                "retention.bytes",
            );
        }
        deleted
    }

    /// Forgets producers idle for `expiration_ms`.
    pub fn expire_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers.expire(now_ms, expiration_ms)
    }

    /// Deletes every file of this log (the topic was deleted).
    pub fn delete(mut self) -> Result<(), StorageError> {
        self.abandon_seals();
        if let Some(dir) = &self.dir {
            std::fs::remove_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        }
        Ok(())
    }
}
