//! Kafka's client quotas over the wire: AlterClientQuotas and DescribeClientQuotas against the
//! real daemon (in process, on free loopback ports), the quotas kept in the metadata log across
//! a restart, Kafka's refusals, and the quotas enforced: a producer or consumer over its byte
//! rate gets the throttle Kafka computes from the bytes and the limit, and its connection is
//! muted for it. Every wait is bounded.

mod common;
mod streams_support;

use std::time::{Duration, Instant};

use kcoord_client::Connection;
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_wire::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kcoord_wire::messages::describe_client_quotas_request::ComponentData;
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::{
    AlterClientQuotasRequest, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
    FetchRequest, ProduceRequest,
};
use streams_support::Node;

async fn start(dir: &std::path::Path) -> Node {
    let log_dir = format!("metadata.log.dir={}", dir.display());
    streams_support::start(&["offsets.topic.num.partitions=1", &log_dir]).await
}

fn entry(parts: &[(&str, Option<&str>)], ops: &[(&str, f64, bool)]) -> EntryData {
    EntryData {
        entity: parts
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: (*t).into(),
                entity_name: n.map(str::to_owned),
                ..Default::default()
            })
            .collect(),
        ops: ops
            .iter()
            .map(|(key, value, remove)| OpData {
                key: (*key).into(),
                value: *value,
                remove: *remove,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Alters and returns each entry's (error code, message).
async fn alter(
    conn: &Connection,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let request = AlterClientQuotasRequest {
        entries,
        validate_only,
        ..Default::default()
    };
    let response = conn.send(request, 1).await.unwrap();
    response
        .entries
        .into_iter()
        .map(|e| (e.error_code, e.error_message))
        .collect()
}

async fn describe(
    conn: &Connection,
    components: Vec<ComponentData>,
    strict: bool,
) -> DescribeClientQuotasResponse {
    let request = DescribeClientQuotasRequest {
        components,
        strict,
        ..Default::default()
    };
    conn.send(request, 1).await.unwrap()
}

/// Every entity described, as `type=name,...: key=value,...`.
fn listed(response: &DescribeClientQuotasResponse) -> Vec<String> {
    response
        .entries
        .iter()
        .flatten()
        .map(|e| {
            let entity: Vec<String> = e
                .entity
                .iter()
                .map(|p| {
                    format!(
                        "{}={}",
                        p.entity_type,
                        p.entity_name.as_deref().unwrap_or("<default>")
                    )
                })
                .collect();
            let values: Vec<String> = e
                .values
                .iter()
                .map(|v| format!("{}={}", v.key, v.value))
                .collect();
            format!("{}: {}", entity.join(","), values.join(","))
        })
        .collect()
}

fn user_component(match_type: i8, name: Option<&str>) -> ComponentData {
    ComponentData {
        entity_type: "user".into(),
        match_type,
        r#match: name.map(str::to_owned),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_set_over_the_wire_are_described_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let conn = node.connect().await;
    let results = alter(
        &conn,
        vec![
            entry(
                &[("user", Some("alice"))],
                &[
                    ("producer_byte_rate", 1024.0, false),
                    ("request_percentage", 50.0, false),
                ],
            ),
            entry(
                &[("user", Some("alice")), ("client-id", Some("app"))],
                &[("consumer_byte_rate", 4096.0, false)],
            ),
            entry(&[("user", None)], &[("producer_byte_rate", 2048.0, false)]),
            entry(
                &[("ip", Some("127.0.0.2"))],
                &[("connection_creation_rate", 10.0, false)],
            ),
        ],
        false,
    )
    .await;
    assert_eq!(results, vec![(0, None); 4]);
    // validateOnly decides without writing.
    let checked = alter(
        &conn,
        vec![entry(
            &[("client-id", Some("dry"))],
            &[("producer_byte_rate", 1.0, false)],
        )],
        true,
    )
    .await;
    assert_eq!(checked, vec![(0, None)]);
    // A removal takes one key away.
    alter(
        &conn,
        vec![entry(
            &[("user", Some("alice"))],
            &[("request_percentage", 0.0, true)],
        )],
        false,
    )
    .await;

    let expected = vec![
        "client-id=app,user=alice: consumer_byte_rate=4096".to_owned(),
        "user=alice: producer_byte_rate=1024".to_owned(),
    ];
    let exact = describe(&conn, vec![user_component(0, Some("alice"))], false).await;
    assert_eq!((exact.error_code, listed(&exact)), (0, expected.clone()));
    let everything = describe(&conn, vec![], false).await;
    assert_eq!(listed(&everything).len(), 4, "{:?}", listed(&everything));
    drop(conn);
    node.stop().await;

    let node = start(dir.path()).await;
    let conn = node.connect().await;
    let exact = describe(&conn, vec![user_component(0, Some("alice"))], false).await;
    assert_eq!(listed(&exact), expected, "after the restart");
    let default = describe(&conn, vec![user_component(1, None)], true).await;
    assert_eq!(
        listed(&default),
        vec!["user=<default>: producer_byte_rate=2048".to_owned()]
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_alterations_and_filters_get_kafkas_errors() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let conn = node.connect().await;
    let results = alter(
        &conn,
        vec![
            entry(
                &[("user", Some("bob"))],
                &[("producer_byte_rate", -1.0, false)],
            ),
            entry(
                &[("client-id", Some("c"))],
                &[("producer_byte_rate", 10.5, false)],
            ),
            entry(
                &[("ip", Some("127.0.0.1")), ("user", Some("bob"))],
                &[("connection_creation_rate", 1.0, false)],
            ),
            entry(
                &[("user", Some("carol"))],
                &[("bytes_per_fortnight", 1.0, false)],
            ),
        ],
        false,
    )
    .await;
    let invalid = 42;
    assert_eq!(
        results,
        vec![
            (invalid, Some("Quota producer_byte_rate must be greater than 0".to_owned())),
            (invalid, Some("producer_byte_rate cannot be a fractional value.".to_owned())),
            (invalid, Some("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId".to_owned())),
            (invalid, Some("Invalid configuration key bytes_per_fortnight".to_owned())),
        ]
    );
    assert!(
        listed(&describe(&conn, vec![], false).await).is_empty(),
        "nothing was written"
    );
    let refused = describe(&conn, vec![user_component(0, None)], false).await;
    assert_eq!(
        (
            refused.error_code,
            refused.error_message.as_deref(),
            refused.entries.is_none()
        ),
        (
            invalid,
            Some("Request specified MATCH_TYPE_EXACT, but set match string to null."),
            true
        )
    );
    node.stop().await;
}

/// A connection whose requests carry `client_id`.
async fn connect_as(node: &Node, client_id: &str) -> Connection {
    let config = kcoord_client::ClientConfig::new(client_id)
        .with_request_timeout(WAIT)
        .with_connect_timeout(WAIT);
    Connection::connect(&node.broker, config).await.unwrap()
}

const WAIT: Duration = Duration::from_secs(30);
const TOPIC: &str = "metered";

fn produce_request(value_bytes: usize) -> ProduceRequest {
    let mut batch = BatchBuilder::new(BatchOptions::default());
    batch
        .push(0, Some(b"k"), Some(&vec![7u8; value_bytes]), &[])
        .unwrap();
    ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: TOPIC.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.build().unwrap().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Kafka's throttle for `bytes` recorded at once by a fresh sensor with the default windows
/// (11 of 1 s): the rate is read over the 10 s the samples are padded to, and the throttle is
/// how far over the limit that is, times those 10 s (`QuotaUtils.throttleTime`).
fn kafkas_first_throttle_ms(bytes: usize, limit: f64) -> i32 {
    let rate = bytes as f64 / 10.0;
    ((rate - limit) / limit * 10_000.0).round() as i32
}

/// Body bytes of `request` at `version`: what Kafka's producer byte rate counts.
fn body_size<R: kcoord_wire::Encodable>(request: &R, version: i16) -> usize {
    let mut buf = bytes::BytesMut::new();
    request.encode(&mut buf, version).unwrap();
    buf.len()
}

async fn set_quota(conn: &Connection, parts: &[(&str, Option<&str>)], key: &str, value: f64) {
    let results = alter(conn, vec![entry(parts, &[(key, value, false)])], false).await;
    assert_eq!(results, vec![(0, None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_over_its_byte_rate_is_throttled_by_kafkas_amount_muted_then_recovers() {
    const LIMIT: f64 = 10_000.0;
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let admin = node.connect().await;
    streams_support::create_topics(&admin, &[(TOPIC, 1)]).await;
    set_quota(
        &admin,
        &[("client-id", Some("noisy"))],
        "producer_byte_rate",
        LIMIT,
    )
    .await;
    let noisy = connect_as(&node, "noisy").await;

    // About 11 s worth of the limit at once: read as 1.1 times the limit over 10 s.
    let burst = produce_request(110_000);
    let expected = kafkas_first_throttle_ms(body_size(&burst, 12), LIMIT);
    assert!((900..1200).contains(&expected), "{expected}");
    let first = Instant::now();
    let answered = noisy.send(burst, 12).await.unwrap();
    let throttled_at = Instant::now();
    assert_eq!(answered.responses[0].partition_responses[0].error_code, 0);
    let throttle = answered.throttle_time_ms;
    assert!(
        (throttle - expected).abs() <= expected / 100,
        "throttle_time_ms {throttle}, Kafka's {expected}"
    );

    // The connection is muted for that long: the next request waits for it.
    let next = noisy.send(produce_request(10), 12).await.unwrap();
    let waited = throttled_at.elapsed();
    assert!(
        waited >= Duration::from_millis(u64::try_from(throttle * 9 / 10).unwrap()),
        "answered {waited:?} after a throttle of {throttle} ms"
    );
    // Within the ten padded windows the burst is still over the limit: throttled again.
    assert!(next.throttle_time_ms > 0);

    // A client without a quota is never throttled.
    let quiet = connect_as(&node, "quiet").await;
    assert_eq!(
        quiet
            .send(produce_request(108_000), 12)
            .await
            .unwrap()
            .throttle_time_ms,
        0
    );

    // Once the burst's sample has left the 11 windows, the producer is within its quota again.
    tokio::time::sleep_until((first + Duration::from_millis(11_500)).into()).await;
    let recovered = noisy.send(produce_request(10), 12).await.unwrap();
    assert_eq!(recovered.throttle_time_ms, 0);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_over_its_byte_rate_gets_kafkas_throttle_and_no_records() {
    const LIMIT: f64 = 10_000.0;
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let admin = node.connect().await;
    streams_support::create_topics(&admin, &[(TOPIC, 1)]).await;
    set_quota(
        &admin,
        &[("user", None), ("client-id", Some("reader"))],
        "consumer_byte_rate",
        LIMIT,
    )
    .await;
    let produced = admin.send(produce_request(108_000), 12).await.unwrap();
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);

    let reader = connect_as(&node, "reader").await;
    let fetch = FetchRequest {
        replica_id: -1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: TOPIC.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // What the fetch would send: the one stored batch.
    let batch_bytes = admin.send(fetch.clone(), 12).await.unwrap().responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |r| r.len());
    let expected = kafkas_first_throttle_ms(batch_bytes, LIMIT);
    let throttled = reader.send(fetch, 12).await.unwrap();
    assert!(
        (throttled.throttle_time_ms - expected).abs() <= expected / 100,
        "throttle_time_ms {}, Kafka's {expected}",
        throttled.throttle_time_ms
    );
    // Kafka's throttled fetch answer carries no partitions.
    assert!(throttled.responses.is_empty());
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_an_addresss_creation_rate_are_closed_and_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let admin = node.connect().await;
    let (limited, other) = (common::fresh_loopback_ip(), common::fresh_loopback_ip());
    let name = limited.to_string();
    set_quota(
        &admin,
        &[("ip", Some(&name))],
        "connection_creation_rate",
        1.0,
    )
    .await;
    let addr: std::net::SocketAddr = node.broker.parse().unwrap();
    tokio::task::spawn_blocking(move || {
        let served = |source| {
            let mut stream = common::connect_from(addr, source);
            common::send(&mut stream, &common::api_versions_v3_frame(1)).unwrap();
            common::expect_frame(&mut stream, "a connection within the rate");
            stream
        };
        // 1 connection/s is read as 10 over the first 10 s (Kafka pads the window): the
        // eleventh is over the rate and closed unanswered.
        let open: Vec<_> = (0..10).map(|_| served(limited)).collect();
        let mut over = common::connect_from(addr, limited);
        let _ = common::send(&mut over, &common::api_versions_v3_frame(2));
        common::expect_closed(&mut over, "the eleventh connection in a second");
        // Another address has no quota.
        served(other);
        drop(open);
    })
    .await
    .unwrap();
    node.stop().await;
}
