//! EndTxn from a producer (`handleEndTransaction` at transaction version 1): an ongoing
//! transaction moves to PrepareCommit or PrepareAbort, which is the decision; the markers and
//! the move to CompleteCommit or CompleteAbort follow. A retry of a decided outcome is answered
//! NONE, or CONCURRENT_TRANSACTIONS while its markers are still being written.
use kcoord_metadata::TransactionState;
use kcoord_wire::ErrorCode;

use super::Transition;
use crate::shard::CoordinatorShard;
use crate::Outcome;

impl CoordinatorShard {
    pub fn end_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        now: i64,
    ) -> Outcome<ErrorCode> {
        if transactional_id.is_empty() {
            return Outcome::answer(ErrorCode::INVALID_REQUEST);
        }
        let Some(current) = self.transaction(transactional_id) else {
            return Outcome::answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        if current.producer_id != producer_id {
            return Outcome::answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if current.producer_epoch != producer_epoch {
            return Outcome::answer(ErrorCode::PRODUCER_FENCED);
        }
        use TransactionState as S;
        let code = match (current.state, commit) {
            (S::Ongoing, _) => {
                let mut next = Transition::from(current, self.last_epoch(transactional_id));
                next.metadata.state = if commit {
                    S::PrepareCommit
                } else {
                    S::PrepareAbort
                };
                next.metadata.txn_last_update_timestamp = now;
                return next.write(ErrorCode::NONE);
            }
            (S::CompleteCommit, true) | (S::CompleteAbort, false) => ErrorCode::NONE,
            (S::PrepareCommit, true) | (S::PrepareAbort, false) => {
                ErrorCode::CONCURRENT_TRANSACTIONS
            }
            _ => ErrorCode::INVALID_TXN_STATE,
        };
        Outcome::answer(code)
    }
}
