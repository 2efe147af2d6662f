//! What the classic group's and the consumer group's clients were told, and the promises
//! checked against it and against the shard after every step.
//!
//! A classic group's generation is written only with the leader's assignment (and when the
//! group empties or a static member takes its place), not when a join phase completes, so a
//! JoinGroup answer can name a generation that a crash takes back, as in Kafka. A SyncGroup
//! answer is acknowledged only once the job that stored its assignment is durable: the
//! generations SyncGroup answers handed out are the floor a crash may not go under.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_coordinator::classic::ClassicGroup;
use kcoord_metadata::ConsumerGroup;

use super::model::{Kind, Violation};

/// The classic group, as its members were told.
#[derive(Debug, Default)]
pub struct ClassicModel {
    /// Bumped when the group is deleted: what was told of an older one binds no more.
    pub incarnation: u64,
    /// The group existed after the last step.
    present: bool,
    /// The highest generation a SyncGroup answer handed out.
    floor: i32,
    /// generation -> member (its instance id if static, else its member id) -> the partitions
    /// acknowledged SyncGroup answers gave it.
    synced: BTreeMap<i32, BTreeMap<String, Vec<i32>>>,
    /// generation -> member -> the partitions the leader's SyncGroup assigned it.
    sent: BTreeMap<i32, BTreeMap<String, Vec<i32>>>,
    /// client -> (the highest generation it was answered since the last rollback, the highest
    /// a SyncGroup answer gave it).
    seen: BTreeMap<usize, (i32, i32)>,
}

impl ClassicModel {
    /// The leader sent its assignment of `generation`.
    pub fn leader_sent(&mut self, generation: i32, assignment: BTreeMap<String, Vec<i32>>) {
        self.sent.insert(generation, assignment);
    }

    /// A JoinGroup answer (or a SyncGroup's, through [`ClassicModel::synced`]) named
    /// `generation` to `client`: never lower than a generation it was answered before, unless
    /// a crash took that back, nor lower than a generation a SyncGroup answer handed out.
    pub fn answered(&mut self, client: usize, generation: i32) -> Result<(), Violation> {
        let (seen, _) = self.seen.entry(client).or_default();
        if generation < *seen || generation < self.floor {
            return Err(Violation::new(
                Kind::EpochWentBack,
                format!(
                    "classic member {client} was answered generation {generation} after {} (SyncGroup answers reached {})",
                    *seen, self.floor
                ),
            ));
        }
        *seen = generation;
        Ok(())
    }

    /// A SyncGroup answer gave `member` `partitions` in `generation`: what the leader sent it,
    /// and nothing another member of the generation was given.
    pub fn synced(
        &mut self,
        client: usize,
        member: &str,
        generation: i32,
        partitions: &[i32],
    ) -> Result<(), Violation> {
        self.answered(client, generation)?;
        self.seen.entry(client).or_default().1 = generation;
        self.floor = self.floor.max(generation);
        if let Some(sent) = self.sent.get(&generation) {
            let expected = sent.get(member).map_or(&[][..], Vec::as_slice);
            if expected != partitions {
                return Err(Violation::new(
                    Kind::AssignmentChanged,
                    format!(
                        "classic generation {generation}: {member} was given {partitions:?}, the leader assigned it {expected:?}"
                    ),
                ));
            }
        }
        let given = self.synced.entry(generation).or_default();
        for (other, theirs) in given.iter().filter(|(other, _)| *other != member) {
            if let Some(p) = partitions.iter().find(|p| theirs.contains(p)) {
                return Err(Violation::new(
                    Kind::PartitionOwnedTwice,
                    format!("classic generation {generation}: partition {p} given to {other} and {member}"),
                ));
            }
        }
        given.insert(member.to_owned(), partitions.to_vec());
        Ok(())
    }

    /// After every step: the group holds at least the generation SyncGroup answers handed
    /// out. After a rollback what JoinGroup answers alone told may be gone.
    pub fn check(
        &mut self,
        group: Option<&ClassicGroup>,
        rolled_back: bool,
    ) -> Result<(), Violation> {
        if rolled_back {
            for (seen, synced) in self.seen.values_mut() {
                *seen = *synced;
            }
        }
        let Some(group) = group else {
            if self.present && rolled_back && self.floor > 0 {
                return Err(Violation::new(
                    Kind::LostAcknowledged,
                    format!("the classic group is gone, but a SyncGroup answer handed out generation {}", self.floor),
                ));
            }
            // Deleted (empty, with no offsets): a group created again starts over.
            if self.present {
                let incarnation = self.incarnation + 1;
                *self = ClassicModel {
                    incarnation,
                    ..Default::default()
                };
            }
            return Ok(());
        };
        self.present = true;
        if group.generation_id < self.floor {
            return Err(Violation::new(
                Kind::LostAcknowledged,
                format!(
                    "the classic group is at generation {}, but a SyncGroup answer handed out generation {}",
                    group.generation_id, self.floor
                ),
            ));
        }
        Ok(())
    }
}

