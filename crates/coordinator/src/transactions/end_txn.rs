//! EndTxn from a producer (`handleEndTransaction`): an ongoing transaction moves to
//! PrepareCommit or PrepareAbort, which is the decision; the markers and the move to
//! CompleteCommit or CompleteAbort follow. A retry of a decided outcome is answered NONE, or
//! CONCURRENT_TRANSACTIONS while its markers are still being written.
//!
//! At transaction version 2 (EndTxn v5) every EndTxn bumps the epoch (the answer carries the
//! producer id and epoch to use next), a retry is recognised by the epoch it carries (one
//! below the coordinator's), and an abort with nothing ongoing is accepted (Kafka's table in
//! `TransactionCoordinator.endTransaction`).
use kcoord_metadata::{TransactionMetadata, TransactionState};
use kcoord_wire::ErrorCode;

use super::{is_epoch_exhausted, supports_epoch_bump, Transition, NO_PRODUCER_ID};
use crate::shard::CoordinatorShard;
use crate::Outcome;

/// EndTxn's request, as the coordinator reads it.
#[derive(Debug, Clone, Copy)]
pub struct EndTxn<'a> {
    pub transactional_id: &'a str,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    /// The client's transaction version: 2 for EndTxn v5, else 0.
    pub transaction_version: i16,
    /// A producer id the caller allocated after [`EndTxnResult::NeedsProducerId`].
    pub fresh_producer_id: Option<i64>,
}

/// EndTxn's answer: the error, and at version 2 the producer id and epoch to go on with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndTxnResult {
    Ended {
        error: ErrorCode,
        producer_id: i64,
        producer_epoch: i16,
    },
    /// The epoch is exhausted: the caller allocates a producer id and calls again with it.
    NeedsProducerId,
}

impl EndTxnResult {
    fn error(code: ErrorCode) -> EndTxnResult {
        EndTxnResult::Ended {
            error: code,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: super::NO_PRODUCER_EPOCH,
        }
    }
}

impl CoordinatorShard {
    /// EndTxn at transaction version 1 (v0-4), which answers only an error.
    pub fn end_transaction(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        now: i64,
    ) -> Outcome<ErrorCode> {
        let req = EndTxn {
            transactional_id,
            producer_id,
            producer_epoch,
            commit,
            transaction_version: 0,
            fresh_producer_id: None,
        };
        self.end_txn(&req, now).map(|result| match result {
            EndTxnResult::Ended { error, .. } => error,
            // Version 1 never moves to a new producer id here.
            EndTxnResult::NeedsProducerId => ErrorCode::UNKNOWN_SERVER_ERROR,
        })
    }

