//! Consumer groups (KIP-848) as the coordinator records 3-8 and 16 describe them.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_wire::records::{
    consumer_group_current_member_assignment_value as current,
    ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue, ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataValue,
};
use uuid::Uuid;

use super::keyed_map::{Keyed, KeyedMap};
use super::streams::{entry_by_str, Id, INITIAL_GROUP_EPOCH};
use super::vec_map::{VecMap, VecSet};

/// Topic id -> partitions: a target assignment. Sorted vectors, not B-trees: a member usually
/// holds one or two topics, and a B-tree spends a node of hundreds of bytes on one entry.
pub type TopicPartitions = VecMap<Uuid, VecSet<i32>>;

/// Topic id -> partition -> the member epoch at which the member was given it (KIP-1251:
/// a commit at an older epoch than the partition's is a zombie's).
pub type PartitionEpochs = VecMap<Uuid, VecMap<i32, i32>>;

/// Member states of the consumer protocol (Kafka's `MemberState`), as stored in record 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsumerMemberState {
    #[default]
    Stable,
    UnrevokedPartitions,
    UnreleasedPartitions,
    Unknown,
}

impl ConsumerMemberState {
    pub fn code(self) -> i8 {
        match self {
            ConsumerMemberState::Stable => 1,
            ConsumerMemberState::UnrevokedPartitions => 2,
            ConsumerMemberState::UnreleasedPartitions => 3,
            ConsumerMemberState::Unknown => 127,
        }
    }

    pub fn from_code(code: i8) -> Self {
        match code {
            1 => ConsumerMemberState::Stable,
            2 => ConsumerMemberState::UnrevokedPartitions,
            3 => ConsumerMemberState::UnreleasedPartitions,
            _ => ConsumerMemberState::Unknown,
        }
    }
}

/// One member: its subscription (record 5) and its current assignment (record 8).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupMember {
    pub member_id: Id,
    /// What few members have, behind one pointer ([`ConsumerMemberExtras`]).
    extras: Option<Box<ConsumerMemberExtras>>,
    pub client_id: Id,
    pub client_host: Id,
    /// Sorted, as Kafka writes them.
    pub subscribed_topic_names: VecSet<String>,
    /// Empty when the member subscribes by name only (Kafka's member default is "").
    pub subscribed_topic_regex: String,
    pub rebalance_timeout_ms: i32,
    /// Kept so that a member written by a classic-protocol consumer round-trips; boxed, as only
    /// such members have it (8 bytes in every member instead of 56).
    pub classic_member_metadata: Option<
        Box<kcoord_wire::records::consumer_group_member_metadata_value::ClassicMemberMetadata>,
    >,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: ConsumerMemberState,
    pub assigned: PartitionEpochs,
    pub pending_revocation: PartitionEpochs,
}

impl ConsumerGroupMember {
    /// A member as Kafka's `ConsumerGroupMember.Builder(memberId)` makes it.
    pub fn new(member_id: &str) -> Self {
        ConsumerGroupMember {
            member_id: member_id.into(),
            extras: None,
            client_id: Id::default(),
            client_host: Id::default(),
            subscribed_topic_names: VecSet::new(),
            subscribed_topic_regex: String::new(),
            rebalance_timeout_ms: -1,
            classic_member_metadata: None,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: ConsumerMemberState::Stable,
            assigned: PartitionEpochs::new(),
            pending_revocation: PartitionEpochs::new(),
        }
    }

    pub fn instance_id(&self) -> Option<&str> {
        self.extras.as_ref()?.instance_id.as_deref()
    }

    pub fn rack_id(&self) -> Option<&str> {
        self.extras.as_ref()?.rack_id.as_deref()
    }

    pub fn server_assignor(&self) -> Option<&str> {
        self.extras.as_ref()?.server_assignor.as_deref()
    }

