//! Streams groups (KIP-1071) as the coordinator records 17, 19-23 describe them.
use std::collections::BTreeMap;

use kcoord_wire::records::{
    streams_group_current_member_assignment_value as current,
    streams_group_target_assignment_member_value as target,
    StreamsGroupCurrentMemberAssignmentValue, StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataValue, StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataValue, StreamsGroupTopologyValue,
};
use uuid::Uuid;

use super::keyed_map::{Keyed, KeyedMap};
use super::process_id::ProcessId;
use super::tasks::{PendingTasks, SharedTasks, TaskEpochs, Tasks, TasksTuple};
use super::vec_map::VecMap;

/// A group or member id as a map key, or another short string a heartbeat compares (a member's
/// client id and host). Up to 24 bytes (Kafka Streams' member ids are 22) are stored in the
/// value itself, so comparing reads the map's or the member's own memory instead of chasing a
/// pointer into another allocation: on the heartbeat path those chases were cache misses, a
/// tenth of the daemon's time. Cloning a short one allocates nothing.
pub type Id = compact_str::CompactString;

/// `map[key]`, inserted with `make()` when missing. Looked up by `&str` first: the key is built
/// (for an id longer than 24 bytes, allocated) only when the entry is created, not on every
/// call as `entry(key.into())` would.
pub fn entry_by_str<'a, V>(
    map: &'a mut hashbrown::HashMap<Id, V>,
    key: &str,
    make: impl FnOnce() -> V,
) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.into(), make());
    }
    match map.get_mut(key) {
        Some(value) => value,
        None => unreachable!("inserted above"),
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
    pub member_id: Id,
    /// What few members have, behind one pointer ([`MemberExtras`]).
    pub extras: Option<Box<MemberExtras>>,
    pub client_id: Id,
    pub client_host: Id,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub process_id: ProcessId,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    /// Shared with the member's target assignment while the two are equal. Read with
    /// [`StreamsGroupMember::assigned`]; set with the pending revocations by
    /// [`StreamsGroupMember::set_tasks`], which keeps the task epochs in step with them.
    assigned: SharedTasks,
    /// The epoch at which each active task (assigned or pending revocation) was given, for
    /// offset-commit validation: read with [`StreamsGroupMember::active_task_epoch`].
    active_task_epochs: TaskEpochs,
    /// Read with [`StreamsGroupMember::pending_revocation`].
    pending_revocation: PendingTasks,
}

/// What few members have: static membership, a rack, an endpoint for interactive queries,
/// client tags. A member without any of them holds no box: 8 bytes instead of 104.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberExtras {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
}

/// No client tags.
static NO_TAGS: BTreeMap<String, String> = BTreeMap::new();

impl Keyed for StreamsGroupMember {
    type Key = Id;

    fn key(&self) -> &Id {
        &self.member_id
    }
}

impl StreamsGroupMember {
    /// A member as it joins, before its records say more (Kafka's builder defaults: no
    /// rebalance timeout yet, -1).
    pub fn new(member_id: &str) -> Self {
        StreamsGroupMember {
            member_id: member_id.into(),
            rebalance_timeout_ms: -1,
            ..Default::default()
        }
    }

    pub fn instance_id(&self) -> Option<&str> {
        self.extras.as_ref()?.instance_id.as_deref()
    }

    pub fn rack_id(&self) -> Option<&str> {
        self.extras.as_ref()?.rack_id.as_deref()
    }

    pub fn user_endpoint(&self) -> Option<&Endpoint> {
        self.extras.as_ref()?.user_endpoint.as_ref()
    }

    pub fn client_tags(&self) -> &BTreeMap<String, String> {
        self.extras.as_ref().map_or(&NO_TAGS, |e| &e.client_tags)
    }

    /// Changes the member's extras, boxed on first use; extras left all empty are not kept
    /// boxed, so a member whose last extra was cleared equals one that never had any (as its
    /// replayed record makes it).
    pub fn change_extras(&mut self, change: impl FnOnce(&mut MemberExtras)) {
        super::change_boxed(&mut self.extras, change);
    }

