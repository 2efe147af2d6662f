//! Streams groups (KIP-1071) as the coordinator records 17, 19-23 describe them.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_wire::records::{
    streams_group_current_member_assignment_value as current, streams_group_target_assignment_member_value as target,
    StreamsGroupCurrentMemberAssignmentValue, StreamsGroupMemberMetadataValue, StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberValue, StreamsGroupTargetAssignmentMetadataValue, StreamsGroupTopologyValue,
};
use uuid::Uuid;

/// Sub-topology id -> partitions.
pub type Tasks = BTreeMap<String, BTreeSet<i32>>;

/// Active, standby and warm-up tasks of one member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TasksTuple {
    pub active: Tasks,
    pub standby: Tasks,
    pub warmup: Tasks,
}

impl TasksTuple {
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.standby.is_empty() && self.warmup.is_empty()
    }
}

/// Member states of the streams protocol (`MemberState`), as stored in record 22.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemberState {
    #[default]
    Stable,
    UnrevokedTasks,
    UnreleasedTasks,
    Unknown,
}

impl MemberState {
    pub fn code(self) -> i8 {
        match self {
            MemberState::Stable => 1,
            MemberState::UnrevokedTasks => 2,
            MemberState::UnreleasedTasks => 3,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_code(code: i8) -> MemberState {
        match code {
            1 => MemberState::Stable,
            2 => MemberState::UnrevokedTasks,
            3 => MemberState::UnreleasedTasks,
            _ => MemberState::Unknown,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// One member: its metadata (record 19) and its current assignment (record 22).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamsGroupMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned: TasksTuple,
    /// The epoch at which each active task (assigned or pending revocation) was given, for
    /// offset-commit validation.
    pub active_task_epochs: BTreeMap<(String, i32), i32>,
    pub pending_revocation: TasksTuple,
}

/// A streams group: metadata (17), topology (23), target assignment (20, 21) and members.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamsGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    pub validated_topology_epoch: i32,
    pub last_assignment_configs: Option<BTreeMap<String, String>>,
    pub stored_description_topology_epoch: i32,
    pub failed_description_topology_epoch: i32,
    /// KIP-1331 (draft): minted on creation and on every topology epoch bump.
    pub topology_description_id: Option<Uuid>,
    pub topology: Option<StreamsGroupTopologyValue>,
    pub target_assignment_epoch: i32,
    pub target_assignment_timestamp: i64,
    pub target_assignment: BTreeMap<String, TasksTuple>,
    pub members: BTreeMap<String, StreamsGroupMember>,
}

impl StreamsGroup {
    fn new(group_id: &str) -> Self {
        StreamsGroup {
            group_id: group_id.to_string(),
            validated_topology_epoch: -1,
            stored_description_topology_epoch: -1,
            failed_description_topology_epoch: -1,
            ..Default::default()
        }
    }

    pub fn topology_epoch(&self) -> Option<i32> {
        self.topology.as_ref().map(|t| t.epoch)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamsGroupsImage {
    groups: BTreeMap<String, StreamsGroup>,
}

impl StreamsGroupsImage {
    pub fn get(&self, group_id: &str) -> Option<&StreamsGroup> {
        self.groups.get(group_id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &StreamsGroup> {
        self.groups.values()
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn group_mut(&mut self, group_id: &str) -> &mut StreamsGroup {
        self.groups.entry(group_id.to_string()).or_insert_with(|| StreamsGroup::new(group_id))
    }

    fn member_mut<'a>(&'a mut self, group_id: &str, member_id: &str) -> &'a mut StreamsGroupMember {
        self.group_mut(group_id).members.entry(member_id.to_string()).or_insert_with(|| StreamsGroupMember {
            member_id: member_id.to_string(),
            rebalance_timeout_ms: -1,
            ..Default::default()
        })
    }

    pub(crate) fn replay_metadata(&mut self, group_id: &str, value: Option<&StreamsGroupMetadataValue>) {
        let Some(v) = value else {
            // The group's own tombstone ends it; Kafka writes it after every member's.
            self.groups.remove(group_id);
            return;
        };
        let g = self.group_mut(group_id);
        g.group_epoch = v.epoch;
        g.metadata_hash = v.metadata_hash;
        g.validated_topology_epoch = v.validated_topology_epoch;
        g.last_assignment_configs =
            v.last_assignment_configs.as_ref().map(|c| c.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect());
        g.stored_description_topology_epoch = v.stored_description_topology_epoch;
        g.failed_description_topology_epoch = v.failed_description_topology_epoch;
        g.topology_description_id = v.topology_description_id;
    }

    pub(crate) fn replay_member_metadata(&mut self, group_id: &str, member_id: &str, value: Option<&StreamsGroupMemberMetadataValue>) {
        let Some(v) = value else {
            if let Some(g) = self.groups.get_mut(group_id) {
                g.members.remove(member_id);
            }
            return;
        };
        let m = self.member_mut(group_id, member_id);
        m.instance_id = v.instance_id.clone();
        m.rack_id = v.rack_id.clone();
        m.client_id = v.client_id.clone();
        m.client_host = v.client_host.clone();
        m.rebalance_timeout_ms = v.rebalance_timeout_ms;
        m.topology_epoch = v.topology_epoch;
        m.process_id = v.process_id.clone();
        m.user_endpoint = v.user_endpoint.as_ref().map(|e| Endpoint { host: e.host.clone(), port: e.port });
        m.client_tags = v.client_tags.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect();
    }

    pub(crate) fn replay_topology(&mut self, group_id: &str, value: Option<&StreamsGroupTopologyValue>) {
        match value {
            Some(v) => self.group_mut(group_id).topology = Some(v.clone()),
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.topology = None;
                }
            }
        }
    }

    pub(crate) fn replay_target_metadata(&mut self, group_id: &str, value: Option<&StreamsGroupTargetAssignmentMetadataValue>) {
        match value {
            Some(v) => {
                let g = self.group_mut(group_id);
                g.target_assignment_epoch = v.assignment_epoch;
                g.target_assignment_timestamp = v.assignment_timestamp;
            }
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.target_assignment_epoch = 0;
                    g.target_assignment_timestamp = 0;
                }
            }
        }
    }

    pub(crate) fn replay_target_member(&mut self, group_id: &str, member_id: &str, value: Option<&StreamsGroupTargetAssignmentMemberValue>) {
        match value {
            Some(v) => {
                let tasks = TasksTuple {
                    active: target_tasks(&v.active_tasks),
                    standby: target_tasks(&v.standby_tasks),
                    warmup: target_tasks(&v.warmup_tasks),
                };
                self.group_mut(group_id).target_assignment.insert(member_id.to_string(), tasks);
            }
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.target_assignment.remove(member_id);
                }
            }
        }
    }

