//! What the tool knows about groups: the parts of Kafka's Admin model
//! (`StreamsGroupDescription`, `GroupListing`, ...) that `kafka-streams-groups` prints.

use std::collections::BTreeMap;

pub use kcoord_wire::{GroupState, TopicPartition};

use crate::topology::{StreamsGroupTopologyDescription, TopologyDescriptionStatus};

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

impl StreamsGroupDescription {
    /// Source and repartition-source topics by sub-topology id: the topics whose partitions a
    /// task of that sub-topology reads.
    pub fn input_topics(&self) -> BTreeMap<&str, Vec<&str>> {
        self.subtopologies
            .iter()
            .map(|s| {
                let topics = s
                    .source_topics
                    .iter()
                    .chain(&s.repartition_source_topics)
                    .map(String::as_str)
                    .collect();
                (s.subtopology_id.as_str(), topics)
            })
            .collect()
    }
}
