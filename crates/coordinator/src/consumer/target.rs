//! The target assignment of a consumer group (Kafka's `TargetAssignmentBuilder`): the
//! assignor's answer for the members as they are after this heartbeat, written as the members
//! whose target changed, then the new target epoch.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_metadata::{ConsumerGroup, ConsumerGroupMember, Record, TopicPartitions, TopicsImage};
use uuid::Uuid;

use super::assignor::{self, AssignorMember, GroupSpec};
use super::records;
use super::subscription::member_topic_names;
use crate::error::Result;

/// The topic ids of `names` that exist in the catalog.
pub fn topic_ids(names: &BTreeSet<String>, topics: &TopicsImage) -> BTreeSet<Uuid> {
    names
        .iter()
        .filter_map(|n| topics.get(n).map(|t| t.id))
        .collect()
}

/// `computePreferredServerAssignor`: the assignor most members name (ties to the smaller
/// name, where Kafka's pick among equals follows hash order), else the default.
pub fn preferred_assignor<'a>(
    members: impl Iterator<Item = &'a ConsumerGroupMember>,
    default: &str,
) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in members {
        if let Some(name) = m.server_assignor() {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map_or(default.to_string(), |(name, _)| name.to_string())
}

/// A new target assignment at `epoch` for `group`'s members (with `group.target_assignment`
/// as the current one): the records, and the new target of every member.
pub fn compute(
    group: &ConsumerGroup,
    assignor_name: &str,
    topics: &TopicsImage,
    epoch: i32,
    now: i64,
) -> Result<(Vec<Record>, BTreeMap<String, TopicPartitions>)> {
    let mut spec = GroupSpec::default();
    for (id, m) in group.members.iter() {
        let subscribed = topic_ids(&member_topic_names(m, group), topics);
        for t in &subscribed {
            if let Some(image) = topics.get_by_id(t) {
                spec.partitions.insert(*t, image.partition_count());
            }
        }
        spec.members.insert(
            id.to_string(),
            AssignorMember {
                instance_id: m.instance_id().map(str::to_owned),
                subscribed,
                current: group
                    .target_assignment
                    .get(id.as_str())
                    .cloned()
                    .unwrap_or_default(),
            },
        );
    }
    let assignment = assignor::assign(assignor_name, &spec)?;
    let gid = group.group_id.as_str();
    let mut out = Vec::new();
    let empty = TopicPartitions::new();
    for (id, partitions) in &assignment {
        // A member absent from the old target had an empty one (Kafka's `Assignment.EMPTY`).
        if group.target_assignment.get(id.as_str()).unwrap_or(&empty) != partitions {
            out.push(records::target_member(gid, id, partitions));
        }
    }
    out.push(records::target_metadata(gid, epoch, now));
    Ok((out, assignment))
}
