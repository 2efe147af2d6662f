//! Committed offsets that go without a request: those of deleted topics (Kafka's
//! `OffsetMetadataManager.onTopicsDeleted`) and those that expire
//! (`GroupCoordinatorShard.cleanupGroupMetadata`). Both return tombstones through the shard's
//! log like every other change; `now` is an argument.
use kcoord_metadata::Record;
use kcoord_wire::records::OffsetCommitKey;
use uuid::Uuid;

use crate::error::Result;
use crate::groups::subscribed_to;
use crate::records;
use crate::shard::CoordinatorShard;
use crate::timers::TickEvent;

/// A topic the controller deleted: its name and id (Kafka's `DeletedTopic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedTopic {
    pub name: String,
    pub id: Uuid,
}

pub(crate) fn tombstone(group: &str, topic: &str, partition: i32) -> Record {
    Record::OffsetCommit(
        OffsetCommitKey {
            group: group.into(),
            topic: topic.into(),
            partition,
            ..Default::default()
        },
        None,
    )
}

impl CoordinatorShard {
    /// `onTopicsDeleted`: tombstones every group's committed offsets of the deleted topics,
    /// where the offset names the deleted topic's id or no id (a commit by name only). A topic
    /// created again under the same name keeps the offsets committed with its new id. Returns
    /// how many offsets were removed.
    pub fn on_topics_deleted(&mut self, deleted: &[DeletedTopic]) -> Result<usize> {
        if deleted.is_empty() {
            return Ok(0);
        }
        let mut records = Vec::new();
        for (group, offsets) in self.store.state().offsets.iter() {
            for topic in deleted {
                let range = (topic.name.clone(), i32::MIN)..=(topic.name.clone(), i32::MAX);
                for ((name, partition), committed) in offsets.range(range) {
                    if committed.topic_id.is_nil() || committed.topic_id == topic.id {
                        records.push(tombstone(group, name, *partition));
                    }
                }
            }
        }
        let removed = records.len();
        self.append(records)?;
        Ok(removed)
    }
}

impl CoordinatorShard {
    /// `GroupCoordinatorShard.cleanupGroupMetadata`, run every
    /// `offsets.retention.check.interval.ms` from `tick`: for every group (streams groups and
    /// offsets-only groups), `cleanupExpiredOffsets` tombstones each committed offset of a topic
    /// the group does not consume (`isSubscribedToTopic`: nothing while the group is empty)
    /// whose commit is at least `offsets.retention.minutes` old (the streams group's and the
    /// simple group's `offsetExpirationCondition` both count from the commit timestamp); when
    /// no offset is left, `maybeDeleteGroup` deletes the group if it is empty. An empty
    /// streams group that never committed is therefore deleted by the next pass.
    pub fn cleanup_group_metadata(&mut self, now: i64) -> Result<Vec<TickEvent>> {
        let retention = self.base.config.offsets_retention_ms;
        let state = self.store.state();
        let mut group_ids: Vec<&str> = state
            .streams_groups
            .iter()
            .map(|g| g.group_id.as_str())
            .chain(state.offsets.group_ids())
            .collect();
        group_ids.sort_unstable();
        group_ids.dedup();
        let mut records = Vec::new();
        let mut events = Vec::new();
        let mut deleted = Vec::new();
        for group_id in group_ids {
            let group = state.streams_groups.get(group_id);
            let mut all_expired = true;
            let mut expired = 0;
            if let Some(offsets) = state.offsets.group(group_id) {
                for ((topic, partition), committed) in offsets {
                    let subscribed = group.is_some_and(|g| subscribed_to(g, topic));
                    if !subscribed && now.saturating_sub(committed.commit_timestamp) >= retention {
                        records.push(tombstone(group_id, topic, *partition));
                        expired += 1;
                    } else {
                        all_expired = false;
                    }
                }
            }
            if expired > 0 {
                events.push(TickEvent::OffsetsExpired {
                    group_id: group_id.to_owned(),
                    count: expired,
                });
            }
            // An offsets-only group is gone with its last offset; a streams group needs its
            // tombstones, and only when it is empty.
            if let Some(g) = group.filter(|g| all_expired && g.members.is_empty()) {
                records.extend(records::delete_group(g));
                deleted.push(group_id.to_owned());
                events.push(TickEvent::GroupExpired {
                    group_id: group_id.to_owned(),
                });
            }
        }
        self.append(records)?;
        for group_id in &deleted {
            self.forget_soft_state(group_id);
        }
        Ok(events)
    }
}
