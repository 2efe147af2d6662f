//! EndTxn, as the daemon runs it (`crates/server/src/rpc/apis/end_txn.rs`), at the producer's
//! transaction version.
//!
//! At version 1 the answer is an error code. At version 2 (EndTxn v5, KIP-890 part 2) every
//! EndTxn bumps the epoch, and the answer carries the producer id and epoch the producer goes
//! on with (a new producer id when the epoch is exhausted: the coordinator asks for one from
//! the allocator first). A producer whose answer was lost (refused: a crash or a failed write,
//! though the change may have reached the file) retries with its old epoch, as the Java client
//! does; the coordinator recognises the retry by that epoch (one below its own) and answers
//! NONE with the same producer id and epoch once the transaction is complete, and
//! CONCURRENT_TRANSACTIONS while its markers are written (the producer then asks again).
//!
//! The transaction an EndTxn ends is the producer's: the one its acknowledged
//! AddPartitionsToTxn named (a retry of a completed transaction ends it too, and a timed-out
//! transaction's abort is answered NONE at version 2). A version-2 producer also aborts now
//! and then with nothing ongoing, which Kafka accepts (and bumps the epoch for): that
//! transaction starts at the abort, with no partitions.
use kcoord_coordinator::transactions::{EndTxn, EndTxnResult};
use kcoord_wire::ErrorCode;

use super::model::{Kind, Violation};
use super::transactions::{current_txn, Request};
use super::txn_model::TxnId;
use super::world::World;

impl World {
    pub(super) fn end_txn(&mut self, producer: usize, commit: bool) -> Result<String, Violation> {
        let p = &self.txn.producers[producer];
        let ids = p.ids.expect("an initialized producer");
        // An abort with nothing ongoing (version 2) ends the transaction it starts now.
        let open = p.txn.clone();
        let mut req = EndTxn {
            transactional_id: p.transactional_id,
            producer_id: ids.0,
            producer_epoch: ids.1,
            commit,
            transaction_version: p.client_version(),
            fresh_producer_id: None,
        };
        loop {
            let ((result, txn), ticket) = self.call(|s, now| {
                let id = req.transactional_id;
                let txn = open.clone().unwrap_or_else(|| current_txn(s, id, now));
                s.end_txn(&req, now).map(|result| (result, txn))
            })?;
            if result == EndTxnResult::NeedsProducerId && req.fresh_producer_id.is_none() {
                req.fresh_producer_id = Some(self.allocate_producer_id());
                continue;
            }
            self.txn.producers[producer].ending = Some(commit);
            self.wait(
                producer,
                ticket,
                Request::End(producer, ids, commit, result, txn),
            );
            let idle = if open.is_none() {
                ", nothing ongoing"
            } else {
                ""
            };
            return Ok(format!(
                " p{producer} {}@{ids:?} EndTxn(commit={commit}, version {}{idle}) -> {result:?}",
                req.transactional_id, req.transaction_version
            ));
        }
    }

    /// A request whose answer was lost: a version-2 EndTxn answered NONE leaves the answer the
    /// producer's retry must get.
    pub(super) fn end_lost(&mut self, request: &Request) {
        let Request::End(producer, _, _, result, _) = request else {
            return;
        };
        let p = &mut self.txn.producers[*producer];
        if let EndTxnResult::Ended {
            error: ErrorCode::NONE,
            producer_id,
            producer_epoch,
        } = *result
        {
            if p.version >= 2 && p.lost_end.is_none() {
                p.lost_end = Some((producer_id, producer_epoch));
            }
        }
    }

    pub(super) fn ended(
        &mut self,
        producer: usize,
        ids: (i64, i16),
        commit: bool,
        result: EndTxnResult,
        txn: TxnId,
    ) -> Result<(), Violation> {
        let EndTxnResult::Ended {
            error,
            producer_id,
            producer_epoch,
        } = result
        else {
            // Only after a fresh producer id was refused: nothing changed.
            return Ok(());
        };
        match error {
            ErrorCode::NONE => {}
            ErrorCode::CONCURRENT_TRANSACTIONS => return Ok(()),
            _ => {
                self.refused_by_coordinator(producer);
                return Ok(());
            }
        }
        let p = &self.txn.producers[producer];
        let id = p.transactional_id;
        self.txn.model.check_not_fenced("EndTxn", id, ids)?;
        if p.version >= 2 {
            self.adopt(producer, (producer_id, producer_epoch))?;
        }
        self.txn.producers[producer].end_transaction();
        if commit {
            self.stats.txn_commits += 1;
            self.txn.model.commit_acknowledged(&txn)
        } else {
            self.stats.txn_aborts += 1;
            self.txn
                .model
                .decided(&txn, false, "an acknowledged EndTxn(abort)")
        }
    }

    /// A version-2 EndTxn answered NONE: the producer goes on with the answered producer id
    /// and epoch, which no acknowledged answer handed out before, and which are the lost
    /// answer's if this was a retry.
    fn adopt(&mut self, producer: usize, answer: (i64, i16)) -> Result<(), Violation> {
        let p = &mut self.txn.producers[producer];
        let id = p.transactional_id;
        self.stats.txn_v2_ends += 1;
        if let Some(lost) = p.lost_end {
            self.stats.txn_v2_retries += 1;
            if lost != answer {
                return Err(Violation::new(
                    Kind::BadAnswer,
                    format!(
                        "{id}: EndTxn retried after its answer {lost:?} was lost was answered \
                         {answer:?}"
                    ),
                ));
            }
        }
        p.ids = Some(answer);
        self.txn.model.end_answered(id, answer)
    }
}
