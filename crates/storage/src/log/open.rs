//! Opening a log directory: its segment files, recovered, and the state kept beside them.

use std::collections::HashMap;
use std::path::Path;

use kcoord_record_batches::{EndTxnMarker, RecordBatch};
use tracing::{info, warn};

use super::txn::replay_entry;
use super::{Log, CLEANER_FILE, LOG_START_FILE};
use crate::error::StorageError;
use crate::log_config::LogConfig;
use crate::producer_state::ProducerStates;
use crate::segment::{self, Segment};
use crate::txn::AbortedIndex;

impl Log {
    /// Opens (or creates) the log in `dir`: every segment file, recovering the last ones, and
    /// the producer state rebuilt from the batch entries.
    pub fn open(
        name: impl Into<String>,
        dir: &Path,
        config: LogConfig,
        now_ms: i64,
        producer_expiration_ms: i64,
    ) -> Result<Log, StorageError> {
        let name = name.into();
        let io = |e: std::io::Error| StorageError::io(dir, e);
        std::fs::create_dir_all(dir).map_err(io)?;
        let bases = segment_bases(dir)?;
        let mut segments = recover_segments(&name, dir, &bases, now_ms)?;
        let stored_start = read_offset_file(&dir.join(LOG_START_FILE)).map_err(io)?;
        let end = segments.last().map_or(0, Segment::next_offset);
        let needs_active = segments
            .last()
            .is_none_or(|s| matches!(&s.store, segment::Store::File(f) if f.sealed));
        if needs_active {
            segments.push(Segment::create_file(dir, end, now_ms).map_err(io)?);
        }
        let first_base = segments.first().map_or(0, |s| s.base_offset);
        let log_start_offset = stored_start.unwrap_or(first_base).clamp(first_base, end);
        let first_dirty = read_offset_file(&dir.join(CLEANER_FILE))
            .map_err(io)?
            .unwrap_or(0);
        let mut log = Log {
            name,
            dir: Some(dir.to_path_buf()),
            config,
            segments,
            log_start_offset,
            producers: ProducerStates::default(),
            unflushed_messages: 0,
            oldest_unflushed_ms: None,
            failed: None,
            first_dirty,
            // Unknown after a restart: the first pass finds any tombstone deadline again.
            next_tombstone_deadline: Some(i64::MIN),
            aborted: AbortedIndex::default(),
            pending_seals: Vec::new(),
            seals_to_run: Vec::new(),
        };
        log.rebuild_producer_state(now_ms, producer_expiration_ms);
        info!(log = %log.name, segments = log.segments.len(), log_start_offset, log_end_offset = end, producers = log.producers.len(), last_stable_offset = log.last_stable_offset(), aborted_transactions = log.aborted.len(), "loaded log");
        Ok(log)
    }

    /// The producer state, ongoing transactions and aborted transaction index, replayed from
    /// every batch entry; then the coordinator epoch of each producer's last marker, read
    /// from that marker (the entry does not carry it).
    fn rebuild_producer_state(&mut self, now_ms: i64, expiration_ms: i64) {
        let mut producers = ProducerStates::default();
        let mut aborted = AbortedIndex::default();
        let mut last_markers: HashMap<i64, (usize, usize)> = HashMap::new();
        for (si, s) in self.segments.iter().enumerate() {
            for (i, e) in s.entries.iter().enumerate() {
                replay_entry(&mut producers, &mut aborted, e);
                if e.marker.is_some() && e.producer_id >= 0 {
                    last_markers.insert(e.producer_id, (si, i));
                }
            }
        }
        for (pid, (si, i)) in last_markers {
            let epoch = self.segments[si]
                .batch_bytes(i)
                .map_err(|e| e.to_string())
                .and_then(|b| RecordBatch::parse(b).map_err(|e| e.to_string()))
                .and_then(|b| EndTxnMarker::of_batch(&b).map_err(|e| e.to_string()));
            match epoch {
                Ok(Some(m)) => producers.set_coordinator_epoch(pid, m.coordinator_epoch),
                Ok(None) => {}
                Err(error) => {
                    // Unknown, it stays -1: any coordinator epoch is then accepted.
                    warn!(log = %self.name, producer_id = pid, %error, "could not read a transaction marker");
                }
            }
        }
        producers.expire(now_ms, expiration_ms);
        self.producers = producers;
        self.aborted = aborted;
    }
}

/// The base offsets of the segment files in `dir`, in order. What an interrupted write left
/// behind (`.tmp` and `.cleaned` files) is removed.
fn segment_bases(dir: &Path) -> Result<Vec<i64>, StorageError> {
    let io = |e: std::io::Error| StorageError::io(dir, e);
    let mut bases = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if let Some(base) = file
            .strip_suffix(".log")
            .and_then(|b| b.parse::<i64>().ok())
        {
            bases.push(base);
        } else if file.ends_with(".tmp") || file.ends_with(".cleaned") {
            segment::remove_if_exists(&path).map_err(io)?;
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// The segments at `bases`, each recovered; a damaged segment is the last one kept, and the
/// files of every later segment are deleted.
fn recover_segments(
    name: &str,
    dir: &Path,
    bases: &[i64],
    now_ms: i64,
) -> Result<Vec<Segment>, StorageError> {
    let io = |e: std::io::Error| StorageError::io(dir, e);
    let mut segments: Vec<Segment> = Vec::with_capacity(bases.len() + 1);
    for (i, base) in bases.iter().enumerate() {
        let path = dir.join(segment::file_name(*base, "log"));
        let (seg, dropped) =
            Segment::open_file(&path, *base, now_ms).map_err(|e| StorageError::io(&path, e))?;
        if dropped > 0 {
            warn!(log = %name, segment = %path.display(), dropped_bytes = dropped, "cut a torn or corrupt tail at recovery");
        }
        let after_gap = segments
            .last()
            .is_some_and(|prev| prev.next_offset() > seg.base_offset);
        if after_gap {
            warn!(log = %name, segment = %path.display(), "segment overlaps the one before it; deleting it and every later one");
        }
        if after_gap || (dropped > 0 && i + 1 < bases.len()) {
            // What follows a damaged segment was written after data that is gone.
            let keep = if after_gap { i } else { i + 1 };
            if !after_gap {
                segments.push(seg);
            }
            for later in &bases[keep..] {
                let p = dir.join(segment::file_name(*later, "log"));
                segment::remove_if_exists(&p.with_extension("index")).map_err(io)?;
                segment::remove_if_exists(&p).map_err(io)?;
            }
            break;
        }
        segments.push(seg);
    }
    Ok(segments)
}

/// An offset checkpoint file: `None` when it is missing or does not hold a number.
fn read_offset_file(path: &Path) -> std::io::Result<Option<i64>> {
    Ok(segment::read_small_file(path)?.and_then(|s| s.trim().parse::<i64>().ok()))
}
