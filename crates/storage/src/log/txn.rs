//! Transactions in one partition's log: markers, the last stable offset, read_committed reads,
//! the aborted transaction index and the verification guard (Kafka's `UnifiedLog` parts of
//! them; docs/kafka-data-plane-facts.md, "Transactions").

use bytes::Bytes;
use kcoord_record_batches::{end_txn_marker_batch, EndTxnMarker};
use tracing::debug;

use super::{Appended, IncomingBatch, Log, ReadResult};
use crate::entry::{BatchEntry, MarkerKind};
use crate::error::{AppendError, ReadError};
use crate::log_config::TimestampType;
use crate::producer_state::{
    last_sequence, CompletedTxn, ProducerBatch, ProducerError, ProducerStates, ProducerSummary,
    VerificationGuard, VerificationState,
};
use crate::txn::{AbortedIndex, AbortedTxn};

/// A transaction marker to write (Kafka's WriteTxnMarkers entry for one partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    /// COMMIT, else ABORT.
    pub commit: bool,
    /// The transaction version the coordinator writes with (KIP-890): from 2 on, the
    /// coordinator bumps the producer epoch for each marker, so the marker's epoch must be
    /// newer than the producer's; before (0, 1), at least as new.
    pub transaction_version: i16,
}

impl Log {
    /// The last stable offset: the first offset of the earliest ongoing transaction (never
    /// below the log start), else the high watermark (Kafka's `lastStableOffset`).
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.high_watermark();
        match self.producers.first_unstable_offset() {
            Some(first) => first.max(self.log_start_offset).min(hw),
            None => hw,
        }
    }

    /// The aborted transactions this log holds.
    pub fn aborted_transactions(&self) -> &AbortedIndex {
        &self.aborted
    }

    /// Every producer with state here, for DescribeProducers.
    pub fn producer_summaries(&self) -> Vec<ProducerSummary> {
        self.producers.summaries()
    }

    /// Writes a COMMIT or ABORT marker for `marker.producer_id` at the log end (Kafka's
    /// `appendAsLeader` with origin COORDINATOR): refused when the producer epoch is older than
    /// the producer's (INVALID_PRODUCER_EPOCH) or the coordinator epoch older than the last
    /// marker's (TRANSACTION_COORDINATOR_FENCED). The producer's ongoing transaction, if any,
    /// ends; an aborted one enters the aborted transaction index; the last stable offset
    /// moves past it. A marker for a producer without a transaction here is written all the
    /// same, as Kafka writes it. Returns the marker's offset.
    pub fn append_marker(
        &mut self,
        marker: &TxnMarker,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<Appended, AppendError> {
        self.note_failed_seals();
        if let Some(reason) = &self.failed {
            return Err(AppendError::Storage(reason.clone()));
        }
        self.producers
            .check_marker(marker, self.log_end_offset(), &self.name)?;
        let end_marker = EndTxnMarker {
            commit: marker.commit,
            coordinator_epoch: marker.coordinator_epoch,
        };
        let bytes = end_txn_marker_batch(
            marker.producer_id,
            marker.producer_epoch,
            end_marker,
            now_ms,
        )
        .map_err(|e| AppendError::Storage(e.to_string()))?;
        let batch = marker_batch(bytes, marker, now_ms);
        let kind = if marker.commit {
            MarkerKind::Commit
        } else {
            MarkerKind::Abort
        };
        let (offset, _) = self.write_batch(&batch, Some(kind), leader_epoch, now_ms)?;
        let completed = self.producers.apply_marker(
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.commit,
            offset,
            now_ms,
        );
        if let Some(txn) = completed {
            record_completed(&mut self.aborted, &self.producers, txn);
        }
        debug!(log = %self.name, producer_id = marker.producer_id, commit = marker.commit, offset, last_stable_offset = self.last_stable_offset(), "wrote a transaction marker");
        Ok(Appended {
            base_offset: offset,
            last_offset: offset,
            log_append_time: -1,
            log_start_offset: self.log_start_offset,
            duplicate: false,
        })
    }

    /// A read_committed read (Kafka's `FetchIsolation.TXN_COMMITTED`): [`Log::read`] of the
    /// batches below the last stable offset, with the aborted transactions overlapping what
    /// was read. At or past the last stable offset (but within the log) it reads nothing.
    pub fn read_committed(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, ReadError> {
        let lso = self.last_stable_offset();
        let mut result = self.read_below(offset, max_bytes, min_one_batch, lso)?;
        // Kafka bounds the search by the offset after the last batch read (the next batch's
        // position in the segment); nothing read, nothing aborted overlaps.
        let upper_bound = self.offset_after(offset, result.bytes);
        result.aborted_transactions = Some(if upper_bound > offset {
            self.aborted.collect(offset, upper_bound)
        } else {
            Vec::new()
        });
        Ok(result)
    }

    /// The offset after the batches a read from `offset` of `bytes` bytes returned.
    fn offset_after(&self, offset: i64, mut bytes: usize) -> i64 {
        let mut next = offset;
        let mut seg = self.segment_index_for(offset);
        while bytes > 0 && seg < self.segments.len() {
            let s = &self.segments[seg];
            let from = s.entries.partition_point(|e| e.last_offset < next);
            for e in &s.entries[from..] {
                if bytes == 0 {
                    break;
                }
                bytes = bytes.saturating_sub(e.size as usize);
                next = e.next_offset();
            }
            seg += 1;
        }
        next
    }

    /// Whether the producer's transaction is ongoing here at this epoch (Kafka's
    /// `hasOngoingTransaction`).
    pub fn has_ongoing_transaction(&self, producer_id: i64, producer_epoch: i16) -> bool {
        self.producers
            .has_ongoing_transaction(producer_id, producer_epoch)
    }

    /// Step 1 of the verification handshake ([`crate::producer_state::verification`], Kafka's
    /// `maybeStartTransactionVerification`) for a transactional batch of `producer_id` at
    /// `producer_epoch` starting at `sequence`: `None` when its transaction is already ongoing
    /// here (no verification needed), else the pending verification's guard. An epoch older
    /// than the producer's is refused at once (INVALID_PRODUCER_EPOCH).
    pub fn maybe_start_transaction_verification(
        &mut self,
        producer_id: i64,
        sequence: i32,
        producer_epoch: i16,
        now_ms: i64,
    ) -> Result<Option<VerificationGuard>, ProducerError> {
        if let Some(current) = self.producers.epoch_of(producer_id) {
            if producer_epoch < current {
                return Err(ProducerError::InvalidProducerEpoch(format!(
                    "Epoch of producer {producer_id} is {producer_epoch}, which is smaller than the last seen epoch {current}"
                )));
            }
        }
        if self.has_ongoing_transaction(producer_id, producer_epoch) {
            return Ok(None);
        }
        Ok(Some(self.producers.verification_for(
            producer_id,
            sequence,
            producer_epoch,
            now_ms,
        )))
    }

    /// A producer's pending verification, if any.
    pub fn verification_state(&self, producer_id: i64) -> Option<VerificationState> {
        self.producers.verification(producer_id)
    }

    /// A transactional batch that would start its producer's transaction here must carry the
    /// producer's pending verification guard (Kafka's `batchMissingRequiredVerification`).
    pub(super) fn check_verification(
        &self,
        p: &ProducerBatch,
        guard: Option<VerificationGuard>,
    ) -> Result<(), ProducerError> {
        if !p.is_transactional || self.has_ongoing_transaction(p.producer_id, p.epoch) {
            return Ok(());
        }
        if let Some(current) = self.producers.epoch_of(p.producer_id) {
            if p.epoch < current {
                return Err(ProducerError::InvalidProducerEpoch(format!(
                    "Epoch of producer {} is {}, which is smaller than the last seen epoch {current}",
                    p.producer_id, p.epoch
                )));
            }
        }
        let pending = self.producers.verification(p.producer_id).map(|v| v.guard);
        if guard.is_none() || pending != guard {
            return Err(ProducerError::InvalidTxnState(
                "Record was not part of an ongoing transaction".to_string(),
            ));
        }
        Ok(())
    }
}

/// The marker batch as the log takes it.
fn marker_batch(bytes: Bytes, marker: &TxnMarker, now_ms: i64) -> IncomingBatch {
    IncomingBatch {
        record_count: 1,
        last_offset_delta: 0,
        max_timestamp: now_ms,
        timestamp_type: TimestampType::CreateTime,
        rewrite_timestamps: false,
        producer_id: marker.producer_id,
        producer_epoch: marker.producer_epoch,
        base_sequence: -1,
        is_control: true,
        is_transactional: true,
        log_append_time: None,
        bytes,
    }
}

/// Enters an aborted transaction in the index, with the last stable offset after it (Kafka's
/// `ProducerStateManager.lastStableOffset(completedTxn)`: the earliest other ongoing
/// transaction, else the offset after the marker). `producers` has completed it already.
fn record_completed(aborted: &mut AbortedIndex, producers: &ProducerStates, txn: CompletedTxn) {
    if txn.aborted {
        aborted.push(AbortedTxn {
            producer_id: txn.producer_id,
            first_offset: txn.first_offset,
            last_offset: txn.last_offset,
            last_stable_offset: producers
                .first_unstable_offset()
                .unwrap_or(txn.last_offset + 1),
        });
    }
}

/// Replays one stored batch into the producer state and the aborted index, as its append did
/// (startup). A marker's coordinator epoch is not in the entry: the caller sets it afterwards
/// for each producer's last marker.
pub(super) fn replay_entry(
    producers: &mut ProducerStates,
    aborted: &mut AbortedIndex,
    e: &BatchEntry,
) {
    if e.producer_id < 0 {
        return;
    }
    if e.is_control {
        if let Some(kind) = e.marker {
            let commit = kind == MarkerKind::Commit;
            let completed = producers.apply_marker(
                e.producer_id,
                e.producer_epoch,
                -1,
                commit,
                e.base_offset,
                e.max_timestamp,
            );
            if let Some(txn) = completed {
                record_completed(aborted, producers, txn);
            }
        }
        return;
    }
    let delta = i32::try_from(e.last_offset - e.base_offset).unwrap_or(0);
    let batch = ProducerBatch {
        producer_id: e.producer_id,
        epoch: e.producer_epoch,
        first_seq: e.base_sequence,
        last_seq: last_sequence(e.base_sequence, delta),
        is_transactional: e.is_transactional,
    };
    producers.update(&batch, e.base_offset, e.last_offset, e.max_timestamp);
}
