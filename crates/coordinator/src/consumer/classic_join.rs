//! JoinGroup to a consumer group with members (Kafka 4.4's `classicGroupJoinToConsumerGroup`):
//! the classic member joins, or rejoins, as a member of the consumer group with its classic
//! metadata, is reconciled towards the target assignment at once, and is answered with its
//! member epoch as the generation, its most preferred protocol and no member list (the
//! coordinator assigns; the member's SyncGroup collects its part).
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember};
use kcoord_wire::messages::consumer_group_heartbeat_request::TopicPartitions as Owned;
use kcoord_wire::messages::{JoinGroupRequest, JoinGroupResponse};
use kcoord_wire::ErrorCode;

use super::steps::Decided;
use super::upgrade::classic_metadata;
use super::{kafka_uuid_string, member, records, target, MigrationPolicy};
use crate::classic::{ClassicEffect, ClassicTask, ClassicTimer, JoinContext, Protocol, Reply};
use crate::consumer_protocol::{self, Subscription};
use crate::effects::{Effect, MemberEffect};
use crate::error::{CoordinatorError, Result};
use crate::shard::CoordinatorShard;
use crate::Outcome;

/// A JoinGroup to a consumer group, as far as it has been checked.
struct Join<'a> {
    group: &'a ConsumerGroup,
    ctx: JoinContext<'a>,
    req: &'a JoinGroupRequest,
    member_id: &'a str,
    unknown: bool,
    now: i64,
}

impl CoordinatorShard {
    /// JoinGroup to a consumer group that has members.
    pub(crate) fn classic_join_to_consumer_group(
        &self,
        group: &ConsumerGroup,
        ctx: JoinContext<'_>,
        req: &JoinGroupRequest,
        now: i64,
    ) -> Outcome<Reply<JoinGroupResponse>> {
        let mut d = Decided::default();
        let response = match self.join_consumer_group(group, ctx, req, now, &mut d) {
            Ok(response) => response,
            Err(e) => {
                // A minted member id is spent even when the join fails.
                let minted: Vec<Effect> = d
                    .effects
                    .into_iter()
                    .filter(|e| matches!(e, Effect::IdsMinted(_)))
                    .collect();
                let refused = JoinGroupResponse {
                    error_code: e.code.code(),
                    ..Default::default()
                };
                return Outcome::answer(Reply::Now(refused)).with_effects(minted);
            }
        };
        Outcome {
            records: crate::at_latest_version(d.records),
            response: Reply::Now(response),
            effects: d.effects,
        }
    }

    fn join_consumer_group(
        &self,
        group: &ConsumerGroup,
        ctx: JoinContext<'_>,
        req: &JoinGroupRequest,
        now: i64,
        d: &mut Decided,
    ) -> Result<JoinGroupResponse> {
        let gid = group.group_id.as_str();
        if self.consumer.migration_policy == MigrationPolicy::Disabled {
            return Err(CoordinatorError::new(
                ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                format!("Cannot join the consumer group {gid} with the classic protocol because the group migration is disabled."),
            ));
        }
        let unknown = req.member_id.is_empty();
        let member_id = if unknown {
            d.effects.push(Effect::IdsMinted(1));
            kafka_uuid_string(self.mint_id(0))
        } else {
            req.member_id.clone()
        };
        let instance_id = req.group_instance_id.as_deref();
        member::check_room(group, &member_id, instance_id, self.consumer.max_size)?;
        if !supports_classic_protocols(group, req) {
            return Err(CoordinatorError::new(
                ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                format!("Member {member_id}'s protocols are not supported."),
            ));
        }
        if ctx.api_version >= 4 && instance_id.is_none() && unknown {
            return Ok(JoinGroupResponse {
                member_id,
                error_code: ErrorCode::MEMBER_ID_REQUIRED.code(),
                ..Default::default()
            });
        }
        let join = Join {
            group,
            ctx,
            req,
            member_id: &member_id,
            unknown,
            now,
        };
        self.join_as_member(&join, d)
    }

