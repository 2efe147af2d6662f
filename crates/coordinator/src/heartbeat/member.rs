//! The member a heartbeat is about: found or created, its epoch checked, the request's
//! metadata applied, and the comparisons that decide what changed.
use std::borrow::Cow;
use std::collections::BTreeMap;

use kcoord_metadata::{Endpoint, MemberState, ProcessId, StreamsGroup, StreamsGroupMember, Tasks};
use kcoord_wire::messages::streams_group_heartbeat_request::{
    self as req, StreamsGroupHeartbeatRequest,
};
use kcoord_wire::ErrorCode;

use super::HeartbeatContext;
use crate::effects::MemberEffect;
use crate::error::{CoordinatorError, Result};
use crate::validate::{JOIN_EPOCH, STATIC_LEAVE_EPOCH};

fn fenced_instance(member_id: &str, instance: &str, owner: &str) -> CoordinatorError {
    CoordinatorError::new(
        ErrorCode::FENCED_INSTANCE_ID,
        format!(
            "Static member {member_id} with instance id {instance} was fenced by member {owner}."
        ),
    )
}

fn unknown_instance(instance: &str) -> CoordinatorError {
    CoordinatorError::new(
        ErrorCode::UNKNOWN_MEMBER_ID,
        format!("Instance id {instance} is unknown."),
    )
}

fn static_member<'a>(group: &'a StreamsGroup, instance_id: &str) -> Option<&'a StreamsGroupMember> {
    group
        .members
        .values()
        .find(|m| m.instance_id() == Some(instance_id))
}

/// The member a leave names: by member id, or by instance id for a static member (whose
/// member id must then match).
pub(super) fn leaving_member<'a>(
    group: &'a StreamsGroup,
    request: &StreamsGroupHeartbeatRequest,
) -> Result<&'a StreamsGroupMember> {
    match &request.instance_id {
        None => group
            .members
            .get(request.member_id.as_str())
            .ok_or_else(|| CoordinatorError::unknown_member(&group.group_id, &request.member_id)),
        Some(instance) => {
            let m = static_member(group, instance).ok_or_else(|| unknown_instance(instance))?;
            if m.member_id != request.member_id {
                return Err(fenced_instance(&request.member_id, instance, &m.member_id));
            }
            Ok(m)
        }
    }
}

pub(super) fn check_group_size(
    group: &StreamsGroup,
    request: &StreamsGroupHeartbeatRequest,
    max_size: i32,
) -> Result<()> {
    if let Some(instance) = &request.instance_id {
        if static_member(group, instance).is_some() {
            return Ok(());
        }
    }
    if group.members.len() >= max_size.max(0) as usize
        && !group.members.contains_key(request.member_id.as_str())
    {
        return Err(CoordinatorError::new(
            ErrorCode::GROUP_MAX_SIZE_REACHED,
            format!("The streams group has reached its maximum capacity of {max_size} members."),
        ));
    }
    Ok(())
}

/// Finds or creates the member; returns it and, for a static rejoin, the member it replaces.
pub(super) fn resolve_member(
    group: &StreamsGroup,
    request: &StreamsGroupHeartbeatRequest,
    joining: bool,
) -> Result<(StreamsGroupMember, Option<StreamsGroupMember>)> {
    let new_member = || StreamsGroupMember::new(&request.member_id);
    let Some(instance) = &request.instance_id else {
        let member = match group.members.get(request.member_id.as_str()) {
            Some(m) => m.clone(),
            None if joining => new_member(),
            None => {
                return Err(CoordinatorError::unknown_member(
                    &group.group_id,
                    &request.member_id,
                ))
            }
        };
        check_epoch(&member, request)?;
        return Ok((member, None));
    };
    let existing = static_member(group, instance);
    if !joining {
        let m = existing.ok_or_else(|| unknown_instance(instance))?;
        if m.member_id != request.member_id {
            return Err(fenced_instance(&request.member_id, instance, &m.member_id));
        }
        check_epoch(m, request)?;
        return Ok((m.clone(), None));
    }
    // `getOrMaybeCreateStaticStreamsGroupMember`: a held instance id is refused even to its own
    // member id; only after a static leave (-2) does the joiner replace the old member (with
    // the same or a new member id), taking over its assignment at epoch 0.
    match existing {
        None => Ok((group.members.get(request.member_id.as_str()).cloned().unwrap_or_else(new_member), None)),
        Some(old) if old.member_epoch != STATIC_LEAVE_EPOCH => Err(CoordinatorError::new(
            ErrorCode::UNRELEASED_INSTANCE_ID,
            format!(
                "Static member {} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                request.member_id, old.member_id
            ),
        )),
        Some(old) => {
            let mut replacement = old.clone();
            replacement.member_id = request.member_id.as_str().into();
            replacement.member_epoch = 0;
            replacement.previous_member_epoch = 0;
            Ok((replacement, Some(old.clone())))
        }
    }
}

