//! Controller snapshots (issue 12 item 7): the metadata log is replaced by a snapshot once
//! `metadata.log.max.record.bytes.between.snapshots` bytes were appended since the last one
//! (or `metadata.log.max.snapshot.interval.ms` passed), so topics created and deleted in a loop
//! do not grow it without bound; a restart from the snapshot plus its tail has the same topics,
//! brokers (which heartbeat on with their epochs, without registering again), features and
//! producer id blocks. The daemon runs in process on 127.0.0.1 port 0; every wait is bounded.

mod streams_support;

use std::path::Path;
use std::time::{Duration, Instant};

use kcoord_client::admin::NewTopic;
use kcoord_client::broker::{
    register_broker, BrokerProperties, RegisteredBroker, RegistrationOptions,
};
use kcoord_client::{Client, ClientConfig, Connection};
use kcoord_metadata::file_log;
use kcoord_wire::messages::{ApiVersionsRequest, BrokerHeartbeatRequest, InitProducerIdRequest};
use streams_support::Node;

const WAIT: Duration = Duration::from_secs(30);

/// A node in process on free loopback ports with one coordinator shard and `extra` config lines.
async fn start(extra: &[String]) -> Node {
    let mut lines = vec!["offsets.topic.num.partitions=1"];
    lines.extend(extra.iter().map(String::as_str));
    streams_support::start(&lines).await
}

async fn admin(node: &Node) -> Client {
    Client::connect(
        &node.broker,
        ClientConfig::new("controller-snapshots").with_request_timeout(WAIT),
    )
    .await
    .unwrap()
}

fn properties(id: i32) -> BrokerProperties {
    BrokerProperties::parse(&format!(
        "node.id={id}
process.roles=broker
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:{port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
num.io.threads=8
log.dirs=/var/lib/kafka-{id}
",
        port = 19_000 + id
    ))
    .unwrap()
}

async fn register(node: &Node, id: i32) -> RegisteredBroker {
    let options = RegistrationOptions {
        client: ClientConfig::new("controller-snapshots").with_request_timeout(WAIT),
        ..Default::default()
    };
    register_broker(&properties(id), &node.controller, options)
        .await
        .unwrap_or_else(|e| panic!("broker {id}: {e}"))
}

/// (error, fenced, caught up) of one heartbeat with the broker's epoch, sending its
/// registration offset as its metadata offset (what a kcoord broker reports).
async fn heartbeat(broker: &RegisteredBroker) -> (i16, bool, bool) {
    match broker
        .heartbeat_once(broker.metadata_offset(), false, false)
        .await
    {
        Ok(r) => (r.error_code, r.is_fenced, r.is_caught_up),
        Err(e) => panic!("heartbeat of broker {}: {e}", broker.broker_id),
    }
}

/// [`heartbeat`] on a new connection to `node`'s controller listener: the broker kept its
/// epoch from before the restart, and does not register again.
async fn heartbeat_to(node: &Node, broker: &RegisteredBroker) -> (i16, bool, bool) {
    let conn = Connection::connect(
        &node.controller,
        ClientConfig::new("controller-snapshots").with_request_timeout(WAIT),
    )
    .await
    .unwrap();
    let request = BrokerHeartbeatRequest {
        broker_id: broker.broker_id,
        broker_epoch: broker.epoch,
        current_metadata_offset: broker.metadata_offset(),
        ..Default::default()
    };
    let r = conn.send_negotiated(request).await.unwrap();
    (r.error_code, r.is_fenced, r.is_caught_up)
}

async fn producer_id(client: &Client) -> i64 {
    let conn = client.bootstrap_connection().await.unwrap();
    let request = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: i32::MAX,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    let response = conn.send_negotiated(request).await.unwrap();
    assert_eq!(response.error_code, 0);
    assert!(response.producer_id >= 0);
    response.producer_id
}

/// (finalized features, their epoch) as ApiVersions v3 answers them.
async fn features(client: &Client) -> (Vec<(String, i16)>, i64) {
    let conn = client.bootstrap_connection().await.unwrap();
    let response = conn.send(ApiVersionsRequest::default(), 3).await.unwrap();
    let mut finalized: Vec<(String, i16)> = response
        .finalized_features
        .iter()
        .map(|f| (f.name.clone(), f.max_version_level))
        .collect();
    finalized.sort();
    (finalized, response.finalized_features_epoch)
}

/// (name, id, partitions) of every topic Metadata lists.
async fn topics(client: &Client) -> Vec<(String, String, usize)> {
    let metadata = client.metadata(None).await.unwrap();
    let mut topics: Vec<(String, String, usize)> = metadata
        .topics
        .iter()
        .map(|t| {
            (
                t.name.clone().unwrap_or_default(),
                t.topic_id.to_string(),
                t.partitions.len(),
            )
        })
        .collect();
    topics.sort();
    topics
}

fn file_len(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(file_log::FILE_NAME))
        .map(|m| m.len())
        .unwrap_or(0)
}

