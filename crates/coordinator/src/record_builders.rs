//! Builders of the streams-group records (coordinator record types 17, 19-23), in the shapes
//! Kafka's `StreamsCoordinatorRecordHelpers` writes them.
use std::collections::BTreeMap;

use kcoord_metadata::image::streams::{to_current_task_ids, to_target_task_ids};
use kcoord_metadata::{
    Record, StreamsGroup, StreamsGroupMember, TasksTuple, TopologyVersion, MAX_TOPOLOGY_VERSIONS,
};
use kcoord_wire::messages::streams_group_heartbeat_request as req;
use kcoord_wire::records::{
    streams_group_member_metadata_value as member_value,
    streams_group_metadata_value as group_value, streams_group_topology_value as topo,
    StreamsGroupCurrentMemberAssignmentKey, StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue, StreamsGroupMetadataKey,
    StreamsGroupMetadataValue, StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue, StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue, StreamsGroupTopologyKey, StreamsGroupTopologyValue,
};
use uuid::Uuid;

pub fn group_metadata(
    group_id: &str,
    epoch: i32,
    metadata_hash: i64,
    validated_topology_epoch: i32,
    assignment_configs: &BTreeMap<String, String>,
    group: &StreamsGroup,
    description_id: DescriptionId,
) -> Record {
    let topology_description_id = description_id.id;
    Record::StreamsGroupMetadata(
        StreamsGroupMetadataKey {
            group_id: group_id.to_string(),
            ..Default::default()
        },
        Some(StreamsGroupMetadataValue {
            epoch,
            metadata_hash,
            validated_topology_epoch,
            last_assignment_configs: Some(
                assignment_configs
                    .iter()
                    .map(|(k, v)| group_value::LastAssignmentConfig {
                        key: k.clone(),
                        value: v.clone(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            stored_description_topology_epoch: group.stored_description_topology_epoch,
            failed_description_topology_epoch: group.failed_description_topology_epoch,
            topology_description_id,
            topology_description_versions: Some(topology_versions(
                group,
                description_id.minted(group),
            )),
            ..Default::default()
        }),
    )
}

/// The group's TopologyDescriptionId as a metadata record carries it: when it is not the
/// group's current id it was just minted, for `topology_epoch` at `now`, and joins the
/// group's versions.
#[derive(Debug, Clone, Copy)]
pub struct DescriptionId {
    pub id: Option<Uuid>,
    pub topology_epoch: i32,
    pub now: i64,
}

impl DescriptionId {
    fn minted(&self, group: &StreamsGroup) -> Option<TopologyVersion> {
        self.id
            .filter(|id| group.topology_description_id != Some(*id))
            .map(|id| TopologyVersion {
                id,
                topology_epoch: self.topology_epoch,
                minted_ms: self.now,
            })
    }
}

/// The group's kept versions with `minted` appended, the oldest dropped past
/// [`MAX_TOPOLOGY_VERSIONS`].
fn topology_versions(
    group: &StreamsGroup,
    minted: Option<TopologyVersion>,
) -> Vec<group_value::TopologyDescriptionVersion> {
    let all: Vec<&TopologyVersion> = group.topology_versions.iter().chain(&minted).collect();
    let skip = all.len().saturating_sub(MAX_TOPOLOGY_VERSIONS);
    all.into_iter()
        .skip(skip)
        .map(|v| group_value::TopologyDescriptionVersion {
            id: v.id,
            topology_epoch: v.topology_epoch,
            minted_ms: v.minted_ms,
            ..Default::default()
        })
        .collect()
}

/// The group metadata record with only the epoch changed (fencing a member).
pub fn bumped_group_metadata(group: &StreamsGroup, epoch: i32) -> Record {
    let configs = group
        .last_assignment_configs
        .as_deref()
        .cloned()
        .unwrap_or_default();
    group_metadata(
        &group.group_id,
        epoch,
        group.metadata_hash,
        group.validated_topology_epoch,
        &configs,
        group,
        DescriptionId {
            id: group.topology_description_id,
            topology_epoch: group.topology_epoch().unwrap_or(-1),
            now: 0,
        },
    )
}

pub fn member_metadata(group_id: &str, m: &StreamsGroupMember) -> Record {
    Record::StreamsGroupMemberMetadata(
        StreamsGroupMemberMetadataKey {
            group_id: group_id.to_string(),
            member_id: m.member_id.to_string(),
            ..Default::default()
        },
        Some(StreamsGroupMemberMetadataValue {
            instance_id: m.instance_id().map(str::to_owned),
            rack_id: m.rack_id().map(str::to_owned),
            client_id: m.client_id.to_string(),
            client_host: m.client_host.to_string(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            topology_epoch: m.topology_epoch,
            process_id: m.process_id.to_string(),
            user_endpoint: m.user_endpoint().map(|e| member_value::Endpoint {
                host: e.host.clone(),
                port: e.port,
                ..Default::default()
            }),
            client_tags: m
                .client_tags()
                .iter()
                .map(|(k, v)| member_value::KeyValue {
                    key: k.clone(),
                    value: v.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    )
}

pub fn current_assignment(group_id: &str, m: &StreamsGroupMember) -> Record {
    Record::StreamsGroupCurrentMemberAssignment(
        StreamsGroupCurrentMemberAssignmentKey {
            group_id: group_id.to_string(),
            member_id: m.member_id.to_string(),
            ..Default::default()
        },
        Some(StreamsGroupCurrentMemberAssignmentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state.code(),
            active_tasks: to_current_task_ids(&m.assigned().active, Some(m)),
            standby_tasks: to_current_task_ids(&m.assigned().standby, None),
            warmup_tasks: to_current_task_ids(&m.assigned().warmup, None),
            active_tasks_pending_revocation: to_current_task_ids(
                &m.pending_revocation().active,
                Some(m),
            ),
            standby_tasks_pending_revocation: to_current_task_ids(
                &m.pending_revocation().standby,
                None,
            ),
            warmup_tasks_pending_revocation: to_current_task_ids(
                &m.pending_revocation().warmup,
                None,
            ),
            ..Default::default()
        }),
    )
}

pub fn target_member(group_id: &str, member_id: &str, tasks: &TasksTuple) -> Record {
    Record::StreamsGroupTargetAssignmentMember(
        StreamsGroupTargetAssignmentMemberKey {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
            ..Default::default()
        },
        Some(StreamsGroupTargetAssignmentMemberValue {
            active_tasks: to_target_task_ids(&tasks.active),
            standby_tasks: to_target_task_ids(&tasks.standby),
            warmup_tasks: to_target_task_ids(&tasks.warmup),
            ..Default::default()
        }),
    )
}

pub fn target_metadata(group_id: &str, epoch: i32, timestamp: i64) -> Record {
    Record::StreamsGroupTargetAssignmentMetadata(
        StreamsGroupTargetAssignmentMetadataKey {
            group_id: group_id.to_string(),
            ..Default::default()
        },
        Some(StreamsGroupTargetAssignmentMetadataValue {
            assignment_epoch: epoch,
            assignment_timestamp: timestamp,
            ..Default::default()
        }),
    )
}

pub fn topology(group_id: &str, value: &StreamsGroupTopologyValue) -> Record {
    Record::StreamsGroupTopology(
        StreamsGroupTopologyKey {
            group_id: group_id.to_string(),
            ..Default::default()
        },
        Some(value.clone()),
    )
}

/// The tombstones that remove a member, in Kafka's order (22, 21, 19).
pub fn member_tombstones(group_id: &str, member_id: &str) -> Vec<Record> {
    vec![
        Record::StreamsGroupCurrentMemberAssignment(
            StreamsGroupCurrentMemberAssignmentKey {
                group_id: group_id.into(),
                member_id: member_id.into(),
                ..Default::default()
            },
            None,
        ),
        Record::StreamsGroupTargetAssignmentMember(
            StreamsGroupTargetAssignmentMemberKey {
                group_id: group_id.into(),
                member_id: member_id.into(),
                ..Default::default()
            },
            None,
        ),
        Record::StreamsGroupMemberMetadata(
            StreamsGroupMemberMetadataKey {
                group_id: group_id.into(),
                member_id: member_id.into(),
                ..Default::default()
            },
            None,
        ),
    ]
}

/// Why a member was removed, as the group metadata record that bumps the epoch for it says
/// (kcoord's tagged field): the tombstones alone cannot tell a leave from a fencing, and the
/// rebalance timeline answers "who was fenced".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum Removal {
    Left = 1,
    SessionTimeout = 2,
    RebalanceTimeout = 3,
}

/// `streamsGroupFenceMember`: remove the member and bump the group epoch; the last member
/// leaving also moves the assignment epoch, with timestamp 0 so the next assignment is not
/// held back by the assignment interval.
pub fn fence_member(group: &StreamsGroup, member_id: &str, why: Removal) -> Vec<Record> {
    let mut records = member_tombstones(&group.group_id, member_id);
    let epoch = group.group_epoch + 1;
    let mut bumped = bumped_group_metadata(group, epoch);
    if let Record::StreamsGroupMetadata(_, Some(value)) = &mut bumped {
        value.removed_member_id = Some(member_id.to_owned());
        value.removal_reason = why as i8;
    }
    records.push(bumped);
    if group.members.len() == 1 && group.members.contains_key(member_id) {
        records.push(target_metadata(&group.group_id, epoch, 0));
    }
    records
}

/// `replaceStreamsMember`: the old static member's records move to the new member id.
pub fn replace_member(
    group: &StreamsGroup,
    old: &StreamsGroupMember,
    new: &StreamsGroupMember,
) -> Vec<Record> {
    let mut records = member_tombstones(&group.group_id, &old.member_id);
    records.push(member_metadata(&group.group_id, new));
    let target = group
        .target_assignment
        .get(old.member_id.as_str())
        .cloned()
        .unwrap_or_default();
    records.push(target_member(&group.group_id, &new.member_id, &target));
    records.push(current_assignment(&group.group_id, new));
    records
}

/// Deleting a group: tombstones in Kafka's order 22*, 21*, 20, 19*, 17, 23.
pub fn delete_group(group: &StreamsGroup) -> Vec<Record> {
    let g = group.group_id.as_str();
    let members: Vec<&crate::shard::Id> = group.members.keys().collect();
    let mut records = Vec::new();
    for m in &members {
        records.push(Record::StreamsGroupCurrentMemberAssignment(
            StreamsGroupCurrentMemberAssignmentKey {
                group_id: g.into(),
                member_id: m.to_string(),
                ..Default::default()
            },
            None,
        ));
    }
    for m in group.target_assignment.keys() {
        records.push(Record::StreamsGroupTargetAssignmentMember(
            StreamsGroupTargetAssignmentMemberKey {
                group_id: g.into(),
                member_id: m.to_string(),
                ..Default::default()
            },
            None,
        ));
    }
    records.push(Record::StreamsGroupTargetAssignmentMetadata(
        StreamsGroupTargetAssignmentMetadataKey {
            group_id: g.into(),
            ..Default::default()
        },
        None,
    ));
    for m in &members {
        records.push(Record::StreamsGroupMemberMetadata(
            StreamsGroupMemberMetadataKey {
                group_id: g.into(),
                member_id: m.to_string(),
                ..Default::default()
            },
            None,
        ));
    }
    records.push(Record::StreamsGroupMetadata(
        StreamsGroupMetadataKey {
            group_id: g.into(),
            ..Default::default()
        },
        None,
    ));
    records.push(Record::StreamsGroupTopology(
        StreamsGroupTopologyKey {
            group_id: g.into(),
            ..Default::default()
        },
        None,
    ));
    records
}

/// The record form of a heartbeat's topology (field order differs between the two schemas).
pub fn topology_value(t: &req::Topology) -> StreamsGroupTopologyValue {
    let info = |i: &req::TopicInfo| topo::TopicInfo {
        name: i.name.clone(),
        partitions: i.partitions,
        replication_factor: i.replication_factor,
        topic_configs: i
            .topic_configs
            .iter()
            .map(|kv| topo::TopicConfig {
                key: kv.key.clone(),
                value: kv.value.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    StreamsGroupTopologyValue {
        epoch: t.epoch,
        subtopologies: t
            .subtopologies
            .iter()
            .map(|s| topo::Subtopology {
                subtopology_id: s.subtopology_id.clone(),
                source_topics: s.source_topics.clone(),
                source_topic_regex: s.source_topic_regex.clone(),
                state_changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
                repartition_sink_topics: s.repartition_sink_topics.clone(),
                repartition_source_topics: s.repartition_source_topics.iter().map(info).collect(),
                copartition_groups: s
                    .copartition_groups
                    .iter()
                    .map(|c| topo::CopartitionGroup {
                        source_topics: c.source_topics.clone(),
                        source_topic_regex: c.source_topic_regex.clone(),
                        repartition_source_topics: c.repartition_source_topics.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Kafka's `StreamsTopology.equals`: the same epoch and, keyed by sub-topology id, equal
/// sub-topologies. The order of the sub-topologies does not matter (Kafka keeps them in a map);
/// the order of every list inside one does (the generated record classes compare lists).
pub fn same_topology(a: &StreamsGroupTopologyValue, b: &StreamsGroupTopologyValue) -> bool {
    fn by_id(
        t: &StreamsGroupTopologyValue,
    ) -> std::collections::BTreeMap<&str, &topo::Subtopology> {
        // A repeated id keeps its last entry (Kafka's `Collectors.toMap` throws instead).
        t.subtopologies
            .iter()
            .map(|s| (s.subtopology_id.as_str(), s))
            .collect()
    }
    a.epoch == b.epoch && by_id(a) == by_id(b)
}
