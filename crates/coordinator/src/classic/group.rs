//! A classic group as Kafka's `ClassicGroup` keeps it in memory: its state machine, members,
//! static members, the members it still waits for, and the protocol its members agree on.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use kcoord_metadata::Record;
use kcoord_wire::messages::join_group_response::JoinGroupResponseMember;
use kcoord_wire::records::group_metadata_value::MemberMetadata;
use kcoord_wire::records::{GroupMetadataKey, GroupMetadataValue};
use kcoord_wire::ErrorCode;

use super::WaiterId;
use crate::shard::Id;

/// The protocol type of Kafka's consumers (`ConsumerProtocol.PROTOCOL_TYPE`).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Kafka's `ClassicGroupState`, with its names (DescribeGroups and ListGroups show them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicGroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl ClassicGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ClassicGroupState::Empty => "Empty",
            ClassicGroupState::PreparingRebalance => "PreparingRebalance",
            ClassicGroupState::CompletingRebalance => "CompletingRebalance",
            ClassicGroupState::Stable => "Stable",
            ClassicGroupState::Dead => "Dead",
        }
    }

    /// The states a group may move to this one from (Kafka's `validPreviousStates`).
    fn may_follow(self, previous: ClassicGroupState) -> bool {
        use ClassicGroupState::*;
        match self {
            Empty => previous == PreparingRebalance,
            PreparingRebalance => matches!(previous, Stable | CompletingRebalance | Empty),
            CompletingRebalance => previous == PreparingRebalance,
            Stable => previous == CompletingRebalance,
            Dead => true,
        }
    }
}

/// One protocol a member supports (an assignor name and its metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

/// A member of a classic group (Kafka's `ClassicGroupMember`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassicMember {
    pub member_id: Id,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// Most preferred first.
    pub protocols: Vec<Protocol>,
    pub assignment: Bytes,
    /// The JoinGroup request parked until the join phase completes.
    pub awaiting_join: Option<WaiterId>,
    /// The SyncGroup request parked until the leader's assignment is stored.
    pub awaiting_sync: Option<WaiterId>,
    /// Joined during the current join phase: its JoinGroup may time out like a session.
    pub is_new: bool,
}

impl ClassicMember {
    /// The member's metadata for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| &p.metadata)
    }

    /// Kafka's `hasSatisfiedHeartbeat`: a member parked in a rebalance needs no heartbeat,
    /// unless it is new (its JoinGroup may be abandoned).
    pub fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    /// The first of the member's protocols among `candidates`.
    fn vote<'a>(&'a self, candidates: &BTreeSet<&str>) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|name| candidates.contains(name))
    }
}

/// A classic group (Kafka's `ClassicGroup`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassicGroup {
    pub group_id: Id,
    pub state: ClassicGroupState,
    pub previous_state: ClassicGroupState,
    /// When the group last changed state (ms), kept in its record.
    pub state_timestamp: Option<i64>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<Id>,
    pub members: BTreeMap<Id, Arc<ClassicMember>>,
    /// group.instance.id -> member id.
    pub static_members: BTreeMap<String, Id>,
    /// Member ids handed out with MEMBER_ID_REQUIRED that have not joined yet (KIP-394).
    pub pending_join: BTreeSet<Id>,
    /// Members of this generation that have not sent their SyncGroup yet.
    pub pending_sync: BTreeSet<Id>,
    /// A member joined during the initial rebalance delay, which may then be extended.
    pub new_member_added: bool,
    /// The topics the members of this generation subscribe to (Kafka's `subscribedTopics`,
    /// computed when a generation starts and when the group is loaded): `None` unless the
    /// protocol type is `consumer` and every member's metadata is a subscription.
    pub subscribed_topics: Option<BTreeSet<String>>,
}

impl ClassicGroup {
    /// A new, empty group.
    pub fn new(group_id: &str, now: i64) -> ClassicGroup {
        ClassicGroup {
            group_id: group_id.into(),
            state: ClassicGroupState::Empty,
            previous_state: ClassicGroupState::Dead,
            state_timestamp: Some(now),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_join: BTreeSet::new(),
            pending_sync: BTreeSet::new(),
            new_member_added: false,
            subscribed_topics: None,
        }
    }

