//! Consumer groups in the shared group RPCs (ConsumerGroupDescribe, ListGroups, DeleteGroups,
//! the offset checks of `ConsumerGroup.validateOffsetCommit`/`validateOffsetFetch`), their
//! state (`maybeUpdateGroupState`) and their timers.
use kcoord_metadata::{
    ConsumerGroup, ConsumerGroupMember, ConsumerMemberState, PartitionEpochs, TopicsImage,
};
use kcoord_wire::messages::consumer_group_describe_response as d;
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use super::{records, target};
use crate::commits::OffsetToCommit;
use crate::effects::{Effect, MemberEffect};
use crate::error::{CoordinatorError, Result};
use crate::shard::{CoordinatorShard, GroupState, Id};
use crate::tick::TickEvent;
use crate::timer_queue::{DueTimer, TimerKind};
use crate::Outcome;

/// `ConsumerGroup.maybeUpdateGroupState`.
pub fn consumer_group_state(group: &ConsumerGroup) -> GroupState {
    if group.members.is_empty() {
        GroupState::Empty
    } else if group.group_epoch > group.target_assignment_epoch {
        GroupState::Assigning
    } else if group
        .members
        .values()
        .all(|m| m.is_reconciled_to(group.target_assignment_epoch))
    {
        GroupState::Stable
    } else {
        GroupState::Reconciling
    }
}

impl CoordinatorShard {
    pub fn consumer_group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.state().consumer_groups.get(group_id)
    }

    /// ConsumerGroupDescribe for the ids of this shard (authorization is the caller's).
    pub fn describe_consumer_groups(&self, group_ids: &[String]) -> Vec<d::DescribedGroup> {
        group_ids
            .iter()
            .map(|id| self.describe_consumer_group(id))
            .collect()
    }

    fn describe_consumer_group(&self, group_id: &str) -> d::DescribedGroup {
        let Some(g) = self.consumer_group(group_id) else {
            let e = if self.is_other_group_type(group_id) {
                super::not_a_consumer_group(group_id)
            } else {
                CoordinatorError::any_group_not_found(group_id)
            };
            return d::DescribedGroup {
                group_id: group_id.to_string(),
                error_code: e.code.code(),
                error_message: e.message,
                ..Default::default()
            };
        };
        let topics = self.topics();
        d::DescribedGroup {
            group_id: group_id.to_string(),
            group_state: consumer_group_state(g).as_str().to_string(),
            group_epoch: g.group_epoch,
            assignment_epoch: g.target_assignment_epoch,
            assignor_name: target::preferred_assignor(
                g.members.values(),
                self.consumer.default_assignor(),
            ),
            members: g
                .members
                .values()
                .map(|m| describe_member(m, g.target_assignment.get(m.member_id.as_str()), topics))
                .collect(),
            ..Default::default()
        }
    }

    /// DeleteGroups of a consumer group: NON_EMPTY_GROUP with members, else its tombstones.
    pub(crate) fn delete_consumer_group_records(
        &self,
        g: &ConsumerGroup,
    ) -> Result<Vec<kcoord_metadata::Record>> {
        if consumer_group_state(g) != GroupState::Empty {
            return Err(CoordinatorError {
                code: ErrorCode::NON_EMPTY_GROUP,
                message: None,
            });
        }
        Ok(records::delete_group(g))
    }

    /// A due timer of a consumer group member: an expired session, or a rebalance timeout
    /// while the member still revokes partitions at the epoch the timer was armed for.
    pub(crate) fn fire_consumer_timer(
        &self,
        g: &ConsumerGroup,
        timer: &DueTimer,
        now: i64,
    ) -> Outcome<Option<TickEvent>> {
        let Some(member) = g.members.get(timer.member_id.as_str()) else {
            return Outcome::answer(None);
        };
        let expired = match timer.kind {
            TimerKind::Session => true,
            TimerKind::Rebalance(epoch) => {
                member.state == ConsumerMemberState::UnrevokedPartitions
                    && member.member_epoch == epoch
            }
        };
        if !expired {
            return Outcome::answer(None);
        }
        let (group_id, member_id) = (g.group_id.clone(), member.member_id.to_string());
        let event = match timer.kind {
            TimerKind::Session => TickEvent::SessionExpired {
                group_id,
                member_id,
            },
            TimerKind::Rebalance(_) => TickEvent::RebalanceTimedOut {
                group_id,
                member_id,
            },
        };
        // A downgrade that fails (a protocol Kafka cannot read) leaves the member, as Kafka's
        // failed timer operation does.
        let Ok((records, effects)) = self.fence_consumer_members(g, &[member], now) else {
            return Outcome::answer(None);
        };
        Outcome {
            records: crate::at_latest_version(records),
            response: Some(event),
            effects,
        }
    }

    /// The timers of the consumer groups of a shard just loaded, as Kafka arms them after a
    /// failover: a session per member, a rebalance timeout per member revoking partitions.
    pub(crate) fn loaded_consumer_timers(&self, now: i64) -> Vec<Effect> {
        let mut out = Vec::new();
        for g in self.state().consumer_groups.iter() {
            let session = i64::from(self.consumer_settings(&g.group_id).session_timeout_ms);
            let group_id = Id::from(g.group_id.as_str());
            for m in g.members.values() {
                out.push(Effect::Member(MemberEffect::SessionTimer {
                    group_id: group_id.clone(),
                    member_id: m.member_id.clone(),
                    deadline: now + session,
                }));
                if m.state == ConsumerMemberState::UnrevokedPartitions {
                    out.push(Effect::Member(MemberEffect::RebalanceTimer {
                        group_id: group_id.clone(),
                        member_id: m.member_id.clone(),
                        deadline: now + i64::from(m.rebalance_timeout_ms.max(0)),
                        epoch: m.member_epoch,
                    }));
                }
            }
        }
        out
    }
}

