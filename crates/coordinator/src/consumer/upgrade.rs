//! A consumer-protocol member joining a classic group that has members: Kafka 4.4 upgrades the
//! group online (`validateOnlineUpgrade`, then `convertToConsumerGroup` with
//! `ConsumerGroup.fromClassicGroup`), or refuses with GROUP_ID_NOT_FOUND and a message saying
//! why. Each classic member becomes a consumer group member that keeps speaking the classic
//! protocol: its epoch is the generation, its assignment the one the classic leader gave it,
//! and its classic metadata (session timeout, protocols) goes with it.
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, ConsumerMemberState, Record};
use kcoord_wire::records::consumer_group_member_metadata_value::{
    ClassicMemberMetadata, ClassicProtocol,
};
use kcoord_wire::records::GroupMetadataKey;
use kcoord_wire::ErrorCode;

use super::{records, subscription};
use crate::classic::{ClassicAnswer, ClassicEffect, ClassicGroup, ClassicMember, Protocol};
use crate::consumer_protocol::{self as protocol, Malformed};
use crate::effects::{Effect, MemberEffect};
use crate::error::{CoordinatorError, Result};
use crate::shard::CoordinatorShard;

/// The consumer group a classic group became, with the records and effects of the change.
pub(super) struct Converted {
    pub group: ConsumerGroup,
    pub records: Vec<Record>,
    pub effects: Vec<Effect>,
}

/// Why a member cannot be converted.
enum Refused {
    Malformed,
    CustomAssignor,
}

impl From<Malformed> for Refused {
    fn from(_: Malformed) -> Self {
        Refused::Malformed
    }
}

impl CoordinatorShard {
    /// `validateOnlineUpgrade` and `convertToConsumerGroup`: the parked JoinGroup and
    /// SyncGroup requests of the classic group are answered REBALANCE_IN_PROGRESS (the join
    /// that converts it bumps the group epoch, so every member rejoins), the classic group's
    /// tombstone and the consumer group's records are written, and each member's session is
    /// armed with its classic session timeout.
    pub(super) fn upgrade_classic_group(
        &self,
        classic: &ClassicGroup,
        now: i64,
    ) -> Result<Converted> {
        let gid = classic.group_id.as_str();
        let cannot = |why: &str| {
            CoordinatorError::new(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Cannot upgrade classic group {gid} to consumer group because {why}"),
            )
        };
        if !self.consumer.migration_policy.is_upgrade_enabled() {
            return Err(cannot("online upgrade is disabled."));
        }
        if !classic.uses_consumer_protocol() {
            return Err(cannot(
                "the group does not use the consumer embedded protocol.",
            ));
        }
        if classic.members.len() > usize::try_from(self.consumer.max_size).unwrap_or(0) {
            return Err(cannot(
                "the group size exceeds the consumer group maximum size.",
            ));
        }
        // Before its first join completes a group has no protocol, and Kafka's upgrade fails
        // reading it (an internal error): such a group is refused as of another type.
        let Some(protocol) = classic.protocol_name.as_deref() else {
            return Err(super::not_a_consumer_group(gid));
        };
        let group = self.consumer_group_from_classic(classic, protocol).map_err(|r| match r {
            Refused::Malformed => cannot("the embedded consumer protocol is malformed."),
            Refused::CustomAssignor => cannot("an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."),
        })?;
        Ok(Converted {
            records: upgrade_records(&group),
            effects: upgrade_effects(classic, now),
            group,
        })
    }

    /// `ConsumerGroup.fromClassicGroup`: group and target assignment epochs are the
    /// generation, and every member is Stable at it with the partitions it was assigned (of
    /// topics that still exist).
    fn consumer_group_from_classic(
        &self,
        classic: &ClassicGroup,
        protocol: &str,
    ) -> std::result::Result<ConsumerGroup, Refused> {
        let generation = classic.generation_id;
        let mut group = ConsumerGroup::new(&classic.group_id);
        group.group_epoch = generation;
        group.target_assignment_epoch = generation;
        group.target_assignment_timestamp = 0;
        for member in classic.members.values() {
            let m = self.member_from_classic(member, protocol, generation)?;
            let target = m
                .assigned
                .iter()
                .map(|(t, p)| (*t, p.keys().copied().collect()))
                .collect();
            group.target_assignment.insert(m.member_id.clone(), target);
            group.members.insert(m);
        }
        let names = subscription::subscribed_topic_names(group.members.values(), &group);
        group.metadata_hash = subscription::metadata_hash(&names, self.topics());
        Ok(group)
    }

