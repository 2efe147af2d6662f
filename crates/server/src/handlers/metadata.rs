//! Metadata (key 3), v0-13, after Kafka's `KafkaApis.handleTopicMetadataRequest`.
//!
//! This node is the only broker (at the address advertised on the listener the request came
//! in on) and the controller. Topics come from the catalog snapshot. A null topic list (v1+),
//! or an empty one in v0, means all topics. Topic ids are honoured from v12; v10 and v11 must
//! not use them (INVALID_REQUEST, as Kafka). Unknown names get UNKNOWN_TOPIC_OR_PARTITION, or
//! INVALID_TOPIC_EXCEPTION when the name is not a legal topic name; unknown ids get
//! UNKNOWN_TOPIC_ID. Topics are not created here (`auto.create.topics.enable` is for a later
//! issue).

use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kcoord_wire::messages::{MetadataRequest, MetadataResponse};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use super::{
    AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_AUTHORIZED_OPERATIONS, TOPIC_AUTHORIZED_OPERATIONS,
};
use crate::catalog::{is_internal_topic, is_valid_topic_name, TopicMetadata};
use crate::state::RequestContext;

pub fn handle(ctx: &RequestContext<'_>, req: MetadataRequest, version: i16) -> MetadataResponse {
    let all_topics = match &req.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    let requested: &[MetadataRequestTopic] = if all_topics {
        &[]
    } else {
        req.topics.as_deref().unwrap_or_default()
    };
    if version < 12
        && requested
            .iter()
            .any(|t| t.name.is_none() || !t.topic_id.is_nil())
    {
        return error_response(&req, ErrorCode::INVALID_REQUEST);
    }

    let image = ctx.server.topics.snapshot();
    let with_topic_ops = version >= 8 && req.include_topic_authorized_operations;
    let ids: Vec<Uuid> = dedup(
        requested
            .iter()
            .map(|t| t.topic_id)
            .filter(|id| !id.is_nil()),
    );
    let mut topics = Vec::new();
    if all_topics {
        topics.extend(image.iter().map(|t| topic_response(t, with_topic_ops)));
    } else if !ids.is_empty() {
        // As Kafka: when any id is given, the ids decide and names are ignored.
        for id in ids {
            match image.get_by_id(&id) {
                Some(t) => topics.push(topic_response(t, with_topic_ops)),
                None => topics.push(MetadataResponseTopic {
                    error_code: ErrorCode::UNKNOWN_TOPIC_ID.code(),
                    name: None,
                    topic_id: id,
                    ..Default::default()
                }),
            }
        }
    } else {
        for name in dedup(requested.iter().filter_map(|t| t.name.clone())) {
            match image.get(&name) {
                Some(t) => topics.push(topic_response(t, with_topic_ops)),
                None => {
                    let error = if is_valid_topic_name(&name) {
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                    } else {
                        ErrorCode::INVALID_TOPIC_EXCEPTION
                    };
                    topics.push(MetadataResponseTopic {
                        error_code: error.code(),
                        is_internal: is_internal_topic(&name),
                        name: Some(name),
                        topic_authorized_operations: if with_topic_ops {
                            TOPIC_AUTHORIZED_OPERATIONS
                        } else {
                            AUTHORIZED_OPERATIONS_OMITTED
                        },
                        ..Default::default()
                    })
                }
            }
        }
    }

    let node = ctx.this_node();
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: vec![MetadataResponseBroker {
            node_id: node.id,
            host: node.host,
            port: node.port,
            rack: None,
            ..Default::default()
        }],
        cluster_id: Some(ctx.cluster_id().to_owned()),
        controller_id: ctx.node_id(),
        topics,
        cluster_authorized_operations: if (8..=10).contains(&version)
            && req.include_cluster_authorized_operations
        {
            CLUSTER_AUTHORIZED_OPERATIONS
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
        error_code: ErrorCode::NONE.code(),
        ..Default::default()
    }
}

