//! The group RPCs other than the heartbeat and the offsets ([`crate::commits`]):
//! StreamsGroupDescribe, ListGroups, DeleteGroups and DescribeGroups
//! (docs/kafka-coordinator-facts.md §4, §12).
use kcoord_metadata::{Record, StreamsGroup, StreamsGroupMember, Tasks, TasksTuple};
use kcoord_wire::messages::streams_group_describe_response as d;
use kcoord_wire::records::OffsetCommitKey;
use kcoord_wire::ErrorCode;

use kcoord_wire::messages::describe_groups_response::DescribedGroup;

use crate::classic::ClassicGroupState;
use crate::effects::{Effect, GroupEffect};
use crate::error::{CoordinatorError, Result};
use crate::record_builders;
use crate::shard::{group_state, CoordinatorShard, GroupState};
use crate::Outcome;

/// The protocol type and group type Kafka reports for streams groups.
pub const STREAMS: &str = "streams";
/// The group type of classic groups.
pub const CLASSIC: &str = "classic";

/// One entry of ListGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub group_state: String,
    pub group_type: String,
}

impl CoordinatorShard {
    /// StreamsGroupDescribe without the KIP-1331 fields (the server adds those).
    pub fn describe_streams_groups(&self, group_ids: &[String]) -> Vec<d::DescribedGroup> {
        group_ids.iter().map(|id| self.describe_one(id)).collect()
    }

    fn describe_one(&self, group_id: &str) -> d::DescribedGroup {
        let Some(group) = self.group(group_id) else {
            // `streamsGroupDescribe` looks the group up with `group()`: "Group X not found.".
            let e = self.missing_streams_group(group_id, true);
            return d::DescribedGroup {
                group_id: group_id.to_string(),
                error_code: e.code.code(),
                error_message: e.message,
                ..Default::default()
            };
        };
        let configured = self
            .soft
            .get(group_id)
            .and_then(|s| s.configured.as_ref())
            .map(|(_, _, c)| c.clone());
        d::DescribedGroup {
            group_id: group_id.to_string(),
            group_state: group_state(group).as_str().to_string(),
            group_epoch: group.group_epoch,
            assignment_epoch: group.target_assignment_epoch,
            topology: group
                .topology
                .as_ref()
                .map(|t| describe_topology(t, configured.as_deref())),
            members: group
                .members
                .values()
                .map(|m| {
                    let offsets = self
                        .soft
                        .get(group_id)
                        .and_then(|s| s.task_offsets.get(m.member_id.as_str()));
                    describe_member(
                        m,
                        group
                            .target_assignment
                            .get(m.member_id.as_str())
                            .map(|t| &**t),
                        offsets,
                    )
                })
                .collect(),
            assignor_name: Some(crate::assignor::STICKY_ASSIGNOR_NAME.to_string()),
            ..Default::default()
        }
    }

