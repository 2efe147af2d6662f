//! Log compaction for `cleanup.policy=compact` (Kafka's `LogCleaner` / `Cleaner`, see
//! docs/kafka-data-plane-facts.md §9): the latest record of every key is kept, older ones go;
//! a tombstone (null value) that is the latest of its key is kept for `delete.retention.ms`
//! after the first pass that sees it (its batch is marked with that deadline, attribute bit 6),
//! and dropped by the first pass after.
//!
//! What differs from Kafka, on purpose:
//! * each segment is rewritten on its own, in place, instead of merging small neighbours;
//! * the key map is exact (keys as bytes, up to [`MAX_KEYS`] per pass) instead of MD5 hashes
//!   in a fixed buffer;
//! * a log is also cleaned when the earliest tombstone deadline it holds has passed, so
//!   tombstones do leave a quiet log (Kafka waits until the dirty ratio picks the log again).
//!
//! Transactions, as Kafka's cleaner treats them: nothing at or past the last stable offset is
//! cleaned (a segment is cleanable only if it ends below it); the records of aborted
//! transactions neither enter the key map nor survive a pass (their batches go, or stay empty
//! when a producer's last); and unlike Kafka, transaction markers are always kept (Kafka drops
//! them once their transaction's records are gone and `delete.retention.ms` has passed), so
//! the aborted transaction index never loses the marker a consumer needs to see.

use std::collections::HashMap;

use bytes::Bytes;
use kcoord_record_batches::{
    BatchBuilder, BatchHeader, BatchOptions, Compression, Record, RecordBatch, TimestampType,
};

use crate::entry::BatchEntry;
use crate::error::StorageError;
use crate::segment::Segment;
use crate::txn::AbortedIndex;

/// Keys one pass remembers; a longer dirty range is finished by the next pass.
pub const MAX_KEYS: usize = 4_000_000;
/// Decompressed bytes read from one batch.
const MAX_UNCOMPRESSED: usize = 256 * 1024 * 1024;

/// What a pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionStats {
    pub segments_rewritten: usize,
    pub removed_records: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// Everything a pass needs besides the segments.
pub(crate) struct Pass<'a> {
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// The offset of the last batch of each producer with state: such a batch is kept (empty)
    /// even when all its records go, so the producer's sequence survives.
    pub producer_last_offsets: &'a dyn Fn(i64) -> Option<i64>,
    pub high_watermark: i64,
    pub aborted: &'a AbortedIndex,
}

/// Whether the batch of `e` belongs to an aborted transaction.
pub(crate) fn is_aborted(e: &BatchEntry, aborted: &AbortedIndex) -> bool {
    e.is_transactional && !e.is_control && aborted.contains_batch(e.producer_id, e.last_offset)
}

/// The latest offset of each key at or after `first_dirty`, and where the map ends.
pub(crate) fn key_map(
    segments: &[Segment],
    first_dirty: i64,
    aborted: &AbortedIndex,
) -> Result<(HashMap<Bytes, i64>, i64), StorageError> {
    let mut map = HashMap::new();
    let mut end = first_dirty;
    for s in segments {
        for (i, e) in s.entries.iter().enumerate() {
            if e.last_offset < first_dirty || e.is_control {
                continue;
            }
            if is_aborted(e, aborted) {
                // An aborted record must not hide the committed one of its key.
                end = e.next_offset();
                continue;
            }
            if map.len() >= MAX_KEYS {
                return Ok((map, e.base_offset));
            }
            let batch = parse(s, i)?;
            for r in records(&batch)? {
                let offset = r.offset(batch.header());
                if let Some(key) = r.key {
                    map.insert(key, offset);
                }
            }
            end = e.next_offset();
        }
    }
    Ok((map, end))
}

fn parse(s: &Segment, i: usize) -> Result<RecordBatch, StorageError> {
    let bytes = s
        .batch_bytes(i)
        .map_err(|e| StorageError::io(s.path().unwrap_or(std::path::Path::new("memory")), e))?;
    RecordBatch::parse(bytes).map_err(corrupt)
}

fn records(batch: &RecordBatch) -> Result<Vec<Record>, StorageError> {
    batch.decode_records(MAX_UNCOMPRESSED).map_err(corrupt)
}

