//! A compaction pass over a log's cleanable segments; which records stay is decided in
//! `compaction.rs`.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use tracing::{info, warn};

use super::{Log, CLEANER_FILE};
use crate::compaction::{self, CompactionStats, Pass, Rewritten};
use crate::entry::BatchEntry;
use crate::error::StorageError;
use crate::segment::{self, AppendIoError, Segment};

/// One segment after a pass.
struct CleanedSegment {
    /// The batches to keep, when any batch changed or went; `None` when the segment stays.
    kept: Option<Vec<(Bytes, BatchEntry)>>,
    removed_records: u64,
    /// The earliest tombstone deadline its batches carry.
    deadline: Option<i64>,
}

impl Log {
    /// One compaction pass (`compaction.rs`), when the log is due: the sealed segments older
    /// than `min.compaction.lag.ms` are cleanable, and the pass runs when their dirty part is
    /// more than `min.cleanable.dirty.ratio` of them, when `max.compaction.lag.ms` is overdue,
    /// or when a tombstone deadline has passed.
    pub fn compact(&mut self, now_ms: i64) -> Result<CompactionStats, StorageError> {
        let mut stats = CompactionStats::default();
        if !self.config.cleanup_compact || self.failed.is_some() {
            return Ok(stats);
        }
        let end = self.cleanable_end(now_ms);
        if end == 0 {
            return Ok(stats);
        }
        let first_dirty = self.first_dirty.max(self.log_start_offset);
        if !self.compaction_due(end, first_dirty, now_ms) {
            return Ok(stats);
        }
        let (keys, map_end) =
            compaction::key_map(&self.segments[..end], first_dirty, &self.aborted)?;
        let producers = self.producers.clone();
        // A copy: the pass reads it while segments are replaced.
        let aborted = self.aborted.clone();
        let last_offsets = move |pid: i64| producers.last_offset_of(pid);
        let pass = Pass {
            now_ms,
            delete_retention_ms: self.config.delete_retention_ms,
            producer_last_offsets: &last_offsets,
            high_watermark: self.log_end_offset(),
            aborted: &aborted,
        };
        let mut deadline: Option<i64> = None;
        for si in 0..end {
            let cleaned = self.clean_segment(&self.segments[si], &keys, map_end, &pass)?;
            stats.removed_records += cleaned.removed_records;
            if let Some(h) = cleaned.deadline {
                deadline = Some(deadline.map_or(h, |d| d.min(h)));
            }
            if let Some(kept) = cleaned.kept {
                stats.bytes_before += self.segments[si].size;
                let replaced = self.replace_segment(si, kept)?;
                stats.bytes_after += replaced;
                stats.segments_rewritten += 1;
            }
        }
        self.first_dirty = map_end;
        self.next_tombstone_deadline = deadline;
        self.checkpoint_cleaner_offset(map_end);
        if stats.segments_rewritten > 0 {
            info!(log = %self.name, segments = stats.segments_rewritten, removed_records = stats.removed_records, bytes_before = stats.bytes_before, bytes_after = stats.bytes_after, "compacted");
        }
        Ok(stats)
    }

    /// How many segments, from the oldest, are cleanable: sealed, below the last stable offset
    /// (an undecided transaction may yet abort), and older than `min.compaction.lag.ms` along
    /// with every one before them.
    fn cleanable_end(&self, now_ms: i64) -> usize {
        let active = self.segments.len() - 1;
        let lag = self.config.min_compaction_lag_ms;
        let lso = self.last_stable_offset();
        self.segments[..active]
            .iter()
            .position(|s| {
                s.next_offset() > lso || (lag > 0 && s.max_timestamp() > now_ms.saturating_sub(lag))
            })
            .unwrap_or(active)
    }

