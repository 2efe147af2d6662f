//! What the transactional producers were told, and the simulated data plane the marker writer
//! writes to: the promises of the transaction coordinator, checked after every step and at the
//! end of a run.
//!
//! A transaction is named by its transactional id and the time its first partition was added
//! ([`TxnId`]): the driver moves the clock before every AddPartitionsToTxn, so no two
//! transactions of one id share it, and the coordinator keeps it through every later
//! transition (a fence, the decision), so the marker writer names the transaction it writes
//! markers for as the producers named the one they wrote in. At transaction version 2 the
//! marker carries the epoch EndTxn bumped to (data written at epoch E, the marker at E + 1):
//! the name, not the epoch, matches markers to transactions.
use std::collections::{BTreeMap, BTreeSet};

use super::model::{Kind, Violation};

/// (transactional id, `txn_start_timestamp`).
pub type TxnId = (String, i64);

/// A partition of the data plane, or `__consumer_offsets-0` (the group shard).
pub type Partition = (String, i32);

/// One entry of a partition: a producer's record inside a transaction, or a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Data {
        txn: TxnId,
        producer_id: i64,
        producer_epoch: i16,
    },
    Marker {
        txn: TxnId,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        /// The transaction version it is written at.
        version: i16,
    },
}

/// Per partition, what the producers and the marker writer wrote, in order. Nothing here is
/// lost in a crash: the data plane is durable on its own.
#[derive(Debug, Default)]
pub struct DataPlane {
    partitions: BTreeMap<Partition, Vec<Entry>>,
}

impl DataPlane {
    pub fn produce(&mut self, partition: &Partition, txn: &TxnId, ids: (i64, i16)) {
        let entries = self.partitions.entry(partition.clone()).or_default();
        entries.push(Entry::Data {
            txn: txn.clone(),
            producer_id: ids.0,
            producer_epoch: ids.1,
        });
    }

    /// A marker: it closes the producer's open records on the partition, which must all be of
    /// the transaction it settles (a record of another transaction left open would hang), and
    /// written at an epoch the partition accepts: not below theirs, and at version 2 above it
    /// (the epoch EndTxn or the coordinator's abort bumped to).
    pub fn marker(&mut self, partition: &Partition, marker: Entry) -> Result<(), Violation> {
        let Entry::Marker {
            txn,
            producer_id,
            producer_epoch,
            version,
            ..
        } = &marker
        else {
            return Ok(());
        };
        let entries = self.partitions.entry(partition.clone()).or_default();
        let open = entries.iter().rev().take_while(|e| match e {
            Entry::Marker { producer_id: p, .. } => p != producer_id,
            Entry::Data { .. } => true,
        });
        let mine = open.filter_map(|e| match e {
            Entry::Data {
                txn: other,
                producer_id: p,
                producer_epoch: e,
            } if p == producer_id => Some((other, *e)),
            _ => None,
        });
        for (other, epoch) in mine {
            if other != txn {
                return Err(Violation::new(
                    Kind::ConflictingMarkers,
                    format!("{partition:?}: the marker of {txn:?} closes records of {other:?}"),
                ));
            }
            let accepted = match *version >= 2 {
                true => *producer_epoch > epoch,
                false => *producer_epoch >= epoch,
            };
            if !accepted {
                return Err(Violation::new(
                    Kind::ProducerEpochWentBack,
                    format!(
                        "{partition:?}: the marker of {txn:?} at version {version} carries \
                         epoch {producer_epoch}, its records epoch {epoch}"
                    ),
                ));
            }
        }
        entries.push(marker);
        Ok(())
    }

    /// Whether `partition` holds a marker of `txn` with outcome `commit`.
    pub fn has_marker(&self, partition: &Partition, txn: &TxnId, commit: bool) -> bool {
        self.partitions.get(partition).is_some_and(|entries| {
            entries.iter().any(|e| {
                matches!(e, Entry::Marker { txn: t, commit: c, .. } if t == txn && *c == commit)
            })
        })
    }
}

/// What the producers were told, and the outcome of every transaction as far as it is known.
#[derive(Debug, Default)]
pub struct TxnModel {
    /// The latest producer id and epoch handed out for each transactional id, by an
    /// acknowledged InitProducerId grant or (version 2) EndTxn answer: an older epoch (or
    /// another producer id) is fenced, unless it is a version-2 EndTxn retrying an answer that
    /// was lost (the coordinator recognises it by its epoch, one below).
    grants: BTreeMap<String, (i64, i16)>,
    /// The highest epoch acknowledged answers handed out for each producer id: a version-2
    /// EndTxn must hand out a higher one.
    handed_out: BTreeMap<i64, i16>,
    /// The outcome of each transaction: from an acknowledged EndTxn, from a decision the marker
    /// writer read (durable), or from a marker.
    outcomes: BTreeMap<TxnId, bool>,
    /// Transactions whose EndTxn(commit) was acknowledged.
    acked_commits: BTreeSet<TxnId>,
    /// The partitions each transaction was acknowledged to have added.
    added: BTreeMap<TxnId, BTreeSet<Partition>>,
    /// Transactional offset commits: offset value -> (transaction, partition), each value
    /// unique; and the values whose commit was acknowledged.
    owners: BTreeMap<i64, (TxnId, Partition)>,
    acked_offsets: BTreeSet<i64>,
}

