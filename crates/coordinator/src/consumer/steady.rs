//! The steady-state ConsumerGroupHeartbeat: a member of a settled group that reports nothing
//! new (no subscription, owned partitions or timeout), which is almost every heartbeat a
//! consumer group sees. The full path (`heartbeat.rs`) copies the group and the member to
//! decide, then writes nothing and only moves the member's session deadline; this answers the
//! same from borrowed state.
//!
//! It answers only when every condition under which the full path writes nothing and answers
//! with the plain response holds, and declines (`None`) otherwise. Its answer must equal the
//! full path's, which `tests/consumer_groups.rs` checks against a shard with this path off.
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember};
use kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;

use super::{subscription, ConsumerHeartbeatContext};
use crate::effects::{Effect, MemberEffect};
use crate::error::Result;
use crate::shard::CoordinatorShard;
use crate::Outcome;

impl CoordinatorShard {
    /// The answer to a steady-state heartbeat, or `None` when the full path must run. Call it
    /// after the request has been validated.
    pub(super) fn consumer_steady_heartbeat(
        &self,
        ctx: &ConsumerHeartbeatContext,
        request: &ConsumerGroupHeartbeatRequest,
        now: i64,
    ) -> Option<Outcome<Result<ConsumerGroupHeartbeatResponse>>> {
        if !self.steady_path || !plain_request(request) {
            return None;
        }
        let group = self.state().consumer_groups.get(&request.group_id)?;
        let member = group.members.get(request.member_id.as_str())?;
        if !(settled(group, member, request, ctx) && self.hash_current(group)) {
            return None;
        }
        // The group's own `consumer.*` configs, else the broker's, as the full path uses.
        let settings = self.consumer_settings(&request.group_id);
        let response = ConsumerGroupHeartbeatResponse {
            member_id: Some(member.member_id.to_string()),
            member_epoch: member.member_epoch,
            heartbeat_interval_ms: settings.heartbeat_interval_ms,
            ..Default::default()
        };
        let timer = Effect::Member(MemberEffect::SteadyHeartbeat {
            group_id: group.group_id.as_str().into(),
            member_id: member.member_id.clone(),
            deadline: now + i64::from(settings.session_timeout_ms),
        });
        Some(Outcome::answer(Ok(response)).with_effect(timer))
    }

    /// The full path bumps the group epoch when the subscribed topics' metadata changed since
    /// the group's hash was taken (a topic created, deleted or grown).
    fn hash_current(&self, group: &ConsumerGroup) -> bool {
        let names = subscription::subscribed_topic_names(group.members.values(), group);
        subscription::metadata_hash(&names, self.topics()) == group.metadata_hash
    }
}

/// A heartbeat that carries nothing but who the member is and its epoch, as Kafka's consumer
/// sends when nothing changed.
fn plain_request(r: &ConsumerGroupHeartbeatRequest) -> bool {
    r.member_epoch > 0
        && !r.member_id.is_empty()
        && r.instance_id.is_none()
        && r.rack_id.is_none()
        && r.rebalance_timeout_ms == -1
        && r.subscribed_topic_names.is_none()
        && r.subscribed_topic_regex.is_none()
        && r.server_assignor.is_none()
        && r.topic_partitions.is_none()
}

/// The member is at the group's target epoch with nothing to revoke or receive, the group
/// needs no new target (and has no regular expression to re-resolve), and the request would
/// change none of the member's fields.
fn settled(
    group: &ConsumerGroup,
    member: &ConsumerGroupMember,
    request: &ConsumerGroupHeartbeatRequest,
    ctx: &ConsumerHeartbeatContext,
) -> bool {
    member.member_epoch == request.member_epoch
        && group.target_assignment_epoch == group.group_epoch
        && member.is_reconciled_to(group.target_assignment_epoch)
        && group.resolved_regexes.is_empty()
        && member.subscribed_topic_regex.is_empty()
        && member.classic_member_metadata.is_none()
        && member.client_id == ctx.client_id
        && member.client_host == ctx.client_host
}
