//! What the tool knows about groups: the parts of Kafka's Admin model
//! (`StreamsGroupDescription`, `GroupListing`, ...) that `kafka-streams-groups` prints.

use std::collections::BTreeMap;
use std::fmt;

use kcoord_wire::messages::streams_group_describe_response::{Assignment as WireAssignment, DescribedGroup};

use crate::topology::{self, StreamsGroupTopologyDescription, TopologyDescriptionStatus, TopologyError};

/// Kafka's `GroupState` (the values a streams group can be in, plus `Unknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupState {
    Empty,
    NotReady,
    Assigning,
    Reconciling,
    Stable,
    Dead,
    /// Anything else, or no state reported (ListGroups before v4).
    Unknown,
}

impl GroupState {
    /// The states a streams group can be in, in the order this tool lists them.
    pub const STREAMS: [GroupState; 6] =
        [GroupState::Empty, GroupState::NotReady, GroupState::Assigning, GroupState::Reconciling, GroupState::Stable, GroupState::Dead];

    /// Kafka's `GroupState.parse`: case-insensitive, `Unknown` for anything unrecognised. (The
    /// classic-group states also parse to `Unknown` here; they never describe a streams group.)
    pub fn parse(name: &str) -> GroupState {
        GroupState::STREAMS.into_iter().find(|s| s.as_str().eq_ignore_ascii_case(name)).unwrap_or(GroupState::Unknown)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::NotReady => "NotReady",
            GroupState::Assigning => "Assigning",
            GroupState::Reconciling => "Reconciling",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
            GroupState::Unknown => "Unknown",
        }
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of ListGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    /// `None` when the broker's ListGroups version has no state (before v4).
    pub state: Option<GroupState>,
}

/// The node that answered a describe: Kafka's `Node` as the tool prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorNode {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition { topic: topic.into(), partition }
    }
}

/// A committed offset (Kafka's `OffsetAndMetadata`, without the metadata string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedOffset {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
}

/// Kafka's `StreamsGroupSubtopologyDescription`, the parts the tool uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubtopologyDescription {
    pub subtopology_id: String,
    pub source_topics: Vec<String>,
    pub repartition_sink_topics: Vec<String>,
    pub state_changelog_topics: Vec<String>,
    pub repartition_source_topics: Vec<String>,
}

/// Tasks of one sub-topology: Kafka's `StreamsGroupMemberAssignment.TaskIds`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskIds {
    pub subtopology_id: String,
    pub partitions: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberAssignment {
    pub active_tasks: Vec<TaskIds>,
    pub standby_tasks: Vec<TaskIds>,
    pub warmup_tasks: Vec<TaskIds>,
}

/// Kafka's `StreamsGroupMemberDescription`, the parts the tool prints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberDescription {
    pub member_id: String,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub process_id: String,
    pub topology_epoch: i32,
    pub is_classic: bool,
    pub assignment: MemberAssignment,
    pub target_assignment: MemberAssignment,
}

/// Kafka's `StreamsGroupDescription`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupDescription {
    pub group_id: String,
    pub group_epoch: i32,
    pub target_assignment_epoch: i32,
    pub topology_epoch: i32,
    pub subtopologies: Vec<SubtopologyDescription>,
    pub members: Vec<MemberDescription>,
    pub state: GroupState,
    pub coordinator: CoordinatorNode,
    /// StreamsGroupDescribe v1's AssignorName.
    pub assignor_name: Option<String>,
    pub topology_description_status: TopologyDescriptionStatus,
    /// Present iff the status is AVAILABLE.
    pub topology_description: Option<StreamsGroupTopologyDescription>,
}

/// A described group the client cannot turn into a description (Kafka's Admin fails the
/// group's future with an IllegalStateException for the same responses).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescriptionError {
    #[error("Topology information is missing")]
    MissingTopology,
    #[error(transparent)]
    TopologyDescription(#[from] TopologyError),
}

impl StreamsGroupDescription {
    /// Converts a DescribedGroup whose ErrorCode is NONE (the caller handles errors).
    pub fn from_wire(group: &DescribedGroup, coordinator: CoordinatorNode) -> Result<Self, DescriptionError> {
        let topology = group.topology.as_ref().ok_or(DescriptionError::MissingTopology)?;
        let (status, description) = topology::from_wire(group.topology_description_status, group.topology_description.as_ref())?;
        let subtopologies = topology
            .subtopologies
            .iter()
            .flatten()
            .map(|s| SubtopologyDescription {
                subtopology_id: s.subtopology_id.clone(),
                source_topics: s.source_topics.clone(),
                repartition_sink_topics: s.repartition_sink_topics.clone(),
                state_changelog_topics: s.state_changelog_topics.iter().map(|t| t.name.clone()).collect(),
                repartition_source_topics: s.repartition_source_topics.iter().map(|t| t.name.clone()).collect(),
            })
            .collect();
        let members = group
            .members
            .iter()
            .map(|m| MemberDescription {
                member_id: m.member_id.clone(),
                member_epoch: m.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                process_id: m.process_id.clone(),
                topology_epoch: m.topology_epoch,
                is_classic: m.is_classic,
                assignment: assignment(&m.assignment),
                target_assignment: assignment(&m.target_assignment),
            })
            .collect();
        Ok(StreamsGroupDescription {
            group_id: group.group_id.clone(),
            group_epoch: group.group_epoch,
            target_assignment_epoch: group.assignment_epoch,
            topology_epoch: topology.epoch,
            subtopologies,
            members,
            state: GroupState::parse(&group.group_state),
            coordinator,
            assignor_name: group.assignor_name.clone(),
            topology_description_status: status,
            topology_description: description,
        })
    }

    /// Source and repartition-source topics by sub-topology id: the topics whose partitions a
    /// task of that sub-topology reads.
    pub fn input_topics(&self) -> BTreeMap<&str, Vec<&str>> {
        self.subtopologies
            .iter()
            .map(|s| {
                let topics = s.source_topics.iter().chain(&s.repartition_source_topics).map(String::as_str).collect();
                (s.subtopology_id.as_str(), topics)
            })
            .collect()
    }
}

fn assignment(wire: &WireAssignment) -> MemberAssignment {
    let tasks = |list: &[kcoord_wire::messages::streams_group_describe_response::TaskIds]| {
        list.iter().map(|t| TaskIds { subtopology_id: t.subtopology_id.clone(), partitions: t.partitions.clone() }).collect()
    };
    MemberAssignment {
        active_tasks: tasks(&wire.active_tasks),
        standby_tasks: tasks(&wire.standby_tasks),
        warmup_tasks: tasks(&wire.warmup_tasks),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_states_parse_like_kafka() {
        assert_eq!(GroupState::parse("stable"), GroupState::Stable);
        assert_eq!(GroupState::parse("NOTREADY"), GroupState::NotReady);
        assert_eq!(GroupState::parse("PreparingRebalance"), GroupState::Unknown);
        assert_eq!(GroupState::parse(""), GroupState::Unknown);
    }

    #[test]
    fn a_described_group_without_topology_is_rejected() {
        let group = DescribedGroup { group_id: "g".into(), ..Default::default() };
        let node = CoordinatorNode { id: 1, host: "h".into(), port: 1 };
        assert_eq!(StreamsGroupDescription::from_wire(&group, node), Err(DescriptionError::MissingTopology));
    }
}