    /// Replaces the member's extras ([`StreamsGroupMember::change_extras`]).
    pub fn set_extras(&mut self, extras: MemberExtras) {
        self.change_extras(|e| *e = extras);
    }

    /// Sets the member's tasks and pending revocations, with the epoch at which each active
    /// one was given: `epoch_of(sub-topology id, partition, whether pending revocation)`.
    pub fn set_tasks(
        &mut self,
        assigned: SharedTasks,
        pending_revocation: PendingTasks,
        epoch_of: impl FnMut(&str, i32, bool) -> Option<i32>,
    ) {
        self.active_task_epochs =
            TaskEpochs::of(&assigned.active, &pending_revocation.active, epoch_of);
        self.assigned = assigned;
        self.pending_revocation = pending_revocation;
    }

    /// Its tasks (shared with its target while equal).
    pub fn assigned(&self) -> &SharedTasks {
        &self.assigned
    }

    /// Its tasks pending revocation.
    pub fn pending_revocation(&self) -> &PendingTasks {
        &self.pending_revocation
    }

    /// The epochs of its active tasks, to compare (read one with
    /// [`StreamsGroupMember::active_task_epoch`]).
    pub fn task_epochs(&self) -> &TaskEpochs {
        &self.active_task_epochs
    }

    /// The member epoch at which the active task (`subtopology`, `partition`) was given, if
    /// the member holds it or is revoking it (its revocation's epoch then).
    pub fn active_task_epoch(&self, subtopology: &str, partition: i32) -> Option<i32> {
        self.active_task_epochs.get(
            &self.assigned.active,
            &self.pending_revocation.active,
            subtopology,
            partition,
        )
    }
}

/// A streams group: metadata (17), topology (23), target assignment (20, 21) and members.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamsGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    pub validated_topology_epoch: i32,
    /// Shared by the groups whose configs are equal (nearly all of them): one entry alone in a
    /// map of its own took a 544-byte B-tree node per group.
    pub last_assignment_configs: Option<std::sync::Arc<BTreeMap<String, String>>>,
    pub stored_description_topology_epoch: i32,
    pub failed_description_topology_epoch: i32,
    /// KIP-1331 (draft): minted on creation and on every topology epoch bump.
    pub topology_description_id: Option<Uuid>,
    /// The last ids minted for the group, oldest first, at most
    /// [`MAX_TOPOLOGY_VERSIONS`]: what operators compare deployments by. Empty for a group
    /// whose log predates them.
    pub topology_versions: Vec<TopologyVersion>,
    pub topology: Option<StreamsGroupTopologyValue>,
    pub target_assignment_epoch: i32,
    pub target_assignment_timestamp: i64,
    /// Member id order, as the B-trees these were: sorted vectors, whose room follows the
    /// group's size (a B-tree's node for eleven members took 2.1 KB in a one-member group).
    /// A member's target shares its allocation with the member's assigned tasks while they are
    /// equal ([`SharedTasks`]).
    pub target_assignment: VecMap<Id, SharedTasks>,
    /// By the member id each member holds (kept once, not also as a map key).
    pub members: KeyedMap<StreamsGroupMember>,
}

/// A TopologyDescriptionId as the coordinator minted it. The plugin never sees the epoch or
/// the time (KIP-1331 hides both from it); the coordinator keeps them for the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyVersion {
    pub id: Uuid,
    pub topology_epoch: i32,
    pub minted_ms: i64,
}

/// Versions kept per group. Each costs 28 bytes in every group metadata record, which is
/// written on every group epoch bump: 32 keep a redeploy a day for a month within about 1 KB.
pub const MAX_TOPOLOGY_VERSIONS: usize = 32;