    /// Changes the member's extras, boxed on first use; extras left all empty are not kept
    /// boxed, so a member whose last extra was cleared equals one that never had any.
    pub fn change_extras(&mut self, change: impl FnOnce(&mut ConsumerMemberExtras)) {
        super::change_boxed(&mut self.extras, change);
    }

    /// `isReconciledTo`.
    pub fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == ConsumerMemberState::Stable && self.member_epoch == epoch
    }

    pub fn uses_classic_protocol(&self) -> bool {
        self.classic_member_metadata.is_some()
    }
}

/// What few consumer members have: static membership, a rack, a server assignor of their own.
/// A member without any holds no box: 8 bytes instead of 72.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumerMemberExtras {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub server_assignor: Option<String>,
}

/// A regular expression resolved to topic names (record 16).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedRegex {
    pub topics: BTreeSet<String>,
    pub version: i64,
    pub timestamp: i64,
}

impl Keyed for ConsumerGroupMember {
    type Key = Id;

    fn key(&self) -> &Id {
        &self.member_id
    }
}

/// A consumer group: metadata (3), target assignment (6, 7), members (5, 8), regexes (16).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    pub target_assignment_epoch: i32,
    pub target_assignment_timestamp: i64,
    pub target_assignment: VecMap<Id, TopicPartitions>,
    /// By the member id each member holds (kept once, not also as a map key).
    pub members: KeyedMap<ConsumerGroupMember>,
    pub resolved_regexes: BTreeMap<String, ResolvedRegex>,
    /// Whether a (deprecated) ConsumerGroupPartitionMetadata record is live, so that the next
    /// epoch bump writes its tombstone as Kafka 4.4 does.
    pub has_partition_metadata: bool,
}

impl ConsumerGroup {
    /// A group as Kafka creates it: group epoch 1, target assignment epoch 1.
    pub fn new(group_id: &str) -> Self {
        ConsumerGroup {
            group_id: group_id.to_string(),
            group_epoch: INITIAL_GROUP_EPOCH,
            metadata_hash: 0,
            target_assignment_epoch: INITIAL_GROUP_EPOCH,
            target_assignment_timestamp: 0,
            target_assignment: VecMap::new(),
            members: KeyedMap::default(),
            resolved_regexes: BTreeMap::new(),
            has_partition_metadata: false,
        }
    }