    /// The member joins (or rejoins) and is reconciled; a static member replacing the group's
    /// last consumer-protocol member downgrades the group instead.
    fn join_as_member(&self, join: &Join<'_>, d: &mut Decided) -> Result<JoinGroupResponse> {
        let (group, req) = (join.group, join.req);
        let gid = group.group_id.as_str();
        let instance_id = req.group_instance_id.as_deref();
        let replaced = instance_id.and_then(|i| group.static_member(i));
        let downgrade = replaced.is_some_and(|r| self.may_downgrade_replacing(group, r));
        let mut work = group.clone();
        let before =
            self.joining_member(&mut work, join.member_id, instance_id, join.unknown, d)?;
        let subscription = req
            .protocols
            .first()
            .map(|p| consumer_protocol::read_subscription(&p.metadata))
            .and_then(|s| s.ok())
            .ok_or_else(|| {
                CoordinatorError::new(
                    ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                    "Malformed embedded consumer protocol in subscription deserialization.",
                )
            })?;
        let owned = self.owned_partitions(&subscription);
        let updated = updated_member(&before, join.ctx, req, subscription);
        let mut bump = false;
        if updated != before {
            d.records.push(records::member_subscription(gid, &updated));
            bump = updated.subscribed_topic_names != before.subscribed_topic_names
                || updated.subscribed_topic_regex != before.subscribed_topic_regex;
        }
        drop_unused_regex(&mut work, &before, d);
        work.members.insert(updated.clone());
        let assignor =
            target::preferred_assignor(work.members.values(), self.consumer.default_assignor());
        self.consumer_bump(&mut work, bump, d);
        let now = join.now;
        let reconciled = if downgrade {
            // Kafka reconciles the joiner to the current target unless the join moved the
            // group epoch; then the classic group rebalances at once.
            let rebalance = work.target_assignment_epoch < work.group_epoch;
            let mut member = updated;
            if !rebalance {
                let target = work
                    .target_assignment
                    .get(member.member_id.as_str())
                    .cloned()
                    .unwrap_or_default();
                member =
                    self.consumer_reconcile(&work, &member, &target, bump, Some(&owned), now, d)?;
                work.members.insert(member.clone());
            }
            work.group_epoch = group.group_epoch;
            work.resolved_regexes = group.resolved_regexes.clone();
            self.downgrade_on_join(group, &work, member, rebalance, now, d)?
        } else {
            let target = self.consumer_assign(&mut work, &assignor, &updated.member_id, now, d)?;
            let reconciled =
                self.consumer_reconcile(&work, &updated, &target, bump, Some(&owned), now, d)?;
            d.effects
                .extend(join_timers(gid, &reconciled.member_id, req, now));
            reconciled
        };
        Ok(JoinGroupResponse {
            member_id: reconciled.member_id.to_string(),
            generation_id: reconciled.member_epoch,
            protocol_type: Some(super::CONSUMER.to_owned()),
            protocol_name: req.protocols.first().map(|p| p.name.clone()),
            ..Default::default()
        })
    }

    /// The downgrade a static member's replacement triggers (`classicGroupJoinToConsumerGroup`
    /// with `convertToClassicGroup`). `work` is the group with the joiner in its
    /// predecessor's place, at the epoch it had before the join.
    fn downgrade_on_join(
        &self,
        group: &ConsumerGroup,
        work: &ConsumerGroup,
        member: ConsumerGroupMember,
        rebalance: bool,
        now: i64,
        d: &mut Decided,
    ) -> Result<ConsumerGroupMember> {
        d.records.extend(records::delete_group(work));
        let (classic_records, classic_effects) =
            self.downgrade_to_classic(work, &[], now, rebalance)?;
        d.records.extend(classic_records);
        d.effects.extend(super::downgrade::forget_members(
            &group.group_id,
            group.members.keys().chain([&member.member_id]),
        ));
        d.effects.push(Effect::Rebalanced);
        d.effects.extend(classic_effects);
        Ok(member)
    }

    /// `getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember` for a classic member: a
    /// dynamic member is created under any id; a static member with no id takes the place of
    /// its instance's member, one with an id must be that member.
    fn joining_member(
        &self,
        work: &mut ConsumerGroup,
        member_id: &str,
        instance_id: Option<&str>,
        unknown: bool,
        d: &mut Decided,
    ) -> Result<ConsumerGroupMember> {
        let existing = instance_id.and_then(|i| work.static_member(i)).cloned();
        let dynamic = |work: &ConsumerGroup| {
            work.members
                .get(member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerGroupMember::new(member_id))
        };
        let found = match (instance_id, existing) {
            (None, _) => dynamic(work),
            (Some(_), None) if unknown => dynamic(work),
            (Some(_), Some(old)) if unknown => {
                let replaced = member::replace(work, &old, member_id);
                d.records.extend(replaced.records);
                work.members.remove(old.member_id.as_str());
                if let Some(t) = work.target_assignment.remove(old.member_id.as_str()) {
                    work.target_assignment.insert(member_id.into(), t);
                }
                d.effects.push(Effect::Member(MemberEffect::Gone {
                    group_id: work.group_id.as_str().into(),
                    member_id: old.member_id.clone(),
                }));
                replaced.member
            }
            (Some(instance), old) => {
                let old = old.ok_or_else(|| {
                    CoordinatorError::new(
                        ErrorCode::UNKNOWN_MEMBER_ID,
                        format!("Instance id {instance} is unknown."),
                    )
                })?;
                member::check_not_fenced(&old, member_id, instance)?;
                old
            }
        };
        work.members.insert(found.clone());
        Ok(found)
    }