/// `ConsumerGroup.validateOffsetCommit` with its per-partition validator (KIP-1251): an empty
/// group takes an admin commit (epoch < 0); a member commits at its epoch, or at an older one
/// no older than the epoch at which it got each partition.
pub(crate) fn validate_commit(
    g: &ConsumerGroup,
    member_id: &str,
    member_epoch: i32,
    api_version: Option<i16>,
    offsets: &[&OffsetToCommit],
    topics: &TopicsImage,
) -> Result<()> {
    if member_epoch < 0 && g.members.is_empty() {
        return Ok(());
    }
    let member = g
        .members
        .get(member_id)
        .ok_or_else(|| CoordinatorError::unknown_member(&g.group_id, member_id))?;
    if api_version.is_some_and(|v| v < 9) && !member.uses_classic_protocol() {
        return Err(CoordinatorError::new(
            ErrorCode::UNSUPPORTED_VERSION,
            "OffsetCommit version 9 or above must be used by members using the consumer group protocol",
        ));
    }
    if member_epoch == member.member_epoch {
        return Ok(());
    }
    // A classic member hears ILLEGAL_GENERATION and "generation id" where a consumer-protocol
    // member hears STALE_MEMBER_EPOCH and "member epoch".
    let classic = member.uses_classic_protocol();
    let (code, what) = if classic {
        (ErrorCode::ILLEGAL_GENERATION, "generation id")
    } else {
        (ErrorCode::STALE_MEMBER_EPOCH, "member epoch")
    };
    let stale = |msg: String| CoordinatorError::new(code, msg);
    if member_epoch > member.member_epoch {
        return Err(stale(format!(
            "Received {what} {member_epoch} is newer than current member epoch {}.",
            member.member_epoch
        )));
    }
    for o in offsets {
        let id = if o.topic_id.is_nil() {
            topics.get(&o.topic).map_or(Uuid::nil(), |t| t.id)
        } else {
            o.topic_id
        };
        let epoch = partition_epoch(&member.assigned, &id, o.partition)
            .or_else(|| partition_epoch(&member.pending_revocation, &id, o.partition));
        let Some(epoch) = epoch else {
            return Err(stale(format!(
                "Partition {}-{} is not assigned or pending revocation for member.",
                o.topic, o.partition
            )));
        };
        if member_epoch < epoch {
            return Err(stale(format!(
                "Received {what} {member_epoch} is older than assignment epoch {epoch} for partition {}-{}.",
                o.topic, o.partition
            )));
        }
    }
    Ok(())
}