impl TxnModel {
    /// An InitProducerId grant was acknowledged.
    pub fn granted(&mut self, transactional_id: &str, producer_id: i64, epoch: i16) {
        self.grants
            .insert(transactional_id.to_owned(), (producer_id, epoch));
        let highest = self.handed_out.entry(producer_id).or_insert(epoch);
        *highest = (*highest).max(epoch);
    }

    /// A version-2 EndTxn was acknowledged NONE with the producer id and epoch to go on with:
    /// no acknowledged answer handed that epoch (or a later one) out for that producer id
    /// before, and it is the id's latest.
    pub fn end_answered(
        &mut self,
        transactional_id: &str,
        (producer_id, epoch): (i64, i16),
    ) -> Result<(), Violation> {
        if let Some(&highest) = self.handed_out.get(&producer_id) {
            if epoch <= highest {
                return Err(Violation::new(
                    Kind::ProducerEpochWentBack,
                    format!(
                        "EndTxn of {transactional_id} handed out epoch {epoch} of producer id \
                         {producer_id}, after an acknowledged answer handed out {highest}"
                    ),
                ));
            }
        }
        self.granted(transactional_id, producer_id, epoch);
        Ok(())
    }

    /// An AddPartitionsToTxn or EndTxn was acknowledged NONE: the producer must not be fenced
    /// by a grant acknowledged before (answers go out in the order the shard applied them).
    pub fn check_not_fenced(
        &self,
        what: &str,
        transactional_id: &str,
        ids: (i64, i16),
    ) -> Result<(), Violation> {
        match self.grants.get(transactional_id) {
            Some(&latest) if latest != ids => Err(Violation::new(
                Kind::FencedAcknowledged,
                format!(
                    "{what} of {transactional_id} at (producer id, epoch) {ids:?} was \
                     acknowledged after {latest:?} was granted"
                ),
            )),
            _ => Ok(()),
        }
    }

    pub fn added(&mut self, txn: &TxnId, partitions: &[Partition]) {
        let added = self.added.entry(txn.clone()).or_default();
        added.extend(partitions.iter().cloned());
    }

    /// A transactional offset commit was sent (its records may reach the file even if it is
    /// refused).
    pub fn offset_sent(&mut self, value: i64, txn: &TxnId, partition: Partition) {
        self.owners.insert(value, (txn.clone(), partition));
    }

    pub fn offset_acknowledged(&mut self, value: i64) {
        self.acked_offsets.insert(value);
    }

    /// The outcome of `txn` became known (`source` says how); it must agree with what was
    /// known before.
    pub fn decided(&mut self, txn: &TxnId, commit: bool, source: &str) -> Result<(), Violation> {
        if let Some(&known) = self.outcomes.get(txn) {
            if known != commit {
                let word = |c: bool| if c { "commit" } else { "abort" };
                return Err(Violation::new(
                    Kind::ConflictingMarkers,
                    format!(
                        "{txn:?}: {source} says {}, but it was decided {} before",
                        word(commit),
                        word(known)
                    ),
                ));
            }
        }
        self.outcomes.insert(txn.clone(), commit);
        Ok(())
    }

    /// An EndTxn(commit) was acknowledged.
    pub fn commit_acknowledged(&mut self, txn: &TxnId) -> Result<(), Violation> {
        self.acked_commits.insert(txn.clone());
        self.decided(txn, true, "an acknowledged EndTxn")
    }

    /// After every step: every committed offset of the transactional group was written by a
    /// transaction decided commit (an aborted or undecided one's offsets stay pending or go).
    pub fn check_committed(&self, committed: &BTreeMap<Partition, i64>) -> Result<(), Violation> {
        for (partition, value) in committed {
            let Some((txn, _)) = self.owners.get(value) else {
                continue;
            };
            if self.outcomes.get(txn) != Some(&true) {
                return Err(Violation::new(
                    Kind::AbortedOffsetsCommitted,
                    format!(
                        "{partition:?} holds {value}, written by {txn:?}, whose outcome is {:?}",
                        self.outcomes.get(txn)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// At the end of a run, once every marker is written: every transaction whose commit was
    /// acknowledged has a COMMIT marker in every partition it added, and each of its
    /// acknowledged offsets is committed (or a later write of its partition is).
    pub fn check_completed(
        &self,
        plane: &DataPlane,
        committed: &BTreeMap<Partition, i64>,
    ) -> Result<(), Violation> {
        for txn in &self.acked_commits {
            let added = self.added.get(txn).into_iter().flatten();
            if let Some(partition) = added.into_iter().find(|p| !plane.has_marker(p, txn, true)) {
                return Err(Violation::new(
                    Kind::TxnNotCompleted,
                    format!("{txn:?} was acknowledged committed, but {partition:?} has no COMMIT marker of it"),
                ));
            }
        }
        for value in &self.acked_offsets {
            let (txn, partition) = &self.owners[value];
            if !self.acked_commits.contains(txn) {
                continue;
            }
            let held = committed.get(partition).copied();
            if held.is_none_or(|held| held < *value) {
                return Err(Violation::new(
                    Kind::TxnNotCompleted,
                    format!(
                        "{txn:?} was acknowledged committed with {partition:?} at {value}, \
                         but the group holds {held:?}"
                    ),
                ));
            }
        }
        Ok(())
    }
}