    fn member_from_classic(
        &self,
        member: &ClassicMember,
        protocol: &str,
        generation: i32,
    ) -> std::result::Result<ConsumerGroupMember, Refused> {
        // A member that never synced has an empty assignment, which Kafka takes as none.
        let assignment = if member.assignment.is_empty() {
            protocol::Assignment::default()
        } else {
            protocol::read_assignment(&member.assignment)?
        };
        if assignment.has_user_data() {
            return Err(Refused::CustomAssignor);
        }
        let metadata = member.metadata(protocol).ok_or(Malformed)?;
        let subscription = protocol::read_subscription(metadata)?;
        let mut m = ConsumerGroupMember::new(&member.member_id);
        m.member_epoch = generation;
        m.previous_member_epoch = generation;
        m.state = ConsumerMemberState::Stable;
        m.change_extras(|e| {
            e.instance_id = member.group_instance_id.clone();
            e.rack_id = subscription.rack_id;
        });
        m.rebalance_timeout_ms = member.rebalance_timeout_ms;
        m.client_id = member.client_id.as_str().into();
        m.client_host = member.client_host.as_str().into();
        m.subscribed_topic_names = subscription.topics.into_iter().collect();
        for (topic, partitions) in &assignment.partitions {
            if let Some(t) = self.topics().get(topic) {
                let epochs = partitions.iter().map(|p| (*p, generation)).collect();
                m.assigned.insert(t.id, epochs);
            }
        }
        m.classic_member_metadata = Some(Box::new(classic_metadata(
            member.session_timeout_ms,
            &member.protocols,
        )));
        Ok(m)
    }
}

/// Answers for the parked requests, the classic group gone, and the members' sessions.
fn upgrade_effects(classic: &ClassicGroup, now: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    for member in classic.members.values() {
        let error = ErrorCode::REBALANCE_IN_PROGRESS.code();
        if let Some(waiter) = member.awaiting_join {
            let answer = kcoord_wire::messages::JoinGroupResponse {
                member_id: member.member_id.to_string(),
                error_code: error,
                ..Default::default()
            };
            effects.push(answer_effect(waiter, ClassicAnswer::Join(answer)));
        }
        if let Some(waiter) = member.awaiting_sync {
            let answer = kcoord_wire::messages::SyncGroupResponse {
                error_code: error,
                ..Default::default()
            };
            effects.push(answer_effect(waiter, ClassicAnswer::Sync(answer)));
        }
    }
    effects.push(Effect::Classic(ClassicEffect::Group {
        group_id: classic.group_id.clone(),
        group: None,
    }));
    for member in classic.members.values() {
        effects.push(Effect::Member(MemberEffect::SessionTimer {
            group_id: classic.group_id.clone(),
            member_id: member.member_id.clone(),
            deadline: now + i64::from(member.session_timeout_ms),
        }));
    }
    effects
}

fn answer_effect(waiter: crate::classic::WaiterId, answer: ClassicAnswer) -> Effect {
    Effect::Classic(ClassicEffect::Answer(waiter, Box::new(answer)))
}

/// A classic member's metadata as a consumer group keeps it.
pub(super) fn classic_metadata(
    session_timeout_ms: i32,
    protocols: &[Protocol],
) -> ClassicMemberMetadata {
    ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols: protocols
            .iter()
            .map(|p| ClassicProtocol {
                name: p.name.clone(),
                metadata: p.metadata.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The classic group's tombstone, then `createConsumerGroupRecords`: the members'
/// subscriptions, the group epoch, the target assignment and its epoch, the members' current
/// assignments.
fn upgrade_records(group: &ConsumerGroup) -> Vec<Record> {
    let gid = group.group_id.as_str();
    let mut out = vec![Record::GroupMetadata(
        GroupMetadataKey {
            group: gid.to_owned(),
            ..Default::default()
        },
        None,
    )];
    out.extend(
        group
            .members
            .values()
            .map(|m| records::member_subscription(gid, m)),
    );
    out.push(records::group_epoch(
        gid,
        group.group_epoch,
        group.metadata_hash,
    ));
    for (id, target) in &group.target_assignment {
        out.push(records::target_member(gid, id, target));
    }
    out.push(records::target_metadata(
        gid,
        group.target_assignment_epoch,
        group.target_assignment_timestamp,
    ));
    out.extend(
        group
            .members
            .values()
            .map(|m| records::current_assignment(gid, m)),
    );
    out
}
