//! Idempotent and transactional producers: per partition, each producer id's epoch, the
//! metadata of its last five batches, its coordinator epoch and its ongoing transaction, as
//! Kafka's `ProducerStateManager` / `ProducerAppendInfo` keep them. A retry of one of those
//! five batches is answered with its original offsets instead of being appended twice; a gap
//! in the sequence or an older epoch is refused.
//!
//! A transaction starts at a producer's first transactional batch (its first offset is kept
//! until a marker ends it) and ends with a COMMIT or ABORT marker; the earliest first offset of
//! the ongoing transactions bounds the last stable offset. Before a partition takes the first
//! transactional batch of a producer, the coordinator must have verified that the producer's
//! transaction includes it (KIP-890 part 1, [`verification`]).
//!
//! The state is rebuilt at startup from the log's batch entries, which carry the producer
//! fields ([`crate::entry::BatchEntry`]), and producers idle for `producer.id.expiration.ms`
//! are forgotten, unless they have a transaction ongoing.

use std::collections::{BTreeMap, HashMap, VecDeque};

pub mod verification;

pub use verification::{VerificationGuard, VerificationState};

/// Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`.
pub const BATCHES_TO_RETAIN: usize = 5;

/// Kafka's default `producer.id.expiration.ms` (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// Error codes (Kafka's `Errors`).
const INVALID_PRODUCER_EPOCH: i16 = 47;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_TXN_STATE: i16 = 48;
const TRANSACTION_COORDINATOR_FENCED: i16 = 52;

/// One retained batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// The batch's max timestamp (after LogAppendTime was applied).
    pub timestamp: i64,
}

#[derive(Debug, Clone)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMetadata>,
    last_timestamp: i64,
    /// The epoch of the coordinator that wrote the producer's last marker (-1: none yet).
    coordinator_epoch: i32,
    /// The first offset of the transaction ongoing here.
    txn_first_offset: Option<i64>,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: 0,
            batches: VecDeque::new(),
            last_timestamp: -1,
            coordinator_epoch: -1,
            txn_first_offset: None,
        }
    }
}

/// What Produce (or a marker write) is answered when a batch does not fit its producer's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    /// INVALID_PRODUCER_EPOCH (47).
    #[error("{0}")]
    InvalidProducerEpoch(String),
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    #[error("{0}")]
    OutOfOrderSequence(String),
    /// INVALID_TXN_STATE (48): a batch that does not fit the producer's transaction.
    #[error("{0}")]
    InvalidTxnState(String),
    /// TRANSACTION_COORDINATOR_FENCED (52): a marker from an older coordinator.
    #[error("{0}")]
    TransactionCoordinatorFenced(String),
}

impl ProducerError {
    pub fn error_code(&self) -> i16 {
        match self {
            ProducerError::InvalidProducerEpoch(_) => INVALID_PRODUCER_EPOCH,
            ProducerError::OutOfOrderSequence(_) => OUT_OF_ORDER_SEQUENCE_NUMBER,
            ProducerError::InvalidTxnState(_) => INVALID_TXN_STATE,
            ProducerError::TransactionCoordinatorFenced(_) => TRANSACTION_COORDINATOR_FENCED,
        }
    }
}

/// The producer fields of a batch about to be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub epoch: i16,
    pub first_seq: i32,
    pub last_seq: i32,
    pub is_transactional: bool,
}

/// A transaction a marker ended (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub aborted: bool,
}

/// What DescribeProducers reports of one producer (Kafka's `ProducerState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSummary {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The last sequence of its last batch, -1 when none is retained.
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// The first offset of its ongoing transaction, -1 when none.
    pub current_txn_start_offset: i64,
}

/// The state of every producer that wrote to one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerStates {
    producers: HashMap<i64, ProducerEntry>,
    /// The ongoing transactions by first offset (Kafka's `ongoingTxns`): producer ids.
    ongoing: BTreeMap<i64, i64>,
    verifications: HashMap<i64, VerificationState>,
}

/// Kafka's `ProducerStateManager.inSequence`, with the wrap from `i32::MAX` to 0.
fn in_sequence(last: i32, next: i32) -> bool {
    next == last.wrapping_add(1) && last != i32::MAX || next == 0 && last == i32::MAX
}

impl ProducerStates {
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// A retry of one of the producer's retained batches: the batch as first appended.
    pub fn duplicate_of(&self, batch: &ProducerBatch) -> Option<BatchMetadata> {
        let entry = self.producers.get(&batch.producer_id)?;
        if entry.epoch != batch.epoch {
            return None;
        }
        entry
            .batches
            .iter()
            .find(|b| b.first_seq == batch.first_seq && b.last_seq == batch.last_seq)
            .copied()
    }

