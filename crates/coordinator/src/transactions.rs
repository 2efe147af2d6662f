//! The transaction coordinator (Kafka's `TransactionCoordinator` and `TransactionStateManager`),
//! sans-IO, on the same shards as the groups: a transactional id lives on the shard its hash
//! picks, as Kafka places it on a `__transaction_state` partition. Its state is the shard's
//! `TransactionLog` records; what Kafka keeps only in memory (each id's last epoch, for
//! KIP-360 retries) is [`TxnSoftState`]. Markers are written by the runtime's owner, which
//! reads the prepared transactions ([`CoordinatorShard::prepared_transactions`]) and then
//! completes them ([`CoordinatorShard::complete_transaction`]).
//!
//! Both transaction versions (KIP-890 part 2): at version 1 the epoch changes only in
//! InitProducerId and when the coordinator fences a producer; at version 2 every EndTxn bumps
//! it. The client's request version says which (`end_txn.rs`, `add_partitions.rs`); the
//! coordinator's own aborts follow [`TransactionConfig::transaction_version`].
use std::collections::BTreeMap;

use kcoord_metadata::{Record, TransactionMetadata, TransactionState};
use kcoord_wire::records::TransactionLogKey;
use kcoord_wire::ErrorCode;

use crate::effects::Effect;
use crate::shard::CoordinatorShard;
use crate::Outcome;

mod add_partitions;
mod end_txn;
mod expiry;
mod init_producer_id;
mod listing;
#[cfg(test)]
mod tests;

pub use end_txn::{EndTxn, EndTxnResult};
pub use init_producer_id::{InitProducerId, InitProducerIdResult};
pub use listing::{unknown_state_filters, TransactionFilter};

/// No producer id or epoch (Kafka's `RecordBatch.NO_PRODUCER_ID` / `NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Transaction version 2 (KIP-890 part 2): an epoch bump at every EndTxn, partitions added by
/// Produce v12+ and offsets' groups by TxnOffsetCommit v5+.
pub const TV_2: i16 = 2;

/// Whether `version` bumps the epoch at every transaction (Kafka's `supportsEpochBump`).
pub fn supports_epoch_bump(version: i16) -> bool {
    version >= TV_2
}

/// The topic whose partitions stand for the groups' shards in a transaction (AddOffsetsToTxn).
pub const CONSUMER_OFFSETS: &str = "__consumer_offsets";

/// The transaction coordinator's settings (Kafka's `transaction.*` broker configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionConfig {
    /// `transaction.max.timeout.ms`: the longest `transaction.timeout.ms` a producer may ask.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an idle transactional id is forgotten after this.
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_timed_out_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub remove_expired_interval_ms: i64,
    /// The finalized `transaction.version`: what the coordinator's own aborts (timeouts, a
    /// producer fenced by InitProducerId) follow, as Kafka's use the cluster's level.
    pub transaction_version: i16,
}

impl Default for TransactionConfig {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        TransactionConfig {
            max_timeout_ms: 900_000,
            id_expiration_ms: 604_800_000,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
            transaction_version: TV_2,
        }
    }
}

/// What the coordinator keeps of transactions only in memory.
#[derive(Debug, Clone, Default)]
pub struct TxnSoftState {
    pub(crate) config: TransactionConfig,
    /// Kafka's `TransactionMetadata.lastProducerEpoch` (not in the log: -1 after a load).
    pub(crate) last_epochs: BTreeMap<String, i16>,
    /// When timed-out transactions and expired ids are next looked for (none until the owner
    /// starts the checks).
    pub(crate) abort_check_at: Option<i64>,
    pub(crate) expire_check_at: Option<i64>,
    /// Transactions that timed out and were aborted by the coordinator, since the shard started.
    pub(crate) timed_out: u64,
}

/// A change to what the coordinator keeps of transactions in memory.
#[derive(Debug, Clone)]
pub enum TxnEffect {
    /// The transactional id's last epoch after a transition.
    LastEpoch {
        transactional_id: String,
        epoch: i16,
    },
    AbortCheckAt(i64),
    ExpireCheckAt(i64),
    /// The transactional id expired: its memory goes with it.
    Forget(String),
    TimedOut(u64),
}

/// A transaction whose outcome is decided and whose markers are to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTransaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub partitions: Vec<(String, i32)>,
    /// The transaction version its markers are written at.
    pub transaction_version: i16,
}

/// A transition about to be written: the new metadata and the last epoch that goes with it.
pub(crate) struct Transition {
    pub(crate) metadata: TransactionMetadata,
    pub(crate) last_epoch: i16,
}

impl Transition {
    /// Kafka's `prepareTransitionTo`: every transition records the producer id it leaves as
    /// the previous one.
    pub(crate) fn from(current: &TransactionMetadata, last_epoch: i16) -> Transition {
        let mut metadata = current.clone();
        metadata.prev_producer_id = current.producer_id;
        Transition {
            metadata,
            last_epoch,
        }
    }

