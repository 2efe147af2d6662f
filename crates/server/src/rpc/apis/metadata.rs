//! Metadata (key 3), v0-13, after Kafka's `KafkaApis.handleTopicMetadataRequest`.
//!
//! This node is the controller and a broker (at the address advertised on the listener the
//! request came in on); the registered, unfenced brokers are listed with it at their endpoint
//! of the same listener name (`cluster.rs`). Topics come from the controller's published
//! catalog: each partition is led by this node, which is its only replica and in-sync
//! replica; registered brokers host no partitions. A null topic
//! list (v1+), or an empty one in v0, means all topics. Topic ids are honoured from v12; v10 and
//! v11 must not use them (INVALID_REQUEST, as Kafka). Unknown names get
//! UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION when the name is not a legal topic
//! name; unknown ids get UNKNOWN_TOPIC_ID.
//!
//! With `auto.create.topics.enable=true` and AllowAutoTopicCreation (always, before v4), the
//! unknown legal names asked for by name are created with the defaults. As in Kafka 4.4
//! (`DefaultAutoTopicCreationManager.createTopics`) this response still answers
//! UNKNOWN_TOPIC_OR_PARTITION for them; the next Metadata shows them (the creation is done
//! before this response is sent).
//!
//! Authorization as Kafka's: DESCRIBE on each topic. An all-topics request leaves out the
//! topics the principal may not DESCRIBE; a topic asked for by name is
//! TOPIC_AUTHORIZATION_FAILED whether or not it exists, by id TOPIC_AUTHORIZATION_FAILED with
//! the id and no name. Auto-creation also needs CREATE on the cluster or on the topic (else
//! TOPIC_AUTHORIZATION_FAILED). Topics come in Kafka's order: unknown ids, the topics
//! described, those not creatable, those not describable.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kcoord_wire::messages::{MetadataRequest, MetadataResponse};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use super::broker_registration::KAFKA_CLUSTER;
use super::describe_cluster::cluster_operations;
use crate::rpc::authorize::AUTHORIZED_OPERATIONS_OMITTED;
use crate::rpc::authorize::{authorize, authorized_operations, AclOperation, ResourceType};
use crate::rpc::lists::first_occurrences;
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::catalog::{is_internal_topic, is_valid_topic_name, TopicImage, TopicsImage};
use crate::state::RequestContext;

/// Metadata as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::Metadata, 0, 13)
    .asks(&[
        Check::new(AclOperation::Describe, ResourceType::Topic),
        Check::new(AclOperation::Create, ResourceType::Cluster),
        Check::new(AclOperation::Create, ResourceType::Topic),
    ])
    .rewritten_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: MetadataRequest,
    version: i16,
) -> MetadataResponse {
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

    // The answer describes the catalog as it was when the request arrived, even if topics are
    // auto-created below.
    let image = ctx.server.topics.snapshot();
    let describer = Describer {
        ctx,
        with_topic_ops: version >= 8 && req.include_topic_authorized_operations,
    };
    let ids: Vec<Uuid> = first_occurrences(
        requested
            .iter()
            .map(|t| t.topic_id)
            .filter(|id| !id.is_nil()),
    );
    let answer = if all_topics {
        // Topics the principal may not DESCRIBE are left out.
        KafkaOrder {
            topics: image
                .iter()
                .filter(|t| describer.describable(&t.name))
                .map(|t| describer.topic_response(t))
                .collect(),
            ..Default::default()
        }
    } else if !ids.is_empty() {
        // As Kafka: when any id is given, the ids decide and names are ignored.
        describe_by_ids(&describer, &image, ids)
    } else {
        let auto_create = ctx.server.config.auto_create_topics_enable
            && (version < 4 || req.allow_auto_topic_creation);
        describe_by_names(&describer, &image, requested, auto_create).await
    };

    MetadataResponse {
        throttle_time_ms: 0,
        brokers: brokers(ctx),
        cluster_id: Some(ctx.cluster_id().to_owned()),
        controller_id: ctx.node_id(),
        topics: answer.into_topics(),
        cluster_authorized_operations: cluster_operations(
            ctx,
            (8..=10).contains(&version) && req.include_cluster_authorized_operations,
        ),
        error_code: ErrorCode::NONE.code(),
        ..Default::default()
    }
}

