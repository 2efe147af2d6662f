//! What the clients were told: every acknowledged offset commit and deletion, applied in the
//! order the acknowledgments came (one shard runs one job at a time and answers in offset
//! order, so that is the order the shard applied them in), and the highest member epoch each
//! group acknowledged. The shard must never hold less than this, and, once nothing is
//! waiting for the disk, nothing more for offsets.
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use kcoord_metadata::LogState;

/// Which promise a violation broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Something a client was told is done is gone.
    LostAcknowledged,
    /// Memory or the file holds a change no client was told is done, with nothing waiting
    /// for it.
    UnacknowledgedKept,
    /// An active task is owned by two members of a group.
    TaskOwnedTwice,
    /// A group or target assignment epoch went back, or a member's epoch is ahead of its
    /// group's target.
    EpochWentBack,
    /// A request was answered from committed offsets other than the acknowledged ones: it saw
    /// a change that was not yet durable (and may still be lost), or missed one that was.
    AnswerDisagrees,
    /// An answer no client could act on: a heartbeat that keeps a member in its group with a
    /// member epoch below 1 (Kafka 4.4's groups start at epoch 1, KAFKA-20268); or a retried
    /// version-2 EndTxn answered NONE with other than the answer that was lost.
    BadAnswer,
    /// Replaying the log (memory's, or the file's) does not give the live state.
    ReplayDiffers,
    /// A transaction got both outcomes: a COMMIT and an ABORT marker, a marker against its
    /// acknowledged EndTxn, or a marker closing another transaction's records.
    ConflictingMarkers,
    /// A transaction whose commit was acknowledged lacks a COMMIT marker or its offsets once
    /// every marker is written, or is still prepared.
    TxnNotCompleted,
    /// An offset of a transaction not decided commit became a committed offset.
    AbortedOffsetsCommitted,
    /// A fenced producer (an older epoch or producer id) was acknowledged an AddPartitionsToTxn
    /// or EndTxn.
    FencedAcknowledged,
    /// A producer epoch went back: a version-2 EndTxn handed out an epoch an acknowledged
    /// answer had already handed out for its producer id (or a lower one), or a marker carries
    /// an epoch below that of the records it closes (at version 2: not above it).
    ProducerEpochWentBack,
    /// A partition is held by two members of a consumer group, given to two members of one
    /// classic generation, or owned by two consumers at one member epoch.
    PartitionOwnedTwice,
    /// A classic member's SyncGroup answer is not what the leader assigned it.
    AssignmentChanged,
    /// At the end of a run, with every write durable and every client active, a classic or
    /// consumer group did not settle with every member stable and every partition assigned.
    NotConverged,
    /// The runtime caught a handler panic, a batch that does not replay, or a diverged state;
    /// or the shard's file does not load (the file log calls it corrupt).
    RuntimeRefused,
}

#[derive(Debug, Clone)]
pub struct Violation {
    pub kind: Kind,
    pub detail: String,
}

impl Violation {
    pub fn new(kind: Kind, detail: impl Into<String>) -> Violation {
        Violation {
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.detail)
    }
}

/// (group, topic, partition).
pub type OffsetKey = (String, String, i32);

/// The acknowledged changes.
#[derive(Debug, Default)]
pub struct Acknowledged {
    /// The committed offset of each partition, as the acknowledged commits and deletions left
    /// it. Every commit carries an offset value no other commit used.
    offsets: BTreeMap<OffsetKey, i64>,
    /// Every offset value a client was told is committed.
    ever_committed: BTreeSet<i64>,
    /// group -> (incarnation, highest member epoch acknowledged to one of its members).
    member_epochs: BTreeMap<String, (u64, i32)>,
    /// (group, member id) of every dynamic member whose leave was acknowledged: its id is
    /// never used again, so it must never be back in its group.
    left: BTreeSet<(String, String)>,
}

impl Acknowledged {
    pub fn committed(&mut self, group: &str, topic: &str, partition: i32, offset: i64) {
        self.offsets
            .insert((group.into(), topic.into(), partition), offset);
        self.ever_committed.insert(offset);
    }