    /// The outcome that writes the transition and answers `response`.
    pub(crate) fn write<R>(self, response: R) -> Outcome<R> {
        let id = self.metadata.transactional_id.clone();
        Outcome {
            records: crate::at_latest_version(vec![transaction_record(&self.metadata)]),
            response,
            effects: vec![Effect::Txn(TxnEffect::LastEpoch {
                transactional_id: id,
                epoch: self.last_epoch,
            })],
        }
    }
}

/// The TransactionLog record holding `metadata`.
pub(crate) fn transaction_record(metadata: &TransactionMetadata) -> Record {
    Record::TransactionLog(
        TransactionLogKey {
            transactional_id: metadata.transactional_id.clone(),
            ..Default::default()
        },
        Some(metadata.to_value()),
    )
}

/// Kafka's `TransactionMetadata.isEpochExhausted`: the coordinator keeps the last epoch to fence
/// with.
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

impl CoordinatorShard {
    /// The transaction coordinator's settings; set before the shard runs.
    pub fn with_transactions(mut self, config: TransactionConfig) -> Self {
        self.txn.config = config;
        self
    }

    pub fn transaction_config(&self) -> &TransactionConfig {
        &self.txn.config
    }

    pub fn transaction(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.store.state().transactions.get(transactional_id)
    }

    /// The last epoch Kafka keeps in memory for KIP-360 retries (-1: none).
    pub(crate) fn last_epoch(&self, transactional_id: &str) -> i16 {
        self.txn
            .last_epochs
            .get(transactional_id)
            .copied()
            .unwrap_or(NO_PRODUCER_EPOCH)
    }

    /// Transactions the coordinator aborted because they timed out, since the shard started.
    pub fn transactions_timed_out(&self) -> u64 {
        self.txn.timed_out
    }

    /// Every transaction whose markers are still to be written, in transactional id order.
    pub fn prepared_transactions(&self) -> Vec<PreparedTransaction> {
        self.store
            .state()
            .transactions
            .prepared()
            .map(|t| PreparedTransaction {
                transactional_id: t.transactional_id.clone(),
                producer_id: t.producer_id,
                producer_epoch: t.producer_epoch,
                commit: t.state == TransactionState::PrepareCommit,
                partitions: t.partitions.iter().cloned().collect(),
                transaction_version: t.client_transaction_version,
            })
            .collect()
    }

    /// Kafka's `prepareComplete`, once every marker of `prepared` is written: the transaction
    /// moves to CompleteCommit or CompleteAbort and its partitions are cleared. Nothing happens
    /// (false) if the transaction moved on meanwhile.
    pub fn complete_transaction(&self, prepared: &PreparedTransaction, now: i64) -> Outcome<bool> {
        let Some(current) = self.transaction(&prepared.transactional_id) else {
            return Outcome::answer(false);
        };
        let same = current.producer_id == prepared.producer_id
            && current.producer_epoch == prepared.producer_epoch
            && current.state.is_prepared();
        if !same {
            return Outcome::answer(false);
        }
        let mut next = Transition::from(current, self.last_epoch(&current.transactional_id));
        next.metadata.state = if current.state == TransactionState::PrepareCommit {
            TransactionState::CompleteCommit
        } else {
            TransactionState::CompleteAbort
        };
        // At version 2 a transaction that exhausted the epoch ends on its next producer id.
        if supports_epoch_bump(current.client_transaction_version)
            && current.next_producer_id != NO_PRODUCER_ID
        {
            next.metadata.producer_id = current.next_producer_id;
            next.metadata.producer_epoch = 0;
        }
        next.metadata.next_producer_id = NO_PRODUCER_ID;
        next.metadata.partitions.clear();
        next.metadata.txn_last_update_timestamp = now;
        next.write(true)
    }

    /// AddPartitionsToTxn's verification (KIP-890 part 1, `handleVerifyPartitionsInTransaction`):
    /// one code per partition, NONE for those in the producer's ongoing transaction. Reads only.
    pub fn verify_partitions_in_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[(String, i32)],
    ) -> Vec<ErrorCode> {
        let all = |code: ErrorCode| vec![code; partitions.len()];
        if transactional_id.is_empty() {
            return all(ErrorCode::INVALID_REQUEST);
        }
        let Some(t) = self.transaction(transactional_id) else {
            return all(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        if t.producer_id != producer_id {
            return all(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if t.producer_epoch != producer_epoch {
            return all(ErrorCode::PRODUCER_FENCED);
        }
        if t.state.is_prepared() {
            return all(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        partitions
            .iter()
            .map(|p| {
                if t.partitions.contains(p) {
                    ErrorCode::NONE
                } else {
                    ErrorCode::TRANSACTION_ABORTABLE
                }
            })
            .collect()
    }

    pub(crate) fn apply_txn_effect(&mut self, effect: TxnEffect) {
        match effect {
            TxnEffect::LastEpoch {
                transactional_id,
                epoch,
            } => {
                self.txn.last_epochs.insert(transactional_id, epoch);
            }
            TxnEffect::AbortCheckAt(at) => self.txn.abort_check_at = Some(at),
            TxnEffect::ExpireCheckAt(at) => self.txn.expire_check_at = Some(at),
            TxnEffect::Forget(id) => {
                self.txn.last_epochs.remove(&id);
            }
            TxnEffect::TimedOut(n) => self.txn.timed_out += n,
        }
    }
}
