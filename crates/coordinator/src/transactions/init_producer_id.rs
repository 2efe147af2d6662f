//! InitProducerId with a transactional id (`TransactionCoordinator.handleInitProducerId` and
//! `prepareInitProducerIdTransit`): a new id gets a producer id and epoch 0; an id seen before
//! gets its epoch bumped, which fences the producer that had it; an ongoing transaction is
//! aborted first (the caller retries on CONCURRENT_TRANSACTIONS); KIP-360 lets a producer
//! that names its current id and epoch recover; an exhausted epoch rotates the producer id.
use std::collections::BTreeSet;

use kcoord_metadata::{TransactionMetadata, TransactionState};
use kcoord_wire::ErrorCode;

use super::{is_epoch_exhausted, Transition, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use crate::shard::CoordinatorShard;
use crate::Outcome;

/// InitProducerId's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitProducerIdResult {
    Granted {
        producer_id: i64,
        producer_epoch: i16,
    },
    Refused(ErrorCode),
    /// A new producer id is needed (a new transactional id, or an exhausted epoch): the caller
    /// allocates one from the controller and calls again with it.
    NeedsProducerId,
}

/// InitProducerId's request, as the coordinator reads it.
#[derive(Debug, Clone, Copy)]
pub struct InitProducerId<'a> {
    pub transactional_id: &'a str,
    pub transaction_timeout_ms: i32,
    /// The producer id and epoch the producer has (KIP-360), if any.
    pub expected: Option<(i64, i16)>,
    /// A producer id the caller allocated after [`InitProducerIdResult::NeedsProducerId`].
    pub fresh_producer_id: Option<i64>,
}

impl CoordinatorShard {
    pub fn init_producer_id(
        &self,
        req: &InitProducerId<'_>,
        now: i64,
    ) -> Outcome<InitProducerIdResult> {
        let refuse = |code| Outcome::answer(InitProducerIdResult::Refused(code));
        if req.transactional_id.is_empty() {
            return refuse(ErrorCode::INVALID_REQUEST);
        }
        let timeout = req.transaction_timeout_ms;
        if timeout <= 0 || timeout > self.txn.config.max_timeout_ms {
            return refuse(ErrorCode::INVALID_TRANSACTION_TIMEOUT);
        }
        let created;
        let current = match self.transaction(req.transactional_id) {
            Some(t) => t,
            None => match req.fresh_producer_id {
                Some(producer_id) => {
                    created = new_metadata(req.transactional_id, producer_id, timeout, now);
                    &created
                }
                None => return Outcome::answer(InitProducerIdResult::NeedsProducerId),
            },
        };
        let last_epoch = self.last_epoch(req.transactional_id);
        // Markers being written (Kafka's pending transition) come first.
        if current.state.is_prepared() {
            return refuse(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if let Some((producer_id, epoch)) = req.expected {
            // Kafka's `isValidProducerId`.
            let valid = current.producer_epoch == NO_PRODUCER_EPOCH
                || producer_id == current.producer_id
                || (producer_id == current.prev_producer_id && is_epoch_exhausted(epoch));
            if !valid {
                return refuse(ErrorCode::PRODUCER_FENCED);
            }
        }
        match current.state {
            TransactionState::PrepareCommit | TransactionState::PrepareAbort => {
                refuse(ErrorCode::CONCURRENT_TRANSACTIONS)
            }
            TransactionState::Ongoing => self.fence_and_abort(current, now).map(|()| {
                // The client retries; by then the abort is done and its epoch bumped again.
                InitProducerIdResult::Refused(ErrorCode::CONCURRENT_TRANSACTIONS)
            }),
            _ => next_epoch(current, last_epoch, req, now),
        }
    }

    /// Kafka's `prepareFenceProducerEpoch` followed by the coordinator's own EndTxn(ABORT) at
    /// transaction version 1: the epoch is bumped (fencing the producer) and the transaction
    /// moves to PrepareAbort, whose markers the owner then writes.
    ///
    /// At the server's transaction version 2 the abort bumps the epoch once more than version 1
    /// would not: Kafka lets version 2's own epoch bump fence the producer (the last epoch is
    /// then the fenced producer's, where version 1 forgets it).
    pub(crate) fn fence_and_abort(&self, current: &TransactionMetadata, now: i64) -> Outcome<()> {
        let version = self.txn.config.transaction_version;
        let last = if super::supports_epoch_bump(version) {
            current.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        let mut next = Transition::from(current, last);
        if current.producer_epoch < i16::MAX {
            next.metadata.producer_epoch = current.producer_epoch + 1;
        }
        next.metadata.state = TransactionState::PrepareAbort;
        next.metadata.txn_last_update_timestamp = now;
        next.metadata.client_transaction_version = version;
        next.write(())
    }
}

/// The metadata of a transactional id seen for the first time: not written as such, only as
/// the transition [`next_epoch`] makes from it (Kafka puts it in its cache first).
fn new_metadata(id: &str, producer_id: i64, timeout: i32, now: i64) -> TransactionMetadata {
    TransactionMetadata {
        transactional_id: id.to_owned(),
        producer_id,
        prev_producer_id: NO_PRODUCER_ID,
        next_producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        txn_timeout_ms: timeout,
        state: TransactionState::Empty,
        partitions: BTreeSet::new(),
        txn_start_timestamp: -1,
        txn_last_update_timestamp: now,
        client_transaction_version: 0,
    }
}

/// `prepareIncrementProducerEpoch`, or `prepareProducerIdRotation` when the epoch is exhausted.
fn next_epoch(
    current: &TransactionMetadata,
    last_epoch: i16,
    req: &InitProducerId<'_>,
    now: i64,
) -> Outcome<InitProducerIdResult> {
    let expected_epoch = req.expected.map(|(_, e)| e);
    let (producer_id, epoch, last) = if is_epoch_exhausted(current.producer_epoch)
        && expected_epoch.is_none_or(|e| e == current.producer_epoch)
    {
        let Some(fresh) = req.fresh_producer_id.filter(|p| *p != current.producer_id) else {
            return Outcome::answer(InitProducerIdResult::NeedsProducerId);
        };
        let last = match expected_epoch {
            Some(_) => current.producer_epoch,
            None => NO_PRODUCER_EPOCH,
        };
        (fresh, 0, last)
    } else {
        let bumped = current.producer_epoch + 1;
        match expected_epoch {
            None => (current.producer_id, bumped, NO_PRODUCER_EPOCH),
            Some(e)
                if current.producer_epoch == NO_PRODUCER_EPOCH || e == current.producer_epoch =>
            {
                (current.producer_id, bumped, current.producer_epoch)
            }
            // A retry of a bump whose answer the producer did not get.
            Some(e) if e == last_epoch => (current.producer_id, current.producer_epoch, last_epoch),
            Some(_) => {
                return Outcome::answer(InitProducerIdResult::Refused(ErrorCode::PRODUCER_FENCED))
            }
        }
    };
    let mut next = Transition::from(current, last);
    next.metadata.producer_id = producer_id;
    next.metadata.producer_epoch = epoch;
    next.metadata.txn_timeout_ms = req.transaction_timeout_ms;
    next.metadata.state = TransactionState::Empty;
    next.metadata.partitions.clear();
    next.metadata.txn_start_timestamp = -1;
    next.metadata.txn_last_update_timestamp = now;
    next.write(InitProducerIdResult::Granted {
        producer_id,
        producer_epoch: epoch,
    })
}