/// `throwIfStreamsGroupMemberEpochIsInvalid`, with the lost-response tolerance.
fn check_epoch(member: &StreamsGroupMember, request: &StreamsGroupHeartbeatRequest) -> Result<()> {
    let epoch = request.member_epoch;
    if epoch == JOIN_EPOCH {
        return Ok(());
    }
    if epoch > member.member_epoch {
        return Err(CoordinatorError::fenced(format!(
            "The streams group member has a greater member epoch ({epoch}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
            member.member_epoch
        )));
    }
    if epoch < member.member_epoch {
        // Kafka accepts the previous epoch only with all three owned lists reported and each
        // contained in the current assignment (a lost response); a null list fences.
        let lost_response = epoch == member.previous_member_epoch
            && owned_contained(request.active_tasks.as_deref(), &member.assigned().active)
            && owned_contained(request.standby_tasks.as_deref(), &member.assigned().standby)
            && owned_contained(request.warmup_tasks.as_deref(), &member.assigned().warmup);
        if !lost_response {
            return Err(CoordinatorError::fenced(format!(
                "The streams group member has a smaller member epoch ({epoch}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            )));
        }
    }
    Ok(())
}

/// `areOwnedTasksContainedInAssignedTasks`: not reported (null) is not contained, and neither
/// is an entry for a sub-topology the member holds nothing of, even with no partitions.
fn owned_contained(owned: Option<&[req::TaskIds]>, assigned: &Tasks) -> bool {
    let Some(owned) = owned else {
        return false;
    };
    owned.iter().all(|t| {
        assigned
            .get(t.subtopology_id.as_str())
            .is_some_and(|a| t.partitions.iter().all(|p| a.contains(p)))
    })
}

/// The member with the request's metadata applied (null = unchanged, as Kafka's builder does).
/// Borrowed when nothing changes, as in a steady-state heartbeat: the member is copied only to
/// change a field.
pub(super) fn updated_member<'a>(
    member: &'a StreamsGroupMember,
    request: &StreamsGroupHeartbeatRequest,
    ctx: &HeartbeatContext,
    joining: bool,
) -> Cow<'a, StreamsGroupMember> {
    let mut m = Cow::Borrowed(member);
    if let Some(i) = &request.instance_id {
        if m.instance_id() != Some(i.as_str()) {
            m.to_mut()
                .change_extras(|e| e.instance_id = Some(i.clone()));
        }
    }
    if let Some(r) = &request.rack_id {
        if m.rack_id() != Some(r.as_str()) {
            m.to_mut().change_extras(|e| e.rack_id = Some(r.clone()));
        }
    }
    if request.rebalance_timeout_ms != -1 && m.rebalance_timeout_ms != request.rebalance_timeout_ms
    {
        m.to_mut().rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(t) = &request.topology {
        if m.topology_epoch != t.epoch {
            m.to_mut().topology_epoch = t.epoch;
        }
    }
    if m.client_id != ctx.client_id {
        m.to_mut().client_id = ctx.client_id.into();
    }
    if m.client_host != ctx.client_host {
        m.to_mut().client_host = ctx.client_host.into();
    }
    if let Some(p) = &request.process_id {
        if m.process_id != **p {
            m.to_mut().process_id = ProcessId::new(p);
        }
    }
    if let Some(tags) = &request.client_tags {
        let tags: BTreeMap<String, String> = tags
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect();
        if *m.client_tags() != tags {
            m.to_mut().change_extras(|e| e.client_tags = tags);
        }
    }
    if joining || request.user_endpoint.is_some() {
        let endpoint = request.user_endpoint.as_ref().map(|e| Endpoint {
            host: e.host.clone(),
            port: e.port,
        });
        if m.user_endpoint() != endpoint.as_ref() {
            m.to_mut().change_extras(|e| e.user_endpoint = endpoint);
        }
    }
    m
}

pub(super) fn metadata_equal(a: &StreamsGroupMember, b: &StreamsGroupMember) -> bool {
    a.member_id == b.member_id
        && a.instance_id() == b.instance_id()
        && a.rack_id() == b.rack_id()
        && a.client_id == b.client_id
        && a.client_host == b.client_host
        && a.rebalance_timeout_ms == b.rebalance_timeout_ms
        && a.topology_epoch == b.topology_epoch
        && a.process_id == b.process_id
        && a.user_endpoint() == b.user_endpoint()
        && a.client_tags() == b.client_tags()
}

pub(super) fn assignment_state_equal(a: &StreamsGroupMember, b: &StreamsGroupMember) -> bool {
    a.member_id == b.member_id
        && a.member_epoch == b.member_epoch
        && a.previous_member_epoch == b.previous_member_epoch
        && a.state == b.state
        && a.assigned() == b.assigned()
        && a.task_epochs() == b.task_epochs()
        && a.pending_revocation() == b.pending_revocation()
}

/// KIP-1071: a static member's rejoin bumps the epoch only for these changes.
pub(super) fn epoch_relevant_change(a: &StreamsGroupMember, b: &StreamsGroupMember) -> bool {
    a.topology_epoch != b.topology_epoch
        || a.rack_id() != b.rack_id()
        || a.client_tags() != b.client_tags()
        || a.process_id != b.process_id
}

/// The member's rebalance timer: armed when it starts revoking (or revokes at a new epoch),
/// cancelled when it stops.
pub(super) fn rebalance_timer(
    before: &StreamsGroupMember,
    after: &StreamsGroupMember,
    group_id: &str,
    now: i64,
) -> Option<MemberEffect> {
    let revoking = |m: &StreamsGroupMember| m.state == MemberState::UnrevokedTasks;
    if revoking(after) {
        (!revoking(before) || before.member_epoch != after.member_epoch).then(|| {
            MemberEffect::RebalanceTimer {
                group_id: group_id.into(),
                member_id: after.member_id.clone(),
                deadline: now + i64::from(after.rebalance_timeout_ms.max(0)),
                epoch: after.member_epoch,
            }
        })
    } else {
        revoking(before).then(|| MemberEffect::CancelRebalanceTimer {
            group_id: group_id.into(),
            member_id: after.member_id.clone(),
        })
    }
}