    /// The group as its last record left it: Stable with its members, or Empty (Kafka's
    /// `replay(GroupMetadataKey, GroupMetadataValue)`).
    pub fn from_record(group_id: &str, value: &GroupMetadataValue) -> ClassicGroup {
        let mut group = ClassicGroup::new(group_id, 0);
        group.state = if value.members.is_empty() {
            ClassicGroupState::Empty
        } else {
            ClassicGroupState::Stable
        };
        group.state_timestamp =
            (value.current_state_timestamp != -1).then_some(value.current_state_timestamp);
        group.generation_id = value.generation;
        group.protocol_type = Some(value.protocol_type.clone()).filter(|t| !t.is_empty());
        group.protocol_name = value.protocol.clone();
        group.leader_id = value.leader.as_deref().map(Id::from);
        for m in &value.members {
            let member = ClassicMember {
                member_id: m.member_id.as_str().into(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: if m.rebalance_timeout == -1 {
                    m.session_timeout
                } else {
                    m.rebalance_timeout
                },
                session_timeout_ms: m.session_timeout,
                protocol_type: value.protocol_type.clone(),
                protocols: vec![Protocol {
                    name: value.protocol.clone().unwrap_or_default(),
                    metadata: m.subscription.clone(),
                }],
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
            };
            if let Some(instance) = &member.group_instance_id {
                group
                    .static_members
                    .insert(instance.clone(), member.member_id.clone());
            }
            group
                .members
                .insert(member.member_id.clone(), Arc::new(member));
        }
        group.subscribed_topics = group.compute_subscribed_topics();
        group
    }

    /// Kafka's `newGroupMetadataRecord`: the group with each member's subscription for the
    /// selected protocol and its assignment from `assignment` (empty where it has none).
    pub fn record(&self, assignment: &BTreeMap<Id, Bytes>) -> Record {
        let protocol = self.protocol_name.clone();
        let members = self
            .members
            .values()
            .map(|m| MemberMetadata {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout: m.rebalance_timeout_ms,
                session_timeout: m.session_timeout_ms,
                subscription: protocol
                    .as_deref()
                    .and_then(|p| m.metadata(p))
                    .cloned()
                    .unwrap_or_default(),
                assignment: assignment.get(&m.member_id).cloned().unwrap_or_default(),
                ..Default::default()
            })
            .collect();
        Record::GroupMetadata(
            GroupMetadataKey {
                group: self.group_id.to_string(),
                ..Default::default()
            },
            Some(GroupMetadataValue {
                protocol_type: self.protocol_type.clone().unwrap_or_default(),
                generation: self.generation_id,
                protocol,
                leader: self.leader_id.as_deref().map(str::to_owned),
                current_state_timestamp: self.state_timestamp.unwrap_or(-1),
                members,
                ..Default::default()
            }),
        )
    }

    /// Kafka's `newEmptyGroupMetadataRecord`: what a new group is committed with.
    pub fn empty_record(&self) -> Record {
        Record::GroupMetadata(
            GroupMetadataKey {
                group: self.group_id.to_string(),
                ..Default::default()
            },
            Some(GroupMetadataValue {
                current_state_timestamp: self.state_timestamp.unwrap_or(-1),
                ..Default::default()
            }),
        )
    }

    /// Each member's current assignment.
    pub fn assignments(&self) -> BTreeMap<Id, Bytes> {
        self.members
            .iter()
            .map(|(id, m)| (id.clone(), m.assignment.clone()))
            .collect()
    }

    pub fn is(&self, state: ClassicGroupState) -> bool {
        self.state == state
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub fn member(&self, member_id: &str) -> Option<&ClassicMember> {
        self.members.get(member_id).map(|m| &**m)
    }

    pub(crate) fn member_mut(&mut self, member_id: &str) -> Option<&mut ClassicMember> {
        self.members.get_mut(member_id).map(Arc::make_mut)
    }

    pub fn awaiting_join_count(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_some())
            .count()
    }

    /// Every member rejoined and no member id handed out is still to join.
    pub fn has_all_members_joined(&self) -> bool {
        self.awaiting_join_count() == self.members.len() && self.pending_join.is_empty()
    }

    /// The longest rebalance timeout of the members.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    pub fn can_rebalance(&self) -> bool {
        ClassicGroupState::PreparingRebalance.may_follow(self.state)
    }

    pub fn transition(&mut self, to: ClassicGroupState, now: i64) {
        debug_assert!(to.may_follow(self.state), "{:?} -> {to:?}", self.state);
        self.previous_state = self.state;
        self.state = to;
        self.state_timestamp = Some(now);
    }

    /// The protocols every member supports.
    fn candidate_protocols(&self) -> BTreeSet<&str> {
        let mut members = self.members.values();
        let Some(first) = members.next() else {
            return BTreeSet::new();
        };
        let mut candidates: BTreeSet<&str> =
            first.protocols.iter().map(|p| p.name.as_str()).collect();
        for member in members {
            candidates.retain(|c| member.protocols.iter().any(|p| p.name == *c));
        }
        candidates
    }

