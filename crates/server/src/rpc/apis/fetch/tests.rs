//! Who may fetch: a consumer needs READ on the topic, a follower (a replica id) CLUSTER_ACTION
//! on the cluster, as Kafka's `handleFetchRequest` asks.

use std::sync::Arc;

use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{create_topic, running_with_authorizer, Ctx};
use crate::security::Authorizer;

/// Allows exactly one operation on one resource type.
#[derive(Debug)]
struct Only(AclOperation, ResourceType);

impl Authorizer for Only {
    fn authorize(
        &self,
        _: &crate::security::Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        _: &str,
    ) -> bool {
        (operation, resource) == (self.0, self.1)
    }
}

fn request(topic: &str, replica_id: i32) -> FetchRequest {
    FetchRequest {
        replica_id,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn code(allowed: Only, topic: &str, replica_id: i32) -> i16 {
    let node = running_with_authorizer("", Arc::new(allowed));
    create_topic(&node.state, "t", 1).await;
    let c = Ctx::new(&node.state, ListenerKind::Broker);
    let resp = handle(&c.ctx(&node.state), request(topic, replica_id), 12).await;
    resp.responses[0].partitions[0].error_code
}

#[tokio::test]
async fn a_follower_needs_cluster_action_and_not_read() {
    let cluster_action = || Only(AclOperation::ClusterAction, ResourceType::Cluster);
    let read = || Only(AclOperation::Read, ResourceType::Topic);
    // Allowed: this node has no followers.
    assert_eq!(
        code(cluster_action(), "t", 2).await,
        ErrorCode::NOT_LEADER_OR_FOLLOWER.code()
    );
    assert_eq!(
        code(cluster_action(), "nope", 2).await,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
    );
    // READ on the topic does not make a follower.
    assert_eq!(
        code(read(), "t", 2).await,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()
    );
    assert_eq!(
        code(read(), "nope", 2).await,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()
    );
    // A consumer is the other way round.
    assert_eq!(code(read(), "t", -1).await, ErrorCode::NONE.code());
    assert_eq!(
        code(cluster_action(), "t", -1).await,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()
    );
}

#[test]
fn the_records_of_whole_batches_are_counted_and_a_cut_batch_is_not() {
    use kcoord_record_batches::{BatchBuilder, BatchOptions};
    let batch = |n: usize| {
        let mut b = BatchBuilder::new(BatchOptions::default());
        for _ in 0..n {
            b.push(1, None, Some(b"v"), &[]).unwrap();
        }
        b.build().unwrap()
    };
    let mut two = batch(2).to_vec();
    two.extend_from_slice(&batch(3));
    assert_eq!(super::records_in(&two), 5);
    let cut = &two[..two.len() - 1];
    assert_eq!(super::records_in(cut), 2);
    assert_eq!(super::records_in(&[]), 0);
}
