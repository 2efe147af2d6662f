//! Committed offsets (coordinator record type 1), per group, topic and partition.
use std::collections::BTreeMap;

use kcoord_wire::records::{OffsetCommitKey, OffsetCommitValue};

#[derive(Debug, Clone, PartialEq)]
pub struct CommittedOffset {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// The topic's id when the commit named it (OffsetCommitValue v4+); nil otherwise.
    pub topic_id: uuid::Uuid,
    /// The log offset of the record that wrote it: a transaction's offset replaces a
    /// committed one only if it was written later (Kafka's `OffsetAndMetadata.recordOffset`).
    pub record_offset: u64,
}

impl CommittedOffset {
    /// The offset in `v`, written by the record at `record_offset` (or, for a transaction's
    /// offset settled by its marker, first written where `v` says).
    pub fn from_value(v: &OffsetCommitValue, record_offset: u64) -> CommittedOffset {
        let record_offset = u64::try_from(v.origin_record_offset).unwrap_or(record_offset);
        CommittedOffset {
            offset: v.offset,
            leader_epoch: v.leader_epoch,
            metadata: v.metadata.clone(),
            commit_timestamp: v.commit_timestamp,
            topic_id: v.topic_id,
            record_offset,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct OffsetsImage {
    /// group -> (topic, partition) -> offset
    groups: BTreeMap<String, BTreeMap<(String, i32), CommittedOffset>>,
}

impl OffsetsImage {
    pub fn group(&self, group: &str) -> Option<&BTreeMap<(String, i32), CommittedOffset>> {
        self.groups.get(group)
    }

    pub fn group_ids(&self) -> impl Iterator<Item = &str> {
        self.groups.keys().map(String::as_str)
    }

    /// Every group with its committed offsets.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &BTreeMap<(String, i32), CommittedOffset>)> {
        self.groups.iter().map(|(g, o)| (g.as_str(), o))
    }

    pub fn get(&self, group: &str, topic: &str, partition: i32) -> Option<&CommittedOffset> {
        self.groups.get(group)?.get(&(topic.to_string(), partition))
    }

    pub(crate) fn replay(
        &mut self,
        key: &OffsetCommitKey,
        value: Option<&OffsetCommitValue>,
        record_offset: u64,
    ) {
        let tp = (key.topic.clone(), key.partition);
        match value {
            Some(v) => {
                let committed = CommittedOffset::from_value(v, record_offset);
                self.groups
                    .entry(key.group.clone())
                    .or_default()
                    .insert(tp, committed);
            }
            None => {
                if let Some(g) = self.groups.get_mut(&key.group) {
                    g.remove(&tp);
                    if g.is_empty() {
                        self.groups.remove(&key.group);
                    }
                }
            }
        }
    }
}
