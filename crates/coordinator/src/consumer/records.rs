//! The consumer group records a handler writes (Kafka's `GroupCoordinatorRecordHelpers`).
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, Record, ResolvedRegex, TopicPartitions};
use kcoord_wire::records as r;

/// ConsumerGroupMetadata: the group epoch and the metadata hash.
pub fn group_epoch(group_id: &str, epoch: i32, metadata_hash: i64) -> Record {
    Record::ConsumerGroupMetadata(
        r::ConsumerGroupMetadataKey {
            group_id: group_id.into(),
            ..Default::default()
        },
        Some(r::ConsumerGroupMetadataValue {
            epoch,
            metadata_hash,
            ..Default::default()
        }),
    )
}

fn member_key(group_id: &str, member_id: &str) -> r::ConsumerGroupMemberMetadataKey {
    r::ConsumerGroupMemberMetadataKey {
        group_id: group_id.into(),
        member_id: member_id.into(),
        ..Default::default()
    }
}

/// ConsumerGroupMemberMetadata: the member's subscription.
pub fn member_subscription(group_id: &str, m: &ConsumerGroupMember) -> Record {
    Record::ConsumerGroupMemberMetadata(
        member_key(group_id, &m.member_id),
        Some(r::ConsumerGroupMemberMetadataValue {
            instance_id: m.instance_id().map(str::to_owned),
            rack_id: m.rack_id().map(str::to_owned),
            client_id: m.client_id.to_string(),
            client_host: m.client_host.to_string(),
            subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
            subscribed_topic_regex: Some(m.subscribed_topic_regex.clone()),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: m.server_assignor().map(str::to_owned),
            classic_member_metadata: m.classic_member_metadata.as_deref().cloned(),
            ..Default::default()
        }),
    )
}

/// ConsumerGroupCurrentMemberAssignment: the member's epochs, state and partitions.
pub fn current_assignment(group_id: &str, m: &ConsumerGroupMember) -> Record {
    use kcoord_metadata::image::consumer_groups::to_current_topic_partitions;
    Record::ConsumerGroupCurrentMemberAssignment(
        r::ConsumerGroupCurrentMemberAssignmentKey {
            group_id: group_id.into(),
            member_id: m.member_id.to_string(),
            ..Default::default()
        },
        Some(r::ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state.code(),
            assigned_partitions: to_current_topic_partitions(&m.assigned),
            partitions_pending_revocation: to_current_topic_partitions(&m.pending_revocation),
            ..Default::default()
        }),
    )
}

/// ConsumerGroupTargetAssignmentMember: the partitions the target gives the member.
pub fn target_member(group_id: &str, member_id: &str, partitions: &TopicPartitions) -> Record {
    use r::consumer_group_target_assignment_member_value::TopicPartition;
    Record::ConsumerGroupTargetAssignmentMember(
        r::ConsumerGroupTargetAssignmentMemberKey {
            group_id: group_id.into(),
            member_id: member_id.into(),
            ..Default::default()
        },
        Some(r::ConsumerGroupTargetAssignmentMemberValue {
            topic_partitions: partitions
                .iter()
                .map(|(topic, parts)| TopicPartition {
                    topic_id: *topic,
                    partitions: parts.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    )
}

/// ConsumerGroupTargetAssignmentMetadata: the epoch of the target assignment.
pub fn target_metadata(group_id: &str, epoch: i32, timestamp: i64) -> Record {
    Record::ConsumerGroupTargetAssignmentMetadata(
        r::ConsumerGroupTargetAssignmentMetadataKey {
            group_id: group_id.into(),
            ..Default::default()
        },
        Some(r::ConsumerGroupTargetAssignmentMetadataValue {
            assignment_epoch: epoch,
            assignment_timestamp: timestamp,
            ..Default::default()
        }),
    )
}

/// ConsumerGroupRegularExpression: a resolved regular expression, or its tombstone.
pub fn regex(group_id: &str, regex: &str, resolved: Option<&ResolvedRegex>) -> Record {
    Record::ConsumerGroupRegularExpression(
        r::ConsumerGroupRegularExpressionKey {
            group_id: group_id.into(),
            regular_expression: regex.into(),
            ..Default::default()
        },
        resolved.map(|v| r::ConsumerGroupRegularExpressionValue {
            topics: v.topics.iter().cloned().collect(),
            version: v.version,
            timestamp: v.timestamp,
            ..Default::default()
        }),
    )
}

/// `removeMember`: the member's current assignment, target assignment and subscription go,
/// in that order.
pub fn remove_member(group_id: &str, member_id: &str) -> Vec<Record> {
    vec![
        Record::ConsumerGroupCurrentMemberAssignment(
            r::ConsumerGroupCurrentMemberAssignmentKey {
                group_id: group_id.into(),
                member_id: member_id.into(),
                ..Default::default()
            },
            None,
        ),
        Record::ConsumerGroupTargetAssignmentMember(
            r::ConsumerGroupTargetAssignmentMemberKey {
                group_id: group_id.into(),
                member_id: member_id.into(),
                ..Default::default()
            },
            None,
        ),
        Record::ConsumerGroupMemberMetadata(member_key(group_id, member_id), None),
    ]
}

/// The deprecated ConsumerGroupPartitionMetadata's tombstone, which Kafka 4.4 writes once it
/// computes the group's metadata hash.
pub fn partition_metadata_tombstone(group_id: &str) -> Record {
    Record::ConsumerGroupPartitionMetadata(
        r::ConsumerGroupPartitionMetadataKey {
            group_id: group_id.into(),
            ..Default::default()
        },
        None,
    )
}

/// `ConsumerGroup.createGroupTombstoneRecords`: every member's current assignment, target
/// assignment and subscription, the target metadata, the regexes, the partition metadata,
/// then the group itself.
pub fn delete_group(g: &ConsumerGroup) -> Vec<Record> {
    let gid = g.group_id.as_str();
    let mut out = Vec::new();
    for id in g.members.keys() {
        out.push(remove_member(gid, id).swap_remove(0));
    }
    for id in g.members.keys() {
        out.push(remove_member(gid, id).swap_remove(1));
    }
    out.push(Record::ConsumerGroupTargetAssignmentMetadata(
        r::ConsumerGroupTargetAssignmentMetadataKey {
            group_id: gid.into(),
            ..Default::default()
        },
        None,
    ));
    for id in g.members.keys() {
        out.push(Record::ConsumerGroupMemberMetadata(
            member_key(gid, id),
            None,
        ));
    }
    for regex in g.resolved_regexes.keys() {
        out.push(self::regex(gid, regex, None));
    }
    out.push(partition_metadata_tombstone(gid));
    out.push(Record::ConsumerGroupMetadata(
        r::ConsumerGroupMetadataKey {
            group_id: gid.into(),
            ..Default::default()
        },
        None,
    ));
    out
}
