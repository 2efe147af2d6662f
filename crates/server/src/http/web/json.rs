//! The API's JSON documents, named after Kafka's Admin model (`StreamsGroupDescription`,
//! `StreamsGroupMemberDescription`, `StreamsGroupMemberAssignment`, ...) in camelCase, and
//! built from the StreamsGroupDescribe answer. `docs/openapi.json` describes each of them.

use std::collections::BTreeMap;

use kcoord_wire::messages::streams_group_describe_response::{
    Assignment, DescribedGroup, Endpoint, KeyValue, Member, Subtopology, TaskIds, TaskOffset,
    TopicInfo, Topology,
};
use serde::Serialize;

use super::error::ApiError;

/// `GET /api/v1/groups`.
#[derive(Debug, Serialize)]
pub struct GroupList {
    pub groups: Vec<GroupListing>,
}

/// One group of the list: its summary, or (when it could be listed but not described, e.g. its
/// topics may not be described by the caller) its listed state and why it is not described.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum GroupListing {
    Described(GroupSummary),
    Failed {
        #[serde(rename = "groupId")]
        group_id: String,
        #[serde(rename = "groupState")]
        group_state: String,
        error: ErrorSummary,
    },
}

#[derive(Debug, Serialize)]
pub struct ErrorSummary {
    pub error: String,
    pub message: String,
}

impl From<ApiError> for ErrorSummary {
    fn from(e: ApiError) -> Self {
        ErrorSummary {
            error: e.error,
            message: e.message,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupSummary {
    pub group_id: String,
    pub group_state: String,
    pub group_epoch: i32,
    pub target_assignment_epoch: i32,
    /// None while the group has no topology (no member has joined with one).
    pub topology_epoch: Option<i32>,
    pub member_count: usize,
}

impl From<&DescribedGroup> for GroupSummary {
    fn from(g: &DescribedGroup) -> Self {
        GroupSummary {
            group_id: g.group_id.clone(),
            group_state: g.group_state.clone(),
            group_epoch: g.group_epoch,
            target_assignment_epoch: g.assignment_epoch,
            topology_epoch: g.topology.as_ref().map(|t| t.epoch),
            member_count: g.members.len(),
        }
    }
}

/// `GET /api/v1/groups/{groupId}`: Kafka's `StreamsGroupDescription`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupDescription {
    #[serde(flatten)]
    pub summary: GroupSummary,
    pub assignor_name: Option<String>,
    pub subtopologies: Vec<SubtopologyDescription>,
    pub members: Vec<MemberDescription>,
}

impl From<DescribedGroup> for GroupDescription {
    fn from(g: DescribedGroup) -> Self {
        GroupDescription {
            summary: GroupSummary::from(&g),
            assignor_name: g.assignor_name,
            subtopologies: g
                .topology
                .map(|t: Topology| t.subtopologies.unwrap_or_default())
                .unwrap_or_default()
                .into_iter()
                .map(SubtopologyDescription::from)
                .collect(),
            members: g.members.into_iter().map(MemberDescription::from).collect(),
        }
    }
}

/// Kafka's `StreamsGroupSubtopologyDescription`: the topics a sub-topology uses, as the
/// coordinator configured them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtopologyDescription {
    pub subtopology_id: String,
    pub source_topics: Vec<String>,
    pub repartition_sink_topics: Vec<String>,
    pub state_changelog_topics: Vec<TopicDescription>,
    pub repartition_source_topics: Vec<TopicDescription>,
}

impl From<Subtopology> for SubtopologyDescription {
    fn from(s: Subtopology) -> Self {
        let topics = |list: Vec<TopicInfo>| list.into_iter().map(TopicDescription::from).collect();
        SubtopologyDescription {
            subtopology_id: s.subtopology_id,
            source_topics: s.source_topics,
            repartition_sink_topics: s.repartition_sink_topics,
            state_changelog_topics: topics(s.state_changelog_topics),
            repartition_source_topics: topics(s.repartition_source_topics),
        }
    }
}

/// Kafka's `StreamsGroupSubtopologyDescription.TopicInfo`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicDescription {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub topic_configs: BTreeMap<String, String>,
}

