//! The topic catalog over TCP: CreateTopics, DeleteTopics and Metadata against the daemon
//! started in-process, on both listener kinds, with Kafka's errors.

mod streams_support;

use kcoord_wire::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, MetadataRequest,
};
use streams_support::*;
use uuid::Uuid;

fn errors(response: &CreateTopicsResponse) -> Vec<(&str, i16, Option<&str>)> {
    response
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.error_code, t.error_message.as_deref()))
        .collect()
}

#[tokio::test]
async fn create_describe_delete_round_trip() {
    let node = start(&["num.partitions=3", "default.replication.factor=2"]).await;
    let conn = node.connect().await;

    let mut orders = creatable("orders", -1, -1);
    orders.configs = vec![CreatableTopicConfig {
        name: "cleanup.policy".into(),
        value: Some("compact".into()),
        ..Default::default()
    }];
    let request = CreateTopicsRequest {
        topics: vec![orders, creatable("payments", 2, 3)],
        timeout_ms: 5_000,
        ..Default::default()
    };
    let created = conn.send(request, 7).await.unwrap();
    assert_eq!(
        errors(&created),
        vec![("orders", 0, None), ("payments", 0, None)]
    );
    let (o, p) = (&created.topics[0], &created.topics[1]);
    assert_eq!((o.num_partitions, o.replication_factor), (3, 2));
    assert_eq!((p.num_partitions, p.replication_factor), (2, 3));
    // Every topic config with its effective value and source, as Kafka's controller answers:
    // the one set here is DYNAMIC_TOPIC_CONFIG (1), the rest Kafka's defaults (5).
    let configs: Vec<(&str, Option<&str>, i8)> = o
        .configs
        .iter()
        .flatten()
        .map(|c| (c.name.as_str(), c.value.as_deref(), c.config_source))
        .collect();
    assert!(configs.contains(&("cleanup.policy", Some("compact"), 1)));
    assert!(configs.contains(&("retention.ms", Some("604800000"), 5)));
    assert!(configs.iter().filter(|c| c.2 == 1).count() == 1);
    assert!(!o.topic_id.is_nil() && !p.topic_id.is_nil());

    // Metadata: ids, this node leading every partition, not internal.
    let meta = metadata(&conn, &["orders", "payments", "unknown"]).await;
    assert_eq!(meta.brokers.len(), 1);
    assert_eq!(meta.brokers[0].node_id, 1);
    let t = &meta.topics[0];
    assert_eq!(
        (t.name.as_deref(), t.error_code, t.topic_id, t.is_internal),
        (Some("orders"), 0, o.topic_id, false)
    );
    assert_eq!(
        t.partitions
            .iter()
            .map(|p| p.partition_index)
            .collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    for part in &t.partitions {
        assert_eq!(
            (
                part.leader_id,
                part.leader_epoch,
                part.replica_nodes.clone(),
                part.isr_nodes.clone()
            ),
            (1, 0, vec![1], vec![1])
        );
    }
    assert_eq!(meta.topics[1].partitions.len(), 2);
    assert_eq!(meta.topics[2].error_code, 3);
    // By id (v12+).
    let by_id = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: p.topic_id,
            name: None,
            ..Default::default()
        }]),
        ..Default::default()
    };
    let meta = conn.send(by_id, 13).await.unwrap();
    assert_eq!(meta.topics[0].name.as_deref(), Some("payments"));

    // DeleteTopics by name (v1-5) and by id (v6).
    let deleted = conn
        .send(
            DeleteTopicsRequest {
                topic_names: vec!["orders".into(), "ghost".into()],
                timeout_ms: 5_000,
                ..Default::default()
            },
            4,
        )
        .await
        .unwrap();
    let mut got: Vec<(Option<&str>, i16)> = deleted
        .responses
        .iter()
        .map(|r| (r.name.as_deref(), r.error_code))
        .collect();
    got.sort();
    assert_eq!(got, vec![(Some("ghost"), 3), (Some("orders"), 0)]);
    let ghost = Uuid::from_u128(0xfeed);
    let deleted = conn
        .send(
            DeleteTopicsRequest {
                topics: vec![
                    DeleteTopicState {
                        name: None,
                        topic_id: p.topic_id,
                        ..Default::default()
                    },
                    DeleteTopicState {
                        name: None,
                        topic_id: ghost,
                        ..Default::default()
                    },
                ],
                timeout_ms: 5_000,
                ..Default::default()
            },
            6,
        )
        .await
        .unwrap();
    let mut got: Vec<(Option<&str>, Uuid, i16)> = deleted
        .responses
        .iter()
        .map(|r| (r.name.as_deref(), r.topic_id, r.error_code))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![(None, ghost, 100), (Some("payments"), p.topic_id, 0)]
    );
    let meta = metadata(&conn, &["orders", "payments"]).await;
    assert!(meta.topics.iter().all(|t| t.error_code == 3));
    let all = conn
        .send(
            MetadataRequest {
                topics: None,
                ..Default::default()
            },
            12,
        )
        .await
        .unwrap();
    assert!(all.topics.is_empty());
    node.stop().await;
}

