//! JoinGroup on a classic group, after Kafka 4.4's `classicGroupJoinToClassicGroup` and the
//! methods it calls.
use bytes::Bytes;
use kcoord_wire::messages::{JoinGroupRequest, JoinGroupResponse};
use kcoord_wire::ErrorCode;

use super::change::{join_error, join_response, Change};
use super::{ClassicGroup, ClassicGroupState, ClassicMember, Protocol, Reply};
use crate::effects::Effect;
use crate::shard::CoordinatorShard;
use crate::Outcome;

use ClassicGroupState::*;

/// Who sends a JoinGroup.
#[derive(Debug, Clone, Copy)]
pub struct JoinContext<'a> {
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub api_version: i16,
}

/// What a JoinGroup asks, with its protocols in a form the group keeps.
struct Join<'r> {
    req: &'r JoinGroupRequest,
    protocols: Vec<Protocol>,
    ctx: JoinContext<'r>,
}

type JoinOutcome = Outcome<Reply<JoinGroupResponse>>;

fn now_answer(response: JoinGroupResponse) -> JoinOutcome {
    Outcome::answer(Reply::Now(response))
}

impl CoordinatorShard {
    /// JoinGroup (`GroupCoordinatorService.joinGroup`, then `classicGroupJoin`).
    pub fn classic_join(
        &self,
        ctx: JoinContext<'_>,
        req: &JoinGroupRequest,
        now: i64,
    ) -> JoinOutcome {
        let config = &self.classic.config;
        if req.group_id.is_empty() {
            return now_answer(join_error(&req.member_id, ErrorCode::INVALID_GROUP_ID));
        }
        if req.session_timeout_ms < config.min_session_timeout_ms
            || req.session_timeout_ms > config.max_session_timeout_ms
        {
            return now_answer(join_error(
                &req.member_id,
                ErrorCode::INVALID_SESSION_TIMEOUT,
            ));
        }
        if let Some(consumer) = self
            .consumer_group(&req.group_id)
            .filter(|g| !g.members.is_empty())
        {
            return self.classic_join_to_consumer_group(consumer, ctx, req, now);
        }
        let (converted, gone) = match self.convert_empty_group(req) {
            Ok(converted) => converted,
            Err(refused) => return now_answer(join_error("", refused)),
        };
        let unknown_member = req.member_id.is_empty();
        let existing = self.classic.groups.get(req.group_id.as_str());
        let group = match existing {
            Some(group) => (**group).clone(),
            None if unknown_member => {
                if let Err(e) = self.check_room_for_group() {
                    return now_answer(join_error("", e.code));
                }
                ClassicGroup::new(&req.group_id, now)
            }
            None => return now_answer(join_error(&req.member_id, ErrorCode::UNKNOWN_MEMBER_ID)),
        };
        let join = Join {
            req,
            protocols: req
                .protocols
                .iter()
                .map(|p| Protocol {
                    name: p.name.clone(),
                    // A copy: the request's `Bytes` share the connection's read buffer, which
                    // a member would pin for its lifetime (16 KB each, BENCHMARKS.md).
                    metadata: Bytes::copy_from_slice(&p.metadata),
                })
                .collect(),
            ctx,
        };
        let mut change = Change::of(self, group, now);
        let reply = if !accept_joining_member(&change.group, &req.member_id, config.max_size) {
            change.group.remove(&req.member_id);
            Reply::Now(join_error("", ErrorCode::GROUP_MAX_SIZE_REACHED))
        } else if unknown_member {
            self.join_new_member(&mut change, &join)
        } else {
            join_existing_member(&mut change, &join)
        };
        if existing.is_none() && !change.has_records() {
            let record = change.group.empty_record();
            change.record(record);
        }
        for tombstone in converted {
            change.record(tombstone);
        }
        let mut outcome = change.finish(reply);
        outcome.effects.extend(gone);
        if unknown_member {
            outcome.effects.push(Effect::IdsMinted(1));
        }
        outcome
    }

    /// The tombstones (and the effects) that turn an empty streams or consumer group of the
    /// id into nothing, so that a new member's join creates a classic group in its place, as
    /// Kafka's `maybeDeleteEmptyStreamsGroup` and `maybeDeleteEmptyConsumerGroup` do (its
    /// offsets stay). A group of another type with members refuses the join
    /// (INCONSISTENT_GROUP_PROTOCOL); a join with a member id converts nothing (it is then
    /// unknown). The topology description plugin is not asked to delete what it holds for a
    /// converted streams group: it forgets it by its TTL, as for a group that expires.
    fn convert_empty_group(
        &self,
        req: &JoinGroupRequest,
    ) -> Result<(Vec<kcoord_metadata::Record>, Vec<Effect>), ErrorCode> {
        let inconsistent = || ErrorCode::INCONSISTENT_GROUP_PROTOCOL;
        if let Some(streams) = self.group(&req.group_id) {
            if !streams.members.is_empty() {
                return Err(inconsistent());
            }
            if req.member_id.is_empty() {
                let gone = Effect::Group(crate::effects::GroupEffect::Gone {
                    group_id: req.group_id.as_str().into(),
                });
                return Ok((crate::record_builders::delete_group(streams), vec![gone]));
            }
        }
        if let Some(consumer) = self.consumer_group(&req.group_id) {
            let tombstones = self
                .delete_consumer_group_records(consumer)
                .map_err(|_| inconsistent())?;
            if req.member_id.is_empty() {
                return Ok((tombstones, Vec::new()));
            }
        }
        Ok((Vec::new(), Vec::new()))
    }