async fn create(client: &Client, topics: &[NewTopic]) {
    for r in client.create_topics(topics, false).await.unwrap() {
        r.result
            .unwrap_or_else(|e| panic!("create {}: {e}", r.name));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_of_many_changes_is_snapshotted_and_restarts_with_the_same_state() {
    const THRESHOLD: u64 = 16 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let config = vec![
        format!("metadata.log.dir={}", dir.path().display()),
        format!("metadata.log.max.record.bytes.between.snapshots={THRESHOLD}"),
        // Long enough that no broker is fenced while the test churns.
        "broker.session.timeout.ms=600000".to_owned(),
    ];
    let node = start(&config).await;
    let client = admin(&node).await;

    // Broker 2 heartbeats and is unfenced; broker 3 registers and stays fenced.
    let two = register(&node, 2).await;
    assert_eq!(heartbeat(&two).await, (0, false, true));
    let three = register(&node, 3).await;
    let first_ids = [producer_id(&client).await, producer_id(&client).await];
    create(
        &client,
        &[
            NewTopic::new("kept", 3, 1).config("retention.ms", "1000"),
            NewTopic::new("also-kept", 1, 1),
        ],
    )
    .await;

    // 2,000 topics created and deleted, 20 per request.
    let mut largest = 0;
    for round in 0..100 {
        let names: Vec<String> = (0..20).map(|i| format!("churn-{round}-{i}")).collect();
        let batch: Vec<NewTopic> = names.iter().map(|n| NewTopic::new(n, 1, 1)).collect();
        create(&client, &batch).await;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        for r in client.delete_topics(&refs).await.unwrap() {
            r.result
                .unwrap_or_else(|e| panic!("delete {}: {e}", r.name));
        }
        largest = largest.max(file_len(dir.path()));
    }
    let before = (topics(&client).await, features(&client).await);
    assert_eq!(
        before.0.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        vec!["also-kept", "kept"]
    );
    // Without snapshots the file would hold every record of the 2,000 topics (hundreds of KiB).
    let len = file_len(dir.path());
    assert!(
        largest < 4 * THRESHOLD && len < 4 * THRESHOLD,
        "the log stays small: largest {largest}, now {len}"
    );
    assert_eq!(heartbeat(&two).await, (0, false, true), "after snapshots");
    drop(client);
    node.stop().await;

    // The file is a snapshot plus a tail: few records, offsets going on from the history.
    let loaded = file_log::open(dir.path()).unwrap();
    assert!(
        loaded.log.len() < 400,
        "{} records in the file",
        loaded.log.len()
    );
    assert!(
        loaded.log.next_offset() > 4_000,
        "{}",
        loaded.log.next_offset()
    );
    drop(loaded);

    let node = start(&config).await;
    let client = admin(&node).await;
    assert_eq!((topics(&client).await, features(&client).await), before);
    // Broker 2 heartbeats on with its epoch, unfenced and caught up, without registering again;
    // fenced broker 3 is caught up with its registration offset and is unfenced.
    assert_eq!(heartbeat_to(&node, &two).await, (0, false, true));
    assert_eq!(heartbeat_to(&node, &three).await, (0, false, true));
    let described = client.describe_brokers(true).await.unwrap();
    let mut brokers: Vec<(i32, bool)> =
        described.brokers.iter().map(|b| (b.id, b.fenced)).collect();
    brokers.sort();
    assert_eq!(brokers, vec![(1, false), (2, false), (3, false)]);
    // No producer id handed out before is handed out again.
    let after = producer_id(&client).await;
    assert!(
        first_ids.iter().all(|id| after > *id),
        "{after} after {first_ids:?}"
    );
    drop(client);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_interval_snapshots_a_log_that_grew_less_than_the_byte_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let config = vec![
        format!("metadata.log.dir={}", dir.path().display()),
        "metadata.log.max.snapshot.interval.ms=300".to_owned(),
    ];
    let node = start(&config).await;
    let client = admin(&node).await;
    for round in 0..5 {
        let name = format!("short-lived-{round}");
        create(&client, &[NewTopic::new(&name, 4, 1)]).await;
        client.delete_topics(&[name.as_str()]).await.unwrap();
    }
    let grown = file_len(dir.path());
    // One FeatureLevelRecord is all the snapshot holds.
    let deadline = Instant::now() + WAIT;
    while file_len(dir.path()) >= grown {
        assert!(
            Instant::now() < deadline,
            "no snapshot within {WAIT:?}: {grown} bytes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(topics(&client).await.is_empty());
    drop(client);
    node.stop().await;
    let loaded = file_log::open(dir.path()).unwrap();
    // The features are all the snapshot holds.
    assert!(loaded.log.len() <= 3, "{:?}", loaded.log.records());
}