    pub fn offset_deleted(&mut self, group: &str, topic: &str, partition: i32) {
        self.offsets
            .remove(&(group.to_owned(), topic.to_owned(), partition));
    }

    pub fn group_deleted(&mut self, group: &str) {
        self.offsets.retain(|(g, _, _), _| g != group);
        self.member_epochs.remove(group);
    }

    /// A member of `group` was told its epoch is `epoch`; the request was sent while the group
    /// was in `incarnation` (see [`EpochWatch`]).
    pub fn member_epoch(&mut self, group: &str, incarnation: u64, epoch: i32) {
        let entry = self
            .member_epochs
            .entry(group.into())
            .or_insert((incarnation, epoch));
        if incarnation > entry.0 {
            *entry = (incarnation, epoch);
        } else if incarnation == entry.0 {
            entry.1 = entry.1.max(epoch);
        }
    }

    /// A dynamic member's leave was acknowledged.
    pub fn member_left(&mut self, group: &str, member_id: &str) {
        self.left.insert((group.into(), member_id.into()));
    }

    /// No member whose leave was acknowledged is back.
    pub fn check_left(&self, state: &LogState) -> Result<(), Violation> {
        for (group_id, member_id) in &self.left {
            let group = state.streams_groups.get(group_id);
            if group.is_some_and(|g| g.members.contains_key(member_id.as_str())) {
                return Err(Violation::new(
                    Kind::LostAcknowledged,
                    format!(
                        "member {member_id} of {group_id} is back after its acknowledged leave"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The shard's committed offsets must be exactly the acknowledged ones.
    pub fn check_offsets(&self, state: &LogState, which: &str) -> Result<(), Violation> {
        self.compare(&live_offsets(state), which)
    }

    /// The committed offsets a request's job read, when its answer is acknowledged, must be
    /// exactly the acknowledged ones.
    pub fn check_read(&self, read: &BTreeMap<OffsetKey, i64>) -> Result<(), Violation> {
        self.compare(read, "the offsets its job read")
            .map_err(|v| Violation::new(Kind::AnswerDisagrees, v.detail))
    }

    fn compare(&self, live: &BTreeMap<OffsetKey, i64>, which: &str) -> Result<(), Violation> {
        for (key, offset) in &self.offsets {
            match live.get(key) {
                None => {
                    return Err(Violation::new(
                        Kind::LostAcknowledged,
                        format!("{which}: the acknowledged commit of {key:?} at {offset} is gone"),
                    ))
                }
                Some(held) if held != offset => {
                    return Err(self.mismatch(key, *offset, *held, which));
                }
                Some(_) => {}
            }
        }
        if let Some((key, held)) = live.iter().find(|(k, _)| !self.offsets.contains_key(*k)) {
            let kind = if self.ever_committed.contains(held) {
                // An older acknowledged commit survived an acknowledged deletion.
                Kind::LostAcknowledged
            } else {
                Kind::UnacknowledgedKept
            };
            let detail = format!(
                "{which}: {key:?} holds {held}; the acknowledged commits and deletions leave it empty"
            );
            return Err(Violation::new(kind, detail));
        }
        Ok(())
    }

    fn mismatch(&self, key: &OffsetKey, acked: i64, held: i64, which: &str) -> Violation {
        let kind = if self.ever_committed.contains(&held) {
            Kind::LostAcknowledged
        } else {
            Kind::UnacknowledgedKept
        };
        Violation::new(
            kind,
            format!("{which}: {key:?} holds {held}, the last acknowledged commit was {acked}"),
        )
    }

    /// Every group holds at least the epochs its members were told, in the group's current
    /// incarnation.
    pub fn check_member_epochs(
        &self,
        state: &LogState,
        watch: &EpochWatch,
    ) -> Result<(), Violation> {
        for (group_id, &(incarnation, epoch)) in &self.member_epochs {
            if incarnation != watch.incarnation(group_id) || epoch <= 0 {
                continue;
            }
            let Some(group) = state.streams_groups.get(group_id) else {
                return Err(Violation::new(
                    Kind::LostAcknowledged,
                    format!("group {group_id} is gone, but a member was told epoch {epoch}"),
                ));
            };
            if group.group_epoch < epoch || group.target_assignment_epoch < epoch {
                return Err(Violation::new(
                    Kind::LostAcknowledged,
                    format!(
                        "group {group_id} is at epoch {} (target {}), but a member was told epoch {epoch}",
                        group.group_epoch, group.target_assignment_epoch
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The changes of requests a crash refused after their records may have reached the file:
/// their clients do not know whether they were made.
#[derive(Debug, Default)]
pub struct MaybeMade {
    pub commits: BTreeSet<(OffsetKey, i64)>,
    pub deleted: BTreeSet<OffsetKey>,
    pub groups_deleted: BTreeSet<String>,
}

impl Acknowledged {
    /// After a crash, takes the changes of `maybe` that the restarted shard has (each
    /// partition on its own: a batch may have reached the file in part). Any other difference
    /// is left for [`Acknowledged::check_offsets`] to report.
    pub fn absorb(&mut self, state: &LogState, maybe: &MaybeMade) {
        let live = live_offsets(state);
        let keys: BTreeSet<OffsetKey> = live.keys().chain(self.offsets.keys()).cloned().collect();
        for key in keys {
            match (self.offsets.get(&key), live.get(&key)) {
                (acked, held) if acked == held => {}
                (_, Some(&held)) if maybe.commits.contains(&(key.clone(), held)) => {
                    self.offsets.insert(key, held);
                    self.ever_committed.insert(held);
                }
                (Some(_), None)
                    if maybe.deleted.contains(&key) || maybe.groups_deleted.contains(&key.0) =>
                {
                    self.offsets.remove(&key);
                }
                _ => {}
            }
        }
    }
}

/// (group, topic, partition) -> offset, of the shard's state; the transactional producers'
/// group is the transactions model's (`txn_model.rs`).
pub fn live_offsets(state: &LogState) -> BTreeMap<OffsetKey, i64> {
    state
        .offsets
        .iter()
        .filter(|(group, _)| *group != super::producers::TXN_GROUP)
        .flat_map(|(group, offsets)| {
            offsets.iter().map(move |((topic, partition), committed)| {
                (
                    (group.to_owned(), topic.clone(), *partition),
                    committed.offset,
                )
            })
        })
        .collect()
}

/// The groups' epochs after the last step, and each group's incarnation: bumped whenever the
/// group was seen gone, so that the epochs of a deleted group do not bind the group created
/// again under its name (which starts over at epoch 1).
#[derive(Debug, Default)]
pub struct EpochWatch {
    /// group -> (group epoch, target assignment epoch).
    last: BTreeMap<String, (i32, i32)>,
    incarnations: BTreeMap<String, u64>,
}

impl EpochWatch {
    pub fn incarnation(&self, group: &str) -> u64 {
        self.incarnations.get(group).copied().unwrap_or(0)
    }

    /// Compares the groups' epochs with the last step's. After a rollback (a failed write, a
    /// crash) they may go back, to no less than what was acknowledged, which
    /// [`Acknowledged::check_member_epochs`] checks.
    pub fn observe(&mut self, state: &LogState, rolled_back: bool) -> Result<(), Violation> {
        let now: BTreeMap<String, (i32, i32)> = state
            .streams_groups
            .iter()
            .map(|g| {
                let epochs = (g.group_epoch, g.target_assignment_epoch);
                (g.group_id.clone(), epochs)
            })
            .collect();
        for (group, before) in &self.last {
            match now.get(group) {
                None => *self.incarnations.entry(group.clone()).or_default() += 1,
                Some(after) if !rolled_back && (after.0 < before.0 || after.1 < before.1) => {
                    return Err(Violation::new(
                        Kind::EpochWentBack,
                        format!("group {group}: (group epoch, target epoch) went from {before:?} to {after:?}"),
                    ));
                }
                Some(_) => {}
            }
        }
        self.last = now;
        Ok(())
    }
}