    /// Whether the batch may be appended (Kafka's `checkProducerEpoch`, `checkSequence` and
    /// the transaction checks of `appendDataBatch`); `offset` is where it would go, for the
    /// message.
    pub fn check(
        &self,
        batch: &ProducerBatch,
        offset: i64,
        partition: &str,
    ) -> Result<(), ProducerError> {
        let pid = batch.producer_id;
        if let Some(v) = self.verifications.get(&pid) {
            if batch.first_seq > v.lowest_sequence {
                return Err(ProducerError::OutOfOrderSequence(format!(
                    "Out of order sequence number for producer {pid} at offset {offset} in partition {partition}: {} (incoming seq. number), {} (earliest seen sequence)",
                    batch.first_seq, v.lowest_sequence
                )));
            }
        }
        let Some(entry) = self.producers.get(&pid) else {
            // No state (new producer, or its batches expired): any sequence is accepted.
            return Ok(());
        };
        check_sequence(entry, batch, offset, partition)?;
        match entry.txn_first_offset {
            Some(_) if !batch.is_transactional => Err(ProducerError::InvalidTxnState(format!(
                "Expected transactional write from producer {pid} at offset {offset} in partition {partition}"
            ))),
            // Kafka would fold it into the older epoch's transaction; the coordinator ends
            // that transaction before it bumps the epoch, so such a batch is a zombie's.
            Some(first) if batch.epoch != entry.epoch => Err(ProducerError::InvalidTxnState(format!(
                "Transactional write from producer {pid} with epoch {} at offset {offset} in partition {partition} while its transaction of epoch {} from offset {first} is ongoing",
                batch.epoch, entry.epoch
            ))),
            _ => Ok(()),
        }
    }

    /// Records an appended batch.
    pub fn update(
        &mut self,
        batch: &ProducerBatch,
        first_offset: i64,
        last_offset: i64,
        timestamp: i64,
    ) {
        let entry = self.producers.entry(batch.producer_id).or_default();
        if entry.epoch != batch.epoch {
            entry.epoch = batch.epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == BATCHES_TO_RETAIN {
            entry.batches.pop_front();
        }
        entry.batches.push_back(BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset,
            last_offset,
            timestamp,
        });
        entry.last_timestamp = entry.last_timestamp.max(timestamp);
        if batch.is_transactional {
            if entry.txn_first_offset.is_none() {
                entry.txn_first_offset = Some(first_offset);
                self.ongoing.insert(first_offset, batch.producer_id);
            }
            // The transaction is ongoing here now: the verification has served.
            self.verifications.remove(&batch.producer_id);
        }
    }

    /// Whether a marker may be written (Kafka's `appendEndTxnMarker` checks for a leader):
    /// the producer epoch must not be older than the producer's (with `transaction_version`
    /// 2, it must be newer, unless it repeats a marker already written), and the coordinator
    /// epoch not older than the last marker's.
    pub fn check_marker(
        &self,
        marker: &crate::log::TxnMarker,
        offset: i64,
        partition: &str,
    ) -> Result<(), ProducerError> {
        let Some(entry) = self.producers.get(&marker.producer_id) else {
            return Ok(());
        };
        let (pid, epoch, current) = (marker.producer_id, marker.producer_epoch, entry.epoch);
        let tv2 = marker.transaction_version >= 2;
        let stale = if tv2 {
            epoch <= current
        } else {
            epoch < current
        };
        // KAFKA-19999: with TV2, the same epoch again after the transaction ended is a retry.
        let retry = tv2 && epoch == current && entry.txn_first_offset.is_none();
        if stale && !retry {
            return Err(ProducerError::InvalidProducerEpoch(format!(
                "Epoch of producer {pid} at offset {offset} in {partition} is {epoch}, which is {} the last seen epoch {current} (TV{})",
                if tv2 { "<=" } else { "<" },
                marker.transaction_version
            )));
        }
        if entry.coordinator_epoch > marker.coordinator_epoch {
            return Err(ProducerError::TransactionCoordinatorFenced(format!(
                "Invalid coordinator epoch for producerId {pid} at offset {offset} in partition {partition}: {} (zombie), {} (current)",
                marker.coordinator_epoch, entry.coordinator_epoch
            )));
        }
        Ok(())
    }

    /// Records a marker written at `offset`: the producer's transaction, if one was ongoing,
    /// is over. Returns it (Kafka emits a `CompletedTxn` only for a transaction with data).
    pub fn apply_marker(
        &mut self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        offset: i64,
        timestamp: i64,
    ) -> Option<CompletedTxn> {
        let entry = self.producers.entry(producer_id).or_default();
        let completed = entry.txn_first_offset.take().map(|first_offset| {
            self.ongoing.remove(&first_offset);
            CompletedTxn {
                producer_id,
                first_offset,
                last_offset: offset,
                aborted: !commit,
            }
        });
        if entry.epoch != epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_timestamp = timestamp;
        self.verifications.remove(&producer_id);
        completed
    }

