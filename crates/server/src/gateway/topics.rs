//! The upstream cluster's topics as kcoord's coordinator sees them in gateway mode: a catalog
//! mirrored from the cluster's Metadata (the daemon's mirror task publishes it), and streams
//! internal topics created in the cluster rather than by kcoord's own controller.

use std::sync::Arc;

use kcoord_metadata::{PartitionImage, TopicImage, TopicsImage};
use kcoord_wire::messages::create_topics_request::CreateTopicsRequest;
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::MetadataResponse;
use kcoord_wire::ErrorCode;

use super::Gateway;
use crate::runtime::auto_topics::{CreatedTopics, TopicCreator};

/// The catalog of a Metadata answer for all topics. Topics the answer has no name or id
/// for, or an error for, are left out: the coordinator cannot use them.
pub fn image(metadata: MetadataResponse) -> TopicsImage {
    TopicsImage::from_topics(
        metadata
            .topics
            .into_iter()
            .filter(|t| t.error_code == 0 && !t.topic_id.is_nil())
            .filter_map(|t| {
                Some(TopicImage {
                    id: t.topic_id,
                    name: t.name?,
                    requested_replication_factor: -1,
                    partitions: t
                        .partitions
                        .into_iter()
                        .map(|p| {
                            let image = PartitionImage {
                                partition: p.partition_index,
                                leader: p.leader_id,
                                leader_epoch: p.leader_epoch,
                                replicas: p.replica_nodes,
                                isr: p.isr_nodes,
                            };
                            (p.partition_index, image)
                        })
                        .collect(),
                    configs: Default::default(),
                })
            }),
    )
}

/// Creates streams internal topics in the upstream cluster (any broker takes CreateTopics
/// and hands it to the cluster's controller), then wakes the mirror so the group sees them.
#[derive(Debug)]
pub struct UpstreamTopicCreator(pub Arc<Gateway>);

impl TopicCreator for UpstreamTopicCreator {
    fn create_topics(&self, request: CreateTopicsRequest) -> CreatedTopics {
        let gateway = Arc::clone(&self.0);
        Box::pin(async move {
            let conn = gateway
                .control_connection()
                .await
                .map_err(|e| e.to_string())?;
            let response = conn
                .send_negotiated(request)
                .await
                .map_err(|e| e.to_string())?;
            gateway.changed_upstream();
            Ok(response
                .topics
                .into_iter()
                .map(already_there_is_created)
                .collect())
        })
    }
}

/// A topic the cluster already has counts as created: until the mirror's next look, a group
/// may ask again for a topic its first request created.
fn already_there_is_created(mut result: CreatableTopicResult) -> CreatableTopicResult {
    if result.error_code == ErrorCode::TOPIC_ALREADY_EXISTS.code() {
        result.error_code = ErrorCode::NONE.code();
        result.error_message = None;
    }
    result
}

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::metadata_response::{
        MetadataResponsePartition, MetadataResponseTopic,
    };
    use uuid::Uuid;

    use super::*;

    fn topic(name: &str, id: u128, partitions: i32, error_code: i16) -> MetadataResponseTopic {
        MetadataResponseTopic {
            error_code,
            name: Some(name.to_owned()),
            topic_id: Uuid::from_u128(id),
            partitions: (0..partitions)
                .map(|p| MetadataResponsePartition {
                    partition_index: p,
                    leader_id: p % 3,
                    leader_epoch: 4,
                    replica_nodes: vec![0, 1, 2],
                    isr_nodes: vec![0, 1],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_topic_the_cluster_already_has_counts_as_created_and_other_errors_stay() {
        let result = |code: ErrorCode| CreatableTopicResult {
            name: "t".to_owned(),
            error_code: code.code(),
            error_message: Some("m".to_owned()),
            ..Default::default()
        };
        let there = already_there_is_created(result(ErrorCode::TOPIC_ALREADY_EXISTS));
        assert_eq!((there.error_code, there.error_message), (0, None));
        let refused = already_there_is_created(result(ErrorCode::POLICY_VIOLATION));
        assert_eq!(refused.error_code, ErrorCode::POLICY_VIOLATION.code());
    }

    #[test]
    fn the_mirror_holds_every_usable_topic_with_its_partitions() {
        let metadata = MetadataResponse {
            topics: vec![
                topic("orders", 1, 3, 0),
                topic("no-id", 0, 1, 0),
                topic("leaderless", 2, 1, 5),
                topic("payments", 3, 2, 0),
            ],
            ..Default::default()
        };
        let image = image(metadata);
        let names: Vec<&str> = image.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["orders", "payments"]);
        let orders = image.get("orders").unwrap();
        assert_eq!(orders.id, Uuid::from_u128(1));
        assert_eq!(orders.partition_count(), 3);
        assert_eq!(orders.replication_factor(), 3);
        let p2 = &orders.partitions[&2];
        assert_eq!((p2.leader, p2.leader_epoch, p2.isr.len()), (2, 4, 2));
    }
}
