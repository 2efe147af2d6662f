//! A join or a heartbeat (`consumerGroupHeartbeat`): the member is created or updated (a
//! changed subscription bumps the group epoch), the target assignment is computed when the
//! group epoch is ahead of it, and the member is reconciled towards it.
use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember};
use kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kcoord_wire::messages::consumer_group_heartbeat_response::{
    Assignment, ConsumerGroupHeartbeatResponse, TopicPartitions as ResponsePartitions,
};

use super::steps::Decided;
use super::subscription;
use super::{
    kafka_uuid_string, member, not_a_consumer_group, records, target, ConsumerHeartbeatContext,
};
use crate::effects::{Effect, MemberEffect};
use crate::error::Result;
use crate::shard::CoordinatorShard;
use crate::Outcome;

/// How a member's regular expression changed (`UpdateRegularExpressionStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegexChange {
    None,
    Updated,
    UpdatedAndResolved,
}

pub(super) struct ConsumerHeartbeat<'a> {
    shard: &'a CoordinatorShard,
    ctx: &'a ConsumerHeartbeatContext<'a>,
    request: &'a ConsumerGroupHeartbeatRequest,
    now: i64,
}

impl<'a> ConsumerHeartbeat<'a> {
    pub(super) fn new(
        shard: &'a CoordinatorShard,
        ctx: &'a ConsumerHeartbeatContext<'a>,
        request: &'a ConsumerGroupHeartbeatRequest,
        now: i64,
    ) -> Self {
        ConsumerHeartbeat {
            shard,
            ctx,
            request,
            now,
        }
    }

    pub(super) fn run(self) -> Outcome<Result<ConsumerGroupHeartbeatResponse>> {
        let mut decided = Decided::default();
        match self.decide(&mut decided) {
            Ok(response) => Outcome {
                records: crate::at_latest_version(decided.records),
                response: Ok(response),
                effects: decided.effects,
            },
            Err(e) => Outcome::answer(Err(e)),
        }
    }

    /// The settings of the group (its `consumer.*` group configs, else the broker's).
    fn settings(&self) -> &crate::consumer::ConsumerGroupConfig {
        self.shard.consumer_settings(&self.request.group_id)
    }

    /// `getOrMaybeCreateConsumerGroup`: the group as it is, or a new one for a join. A join
    /// to an empty classic group converts it, as Kafka does: its record goes, its offsets stay.
    fn group(&self, d: &mut Decided) -> Result<ConsumerGroup> {
        let gid = self.request.group_id.as_str();
        if let Some(g) = self.shard.state().consumer_groups.get(gid) {
            return Ok(g.clone());
        }
        let empty_classic = self
            .shard
            .classic_group(gid)
            .is_some_and(|g| g.is(crate::classic::ClassicGroupState::Empty));
        if empty_classic && self.request.member_epoch == 0 {
            d.records.extend(self.shard.expire_classic_group(gid));
            d.effects
                .push(Effect::Classic(crate::classic::ClassicEffect::Group {
                    group_id: gid.into(),
                    group: None,
                }));
            return Ok(ConsumerGroup::new(gid));
        }
        if self.request.member_epoch == 0 {
            if let Some(classic) = self.shard.classic_group(gid) {
                let converted = self.shard.upgrade_classic_group(classic, self.now)?;
                d.records.extend(converted.records);
                d.effects.extend(converted.effects);
                return Ok(converted.group);
            }
        }
        if self.shard.is_other_group_type(gid) {
            return Err(not_a_consumer_group(gid));
        }
        if self.request.member_epoch != 0 {
            return Err(self.shard.missing_consumer_group(gid));
        }
        if self.shard.state().offsets.group(gid).is_none() {
            self.shard.check_room_for_group()?;
        }
        Ok(ConsumerGroup::new(gid))
    }

    fn decide(&self, d: &mut Decided) -> Result<ConsumerGroupHeartbeatResponse> {
        let group = self.group(d)?;
        let member_id = if self.request.member_id.is_empty() {
            d.effects.push(Effect::IdsMinted(1));
            kafka_uuid_string(self.shard.mint_id(0))
        } else {
            self.request.member_id.clone()
        };
        member::check_room(
            &group,
            &member_id,
            self.request.instance_id.as_deref(),
            self.shard.consumer.max_size,
        )?;
        let found = member::find(&group, &member_id, self.request)?;
        // `group()` already made the copy this heartbeat works on; a second one would double
        // the cost of every non-steady heartbeat in a big group (a join storm's).
        let mut work = group;
        if let Some(old) = &found.replaced {
            work.members.remove(old.as_str());
            if let Some(t) = work.target_assignment.remove(old.as_str()) {
                work.target_assignment.insert(member_id.as_str().into(), t);
            }
            d.effects.push(Effect::Member(MemberEffect::Gone {
                group_id: work.group_id.as_str().into(),
                member_id: old.as_str().into(),
            }));
        }
        d.records.extend(found.records);
        let before = found.member;
        work.members.insert(before.clone());
        let updated = self.updated_member(&before);
        let names_changed = if updated != before {
            d.records
                .push(records::member_subscription(&work.group_id, &updated));
            updated.subscribed_topic_names != before.subscribed_topic_names
        } else {
            false
        };
        let regex = self.update_regexes(&mut work, &before, &updated, d)?;
        let default = self.shard.consumer.default_assignor();
        let assignor_before = target::preferred_assignor(work.members.values(), default);
        work.members.insert(updated.clone());
        let assignor = target::preferred_assignor(work.members.values(), default);
        let bump = names_changed
            || regex == RegexChange::UpdatedAndResolved
            || assignor != assignor_before;
        self.shard.consumer_bump(&mut work, bump, d);
        let target =
            self.shard
                .consumer_assign(&mut work, &assignor, &updated.member_id, self.now, d)?;
        let subscription_changed = names_changed || regex != RegexChange::None;
        let reconciled = self.shard.consumer_reconcile(
            &work,
            &updated,
            &target,
            subscription_changed,
            self.request.topic_partitions.as_deref(),
            self.now,
            d,
        )?;
        d.effects.push(Effect::Member(MemberEffect::SessionTimer {
            group_id: work.group_id.as_str().into(),
            member_id: reconciled.member_id.clone(),
            deadline: self.now + i64::from(self.settings().session_timeout_ms),
        }));
        Ok(self.response(&before, &reconciled))
    }

