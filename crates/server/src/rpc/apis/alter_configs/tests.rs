use kcoord_wire::messages::alter_configs_request::AlterableConfig;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::describe_configs_request::DescribeConfigsResource;
use kcoord_wire::messages::{CreateTopicsRequest, DescribeConfigsRequest};

use super::*;
use crate::config::ListenerKind;
use crate::rpc::apis::describe_configs::{
    DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG,
};
use crate::rpc::testing::{encodes, running, with_ctx, Ctx, NODE_ID};
use crate::state::ServerState;

fn resource(
    resource_type: i8,
    name: &str,
    configs: &[(&str, Option<&str>)],
) -> AlterConfigsResource {
    AlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs: configs
            .iter()
            .map(|(k, v)| AlterableConfig {
                name: (*k).into(),
                value: v.map(str::to_owned),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

async fn alter(
    state: &ServerState,
    resources: Vec<AlterConfigsResource>,
) -> Vec<(i16, Option<String>)> {
    let req = AlterConfigsRequest {
        resources,
        validate_only: false,
        ..Default::default()
    };
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, 2).await;
    for v in 0..=2 {
        encodes(&resp, v);
    }
    resp.responses
        .into_iter()
        .map(|r| (r.error_code, r.error_message))
        .collect()
}

async fn create_topic(state: &ServerState, name: &str) {
    let results = state
        .controller
        .create_topics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: 1,
                replication_factor: -1,
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(results[0].error_code, 0);
}

/// (value, source, synonym sources) of one config as DescribeConfigs lists it.
pub(crate) fn described(
    state: &ServerState,
    resource_type: i8,
    name: &str,
    key: &str,
) -> (Option<String>, i8, Vec<i8>) {
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: Some(vec![key.into()]),
            ..Default::default()
        }],
        include_synonyms: true,
        ..Default::default()
    };
    let resp = with_ctx(state, ListenerKind::Broker, |ctx| {
        crate::rpc::apis::describe_configs::handle(ctx, req, 4)
    });
    let r = &resp.results[0];
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let c = &r.configs[0];
    (
        c.value.clone(),
        c.config_source,
        c.synonyms.iter().map(|s| s.source).collect(),
    )
}

fn retention_of_partition(state: &ServerState, topic: &str) -> i64 {
    let id = state.topics.snapshot().get(topic).unwrap().id;
    state.partitions.get(id, 0).unwrap().config().retention_ms
}

#[tokio::test]
async fn topic_configs_are_replaced_and_reach_the_live_partition() {
    let r = running("");
    create_topic(&r.state, "t").await;
    let answers = alter(
        &r.state,
        vec![resource(
            TOPIC,
            "t",
            &[
                ("retention.ms", Some("1000")),
                ("cleanup.policy", Some("compact")),
            ],
        )],
    )
    .await;
    assert_eq!(answers, vec![(0, None)]);
    assert_eq!(retention_of_partition(&r.state, "t"), 1000);
    assert!(r
        .state
        .topics
        .snapshot()
        .get("t")
        .is_some_and(|t| t.configs.len() == 2));
    assert_eq!(
        described(&r.state, TOPIC, "t", "retention.ms"),
        (
            Some("1000".into()),
            DYNAMIC_TOPIC_CONFIG,
            vec![DYNAMIC_TOPIC_CONFIG]
        )
    );
    // Left out: deleted.
    let answers = alter(
        &r.state,
        vec![resource(TOPIC, "t", &[("segment.ms", Some("60000"))])],
    )
    .await;
    assert_eq!(answers, vec![(0, None)]);
    assert_eq!(retention_of_partition(&r.state, "t"), 604_800_000);
    let configs = r.state.topics.snapshot().get("t").unwrap().configs.clone();
    assert_eq!(configs.keys().collect::<Vec<_>>(), vec!["segment.ms"]);
}

#[tokio::test]
async fn broker_defaults_and_this_nodes_configs_take_effect_in_kafkas_order() {
    let r = running("");
    create_topic(&r.state, "t").await;
    let node = NODE_ID.to_string();
    assert_eq!(
        alter(
            &r.state,
            vec![resource(BROKER, "", &[("log.retention.ms", Some("5000"))])]
        )
        .await,
        vec![(0, None)]
    );
    assert_eq!(retention_of_partition(&r.state, "t"), 5000);
    assert_eq!(
        described(&r.state, TOPIC, "t", "retention.ms"),
        (
            Some("5000".into()),
            DYNAMIC_DEFAULT_BROKER_CONFIG,
            vec![DYNAMIC_DEFAULT_BROKER_CONFIG]
        )
    );
    assert_eq!(
        alter(
            &r.state,
            vec![resource(
                BROKER,
                &node,
                &[("log.retention.ms", Some("6000"))]
            )]
        )
        .await,
        vec![(0, None)]
    );
    assert_eq!(retention_of_partition(&r.state, "t"), 6000);
    assert_eq!(
        described(&r.state, BROKER, &node, "log.retention.ms"),
        (
            Some("6000".into()),
            DYNAMIC_BROKER_CONFIG,
            vec![DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG]
        )
    );
    assert_eq!(
        described(&r.state, BROKER, "", "log.retention.ms"),
        (
            Some("5000".into()),
            DYNAMIC_DEFAULT_BROKER_CONFIG,
            vec![DYNAMIC_DEFAULT_BROKER_CONFIG]
        )
    );
}

#[tokio::test]
async fn the_brokers_preprocessing_answers_as_kafka() {
    let r = running("");
    create_topic(&r.state, "t").await;
    let answers = alter(
        &r.state,
        vec![
            resource(TOPIC, "t", &[]),
            resource(TOPIC, "t", &[]),
            resource(TOPIC, "u", &[("retention.ms", None), ("segment.ms", None)]),
            resource(
                TOPIC,
                "v",
                &[("retention.ms", Some("1")), ("retention.ms", Some("2"))],
            ),
            resource(8, "7", &[]),
            resource(BROKER, "3", &[("log.retention.ms", Some("1"))]),
            resource(BROKER, "", &[("log.dirs", Some("/x"))]),
            resource(TOPIC, "missing", &[("retention.ms", Some("1"))]),
            resource(TOPIC, "w", &[("retention.mss", Some("1"))]),
        ],
    )
    .await;
    let got: Vec<(i16, Option<&str>)> = answers.iter().map(|(c, m)| (*c, m.as_deref())).collect();
    assert_eq!(
        got,
        vec![
            (42, Some("Each resource must appear at most once.")),
            (42, Some("Each resource must appear at most once.")),
            (
                42,
                Some("Null value not supported for : retention.ms, segment.ms")
            ),
            (42, Some("Error due to duplicate config keys")),
            (42, Some("Unknown resource type 8")),
            (42, Some("Unexpected broker id, expected 7, but received 3")),
            (
                42,
                Some("Cannot update these configs dynamically: [log.dirs]")
            ),
            (3, Some("The topic 'missing' does not exist.")),
            (40, Some("Unknown topic config name: retention.mss")),
        ]
    );
}
