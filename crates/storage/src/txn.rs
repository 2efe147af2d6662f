//! The aborted transaction index (Kafka's `TransactionIndex` of `AbortedTxn`s): for each
//! aborted transaction with data, its producer, first offset, last offset (its ABORT marker)
//! and the last stable offset once it was aborted. A read_committed fetch is given the aborted
//! transactions that overlap what it reads, so the consumer drops their records.
//!
//! Kafka keeps one `.txnindex` file per segment, holding the transactions whose marker lies in
//! it. Here the index is one list per log, in memory, in marker order; it is persisted through
//! the segments' dense indexes, whose entries carry each batch's transactional flag and marker
//! type, and rebuilt from them at startup by replaying the producer state (so it is exactly
//! what the log holds, whatever point a crash interrupted).

/// One aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of the ABORT marker.
    pub last_offset: i64,
    /// The last stable offset right after the abort: the first offset of the earliest other
    /// transaction still ongoing, else the marker's offset + 1.
    pub last_stable_offset: i64,
}

/// The aborted transactions of one log, by marker offset.
#[derive(Debug, Clone, Default)]
pub struct AbortedIndex {
    txns: Vec<AbortedTxn>,
}

impl AbortedIndex {
    /// Adds a transaction aborted at the log end (markers come in offset order).
    pub fn push(&mut self, txn: AbortedTxn) {
        debug_assert!(self
            .txns
            .last()
            .is_none_or(|t| t.last_offset < txn.last_offset));
        self.txns.push(txn);
    }

    pub fn len(&self) -> usize {
        self.txns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &AbortedTxn> {
        self.txns.iter()
    }

    /// Forgets the transactions whose marker is below `offset` (its segment was deleted, as
    /// Kafka deletes a segment's `.txnindex` with it).
    pub fn remove_below(&mut self, offset: i64) {
        let cut = self.txns.partition_point(|t| t.last_offset < offset);
        self.txns.drain(..cut);
    }

    /// The aborted transactions that overlap `[fetch_offset, upper_bound)` (Kafka's
    /// `TransactionIndex.collectAbortedTxns`): marker at or after the fetch offset, first offset
    /// before the bound. The search stops at the first transaction whose last stable offset
    /// reaches the bound: every transaction aborted after it began at or after that offset.
    pub fn collect(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let from = self.txns.partition_point(|t| t.last_offset < fetch_offset);
        let mut out = Vec::new();
        for t in &self.txns[from..] {
            if t.first_offset < upper_bound {
                out.push(*t);
            }
            if t.last_stable_offset >= upper_bound {
                break;
            }
        }
        out
    }

    /// Whether the batch of `producer_id` ending at `last_offset` belongs to an aborted
    /// transaction. The search stops at the first transaction aborted after the batch whose
    /// last stable offset is past it: a transaction holding the batch was ongoing then.
    pub fn contains_batch(&self, producer_id: i64, last_offset: i64) -> bool {
        let from = self.txns.partition_point(|t| t.last_offset < last_offset);
        for t in &self.txns[from..] {
            if t.producer_id == producer_id && t.first_offset <= last_offset {
                return true;
            }
            if t.last_stable_offset > last_offset {
                return false;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn collect_finds_the_overlapping_transactions_as_kafka_does() {
        let mut index = AbortedIndex::default();
        // 1 aborted while 2 was ongoing (from 5): the LSO stayed at 5.
        index.push(txn(1, 0, 10, 5));
        index.push(txn(2, 5, 20, 21));
        index.push(txn(3, 30, 40, 41));
        let pids = |v: Vec<AbortedTxn>| v.iter().map(|t| t.producer_id).collect::<Vec<_>>();
        assert_eq!(pids(index.collect(0, 50)), vec![1, 2, 3]);
        assert_eq!(pids(index.collect(11, 25)), vec![2]);
        assert_eq!(pids(index.collect(0, 3)), vec![1]);
        assert_eq!(pids(index.collect(21, 30)), Vec::<i64>::new());
        assert_eq!(pids(index.collect(41, 60)), Vec::<i64>::new());
        assert!(index.contains_batch(2, 7));
        assert!(index.contains_batch(1, 3));
        assert!(!index.contains_batch(1, 12));
        assert!(!index.contains_batch(3, 25));
        index.remove_below(11);
        assert_eq!(pids(index.collect(0, 50)), vec![2, 3]);
    }
}
