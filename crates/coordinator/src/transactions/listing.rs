//! DescribeTransactions and ListTransactions on one shard: reads of its transactional ids, as
//! Kafka's `TransactionCoordinator.handleDescribeTransactions` and
//! `TransactionStateManager.listTransactionStates` read the coordinator's cache.
use kcoord_metadata::TransactionState;
use kcoord_wire::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTransaction,
};
use kcoord_wire::messages::list_transactions_response::TransactionState as ListedTransaction;
use kcoord_wire::ErrorCode;

use crate::shard::CoordinatorShard;

/// ListTransactions' filters, as the request gives them.
#[derive(Debug, Clone, Copy, Default)]
pub struct TransactionFilter<'a> {
    /// Only these producer ids (none: every one).
    pub producer_ids: &'a [i64],
    /// Only these states, by Kafka's names (none: every state). A name that is no state
    /// matches nothing (the response lists it, [`unknown_state_filters`]).
    pub states: &'a [String],
    /// v1+: only transactions that started more than this many milliseconds ago (-1: any).
    pub duration_ms: i64,
}

/// The state filters that name no state, each once, in request order (Kafka's
/// `UnknownStateFilters`).
pub fn unknown_state_filters(states: &[String]) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    for name in states {
        if TransactionState::from_name(name).is_none() && !unknown.contains(name) {
            unknown.push(name.clone());
        }
    }
    unknown
}

impl CoordinatorShard {
    /// DescribeTransactions for one transactional id: its producer, state, timeout, start time
    /// and partitions (grouped by topic); INVALID_REQUEST for an empty id,
    /// TRANSACTIONAL_ID_NOT_FOUND for an unknown one or one being expired (Dead).
    pub fn describe_transaction(&self, transactional_id: &str) -> DescribedTransaction {
        let mut described = DescribedTransaction {
            transactional_id: transactional_id.to_owned(),
            ..Default::default()
        };
        if transactional_id.is_empty() {
            described.error_code = ErrorCode::INVALID_REQUEST.code();
            return described;
        }
        let Some(t) = self
            .transaction(transactional_id)
            .filter(|t| t.state != TransactionState::Dead)
        else {
            described.error_code = ErrorCode::TRANSACTIONAL_ID_NOT_FOUND.code();
            return described;
        };
        let mut topics: Vec<TopicData> = Vec::new();
        for (topic, partition) in &t.partitions {
            match topics.last_mut() {
                // The partitions are sorted, so a topic's partitions are next to each other.
                Some(last) if last.topic == *topic => last.partitions.push(*partition),
                _ => topics.push(TopicData {
                    topic: topic.clone(),
                    partitions: vec![*partition],
                    ..Default::default()
                }),
            }
        }
        DescribedTransaction {
            error_code: ErrorCode::NONE.code(),
            transaction_state: t.state.name().to_owned(),
            transaction_timeout_ms: t.txn_timeout_ms,
            transaction_start_time_ms: t.txn_start_timestamp,
            producer_id: t.producer_id,
            producer_epoch: t.producer_epoch,
            topics,
            ..described
        }
    }

    /// ListTransactions on this shard: every transaction `filter` and `matches_id` (v2's
    /// TransactionalIdPattern, matched against the whole id) keep, by transactional id. Dead
    /// transactions are never listed: they are being expired.
    pub fn list_transactions(
        &self,
        filter: &TransactionFilter<'_>,
        matches_id: impl Fn(&str) -> bool,
        now: i64,
    ) -> Vec<ListedTransaction> {
        let wanted_state = |state: TransactionState| {
            filter.states.is_empty()
                || filter
                    .states
                    .iter()
                    .any(|name| TransactionState::from_name(name) == Some(state))
        };
        self.store
            .state()
            .transactions
            .iter()
            .filter(|t| t.state != TransactionState::Dead)
            .filter(|t| {
                filter.producer_ids.is_empty() || filter.producer_ids.contains(&t.producer_id)
            })
            .filter(|t| wanted_state(t.state))
            // Kafka keeps those running for longer than the duration, strictly.
            .filter(|t| filter.duration_ms < 0 || now - t.txn_start_timestamp > filter.duration_ms)
            .filter(|t| matches_id(&t.transactional_id))
            .map(|t| ListedTransaction {
                transactional_id: t.transactional_id.clone(),
                producer_id: t.producer_id,
                transaction_state: t.state.name().to_owned(),
                ..Default::default()
            })
            .collect()
    }
}