/// What the principal may see of a topic, and whether its authorized operations are asked for.
struct Describer<'c, 'a> {
    ctx: &'c RequestContext<'a>,
    with_topic_ops: bool,
}

impl Describer<'_, '_> {
    fn describable(&self, name: &str) -> bool {
        authorize(self.ctx, AclOperation::Describe, ResourceType::Topic, name)
    }

    fn topic_ops(&self, name: &str) -> i32 {
        if self.with_topic_ops {
            authorized_operations(self.ctx, ResourceType::Topic, name)
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        }
    }

    fn topic_response(&self, t: &TopicImage) -> MetadataResponseTopic {
        topic_response(t, self.topic_ops(&t.name))
    }
}

/// The topics of the answer in Kafka's order: unknown ids, the topics described, the topics that
/// could not be created for want of CREATE, the topics the principal may not DESCRIBE.
#[derive(Default)]
struct KafkaOrder {
    unknown_ids: Vec<MetadataResponseTopic>,
    topics: Vec<MetadataResponseTopic>,
    not_creatable: Vec<MetadataResponseTopic>,
    denied: Vec<MetadataResponseTopic>,
}

impl KafkaOrder {
    fn into_topics(self) -> Vec<MetadataResponseTopic> {
        self.unknown_ids
            .into_iter()
            .chain(self.topics)
            .chain(self.not_creatable)
            .chain(self.denied)
            .collect()
    }
}

/// The topics asked for by id.
fn describe_by_ids(
    describer: &Describer<'_, '_>,
    image: &TopicsImage,
    ids: Vec<Uuid>,
) -> KafkaOrder {
    let mut answer = KafkaOrder::default();
    for id in ids {
        match image.get_by_id(&id) {
            // Ids are not secret: the id is echoed, the name is not.
            Some(t) if !describer.describable(&t.name) => {
                answer.denied.push(MetadataResponseTopic {
                    error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
                    name: None,
                    topic_id: id,
                    ..Default::default()
                })
            }
            Some(t) => answer.topics.push(describer.topic_response(t)),
            None => answer.unknown_ids.push(MetadataResponseTopic {
                error_code: ErrorCode::UNKNOWN_TOPIC_ID.code(),
                name: None,
                topic_id: id,
                ..Default::default()
            }),
        }
    }
    answer
}

/// The topics asked for by name, the missing ones auto-created first when `auto_create`.
async fn describe_by_names(
    describer: &Describer<'_, '_>,
    image: &TopicsImage,
    requested: &[MetadataRequestTopic],
    auto_create: bool,
) -> KafkaOrder {
    let ctx = describer.ctx;
    let mut answer = KafkaOrder::default();
    let (mut names, refused): (Vec<String>, Vec<String>) =
        first_occurrences(requested.iter().filter_map(|t| t.name.clone()))
            .into_iter()
            .partition(|name| describer.describable(name));
    answer
        .denied
        .extend(refused.into_iter().map(|name| MetadataResponseTopic {
            error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
            name: Some(name),
            ..Default::default()
        }));
    if auto_create {
        let (missing, uncreatable) = missing_topics(ctx, image, &mut names);
        answer
            .not_creatable
            .extend(uncreatable.into_iter().map(|name| MetadataResponseTopic {
                error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
                is_internal: is_internal_topic(&name),
                name: Some(name),
                ..Default::default()
            }));
        if !missing.is_empty() {
            ctx.server
                .auto_topics
                .create_for_metadata(&ctx.server.controller, &missing)
                .await;
        }
    }
    for name in names {
        match image.get(&name) {
            Some(t) => answer.topics.push(describer.topic_response(t)),
            None => {
                let error = if is_valid_topic_name(&name) {
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    ErrorCode::INVALID_TOPIC_EXCEPTION
                };
                answer.topics.push(MetadataResponseTopic {
                    error_code: error.code(),
                    is_internal: is_internal_topic(&name),
                    topic_authorized_operations: describer.topic_ops(&name),
                    name: Some(name),
                    ..Default::default()
                })
            }
        }
    }
    answer
}