    /// Sets the coordinator epoch of a producer's last marker (rebuilding the state).
    pub(crate) fn set_coordinator_epoch(&mut self, producer_id: i64, coordinator_epoch: i32) {
        if let Some(entry) = self.producers.get_mut(&producer_id) {
            entry.coordinator_epoch = coordinator_epoch;
        }
    }

    /// The first offset of the earliest ongoing transaction (Kafka's `firstUnstableOffset`).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// The ongoing transactions: (first offset, producer id), by first offset.
    pub fn ongoing_transactions(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.ongoing.iter().map(|(first, pid)| (*first, *pid))
    }

    /// Whether the producer has a transaction ongoing here at this epoch (Kafka's
    /// `UnifiedLog.hasOngoingTransaction`).
    pub fn has_ongoing_transaction(&self, producer_id: i64, epoch: i16) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|p| p.txn_first_offset.is_some() && p.epoch == epoch)
    }

    /// Forgets producers whose last batch is at least `expiration_ms` older than `now_ms`,
    /// unless their transaction is ongoing, and verifications as old (Kafka's
    /// `removeExpiredProducers`).
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, p| {
            p.txn_first_offset.is_some() || now_ms.saturating_sub(p.last_timestamp) < expiration_ms
        });
        self.verifications
            .retain(|_, v| now_ms.saturating_sub(v.created_ms) < expiration_ms);
        before - self.producers.len()
    }

    /// The last offset of a producer's last batch, if it has state here.
    pub fn last_offset_of(&self, producer_id: i64) -> Option<i64> {
        self.producers
            .get(&producer_id)
            .and_then(|p| p.batches.back())
            .map(|b| b.last_offset)
    }

    /// The current epoch of a producer, if it has state here.
    pub fn epoch_of(&self, producer_id: i64) -> Option<i16> {
        self.producers.get(&producer_id).map(|p| p.epoch)
    }

    /// Every producer with state here, by producer id, as DescribeProducers reports them.
    pub fn summaries(&self) -> Vec<ProducerSummary> {
        let mut out: Vec<ProducerSummary> = self
            .producers
            .iter()
            .map(|(pid, p)| ProducerSummary {
                producer_id: *pid,
                producer_epoch: p.epoch,
                last_sequence: p.batches.back().map_or(-1, |b| b.last_seq),
                last_timestamp: p.last_timestamp,
                coordinator_epoch: p.coordinator_epoch,
                current_txn_start_offset: p.txn_first_offset.unwrap_or(-1),
            })
            .collect();
        out.sort_by_key(|s| s.producer_id);
        out
    }
}

/// Kafka's `checkProducerEpoch` and `checkSequence` for a producer with state.
fn check_sequence(
    entry: &ProducerEntry,
    batch: &ProducerBatch,
    offset: i64,
    partition: &str,
) -> Result<(), ProducerError> {
    if batch.epoch < entry.epoch {
        return Err(ProducerError::InvalidProducerEpoch(format!(
            "Epoch of producer {} at offset {offset} in {partition} is {}, which is smaller than the last seen epoch {}",
            batch.producer_id, batch.epoch, entry.epoch
        )));
    }
    if batch.epoch != entry.epoch {
        if batch.first_seq != 0 {
            return Err(ProducerError::OutOfOrderSequence(format!(
                "Invalid sequence number for new epoch of producer {} at offset {offset} in partition {partition}: {} (request epoch), {} (seq. number), {} (current producer epoch)",
                batch.producer_id, batch.epoch, batch.first_seq, entry.epoch
            )));
        }
        return Ok(());
    }
    // No batch retained at this epoch (a marker bumped it): the producer starts again at 0.
    let last_seq = entry.batches.back().map_or(-1, |b| b.last_seq);
    if !in_sequence(last_seq, batch.first_seq) {
        return Err(ProducerError::OutOfOrderSequence(format!(
            "Out of order sequence number for producer {} at offset {offset} in partition {partition}: {} (incoming seq. number), {last_seq} (current end sequence number)",
            batch.producer_id, batch.first_seq
        )));
    }
    Ok(())
}

/// The last sequence of a batch of `records` records starting at `first_seq`, wrapping as
/// Kafka's `DefaultRecordBatch.incrementSequence` does.
pub fn last_sequence(first_seq: i32, last_offset_delta: i32) -> i32 {
    let next = i64::from(first_seq) + i64::from(last_offset_delta);
    if next > i64::from(i32::MAX) {
        (next - i64::from(i32::MAX) - 1) as i32
    } else {
        next as i32
    }
}

#[cfg(test)]
mod tests;