fn corrupt(e: kcoord_record_batches::RecordsError) -> StorageError {
    StorageError::Corrupt {
        log: String::new(),
        reason: e.to_string(),
    }
}

/// A batch's fate in a pass.
pub(crate) enum Rewritten {
    /// Unchanged: copy the bytes as they are.
    Same,
    /// Rebuilt from the records kept (possibly none: a header-only batch).
    New(Bytes),
    /// Gone.
    Dropped,
}

/// Decides one batch: which records stay, whether it must be rebuilt, and the earliest
/// tombstone deadline it then carries. Returns also how many records went.
pub(crate) fn rewrite_batch(
    batch: &RecordBatch,
    entry: &BatchEntry,
    keys: &HashMap<Bytes, i64>,
    map_end: i64,
    pass: &Pass<'_>,
) -> Result<(Rewritten, u64, Option<i64>), StorageError> {
    let header = *batch.header();
    if header.is_control() {
        return Ok((Rewritten::Same, 0, None));
    }
    let all = records(batch)?;
    let horizon = header.delete_horizon_ms();
    let mut kept = Vec::with_capacity(all.len());
    let mut has_tombstone = false;
    let aborted = is_aborted(entry, pass.aborted);
    for r in all.iter() {
        if !aborted && survives(r, r.offset(&header), keys, map_end, horizon, pass.now_ms) {
            has_tombstone |= r.value.is_none();
            kept.push(r);
        }
    }
    let removed = (all.len() - kept.len()) as u64;
    let needs_horizon = has_tombstone && horizon.is_none();
    let new_horizon = if needs_horizon {
        Some(pass.now_ms.saturating_add(pass.delete_retention_ms))
    } else {
        horizon.filter(|_| has_tombstone)
    };
    if removed == 0 && !needs_horizon {
        return Ok((Rewritten::Same, 0, new_horizon));
    }
    if kept.is_empty() {
        let producer_last = (header.producer_id >= 0)
            .then(|| (pass.producer_last_offsets)(header.producer_id))
            .flatten();
        let keep_header =
            producer_last == Some(entry.last_offset) || entry.next_offset() == pass.high_watermark;
        if !keep_header {
            return Ok((Rewritten::Dropped, removed, None));
        }
    }
    Ok((
        Rewritten::New(rebuilt(&header, kept, new_horizon)?),
        removed,
        new_horizon,
    ))
}

/// Whether record `r` at `offset` stays: it is past the key map, or the latest of its key and
/// not a tombstone whose deadline (`horizon`) has passed.
#[inline]
fn survives(
    r: &Record,
    offset: i64,
    keys: &HashMap<Bytes, i64>,
    map_end: i64,
    horizon: Option<i64>,
    now_ms: i64,
) -> bool {
    if offset >= map_end {
        return true;
    }
    match &r.key {
        None => false,
        Some(k) => {
            let latest = keys.get(k).is_none_or(|&o| offset >= o);
            latest && (r.value.is_some() || horizon.is_none_or(|h| now_ms < h))
        }
    }
}

/// The batch of `header` again with only the `kept` records, at their offsets, carrying
/// `delete_horizon_ms`.
fn rebuilt(
    header: &BatchHeader,
    kept: Vec<&Record>,
    delete_horizon_ms: Option<i64>,
) -> Result<Bytes, StorageError> {
    let compression = header.compression().unwrap_or(Compression::None);
    let mut builder = BatchBuilder::new(BatchOptions {
        base_offset: header.base_offset,
        partition_leader_epoch: header.partition_leader_epoch,
        compression,
        compression_level: None,
        timestamp_type: header.timestamp_type(),
        log_append_time: header.max_timestamp,
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        base_sequence: header.base_sequence,
        transactional: header.is_transactional(),
        control: false,
        delete_horizon_ms,
    });
    for r in kept {
        let ts = r.timestamp(header);
        builder.append_record(r, ts).map_err(corrupt)?;
    }
    builder.override_last_offset_delta(header.last_offset_delta);
    if header.timestamp_type() == TimestampType::LogAppendTime || builder.record_count() == 0 {
        builder.override_max_timestamp(header.max_timestamp);
    }
    builder.build().map_err(corrupt)
}
