//! AddPartitionsToTxn and AddOffsetsToTxn (`handleAddPartitionsToTransaction` and
//! `prepareAddPartitions`): the partitions join the producer's transaction, which becomes
//! Ongoing; the first one starts its clock.
use kcoord_metadata::TransactionState;
use kcoord_wire::ErrorCode;

use super::Transition;
use crate::shard::CoordinatorShard;
use crate::Outcome;

impl CoordinatorShard {
    /// One code for every partition: the coordinator accepts or refuses them together.
    /// `transaction_version` is the client's (2 for AddPartitionsToTxn v5 and the partitions
    /// Produce v12+ adds, else 0), which the transaction's markers then follow.
    pub fn add_partitions_to_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[(String, i32)],
        transaction_version: i16,
        now: i64,
    ) -> Outcome<ErrorCode> {
        if transactional_id.is_empty() {
            return Outcome::answer(ErrorCode::INVALID_REQUEST);
        }
        let Some(current) = self.transaction(transactional_id) else {
            return Outcome::answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        // Markers being written (Kafka's pending transition) come first.
        if current.state.is_prepared() {
            return Outcome::answer(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if current.producer_id != producer_id {
            return Outcome::answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if current.producer_epoch != producer_epoch {
            return Outcome::answer(ErrorCode::PRODUCER_FENCED);
        }
        let known = partitions.iter().all(|p| current.partitions.contains(p));
        if current.state == TransactionState::Ongoing && known {
            return Outcome::answer(ErrorCode::NONE);
        }
        let mut next = Transition::from(current, self.last_epoch(transactional_id));
        if current.state.is_idle() {
            next.metadata.txn_start_timestamp = now;
        }
        next.metadata.partitions.extend(partitions.iter().cloned());
        next.metadata.state = TransactionState::Ongoing;
        next.metadata.txn_last_update_timestamp = now;
        next.metadata.client_transaction_version = transaction_version;
        next.write(ErrorCode::NONE)
    }
}