    /// Every group: streams groups, and groups that only have committed offsets (Kafka's
    /// "simple" classic groups).
    pub fn list_groups(&self) -> Vec<ListedGroup> {
        let state = self.store.state();
        let mut out: Vec<ListedGroup> = state
            .streams_groups
            .iter()
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: STREAMS.into(),
                group_state: group_state(g).as_str().into(),
                group_type: STREAMS.into(),
            })
            .collect();
        out.extend(self.classic_groups().map(|g| ListedGroup {
            group_id: g.group_id.to_string(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            group_state: g.state.name().into(),
            group_type: CLASSIC.into(),
        }));
        out.extend(state.consumer_groups.iter().map(|g| {
            ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: crate::consumer::CONSUMER.into(),
                group_state: crate::consumer::admin::consumer_group_state(g)
                    .as_str()
                    .into(),
                group_type: crate::consumer::CONSUMER.into(),
            }
        }));
        for group_id in state.offsets.group_ids() {
            if state.streams_groups.get(group_id).is_none()
                && self.classic_group(group_id).is_none()
                && state.consumer_groups.get(group_id).is_none()
            {
                out.push(ListedGroup {
                    group_id: group_id.to_string(),
                    protocol_type: String::new(),
                    group_state: "Empty".into(),
                    group_type: CLASSIC.into(),
                });
            }
        }
        // Kafka lists groups in no particular order; sorted, the answer does not depend on hashing.
        out.sort_unstable_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }

    /// DeleteGroups for one group: an empty streams group (or an offsets-only group) is removed
    /// with its offsets; the tombstones follow Kafka's order.
    pub fn delete_group(&self, group_id: &str) -> Outcome<Result<()>> {
        let state = self.store.state();
        let mut records: Vec<Record> = Vec::new();
        match state.streams_groups.get(group_id) {
            Some(g) if group_state(g) != GroupState::Empty => {
                return Outcome::answer(Err(CoordinatorError {
                    code: ErrorCode::NON_EMPTY_GROUP,
                    message: None,
                }))
            }
            Some(g) => records.extend(record_builders::delete_group(g)),
            None if state.consumer_groups.get(group_id).is_some() => {
                let deleted = state
                    .consumer_groups
                    .get(group_id)
                    .map(|g| self.delete_consumer_group_records(g));
                match deleted {
                    Some(Ok(tombstones)) => records.extend(tombstones),
                    Some(Err(e)) => return Outcome::answer(Err(e)),
                    None => {}
                }
            }
            None => match self.classic_group(group_id) {
                Some(g) if !g.is(ClassicGroupState::Empty) => {
                    return Outcome::answer(Err(CoordinatorError {
                        code: ErrorCode::NON_EMPTY_GROUP,
                        message: None,
                    }))
                }
                Some(_) => records.extend(self.expire_classic_group(group_id)),
                None if state.offsets.group(group_id).is_none() => {
                    return Outcome::answer(Err(CoordinatorError::new(
                        ErrorCode::GROUP_ID_NOT_FOUND,
                        format!("Group {group_id} not found."),
                    )))
                }
                None => {}
            },
        }
        if let Some(offsets) = state.offsets.group(group_id) {
            for (topic, partition) in offsets.keys() {
                records.push(Record::OffsetCommit(
                    OffsetCommitKey {
                        group: group_id.into(),
                        topic: topic.clone(),
                        partition: *partition,
                        ..Default::default()
                    },
                    None,
                ));
            }
        }
        Outcome {
            records: crate::at_latest_version(records),
            response: Ok(()),
            effects: vec![
                Effect::Group(GroupEffect::Gone {
                    group_id: group_id.into(),
                }),
                Effect::Classic(crate::classic::ClassicEffect::Group {
                    group_id: group_id.into(),
                    group: None,
                }),
            ],
        }
    }

    /// DeleteGroups for several groups of this shard, each as [`CoordinatorShard::delete_group`]
    /// decides it, in one batch (the deletions of different groups are independent).
    pub fn delete_groups(&self, group_ids: &[String]) -> Outcome<Vec<Result<()>>> {
        let mut all = Outcome::answer(Vec::with_capacity(group_ids.len()));
        for group_id in group_ids {
            let one = self.delete_group(group_id);
            all.records.extend(one.records);
            all.effects.extend(one.effects);
            all.response.push(one.response);
        }
        all
    }

    /// DescribeGroups (the classic API), without the authorized operations: a streams or
    /// consumer group is not a classic group; a group known only by its offsets is an Empty one.
    pub fn describe_classic_group(
        &self,
        group_id: &str,
    ) -> std::result::Result<DescribedGroup, CoordinatorError> {
        let state = self.store.state();
        // Kafka's `classicGroup(groupId)`: a streams or consumer group is of another type.
        if state.streams_groups.get(group_id).is_some()
            || state.consumer_groups.get(group_id).is_some()
        {
            return Err(CoordinatorError::new(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Group {group_id} is not a classic group."),
            ));
        }
        if let Some(group) = self.classic_group(group_id) {
            return Ok(crate::classic::describe(group));
        }
        if state.offsets.group(group_id).is_some() {
            return Ok(DescribedGroup {
                group_id: group_id.to_owned(),
                group_state: ClassicGroupState::Empty.name().to_owned(),
                ..Default::default()
            });
        }
        Err(CoordinatorError::new(
            ErrorCode::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} not found."),
        ))
    }
}

/// `StreamsGroup.isSubscribedToTopic`: an empty group subscribes to nothing (so its offsets can
/// be deleted and expire); otherwise the source and repartition source topics.
pub(crate) fn subscribed_to(group: &StreamsGroup, topic: &str) -> bool {
    if group.members.is_empty() {
        return false;
    }
    group.topology.as_ref().is_some_and(|t| {
        t.subtopologies.iter().any(|s| {
            s.source_topics.iter().any(|x| x == topic)
                || s.repartition_source_topics.iter().any(|r| r.name == topic)
        })
    })
}