    /// Whether the first `end` segments, dirty from `first_dirty` on, are due for a pass.
    fn compaction_due(&self, end: usize, first_dirty: i64, now_ms: i64) -> bool {
        let (mut clean, mut dirty) = (0u64, 0u64);
        for s in &self.segments[..end] {
            if s.next_offset() <= first_dirty {
                clean += s.size;
            } else {
                dirty += s.size;
            }
        }
        let ratio = if clean + dirty == 0 {
            0.0
        } else {
            dirty as f64 / (clean + dirty) as f64
        };
        let overdue = self.segments[..end]
            .iter()
            .find(|s| s.next_offset() > first_dirty)
            .and_then(|s| s.entries.first())
            .is_some_and(|e| {
                e.max_timestamp >= 0
                    && now_ms.saturating_sub(e.max_timestamp) > self.config.max_compaction_lag_ms
            });
        let deadline_passed = self.next_tombstone_deadline.is_some_and(|d| now_ms >= d);
        (dirty > 0 && (ratio > self.config.min_cleanable_dirty_ratio || overdue)) || deadline_passed
    }

    /// Every batch of segment `s` through the pass.
    fn clean_segment(
        &self,
        s: &Segment,
        keys: &HashMap<Bytes, i64>,
        map_end: i64,
        pass: &Pass<'_>,
    ) -> Result<CleanedSegment, StorageError> {
        let corrupt = |err: kcoord_record_batches::RecordsError| StorageError::Corrupt {
            log: self.name.clone(),
            reason: err.to_string(),
        };
        let mut kept: Vec<(Bytes, BatchEntry)> = Vec::with_capacity(s.entries.len());
        let mut changed = false;
        let mut removed_records = 0;
        let mut deadline: Option<i64> = None;
        for (i, e) in s.entries.iter().enumerate() {
            let bytes = s.batch_bytes(i).map_err(|err| self.io_error(err))?;
            let batch =
                kcoord_record_batches::RecordBatch::parse(bytes.clone()).map_err(corrupt)?;
            let (fate, removed, horizon) =
                compaction::rewrite_batch(&batch, e, keys, map_end, pass)?;
            removed_records += removed;
            if let Some(h) = horizon {
                deadline = Some(deadline.map_or(h, |d| d.min(h)));
            }
            match fate {
                Rewritten::Same => kept.push((bytes, *e)),
                Rewritten::New(b) => {
                    changed = true;
                    let h = kcoord_record_batches::BatchHeader::parse(&b).map_err(corrupt)?;
                    kept.push((b, crate::scan::entry_of(&h, 0, 0, e.marker)));
                }
                Rewritten::Dropped => changed = true,
            }
        }
        Ok(CleanedSegment {
            kept: changed.then_some(kept),
            removed_records,
            deadline,
        })
    }

    /// Writes how far compaction got (`cleaner-offset`), for the next start.
    fn checkpoint_cleaner_offset(&self, map_end: i64) {
        if let Some(dir) = &self.dir {
            if let Err(e) = segment::write_small_file(&dir.join(CLEANER_FILE), &map_end.to_string())
            {
                warn!(log = %self.name, error = %e, "could not record how far compaction got");
            }
        }
    }

    /// Replaces sealed segment `index` by these batches (same base offset); returns its size.
    fn replace_segment(
        &mut self,
        index: usize,
        batches: Vec<(Bytes, BatchEntry)>,
    ) -> Result<u64, StorageError> {
        let old = &self.segments[index];
        let base = old.base_offset;
        let created_ms = old.created_ms;
        let mut next = match (&self.dir, &old.store) {
            (Some(dir), segment::Store::File(_)) => {
                let tmp = dir.join(segment::file_name(base, "cleaned"));
                Segment::create_file_at(&tmp, base, created_ms)
                    .map_err(|e| StorageError::io(&tmp, e))?
            }
            _ => Segment::in_memory(base, created_ms),
        };
        for (bytes, entry) in &batches {
            next.append(bytes, &[], *entry).map_err(|e| match e {
                AppendIoError::Undone(e) | AppendIoError::Damaged { write: e, .. } => {
                    self.io_error(e)
                }
            })?;
        }
        if let Some(old_path) = self.segments[index].path().map(Path::to_path_buf) {
            // The old segment's seal, if still to run, would write its index over the new one's.
            self.segments[index]
                .settle_seal()
                .map_err(|e| StorageError::io(&old_path, e))?;
            next.install_as(&old_path)
                .map_err(|e| StorageError::io(&old_path, e))?;
        }
        let size = next.size;
        self.segments[index] = next;
        Ok(size)
    }
}
