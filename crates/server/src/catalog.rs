//! The topic catalog as request handlers see it: the controller's latest
//! [`TopicsImage`], published as a whole and read without a lock held across a request, as
//! Kafka's request handlers read the published MetadataImage. Only the controller task
//! publishes (`controller.rs`); handlers only take snapshots.

use std::sync::{Arc, RwLock};

pub use kcoord_metadata::{is_internal_topic, TopicImage, TopicsImage};

/// Kafka's `Topic.CLUSTER_METADATA_TOPIC_NAME`: may never be created by a client.
pub const CLUSTER_METADATA_TOPIC: &str = "__cluster_metadata";

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

    pub fn publish(&self, image: Arc<TopicsImage>) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = image;
    }
}

/// Kafka's `Topic.validate`: why `name` is not a legal topic name, in Kafka's words
/// (`"Topic name is invalid: ..."`), or `None` when it is legal.
pub fn invalid_topic_name(name: &str) -> Option<String> {
    // Java measures the length in UTF-16 units; an illegal character is reported only after
    // the length, as in `Topic.detectInvalidTopic`.
    let reason = if name.is_empty() {
        "the empty string is not allowed".to_owned()
    } else if name == "." {
        "'.' is not allowed".to_owned()
    } else if name == ".." {
        "'..' is not allowed".to_owned()
    } else if name.encode_utf16().count() > 249 {
        format!("the length of '{name}' is longer than the max allowed length 249")
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

pub fn is_valid_topic_name(name: &str) -> bool {
    invalid_topic_name(name).is_none()
}

/// Kafka's `Topic.unifyCollisionChars`: `.` and `_` collide in metric names.
pub fn unify_collision_chars(name: &str) -> String {
    name.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_metadata::{Record, Store};
    use kcoord_wire::records::TopicRecord;
    use uuid::Uuid;

    #[test]
    fn snapshots_do_not_change_when_a_new_image_is_published() {
        let catalog = TopicCatalog::default();
        let before = catalog.snapshot();
        let mut store = Store::new();
        let id = Uuid::from_u128(7);
        store
            .append(vec![Record::Topic(TopicRecord {
                name: "orders".into(),
                topic_id: id,
                ..Default::default()
            })])
            .unwrap();
        catalog.publish(Arc::new(store.state().topics.clone()));
        assert!(before.is_empty());
        let after = catalog.snapshot();
        assert_eq!(after.get("orders").map(|t| t.id), Some(id));
        assert_eq!(
            after.get_by_id(&id).map(|t| t.name.as_str()),
            Some("orders")
        );
    }

    #[test]
    fn topic_name_rules_with_kafka_messages() {
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
        assert!(is_internal_topic("__consumer_offsets"));
        assert!(!is_internal_topic("__cluster_metadata"));
        assert_eq!(unify_collision_chars("a.b_c"), "a_b_c");
    }
}
