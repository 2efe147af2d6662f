//! Finding the member a heartbeat is from: a new or known dynamic member, a static member
//! (replacing the instance's previous member when it left with -2), and the member epoch
//! checks (`throwIfConsumerGroupMemberEpochIsInvalid`).
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, PartitionEpochs, Record};
use kcoord_wire::messages::consumer_group_heartbeat_request::{
    ConsumerGroupHeartbeatRequest, TopicPartitions as Owned,
};
use kcoord_wire::ErrorCode;

use super::records;
use crate::error::{CoordinatorError, Result};
use crate::validate::STATIC_LEAVE_EPOCH;

/// The member a heartbeat is from, and the records that replaced a static member's previous
/// incarnation (empty otherwise).
pub(super) struct Found {
    pub member: ConsumerGroupMember,
    pub replaced: Option<String>,
    pub records: Vec<Record>,
}

/// `getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember`.
pub(super) fn find(
    group: &ConsumerGroup,
    member_id: &str,
    request: &ConsumerGroupHeartbeatRequest,
) -> Result<Found> {
    let joining = request.member_epoch == 0;
    let owned = request.topic_partitions.as_deref();
    let Some(instance_id) = request.instance_id.as_deref() else {
        let member = match group.members.get(member_id) {
            Some(m) => m.clone(),
            None if joining => ConsumerGroupMember::new(member_id),
            None => return Err(CoordinatorError::unknown_member(&group.group_id, member_id)),
        };
        check_epoch(&member, request.member_epoch, owned)?;
        return Ok(Found {
            member,
            replaced: None,
            records: Vec::new(),
        });
    };
    let existing = group.static_member(instance_id);
    if joining {
        let Some(old) = existing else {
            let member = group
                .members
                .get(member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerGroupMember::new(member_id));
            return Ok(Found {
                member,
                replaced: None,
                records: Vec::new(),
            });
        };
        if !old.uses_classic_protocol() && old.member_epoch != STATIC_LEAVE_EPOCH {
            return Err(CoordinatorError::new(
                ErrorCode::UNRELEASED_INSTANCE_ID,
                format!(
                    "Static member {member_id} with instance id {instance_id} cannot join the group because the instance id is owned by {} member.",
                    old.member_id
                ),
            ));
        }
        return Ok(replace(group, old, member_id));
    }
    let Some(old) = existing else {
        return Err(CoordinatorError::new(
            ErrorCode::UNKNOWN_MEMBER_ID,
            format!("Instance id {instance_id} is unknown."),
        ));
    };
    check_not_fenced(old, member_id, instance_id)?;
    check_epoch(old, request.member_epoch, owned)?;
    Ok(Found {
        member: old.clone(),
        replaced: None,
        records: Vec::new(),
    })
}

/// `throwIfInstanceIdIsFenced`.
pub(super) fn check_not_fenced(
    member: &ConsumerGroupMember,
    member_id: &str,
    instance_id: &str,
) -> Result<()> {
    if member.member_id != member_id {
        return Err(CoordinatorError::new(
            ErrorCode::FENCED_INSTANCE_ID,
            format!(
                "Static member {member_id} with instance id {instance_id} was fenced by member {}.",
                member.member_id
            ),
        ));
    }
    Ok(())
}

/// The static member's new incarnation: the old one's state under the new id at epoch 0, and
/// `replaceMember`'s records (the old member's removal, then the new one's subscription,
/// target assignment and current assignment).
pub(super) fn replace(group: &ConsumerGroup, old: &ConsumerGroupMember, member_id: &str) -> Found {
    let mut member = old.clone();
    member.member_id = member_id.into();
    member.member_epoch = 0;
    member.previous_member_epoch = 0;
    let gid = group.group_id.as_str();
    let mut out = records::remove_member(gid, &old.member_id);
    out.push(records::member_subscription(gid, &member));
    let target = group
        .target_assignment
        .get(old.member_id.as_str())
        .cloned()
        .unwrap_or_default();
    out.push(records::target_member(gid, member_id, &target));
    out.push(records::current_assignment(gid, &member));
    Found {
        member,
        replaced: Some(old.member_id.to_string()),
        records: out,
    }
}

/// `throwIfConsumerGroupMemberEpochIsInvalid`: epoch 0 always passes (a rejoin); a newer
/// epoch is fenced; an older one passes only as the previous epoch with owned partitions that
/// are a subset of the current assignment (the answer with the new epoch was lost).
fn check_epoch(member: &ConsumerGroupMember, received: i32, owned: Option<&[Owned]>) -> Result<()> {
    if received == 0 {
        return Ok(());
    }
    if received > member.member_epoch {
        return Err(CoordinatorError::fenced(format!(
            "The consumer group member has a greater member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
            member.member_epoch
        )));
    }
    if received < member.member_epoch
        && (received != member.previous_member_epoch || !is_subset(owned, &member.assigned))
    {
        return Err(CoordinatorError::fenced(format!(
            "The consumer group member has a smaller member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
            member.member_epoch
        )));
    }
    Ok(())
}

/// `isSubset`: whether every owned partition is in `assigned` (nothing reported: no).
fn is_subset(owned: Option<&[Owned]>, assigned: &PartitionEpochs) -> bool {
    let Some(owned) = owned else {
        return false;
    };
    owned.iter().all(|t| {
        assigned
            .get(&t.topic_id)
            .is_some_and(|a| t.partitions.iter().all(|p| a.contains_key(p)))
    })
}

/// `throwIfConsumerGroupIsFull`: a known static instance or member always fits.
pub(super) fn check_room(
    group: &ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
    max_size: i32,
) -> Result<()> {
    if instance_id.is_some_and(|i| group.static_member(i).is_some()) {
        return Ok(());
    }
    let full = group.members.len() >= usize::try_from(max_size).unwrap_or(0);
    if full && (member_id.is_empty() || !group.members.contains_key(member_id)) {
        return Err(CoordinatorError::new(
            ErrorCode::GROUP_MAX_SIZE_REACHED,
            format!("The consumer group has reached its maximum capacity of {max_size} members."),
        ));
    }
    Ok(())
}