    /// The member with what the request changed (`ConsumerGroupMember.Builder.maybeUpdate*`).
    fn updated_member(&self, member: &ConsumerGroupMember) -> ConsumerGroupMember {
        let r = self.request;
        let mut m = member.clone();
        if let Some(i) = &r.instance_id {
            m.change_extras(|e| e.instance_id = Some(i.clone()));
        }
        if let Some(rack) = &r.rack_id {
            m.change_extras(|e| e.rack_id = Some(rack.clone()));
        }
        if r.rebalance_timeout_ms != -1 {
            m.rebalance_timeout_ms = r.rebalance_timeout_ms;
        }
        if let Some(a) = &r.server_assignor {
            m.change_extras(|e| e.server_assignor = Some(a.clone()));
        }
        if let Some(names) = &r.subscribed_topic_names {
            m.subscribed_topic_names = names.iter().cloned().collect();
        }
        if let Some(regex) = &r.subscribed_topic_regex {
            m.subscribed_topic_regex = regex.clone();
        }
        m.client_id = self.ctx.client_id.into();
        m.client_host = self.ctx.client_host.into();
        m.classic_member_metadata = None;
        m
    }

    /// `maybeUpdateRegularExpressions`, resolving at once: a new expression is compiled and
    /// resolved in this heartbeat (Kafka resolves it off the request path and bumps the epoch
    /// when the resolution lands), and every expression resolved against an older catalog is
    /// resolved again.
    fn update_regexes(
        &self,
        work: &mut ConsumerGroup,
        before: &ConsumerGroupMember,
        updated: &ConsumerGroupMember,
        d: &mut Decided,
    ) -> Result<RegexChange> {
        let (old, new) = (
            &before.subscribed_topic_regex,
            &updated.subscribed_topic_regex,
        );
        let gid = work.group_id.clone();
        let mut change = RegexChange::None;
        if old != new {
            change = RegexChange::Updated;
            if !old.is_empty() && work.regex_subscribers(old) == 1 {
                work.resolved_regexes.remove(old);
                d.records.push(records::regex(&gid, old, None));
            }
            if !new.is_empty() {
                if !work.resolved_regexes.contains_key(new) {
                    subscription::compile(new)?;
                    let resolved = self.resolve(new);
                    d.records.push(records::regex(&gid, new, Some(&resolved)));
                    work.resolved_regexes.insert(new.clone(), resolved);
                }
                change = RegexChange::UpdatedAndResolved;
            } else if !old.is_empty() {
                change = RegexChange::UpdatedAndResolved;
            }
        }
        let version = subscription::catalog_version(self.shard.topics());
        let stale: Vec<String> = work
            .resolved_regexes
            .iter()
            .filter(|(_, r)| r.version != version)
            .map(|(regex, _)| regex.clone())
            .collect();
        for regex in stale {
            let resolved = self.resolve(&regex);
            d.records
                .push(records::regex(&gid, &regex, Some(&resolved)));
            work.resolved_regexes.insert(regex, resolved);
        }
        Ok(change)
    }

    fn resolve(&self, regex: &str) -> kcoord_metadata::ResolvedRegex {
        subscription::resolve(regex, self.shard.topics(), self.ctx.may_describe, self.now)
    }

    /// The answer: the assignment goes along on a join, on a full request (one that carries
    /// the rebalance timeout, a subscription and the owned partitions) and when it changed.
    fn response(
        &self,
        before: &ConsumerGroupMember,
        after: &ConsumerGroupMember,
    ) -> ConsumerGroupHeartbeatResponse {
        let r = self.request;
        let full = r.rebalance_timeout_ms != -1
            && (r.subscribed_topic_names.is_some() || r.subscribed_topic_regex.is_some())
            && r.topic_partitions.is_some();
        let send = r.member_epoch == 0 || full || before.assigned != after.assigned;
        ConsumerGroupHeartbeatResponse {
            member_id: Some(after.member_id.to_string()),
            member_epoch: after.member_epoch,
            heartbeat_interval_ms: self.settings().heartbeat_interval_ms,
            assignment: send.then(|| Assignment {
                topic_partitions: after
                    .assigned
                    .iter()
                    .map(|(t, parts)| ResponsePartitions {
                        topic_id: *t,
                        partitions: parts.keys().copied().collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}
