//! StreamsGroupHeartbeat (KIP-1071), following Apache Kafka 4.4's `GroupMetadataManager`, plus
//! one extension: a member joining with a higher topology epoch replaces the group topology.
//!
//! The handler reads the shard and returns the records of the heartbeat, its response and its
//! effects (timers, what Kafka keeps in memory). A leave is [`leave`]; a steady-state heartbeat
//! of a settled member takes the short path of `steady.rs`; everything else is a join or a full
//! heartbeat ([`join`]).
mod join;
mod member;
mod response;

use kcoord_metadata::{Record, StreamsGroup};
use kcoord_wire::messages::streams_group_heartbeat_request::StreamsGroupHeartbeatRequest;
use kcoord_wire::messages::streams_group_heartbeat_response::StreamsGroupHeartbeatResponse;
use uuid::Uuid;

use crate::configured_topology::CreatableTopic;
use crate::effects::{Effect, GroupEffect, MemberEffect};
use crate::error::{CoordinatorError, Result};
use crate::record_builders;
use crate::shard::CoordinatorShard;
use crate::validate::{self, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use crate::Outcome;

pub(crate) use response::{invalid_tasks, missing_client_tags};

/// Heartbeat status codes (`StreamsGroupHeartbeatResponse.Status`).
pub mod status {
    pub const STALE_TOPOLOGY: i8 = 0;
    pub const MISSING_SOURCE_TOPICS: i8 = 1;
    pub const INCORRECTLY_PARTITIONED_TOPICS: i8 = 2;
    pub const MISSING_INTERNAL_TOPICS: i8 = 3;
    pub const SHUTDOWN_APPLICATION: i8 = 4;
    pub const ASSIGNMENT_DELAYED: i8 = 5;
    pub const MISSING_CLIENT_TAGS: i8 = 6;
}

/// Who is asking, as the network layer knows it.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeartbeatContext<'a> {
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub api_version: i16,
}

/// The answer to a heartbeat: the response (without the KIP-1331 fields, which depend on the
/// plugin and the negotiated version), the internal topics to create, and what the KIP-1331
/// layer needs to decide on a topology push.
#[derive(Debug, Clone)]
pub struct HeartbeatResult {
    pub response: StreamsGroupHeartbeatResponse,
    pub internal_topics_to_create: Vec<CreatableTopic>,
    /// The group's current TopologyDescriptionId, unless the member is STALE_TOPOLOGY or left.
    pub topology_description_id: Option<Uuid>,
}

impl CoordinatorShard {
    /// StreamsGroupHeartbeat: the request's records, its answer (or the error to answer with)
    /// and its effects. Effects decided before an error still apply, as in Kafka, where the
    /// in-memory changes a heartbeat made before it threw are kept.
    pub fn streams_group_heartbeat(
        &self,
        ctx: &HeartbeatContext,
        request: &StreamsGroupHeartbeatRequest,
        now: i64,
    ) -> Outcome<Result<HeartbeatResult>> {
        let validated = validate::heartbeat_request(request).and_then(|()| {
            request
                .topology
                .as_ref()
                .map_or(Ok(()), validate::topology_topic_names)
        });
        if let Err(e) = validated {
            return Outcome::answer(Err(e));
        }
        if self.consumer_group(&request.group_id).is_some() {
            let other = CoordinatorError::not_a_streams_group(&request.group_id);
            return Outcome::answer(Err(other));
        }
        if request.member_epoch == LEAVE_EPOCH || request.member_epoch == STATIC_LEAVE_EPOCH {
            return self.leave(request);
        }
        if let Some(steady) = self.steady_heartbeat(ctx, request, now) {
            return steady;
        }
        join::JoinOrHeartbeat::new(self, ctx, request, now).run()
    }

    fn existing_group(&self, group_id: &str) -> Result<&StreamsGroup> {
        self.group(group_id)
            .ok_or_else(|| self.missing_streams_group(group_id, false))
    }

    /// The error for a streams group that does not exist: another type of group (offsets
    /// only) is "not a streams group"; else `getStreamsGroupOrThrow`'s words for a heartbeat,
    /// `group()`'s for the other paths (`any`).
    pub(crate) fn missing_streams_group(&self, group_id: &str, any: bool) -> CoordinatorError {
        if self.state().offsets.group(group_id).is_some() || self.consumer_group(group_id).is_some()
        {
            CoordinatorError::not_a_streams_group(group_id)
        } else if any {
            CoordinatorError::any_group_not_found(group_id)
        } else {
            CoordinatorError::group_not_found(group_id)
        }
    }

    /// A leave (epoch -1) or a static member's temporary leave (epoch -2).
    fn leave(&self, request: &StreamsGroupHeartbeatRequest) -> Outcome<Result<HeartbeatResult>> {
        if self.group(&request.group_id).is_none() {
            let missing = self.missing_streams_group(&request.group_id, true);
            return Outcome::answer(Err(missing));
        }
        let mut effects = Vec::new();
        if request.shutdown_application {
            // Kafka records the request before it looks the member up (`streamsGroupLeave`).
            effects.push(Effect::Group(GroupEffect::ShutdownRequested {
                group_id: request.group_id.as_str().into(),
                member_id: request.member_id.clone(),
            }));
        }
        match self.leave_records(request, &mut effects) {
            Ok(records) => Outcome {
                records,
                response: Ok(left(request)),
                effects,
            },
            Err(e) => Outcome {
                records: Vec::new(),
                response: Err(e),
                effects,
            },
        }
    }

    fn leave_records(
        &self,
        request: &StreamsGroupHeartbeatRequest,
        effects: &mut Vec<Effect>,
    ) -> Result<Vec<kcoord_metadata::RecordAndVersion>> {
        let group = self.existing_group(&request.group_id)?;
        let member = member::leaving_member(group, request)?;
        let group_id = group.group_id.as_str();
        let records: Vec<Record> = if request.member_epoch == STATIC_LEAVE_EPOCH {
            // A static member's temporary leave keeps its assignment for the rejoin.
            let mut leaving = member.clone();
            leaving.member_epoch = STATIC_LEAVE_EPOCH;
            leaving.set_tasks(member.assigned().clone(), Default::default(), |s, p, _| {
                member.active_task_epoch(s, p).map(|_| 0)
            });
            vec![record_builders::current_assignment(group_id, &leaving)]
        } else {
            effects.push(Effect::Rebalanced);
            record_builders::fence_member(group, &member.member_id, record_builders::Removal::Left)
        };
        if request.member_epoch == LEAVE_EPOCH {
            effects.push(Effect::Member(MemberEffect::Gone {
                group_id: group_id.into(),
                member_id: member.member_id.clone(),
            }));
        }
        effects.push(Effect::Group(GroupEffect::ForgetShutdownIfEmpty {
            group_id: group_id.into(),
        }));
        Ok(crate::at_latest_version(records))
    }
}

/// The answer to a leave.
fn left(request: &StreamsGroupHeartbeatRequest) -> HeartbeatResult {
    HeartbeatResult {
        response: StreamsGroupHeartbeatResponse {
            member_id: request.member_id.clone(),
            member_epoch: request.member_epoch,
            status: Some(Vec::new()),
            ..Default::default()
        },
        internal_topics_to_create: Vec::new(),
        topology_description_id: None,
    }
}

/// A member's request was refused: the error, with the effects decided before it.
fn refused<T>(error: CoordinatorError, effects: Vec<Effect>) -> Outcome<Result<T>> {
    Outcome {
        records: Vec::new(),
        response: Err(error),
        effects,
    }
}