fn partition_epoch(map: &PartitionEpochs, topic: &Uuid, partition: i32) -> Option<i32> {
    map.get(topic).and_then(|p| p.get(&partition)).copied()
}

/// `ConsumerGroup.validateOffsetFetch`: an admin fetch (no member id, epoch < 0) passes;
/// else the member must exist at exactly that epoch.
pub(crate) fn validate_fetch(
    g: &ConsumerGroup,
    member_id: Option<&str>,
    member_epoch: i32,
) -> Result<()> {
    if member_id.is_none() && member_epoch < 0 {
        return Ok(());
    }
    let member_id = member_id.unwrap_or_default();
    let member = g
        .members
        .get(member_id)
        .ok_or_else(|| CoordinatorError::unknown_member(&g.group_id, member_id))?;
    if member_epoch != member.member_epoch {
        let (code, what) = if member.uses_classic_protocol() {
            (ErrorCode::ILLEGAL_GENERATION, "generation id")
        } else {
            (ErrorCode::STALE_MEMBER_EPOCH, "member epoch")
        };
        return Err(CoordinatorError::new(
            code,
            format!(
                "Received {what} {member_epoch} does not match current member epoch {}.",
                member.member_epoch
            ),
        ));
    }
    Ok(())
}

/// `ConsumerGroup.isSubscribedToTopic`: a topic some member subscribes to (by name or through
/// a resolved regex); OffsetDelete refuses its offsets while the group reads it.
pub(crate) fn subscribed_to(g: &ConsumerGroup, topic: &str) -> bool {
    g.members
        .values()
        .any(|m| super::subscription::member_topic_names(m, g).contains(topic))
}

fn describe_partitions(
    parts: &[(Uuid, Vec<i32>)],
    topics: &TopicsImage,
) -> Vec<d::TopicPartitions> {
    parts
        .iter()
        .filter_map(|(id, ps)| {
            let topic = topics.get_by_id(id)?;
            Some(d::TopicPartitions {
                topic_id: *id,
                topic_name: topic.name.clone(),
                partitions: ps.clone(),
                ..Default::default()
            })
        })
        .collect()
}

/// `asConsumerGroupDescribeMember`: the assignment includes the partitions pending
/// revocation, which the member still holds; topics the catalog no longer has are left out.
fn describe_member(
    m: &ConsumerGroupMember,
    target: Option<&kcoord_metadata::TopicPartitions>,
    topics: &TopicsImage,
) -> d::Member {
    let mut owned: std::collections::BTreeMap<Uuid, std::collections::BTreeSet<i32>> =
        Default::default();
    for (t, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
        owned.entry(*t).or_default().extend(ps.keys());
    }
    let owned: Vec<(Uuid, Vec<i32>)> = owned
        .into_iter()
        .map(|(t, ps)| (t, ps.into_iter().collect()))
        .collect();
    let target: Vec<(Uuid, Vec<i32>)> = target
        .into_iter()
        .flatten()
        .map(|(t, ps)| (*t, ps.iter().copied().collect()))
        .collect();
    d::Member {
        member_id: m.member_id.to_string(),
        instance_id: m.instance_id().map(str::to_owned),
        rack_id: m.rack_id().map(str::to_owned),
        member_epoch: m.member_epoch,
        client_id: m.client_id.to_string(),
        client_host: m.client_host.to_string(),
        subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
        subscribed_topic_regex: Some(m.subscribed_topic_regex.clone()),
        assignment: d::Assignment {
            topic_partitions: describe_partitions(&owned, topics),
            ..Default::default()
        },
        target_assignment: d::Assignment {
            topic_partitions: describe_partitions(&target, topics),
            ..Default::default()
        },
        member_type: if m.uses_classic_protocol() { 0 } else { 1 },
        ..Default::default()
    }
}