/// Kafka 4.4 starts a group at group epoch 1 with an (empty) target assignment of epoch 1, so
/// that the first computed assignment has epoch 2 and a member joining before it exists (the
/// initial rebalance delay) reconciles to epoch 1, never to the join epoch 0
/// (`TargetAssignmentMetadata.INITIAL`, KAFKA-20268).
pub const INITIAL_GROUP_EPOCH: i32 = 1;

impl StreamsGroup {
    /// A group as Kafka creates it, before any record is applied.
    pub fn new(group_id: &str) -> Self {
        StreamsGroup {
            group_id: group_id.to_string(),
            group_epoch: INITIAL_GROUP_EPOCH,
            target_assignment_epoch: INITIAL_GROUP_EPOCH,
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
    /// Hashed, not ordered: every heartbeat looks its group up, and a B-tree search compares
    /// the id with ~log2(groups) others, each a cache miss into another heap string.
    groups: hashbrown::HashMap<Id, StreamsGroup>,
}

/// The distinct assignment configs groups were last assigned with, each kept once for the
/// whole process and shared ([`StreamsGroup::last_assignment_configs`]): by every group of
/// every shard (a copy per shard was half a kilobyte in each of 50 shards), and by the
/// settings each heartbeat compares them with, so that comparing finds one pointer.
static SHARED_CONFIGS: std::sync::Mutex<Vec<std::sync::Arc<BTreeMap<String, String>>>> =
    std::sync::Mutex::new(Vec::new());

/// Distinct configs shared at most; past them (configs set group by group) each group keeps
/// its own.
const MAX_SHARED_CONFIGS: usize = 64;

/// `configs`, as the copy the process already holds when there is one. A cache: whether two
/// groups' configs are shared has no say in what they are or whether they are equal.
pub fn shared_assignment_configs(
    configs: BTreeMap<String, String>,
) -> std::sync::Arc<BTreeMap<String, String>> {
    // A panic elsewhere while holding the lock leaves the list whole (pushes are atomic).
    let mut shared = SHARED_CONFIGS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(held) = shared.iter().find(|held| ***held == configs) {
        return std::sync::Arc::clone(held);
    }
    let configs = std::sync::Arc::new(configs);
    if shared.len() < MAX_SHARED_CONFIGS {
        shared.push(std::sync::Arc::clone(&configs));
    }
    configs
}

impl StreamsGroupsImage {
    pub fn get(&self, group_id: &str) -> Option<&StreamsGroup> {
        self.groups.get(group_id)
    }

    /// The groups, in no particular order.
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
        entry_by_str(&mut self.groups, group_id, || StreamsGroup::new(group_id))
    }

    fn member_mut<'a>(&'a mut self, group_id: &str, member_id: &str) -> &'a mut StreamsGroupMember {
        self.group_mut(group_id)
            .members
            .get_or_insert_with(member_id, || StreamsGroupMember::new(member_id))
    }

    pub(crate) fn replay_metadata(
        &mut self,
        group_id: &str,
        value: Option<&StreamsGroupMetadataValue>,
    ) {
        let Some(v) = value else {
            // The group's own tombstone ends it; Kafka writes it after every member's.
            self.groups.remove(group_id);
            return;
        };
        let g = self.group_mut(group_id);
        g.group_epoch = v.epoch;
        g.metadata_hash = v.metadata_hash;
        g.validated_topology_epoch = v.validated_topology_epoch;
        let configs = v.last_assignment_configs.as_ref().map(|c| {
            c.iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect()
        });
        let configs = configs.map(shared_assignment_configs);
        let g = self.group_mut(group_id);
        g.last_assignment_configs = configs;
        g.stored_description_topology_epoch = v.stored_description_topology_epoch;
        g.failed_description_topology_epoch = v.failed_description_topology_epoch;
        g.topology_description_id = v.topology_description_id;
        g.topology_versions = v
            .topology_description_versions
            .iter()
            .flatten()
            .map(|t| TopologyVersion {
                id: t.id,
                topology_epoch: t.topology_epoch,
                minted_ms: t.minted_ms,
            })
            .collect();
    }

    pub(crate) fn replay_member_metadata(
        &mut self,
        group_id: &str,
        member_id: &str,
        value: Option<&StreamsGroupMemberMetadataValue>,
    ) {
        let Some(v) = value else {
            if let Some(g) = self.groups.get_mut(group_id) {
                g.members.remove(member_id);
            }
            return;
        };
        let m = self.member_mut(group_id, member_id);
        m.client_id = v.client_id.as_str().into();
        m.client_host = v.client_host.as_str().into();
        m.rebalance_timeout_ms = v.rebalance_timeout_ms;
        m.topology_epoch = v.topology_epoch;
        m.process_id = ProcessId::new(&v.process_id);
        m.set_extras(MemberExtras {
            instance_id: v.instance_id.clone(),
            rack_id: v.rack_id.clone(),
            user_endpoint: v.user_endpoint.as_ref().map(|e| Endpoint {
                host: e.host.clone(),
                port: e.port,
            }),
            client_tags: v
                .client_tags
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect(),
        });
    }

    pub(crate) fn replay_topology(
        &mut self,
        group_id: &str,
        value: Option<&StreamsGroupTopologyValue>,
    ) {
        match value {
            Some(v) => self.group_mut(group_id).topology = Some(v.clone()),
            None => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.topology = None;
                }
            }
        }
    }

    pub(crate) fn replay_target_metadata(
        &mut self,
        group_id: &str,
        value: Option<&StreamsGroupTargetAssignmentMetadataValue>,
    ) {
        match value {
            Some(v) => {
                let g = self.group_mut(group_id);
                g.target_assignment_epoch = v.assignment_epoch;
                g.target_assignment_timestamp = v.assignment_timestamp;
            }
            None => {
                // Kafka keeps a tombstoned assignment epoch as -1, not as the initial 1.
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
        value: Option<&StreamsGroupTargetAssignmentMemberValue>,
    ) {
        match value {
            Some(v) => {
                let mut tasks = SharedTasks::from(TasksTuple {
                    active: target_tasks(&v.active_tasks),
                    standby: target_tasks(&v.standby_tasks),
                    warmup: target_tasks(&v.warmup_tasks),
                });
                let group = self.group_mut(group_id);
                if let Some(member) = group.members.get(member_id) {
                    tasks.share_if_equal(&member.assigned);
                }
                group.target_assignment.insert(member_id.into(), tasks);
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
        value: Option<&StreamsGroupCurrentMemberAssignmentValue>,
    ) {
        let Some(v) = value else {
            if let Some(m) = self
                .groups
                .get_mut(group_id)
                .and_then(|g| g.members.get_mut(member_id))
            {
                m.member_epoch = 0;
                m.previous_member_epoch = 0;
                m.state = MemberState::Stable;
                m.set_tasks(
                    SharedTasks::default(),
                    PendingTasks::default(),
                    |_, _, _| None,
                );
            }
            return;
        };
        let mut assigned = SharedTasks::from(TasksTuple {
            active: current_tasks(&v.active_tasks),
            standby: current_tasks(&v.standby_tasks),
            warmup: current_tasks(&v.warmup_tasks),
        });
        if let Some(target) = self
            .groups
            .get(group_id)
            .and_then(|g| g.target_assignment.get(member_id))
        {
            assigned.share_if_equal(target);
        }
        let m = self.member_mut(group_id, member_id);
        m.member_epoch = v.member_epoch;
        m.previous_member_epoch = v.previous_member_epoch;
        m.state = MemberState::from_code(v.state);
        let pending = TasksTuple {
            active: current_tasks(&v.active_tasks_pending_revocation),
            standby: current_tasks(&v.standby_tasks_pending_revocation),
            warmup: current_tasks(&v.warmup_tasks_pending_revocation),
        };
        m.set_tasks(assigned, pending.into(), |s, p, pending| {
            let listed = match pending {
                true => &v.active_tasks_pending_revocation,
                false => &v.active_tasks,
            };
            recorded_epoch(listed, s, p)
        });
    }
}

fn target_tasks(ids: &[target::TaskIds]) -> Tasks {
    ids.iter()
        .map(|t| {
            (
                Id::from(t.subtopology_id.as_str()),
                t.partitions.iter().copied().collect(),
            )
        })
        .collect()
}

fn current_tasks(ids: &[current::TaskIds]) -> Tasks {
    ids.iter()
        .map(|t| {
            (
                Id::from(t.subtopology_id.as_str()),
                t.partitions.iter().copied().collect(),
            )
        })
        .collect()
}

/// The epoch record 22 gives task (`subtopology`, `partition`) in `listed`, if any. The
/// partitions are read as the coordinator writes them, sorted; in any other order, one by one.
fn recorded_epoch(listed: &[current::TaskIds], subtopology: &str, partition: i32) -> Option<i32> {
    let t = listed.iter().find(|t| t.subtopology_id == subtopology)?;
    let epochs = t.assignment_epochs.as_ref()?;
    let at = t
        .partitions
        .binary_search(&partition)
        .ok()
        .or_else(|| t.partitions.iter().position(|p| *p == partition))?;
    epochs.get(at).copied()
}

/// Record-side task lists from a `Tasks` map, in sub-topology and partition order; with the
/// epochs `member` has for them (0 for a task it has none for) when they are its active tasks.
pub fn to_current_task_ids(
    tasks: &Tasks,
    member: Option<&StreamsGroupMember>,
) -> Vec<current::TaskIds> {
    tasks
        .iter()
        .map(|(s, parts)| current::TaskIds {
            subtopology_id: s.to_string(),
            partitions: parts.iter().copied().collect(),
            assignment_epochs: member.map(|m| {
                parts
                    .iter()
                    .map(|p| m.active_task_epoch(s, *p).unwrap_or(0))
                    .collect()
            }),
            ..Default::default()
        })
        .collect()
}

pub fn to_target_task_ids(tasks: &Tasks) -> Vec<target::TaskIds> {
    tasks
        .iter()
        .map(|(s, parts)| target::TaskIds {
            subtopology_id: s.to_string(),
            partitions: parts.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_cleared_to_empty_are_not_kept_boxed() {
        let mut m = StreamsGroupMember::default();
        m.change_extras(|e| e.rack_id = Some("rack-1".into()));
        assert_eq!(m.rack_id(), Some("rack-1"));
        m.change_extras(|e| e.rack_id = None);
        assert!(m.extras.is_none(), "no empty box");
        assert_eq!(
            m,
            StreamsGroupMember::default(),
            "equal to a member that never had any"
        );
        m.set_extras(MemberExtras::default());
        assert!(m.extras.is_none());
    }

    #[test]
    fn replayed_assignment_keeps_sorted_tasks_and_the_pending_epoch_of_a_repeated_task() {
        let ids = |s: &str, parts: &[i32], epoch: i32| current::TaskIds {
            subtopology_id: s.into(),
            partitions: parts.to_vec(),
            assignment_epochs: Some(vec![epoch; parts.len()]),
            ..Default::default()
        };
        let mut image = StreamsGroupsImage::default();
        let value = StreamsGroupCurrentMemberAssignmentValue {
            member_epoch: 3,
            active_tasks: vec![
                current::TaskIds {
                    assignment_epochs: Some(vec![7, 3]),
                    ..ids("b", &[4, 0], 0)
                },
                ids("a", &[1], 2),
            ],
            active_tasks_pending_revocation: vec![ids("a", &[1, 5], 1)],
            ..Default::default()
        };
        image.replay_current_assignment("g", "m", Some(&value));
        let m = &image.get("g").unwrap().members["m"];
        let active: Vec<(&str, Vec<i32>)> = m
            .assigned
            .active
            .iter()
            .map(|(s, p)| (s.as_str(), p.iter().copied().collect()))
            .collect();
        assert_eq!(active, [("a", vec![1]), ("b", vec![0, 4])]);
        let epochs: Vec<Option<i32>> = [("a", 1), ("a", 5), ("b", 0), ("b", 4), ("b", 1)]
            .iter()
            .map(|(s, p)| m.active_task_epoch(s, *p))
            .collect();
        assert_eq!(
            epochs,
            [Some(1), Some(1), Some(3), Some(7), None],
            "a-1 takes its pending epoch; b's unsorted partitions keep their own epochs"
        );
        assert_eq!(
            m.pending_revocation.active,
            [(Id::from("a"), crate::VecSet::from([1, 5]))].into()
        );
    }

    #[test]
    fn replay_shares_a_members_assigned_tasks_with_its_equal_target_in_either_order() {
        let target = |parts: &[i32]| StreamsGroupTargetAssignmentMemberValue {
            active_tasks: vec![target::TaskIds {
                subtopology_id: "0".into(),
                partitions: parts.to_vec(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let current = |parts: &[i32]| StreamsGroupCurrentMemberAssignmentValue {
            member_epoch: 2,
            active_tasks: vec![current::TaskIds {
                subtopology_id: "0".into(),
                partitions: parts.to_vec(),
                assignment_epochs: Some(vec![2; parts.len()]),
                ..Default::default()
            }],
            ..Default::default()
        };
        let shared = |image: &StreamsGroupsImage| {
            let g = image.get("g").unwrap();
            g.members["m"]
                .assigned
                .is_shared_with(&g.target_assignment["m"])
        };
        let mut image = StreamsGroupsImage::default();
        image.replay_target_member("g", "m", Some(&target(&[0, 1])));
        image.replay_current_assignment("g", "m", Some(&current(&[0])));
        assert!(
            !shared(&image),
            "a member still reconciling holds its own tasks"
        );
        image.replay_current_assignment("g", "m", Some(&current(&[0, 1])));
        assert!(shared(&image), "current replayed after an equal target");
        image.replay_target_member("g", "m", Some(&target(&[1])));
        assert!(!shared(&image));
        assert_eq!(
            image.get("g").unwrap().members["m"].assigned.active["0"].as_slice(),
            [0, 1]
        );
        image.replay_current_assignment("g", "m", Some(&current(&[1])));
        image.replay_target_member("g", "m", Some(&target(&[1])));
        assert!(shared(&image), "target replayed after an equal current");
    }

    #[test]
    fn groups_of_every_image_share_one_copy_of_equal_assignment_configs() {
        let value = |configs: &[(&str, &str)]| StreamsGroupMetadataValue {
            epoch: 2,
            last_assignment_configs: Some(
                configs
                    .iter()
                    .map(|(k, v)| {
                        kcoord_wire::records::streams_group_metadata_value::LastAssignmentConfig {
                            key: k.to_string(),
                            value: v.to_string(),
                            ..Default::default()
                        }
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        let configs = |image: &StreamsGroupsImage, group: &str| {
            image
                .get(group)
                .unwrap()
                .last_assignment_configs
                .clone()
                .unwrap()
        };
        // Keys no other test uses, so the process's shared list cannot already hold them.
        let (mut a, mut b) = (StreamsGroupsImage::default(), StreamsGroupsImage::default());
        a.replay_metadata("g1", Some(&value(&[("shared.test.key", "1")])));
        b.replay_metadata("g2", Some(&value(&[("shared.test.key", "1")])));
        a.replay_metadata("g3", Some(&value(&[("shared.test.key", "2")])));
        assert!(std::sync::Arc::ptr_eq(
            &configs(&a, "g1"),
            &configs(&b, "g2")
        ));
        assert!(!std::sync::Arc::ptr_eq(
            &configs(&a, "g1"),
            &configs(&a, "g3")
        ));
        let settings = shared_assignment_configs(BTreeMap::from([(
            "shared.test.key".to_string(),
            "1".to_string(),
        )]));
        assert!(std::sync::Arc::ptr_eq(&settings, &configs(&b, "g2")));
        assert_eq!(configs(&a, "g3")["shared.test.key"], "2");
    }
}
