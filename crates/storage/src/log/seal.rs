//! Rolling and flushing: a roll seals the active segment without waiting for the disk, and the
//! fsync and index write it leaves are run by the daemon off the write path, or by a flush
//! ([`crate::seal`]).

use std::sync::Arc;

use tracing::error;

use super::Log;
use crate::error::StorageError;
use crate::seal::PendingSeal;
use crate::segment::Segment;
use crate::writeback::{WritebackRange, WRITEBACK_CHUNK};

impl Log {
    /// Seals the active segment and starts a new one at the log end. The sealed segment's
    /// fsync and index are left to [`Log::take_seals`] (or the next flush).
    pub fn roll(&mut self, now_ms: i64) -> Result<(), StorageError> {
        let base = self.log_end_offset();
        let next = match &self.dir {
            None => Segment::in_memory(base, now_ms),
            Some(dir) => {
                Segment::create_file(dir, base, now_ms).map_err(|e| StorageError::io(dir, e))?
            }
        };
        if let Some(pending) = self.active_mut().begin_seal() {
            self.pending_seals.push(Arc::clone(&pending));
            self.seals_to_run.push(pending);
        }
        self.segments.push(next);
        // The seal syncs what was unflushed in the sealed segment.
        self.unflushed_messages = 0;
        self.oldest_unflushed_ms = None;
        Ok(())
    }

    /// The active segment's appended bytes not yet handed out for writeback, once a full
    /// [`WRITEBACK_CHUNK`] is there ([`crate::writeback`]).
    pub fn take_writeback(&mut self) -> Option<WritebackRange> {
        self.active_mut().take_writeback(WRITEBACK_CHUNK)
    }

    /// The seals rolls left since the last call, for the caller to run off the write path
    /// ([`PendingSeal::run`]).
    pub fn take_seals(&mut self) -> Vec<Arc<PendingSeal>> {
        std::mem::take(&mut self.seals_to_run)
    }

    /// Gives up the seals not yet run, before the log's directory is deleted (a seal would
    /// write an index into it); waits for one running.
    pub fn abandon_seals(&mut self) {
        for pending in self.pending_seals.drain(..) {
            pending.abandon();
        }
        self.seals_to_run.clear();
    }

    /// fsyncs everything appended: the seals rolls left pending, then the active segment.
    pub fn flush(&mut self) -> std::io::Result<()> {
        for pending in std::mem::take(&mut self.pending_seals) {
            if let Err(reason) = pending.run() {
                self.failed = Some(reason.clone());
                return Err(std::io::Error::other(reason));
            }
        }
        if self.unflushed_messages > 0 {
            self.active().flush()?;
            self.unflushed_messages = 0;
            self.oldest_unflushed_ms = None;
        }
        Ok(())
    }

    /// Flushes if the oldest unflushed append is `flush.ms` old.
    pub fn flush_if_due(&mut self, now_ms: i64) -> std::io::Result<bool> {
        match self.oldest_unflushed_ms {
            Some(since) if now_ms.saturating_sub(since) >= self.config.flush_ms => {
                self.flush()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Forgets the seals that have run; one that failed leaves the log failed, as a failed
    /// write does: what it sealed may not be on the disk.
    pub(super) fn note_failed_seals(&mut self) {
        if self.pending_seals.is_empty() {
            return;
        }
        let failure = self.pending_seals.iter().find_map(|p| p.failure());
        self.pending_seals.retain(|p| !p.is_settled());
        if let (None, Some(reason)) = (&self.failed, failure) {
            error!(log = %self.name, reason = %reason, "sealing a rolled segment failed; the log takes no more appends until a restart");
            self.failed = Some(reason);
        }
    }
}
