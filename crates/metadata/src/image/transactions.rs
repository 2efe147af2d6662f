//! Transactions (coordinator record type 0, Kafka's `__transaction_state`): the state of each
//! transactional id, as Kafka's `TransactionStateManager` keeps it in its cache. What Kafka
//! keeps only in memory (the last epoch for KIP-360 retries) is not here.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_wire::records::transaction_log_value::PartitionsSchema;
use kcoord_wire::records::{TransactionLogKey, TransactionLogValue};

/// Kafka's `TransactionState`, with its ids as the log writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransactionState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TransactionState {
    pub const ALL: [TransactionState; 8] = [
        TransactionState::Empty,
        TransactionState::Ongoing,
        TransactionState::PrepareCommit,
        TransactionState::PrepareAbort,
        TransactionState::CompleteCommit,
        TransactionState::CompleteAbort,
        TransactionState::Dead,
        TransactionState::PrepareEpochFence,
    ];

    pub fn id(self) -> i8 {
        match self {
            TransactionState::Empty => 0,
            TransactionState::Ongoing => 1,
            TransactionState::PrepareCommit => 2,
            TransactionState::PrepareAbort => 3,
            TransactionState::CompleteCommit => 4,
            TransactionState::CompleteAbort => 5,
            TransactionState::Dead => 6,
            TransactionState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TransactionState> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    /// The name DescribeTransactions and ListTransactions report (Kafka's `stateName`).
    pub fn name(self) -> &'static str {
        match self {
            TransactionState::Empty => "Empty",
            TransactionState::Ongoing => "Ongoing",
            TransactionState::PrepareCommit => "PrepareCommit",
            TransactionState::PrepareAbort => "PrepareAbort",
            TransactionState::CompleteCommit => "CompleteCommit",
            TransactionState::CompleteAbort => "CompleteAbort",
            TransactionState::Dead => "Dead",
            TransactionState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<TransactionState> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Commit or abort decided, markers not all written yet.
    pub fn is_prepared(self) -> bool {
        matches!(
            self,
            TransactionState::PrepareCommit | TransactionState::PrepareAbort
        )
    }

    /// No transaction in progress: a new one may begin.
    pub fn is_idle(self) -> bool {
        matches!(
            self,
            TransactionState::Empty
                | TransactionState::CompleteCommit
                | TransactionState::CompleteAbort
        )
    }
}

/// One transactional id's state (Kafka's `TransactionMetadata` as the log holds it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    pub prev_producer_id: i64,
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TransactionState,
    pub partitions: BTreeSet<(String, i32)>,
    pub txn_start_timestamp: i64,
    pub txn_last_update_timestamp: i64,
    pub client_transaction_version: i16,
}

impl TransactionMetadata {
    /// The record value (Kafka's `TransactionLog.valueToBytes`: no partitions in state Empty).
    pub fn to_value(&self) -> TransactionLogValue {
        let partitions = (self.state != TransactionState::Empty).then(|| {
            let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for (topic, partition) in &self.partitions {
                by_topic.entry(topic).or_default().push(*partition);
            }
            by_topic
                .into_iter()
                .map(|(topic, partition_ids)| PartitionsSchema {
                    topic: topic.to_owned(),
                    partition_ids,
                    ..Default::default()
                })
                .collect()
        });
        TransactionLogValue {
            producer_id: self.producer_id,
            previous_producer_id: self.prev_producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            next_producer_epoch: -1,
            transaction_timeout_ms: self.txn_timeout_ms,
            transaction_status: self.state.id(),
            transaction_partitions: partitions,
            transaction_last_update_timestamp_ms: self.txn_last_update_timestamp,
            transaction_start_timestamp_ms: self.txn_start_timestamp,
            client_transaction_version: self.client_transaction_version,
            ..Default::default()
        }
    }

    /// Reads a record value; an unknown state id is refused (Kafka's
    /// `TransactionState.fromId` throws).
    pub fn from_value(id: &str, v: &TransactionLogValue) -> Result<TransactionMetadata, String> {
        let state = TransactionState::from_id(v.transaction_status).ok_or_else(|| {
            format!(
                "transactional id {id}: unknown transaction state {}",
                v.transaction_status
            )
        })?;
        let partitions = v
            .transaction_partitions
            .iter()
            .flatten()
            .flat_map(|t| t.partition_ids.iter().map(|p| (t.topic.clone(), *p)))
            .collect();
        Ok(TransactionMetadata {
            transactional_id: id.to_owned(),
            producer_id: v.producer_id,
            prev_producer_id: v.previous_producer_id,
            next_producer_id: v.next_producer_id,
            producer_epoch: v.producer_epoch,
            txn_timeout_ms: v.transaction_timeout_ms,
            state,
            partitions,
            txn_start_timestamp: v.transaction_start_timestamp_ms,
            txn_last_update_timestamp: v.transaction_last_update_timestamp_ms,
            client_transaction_version: v.client_transaction_version,
        })
    }
}

/// Every transactional id this log holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransactionsImage {
    by_id: BTreeMap<String, TransactionMetadata>,
    /// Records that did not read (an unknown state): skipped, as Kafka's loader logs and skips
    /// what it cannot parse, and counted so operators see it.
    pub unreadable: u64,
}