/// This node, and the registered unfenced brokers at this listener (cluster.rs).
fn brokers(ctx: &RequestContext<'_>) -> Vec<MetadataResponseBroker> {
    ctx.server
        .cluster
        .snapshot()
        .broker_nodes(ctx.this_node(), ctx.listener, false)
        .into_iter()
        .map(|b| MetadataResponseBroker {
            node_id: b.node.id,
            host: b.node.host,
            port: b.node.port,
            rack: b.rack,
            ..Default::default()
        })
        .collect()
}

/// The missing legal names to auto-create, taken out of `names` when the principal may not
/// create them (CREATE on the cluster, else on the topic): (to create, refused).
fn missing_topics(
    ctx: &RequestContext<'_>,
    image: &TopicsImage,
    names: &mut Vec<String>,
) -> (Vec<String>, Vec<String>) {
    let may_create_any = authorize(
        ctx,
        AclOperation::Create,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    );
    let mut missing = Vec::new();
    let mut refused = Vec::new();
    names.retain(|name| {
        if image.get(name).is_some() {
            return true;
        }
        if !may_create_any && !authorize(ctx, AclOperation::Create, ResourceType::Topic, name) {
            refused.push(name.clone());
            return false;
        }
        if is_valid_topic_name(name) {
            missing.push(name.clone());
        }
        true
    });
    (missing, refused)
}

fn topic_response(t: &TopicImage, topic_authorized_operations: i32) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: ErrorCode::NONE.code(),
        name: Some(t.name.clone()),
        topic_id: t.id,
        is_internal: t.is_internal(),
        partitions: t
            .partitions
            .values()
            .map(|p| MetadataResponsePartition {
                error_code: ErrorCode::NONE.code(),
                partition_index: p.partition,
                leader_id: p.leader,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.clone(),
                isr_nodes: p.isr.clone(),
                offline_replicas: Vec::new(),
                ..Default::default()
            })
            .collect(),
        topic_authorized_operations,
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