    /// The member holding `instance_id`, if any.
    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.members
            .values()
            .find(|m| m.instance_id() == Some(instance_id))
    }

    /// The epoch of the member that owns or is revoking a partition, or -1 (Kafka's
    /// `currentPartitionEpoch`).
    pub fn current_partition_epoch(&self, topic: &Uuid, partition: i32) -> i32 {
        self.members
            .values()
            .find(|m| {
                m.assigned
                    .get(topic)
                    .is_some_and(|p| p.contains_key(&partition))
                    || m.pending_revocation
                        .get(topic)
                        .is_some_and(|p| p.contains_key(&partition))
            })
            .map_or(-1, |m| m.member_epoch)
    }

    /// How many members subscribe with `regex`.
    pub fn regex_subscribers(&self, regex: &str) -> usize {
        self.members
            .values()
            .filter(|m| m.subscribed_topic_regex == regex)
            .count()
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumerGroupsImage {
    groups: hashbrown::HashMap<Id, ConsumerGroup>,
}

impl ConsumerGroupsImage {
    pub fn get(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.groups.get(group_id)
    }

    /// The groups, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &ConsumerGroup> {
        self.groups.values()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn group_mut(&mut self, group_id: &str) -> &mut ConsumerGroup {
        entry_by_str(&mut self.groups, group_id, || ConsumerGroup::new(group_id))
    }

    fn member_mut<'a>(
        &'a mut self,
        group_id: &str,
        member_id: &str,
    ) -> &'a mut ConsumerGroupMember {
        self.group_mut(group_id)
            .members
            .get_or_insert_with(member_id, || ConsumerGroupMember::new(member_id))
    }

    pub(crate) fn replay_metadata(
        &mut self,
        group_id: &str,
        value: Option<&ConsumerGroupMetadataValue>,
    ) {
        let Some(v) = value else {
            // The group's own tombstone ends it; Kafka writes it after every other one.
            self.groups.remove(group_id);
            return;
        };
        let g = self.group_mut(group_id);
        g.group_epoch = v.epoch;
        g.metadata_hash = v.metadata_hash;
    }

    pub(crate) fn replay_partition_metadata(&mut self, group_id: &str, live: bool) {
        if live {
            self.group_mut(group_id).has_partition_metadata = true;
        } else if let Some(g) = self.groups.get_mut(group_id) {
            g.has_partition_metadata = false;
        }
    }

    pub(crate) fn replay_member_metadata(
        &mut self,
        group_id: &str,
        member_id: &str,
        value: Option<&ConsumerGroupMemberMetadataValue>,
    ) {
        let Some(v) = value else {
            if let Some(g) = self.groups.get_mut(group_id) {
                g.members.remove(member_id);
            }
            return;
        };
        let m = self.member_mut(group_id, member_id);
        m.change_extras(|e| {
            e.instance_id = v.instance_id.clone();
            e.rack_id = v.rack_id.clone();
            e.server_assignor = v.server_assignor.clone();
        });
        m.client_id = v.client_id.as_str().into();
        m.client_host = v.client_host.as_str().into();
        m.subscribed_topic_names = v.subscribed_topic_names.iter().cloned().collect();
        m.subscribed_topic_regex = v.subscribed_topic_regex.clone().unwrap_or_default();
        m.rebalance_timeout_ms = v.rebalance_timeout_ms;
        m.classic_member_metadata = v.classic_member_metadata.clone().map(Box::new);
    }

    pub(crate) fn replay_target_metadata(
        &mut self,
        group_id: &str,
        value: Option<&ConsumerGroupTargetAssignmentMetadataValue>,
    ) {
        match value {
            Some(v) => {
                let g = self.group_mut(group_id);
                g.target_assignment_epoch = v.assignment_epoch;
                g.target_assignment_timestamp = v.assignment_timestamp;
            }
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.target_assignment_epoch = -1;
                    g.target_assignment_timestamp = 0;
                }
            }
        }
    }

    pub(crate) fn replay_target_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        value: Option<&ConsumerGroupTargetAssignmentMemberValue>,
    ) {
        match value {
            Some(v) => {
                let partitions = v
                    .topic_partitions
                    .iter()
                    .map(|t| (t.topic_id, t.partitions.iter().copied().collect()))
                    .collect();
                self.group_mut(group_id)
                    .target_assignment
                    .insert(member_id.into(), partitions);
            }
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.target_assignment.remove(member_id);
                }
            }
        }
    }

    pub(crate) fn replay_current_assignment(
        &mut self,
        group_id: &str,
        member_id: &str,
        value: Option<&ConsumerGroupCurrentMemberAssignmentValue>,
    ) {
        let Some(v) = value else {
            if let Some(m) = self
                .groups
                .get_mut(group_id)
                .and_then(|g| g.members.get_mut(member_id))
            {
                m.member_epoch = 0;
                m.previous_member_epoch = 0;
                m.state = ConsumerMemberState::Stable;
                m.assigned.clear();
                m.pending_revocation.clear();
            }
            return;
        };
        let m = self.member_mut(group_id, member_id);
        m.member_epoch = v.member_epoch;
        m.previous_member_epoch = v.previous_member_epoch;
        m.state = ConsumerMemberState::from_code(v.state);
        m.assigned = partition_epochs(&v.assigned_partitions, v.member_epoch);
        m.pending_revocation = partition_epochs(&v.partitions_pending_revocation, v.member_epoch);
    }

    pub(crate) fn replay_regex(
        &mut self,
        group_id: &str,
        regex: &str,
        value: Option<&ConsumerGroupRegularExpressionValue>,
    ) {
        match value {
            Some(v) => {
                let resolved = ResolvedRegex {
                    topics: v.topics.iter().cloned().collect(),
                    version: v.version,
                    timestamp: v.timestamp,
                };
                self.group_mut(group_id)
                    .resolved_regexes
                    .insert(regex.to_string(), resolved);
            }
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.resolved_regexes.remove(regex);
                }
            }
        }
    }
}

