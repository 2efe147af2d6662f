use std::sync::Arc;

use kcoord_wire::messages::describe_configs_request::DescribeConfigsResource;
use kcoord_wire::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kcoord_wire::messages::DescribeConfigsRequest;
use tokio::sync::watch;

use super::*;
use crate::config::{Config, ListenerKind};
use crate::rpc::testing::{encodes, running, with_ctx, Ctx};
use crate::state::ServerState;
use kcoord_controller::group_configs::{APPEND, SET};

fn op(name: &str, operation: i8, value: Option<&str>) -> AlterableConfig {
    AlterableConfig {
        name: name.into(),
        config_operation: operation,
        value: value.map(str::to_owned),
        ..Default::default()
    }
}

fn resource(resource_type: i8, name: &str, configs: Vec<AlterableConfig>) -> AlterConfigsResource {
    AlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs,
        ..Default::default()
    }
}

async fn alter(
    state: &ServerState,
    resources: Vec<AlterConfigsResource>,
    validate_only: bool,
) -> Vec<(i8, String, i16, Option<String>)> {
    let req = IncrementalAlterConfigsRequest {
        resources,
        validate_only,
        ..Default::default()
    };
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, 1).await;
    encodes(&resp, 0);
    encodes(&resp, 1);
    resp.responses
        .into_iter()
        .map(|r| {
            (
                r.resource_type,
                r.resource_name,
                r.error_code,
                r.error_message,
            )
        })
        .collect()
}

/// (name, value, source) of a group's configs as DescribeConfigs lists them.
fn describe_group(state: &ServerState, group: &str) -> Vec<(String, Option<String>, i8)> {
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: GROUP,
            resource_name: group.into(),
            configuration_keys: None,
            ..Default::default()
        }],
        include_synonyms: true,
        ..Default::default()
    };
    let resp = with_ctx(state, ListenerKind::Broker, |ctx| {
        crate::rpc::apis::describe_configs::handle(ctx, req, 4)
    });
    encodes(&resp, 4);
    let r = &resp.results[0];
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    r.configs
        .iter()
        .map(|c| (c.name.clone(), c.value.clone(), c.config_source))
        .collect()
}

fn value_of<'a>(
    described: &'a [(String, Option<String>, i8)],
    name: &str,
) -> (Option<&'a str>, i8) {
    described
        .iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, v, s)| (v.as_deref(), *s))
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