/// The authorization matrix's rows of Metadata ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(Metadata ("by name") 12 on Broker, metadata(Some(&[TOPIC])),
            needs [(Describe, Topic, TOPIC)],
            MetadataResponse => |r| code(r.topics[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(Metadata ("all topics") 12 on Broker, metadata(None),
            needs [(Describe, Topic, TOPIC)],
            MetadataResponse => |r| listed(r.error_code, r.topics.iter().filter_map(|t| t.name.as_deref()), TOPIC),
            allowed "t listed", denied "t left out"),
        // Created in the background: the answer describes the catalog as it was.
        row!(Metadata ("auto-create, cluster") 12 on Broker, metadata(Some(&[AUTO_TOPIC])),
            also [(Describe, Topic, AUTO_TOPIC)],
            needs [(Create, Cluster, CLUSTER)],
            MetadataResponse => |r| code(r.topics[0].error_code),
            allowed "UNKNOWN_TOPIC_OR_PARTITION", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(Metadata ("auto-create, topic") 12 on Broker, metadata(Some(&[AUTO_TOPIC])),
            also [(Describe, Topic, AUTO_TOPIC)],
            needs [(Create, Topic, AUTO_TOPIC)],
            MetadataResponse => |r| code(r.topics[0].error_code),
            allowed "UNKNOWN_TOPIC_OR_PARTITION", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::authorize::{CLUSTER_AUTHORIZED_OPERATIONS, TOPIC_AUTHORIZED_OPERATIONS};
    use crate::rpc::testing::{encodes, running, server, Ctx, CLUSTER_ID, NODE_ID};
    use crate::state::ServerState;
    use kcoord_metadata::{Record, Store};
    use kcoord_wire::records::{PartitionRecord, TopicRecord};
    use std::sync::Arc;

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

    async fn call(state: &ServerState, req: MetadataRequest, version: i16) -> MetadataResponse {
        let c = Ctx::new(state, ListenerKind::Broker);
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp
    }

    /// Publishes a catalog holding `orders` (id 0x1234, one partition at leader epoch 3).
    fn publish_orders(state: &ServerState) {
        let id = Uuid::from_u128(0x1234);
        let mut store = Store::new();
        store
            .append(vec![
                Record::Topic(TopicRecord {
                    name: "orders".into(),
                    topic_id: id,
                    ..Default::default()
                }),
                Record::Partition(PartitionRecord {
                    partition_id: 0,
                    topic_id: id,
                    leader: NODE_ID,
                    leader_epoch: 3,
                    replicas: vec![NODE_ID],
                    isr: vec![NODE_ID],
                    ..Default::default()
                }),
            ])
            .unwrap();
        state.topics.publish(Arc::new(store.state().topics.clone()));
    }

    #[tokio::test]
    async fn this_node_is_the_only_broker_and_the_controller() {
        let state = server();
        for version in 0..=13 {
            let resp = call(
                &state,
                MetadataRequest {
                    topics: named(&[]),
                    ..Default::default()
                },
                version,
            )
            .await;
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

    #[tokio::test]
    async fn a_huge_list_of_repeated_names_and_ids_is_answered_once_each_in_first_seen_order() {
        let state = server();
        publish_orders(&state);
        let unknown = |i: usize| format!("nope-{i}");
        let mut names: Vec<String> = (0..100_000).map(unknown).collect();
        names.insert(50_000, "orders".into());
        names.extend((0..100_000).rev().map(unknown));
        names.push("orders".into());
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let resp = call(
            &state,
            MetadataRequest {
                topics: named(&refs),
                ..Default::default()
            },
            12,
        )
        .await;
        let got: Vec<(Option<&str>, i16)> = resp
            .topics
            .iter()
            .map(|t| (t.name.as_deref(), t.error_code))
            .collect();
        let mut expected: Vec<(Option<&str>, i16)> =
            refs[..100_001].iter().map(|n| (Some(*n), 3)).collect();
        expected[50_000].1 = 0;
        assert!(got == expected, "names answered differently");

        let id = |i: u128| Uuid::from_u128(0x10_0000 + i);
        let mut ids: Vec<Uuid> = (0..100_000).map(id).collect();
        ids.insert(50_000, Uuid::from_u128(0x1234));
        ids.extend((0..100_000).rev().map(id));
        let resp = call(
            &state,
            MetadataRequest {
                topics: Some(
                    ids.iter()
                        .map(|&topic_id| MetadataRequestTopic {
                            topic_id,
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            },
            12,
        )
        .await;
        let got: Vec<(Uuid, i16)> = resp
            .topics
            .iter()
            .map(|t| (t.topic_id, t.error_code))
            .collect();
        let mut expected: Vec<(Uuid, i16)> = ids[..100_001]
            .iter()
            .map(|&i| (i, ErrorCode::UNKNOWN_TOPIC_ID.code()))
            .collect();
        // Kafka's order: the unknown ids first, then the topics described.
        let known = expected.remove(50_000);
        expected.push((known.0, 0));
        assert!(got == expected, "ids answered differently");
    }

    #[tokio::test]
    async fn unknown_and_invalid_topic_names() {
        let state = server();
        for version in [0, 1, 9, 12, 13] {
            let resp = call(
                &state,
                MetadataRequest {
                    topics: named(&["nope", "bad name", "nope", "__consumer_offsets"]),
                    ..Default::default()
                },
                version,
            )
            .await;
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

    #[tokio::test]
    async fn all_topics_null_or_empty_in_v0() {
        let state = server();
        publish_orders(&state);
        let all = call(
            &state,
            MetadataRequest {
                topics: None,
                ..Default::default()
            },
            1,
        )
        .await;
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
        )
        .await;
        assert_eq!(v0_empty.topics.len(), 1);
        let v1_empty = call(
            &state,
            MetadataRequest {
                topics: named(&[]),
                ..Default::default()
            },
            1,
        )
        .await;
        assert!(v1_empty.topics.is_empty());
        let by_name = call(
            &state,
            MetadataRequest {
                topics: named(&["orders"]),
                ..Default::default()
            },
            12,
        )
        .await;
        assert_eq!(by_name.topics[0].topic_id, Uuid::from_u128(0x1234));
    }

    #[tokio::test]
    async fn topic_ids_from_v12_only() {
        let state = server();
        publish_orders(&state);
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
        )
        .await;
        assert_eq!(resp.topics[0].name.as_deref(), Some("orders"));
        let resp = call(
            &state,
            MetadataRequest {
                topics: by_id(0x9),
                ..Default::default()
            },
            13,
        )
        .await;
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
            )
            .await;
            assert_eq!(resp.topics[0].error_code, ErrorCode::INVALID_REQUEST.code());
            assert_eq!(resp.topics[0].name.as_deref(), Some(""));
            assert!(resp.brokers.is_empty());
        }
    }

    #[tokio::test]
    async fn authorized_operations_when_asked() {
        let state = server();
        let req = |cluster, topic| MetadataRequest {
            topics: named(&["t"]),
            include_cluster_authorized_operations: cluster,
            include_topic_authorized_operations: topic,
            ..Default::default()
        };
        let resp = call(&state, req(true, true), 8).await;
        assert_eq!(
            resp.cluster_authorized_operations,
            CLUSTER_AUTHORIZED_OPERATIONS
        );
        assert_eq!(
            resp.topics[0].topic_authorized_operations,
            TOPIC_AUTHORIZED_OPERATIONS
        );
        let resp = call(&state, req(false, false), 10).await;
        assert_eq!(resp.cluster_authorized_operations, i32::MIN);
        assert_eq!(resp.topics[0].topic_authorized_operations, i32::MIN);
        let resp = call(&state, req(false, true), 11).await;
        assert_eq!(resp.cluster_authorized_operations, i32::MIN);
        assert_eq!(
            resp.topics[0].topic_authorized_operations,
            TOPIC_AUTHORIZED_OPERATIONS
        );
    }

    #[tokio::test]
    async fn auto_creation_creates_unknown_topics_and_answers_unknown_first() {
        let r = running("auto.create.topics.enable=true\nnum.partitions=3\n");
        let req = |names: &[&str], allow| MetadataRequest {
            topics: named(names),
            allow_auto_topic_creation: allow,
            ..Default::default()
        };
        let codes = |resp: &MetadataResponse| -> Vec<i16> {
            resp.topics.iter().map(|t| t.error_code).collect()
        };
        // The client does not allow it: nothing is created.
        let resp = call(&r.state, req(&["fresh", "bad name"], false), 12).await;
        assert_eq!(codes(&resp), vec![3, 17]);
        assert!(r.state.topics.snapshot().get("fresh").is_none());
        // Allowed: created, but this answer still says unknown, as Kafka's.
        let resp = call(&r.state, req(&["fresh", "bad name"], true), 12).await;
        assert_eq!(codes(&resp), vec![3, 17]);
        let resp = call(&r.state, req(&["fresh"], true), 12).await;
        assert_eq!(codes(&resp), vec![0]);
        let t = &resp.topics[0];
        assert!(!t.topic_id.is_nil());
        assert_eq!(t.partitions.len(), 3);
        assert!(t.partitions.iter().all(|p| p.leader_id == NODE_ID
            && p.leader_epoch == 0
            && p.isr_nodes == vec![NODE_ID]));
        // Before v4 there is no AllowAutoTopicCreation: always allowed.
        call(&r.state, req(&["old-client"], false), 3).await;
        assert!(r.state.topics.snapshot().get("old-client").is_some());
    }

    #[tokio::test]
    async fn auto_creation_is_off_by_default() {
        let r = running("");
        for _ in 0..2 {
            let resp = call(
                &r.state,
                MetadataRequest {
                    topics: named(&["fresh"]),
                    ..Default::default()
                },
                12,
            )
            .await;
            assert_eq!(resp.topics[0].error_code, 3);
        }
        assert!(r.state.topics.snapshot().is_empty());
    }
}