    pub(crate) fn replay_current_assignment(&mut self, group_id: &str, member_id: &str, value: Option<&StreamsGroupCurrentMemberAssignmentValue>) {
        let Some(v) = value else {
            if let Some(m) = self.groups.get_mut(group_id).and_then(|g| g.members.get_mut(member_id)) {
                m.member_epoch = 0;
                m.previous_member_epoch = 0;
                m.state = MemberState::Stable;
                m.assigned = TasksTuple::default();
                m.active_task_epochs.clear();
                m.pending_revocation = TasksTuple::default();
            }
            return;
        };
        let m = self.member_mut(group_id, member_id);
        m.member_epoch = v.member_epoch;
        m.previous_member_epoch = v.previous_member_epoch;
        m.state = MemberState::from_code(v.state);
        m.assigned = TasksTuple {
            active: current_tasks(&v.active_tasks),
            standby: current_tasks(&v.standby_tasks),
            warmup: current_tasks(&v.warmup_tasks),
        };
        m.active_task_epochs = task_epochs(&v.active_tasks);
        m.active_task_epochs.extend(task_epochs(&v.active_tasks_pending_revocation));
        m.pending_revocation = TasksTuple {
            active: current_tasks(&v.active_tasks_pending_revocation),
            standby: current_tasks(&v.standby_tasks_pending_revocation),
            warmup: current_tasks(&v.warmup_tasks_pending_revocation),
        };
    }
}

fn target_tasks(ids: &[target::TaskIds]) -> Tasks {
    ids.iter().map(|t| (t.subtopology_id.clone(), t.partitions.iter().copied().collect())).collect()
}

fn current_tasks(ids: &[current::TaskIds]) -> Tasks {
    ids.iter().map(|t| (t.subtopology_id.clone(), t.partitions.iter().copied().collect())).collect()
}

fn task_epochs(ids: &[current::TaskIds]) -> BTreeMap<(String, i32), i32> {
    let mut out = BTreeMap::new();
    for t in ids {
        if let Some(epochs) = &t.assignment_epochs {
            for (p, e) in t.partitions.iter().zip(epochs) {
                out.insert((t.subtopology_id.clone(), *p), *e);
            }
        }
    }
    out
}

/// Record-side task lists from a `Tasks` map, in sub-topology and partition order.
pub fn to_current_task_ids(tasks: &Tasks, epochs: Option<&BTreeMap<(String, i32), i32>>) -> Vec<current::TaskIds> {
    tasks
        .iter()
        .map(|(s, parts)| current::TaskIds {
            subtopology_id: s.clone(),
            partitions: parts.iter().copied().collect(),
            assignment_epochs: epochs.map(|e| parts.iter().map(|p| e.get(&(s.clone(), *p)).copied().unwrap_or(0)).collect()),
            ..Default::default()
        })
        .collect()
}

pub fn to_target_task_ids(tasks: &Tasks) -> Vec<target::TaskIds> {
    tasks
        .iter()
        .map(|(s, parts)| target::TaskIds { subtopology_id: s.clone(), partitions: parts.iter().copied().collect(), ..Default::default() })
        .collect()
}
