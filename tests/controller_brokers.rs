//! The controller role end to end (issue 6, KIP-1326): brokers register with the real daemon
//! (started in-process on 127.0.0.1 port 0) through the client library's broker side, with
//! static configs that include secrets; one re-registers with a new incarnation; the daemon
//! restarts from its `metadata.log.dir` and still answers every static config; an older
//! `metadata.version` keeps none; old RPC versions are still served; Metadata, DescribeCluster
//! and librdkafka see the registered brokers.
//!
//! Every wait is bounded (`WAIT`); the sessions use a short `broker.session.timeout.ms`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kcoord_client::admin::ConfigSource;
use kcoord_client::broker::{
    register_broker, BrokerError, BrokerProperties, RegisteredBroker, RegistrationOptions,
};
use kcoord_client::{Client, ClientConfig};
use kcoord_metadata::file_log;
use kcoord_metadata::Record;
use kcoord_wire::messages::{BrokerHeartbeatRequest, DescribeClusterRequest};
use kcoord_wire::ErrorCode;

const WAIT: Duration = Duration::from_secs(20);
/// Short enough to wait out in a test, long enough for 100 ms heartbeats on a busy machine.
const SESSION_MS: u64 = 1_500;

struct Node {
    handle: kcoord_server::ServerHandle,
    broker: String,
    controller: String,
}

