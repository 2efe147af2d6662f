//! Offsets committed inside open transactions (kcoord's own coordinator record type 1000,
//! [`kcoord_wire::records::TxnOffsetCommitKey`]): per group and producer, what Kafka's
//! `OffsetMetadataManager` keeps as `pendingTransactionalOffsets`. They become committed
//! offsets when the transaction's COMMIT marker reaches the group's shard, and go when it
//! aborts; until then OffsetFetch with `RequireStable` answers UNSTABLE_OFFSET_COMMIT.
use std::collections::BTreeMap;

use kcoord_wire::records::{OffsetCommitValue, TxnOffsetCommitKey};

use crate::image::offsets::CommittedOffset;

/// group -> producer id -> (topic, partition) -> offset
type Pending = BTreeMap<String, BTreeMap<i64, BTreeMap<(String, i32), CommittedOffset>>>;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TxnOffsetsImage {
    groups: Pending,
}

impl TxnOffsetsImage {
    /// The offsets `producer_id`'s open transaction committed for `group`.
    pub fn pending(
        &self,
        group: &str,
        producer_id: i64,
    ) -> Option<&BTreeMap<(String, i32), CommittedOffset>> {
        self.groups.get(group)?.get(&producer_id)
    }

    /// Every group with offsets of `producer_id`'s open transaction.
    pub fn groups_of(&self, producer_id: i64) -> impl Iterator<Item = &str> {
        self.groups
            .iter()
            .filter(move |(_, producers)| producers.contains_key(&producer_id))
            .map(|(g, _)| g.as_str())
    }

    /// Whether an open transaction holds an offset of this partition for `group` (Kafka's
    /// `hasPendingTransactionalOffsets`).
    pub fn is_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.groups.get(group).is_some_and(|producers| {
            producers
                .values()
                .any(|offsets| offsets.contains_key(&(topic.to_owned(), partition)))
        })
    }

    /// Whether `group` has any offset in an open transaction.
    pub fn has_group(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    pub(crate) fn replay(
        &mut self,
        key: &TxnOffsetCommitKey,
        value: Option<&OffsetCommitValue>,
        offset: u64,
    ) {
        let tp = (key.topic.clone(), key.partition);
        match value {
            Some(v) => {
                self.groups
                    .entry(key.group.clone())
                    .or_default()
                    .entry(key.producer_id)
                    .or_default()
                    .insert(tp, CommittedOffset::from_value(v, offset));
            }
            None => {
                let Some(producers) = self.groups.get_mut(&key.group) else {
                    return;
                };
                if let Some(offsets) = producers.get_mut(&key.producer_id) {
                    offsets.remove(&tp);
                    if offsets.is_empty() {
                        producers.remove(&key.producer_id);
                    }
                }
                if producers.is_empty() {
                    self.groups.remove(&key.group);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(producer_id: i64, partition: i32) -> TxnOffsetCommitKey {
        TxnOffsetCommitKey {
            producer_id,
            group: "g".into(),
            topic: "t".into(),
            partition,
            ..Default::default()
        }
    }

    #[test]
    fn pending_offsets_come_and_go_per_producer() {
        let mut image = TxnOffsetsImage::default();
        let value = OffsetCommitValue {
            offset: 5,
            ..Default::default()
        };
        image.replay(&key(1, 0), Some(&value), 10);
        image.replay(&key(2, 1), Some(&value), 11);
        assert!(image.is_pending("g", "t", 0) && image.is_pending("g", "t", 1));
        assert_eq!(image.groups_of(1).collect::<Vec<_>>(), ["g"]);
        assert_eq!(
            image
                .pending("g", 1)
                .and_then(|o| o.get(&("t".into(), 0)))
                .map(|c| (c.offset, c.record_offset)),
            Some((5, 10))
        );
        image.replay(&key(1, 0), None, 12);
        assert!(!image.is_pending("g", "t", 0) && image.has_group("g"));
        image.replay(&key(2, 1), None, 13);
        assert!(!image.has_group("g"));
    }
}