fn topic_response(t: &TopicMetadata, with_topic_ops: bool) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: ErrorCode::NONE.code(),
        name: Some(t.name.clone()),
        topic_id: t.topic_id,
        is_internal: t.is_internal,
        partitions: t
            .partitions
            .iter()
            .map(|p| MetadataResponsePartition {
                error_code: ErrorCode::NONE.code(),
                partition_index: p.partition_index,
                leader_id: p.leader_id,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replica_nodes.clone(),
                isr_nodes: p.isr_nodes.clone(),
                offline_replicas: p.offline_replicas.clone(),
                ..Default::default()
            })
            .collect(),
        topic_authorized_operations: if with_topic_ops {
            TOPIC_AUTHORIZED_OPERATIONS
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        },
        ..Default::default()
    }
}

/// Kafka's `MetadataRequest.getErrorResponse`: every requested topic with the error, and the
/// top-level code (sent from v13).
fn error_response(req: &MetadataRequest, error: ErrorCode) -> MetadataResponse {
    MetadataResponse {
        topics: req
            .topics
            .iter()
            .flatten()
            .map(|t| MetadataResponseTopic {
                error_code: error.code(),
                name: Some(t.name.clone().unwrap_or_default()),
                topic_id: t.topic_id,
                ..Default::default()
            })
            .collect(),
        error_code: error.code(),
        ..Default::default()
    }
}