impl From<TopicInfo> for TopicDescription {
    fn from(t: TopicInfo) -> Self {
        TopicDescription {
            name: t.name,
            partitions: t.partitions,
            replication_factor: t.replication_factor,
            topic_configs: key_values(t.topic_configs),
        }
    }
}

/// Kafka's `StreamsGroupMemberDescription`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberDescription {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<UserEndpoint>,
    pub client_tags: BTreeMap<String, String>,
    pub task_offsets: Vec<TaskOffsetDescription>,
    pub task_end_offsets: Vec<TaskOffsetDescription>,
    pub assignment: TasksDescription,
    pub target_assignment: TasksDescription,
    pub is_classic: bool,
}

impl From<Member> for MemberDescription {
    fn from(m: Member) -> Self {
        let offsets = |list: Vec<TaskOffset>| {
            list.into_iter()
                .map(|o| TaskOffsetDescription {
                    subtopology_id: o.subtopology_id,
                    partition: o.partition,
                    offset: o.offset,
                })
                .collect()
        };
        MemberDescription {
            member_id: m.member_id,
            member_epoch: m.member_epoch,
            instance_id: m.instance_id,
            rack_id: m.rack_id,
            client_id: m.client_id,
            client_host: m.client_host,
            topology_epoch: m.topology_epoch,
            process_id: m.process_id,
            user_endpoint: m.user_endpoint.map(|e: Endpoint| UserEndpoint {
                host: e.host,
                port: e.port,
            }),
            client_tags: key_values(m.client_tags),
            task_offsets: offsets(m.task_offsets),
            task_end_offsets: offsets(m.task_end_offsets),
            assignment: TasksDescription::from(m.assignment),
            target_assignment: TasksDescription::from(m.target_assignment),
            is_classic: m.is_classic,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct UserEndpoint {
    pub host: String,
    pub port: u16,
}

/// Kafka's `StreamsGroupMemberDescription.TaskOffset`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOffsetDescription {
    pub subtopology_id: String,
    pub partition: i32,
    pub offset: i64,
}

/// Kafka's `StreamsGroupMemberAssignment`, each kind of task as sub-topology id → partitions.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TasksDescription {
    pub active_tasks: BTreeMap<String, Vec<i32>>,
    pub standby_tasks: BTreeMap<String, Vec<i32>>,
    pub warmup_tasks: BTreeMap<String, Vec<i32>>,
}

impl From<Assignment> for TasksDescription {
    fn from(a: Assignment) -> Self {
        TasksDescription {
            active_tasks: tasks(a.active_tasks),
            standby_tasks: tasks(a.standby_tasks),
            warmup_tasks: tasks(a.warmup_tasks),
        }
    }
}

/// Sub-topology id → sorted partitions (a sub-topology listed twice has its partitions joined).
fn tasks(list: Vec<TaskIds>) -> BTreeMap<String, Vec<i32>> {
    let mut map: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for t in list {
        map.entry(t.subtopology_id)
            .or_default()
            .extend(t.partitions);
    }
    for partitions in map.values_mut() {
        partitions.sort_unstable();
        partitions.dedup();
    }
    map
}

fn key_values(list: Vec<KeyValue>) -> BTreeMap<String, String> {
    list.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_maps_of_sorted_partitions() {
        let ids = |id: &str, partitions: &[i32]| TaskIds {
            subtopology_id: id.to_owned(),
            partitions: partitions.to_vec(),
            ..Default::default()
        };
        let map = tasks(vec![ids("1", &[3, 1]), ids("0", &[2]), ids("1", &[1, 0])]);
        assert_eq!(
            serde_json::to_value(map).unwrap(),
            serde_json::json!({"0": [2], "1": [0, 1, 3]})
        );
    }

    #[test]
    fn a_group_without_a_topology_has_no_topology_epoch() {
        let group = DescribedGroup {
            group_id: "g".to_owned(),
            group_state: "Empty".to_owned(),
            group_epoch: 3,
            assignment_epoch: 2,
            ..Default::default()
        };
        let json = serde_json::to_value(GroupDescription::from(group)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "groupId": "g", "groupState": "Empty", "groupEpoch": 3,
                "targetAssignmentEpoch": 2, "topologyEpoch": null, "memberCount": 0,
                "assignorName": null, "subtopologies": [], "members": []
            })
        );
    }
}
