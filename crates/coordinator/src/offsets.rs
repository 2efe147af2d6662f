//! Committed offsets that go without a request: those of deleted topics (Kafka's
//! `OffsetMetadataManager.onTopicsDeleted`) and those that expire
//! (`GroupCoordinatorShard.cleanupGroupMetadata`). Both return tombstones through the shard's
//! log like every other change; `now` is an argument.
use kcoord_metadata::Record;
use kcoord_wire::records::OffsetCommitKey;
use uuid::Uuid;

use crate::error::Result;
use crate::shard::CoordinatorShard;

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