/// The session timeout the shard owning `group` runs it with.
async fn session_timeout(state: &ServerState, group: &str) -> i32 {
    let g = group.to_owned();
    let shard = state.coordinators.for_group(group);
    shard.loaded().await;
    shard
        .read(move |shard| shard.group_settings(&g).config.session_timeout_ms)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_group_config_is_stored_described_and_used_by_the_groups_shard() {
    let node = running("");
    let answers = alter(
        &node.state,
        vec![resource(
            GROUP,
            "app",
            vec![
                op("streams.session.timeout.ms", SET, Some("50000")),
                op("consumer.heartbeat.interval.ms", SET, Some("6000")),
            ],
        )],
        false,
    )
    .await;
    assert_eq!(answers, vec![(GROUP, "app".to_owned(), 0, None)]);
    let described = describe_group(&node.state, "app");
    assert_eq!(described.len(), 21);
    assert_eq!(
        value_of(&described, "streams.session.timeout.ms"),
        (Some("50000"), 8)
    );
    assert_eq!(
        value_of(&described, "consumer.heartbeat.interval.ms"),
        (Some("6000"), 8)
    );
    assert_eq!(
        value_of(
            &describe_group(&node.state, "other"),
            "streams.session.timeout.ms"
        ),
        (Some("45000"), 5)
    );
    assert_eq!(session_timeout(&node.state, "app").await, 50_000);
    assert_eq!(session_timeout(&node.state, "other").await, 45_000);
    // Validate-only changes nothing; a DELETE goes back to the broker's value.
    let answers = alter(
        &node.state,
        vec![resource(
            GROUP,
            "app",
            vec![op("streams.session.timeout.ms", SET, Some("55000"))],
        )],
        true,
    )
    .await;
    assert_eq!(answers[0].2, 0);
    assert_eq!(session_timeout(&node.state, "app").await, 50_000);
    alter(
        &node.state,
        vec![resource(
            GROUP,
            "app",
            vec![op("streams.session.timeout.ms", 1, None)],
        )],
        false,
    )
    .await;
    assert_eq!(session_timeout(&node.state, "app").await, 45_000);
    assert_eq!(
        value_of(
            &describe_group(&node.state, "app"),
            "streams.session.timeout.ms"
        ),
        (Some("45000"), 5)
    );
}

#[tokio::test]
async fn preprocessing_validation_and_other_resource_types_answer_as_kafka() {
    let node = running("");
    let answers = alter(
        &node.state,
        vec![
            resource(
                GROUP,
                "dup",
                vec![op("streams.num.standby.replicas", SET, Some("1"))],
            ),
            resource(
                GROUP,
                "keys",
                vec![
                    op("streams.num.standby.replicas", SET, Some("1")),
                    op("streams.num.standby.replicas", SET, Some("2")),
                ],
            ),
            resource(GROUP, "dup", vec![]),
            resource(
                GROUP,
                "nulls",
                vec![
                    op("streams.num.standby.replicas", SET, None),
                    op("streams.session.timeout.ms", APPEND, None),
                    op("streams.heartbeat.interval.ms", 1, None),
                ],
            ),
            resource(77, "x", vec![]),
            resource(
                GROUP,
                "big",
                vec![op("streams.num.standby.replicas", SET, Some("3"))],
            ),
            resource(
                GROUP,
                "",
                vec![op("streams.num.standby.replicas", SET, Some("1"))],
            ),
            resource(
                GROUP,
                "tags",
                vec![op(
                    "streams.rack.aware.assignment.tags",
                    APPEND,
                    Some("zone"),
                )],
            ),
            resource(TOPIC, "t", vec![op("retention.ms", SET, Some("1"))]),
            resource(
                GROUP,
                "ok",
                vec![op("streams.num.standby.replicas", SET, Some("2"))],
            ),
        ],
        false,
    )
    .await;
    let got: Vec<(i16, Option<&str>)> = answers
        .iter()
        .map(|(_, _, code, message)| (*code, message.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (42, Some("Each resource must appear at most once.")),
            (42, Some("Error due to duplicate config keys")),
            (42, Some("Each resource must appear at most once.")),
            (42, Some("Null value not supported for : streams.num.standby.replicas, streams.session.timeout.ms")),
            (42, Some("Unknown resource type 77")),
            (40, Some("streams.num.standby.replicas must be less than or equal to 2")),
            (42, Some("Default group resources are not allowed.")),
            (40, Some("Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST.")),
            (3, Some("The topic 't' does not exist.")),
            (0, None),
        ]
    );
    // Only the valid resource was applied.
    let image = node.state.cluster.snapshot();
    let groups: Vec<&str> = image.group_configs.iter().map(|(g, _)| g).collect();
    assert_eq!(groups, vec!["ok"]);
}

#[tokio::test]
async fn alter_and_describe_ask_for_alter_and_describe_configs_on_the_group() {
    let base = crate::rpc::testing::server();
    let (mut state, _) = ServerState::build(
        Arc::clone(&base.config),
        base.listeners.iter().map(|l| (**l).clone()).collect(),
    );
    state.authorizer = Some(Arc::new(crate::security::DenyAll));
    let answers = alter(
        &state,
        vec![
            resource(
                GROUP,
                "g",
                vec![op("streams.num.standby.replicas", SET, Some("1"))],
            ),
            resource(TOPIC, "t", vec![]),
            resource(4, "7", vec![]),
        ],
        false,
    )
    .await;
    let got: Vec<(i16, Option<&str>)> = answers
        .iter()
        .map(|(_, _, code, message)| (*code, message.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (30, Some("Group authorization failed.")),
            (29, Some("Topic authorization failed.")),
            (31, Some("Cluster authorization failed.")),
        ]
    );
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: GROUP,
            resource_name: "g".into(),
            configuration_keys: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = with_ctx(&state, ListenerKind::Broker, |ctx| {
        crate::rpc::apis::describe_configs::handle(ctx, req, 4)
    });
    assert_eq!(
        (
            resp.results[0].error_code,
            resp.results[0].error_message.as_deref()
        ),
        (30, Some("Group authorization failed."))
    );
}

#[tokio::test]
async fn group_configs_survive_a_restart_with_a_metadata_log_dir() {
    let dir = tempfile::tempdir().unwrap();
    let config = Arc::new(
        Config::parse(
            "test",
            &format!(
                "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\noffsets.topic.num.partitions=3\nmetadata.log.dir={}\n",
                dir.path().display()
            ),
        )
        .unwrap(),
    );
    let start = || {
        let boot = crate::runtime::controller::ControllerBoot::open(&config, 0).unwrap();
        let partitions = Arc::new(
            crate::runtime::partitions::Partitions::open(
                config.log.clone(),
                &boot.topics_image(),
                0,
            )
            .unwrap(),
        );
        let base = crate::rpc::testing::server();
        let (state, background) = ServerState::build_with(
            Arc::clone(&config),
            base.listeners.iter().map(|l| (**l).clone()).collect(),
            boot,
            partitions,
            Arc::new(crate::metrics::Metrics::new([])),
        );
        let (stop, stop_rx) = watch::channel(false);
        let tasks = background.spawn(&stop_rx);
        (state, stop, tasks)
    };
    let (state, stop, tasks) = start();
    let answers = alter(
        &state,
        vec![resource(
            GROUP,
            "app",
            vec![op("streams.session.timeout.ms", SET, Some("60000"))],
        )],
        false,
    )
    .await;
    assert_eq!(answers[0].2, 0);
    let _ = stop.send(true);
    for t in tasks {
        t.await.unwrap();
    }
    drop(state);
    let (state, _stop, _tasks) = start();
    assert_eq!(
        value_of(&describe_group(&state, "app"), "streams.session.timeout.ms"),
        (Some("60000"), 8)
    );
    // The replayed configs reach the shards once the controller task has started.
    let mut timeout = 0;
    for _ in 0..100 {
        timeout = session_timeout(&state, "app").await;
        if timeout == 60_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(timeout, 60_000);
}