/// Keeps the first occurrence of each item, in order (Kafka uses sets).
fn dedup<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{PartitionMetadata, TopicsImage};
    use crate::config::ListenerKind;
    use crate::handlers::testing::{server, with_ctx, CLUSTER_ID, NODE_ID};
    use kcoord_wire::Encodable;

    fn named(names: &[&str]) -> Option<Vec<MetadataRequestTopic>> {
        Some(
            names
                .iter()
                .map(|n| MetadataRequestTopic {
                    name: Some((*n).to_owned()),
                    ..Default::default()
                })
                .collect(),
        )
    }

    fn call(
        state: &crate::state::ServerState,
        req: MetadataRequest,
        version: i16,
    ) -> MetadataResponse {
        let resp = with_ctx(state, ListenerKind::Broker, |ctx| handle(ctx, req, version));
        let mut buf = bytes::BytesMut::new();
        resp.encode(&mut buf, version)
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        resp
    }

    fn orders() -> TopicMetadata {
        TopicMetadata {
            name: "orders".to_owned(),
            topic_id: Uuid::from_u128(0x1234),
            is_internal: false,
            partitions: vec![PartitionMetadata {
                partition_index: 0,
                leader_id: NODE_ID,
                leader_epoch: 3,
                replica_nodes: vec![NODE_ID],
                isr_nodes: vec![NODE_ID],
                offline_replicas: vec![],
            }],
        }
    }

    #[test]
    fn this_node_is_the_only_broker_and_the_controller() {
        let state = server();
        for version in 0..=13 {
            let resp = call(
                &state,
                MetadataRequest {
                    topics: named(&[]),
                    ..Default::default()
                },
                version,
            );
            assert_eq!(resp.brokers.len(), 1);
            let b = &resp.brokers[0];
            assert_eq!(
                (b.node_id, b.host.as_str(), b.port, b.rack.as_deref()),
                (NODE_ID, "broker.example", 9092, None)
            );
            assert_eq!(resp.controller_id, NODE_ID);
            assert_eq!(resp.cluster_id.as_deref(), Some(CLUSTER_ID));
            assert!(resp.topics.is_empty());
            assert_eq!(resp.error_code, 0);
        }
    }

    #[test]
    fn unknown_and_invalid_topic_names() {
        let state = server();
        for version in [0, 1, 9, 12, 13] {
            let resp = call(
                &state,
                MetadataRequest {
                    topics: named(&["nope", "bad name", "nope", "__consumer_offsets"]),
                    ..Default::default()
                },
                version,
            );
            let got: Vec<(Option<&str>, i16, bool)> = resp
                .topics
                .iter()
                .map(|t| (t.name.as_deref(), t.error_code, t.is_internal))
                .collect();
            assert_eq!(
                got,
                vec![
                    (Some("nope"), 3, false),
                    (Some("bad name"), 17, false),
                    (Some("__consumer_offsets"), 3, true)
                ],
                "v{version}"
            );
        }
    }

    #[test]
    fn all_topics_null_or_empty_in_v0() {
        let state = server();
        state.topics.publish(TopicsImage::new([orders()]));
        let all = call(
            &state,
            MetadataRequest {
                topics: None,
                ..Default::default()
            },
            1,
        );
        assert_eq!(all.topics.len(), 1);
        assert_eq!(all.topics[0].name.as_deref(), Some("orders"));
        assert_eq!(all.topics[0].partitions[0].leader_epoch, 3);
        let v0_empty = call(
            &state,
            MetadataRequest {
                topics: named(&[]),
                ..Default::default()
            },
            0,
        );
        assert_eq!(v0_empty.topics.len(), 1);
        let v1_empty = call(
            &state,
            MetadataRequest {
                topics: named(&[]),
                ..Default::default()
            },
            1,
        );
        assert!(v1_empty.topics.is_empty());
        let by_name = call(
            &state,
            MetadataRequest {
                topics: named(&["orders"]),
                ..Default::default()
            },
            12,
        );
        assert_eq!(by_name.topics[0].topic_id, Uuid::from_u128(0x1234));
    }

    #[test]
    fn topic_ids_from_v12_only() {
        let state = server();
        state.topics.publish(TopicsImage::new([orders()]));
        let by_id = |id: u128| {
            Some(vec![MetadataRequestTopic {
                topic_id: Uuid::from_u128(id),
                name: None,
                ..Default::default()
            }])
        };
        let resp = call(
            &state,
            MetadataRequest {
                topics: by_id(0x1234),
                ..Default::default()
            },
            12,
        );
        assert_eq!(resp.topics[0].name.as_deref(), Some("orders"));
        let resp = call(
            &state,
            MetadataRequest {
                topics: by_id(0x9),
                ..Default::default()
            },
            13,
        );
        assert_eq!(
            (resp.topics[0].error_code, resp.topics[0].name.as_deref()),
            (ErrorCode::UNKNOWN_TOPIC_ID.code(), None)
        );
        for version in [10, 11] {
            let resp = call(
                &state,
                MetadataRequest {
                    topics: by_id(0x1234),
                    ..Default::default()
                },
                version,
            );
            assert_eq!(resp.topics[0].error_code, ErrorCode::INVALID_REQUEST.code());
            assert_eq!(resp.topics[0].name.as_deref(), Some(""));
            assert!(resp.brokers.is_empty());
        }
    }

    #[test]
    fn authorized_operations_when_asked() {
        let state = server();
        let req = |cluster, topic| MetadataRequest {
            topics: named(&["t"]),
            include_cluster_authorized_operations: cluster,
            include_topic_authorized_operations: topic,
            ..Default::default()
        };
        let resp = call(&state, req(true, true), 8);
        assert_eq!(
            resp.cluster_authorized_operations,
            CLUSTER_AUTHORIZED_OPERATIONS
        );
        assert_eq!(
            resp.topics[0].topic_authorized_operations,
            TOPIC_AUTHORIZED_OPERATIONS
        );
        let resp = call(&state, req(false, false), 10);
        assert_eq!(resp.cluster_authorized_operations, i32::MIN);
        assert_eq!(resp.topics[0].topic_authorized_operations, i32::MIN);
        let resp = call(&state, req(false, true), 11);
        assert_eq!(resp.cluster_authorized_operations, i32::MIN);
        assert_eq!(
            resp.topics[0].topic_authorized_operations,
            TOPIC_AUTHORIZED_OPERATIONS
        );
    }
}
