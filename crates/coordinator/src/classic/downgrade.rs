//! The classic side of Kafka 4.4's online downgrade (`convertToClassicGroup` with
//! `ClassicGroup.fromConsumerGroup`): when the last consumer-protocol member leaves a consumer
//! group whose other members all speak the classic protocol, the group becomes a classic group
//! again, Stable at the group epoch with each member's target assignment encoded in the
//! consumer protocol version its subscription uses, and a rebalance starts at once so that the
//! members rejoin as classic members.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::{ConsumerGroup, Record, TopicsImage};
use kcoord_wire::ErrorCode;

use super::change::Change;
use super::group::CONSUMER_PROTOCOL_TYPE;
use super::{ClassicGroup, ClassicGroupState, ClassicMember, Protocol};
use crate::consumer_protocol;
use crate::effects::Effect;
use crate::error::{CoordinatorError, Result};
use crate::shard::CoordinatorShard;

impl CoordinatorShard {
    /// The classic group `group` becomes without the `leaving` members: its record, each
    /// member's session timer, and (with `rebalance`) the rebalance that follows (the consumer
    /// group's tombstones are the caller's).
    pub(crate) fn downgrade_to_classic(
        &self,
        group: &ConsumerGroup,
        leaving: &[&str],
        now: i64,
        rebalance: bool,
    ) -> Result<(Vec<Record>, Vec<Effect>)> {
        let classic = from_consumer_group(group, leaving, self.topics(), now)?;
        let mut change = Change::of(self, classic, now);
        let record = change.group.record(&change.group.assignments());
        change.record(record);
        let sessions: Vec<(String, i32)> = change
            .group
            .members
            .values()
            .map(|m| (m.member_id.to_string(), m.session_timeout_ms))
            .collect();
        for (member_id, session) in sessions {
            change.reschedule_heartbeat(&member_id, session);
        }
        if rebalance {
            change.prepare_rebalance();
        }
        Ok(change.into_parts())
    }
}

/// `ClassicGroup.fromConsumerGroup`.
fn from_consumer_group(
    group: &ConsumerGroup,
    leaving: &[&str],
    topics: &TopicsImage,
    now: i64,
) -> Result<ClassicGroup> {
    let mut classic = ClassicGroup::new(&group.group_id, now);
    classic.state = ClassicGroupState::Stable;
    classic.generation_id = group.group_epoch;
    classic.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_owned());
    for m in group.members.values() {
        let Some(meta) = &m.classic_member_metadata else {
            continue;
        };
        if leaving.contains(&m.member_id.as_str()) {
            continue;
        }
        classic.add(ClassicMember {
            member_id: m.member_id.clone(),
            group_instance_id: m.instance_id().map(str::to_owned),
            client_id: m.client_id.to_string(),
            client_host: m.client_host.to_string(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            session_timeout_ms: meta.session_timeout_ms,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_owned(),
            protocols: meta
                .supported_protocols
                .iter()
                .map(|p| Protocol {
                    name: p.name.clone(),
                    metadata: p.metadata.clone(),
                })
                .collect(),
            assignment: Default::default(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
        });
    }
    classic.protocol_name = classic.select_protocol();
    classic.subscribed_topics = classic.compute_subscribed_topics();
    let protocol = classic.protocol_name.clone().unwrap_or_default();
    let ids: Vec<_> = classic.members.keys().cloned().collect();
    for id in ids {
        let Some(member) = classic.member_mut(&id) else {
            continue;
        };
        let metadata = member.metadata(&protocol).cloned().unwrap_or_default();
        let version = consumer_protocol::read_version(&metadata).map_err(|e| {
            CoordinatorError::new(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!(
                    "Cannot downgrade the classic group {}: {e}.",
                    group.group_id
                ),
            )
        })?;
        let mut named: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        for (topic, partitions) in group
            .target_assignment
            .get(id.as_str())
            .into_iter()
            .flatten()
        {
            if let Some(t) = topics.get_by_id(topic) {
                named.insert(t.name.clone(), partitions.iter().copied().collect());
            }
        }
        member.assignment = consumer_protocol::write_assignment(&named, version);
    }
    Ok(classic)
}