    /// EndTxn at the client's transaction version.
    pub fn end_txn(&self, req: &EndTxn<'_>, now: i64) -> Outcome<EndTxnResult> {
        let refuse = |code| Outcome::answer(EndTxnResult::error(code));
        if req.transactional_id.is_empty() {
            return refuse(ErrorCode::INVALID_REQUEST);
        }
        let Some(current) = self.transaction(req.transactional_id) else {
            return refuse(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        // Kafka moves a prepared transaction to its completion while the markers are written
        // (a pending transition), and answers anything meanwhile CONCURRENT_TRANSACTIONS;
        // here a transaction is prepared exactly while its markers are being written.
        if supports_epoch_bump(req.transaction_version) {
            if current.state.is_prepared() {
                return refuse(ErrorCode::CONCURRENT_TRANSACTIONS);
            }
            return self.end_v2(current, req, now);
        }
        if current.producer_id != req.producer_id {
            return refuse(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if current.producer_epoch != req.producer_epoch {
            return refuse(ErrorCode::PRODUCER_FENCED);
        }
        if current.state.is_prepared() {
            return refuse(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        use TransactionState as S;
        let code = match (current.state, req.commit) {
            (S::Ongoing, commit) => {
                let mut next = Transition::from(current, self.last_epoch(req.transactional_id));
                next.metadata.state = prepared_state(commit);
                next.metadata.txn_last_update_timestamp = now;
                next.metadata.client_transaction_version = req.transaction_version;
                return next.write(EndTxnResult::error(ErrorCode::NONE));
            }
            (S::CompleteCommit, true) | (S::CompleteAbort, false) => ErrorCode::NONE,
            (S::PrepareCommit, true) | (S::PrepareAbort, false) => {
                ErrorCode::CONCURRENT_TRANSACTIONS
            }
            _ => ErrorCode::INVALID_TXN_STATE,
        };
        refuse(code)
    }

    /// Transaction version 2 (`endTransaction` with `supportsEpochBump`).
    fn end_v2(
        &self,
        current: &TransactionMetadata,
        req: &EndTxn<'_>,
        now: i64,
    ) -> Outcome<EndTxnResult> {
        let refuse = |code| Outcome::answer(EndTxnResult::error(code));
        let epoch = req.producer_epoch;
        // A retry after the epoch overflowed onto a new producer id, or after a bump.
        let retry_on_overflow = current.prev_producer_id == req.producer_id
            && epoch == i16::MAX - 1
            && current.producer_epoch == 0;
        let retry_on_bump = i32::from(current.producer_epoch) == i32::from(epoch) + 1;
        use TransactionState as S;
        let valid_epoch = match current.state {
            S::PrepareCommit | S::PrepareAbort => retry_on_bump,
            S::CompleteCommit | S::CompleteAbort => {
                retry_on_bump || retry_on_overflow || epoch == current.producer_epoch
            }
            _ => epoch == current.producer_epoch,
        };
        let retry = retry_on_bump || retry_on_overflow;
        if current.producer_id != req.producer_id && !retry_on_overflow {
            return refuse(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if !valid_epoch {
            return refuse(ErrorCode::PRODUCER_FENCED);
        }
        let unchanged = Outcome::answer(EndTxnResult::Ended {
            error: ErrorCode::NONE,
            producer_id: current.producer_id,
            producer_epoch: current.producer_epoch,
        });
        match (current.state, req.commit) {
            (S::Ongoing, commit) => {
                self.prepare_v2(current, req, prepared_state(commit), false, now)
            }
            (S::CompleteCommit, true) | (S::CompleteAbort, false) if retry => unchanged,
            (S::CompleteCommit, false) if retry => refuse(ErrorCode::INVALID_TXN_STATE),
            (S::CompleteCommit, false) | (S::CompleteAbort, false) | (S::Empty, false) => {
                self.prepare_v2(current, req, S::PrepareAbort, true, now)
            }
            (S::PrepareCommit, true) | (S::PrepareAbort, false) => {
                refuse(ErrorCode::CONCURRENT_TRANSACTIONS)
            }
            _ => refuse(ErrorCode::INVALID_TXN_STATE),
        }
    }

    /// `prepareAbortOrCommit` at version 2: the epoch is bumped now (the markers carry it); an
    /// exhausted epoch moves to a new producer id when the transaction completes. Answers the
    /// producer id and epoch the producer goes on with.
    fn prepare_v2(
        &self,
        current: &TransactionMetadata,
        req: &EndTxn<'_>,
        state: TransactionState,
        nothing_added: bool,
        now: i64,
    ) -> Outcome<EndTxnResult> {
        let next_producer_id = if is_epoch_exhausted(current.producer_epoch) {
            match req.fresh_producer_id.filter(|p| *p != current.producer_id) {
                Some(fresh) => fresh,
                None => return Outcome::answer(EndTxnResult::NeedsProducerId),
            }
        } else {
            NO_PRODUCER_ID
        };
        let mut next = Transition::from(current, current.producer_epoch);
        // At i16::MAX only an abort gets here (a broken state Kafka lets recover).
        if current.producer_epoch < i16::MAX {
            next.metadata.producer_epoch = current.producer_epoch + 1;
        }
        next.metadata.state = state;
        next.metadata.next_producer_id = next_producer_id;
        if nothing_added {
            next.metadata.txn_start_timestamp = now;
        }
        next.metadata.txn_last_update_timestamp = now;
        next.metadata.client_transaction_version = req.transaction_version;
        let (producer_id, producer_epoch) = if next_producer_id == NO_PRODUCER_ID {
            (current.producer_id, next.metadata.producer_epoch)
        } else {
            (next_producer_id, 0)
        };
        next.write(EndTxnResult::Ended {
            error: ErrorCode::NONE,
            producer_id,
            producer_epoch,
        })
    }
}

fn prepared_state(commit: bool) -> TransactionState {
    if commit {
        TransactionState::PrepareCommit
    } else {
        TransactionState::PrepareAbort
    }
}