    /// The partitions the subscription says the member owns, by topic id (topics that no
    /// longer exist are left out, as Kafka's `toTopicPartitions` leaves them).
    fn owned_partitions(&self, subscription: &Subscription) -> Vec<Owned> {
        subscription
            .owned_partitions
            .iter()
            .filter_map(|(topic, partitions)| {
                self.topics().get(topic).map(|t| Owned {
                    topic_id: t.id,
                    partitions: partitions.clone(),
                    ..Default::default()
                })
            })
            .collect()
    }
}

/// `ConsumerGroup.supportsClassicProtocols`: the consumer protocol type, and a protocol every
/// classic member of the group supports.
fn supports_classic_protocols(group: &ConsumerGroup, req: &JoinGroupRequest) -> bool {
    if req.protocol_type != super::CONSUMER {
        return false;
    }
    if group.members.is_empty() {
        return !req.protocols.is_empty();
    }
    let classic: Vec<_> = group
        .members
        .values()
        .filter_map(|m| m.classic_member_metadata.as_ref())
        .collect();
    req.protocols.iter().any(|p| {
        classic
            .iter()
            .all(|c| c.supported_protocols.iter().any(|s| s.name == p.name))
    })
}

/// The member with what the JoinGroup says (a classic member never subscribes by regex).
fn updated_member(
    member: &ConsumerGroupMember,
    ctx: JoinContext<'_>,
    req: &JoinGroupRequest,
    subscription: Subscription,
) -> ConsumerGroupMember {
    let mut m = member.clone();
    if let Some(i) = &req.group_instance_id {
        m.change_extras(|e| e.instance_id = Some(i.clone()));
    }
    if let Some(rack) = subscription.rack_id {
        m.change_extras(|e| e.rack_id = Some(rack));
    }
    if req.rebalance_timeout_ms != -1 {
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
    }
    m.subscribed_topic_names = subscription.topics.into_iter().collect();
    m.subscribed_topic_regex = String::new();
    m.client_id = ctx.client_id.into();
    m.client_host = ctx.client_host.into();
    let protocols: Vec<Protocol> = req
        .protocols
        .iter()
        .map(|p| Protocol {
            name: p.name.clone(),
            metadata: bytes::Bytes::copy_from_slice(&p.metadata),
        })
        .collect();
    m.classic_member_metadata = Some(Box::new(classic_metadata(
        req.session_timeout_ms,
        &protocols,
    )));
    m
}

/// A static member replaced by a classic member may leave a regular expression nobody else
/// subscribes with: it goes (`maybeUpdateRegularExpressions`).
fn drop_unused_regex(work: &mut ConsumerGroup, before: &ConsumerGroupMember, d: &mut Decided) {
    let old = &before.subscribed_topic_regex;
    if old.is_empty() || work.regex_subscribers(old) != 1 {
        return;
    }
    work.resolved_regexes.remove(old);
    d.records.push(records::regex(&work.group_id, old, None));
}

/// The join timeout goes; the session runs with the member's classic session timeout, and the
/// member must sync within its rebalance timeout.
fn join_timers(group_id: &str, member_id: &str, req: &JoinGroupRequest, now: i64) -> Vec<Effect> {
    let timer = |sync: bool| {
        let (group_id, member_id) = (group_id.into(), member_id.into());
        if sync {
            ClassicTimer::ConsumerSync {
                group_id,
                member_id,
            }
        } else {
            ClassicTimer::ConsumerJoin {
                group_id,
                member_id,
            }
        }
    };
    vec![
        Effect::Classic(ClassicEffect::Cancel(timer(false))),
        Effect::Member(MemberEffect::SessionTimer {
            group_id: group_id.into(),
            member_id: member_id.into(),
            deadline: now + i64::from(req.session_timeout_ms),
        }),
        Effect::Classic(ClassicEffect::Schedule {
            timer: timer(true),
            deadline: now + i64::from(req.rebalance_timeout_ms.max(0)),
            task: ClassicTask::FenceConsumerMember,
        }),
    ]
}