/// Record-side partitions to a map with epochs. A record written before KIP-1251 has no
/// epochs: Kafka then takes the member epoch for every partition.
fn partition_epochs(list: &[current::TopicPartitions], member_epoch: i32) -> PartitionEpochs {
    let mut out = PartitionEpochs::new();
    for t in list {
        let epochs = t.assignment_epochs.as_deref().unwrap_or_default();
        let topic = out.entry(t.topic_id).or_default();
        for (i, p) in t.partitions.iter().enumerate() {
            let epoch = epochs.get(i).copied().unwrap_or(member_epoch);
            topic.insert(*p, epoch);
        }
    }
    // Built by inserting, so with room to grow; the member keeps it as it is until its next
    // assignment replaces it whole.
    for topic in out.values_mut() {
        topic.shrink_to_fit();
    }
    out.shrink_to_fit();
    out
}

/// Record-side partitions with their epochs, in topic id and partition order.
pub fn to_current_topic_partitions(partitions: &PartitionEpochs) -> Vec<current::TopicPartitions> {
    partitions
        .iter()
        .map(|(topic, parts)| current::TopicPartitions {
            topic_id: *topic,
            partitions: parts.keys().copied().collect(),
            assignment_epochs: Some(parts.values().copied().collect()),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_current_assignment_without_epochs_takes_the_member_epoch() {
        let topic = Uuid::from_u128(7);
        let mut image = ConsumerGroupsImage::default();
        let value = ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: 5,
            state: 1,
            assigned_partitions: vec![current::TopicPartitions {
                topic_id: topic,
                partitions: vec![2, 0],
                assignment_epochs: None,
                ..Default::default()
            }],
            ..Default::default()
        };
        image.replay_current_assignment("g", "m", Some(&value));
        let m = &image.get("g").unwrap().members["m"];
        assert_eq!(
            m.assigned.get(&topic),
            Some(&VecMap::from([(0, 5), (2, 5)]))
        );
        assert_eq!(
            image.get("g").unwrap().current_partition_epoch(&topic, 2),
            5
        );
        assert_eq!(
            image.get("g").unwrap().current_partition_epoch(&topic, 1),
            -1
        );
        let back = to_current_topic_partitions(&m.assigned);
        assert_eq!(back[0].partitions, vec![0, 2]);
        assert_eq!(back[0].assignment_epochs, Some(vec![5, 5]));
    }

    #[test]
    fn the_group_tombstone_removes_the_group() {
        let mut image = ConsumerGroupsImage::default();
        image.replay_metadata(
            "g",
            Some(&ConsumerGroupMetadataValue {
                epoch: 3,
                ..Default::default()
            }),
        );
        assert_eq!(image.get("g").unwrap().group_epoch, 3);
        image.replay_metadata("g", None);
        assert!(image.is_empty());
    }

    #[test]
    fn a_members_extras_are_boxed_only_while_it_has_some() {
        let mut m = ConsumerGroupMember::new("m");
        m.change_extras(|e| {
            e.instance_id = Some("i-1".into());
            e.server_assignor = Some("range".into());
        });
        assert_eq!(m.instance_id(), Some("i-1"));
        assert_eq!(m.server_assignor(), Some("range"));
        assert_eq!(m.rack_id(), None);
        m.change_extras(|e| {
            e.instance_id = None;
            e.server_assignor = None;
        });
        assert_eq!(
            m,
            ConsumerGroupMember::new("m"),
            "cleared extras leave no box"
        );
        assert!(m.extras.is_none());
    }
}