#[tokio::test]
async fn create_topics_errors_are_kafkas() {
    let node = start(&[]).await;
    let conn = node.connect().await;
    create_topics(&conn, &[("exists", 1)]).await;
    let mut null_config = creatable("null-config", 1, 1);
    null_config.configs = vec![CreatableTopicConfig {
        name: "retention.ms".into(),
        value: None,
        ..Default::default()
    }];
    let request = CreateTopicsRequest {
        topics: vec![
            creatable("exists", 1, 1),
            creatable("bad/name", 1, 1),
            creatable("no-partitions", 0, 1),
            creatable("no-replicas", 1, 0),
            null_config,
            creatable("twice", 1, 1),
            creatable("twice", 1, 1),
        ],
        timeout_ms: 5_000,
        ..Default::default()
    };
    let response = conn.send(request, 6).await.unwrap();
    assert_eq!(
        errors(&response),
        vec![
            ("exists", 36, Some("Topic 'exists' already exists.")),
            ("bad/name", 17, Some("Topic name is invalid: 'bad/name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")),
            ("no-partitions", 37, Some("Number of partitions was set to an invalid non-positive value.")),
            ("no-replicas", 38, Some("Replication factor must be larger than 0, or -1 to use the default value.")),
            ("null-config", 40, Some("Null value not supported for topic configs: retention.ms")),
            ("twice", 42, Some("Duplicate topic name.")),
        ]
    );
    // validateOnly answers as if created, and creates nothing.
    let request = CreateTopicsRequest {
        topics: vec![creatable("dry-run", 4, 1)],
        validate_only: true,
        ..Default::default()
    };
    let response = conn.send(request, 5).await.unwrap();
    assert_eq!(
        (
            response.topics[0].error_code,
            response.topics[0].num_partitions
        ),
        (0, 4)
    );
    assert_eq!(metadata(&conn, &["dry-run"]).await.topics[0].error_code, 3);
    // Every version encodes its own fields.
    for version in 2..=7 {
        let name = format!("v{version}");
        let response = conn
            .send(
                CreateTopicsRequest {
                    topics: vec![creatable(&name, 1, 1)],
                    ..Default::default()
                },
                version,
            )
            .await
            .unwrap();
        assert_eq!(response.topics[0].error_code, 0);
        assert_eq!(response.topics[0].topic_id.is_nil(), version < 7);
        assert_eq!(
            response.topics[0].num_partitions,
            if version >= 5 { 1 } else { -1 }
        );
    }
    for version in 1..=6 {
        let name = format!("v{}", version + 1);
        let request = if version >= 6 {
            DeleteTopicsRequest {
                topics: vec![DeleteTopicState {
                    name: Some(name),
                    ..Default::default()
                }],
                ..Default::default()
            }
        } else {
            DeleteTopicsRequest {
                topic_names: vec![name],
                ..Default::default()
            }
        };
        let response = conn.send(request, version).await.unwrap();
        assert_eq!(response.responses[0].error_code, 0, "v{version}");
    }
    node.stop().await;
}

#[tokio::test]
async fn the_controller_listener_serves_the_catalog_too() {
    let node = start(&[]).await;
    let controller = connect(&node.controller).await;
    let request = CreateTopicsRequest {
        topics: vec![creatable("from-controller", 2, -1)],
        ..Default::default()
    };
    let response = controller.send(request, 7).await.unwrap();
    assert_eq!(response.topics[0].error_code, 0);
    // Visible to clients of the broker listener at once.
    let broker = node.connect().await;
    let meta = metadata(&broker, &["from-controller"]).await;
    assert_eq!(
        (meta.topics[0].error_code, meta.topics[0].partitions.len()),
        (0, 2)
    );
    node.stop().await;
}

#[tokio::test]
async fn metadata_creates_unknown_topics_when_enabled() {
    let node = start(&["auto.create.topics.enable=true", "num.partitions=2"]).await;
    let conn = node.connect().await;
    let ask = |allow: bool| MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("auto".into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: allow,
        ..Default::default()
    };
    let first = conn.send(ask(false), 12).await.unwrap();
    assert_eq!(first.topics[0].error_code, 3);
    // Kafka answers the creating request with UNKNOWN_TOPIC_OR_PARTITION; the next one sees it.
    let creating = conn.send(ask(true), 12).await.unwrap();
    assert_eq!(creating.topics[0].error_code, 3);
    let created = conn.send(ask(true), 12).await.unwrap();
    assert_eq!(
        (
            created.topics[0].error_code,
            created.topics[0].partitions.len()
        ),
        (0, 2)
    );
    node.stop().await;
}

#[tokio::test]
async fn create_topics_with_manual_assignment_to_this_node() {
    let node = start(&[]).await;
    let conn = node.connect().await;
    let topic = |broker: i32| CreatableTopic {
        name: format!("assigned-{broker}"),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![
            kcoord_wire::messages::create_topics_request::CreatableReplicaAssignment {
                partition_index: 0,
                broker_ids: vec![broker],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let response = conn
        .send(
            CreateTopicsRequest {
                topics: vec![topic(1), topic(2)],
                ..Default::default()
            },
            7,
        )
        .await
        .unwrap();
    assert_eq!(
        errors(&response),
        vec![
            ("assigned-1", 0, None),
            ("assigned-2", 39, Some("The manual partition assignment includes broker 2, but no such broker is registered.")),
        ]
    );
    node.stop().await;
}
