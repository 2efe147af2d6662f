//! Committed offsets that go without a request: those of deleted topics (Kafka's
//! `OffsetMetadataManager.onTopicsDeleted`) and those that expire
//! (`GroupCoordinatorShard.cleanupGroupMetadata`). Both return tombstones through the shard's
//! log like every other change; `now` is an argument.
use std::sync::Arc;

use kcoord_metadata::{Record, TopicsImage};
use kcoord_wire::records::OffsetCommitKey;
use uuid::Uuid;

use crate::classic::ClassicGroupState;
use crate::effects::{Effect, GroupEffect};
use crate::groups::subscribed_to;
use crate::record_builders;
use crate::shard::CoordinatorShard;
use crate::tick::TickEvent;
use crate::Outcome;

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
    /// The controller published a new topic catalog: the shard configures its groups against
    /// it from now on, and the committed offsets of the topics it no longer has (by id) are
    /// removed (Kafka's `GroupCoordinatorService.onMetadataUpdate` → `onTopicsDeleted`).
    /// Answers the deleted topics and how many offsets went.
    pub fn topics_changed(&self, topics: Arc<TopicsImage>) -> Outcome<(Vec<DeletedTopic>, usize)> {
        let deleted: Vec<DeletedTopic> = self
            .topics
            .iter()
            .filter(|t| topics.get_by_id(&t.id).is_none())
            .map(|t| DeletedTopic {
                name: t.name.clone(),
                id: t.id,
            })
            .collect();
        let records = self.offsets_of_deleted_topics(&deleted);
        let removed = records.len();
        Outcome {
            records: crate::at_latest_version(records),
            response: (deleted, removed),
            effects: vec![Effect::Topics(topics)],
        }
    }

    /// `onTopicsDeleted`: tombstones of every group's committed offsets of the deleted topics,
    /// where the offset names the deleted topic's id or no id (a commit by name only). A topic
    /// created again under the same name keeps the offsets committed with its new id.
    fn offsets_of_deleted_topics(&self, deleted: &[DeletedTopic]) -> Vec<Record> {
        let mut records = Vec::new();
        if deleted.is_empty() {
            return records;
        }
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
        records
    }

    /// `GroupCoordinatorShard.cleanupGroupMetadata`, run every
    /// `offsets.retention.check.interval.ms` from `tick`: for every group (streams groups and
    /// offsets-only groups), `cleanupExpiredOffsets` tombstones each committed offset of a topic
    /// the group does not consume (`isSubscribedToTopic`: nothing while the group is empty)
    /// whose commit is at least `offsets.retention.minutes` old (the streams group's and the
    /// simple group's `offsetExpirationCondition` both count from the commit timestamp); when
    /// no offset is left, `maybeDeleteGroup` deletes the group if it is empty. An empty
    /// streams group that never committed is therefore deleted by the next pass.
    pub fn expire_offsets(&self, now: i64) -> Outcome<Vec<TickEvent>> {
        let interval = self.base.config.offsets_retention_check_interval_ms.max(1);
        let mut expiry = Expiry::default();
        for group_id in self.all_group_ids() {
            self.expire_group(group_id, now, &mut expiry);
        }
        let mut effects = vec![Effect::OffsetExpiryAt(now.saturating_add(interval))];
        for group_id in expiry.deleted {
            effects.push(Effect::Group(GroupEffect::Gone {
                group_id: group_id.as_str().into(),
            }));
            effects.push(Effect::Classic(crate::classic::ClassicEffect::Group {
                group_id: group_id.as_str().into(),
                group: None,
            }));
        }
        Outcome {
            records: crate::at_latest_version(expiry.records),
            response: expiry.events,
            effects,
        }
    }

    /// Streams groups and offsets-only groups, sorted, each once.
    fn all_group_ids(&self) -> Vec<&str> {
        let state = self.store.state();
        let mut group_ids: Vec<&str> = state
            .streams_groups
            .iter()
            .map(|g| g.group_id.as_str())
            .chain(self.classic_groups().map(|g| g.group_id.as_str()))
            .chain(state.consumer_groups.iter().map(|g| g.group_id.as_str()))
            .chain(state.offsets.group_ids())
            .collect();
        group_ids.sort_unstable();
        group_ids.dedup();
        group_ids
    }

    fn expire_group(&self, group_id: &str, now: i64, expiry: &mut Expiry) {
        let state = self.store.state();
        let retention = self.base.config.offsets_retention_ms;
        let group = state.streams_groups.get(group_id);
        let classic = self.classic_group(group_id);
        // Kafka's `ClassicGroup.offsetExpirationCondition`: a live group's offsets expire only
        // when it is a Stable consumer group whose subscriptions are known (and then only those
        // of topics it no longer subscribes to).
        let live = classic.filter(|g| g.protocol_type.is_some() && !g.is(ClassicGroupState::Empty));
        if live.is_some_and(|g| !g.is(ClassicGroupState::Stable) || g.subscribed_topics.is_none()) {
            return;
        }
        // An empty classic group's offsets age from when it became empty.
        let emptied = classic.and_then(|g| g.protocol_type.as_ref().and(g.state_timestamp));
        let consumer = state.consumer_groups.get(group_id);
        let mut all_expired = true;
        let mut expired = 0;
        if let Some(offsets) = state.offsets.group(group_id) {
            for ((topic, partition), committed) in offsets {
                let subscribed = group.is_some_and(|g| subscribed_to(g, topic))
                    || live.is_some_and(|g| g.is_subscribed_to(topic))
                    || consumer.is_some_and(|g| crate::consumer::admin::subscribed_to(g, topic));
                let since = emptied.unwrap_or(committed.commit_timestamp);
                if !subscribed && now.saturating_sub(since) >= retention {
                    expiry.records.push(tombstone(group_id, topic, *partition));
                    expired += 1;
                } else {
                    all_expired = false;
                }
            }
        }
        if expired > 0 {
            expiry.events.push(TickEvent::OffsetsExpired {
                group_id: group_id.to_owned(),
                count: expired,
            });
        }
        // An offsets-only group is gone with its last offset; a streams group needs its
        // tombstones, and only when it is empty.
        if let Some(tombstone) = classic
            .filter(|_| all_expired)
            .and_then(|_| self.expire_classic_group(group_id))
        {
            expiry.records.push(tombstone);
            expiry.deleted.push(group_id.to_owned());
            expiry.events.push(TickEvent::GroupExpired {
                group_id: group_id.to_owned(),
            });
        }
        if let Some(g) = group.filter(|g| all_expired && g.members.is_empty()) {
            expiry.records.extend(record_builders::delete_group(g));
            expiry.deleted.push(group_id.to_owned());
            expiry.events.push(TickEvent::GroupExpired {
                group_id: group_id.to_owned(),
            });
        }
        if let Some(g) = consumer.filter(|g| all_expired && g.members.is_empty()) {
            expiry
                .records
                .extend(crate::consumer::records::delete_group(g));
            expiry.deleted.push(group_id.to_owned());
            expiry.events.push(TickEvent::GroupExpired {
                group_id: group_id.to_owned(),
            });
        }
    }
}

/// What an expiry pass found.
#[derive(Default)]
struct Expiry {
    records: Vec<Record>,
    events: Vec<TickEvent>,
    deleted: Vec<String>,
}

impl CoordinatorShard {
    /// Arms the periodic search for expired offsets, first due one
    /// `offsets.retention.check.interval.ms` after `now` (Kafka schedules it when a shard is
    /// loaded: `scheduleGroupMetadataExpiration`).
    pub fn start_offset_expiry(&self, now: i64) -> Outcome<()> {
        let interval = self.base.config.offsets_retention_check_interval_ms.max(1);
        Outcome::answer(()).with_effect(Effect::OffsetExpiryAt(now.saturating_add(interval)))
    }
}