    /// Kafka's `classicGroupJoinNewMember`: a member id is made up for it.
    fn join_new_member(
        &self,
        change: &mut Change<'_>,
        join: &Join<'_>,
    ) -> Reply<JoinGroupResponse> {
        if !change
            .group
            .supports_protocols(&join.req.protocol_type, &join.protocols)
        {
            return Reply::Now(join_error("", ErrorCode::INCONSISTENT_GROUP_PROTOCOL));
        }
        let instance_id = join.req.group_instance_id.as_deref();
        let prefix = instance_id.unwrap_or(join.ctx.client_id);
        let new_member_id = format!("{prefix}-{}", self.mint_id(0));
        if let Some(instance_id) = instance_id {
            return match change.group.static_members.get(instance_id).cloned() {
                Some(old_member_id) => {
                    replace_static_member(change, join, &old_member_id, &new_member_id)
                }
                None => add_member_and_rebalance(change, join, &new_member_id),
            };
        }
        if join.ctx.api_version >= 4 {
            // KIP-394: the member must come back with this id; until then it is pending.
            change
                .group
                .pending_join
                .insert(new_member_id.as_str().into());
            change.reschedule_heartbeat(&new_member_id, join.req.session_timeout_ms);
            return Reply::Now(join_error(&new_member_id, ErrorCode::MEMBER_ID_REQUIRED));
        }
        add_member_and_rebalance(change, join, &new_member_id)
    }
}

/// Kafka's `acceptJoiningMember` (`group.max.size`).
fn accept_joining_member(group: &ClassicGroup, member_id: &str, max_size: i32) -> bool {
    let max = usize::try_from(max_size).unwrap_or(0);
    match group.state {
        Empty | Dead => true,
        PreparingRebalance => {
            group
                .member(member_id)
                .is_some_and(|m| m.awaiting_join.is_some())
                || group.awaiting_join_count() < max
        }
        CompletingRebalance | Stable => {
            group.members.contains_key(member_id) || group.members.len() < max
        }
    }
}

/// Kafka's `classicGroupJoinExistingMember`.
fn join_existing_member(change: &mut Change<'_>, join: &Join<'_>) -> Reply<JoinGroupResponse> {
    let member_id = join.req.member_id.as_str();
    if !change
        .group
        .supports_protocols(&join.req.protocol_type, &join.protocols)
    {
        return Reply::Now(join_error(
            member_id,
            ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
        ));
    }
    if change.group.pending_join.contains(member_id) {
        if join.req.group_instance_id.is_some() {
            // Pending members are dynamic; Kafka fails such a request as a bug.
            return Reply::Now(join_error(member_id, ErrorCode::UNKNOWN_SERVER_ERROR));
        }
        return add_member_and_rebalance(change, join, member_id);
    }
    if let Err(code) = change
        .group
        .validate_member(member_id, join.req.group_instance_id.as_deref())
    {
        return Reply::Now(join_error(member_id, code));
    }
    let matches = change
        .group
        .member(member_id)
        .is_some_and(|m| m.protocols == join.protocols);
    match change.group.state {
        PreparingRebalance => update_member_and_rebalance(change, join),
        CompletingRebalance if matches => {
            // The member lost the first answer: the same one again.
            let leader = change.group.is_leader(member_id);
            Reply::Now(join_response(&change.group, member_id, leader))
        }
        CompletingRebalance => update_member_and_rebalance(change, join),
        // The leader rejoining forces a rebalance: it is how it asks for one.
        Stable if change.group.is_leader(member_id) || !matches => {
            update_member_and_rebalance(change, join)
        }
        Stable => Reply::Now(join_response(&change.group, member_id, false)),
        Empty | Dead => Reply::Now(join_error(member_id, ErrorCode::UNKNOWN_MEMBER_ID)),
    }
}

/// Kafka's `updateMember` with a new parked JoinGroup: the member's protocols and timeouts
/// are the request's.
fn update_member(change: &mut Change<'_>, member_id: &str, join: &Join<'_>) -> u64 {
    let waiter = change.park();
    let previous = change.group.member_mut(member_id).and_then(|member| {
        member.protocols = join.protocols.clone();
        member.rebalance_timeout_ms = join.req.rebalance_timeout_ms;
        member.session_timeout_ms = join.req.session_timeout_ms;
        member.awaiting_join.replace(waiter)
    });
    if let Some(previous) = previous {
        // The member joined again before its first JoinGroup was answered (from another
        // connection, after its client gave up on the first): the first one is answered so
        // that nothing waits forever.
        change.answer_join(
            previous,
            join_error(member_id, ErrorCode::REBALANCE_IN_PROGRESS),
        );
    }
    waiter
}

