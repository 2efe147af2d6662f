//! The topic catalog: topics, their partitions and configs (metadata records 2, 3, 4, 9).
use std::collections::{BTreeMap, BTreeSet, HashMap};

use kcoord_wire::records::{ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord};
use uuid::Uuid;

/// DescribeConfigs resource type of a topic, as ConfigRecord uses it.
pub const TOPIC_RESOURCE: i8 = 2;

/// Kafka's internal topics (`Topic.INTERNAL_TOPICS`): reported with IsInternal = true.
pub const INTERNAL_TOPICS: &[&str] = &[
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

#[derive(Debug, Clone, PartialEq)]
pub struct PartitionImage {
    pub partition: i32,
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopicImage {
    pub id: Uuid,
    pub name: String,
    /// The replication factor requested at creation (-1 if unknown).
    pub requested_replication_factor: i16,
    pub partitions: BTreeMap<i32, PartitionImage>,
    pub configs: BTreeMap<String, String>,
}

impl TopicImage {
    pub fn is_internal(&self) -> bool {
        INTERNAL_TOPICS.contains(&self.name.as_str())
    }

    pub fn partition_count(&self) -> i32 {
        self.partitions.len() as i32
    }

    /// The replication factor the topic was created with, else the size of partition 0's
    /// replica set.
    pub fn replication_factor(&self) -> i16 {
        if self.requested_replication_factor > 0 {
            return self.requested_replication_factor;
        }
        self.partitions
            .values()
            .next()
            .map_or(0, |p| p.replicas.len() as i16)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicsImage {
    by_name: BTreeMap<String, TopicImage>,
    names_by_id: HashMap<Uuid, String>,
    /// The names holding '.' or '_', by [`unify_collision_chars`] of the name (Kafka's
    /// `ReplicationControlManager.topicsWithCollisionChars`): the collision check of a new
    /// name is one look-up, not a scan of the catalog. A set, since colliding names created
    /// together (or before the check existed) are kept.
    collisions: HashMap<String, BTreeSet<String>>,
    /// Partitions of every topic together.
    partitions: usize,
}

impl TopicsImage {
    pub fn get(&self, name: &str) -> Option<&TopicImage> {
        self.by_name.get(name)
    }

    pub fn get_by_id(&self, id: &Uuid) -> Option<&TopicImage> {
        self.names_by_id.get(id).and_then(|n| self.by_name.get(n))
    }

    pub fn iter(&self) -> impl Iterator<Item = &TopicImage> {
        self.by_name.values()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The partitions of all topics.
    pub fn partition_count(&self) -> usize {
        self.partitions
    }

    /// An existing topic whose name differs from `name` only by '.' and '_' (or is `name`):
    /// the first in name order, as Kafka names one of them.
    pub fn colliding_topic(&self, name: &str) -> Option<&str> {
        if !has_collision_chars(name) {
            return None;
        }
        self.collisions
            .get(&unify_collision_chars(name))
            .and_then(|names| names.first())
            .map(String::as_str)
    }

    /// A catalog of `topics` as another cluster describes them (kcoord's gateway mode mirrors
    /// its upstream cluster's); a topic whose name or id is already in it is left out, as a
    /// replayed log would refuse it.
    pub fn from_topics(topics: impl IntoIterator<Item = TopicImage>) -> TopicsImage {
        let mut image = TopicsImage::default();
        for topic in topics {
            if image.by_name.contains_key(&topic.name) || image.names_by_id.contains_key(&topic.id)
            {
                continue;
            }
            image.names_by_id.insert(topic.id, topic.name.clone());
            if has_collision_chars(&topic.name) {
                image
                    .collisions
                    .entry(unify_collision_chars(&topic.name))
                    .or_default()
                    .insert(topic.name.clone());
            }
            image.partitions += topic.partitions.len();
            image.by_name.insert(topic.name.clone(), topic);
        }
        image
    }

    /// A new topic. A name or an id the catalog already has is refused: the controller never
    /// writes one (a topic is removed before its name is used again), so such a record would
    /// mean a damaged or spliced log, and applying it would drop the existing topic's
    /// partitions or leave its id pointing at another topic.
    pub(crate) fn replay_topic(&mut self, r: &TopicRecord) -> Result<(), String> {
        if let Some(name) = self.names_by_id.get(&r.topic_id) {
            return Err(format!(
                "topic id {} already belongs to topic {name}",
                r.topic_id
            ));
        }
        if let Some(existing) = self.by_name.get(&r.name) {
            return Err(format!(
                "topic {} already exists with id {}",
                r.name, existing.id
            ));
        }
        self.names_by_id.insert(r.topic_id, r.name.clone());
        if has_collision_chars(&r.name) {
            self.collisions
                .entry(unify_collision_chars(&r.name))
                .or_default()
                .insert(r.name.clone());
        }
        self.by_name.insert(
            r.name.clone(),
            TopicImage {
                id: r.topic_id,
                name: r.name.clone(),
                requested_replication_factor: r.replication_factor,
                partitions: BTreeMap::new(),
                configs: BTreeMap::new(),
            },
        );
        Ok(())
    }

    pub(crate) fn replay_partition(&mut self, r: &PartitionRecord) -> Result<(), String> {
        let name = self
            .names_by_id
            .get(&r.topic_id)
            .ok_or_else(|| format!("partition of unknown topic id {}", r.topic_id))?;
        let topic = self
            .by_name
            .get_mut(name)
            .ok_or_else(|| format!("topic {name} missing from the catalog"))?;
        let replaced = topic.partitions.insert(
            r.partition_id,
            PartitionImage {
                partition: r.partition_id,
                leader: r.leader,
                leader_epoch: r.leader_epoch,
                replicas: r.replicas.clone(),
                isr: r.isr.clone(),
            },
        );
        if replaced.is_none() {
            self.partitions += 1;
        }
        Ok(())
    }

    pub(crate) fn replay_remove(&mut self, r: &RemoveTopicRecord) -> Result<(), String> {
        let name = self
            .names_by_id
            .remove(&r.topic_id)
            .ok_or_else(|| format!("removal of unknown topic id {}", r.topic_id))?;
        if let Some(topic) = self.by_name.remove(&name) {
            self.partitions = self.partitions.saturating_sub(topic.partitions.len());
        }
        if has_collision_chars(&name) {
            let unified = unify_collision_chars(&name);
            if let Some(names) = self.collisions.get_mut(&unified) {
                names.remove(&name);
                if names.is_empty() {
                    self.collisions.remove(&unified);
                }
            }
        }
        Ok(())
    }

    pub(crate) fn replay_config(&mut self, r: &ConfigRecord) {
        if r.resource_type != TOPIC_RESOURCE {
            return;
        }
        if let Some(topic) = self.by_name.get_mut(&r.resource_name) {
            match &r.value {
                Some(v) => topic.configs.insert(r.name.clone(), v.clone()),
                None => topic.configs.remove(&r.name),
            };
        }
    }
}

/// Kafka's `Topic.CLUSTER_METADATA_TOPIC_NAME`: may never be created by a client.
pub const CLUSTER_METADATA_TOPIC: &str = "__cluster_metadata";

/// Kafka's `Topic.MAX_NAME_LENGTH`.
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Kafka 4.4's `Topic.validate`: why `name` is not a legal topic name, in Kafka's words
/// (`"Topic name is invalid: ..."`), or `None` when it is legal: 1-249 characters of
/// `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn invalid_topic_name(name: &str) -> Option<String> {
    // Java measures the length in UTF-16 units; an illegal character is reported only after
    // the length, as in `Topic.detectInvalidTopic`.
    let reason = if name.is_empty() {
        "the empty string is not allowed".to_owned()
    } else if name == "." {
        "'.' is not allowed".to_owned()
    } else if name == ".." {
        "'..' is not allowed".to_owned()
    } else if name.encode_utf16().count() > MAX_TOPIC_NAME_LENGTH {
        format!(
            "the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
        )
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        format!("'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
    } else {
        return None;
    };
    Some(format!("Topic name is invalid: {reason}"))
}

/// [`invalid_topic_name`] as a `Result`: `Err` holds Kafka's message.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    invalid_topic_name(name).map_or(Ok(()), Err)
}

/// Kafka's `Topic.isValid`.
pub fn is_valid_topic_name(name: &str) -> bool {
    invalid_topic_name(name).is_none()
}

/// Kafka's `Topic.hasCollisionChars`.
pub fn has_collision_chars(name: &str) -> bool {
    name.contains(['.', '_'])
}

/// Kafka's `Topic.unifyCollisionChars`: `.` and `_` collide in metric names.
pub fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

/// Whether `name` is one of Kafka's internal topics.
pub fn is_internal_topic(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_from_another_clusters_topics_is_looked_up_like_a_replayed_one() {
        let topic = |name: &str, id: u128, partitions: i32| TopicImage {
            id: Uuid::from_u128(id),
            name: name.to_owned(),
            requested_replication_factor: -1,
            partitions: (0..partitions)
                .map(|p| {
                    let image = PartitionImage {
                        partition: p,
                        leader: 1,
                        leader_epoch: 0,
                        replicas: vec![1, 2, 3],
                        isr: vec![1, 2, 3],
                    };
                    (p, image)
                })
                .collect(),
            configs: BTreeMap::new(),
        };
        let image = TopicsImage::from_topics([
            topic("orders.v1", 1, 3),
            topic("payments", 2, 2),
            topic("orders.v1", 3, 1),
            topic("again", 2, 1),
        ]);
        assert_eq!(image.len(), 2, "a repeated name or id is left out");
        assert_eq!(image.partition_count(), 5);
        assert_eq!(image.get("orders.v1").unwrap().partition_count(), 3);
        assert_eq!(
            image.get_by_id(&Uuid::from_u128(2)).unwrap().name,
            "payments"
        );
        assert_eq!(image.get("payments").unwrap().replication_factor(), 3);
        assert_eq!(image.colliding_topic("orders_v1"), Some("orders.v1"));
    }

    #[test]
    fn topic_names_follow_kafka_rules() {
        assert!(validate_topic_name("orders.v1_x-y").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name(".").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name(&"a".repeat(249)).is_ok());
        assert!(validate_topic_name(&"a".repeat(250)).is_err());
        assert!(validate_topic_name("a b").is_err());
        assert!(validate_topic_name("é").is_err());
        assert!(is_internal_topic("__consumer_offsets"));
        assert!(!is_internal_topic("orders"));
    }

    #[test]
    fn invalid_topic_names_answer_kafkas_messages() {
        assert!(is_valid_topic_name("orders-v1.2_x"));
        assert!(is_valid_topic_name(&"a".repeat(249)));
        assert_eq!(
            invalid_topic_name("").as_deref(),
            Some("Topic name is invalid: the empty string is not allowed")
        );
        assert_eq!(
            invalid_topic_name(".").as_deref(),
            Some("Topic name is invalid: '.' is not allowed")
        );
        assert_eq!(
            invalid_topic_name("..").as_deref(),
            Some("Topic name is invalid: '..' is not allowed")
        );
        let long = "a".repeat(250);
        assert_eq!(
            invalid_topic_name(&long),
            Some(format!(
                "Topic name is invalid: the length of '{long}' is longer than the max allowed length 249"
            ))
        );
        assert_eq!(
            invalid_topic_name("a b").as_deref(),
            Some("Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
        );
        // Two UTF-8 bytes but one UTF-16 unit each: a character error, not a length error.
        let accents = "é".repeat(200);
        assert!(invalid_topic_name(&accents)
            .is_some_and(|m| m.contains("contains one or more characters")));
        assert!(!is_internal_topic("__cluster_metadata"));
        assert_eq!(unify_collision_chars("a.b_c"), "a_b_c");
    }

    fn topic_record(name: &str, id: u128) -> TopicRecord {
        TopicRecord {
            name: name.into(),
            topic_id: Uuid::from_u128(id),
            ..Default::default()
        }
    }

    fn partition_record(id: u128, partition: i32) -> PartitionRecord {
        PartitionRecord {
            topic_id: Uuid::from_u128(id),
            partition_id: partition,
            ..Default::default()
        }
    }

    #[test]
    fn the_collision_index_and_partition_count_follow_creations_and_removals() {
        let mut image = TopicsImage::default();
        image.replay_topic(&topic_record("a.b", 1)).unwrap();
        image.replay_topic(&topic_record("a_b", 2)).unwrap();
        image.replay_topic(&topic_record("plain", 3)).unwrap();
        for (id, p) in [(1, 0), (1, 1), (2, 0), (3, 0), (3, 0)] {
            image.replay_partition(&partition_record(id, p)).unwrap();
        }
        // Partition 0 of "plain" twice: a change, not a new partition.
        assert_eq!(image.partition_count(), 4);
        assert_eq!(image.colliding_topic("a.b"), Some("a.b"));
        assert_eq!(image.colliding_topic("a_b"), Some("a.b"));
        assert_eq!(image.colliding_topic("ab"), None);
        assert_eq!(image.colliding_topic("plain"), None);

        image
            .replay_remove(&RemoveTopicRecord {
                topic_id: Uuid::from_u128(1),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(image.colliding_topic("a.b"), Some("a_b"));
        assert_eq!(image.partition_count(), 2);
        image
            .replay_remove(&RemoveTopicRecord {
                topic_id: Uuid::from_u128(2),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(image.colliding_topic("a.b"), None);
        assert!(image.collisions.is_empty(), "no empty entry is left behind");
        assert_eq!(image.partition_count(), 1);
    }

    #[test]
    fn collisions_are_found_by_lookup_in_a_large_catalog() {
        let mut image = TopicsImage::default();
        let topics = 200_000u128;
        for i in 0..topics {
            image
                .replay_topic(&topic_record(&format!("t.{i}_x"), i + 1))
                .unwrap();
        }
        // 200,000 checks against 200,000 names: a scan per check would take ~4e10 steps.
        for i in 0..topics {
            let probe = format!("t_{i}.x");
            let expected = format!("t.{i}_x");
            assert_eq!(image.colliding_topic(&probe), Some(expected.as_str()));
        }
        assert_eq!(image.colliding_topic("t_x"), None);
    }
}