    /// Kafka's `supportsProtocols`: an empty group takes any non-empty type and protocol
    /// list; otherwise the type must match and one protocol be supported by every member.
    /// With no member left (its last ones expired while a new member's id is pending) every
    /// protocol is, as Kafka's count has it (`supportedProtocols.get(name) == numMembers()`).
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.is(ClassicGroupState::Empty) {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        let candidates = self.candidate_protocols();
        protocols
            .iter()
            .any(|p| self.members.is_empty() || candidates.contains(p.name.as_str()))
    }

    /// Kafka's `selectProtocol`: each member votes for its most preferred protocol among
    /// those all support; the most votes win (ties go to the first name).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(vote) = member.vote(&candidates) {
                *votes.entry(vote).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(name, _)| name.to_owned())
    }

    /// Kafka's `add`: the first member sets the protocol type and becomes leader if there is
    /// none.
    pub fn add(&mut self, member: ClassicMember) {
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.pending_join.remove(&member.member_id);
        self.members
            .insert(member.member_id.clone(), Arc::new(member));
    }

    /// Kafka's `remove`: a leaving leader hands over to another member.
    pub fn remove(&mut self, member_id: &str) -> Option<Arc<ClassicMember>> {
        let removed = self.members.remove(member_id);
        if let Some(instance) = removed.as_ref().and_then(|m| m.group_instance_id.as_ref()) {
            self.static_members.remove(instance);
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join.remove(member_id);
        self.pending_sync.remove(member_id);
        removed
    }

    /// Kafka's `maybeElectNewJoinedLeader`: a leader that did not rejoin hands over to one that
    /// did; false when no member rejoined.
    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.as_deref() else {
            return false;
        };
        if self
            .member(leader)
            .is_some_and(|m| m.awaiting_join.is_some())
        {
            return true;
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(joined) => {
                self.leader_id = Some(joined.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Kafka's `validateMember`: a static member must be the one its instance id maps to.
    pub fn validate_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance) = instance_id {
            match self.static_members.get(instance) {
                None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
                Some(existing) if existing != member_id => {
                    return Err(ErrorCode::FENCED_INSTANCE_ID)
                }
                Some(_) => {}
            }
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        }
    }

    /// Kafka's `initNextGeneration`.
    pub fn init_next_generation(&mut self, now: i64) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition(ClassicGroupState::Empty, now);
        } else {
            self.protocol_name = self.select_protocol();
            self.transition(ClassicGroupState::CompletingRebalance, now);
        }
        self.subscribed_topics = self.compute_subscribed_topics();
        self.pending_sync.clear();
    }

    /// Kafka's `computeSubscribedTopics`: for a `consumer` group, the union of its members'
    /// subscriptions under the selected protocol (none for a group without members).
    pub(crate) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if !self.uses_consumer_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for member in self.members.values() {
            let metadata = member.metadata(protocol).map_or(&[][..], |m| &m[..]);
            topics.extend(
                crate::consumer_protocol::read_subscription(metadata)
                    .ok()?
                    .topics,
            );
        }
        Some(topics)
    }

    /// Kafka's `isSubscribedToTopic`: whether this generation's members subscribe to `topic`;
    /// a consumer group whose subscriptions could not be read is taken to subscribe to
    /// everything.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(topics) => topics.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    /// What the leader's JoinGroup response lists: every member with its metadata for the
    /// selected protocol.
    pub fn join_members(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        self.members
            .values()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol).cloned().unwrap_or_default(),
                ..Default::default()
            })
            .collect()
    }

    /// Whether the group uses Kafka's consumer protocol (`protocol_type` "consumer").
    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// Kafka's `validateOffsetCommit` for a classic group: the error an OffsetCommit (or, with
    /// `transactional`, a TxnOffsetCommit) of this member and generation gets, if any.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        transactional: bool,
    ) -> Result<(), ErrorCode> {
        if self.is(ClassicGroupState::Dead) {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
        if generation_id < 0 && self.is(ClassicGroupState::Empty) {
            return Ok(());
        }
        if generation_id >= 0 || !member_id.is_empty() || instance_id.is_some() {
            self.validate_member(member_id, instance_id)?;
            if generation_id != self.generation_id {
                return Err(ErrorCode::ILLEGAL_GENERATION);
            }
        } else if !transactional && !self.is(ClassicGroupState::Empty) {
            return Err(ErrorCode::UNKNOWN_MEMBER_ID);
        }
        if !transactional && self.is(ClassicGroupState::CompletingRebalance) {
            return Err(ErrorCode::REBALANCE_IN_PROGRESS);
        }
        Ok(())
    }
}