/// The consumer group, as its members were told.
#[derive(Debug, Default)]
pub struct ConsumerModel {
    /// Bumped when the group is deleted: what was told of an older one binds no more.
    pub incarnation: u64,
    present: bool,
    /// member id -> the highest member epoch an answer gave it.
    epochs: BTreeMap<String, i32>,
    /// The highest member epoch an answer gave.
    max_epoch: i32,
    /// (group epoch, target assignment epoch) after the last step.
    last: Option<(i32, i32)>,
}

impl ConsumerModel {
    pub fn acknowledged(&mut self, member_id: &str, epoch: i32) {
        let e = self.epochs.entry(member_id.to_owned()).or_insert(epoch);
        *e = (*e).max(epoch);
        self.max_epoch = self.max_epoch.max(epoch);
    }

    /// The member left, or was told it is fenced or unknown: its epoch binds no more.
    pub fn gone(&mut self, member_id: &str) {
        self.epochs.remove(member_id);
    }

    /// After every step: no partition is held by two members (assigned or still being
    /// revoked); no member is ahead of the target, nor the target of the group; epochs go
    /// back only in a rollback, and never below what was acknowledged.
    pub fn check(
        &mut self,
        group: Option<&ConsumerGroup>,
        rolled_back: bool,
    ) -> Result<(), Violation> {
        let Some(group) = group else {
            if self.present && rolled_back && self.max_epoch > 0 {
                return Err(Violation::new(
                    Kind::LostAcknowledged,
                    format!(
                        "the consumer group is gone, but a member was told epoch {}",
                        self.max_epoch
                    ),
                ));
            }
            if self.present {
                let incarnation = self.incarnation + 1;
                *self = ConsumerModel {
                    incarnation,
                    ..Default::default()
                };
            }
            return Ok(());
        };
        self.present = true;
        no_partition_held_twice(group)?;
        let epochs = (group.group_epoch, group.target_assignment_epoch);
        let lost = |what: String| Err(Violation::new(Kind::LostAcknowledged, what));
        if epochs.0.min(epochs.1) < self.max_epoch {
            return lost(format!(
                "consumer group (group epoch, target epoch) {epochs:?}, but a member was told epoch {}",
                self.max_epoch
            ));
        }
        for (id, m) in &group.members {
            if m.member_epoch > epochs.1 || epochs.1 > epochs.0 {
                return Err(Violation::new(
                    Kind::EpochWentBack,
                    format!(
                        "consumer member {id} at epoch {} ahead of the group's {epochs:?}",
                        m.member_epoch
                    ),
                ));
            }
            let told = self.epochs.get(id.as_str()).copied().unwrap_or(0);
            if m.member_epoch >= 0 && m.member_epoch < told {
                return lost(format!(
                    "consumer member {id} is at epoch {}, but was told {told}",
                    m.member_epoch
                ));
            }
        }
        if let Some(last) = self
            .last
            .filter(|l| !rolled_back && (epochs.0 < l.0 || epochs.1 < l.1))
        {
            return Err(Violation::new(
                Kind::EpochWentBack,
                format!(
                    "consumer group (group epoch, target epoch) went from {last:?} to {epochs:?}"
                ),
            ));
        }
        self.last = Some(epochs);
        Ok(())
    }
}

/// Kafka's reconciliation promise, as the coordinator sees it: a partition moves to a new
/// owner only once the old one has revoked it, so no two members hold it.
fn no_partition_held_twice(group: &ConsumerGroup) -> Result<(), Violation> {
    let mut holders: BTreeMap<(uuid::Uuid, i32), &str> = BTreeMap::new();
    for m in group.members.values() {
        for held in [&m.assigned, &m.pending_revocation] {
            for (topic, partitions) in held {
                for p in partitions.keys() {
                    if let Some(other) = holders.insert((*topic, *p), &m.member_id) {
                        return Err(Violation::new(
                            Kind::PartitionOwnedTwice,
                            format!(
                                "consumer group: partition {topic}:{p} held by {other} and {}",
                                m.member_id
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// (topic id, partition).
type Partition = (uuid::Uuid, i32);

/// Two consumers at the same member epoch of one incarnation of the group never own the same
/// partition (a fenced zombie still believes it owns what it had, at an older epoch).
pub fn same_epoch_owners_disjoint<'a>(
    owners: impl Iterator<Item = (&'a str, (u64, i32), BTreeSet<Partition>)>,
) -> Result<(), Violation> {
    let mut by_epoch: BTreeMap<(u64, i32), BTreeMap<Partition, &str>> = BTreeMap::new();
    for (name, epoch, owned) in owners {
        let seen = by_epoch.entry(epoch).or_default();
        for partition in owned {
            if let Some(other) = seen.insert(partition, name) {
                return Err(Violation::new(
                    Kind::PartitionOwnedTwice,
                    format!("consumers {other} and {name} both own {partition:?} at (incarnation, epoch) {epoch:?}"),
                ));
            }
        }
    }
    Ok(())
}
