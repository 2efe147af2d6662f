//! Idempotent producers: per partition, each producer id's epoch and the metadata of its last
//! five batches, as Kafka's `ProducerStateManager` / `ProducerAppendInfo` keep them. A retry of
//! one of those five batches is answered with its original offsets instead of being appended
//! twice; a gap in the sequence or an older epoch is refused.
//!
//! The state is rebuilt at startup from the log's batch entries, which carry the producer
//! fields ([`crate::entry::BatchEntry`]), and producers idle for `producer.id.expiration.ms`
//! are forgotten.

use std::collections::{HashMap, VecDeque};

/// Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`.
pub const BATCHES_TO_RETAIN: usize = 5;

/// Kafka's default `producer.id.expiration.ms` (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// Error codes (Kafka's `Errors`).
const INVALID_PRODUCER_EPOCH: i16 = 47;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

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

#[derive(Debug, Clone, Default)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMetadata>,
    last_timestamp: i64,
}

/// What Produce answers when a producer's batch does not fit its state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    /// INVALID_PRODUCER_EPOCH (47).
    #[error("{0}")]
    InvalidProducerEpoch(String),
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    #[error("{0}")]
    OutOfOrderSequence(String),
}

impl ProducerError {
    pub fn error_code(&self) -> i16 {
        match self {
            ProducerError::InvalidProducerEpoch(_) => INVALID_PRODUCER_EPOCH,
            ProducerError::OutOfOrderSequence(_) => OUT_OF_ORDER_SEQUENCE_NUMBER,
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
}

/// The state of every producer that wrote to one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerStates {
    producers: HashMap<i64, ProducerEntry>,
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

    /// Whether the batch may be appended (Kafka's `checkProducerEpoch` and `checkSequence`);
    /// `offset` is where it would go, for the message.
    pub fn check(
        &self,
        batch: &ProducerBatch,
        offset: i64,
        partition: &str,
    ) -> Result<(), ProducerError> {
        let Some(entry) = self.producers.get(&batch.producer_id) else {
            // No state (new producer, or its batches expired): any sequence is accepted.
            return Ok(());
        };
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
        let last_seq = entry.batches.back().map_or(-1, |b| b.last_seq);
        if !in_sequence(last_seq, batch.first_seq) {
            return Err(ProducerError::OutOfOrderSequence(format!(
                "Out of order sequence number for producer {} at offset {offset} in partition {partition}: {} (incoming seq. number), {last_seq} (current end sequence number)",
                batch.producer_id, batch.first_seq
            )));
        }
        Ok(())
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
    }

    /// Forgets producers whose last batch is at least `expiration_ms` older than `now_ms`.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, p| now_ms.saturating_sub(p.last_timestamp) < expiration_ms);
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
mod tests {
    use super::*;

    fn batch(epoch: i16, first: i32, last: i32) -> ProducerBatch {
        ProducerBatch {
            producer_id: 7,
            epoch,
            first_seq: first,
            last_seq: last,
        }
    }

    #[test]
    fn duplicates_of_the_last_five_batches_are_found() {
        let mut s = ProducerStates::default();
        for i in 0..7 {
            let b = batch(0, i * 10, i * 10 + 9);
            assert_eq!(s.check(&b, i64::from(i) * 10, "t-0"), Ok(()));
            s.update(
                &b,
                i64::from(i) * 10,
                i64::from(i) * 10 + 9,
                100 + i64::from(i),
            );
        }
        assert_eq!(
            s.duplicate_of(&batch(0, 0, 9)),
            None,
            "pushed out of the window"
        );
        assert_eq!(s.duplicate_of(&batch(0, 10, 19)), None);
        let d = s.duplicate_of(&batch(0, 20, 29)).unwrap();
        assert_eq!((d.first_offset, d.last_offset, d.timestamp), (20, 29, 102));
        assert_eq!(
            s.duplicate_of(&batch(1, 60, 69)),
            None,
            "another epoch is no duplicate"
        );
    }

    #[test]
    fn gaps_and_old_epochs_are_refused() {
        let mut s = ProducerStates::default();
        s.update(&batch(2, 0, 4), 0, 4, 1);
        assert_eq!(s.check(&batch(2, 5, 9), 5, "t-0"), Ok(()));
        let gap = s.check(&batch(2, 7, 9), 5, "t-0").unwrap_err();
        assert_eq!(gap.error_code(), 45);
        assert_eq!(
            gap.to_string(),
            "Out of order sequence number for producer 7 at offset 5 in partition t-0: 7 (incoming seq. number), 4 (current end sequence number)"
        );
        assert_eq!(
            s.check(&batch(1, 5, 9), 5, "t-0").unwrap_err().error_code(),
            47
        );
        assert_eq!(
            s.check(&batch(3, 3, 9), 5, "t-0").unwrap_err().error_code(),
            45,
            "a new epoch starts at 0"
        );
        assert_eq!(s.check(&batch(3, 0, 9), 5, "t-0"), Ok(()));
        assert_eq!(
            s.check(
                &ProducerBatch {
                    producer_id: 8,
                    ..batch(0, 42, 50)
                },
                5,
                "t-0"
            ),
            Ok(()),
            "unknown producers start anywhere"
        );
    }

    #[test]
    fn sequences_wrap_at_i32_max() {
        assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(last_sequence(5, 4), 9);
        let mut s = ProducerStates::default();
        s.update(&batch(0, i32::MAX - 4, i32::MAX), 0, 4, 1);
        assert_eq!(s.check(&batch(0, 0, 3), 5, "t-0"), Ok(()));
    }

    #[test]
    fn idle_producers_expire() {
        let mut s = ProducerStates::default();
        s.update(&batch(0, 0, 0), 0, 0, 1_000);
        s.update(
            &ProducerBatch {
                producer_id: 9,
                ..batch(0, 0, 0)
            },
            1,
            1,
            5_000,
        );
        assert_eq!(s.expire(10_000, 6_000), 1);
        assert_eq!(s.epoch_of(7), None);
        assert_eq!(s.epoch_of(9), Some(0));
    }
}
