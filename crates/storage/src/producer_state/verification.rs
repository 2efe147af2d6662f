//! KIP-890 part 1, the verification guard (Kafka's `VerificationStateEntry` and
//! `UnifiedLog.maybeStartTransactionVerification`): a partition takes a producer's first
//! transactional batch only once the transaction coordinator has said that the producer's
//! ongoing transaction includes this partition. Without it, a batch delayed past its
//! transaction's end would start a transaction nobody ends, and hold the last stable offset
//! back forever.
//!
//! The handshake, under the partition's lock at each step:
//! 1. Produce asks [`crate::Log::maybe_start_transaction_verification`] for a transactional
//!    batch. `None`: the producer's transaction is already ongoing here at this epoch, nothing
//!    to verify. `Some(guard)`: a verification is pending (kept per producer, see
//!    [`crate::Log::verification_state`]).
//! 2. The caller asks the transaction coordinator (Kafka: AddPartitionsToTxn, verify only),
//!    without the lock.
//! 3. Verified, it appends with the guard ([`crate::Log::append_verified`]). The log takes the
//!    batch only if the guard is still the producer's pending one: a marker written meanwhile
//!    (the transaction ended) or the guard's expiry clears it, and the batch is refused with
//!    INVALID_TXN_STATE, so the producer retries and verifies again.
//!
//! A transactional batch is appended without a guard only while its producer's transaction is
//! ongoing here at the same epoch.

use std::sync::atomic::{AtomicU64, Ordering};

/// Identifies one pending verification; unique in the process (Kafka compares its guard
/// objects by identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerificationGuard(u64);

static NEXT_GUARD: AtomicU64 = AtomicU64::new(1);

impl VerificationGuard {
    pub(crate) fn new() -> VerificationGuard {
        VerificationGuard(NEXT_GUARD.fetch_add(1, Ordering::Relaxed))
    }
}

/// A producer's pending verification (Kafka's `VerificationStateEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerificationState {
    pub guard: VerificationGuard,
    /// The newest epoch a verification was asked for.
    pub producer_epoch: i16,
    /// The lowest first sequence asked at that epoch: a batch starting after it is out of
    /// order (an earlier batch of the transaction has not arrived).
    pub lowest_sequence: i32,
    /// When it was created, for its expiry (`producer.id.expiration.ms`, as Kafka's).
    pub created_ms: i64,
}

impl super::ProducerStates {
    /// The pending verification of a producer, created if there is none (Kafka's
    /// `maybeCreateVerificationStateEntry`): a newer epoch replaces the epoch and sequence, the
    /// same epoch keeps the lowest sequence.
    pub(crate) fn verification_for(
        &mut self,
        producer_id: i64,
        sequence: i32,
        epoch: i16,
        now_ms: i64,
    ) -> VerificationGuard {
        let v = self
            .verifications
            .entry(producer_id)
            .or_insert_with(|| VerificationState {
                guard: VerificationGuard::new(),
                producer_epoch: epoch,
                lowest_sequence: sequence,
                created_ms: now_ms,
            });
        if epoch == v.producer_epoch && sequence < v.lowest_sequence {
            v.lowest_sequence = sequence;
        }
        if epoch > v.producer_epoch {
            v.producer_epoch = epoch;
            v.lowest_sequence = sequence;
        }
        v.guard
    }

    /// The pending verification of a producer.
    pub fn verification(&self, producer_id: i64) -> Option<VerificationState> {
        self.verifications.get(&producer_id).copied()
    }
}
