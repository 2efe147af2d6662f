//! DescribeProducers (key 61), v0, after Kafka's `KafkaApis.handleDescribeProducersRequest` and
//! `ReplicaManager.activeProducerState`: per topic, an invalid name is INVALID_TOPIC_EXCEPTION
//! with `Topic.validate`'s message, then READ on the topic (TOPIC_AUTHORIZATION_FAILED), then a
//! topic the catalog does not hold is UNKNOWN_TOPIC_OR_PARTITION, each with the error's default
//! message on every partition asked. Per partition: one the catalog does not hold is
//! UNKNOWN_TOPIC_OR_PARTITION, one without a log here NOT_LEADER_OR_FOLLOWER; otherwise every
//! producer with state in the partition (`Partition::active_producers`).

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_producers_request::TopicRequest;
use kcoord_wire::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kcoord_wire::messages::{DescribeProducersRequest, DescribeProducersResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DescribeProducers as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeProducers, 0, 0)
    .asks(&[Check::new(AclOperation::Read, ResourceType::Topic)]);

serve!(sync handle);

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeProducersRequest,
    _version: i16,
) -> DescribeProducersResponse {
    DescribeProducersResponse {
        throttle_time_ms: 0,
        topics: req.topics.iter().map(|t| topic(ctx, t)).collect(),
        ..Default::default()
    }
}

fn topic(ctx: &RequestContext<'_>, t: &TopicRequest) -> TopicResponse {
    let refusal = if let Err(message) = kcoord_metadata::validate_topic_name(&t.name) {
        Some((ErrorCode::INVALID_TOPIC_EXCEPTION, message))
    } else if !authorize(ctx, AclOperation::Read, ResourceType::Topic, &t.name) {
        let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
        Some((code, code.message().to_owned()))
    } else if ctx.server.topics.snapshot().get(&t.name).is_none() {
        let code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
        Some((code, code.message().to_owned()))
    } else {
        None
    };
    let partitions = t
        .partition_indexes
        .iter()
        .map(|index| match &refusal {
            Some((code, message)) => PartitionResponse {
                partition_index: *index,
                error_code: code.code(),
                error_message: Some(message.clone()),
                ..Default::default()
            },
            None => partition(ctx, &t.name, *index),
        })
        .collect();
    TopicResponse {
        name: t.name.clone(),
        partitions,
        ..Default::default()
    }
}

/// One partition's producers (Kafka's `Partition.activeProducerState`).
fn partition(ctx: &RequestContext<'_>, topic: &str, index: i32) -> PartitionResponse {
    let refused = |code: ErrorCode| PartitionResponse {
        partition_index: index,
        error_code: code.code(),
        ..Default::default()
    };
    let Some(p) = ctx.server.partitions.by_name(topic, index) else {
        let in_catalog = ctx
            .server
            .topics
            .snapshot()
            .get(topic)
            .is_some_and(|t| t.partitions.contains_key(&index));
        // Kafka: a partition the metadata knows but this broker does not host has moved.
        return refused(if in_catalog {
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        });
    };
    let active_producers = p
        .active_producers()
        .into_iter()
        .map(|s| ProducerState {
            producer_id: s.producer_id,
            producer_epoch: i32::from(s.producer_epoch),
            last_sequence: s.last_sequence,
            last_timestamp: s.last_timestamp,
            coordinator_epoch: s.coordinator_epoch,
            current_txn_start_offset: s.current_txn_start_offset,
            ..Default::default()
        })
        .collect();
    PartitionResponse {
        partition_index: index,
        error_code: ErrorCode::NONE.code(),
        active_producers,
        ..Default::default()
    }
}

