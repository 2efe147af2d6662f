use std::sync::Arc;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::apis::broker_registration::tests_support::request as registration;
use crate::rpc::testing::{encodes, running, server, with_ctx, Ctx};
use crate::state::ServerState;
use kcoord_wire::messages::broker_registration_request::StaticConfig;

fn resource(resource_type: i8, name: &str, keys: Option<&[&str]>) -> DescribeConfigsResource {
    DescribeConfigsResource {
        resource_type,
        resource_name: name.into(),
        configuration_keys: keys.map(|k| k.iter().map(|s| (*s).to_owned()).collect()),
        ..Default::default()
    }
}

fn call(
    state: &ServerState,
    resources: Vec<DescribeConfigsResource>,
    synonyms: bool,
    version: i16,
) -> DescribeConfigsResponse {
    let req = DescribeConfigsRequest {
        resources,
        include_synonyms: synonyms,
        ..Default::default()
    };
    let resp = with_ctx(state, ListenerKind::Broker, |ctx| handle(ctx, req, version));
    encodes(&resp, version);
    resp
}

async fn register_with_configs(state: &ServerState, id: i32, configs: &[(&str, Option<&str>)]) {
    let mut req = registration(id, 1);
    req.static_configs = configs
        .iter()
        .map(|(name, value)| StaticConfig {
            name: (*name).into(),
            value: value.map(str::to_owned),
            ..Default::default()
        })
        .collect();
    let c = Ctx::new(state, ListenerKind::Controller);
    let resp = crate::rpc::apis::broker_registration::handle(&c.ctx(state), req, 6).await;
    assert_eq!(resp.error_code, 0);
}

#[tokio::test]
async fn r75_broker_configs_are_the_static_configs_with_nulls_kept() {
    let node = running("");
    register_with_configs(
        &node.state,
        4,
        &[("num.io.threads", Some("16")), ("broker.rack", None)],
    )
    .await;
    for version in 1..=4 {
        let resp = call(
            &node.state,
            vec![resource(BROKER, "4", None)],
            version >= 2,
            version,
        );
        let r = &resp.results[0];
        assert_eq!(
            (r.error_code, r.resource_type, r.resource_name.as_str()),
            (0, BROKER, "4")
        );
        let configs: Vec<(&str, Option<&str>, i8, bool, bool)> = r
            .configs
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.value.as_deref(),
                    c.config_source,
                    c.read_only,
                    c.is_sensitive,
                )
            })
            .collect();
        assert_eq!(
            configs,
            vec![
                ("broker.rack", None, STATIC_BROKER_CONFIG, true, false),
                (
                    "num.io.threads",
                    Some("16"),
                    STATIC_BROKER_CONFIG,
                    true,
                    false
                )
            ],
            "v{version}"
        );
        let synonyms = r.configs[1].synonyms.len();
        assert_eq!(synonyms, usize::from(version >= 2), "v{version}");
    }
    let only = call(
        &node.state,
        vec![resource(BROKER, "4", Some(&["num.io.threads", "nope"]))],
        false,
        4,
    );
    assert_eq!(only.results[0].configs.len(), 1);
}

#[tokio::test]
async fn unknown_brokers_bad_names_and_other_types_get_kafkas_errors() {
    let node = running("");
    register_with_configs(&node.state, 4, &[]).await;
    let resp = call(
        &node.state,
        vec![
            resource(BROKER, "9", None),
            resource(BROKER, "x", None),
            resource(BROKER, "", None),
            resource(GROUP, "", None),
            resource(BROKER_LOGGER, "4", None),
            resource(77, "r", None),
            resource(TOPIC, "missing", None),
            resource(TOPIC, "a b", None),
        ],
        false,
        4,
    );
    let answers: Vec<(i16, Option<&str>)> = resp
        .results
        .iter()
        .map(|r| (r.error_code, r.error_message.as_deref()))
        .collect();
    assert_eq!(
        answers,
        vec![
            (42, Some("Unexpected broker id, expected one of the registered broker ids [4] or empty string, but received 9")),
            (42, Some("Broker id must be an integer, but it is: x")),
            (0, Some("")),
            (42, Some("Group name must not be empty")),
            (42, Some("Unsupported resource type: BROKER_LOGGER")),
            (42, Some("Unexpected resource type UNKNOWN for resource r")),
            (3, Some("")),
            (17, Some("Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")),
        ]
    );
}

#[tokio::test]
async fn topic_configs_list_every_config_with_its_source() {
    use kcoord_wire::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let node = running("");
    let created = node
        .state
        .controller
        .create_topics(kcoord_wire::messages::CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "orders".into(),
                num_partitions: 1,
                replication_factor: -1,
                configs: vec![CreatableTopicConfig {
                    name: "retention.ms".into(),
                    value: Some("1000".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(created[0].error_code, 0);
    let resp = call(&node.state, vec![resource(TOPIC, "orders", None)], true, 4);
    let configs = &resp.results[0].configs;
    let c = configs.iter().find(|c| c.name == "retention.ms").unwrap();
    assert_eq!(
        (
            c.value.as_deref(),
            c.config_source,
            c.read_only,
            c.synonyms.len(),
            c.config_type
        ),
        (Some("1000"), DYNAMIC_TOPIC_CONFIG, false, 1, 5)
    );
    // log.retention.ms has no default of its own (Kafka's default is log.retention.hours'),
    // so, as in Kafka, no DEFAULT_CONFIG synonym follows the topic's.
    let max = configs
        .iter()
        .find(|c| c.name == "max.message.bytes")
        .unwrap();
    assert_eq!(max.synonyms[0].name, "message.max.bytes");
    // Every other config comes with its default, as Kafka lists them.
    let segment = configs.iter().find(|c| c.name == "segment.bytes").unwrap();
    assert_eq!(
        (segment.value.as_deref(), segment.config_source),
        (Some("1073741824"), DEFAULT_CONFIG)
    );
    assert!(configs.iter().any(|c| c.name == "min.insync.replicas"));
    assert!(configs.len() > 30, "{}", configs.len());
}

#[test]
fn authorization_is_asked_per_resource_type() {
    let base = server();
    let (mut state, _) = ServerState::build(
        Arc::clone(&base.config),
        base.listeners.iter().map(|l| (**l).clone()).collect(),
    );
    state.authorizer = Some(Arc::new(crate::security::DenyAll));
    let resp = call(
        &state,
        vec![resource(BROKER, "1", None), resource(TOPIC, "t", None)],
        false,
        4,
    );
    let answers: Vec<(i16, Option<&str>)> = resp
        .results
        .iter()
        .map(|r| (r.error_code, r.error_message.as_deref()))
        .collect();
    assert_eq!(
        answers,
        vec![
            (31, Some("Cluster authorization failed.")),
            (29, Some("Topic authorization failed."))
        ]
    );
}