impl TransactionsImage {
    pub fn get(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.by_id.get(transactional_id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &TransactionMetadata> {
        self.by_id.values()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The transactions whose outcome is decided but whose markers are not all written: what a
    /// coordinator completes after a restart.
    pub fn prepared(&self) -> impl Iterator<Item = &TransactionMetadata> {
        self.by_id.values().filter(|t| t.state.is_prepared())
    }

    pub(crate) fn replay(&mut self, key: &TransactionLogKey, value: Option<&TransactionLogValue>) {
        let id = &key.transactional_id;
        match value.map(|v| TransactionMetadata::from_value(id, v)) {
            Some(Ok(metadata)) => {
                self.by_id.insert(id.clone(), metadata);
            }
            Some(Err(_)) => self.unreadable += 1,
            None => {
                self.by_id.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ongoing() -> TransactionMetadata {
        TransactionMetadata {
            transactional_id: "tx".into(),
            producer_id: 7,
            prev_producer_id: -1,
            next_producer_id: -1,
            producer_epoch: 3,
            txn_timeout_ms: 60_000,
            state: TransactionState::Ongoing,
            partitions: [
                ("a".to_string(), 1),
                ("a".to_string(), 0),
                ("b".to_string(), 2),
            ]
            .into_iter()
            .collect(),
            txn_start_timestamp: 10,
            txn_last_update_timestamp: 11,
            client_transaction_version: 0,
        }
    }

    #[test]
    fn a_value_reads_back_as_it_was_written() {
        let t = ongoing();
        let value = t.to_value();
        assert_eq!(
            value.transaction_partitions.as_ref().map(|p| p.len()),
            Some(2)
        );
        assert_eq!(TransactionMetadata::from_value("tx", &value), Ok(t));
    }

    #[test]
    fn an_empty_transaction_writes_null_partitions_and_tombstones_remove() {
        let mut t = ongoing();
        t.state = TransactionState::Empty;
        t.partitions.clear();
        assert_eq!(t.to_value().transaction_partitions, None);
        let mut image = TransactionsImage::default();
        let key = TransactionLogKey {
            transactional_id: "tx".into(),
            ..Default::default()
        };
        image.replay(&key, Some(&t.to_value()));
        assert_eq!(image.get("tx"), Some(&t));
        image.replay(&key, None);
        assert!(image.is_empty());
    }

    #[test]
    fn an_unknown_state_is_skipped_and_counted() {
        let mut value = ongoing().to_value();
        value.transaction_status = 42;
        let mut image = TransactionsImage::default();
        let key = TransactionLogKey {
            transactional_id: "tx".into(),
            ..Default::default()
        };
        image.replay(&key, Some(&value));
        assert_eq!((image.len(), image.unreadable), (0, 1));
    }

    #[test]
    fn state_ids_and_names_are_kafkas() {
        for s in TransactionState::ALL {
            assert_eq!(TransactionState::from_id(s.id()), Some(s));
            assert_eq!(TransactionState::from_name(s.name()), Some(s));
        }
        assert_eq!(TransactionState::PrepareEpochFence.id(), 7);
        assert_eq!(TransactionState::CompleteAbort.name(), "CompleteAbort");
    }
}