/// The authorization matrix's rows of DescribeProducers.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    let request = DescribeProducersRequest {
        topics: vec![TopicRequest {
            name: TOPIC.into(),
            partition_indexes: vec![0],
            ..Default::default()
        }],
        ..Default::default()
    };
    vec![row!(DescribeProducers 0 on Broker, request,
            needs [(Read, Topic, TOPIC)],
            DescribeProducersResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kcoord_record_batches::{BatchBuilder, BatchOptions};
    use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kcoord_wire::messages::ProduceRequest;

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{create_topic, encodes, running, with_ctx};
    use crate::state::ServerState;

    fn request(topics: &[(&str, &[i32])]) -> DescribeProducersRequest {
        DescribeProducersRequest {
            topics: topics
                .iter()
                .map(|(name, partitions)| TopicRequest {
                    name: (*name).into(),
                    partition_indexes: partitions.to_vec(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn describe(state: &ServerState, req: DescribeProducersRequest) -> DescribeProducersResponse {
        let resp = with_ctx(state, ListenerKind::Broker, |ctx| handle(ctx, req, 0));
        encodes(&resp, 0);
        resp
    }

    fn codes(resp: &DescribeProducersResponse) -> Vec<(String, i32, i16, Option<String>)> {
        resp.topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.name.clone(),
                        p.partition_index,
                        p.error_code,
                        p.error_message.clone(),
                    )
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn a_producers_state_is_reported_per_partition() {
        let node = running("");
        create_topic(&node.state, "t", 2).await;
        let mut b = BatchBuilder::new(BatchOptions {
            producer_id: 42,
            producer_epoch: 3,
            base_sequence: 0,
            ..BatchOptions::default()
        });
        b.push(1_700_000_000_123, Some(b"k"), Some(b"v"), &[])
            .unwrap();
        b.push(1_700_000_000_456, Some(b"k"), Some(b"v"), &[])
            .unwrap();
        let produce = ProduceRequest {
            acks: -1,
            timeout_ms: 1000,
            topic_data: vec![TopicProduceData {
                name: "t".into(),
                partition_data: vec![PartitionProduceData {
                    index: 1,
                    records: Some(b.build().unwrap().into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let produced = with_ctx(&node.state, ListenerKind::Broker, |ctx| {
            crate::rpc::apis::produce::produce(ctx, produce, 9, 1_700_000_000_500)
        });
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
        let resp = describe(&node.state, request(&[("t", &[0, 1, 9])]));
        let parts = &resp.topics[0].partitions;
        assert_eq!(
            codes(&resp).iter().map(|c| (c.1, c.2)).collect::<Vec<_>>(),
            [(0, 0), (1, 0), (9, 3)]
        );
        assert!(parts[0].active_producers.is_empty());
        let p = &parts[1].active_producers;
        assert_eq!(p.len(), 1);
        assert_eq!(
            (p[0].producer_id, p[0].producer_epoch, p[0].last_sequence),
            (42, 3, 1)
        );
        assert_eq!(p[0].last_timestamp, 1_700_000_000_456);
        assert_eq!(
            (p[0].coordinator_epoch, p[0].current_txn_start_offset),
            (-1, -1)
        );
    }

    #[tokio::test]
    async fn topics_are_checked_before_their_partitions() {
        let node = running("");
        create_topic(&node.state, "t", 1).await;
        let resp = describe(&node.state, request(&[("a b", &[0]), ("ghost", &[0, 1])]));
        let c = codes(&resp);
        assert_eq!((c[0].2, c[1].2, c[2].2), (17, 3, 3));
        assert!(c[0]
            .3
            .as_deref()
            .is_some_and(|m| m.starts_with("Topic name is invalid")));
        assert_eq!(
            c[1].3.as_deref(),
            Some("This server does not host this topic-partition.")
        );
        let (mut denied, _) = ServerState::build(
            Arc::clone(&node.state.config),
            node.state.listeners.iter().map(|l| (**l).clone()).collect(),
        );
        denied.authorizer = Some(Arc::new(crate::security::DenyAll));
        // Refused whether or not the topic exists; an invalid name is refused before.
        let resp = describe(
            &denied,
            request(&[("t", &[0]), ("ghost", &[0]), ("a b", &[0])]),
        );
        let c = codes(&resp);
        assert_eq!((c[0].2, c[1].2, c[2].2), (29, 29, 17));
        assert_eq!(c[0].3.as_deref(), Some("Topic authorization failed."));
    }
}