fn task_ids(tasks: &Tasks) -> Vec<d::TaskIds> {
    tasks
        .iter()
        .map(|(s, p)| d::TaskIds {
            subtopology_id: s.to_string(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

fn assignment(t: &TasksTuple) -> d::Assignment {
    d::Assignment {
        active_tasks: task_ids(&t.active),
        standby_tasks: task_ids(&t.standby),
        warmup_tasks: task_ids(&t.warmup),
        ..Default::default()
    }
}

/// `taskOffsetsFromMap`: by sub-topology id, then partition.
fn task_offsets(offsets: Option<&crate::soft_state::TaskOffsets>) -> Vec<d::TaskOffset> {
    offsets
        .into_iter()
        .flatten()
        .map(|(task, offset)| d::TaskOffset {
            subtopology_id: task.subtopology.clone(),
            partition: task.partition,
            offset: *offset,
            ..Default::default()
        })
        .collect()
}

fn describe_member(
    m: &StreamsGroupMember,
    target: Option<&TasksTuple>,
    offsets: Option<&crate::soft_state::MemberTaskOffsets>,
) -> d::Member {
    d::Member {
        member_id: m.member_id.to_string(),
        member_epoch: m.member_epoch,
        instance_id: m.instance_id().map(str::to_owned),
        rack_id: m.rack_id().map(str::to_owned),
        client_id: m.client_id.to_string(),
        client_host: m.client_host.to_string(),
        topology_epoch: m.topology_epoch,
        process_id: m.process_id.to_string(),
        user_endpoint: m.user_endpoint().map(|e| d::Endpoint {
            host: e.host.clone(),
            port: e.port,
            ..Default::default()
        }),
        client_tags: m
            .client_tags()
            .iter()
            .map(|(k, v)| d::KeyValue {
                key: k.clone(),
                value: v.clone(),
                ..Default::default()
            })
            .collect(),
        assignment: assignment(m.assigned()),
        target_assignment: target.map(assignment).unwrap_or_default(),
        task_offsets: task_offsets(offsets.map(|o| &o.offsets)),
        task_end_offsets: task_offsets(offsets.map(|o| &o.end_offsets)),
        is_classic: false,
        ..Default::default()
    }
}

/// The topology as described: the configured one when ready (with computed partition counts),
/// else the one members sent.
fn describe_topology(
    t: &kcoord_wire::records::StreamsGroupTopologyValue,
    configured: Option<&crate::configured_topology::ConfiguredTopology>,
) -> d::Topology {
    let info = |i: &kcoord_wire::records::streams_group_topology_value::TopicInfo| d::TopicInfo {
        name: i.name.clone(),
        partitions: i.partitions,
        replication_factor: i.replication_factor,
        topic_configs: i
            .topic_configs
            .iter()
            .map(|c| d::KeyValue {
                key: c.key.clone(),
                value: c.value.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let ready = configured.filter(|c| c.status.is_none() && c.epoch == t.epoch);
    let subtopologies = match ready {
        Some(c) => c
            .subtopologies
            .values()
            .map(|s| {
                let internal =
                    |i: &crate::configured_topology::ConfiguredInternalTopic| d::TopicInfo {
                        name: i.name.clone(),
                        partitions: i.partitions,
                        replication_factor: i.replication_factor,
                        topic_configs: i
                            .configs
                            .iter()
                            .map(|(k, v)| d::KeyValue {
                                key: k.clone(),
                                value: v.clone(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    };
                d::Subtopology {
                    subtopology_id: s.id.clone(),
                    source_topics: s.source_topics.iter().cloned().collect(),
                    repartition_sink_topics: s.repartition_sink_topics.iter().cloned().collect(),
                    state_changelog_topics: s
                        .state_changelog_topics
                        .values()
                        .map(internal)
                        .collect(),
                    repartition_source_topics: s
                        .repartition_source_topics
                        .values()
                        .map(internal)
                        .collect(),
                    ..Default::default()
                }
            })
            .collect(),
        None => t
            .subtopologies
            .iter()
            .map(|s| d::Subtopology {
                subtopology_id: s.subtopology_id.clone(),
                source_topics: s.source_topics.clone(),
                repartition_sink_topics: s.repartition_sink_topics.clone(),
                state_changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
                repartition_source_topics: s.repartition_source_topics.iter().map(info).collect(),
                ..Default::default()
            })
            .collect(),
    };
    d::Topology {
        epoch: t.epoch,
        subtopologies: Some(subtopologies),
        ..Default::default()
    }
}
