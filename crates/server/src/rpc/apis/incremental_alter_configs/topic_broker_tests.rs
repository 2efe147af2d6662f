use std::sync::Arc;

use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kcoord_wire::messages::CreateTopicsRequest;
use tokio::sync::watch;

use super::*;
use crate::config::{Config, ListenerKind};
use crate::rpc::apis::alter_configs::tests::described;
use crate::rpc::apis::describe_configs::{
    DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG,
};
use crate::rpc::testing::{running, Ctx};
use crate::state::ServerState;
use kcoord_controller::group_configs::{APPEND, SET, SUBTRACT};

fn resource(
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
) -> AlterConfigsResource {
    AlterConfigsResource {
        resource_type,
        resource_name: name.into(),
        configs: ops
            .iter()
            .map(|(k, op, v)| AlterableConfig {
                name: (*k).into(),
                config_operation: *op,
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
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let req = IncrementalAlterConfigsRequest {
        resources,
        validate_only,
        ..Default::default()
    };
    let c = Ctx::new(state, ListenerKind::Broker);
    handle(&c.ctx(state), req, 1)
        .await
        .responses
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

fn partition_config(state: &ServerState, topic: &str) -> kcoord_storage::LogConfig {
    let id = state.topics.snapshot().get(topic).unwrap().id;
    state.partitions.get(id, 0).unwrap().config()
}

#[tokio::test]
async fn topic_operations_change_the_live_partition_and_validate_only_changes_nothing() {
    let r = running("");
    create_topic(&r.state, "t").await;
    let ops = [
        ("retention.ms", SET, Some("1000")),
        ("cleanup.policy", APPEND, Some("compact")),
    ];
    assert_eq!(
        alter(&r.state, vec![resource(TOPIC, "t", &ops)], true).await,
        vec![(0, None)]
    );
    assert!(r
        .state
        .topics
        .snapshot()
        .get("t")
        .unwrap()
        .configs
        .is_empty());
    assert_eq!(
        alter(&r.state, vec![resource(TOPIC, "t", &ops)], false).await,
        vec![(0, None)]
    );
    let c = partition_config(&r.state, "t");
    assert_eq!(
        (c.retention_ms, c.cleanup_delete, c.cleanup_compact),
        (1000, true, true)
    );
    let ops = [
        ("cleanup.policy", SUBTRACT, Some("delete")),
        ("max.message.bytes", SET, Some("2000")),
    ];
    assert_eq!(
        alter(&r.state, vec![resource(TOPIC, "t", &ops)], false).await,
        vec![(0, None)]
    );
    let c = partition_config(&r.state, "t");
    assert_eq!(
        (c.cleanup_delete, c.cleanup_compact, c.max_message_bytes),
        (false, true, 2000)
    );
    let bad = [("segment.bytes", SET, Some("10"))];
    assert_eq!(
        alter(&r.state, vec![resource(TOPIC, "t", &bad), resource(BROKER, "", &[("log.retention.ms", APPEND, Some("1"))])], false).await,
        vec![
            (40, Some("Invalid value 10 for configuration segment.bytes: Value must be at least 1048576".into())),
            (40, Some("Config value append is not allowed for config key: log.retention.ms".into())),
        ]
    );
}

#[tokio::test]
async fn topic_and_broker_configs_survive_a_restart_with_a_metadata_log_dir() {
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
    create_topic(&state, "t").await;
    let answers = alter(
        &state,
        vec![
            resource(TOPIC, "t", &[("retention.ms", SET, Some("1000"))]),
            resource(BROKER, "", &[("log.segment.bytes", SET, Some("2097152"))]),
            resource(BROKER, "1", &[("message.max.bytes", SET, Some("3000"))]),
        ],
        false,
    )
    .await;
    assert_eq!(answers, vec![(0, None), (0, None), (0, None)]);
    let _ = stop.send(true);
    for t in tasks {
        t.await.unwrap();
    }
    drop(state);
    let (state, _stop, _tasks) = start();
    assert_eq!(
        described(&state, TOPIC, "t", "retention.ms").1,
        DYNAMIC_TOPIC_CONFIG
    );
    assert_eq!(
        described(&state, TOPIC, "t", "segment.bytes").1,
        DYNAMIC_DEFAULT_BROKER_CONFIG
    );
    assert_eq!(
        described(&state, BROKER, "1", "message.max.bytes"),
        (
            Some("3000".into()),
            DYNAMIC_BROKER_CONFIG,
            vec![DYNAMIC_BROKER_CONFIG, 5]
        )
    );
    // The replayed broker configs reach the partitions once the controller task has started.
    let mut c = partition_config(&state, "t");
    for _ in 0..100 {
        if c.max_message_bytes == 3000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        c = partition_config(&state, "t");
    }
    assert_eq!(
        (c.retention_ms, c.segment_bytes, c.max_message_bytes),
        (1000, 2_097_152, 3000)
    );
}