async fn start(extra: &[String]) -> Node {
    let mut text = String::from("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=1\n");
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    let config =
        kcoord_server::Config::parse("controller-e2e", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Node {
        broker: handle.broker_addr().expect("broker listener").to_string(),
        controller: handle
            .controller_addr()
            .expect("controller listener")
            .to_string(),
        handle,
    }
}

impl Node {
    async fn stop(self) {
        tokio::time::timeout(WAIT, self.handle.shutdown())
            .await
            .expect("the node stops in time");
    }

    async fn client(&self) -> Client {
        Client::connect(
            &self.broker,
            ClientConfig::new("controller-e2e").with_request_timeout(WAIT),
        )
        .await
        .unwrap()
    }
}

/// A broker's server.properties: ordinary settings, one null-valued default, and secrets.
fn properties(id: i32, io_threads: u32) -> BrokerProperties {
    BrokerProperties::parse(&format!(
        "node.id={id}
process.roles=broker
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
broker.rack=rack-{id}
num.io.threads={io_threads}
log.dirs=/var/lib/kafka-{id}
broker.heartbeat.interval.ms=100
ssl.keystore.password=hunter2-{id}
listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password=\"hunter3\";
my.plugin.secret.token=hunter4
",
        port = 19_000 + id,
        internal = 29_000 + id
    ))
    .unwrap()
}

fn options() -> RegistrationOptions {
    RegistrationOptions {
        client: ClientConfig::new("controller-e2e").with_request_timeout(WAIT),
        ..Default::default()
    }
}

async fn register(node: &Node, id: i32, io_threads: u32) -> Result<RegisteredBroker, BrokerError> {
    register_broker(&properties(id, io_threads), &node.controller, options()).await
}

/// What the broker sent, as DescribeConfigs should give it back.
fn sent(broker: &RegisteredBroker) -> BTreeMap<String, Option<String>> {
    broker
        .static_configs_sent()
        .iter()
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect()
}

async fn described(client: &Client, id: i32) -> BTreeMap<String, Option<String>> {
    let entries = client
        .describe_broker_configs(id)
        .await
        .unwrap_or_else(|e| panic!("broker {id}: {e}"));
    for e in &entries {
        assert_eq!(
            (e.source, e.read_only, e.sensitive),
            (ConfigSource::StaticBrokerConfig, true, false),
            "{}",
            e.name
        );
    }
    entries.into_iter().map(|e| (e.name, e.value)).collect()
}

fn assert_no_secrets(configs: &BTreeMap<String, Option<String>>) {
    for (name, value) in configs {
        let value = value.as_deref().unwrap_or("");
        assert!(!value.contains("hunter"), "{name}={value}");
        assert!(
            !name.contains("password") && !name.contains("jaas") && !name.contains("secret"),
            "{name}"
        );
    }
}

/// Polls `check` until it holds (bounded by `WAIT`).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// (id, port, rack, fenced) of every broker DescribeCluster v2 lists, fenced ones included.
async fn cluster(client: &Client) -> Vec<(i32, i32, Option<String>, bool)> {
    let d = client.describe_brokers(true).await.unwrap();
    d.brokers
        .into_iter()
        .map(|b| (b.id, b.port, b.rack, b.fenced))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r70_r71_r73_r75_three_brokers_a_new_incarnation_and_a_restart_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = vec![
        format!("metadata.log.dir={}", dir.path().display()),
        format!("broker.session.timeout.ms={SESSION_MS}"),
    ];
    let node = start(&config).await;

    // Three brokers register at v6 with static configs, secrets left out by the sender (R71).
    let mut handles = BTreeMap::new();
    let mut expected = BTreeMap::new();
    for id in [2, 3, 4] {
        let broker = register(&node, id, 8)
            .await
            .unwrap_or_else(|e| panic!("broker {id}: {e}"));
        assert_eq!(broker.version, 6, "R70: v6 is negotiated");
        assert!(
            sent(&broker).len() > 40,
            "the file's keys plus Kafka's defaults"
        );
        assert_eq!(
            sent(&broker).get("broker.rack"),
            Some(&Some(format!("rack-{id}")))
        );
        assert_eq!(
            sent(&broker).get("advertised.listeners"),
            Some(&None),
            "a null default travels as null"
        );
        assert_no_secrets(&sent(&broker));
        expected.insert(id, sent(&broker));
        let handle = broker.start_heartbeats();
        handle.wait_unfenced(WAIT).await.unwrap();
        handles.insert(id, handle);
    }
    let client = node.client().await;
    for id in [2, 3, 4] {
        let configs = described(&client, id).await;
        assert_eq!(configs, expected[&id], "R73: broker {id}'s configs as sent");
        assert_no_secrets(&configs);
    }

    // Broker 3 restarts with a new incarnation while its session lives: refused.
    let refused = register(&node, 3, 12).await.unwrap_err();
    assert!(
        matches!(&refused, BrokerError::Client(e) if e.error_code() == Some(ErrorCode::DUPLICATE_BROKER_REGISTRATION)),
        "{refused}"
    );
    // Once its old process is gone and the session expired, the new incarnation is accepted.
    handles.remove(&3).unwrap().kill();
    eventually("broker 3's session to expire and fence it", || async {
        cluster(&client)
            .await
            .iter()
            .any(|(id, _, _, fenced)| *id == 3 && *fenced)
    })
    .await;
    let again = register(&node, 3, 12)
        .await
        .unwrap_or_else(|e| panic!("re-registration: {e}"));
    assert_eq!(
        again
            .request
            .static_configs
            .iter()
            .find(|c| c.name == "num.io.threads")
            .and_then(|c| c.value.clone())
            .as_deref(),
        Some("12")
    );
    expected.insert(3, sent(&again));
    let handle = again.start_heartbeats();
    handle.wait_unfenced(WAIT).await.unwrap();
    handles.insert(3, handle);
    assert_eq!(
        described(&client, 3).await,
        expected[&3],
        "the new incarnation's configs replace the old ones"
    );
    client
        .create_topics(
            &[kcoord_client::admin::NewTopic::new("orders", 3, 1)],
            false,
        )
        .await
        .unwrap()[0]
        .result
        .clone()
        .unwrap();

    // Metadata lists this node and the three unfenced brokers, at their PLAINTEXT endpoints.
    let metadata = client.metadata(None).await.unwrap();
    let brokers: Vec<(i32, i32, Option<String>)> = metadata
        .brokers
        .iter()
        .map(|b| (b.node_id, b.port, b.rack.clone()))
        .collect();
    let own_port: i32 = node.broker.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(
        brokers,
        vec![
            (1, own_port, None),
            (2, 19_002, Some("rack-2".into())),
            (3, 19_003, Some("rack-3".into())),
            (4, 19_004, Some("rack-4".into()))
        ]
    );

    // Restart from the log (R75): same registrations, same static configs, same topics.
    drop(handles);
    node.stop().await;
    let restarted = start(&config).await;
    let client = restarted.client().await;
    for id in [2, 3, 4] {
        assert_eq!(
            described(&client, id).await,
            expected[&id],
            "R75: broker {id} after the restart"
        );
    }
    let topics: Vec<String> = client
        .list_topics(true)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(topics, vec!["orders"]);
    // A restarted controller gives the unfenced brokers a fresh session; nobody heartbeats
    // now, so they are fenced once it runs out.
    eventually("the silent brokers to be fenced", || async {
        cluster(&client)
            .await
            .iter()
            .filter(|(id, ..)| *id != 1)
            .all(|(.., fenced)| *fenced)
    })
    .await;
    restarted.stop().await;
}

/// The RegisterBrokerRecords of a stopped node's log, as (version, static config count).
fn register_records(dir: &Path) -> Vec<(i16, usize)> {
    let loaded = file_log::open(dir).unwrap();
    loaded
        .log
        .records()
        .iter()
        .filter(|r| r.record_type == 0 && r.key.is_none())
        .map(|r| match Record::decode(r).unwrap() {
            Record::RegisterBroker(record) => (r.version, record.static_configs.len()),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r74_at_metadata_version_4_4_iv2_no_static_configs_are_kept_and_the_record_is_v4() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(&[
        format!("metadata.log.dir={}", dir.path().display()),
        "metadata.version=4.4-IV2".into(),
    ])
    .await;
    let broker = register(&node, 2, 8).await.unwrap();
    assert_eq!(broker.version, 6);
    assert!(
        !broker.static_configs_sent().is_empty(),
        "the broker sends them; the controller drops them"
    );
    let client = node.client().await;
    assert!(described(&client, 2).await.is_empty());
    let versions = client.bootstrap().server_versions().unwrap();
    let finalized: Vec<(String, i16)> = versions
        .response()
        .finalized_features
        .iter()
        .map(|f| (f.name.clone(), f.max_version_level))
        .collect();
    assert_eq!(
        finalized,
        vec![
            ("metadata.version".to_string(), 33),
            ("streams.version".to_string(), 1),
            ("group.version".to_string(), 1),
            ("transaction.version".to_string(), 2)
        ]
    );
    node.stop().await;
    assert_eq!(register_records(dir.path()), vec![(4, 0)]);

    // The same registration at the default level keeps them in a v5 record.
    let dir = tempfile::tempdir().unwrap();
    let node = start(&[format!("metadata.log.dir={}", dir.path().display())]).await;
    let broker = register(&node, 2, 8).await.unwrap();
    assert_eq!(described(&node.client().await, 2).await, sent(&broker));
    node.stop().await;
    assert_eq!(
        register_records(dir.path()),
        vec![(5, broker.static_configs_sent().len())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r76_old_registration_and_heartbeat_versions_are_still_served() {
    // Below 3.7-IV2 LogDirs are not required, so every version can register.
    let node = start(&["metadata.version=3.6-IV2".into()]).await;
    for version in 0..=6i16 {
        let id = 10 + i32::from(version);
        let options = RegistrationOptions {
            max_registration_version: Some(version),
            ..options()
        };
        let broker = register_broker(&properties(id, 8), &node.controller, options)
            .await
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(broker.version, version);
        assert_eq!(
            broker.static_configs_sent().is_empty(),
            version < 6,
            "R72: StaticConfigs only at v6"
        );
        // 3.6-IV2 cannot keep them either.
        assert!(described(&node.client().await, id).await.is_empty());
        for hb_version in 0..=2i16 {
            let request = BrokerHeartbeatRequest {
                broker_id: id,
                broker_epoch: broker.epoch,
                current_metadata_offset: broker.metadata_offset(),
                ..Default::default()
            };
            let response = broker.connection().send(request, hb_version).await.unwrap();
            assert_eq!(
                (response.error_code, response.is_fenced),
                (0, false),
                "registration v{version}, heartbeat v{hb_version}"
            );
        }
    }
    node.stop().await;

    // At the latest level, v0 and v1 (no LogDirs) get Kafka's INVALID_REGISTRATION; v2+ work.
    let node = start(&[]).await;
    for version in 0..=6i16 {
        let options = RegistrationOptions {
            max_registration_version: Some(version),
            ..options()
        };
        let outcome = register_broker(
            &properties(20 + i32::from(version), 8),
            &node.controller,
            options,
        )
        .await;
        match outcome {
            Ok(_) => assert!(version >= 2, "v{version}"),
            Err(BrokerError::Client(e)) => {
                assert!(version < 2, "v{version}: {e}");
                assert_eq!(e.error_code(), Some(ErrorCode::INVALID_REGISTRATION));
            }
            Err(e) => panic!("v{version}: {e}"),
        }
    }
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_cluster_lists_fenced_brokers_only_when_asked_and_controllers_apart() {
    let node = start(&[]).await;
    // Registered but never heartbeating: fenced.
    register(&node, 5, 8).await.unwrap();
    let unfenced = register(&node, 6, 8).await.unwrap().start_heartbeats();
    unfenced.wait_unfenced(WAIT).await.unwrap();
    let client = node.client().await;
    let conn = client.bootstrap();
    let ids =
        |brokers: &[kcoord_wire::messages::describe_cluster_response::DescribeClusterBroker]| {
            brokers
                .iter()
                .map(|b| (b.broker_id, b.is_fenced))
                .collect::<Vec<_>>()
        };
    let plain = conn
        .send(DescribeClusterRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(ids(&plain.brokers), vec![(1, false), (6, false)]);
    let all = conn
        .send(
            DescribeClusterRequest {
                include_fenced_brokers: true,
                ..Default::default()
            },
            2,
        )
        .await
        .unwrap();
    assert_eq!(ids(&all.brokers), vec![(1, false), (5, true), (6, false)]);
    // The controller endpoint names the controllers: this node only.
    let controller =
        kcoord_client::Connection::connect(&node.controller, ClientConfig::new("controller-e2e"))
            .await
            .unwrap();
    let request = DescribeClusterRequest {
        endpoint_type: 2,
        include_fenced_brokers: true,
        ..Default::default()
    };
    let controllers = controller.send(request, 2).await.unwrap();
    assert_eq!(ids(&controllers.brokers), vec![(1, false)]);
    // The broker listener never offers the broker-to-controller RPCs; the controller listener
    // offers exactly the controller APIs (those brokers and admin tools use, the SASL, ACL and
    // SCRAM-credential ones).
    let broker_apis: Vec<i16> = conn
        .server_versions()
        .unwrap()
        .ranges()
        .map(|(k, _)| k)
        .collect();
    assert!(
        !broker_apis.contains(&62) && !broker_apis.contains(&63),
        "{broker_apis:?}"
    );
    let controller_apis: Vec<i16> = controller
        .negotiate()
        .await
        .unwrap()
        .ranges()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        controller_apis,
        vec![17, 18, 19, 29, 30, 31, 36, 37, 49, 51, 60, 62, 63]
    );
    drop(unfenced);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_metadata_still_works_with_registered_brokers() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let node = start(&[]).await;
    let mut handles = Vec::new();
    for id in [2, 3] {
        let handle = register(&node, id, 8).await.unwrap().start_heartbeats();
        handle.wait_unfenced(WAIT).await.unwrap();
        handles.push(handle);
    }
    let client = node.client().await;
    client
        .create_topics(
            &[kcoord_client::admin::NewTopic::new("orders", 2, 1)],
            false,
        )
        .await
        .unwrap()[0]
        .result
        .clone()
        .unwrap();
    let bootstrap = node.broker.clone();
    let seen = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("group.id", "controller-e2e")
            .create()
            .expect("a librdkafka consumer");
        let metadata = consumer
            .fetch_metadata(None, Duration::from_secs(15))
            .expect("librdkafka fetches metadata");
        let mut brokers: Vec<(i32, i32)> = metadata
            .brokers()
            .iter()
            .map(|b| (b.id(), b.port()))
            .collect();
        brokers.sort();
        let topics: Vec<(String, usize)> = metadata
            .topics()
            .iter()
            .map(|t| (t.name().to_string(), t.partitions().len()))
            .collect();
        (brokers, topics)
    })
    .await
    .unwrap();
    let own_port: i32 = node.broker.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(seen.0, vec![(1, own_port), (2, 19_002), (3, 19_003)]);
    assert_eq!(seen.1, vec![("orders".to_string(), 2)]);
    drop(handles);
    node.stop().await;
}
