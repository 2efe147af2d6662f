//! What the transaction coordinator does as time passes (`abortTimedOutTransactions` and
//! `removeExpiredTransactionalIds`): an ongoing transaction older than its timeout is aborted
//! and its producer fenced; a transactional id idle for `transactional.id.expiration.ms` is
//! forgotten.
use kcoord_metadata::{Record, TransactionState};
use kcoord_wire::records::TransactionLogKey;

use super::TxnEffect;
use crate::effects::Effect;
use crate::shard::CoordinatorShard;
use crate::tick::TickEvent;
use crate::Outcome;

impl CoordinatorShard {
    /// Starts the periodic checks (the owner calls it once the shard has loaded).
    pub fn start_transaction_checks(&self, now: i64) -> Outcome<()> {
        let config = self.txn.config;
        Outcome::answer(()).with_effects([
            Effect::Txn(TxnEffect::AbortCheckAt(
                now.saturating_add(config.abort_timed_out_interval_ms.max(1)),
            )),
            Effect::Txn(TxnEffect::ExpireCheckAt(
                now.saturating_add(config.remove_expired_interval_ms.max(1)),
            )),
        ])
    }

    pub(crate) fn transaction_check_deadline(&self) -> Option<i64> {
        [self.txn.abort_check_at, self.txn.expire_check_at]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn transaction_checks_due(&self, now: i64) -> bool {
        self.transaction_check_deadline()
            .is_some_and(|at| at <= now)
    }

    /// The due checks, as one job.
    pub fn check_transactions(&self, now: i64) -> Outcome<Vec<TickEvent>> {
        let config = self.txn.config;
        let mut outcome = Outcome::answer(Vec::new());
        if self.txn.abort_check_at.is_some_and(|at| at <= now) {
            outcome = self.abort_timed_out(now);
            outcome.effects.push(Effect::Txn(TxnEffect::AbortCheckAt(
                now.saturating_add(config.abort_timed_out_interval_ms.max(1)),
            )));
        }
        if self.txn.expire_check_at.is_some_and(|at| at <= now) {
            let expired = self.expire_transactional_ids(now);
            outcome.records.extend(expired.records);
            outcome.response.extend(expired.response);
            outcome.effects.extend(expired.effects);
            outcome.effects.push(Effect::Txn(TxnEffect::ExpireCheckAt(
                now.saturating_add(config.remove_expired_interval_ms.max(1)),
            )));
        }
        outcome
    }

    /// Every ongoing transaction past its timeout is fenced and moves to PrepareAbort.
    fn abort_timed_out(&self, now: i64) -> Outcome<Vec<TickEvent>> {
        let mut outcome = Outcome::answer(Vec::new());
        for t in self.store.state().transactions.iter() {
            let timed_out = t.state == TransactionState::Ongoing
                && t.txn_start_timestamp <= now.saturating_sub(i64::from(t.txn_timeout_ms));
            if !timed_out {
                continue;
            }
            let fenced = self.fence_and_abort(t, now);
            outcome.records.extend(fenced.records);
            outcome.effects.extend(fenced.effects);
            outcome.response.push(TickEvent::TransactionTimedOut {
                transactional_id: t.transactional_id.clone(),
                producer_id: t.producer_id,
            });
        }
        let n = outcome.response.len() as u64;
        if n > 0 {
            outcome.effects.push(Effect::Txn(TxnEffect::TimedOut(n)));
        }
        outcome
    }

    /// Idle transactional ids whose last change is older than `transactional.id.expiration.ms`
    /// are deleted (a tombstone: Kafka's Dead state is never written).
    fn expire_transactional_ids(&self, now: i64) -> Outcome<Vec<TickEvent>> {
        let horizon = now.saturating_sub(self.txn.config.id_expiration_ms);
        let mut outcome = Outcome::answer(Vec::new());
        for t in self.store.state().transactions.iter() {
            if !t.state.is_idle() || t.txn_last_update_timestamp > horizon {
                continue;
            }
            let id = t.transactional_id.clone();
            outcome
                .records
                .extend(crate::at_latest_version(vec![Record::TransactionLog(
                    TransactionLogKey {
                        transactional_id: id.clone(),
                        ..Default::default()
                    },
                    None,
                )]));
            outcome
                .effects
                .push(Effect::Txn(TxnEffect::Forget(id.clone())));
            outcome.response.push(TickEvent::TransactionalIdExpired {
                transactional_id: id,
            });
        }
        outcome
    }
}
