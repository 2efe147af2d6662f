//! The topic catalog: an immutable image of the topics, published as a whole and read without
//! locks held across a request, as Kafka's request handlers read the published MetadataImage.
//! Empty until a later issue gives the controller topics; handlers only ever read it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub partition_index: i32,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub replica_nodes: Vec<i32>,
    pub isr_nodes: Vec<i32>,
    pub offline_replicas: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub name: String,
    pub topic_id: Uuid,
    pub is_internal: bool,
    pub partitions: Vec<PartitionMetadata>,
}

/// One published state of all topics. Cheap to share: readers hold an `Arc` to it.
#[derive(Debug, Clone, Default)]
pub struct TopicsImage {
    by_name: BTreeMap<String, TopicMetadata>,
    name_by_id: HashMap<Uuid, String>,
}

impl TopicsImage {
    pub fn new(topics: impl IntoIterator<Item = TopicMetadata>) -> Self {
        let mut image = TopicsImage::default();
        for topic in topics {
            image.name_by_id.insert(topic.topic_id, topic.name.clone());
            image.by_name.insert(topic.name.clone(), topic);
        }
        image
    }

    pub fn get(&self, name: &str) -> Option<&TopicMetadata> {
        self.by_name.get(name)
    }

    pub fn get_by_id(&self, id: &Uuid) -> Option<&TopicMetadata> {
        self.name_by_id
            .get(id)
            .and_then(|name| self.by_name.get(name))
    }

    /// All topics, by name.
    pub fn iter(&self) -> impl Iterator<Item = &TopicMetadata> {
        self.by_name.values()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// Holds the current [`TopicsImage`]. The lock is held only to clone or swap the `Arc`.
#[derive(Debug, Default)]
pub struct TopicCatalog {
    current: RwLock<Arc<TopicsImage>>,
}

impl TopicCatalog {
    pub fn new(image: TopicsImage) -> Self {
        TopicCatalog {
            current: RwLock::new(Arc::new(image)),
        }
    }

    /// The image to answer one request from; later publications do not change it.
    pub fn snapshot(&self) -> Arc<TopicsImage> {
        // A poisoned lock still holds a whole image: the writer only swaps an Arc.
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn publish(&self, image: TopicsImage) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(image);
    }
}

/// Kafka's internal topics (`Topic.INTERNAL_TOPICS`).
pub fn is_internal_topic(name: &str) -> bool {
    matches!(
        name,
        "__consumer_offsets" | "__transaction_state" | "__share_group_state"
    )
}

/// Kafka's `Topic.isValid`: 1-249 characters of `[a-zA-Z0-9._-]`, and not `.` or `..`.
pub fn is_valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 249
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str) -> TopicMetadata {
        TopicMetadata {
            name: name.to_owned(),
            topic_id: Uuid::new_v4(),
            is_internal: false,
            partitions: vec![],
        }
    }

    #[test]
    fn snapshots_do_not_change_when_a_new_image_is_published() {
        let catalog = TopicCatalog::default();
        let before = catalog.snapshot();
        let t = topic("orders");
        catalog.publish(TopicsImage::new([t.clone()]));
        assert!(before.is_empty());
        let after = catalog.snapshot();
        assert_eq!(after.get("orders"), Some(&t));
        assert_eq!(after.get_by_id(&t.topic_id), Some(&t));
        assert_eq!(after.len(), 1);
    }

    #[test]
    fn topic_name_rules() {
        assert!(is_valid_topic_name("orders-v1.2_x"));
        assert!(is_valid_topic_name(&"a".repeat(249)));
        assert!(!is_valid_topic_name(&"a".repeat(250)));
        for bad in ["", ".", "..", "a b", "a/b", "é"] {
            assert!(!is_valid_topic_name(bad), "{bad}");
        }
        assert!(is_internal_topic("__consumer_offsets"));
        assert!(!is_internal_topic("__cluster_metadata"));
    }
}