/// Kafka's `updateMemberThenRebalanceOrCompleteJoin`.
fn update_member_and_rebalance(
    change: &mut Change<'_>,
    join: &Join<'_>,
) -> Reply<JoinGroupResponse> {
    let waiter = update_member(change, &join.req.member_id, join);
    change.maybe_prepare_rebalance_or_complete_join();
    Reply::Parked(waiter)
}

/// Kafka's `addMemberThenRebalanceOrCompleteJoin`.
fn add_member_and_rebalance(
    change: &mut Change<'_>,
    join: &Join<'_>,
    member_id: &str,
) -> Reply<JoinGroupResponse> {
    let waiter = change.park();
    let member = ClassicMember {
        member_id: member_id.into(),
        group_instance_id: join.req.group_instance_id.clone(),
        client_id: join.ctx.client_id.to_owned(),
        client_host: join.ctx.client_host.to_owned(),
        rebalance_timeout_ms: join.req.rebalance_timeout_ms,
        session_timeout_ms: join.req.session_timeout_ms,
        protocol_type: join.req.protocol_type.clone(),
        protocols: join.protocols.clone(),
        assignment: Default::default(),
        awaiting_join: Some(waiter),
        awaiting_sync: None,
        is_new: true,
    };
    if change.group.is(PreparingRebalance) && change.group.previous_state == Empty {
        change.group.new_member_added = true;
    }
    change.group.add(member);
    // A new member's JoinGroup is parked with no heartbeats: its own timeout drops it if its
    // client gave up (Kafka's `classicGroupNewMemberJoinTimeoutMs`).
    let timeout = change.config().new_member_join_timeout_ms;
    change.reschedule_heartbeat(member_id, timeout);
    change.maybe_prepare_rebalance_or_complete_join();
    Reply::Parked(waiter)
}

/// Kafka's `updateStaticMemberThenRebalanceOrCompleteJoin`: a static member that restarted
/// takes its old member's place; the old one's parked requests are fenced.
fn replace_static_member(
    change: &mut Change<'_>,
    join: &Join<'_>,
    old_member_id: &str,
    new_member_id: &str,
) -> Reply<JoinGroupResponse> {
    let previous_leader = change.group.leader_id.clone();
    let Some(old) = change.group.members.get(old_member_id).cloned() else {
        return Reply::Now(join_error("", ErrorCode::UNKNOWN_MEMBER_ID));
    };
    change.complete_join(
        old_member_id,
        JoinGroupResponse {
            member_id: old_member_id.to_owned(),
            error_code: ErrorCode::FENCED_INSTANCE_ID.code(),
            ..Default::default()
        },
    );
    change.complete_sync(
        old_member_id,
        super::change::sync_error(ErrorCode::FENCED_INSTANCE_ID),
    );
    change.group.members.remove(old_member_id);
    let old_timer = change.heartbeat_timer(old_member_id);
    change.cancel(old_timer);
    let mut member = (*old).clone();
    member.member_id = new_member_id.into();
    member.awaiting_join = None;
    member.awaiting_sync = None;
    if let Some(instance) = &member.group_instance_id {
        change
            .group
            .static_members
            .insert(instance.clone(), member.member_id.clone());
    }
    if change.group.is_leader(old_member_id) {
        change.group.leader_id = Some(member.member_id.clone());
    }
    let session = member.session_timeout_ms;
    change
        .group
        .members
        .insert(member.member_id.clone(), std::sync::Arc::new(member));
    change.reschedule_heartbeat(new_member_id, session);
    let waiter = update_member(change, new_member_id, join);
    match change.group.state {
        Stable if change.group.select_protocol() == change.group.protocol_name => {
            // Same protocol: no rebalance; the group is written with the new member id.
            if let Some(m) = change.group.member_mut(new_member_id) {
                m.awaiting_join = None;
            }
            let record = change.group.record(&change.group.assignments());
            change.record(record);
            let leader = change.group.is_leader(new_member_id);
            let response = if join.ctx.api_version >= 9 {
                let mut response = join_response(&change.group, new_member_id, leader);
                response.skip_assignment = leader;
                response
            } else {
                let mut response = join_response(&change.group, new_member_id, false);
                response.leader = previous_leader.map(|l| l.to_string()).unwrap_or_default();
                response
            };
            Reply::Now(response)
        }
        Stable => {
            change.maybe_prepare_rebalance_or_complete_join();
            Reply::Parked(waiter)
        }
        CompletingRebalance => {
            change.prepare_rebalance();
            Reply::Parked(waiter)
        }
        _ => {
            change.maybe_complete_join_phase();
            Reply::Parked(waiter)
        }
    }
}
