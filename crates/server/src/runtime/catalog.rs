//! The topic catalog as request handlers see it: the controller's latest
//! [`TopicsImage`], published as a whole and read without a lock held across a request, as
//! Kafka's request handlers read the published MetadataImage. Only the controller task
//! publishes (`controller_runtime/`); handlers only take snapshots.

use std::sync::{Arc, RwLock};

pub use kcoord_metadata::{
    invalid_topic_name, is_internal_topic, is_valid_topic_name, TopicImage, TopicsImage,
};

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
}
