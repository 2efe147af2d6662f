//! The producer and the consumer against a kcoord daemon started in this process: records come
//! back as they were sent, with every codec; an idempotent retry is answered with the original
//! offset; acks=0; Kafka error codes; and partitions under `log.dirs` across a restart.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kcoord_client::admin::NewTopic;
use kcoord_client::consume::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use kcoord_client::{
    Client, ClientConfig, ClientError, ConsumedRecord, Consumer, FetchOptions, ProducedRecord,
    Producer, ProducerConfig,
};
use kcoord_record_batches::{Compression, TimestampType};
use kcoord_wire::api::ApiKey;
use kcoord_wire::ErrorCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Bound on every wait.
const WAIT: Duration = Duration::from_secs(30);

struct Node {
    handle: kcoord_server::ServerHandle,
    bootstrap: String,
}

async fn start(extra: &[String]) -> Node {
    let mut text = String::from("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=1\n");
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    let config = kcoord_server::Config::parse("client-data-plane-test", &text)
        .unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let bootstrap = handle.broker_addr().expect("broker listener").to_string();
    Node { handle, bootstrap }
}

async fn connect(bootstrap: &str) -> Client {
    Client::connect(bootstrap, ClientConfig::new("data-plane-test"))
        .await
        .unwrap()
}

async fn create_topic(client: &Client, topic: NewTopic) {
    let name = topic.name.clone();
    for result in client.create_topics(&[topic], false).await.unwrap() {
        result
            .result
            .unwrap_or_else(|e| panic!("creating {name}: {e}"));
    }
}

fn quick() -> FetchOptions {
    FetchOptions {
        max_wait_ms: 10,
        ..FetchOptions::default()
    }
}

/// Every record of the partition from `offset` up to the high watermark.
async fn fetch_all(
    consumer: &Consumer,
    topic: &str,
    partition: i32,
    mut offset: i64,
) -> Vec<ConsumedRecord> {
    let mut records = Vec::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let fetched = consumer
            .fetch(topic, partition, offset, &quick())
            .await
            .unwrap();
        records.extend(fetched.records);
        offset = fetched.next_offset;
        if offset >= fetched.high_watermark {
            return records;
        }
        assert!(Instant::now() < deadline, "no progress at offset {offset}");
    }
}

fn text(b: &Option<Bytes>) -> Option<String> {
    b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_come_back_with_their_keys_values_headers_and_timestamps_in_order() {
    let node = start(&[]).await;
    let client = connect(&node.bootstrap).await;
    create_topic(&client, NewTopic::new("orders", 2, 1)).await;
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();

    let first = [
        ProducedRecord::keyed("k1", "v1")
            .with_header("trace", Some(Bytes::from_static(b"abc")))
            .with_header("empty", None)
            .with_timestamp(1_000),
        ProducedRecord {
            key: None,
            value: None,
            headers: vec![],
            timestamp: Some(2_000),
        },
        ProducedRecord::keyed("k3", "").with_timestamp(1_500),
    ];
    let sent = producer.send("orders", 0, &first).await.unwrap();
    assert_eq!(
        (
            sent.base_offset,
            sent.log_append_time,
            sent.log_start_offset
        ),
        (0, -1, 0)
    );
    // Sequences are per partition: partition 1 starts at 0 too, partition 0 goes on at 3.
    assert_eq!(
        producer
            .send("orders", 1, &[ProducedRecord::value("p1")])
            .await
            .unwrap()
            .base_offset,
        0
    );
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert_eq!(
        producer
            .send("orders", 0, &[ProducedRecord::value("v4")])
            .await
            .unwrap()
            .base_offset,
        3
    );
    assert_eq!(
        producer
            .send(
                "orders",
                0,
                &[ProducedRecord::value("v5"), ProducedRecord::value("v6")]
            )
            .await
            .unwrap()
            .base_offset,
        4
    );
    let identity = producer
        .identity()
        .await
        .expect("an idempotent producer has an id");
    assert!(
        identity.producer_id >= 0 && identity.producer_epoch == 0,
        "{identity:?}"
    );

    let consumer = Consumer::new(client.clone());
    assert_eq!(consumer.partitions("orders").await.unwrap(), vec![0, 1]);
    let fetched = consumer.fetch("orders", 0, 0, &quick()).await.unwrap();
    assert_eq!(
        (
            fetched.high_watermark,
            fetched.log_start_offset,
            fetched.next_offset
        ),
        (6, 0, 6)
    );
    let got: Vec<(i64, Option<String>, Option<String>, i64)> = fetched
        .records
        .iter()
        .map(|r| (r.offset, text(&r.key), text(&r.value), r.timestamp))
        .collect();
    assert_eq!(
        got[..3],
        [
            (0, Some("k1".into()), Some("v1".into()), 1_000),
            (1, None, None, 2_000),
            (2, Some("k3".into()), Some(String::new()), 1_500),
        ]
    );
    assert_eq!(
        got[3..]
            .iter()
            .map(|r| (r.0, r.2.clone()))
            .collect::<Vec<_>>(),
        [
            (3, Some("v4".into())),
            (4, Some("v5".into())),
            (5, Some("v6".into()))
        ]
    );
    assert!(
        got[3].3 >= before,
        "a record without a timestamp gets the send time"
    );
    assert_eq!(
        fetched.records[0].headers,
        vec![
            ("trace".to_string(), Some(Bytes::from_static(b"abc"))),
            ("empty".to_string(), None)
        ]
    );
    assert!(fetched.records[1].headers.is_empty());
    assert_eq!(fetched.records[0].timestamp_type, TimestampType::CreateTime);

    // From the middle of a batch: the records before the offset are skipped.
    let middle = consumer.fetch("orders", 0, 1, &quick()).await.unwrap();
    assert_eq!(
        middle.records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    // At the end: nothing, after max_wait_ms, and the position stays.
    let end = consumer.fetch("orders", 0, 6, &quick()).await.unwrap();
    assert!(end.records.is_empty());
    assert_eq!(end.next_offset, 6);
    // Both partitions in one Fetch, in the order asked.
    let both = consumer
        .fetch_partitions("orders", &[(1, 0), (0, 5)], &quick())
        .await
        .unwrap();
    assert_eq!(both.iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![1, 0]);
    let values: Vec<Vec<Option<String>>> = both
        .into_iter()
        .map(|(_, r)| r.unwrap().records.iter().map(|r| text(&r.value)).collect())
        .collect();
    assert_eq!(
        values,
        vec![vec![Some("p1".to_string())], vec![Some("v6".to_string())]]
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_codec_round_trips() {
    let node = start(&[]).await;
    let client = connect(&node.bootstrap).await;
    create_topic(&client, NewTopic::new("codecs", 1, 1)).await;
    let consumer = Consumer::new(client.clone());
    let mut offset = 0;
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let producer = Producer::new(
            client.clone(),
            ProducerConfig {
                compression: codec,
                ..ProducerConfig::default()
            },
        )
        .unwrap();
        let value = format!("{codec} ").repeat(200);
        let records: Vec<ProducedRecord> = (0..3)
            .map(|i| {
                ProducedRecord::keyed(format!("{codec}-{i}"), value.clone())
                    .with_header("codec", Some(codec.name().into()))
            })
            .collect();
        let sent = producer
            .send("codecs", 0, &records)
            .await
            .unwrap_or_else(|e| panic!("{codec}: {e}"));
        assert_eq!(sent.base_offset, offset, "{codec}");
        let fetched = consumer.fetch("codecs", 0, offset, &quick()).await.unwrap();
        let keys: Vec<Option<String>> = fetched.records.iter().map(|r| text(&r.key)).collect();
        assert_eq!(
            keys,
            (0..3)
                .map(|i| Some(format!("{codec}-{i}")))
                .collect::<Vec<_>>(),
            "{codec}"
        );
        assert!(
            fetched
                .records
                .iter()
                .all(|r| text(&r.value).as_deref() == Some(value.as_str())),
            "{codec}"
        );
        assert_eq!(
            fetched.records[0].headers,
            vec![("codec".to_string(), Some(Bytes::from(codec.name())))]
        );
        offset += 3;
        assert_eq!(fetched.next_offset, offset);
    }
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_finds_the_earliest_the_latest_and_by_timestamp() {
    let node = start(&[]).await;
    let client = connect(&node.bootstrap).await;
    create_topic(&client, NewTopic::new("times", 1, 1)).await;
    let consumer = Consumer::new(client.clone());
    assert_eq!(
        consumer
            .list_offsets("times", 0, EARLIEST_TIMESTAMP)
            .await
            .unwrap()
            .0,
        0
    );
    assert_eq!(
        consumer
            .list_offsets("times", 0, LATEST_TIMESTAMP)
            .await
            .unwrap()
            .0,
        0
    );

    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let records: Vec<ProducedRecord> = [100, 300, 200, 400, 50]
        .iter()
        .map(|t| ProducedRecord::value(format!("at {t}")).with_timestamp(*t))
        .collect();
    producer.send("times", 0, &records[..2]).await.unwrap();
    producer.send("times", 0, &records[2..]).await.unwrap();
    assert_eq!(
        consumer
            .list_offsets("times", 0, EARLIEST_TIMESTAMP)
            .await
            .unwrap()
            .0,
        0
    );
    assert_eq!(
        consumer
            .list_offsets("times", 0, LATEST_TIMESTAMP)
            .await
            .unwrap()
            .0,
        5
    );
    // The first record at or after the timestamp.
    assert_eq!(
        consumer.list_offsets("times", 0, 250).await.unwrap(),
        (1, 300)
    );
    assert_eq!(
        consumer
            .list_offsets("times", 0, MAX_TIMESTAMP)
            .await
            .unwrap(),
        (3, 400)
    );
    assert_eq!(
        consumer.list_offsets("times", 0, 10_000).await.unwrap(),
        (-1, -1)
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_zero_does_not_wait_for_an_answer() {
    let node = start(&[]).await;
    let client = connect(&node.bootstrap).await;
    create_topic(&client, NewTopic::new("fire", 1, 1)).await;
    let config = ProducerConfig {
        acks: 0,
        idempotent: false,
        ..ProducerConfig::default()
    };
    let producer = Producer::new(client.clone(), config).unwrap();
    for i in 0..5 {
        let sent = tokio::time::timeout(
            Duration::from_secs(5),
            producer.send("fire", 0, &[ProducedRecord::value(format!("m{i}"))]),
        )
        .await
        .expect("acks=0 does not wait for a response")
        .unwrap();
        assert_eq!(
            (
                sent.base_offset,
                sent.log_append_time,
                sent.log_start_offset
            ),
            (-1, -1, -1)
        );
    }
    let consumer = Consumer::new(client.clone());
    let deadline = Instant::now() + WAIT;
    while consumer
        .list_offsets("fire", 0, LATEST_TIMESTAMP)
        .await
        .unwrap()
        .0
        < 5
    {
        assert!(
            Instant::now() < deadline,
            "the acks=0 records never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let values: Vec<Option<String>> = fetch_all(&consumer, "fire", 0, 0)
        .await
        .iter()
        .map(|r| text(&r.value))
        .collect();
    assert_eq!(
        values,
        (0..5).map(|i| Some(format!("m{i}"))).collect::<Vec<_>>()
    );
    // The same connection still serves answered requests.
    let acked = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    assert_eq!(
        acked
            .send("fire", 0, &[ProducedRecord::value("acked")])
            .await
            .unwrap()
            .base_offset,
        5
    );
    node.handle.shutdown().await;
}

fn code(e: &ClientError) -> Option<ErrorCode> {
    e.error_code()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_come_back_as_kafka_codes() {
    let node = start(&[]).await;
    let client = connect(&node.bootstrap).await;
    create_topic(&client, NewTopic::new("known", 1, 1)).await;
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let consumer = Consumer::new(client.clone());

    let e = producer
        .send("nowhere", 0, &[ProducedRecord::value("x")])
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), "{e}");
    assert!(e.to_string().contains("nowhere"), "{e}");
    let e = consumer.fetch("nowhere", 0, 0, &quick()).await.unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), "{e}");
    let e = consumer
        .list_offsets("nowhere", 0, LATEST_TIMESTAMP)
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), "{e}");
    let e = consumer.partitions("nowhere").await.unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), "{e}");
    // A partition the topic does not have.
    let e = producer
        .send("known", 7, &[ProducedRecord::value("x")])
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), "{e}");

    // Errors of the Produce itself carry Produce's code.
    let bad_acks = Producer::new(
        client.clone(),
        ProducerConfig {
            acks: 5,
            idempotent: false,
            ..ProducerConfig::default()
        },
    )
    .unwrap();
    let e = bad_acks
        .send("known", 0, &[ProducedRecord::value("x")])
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Kafka { api, code: 21, .. } if api == ApiKey::Produce.key()),
        "{e}"
    );
    assert_eq!(e.error_name(), Some("INVALID_REQUIRED_ACKS"));
    create_topic(&client, NewTopic::new("__consumer_offsets", 1, 1)).await;
    let e = producer
        .send("__consumer_offsets", 0, &[ProducedRecord::value("x")])
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::INVALID_TOPIC_EXCEPTION), "{e}");

    // Fetch past the end.
    producer
        .send("known", 0, &[ProducedRecord::value("x")])
        .await
        .unwrap();
    let e = consumer.fetch("known", 0, 42, &quick()).await.unwrap_err();
    assert!(
        matches!(e, ClientError::Kafka { api, code: 1, .. } if api == ApiKey::Fetch.key()),
        "{e}"
    );

    // Refused before anything is sent.
    assert!(matches!(
        producer.send("known", 0, &[]).await,
        Err(ClientError::InvalidArgument(_))
    ));
    let e = Producer::new(
        client.clone(),
        ProducerConfig {
            acks: 1,
            ..ProducerConfig::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("Must set acks to all"), "{e}");
    node.handle.shutdown().await;
}

/// A TCP proxy in front of the daemon that closes a client connection instead of forwarding
/// a Produce response, while `drop_produce_responses` is above zero: the batch is written
/// but the producer never hears so.
struct Proxy {
    port: u16,
    drop_produce_responses: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Proxy {
    async fn bind() -> (Proxy, TcpListener) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        (
            Proxy {
                port,
                drop_produce_responses: Arc::default(),
                dropped: Arc::default(),
            },
            listener,
        )
    }

    fn serve(&self, listener: TcpListener, target: String) {
        let (drop_next, dropped) = (self.drop_produce_responses.clone(), self.dropped.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&target).await else {
                    return;
                };
                let (drop_next, dropped) = (drop_next.clone(), dropped.clone());
                tokio::spawn(relay(client, server, drop_next, dropped));
            }
        });
    }
}

async fn read_frame(stream: &mut (impl AsyncReadExt + Unpin)) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await.ok()?;
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    stream.read_exact(&mut frame).await.ok()?;
    Some([size.to_vec(), frame].concat())
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    drop_next: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let produce_ids: Arc<Mutex<HashSet<i32>>> = Arc::default();
    let ids = produce_ids.clone();
    let upstream = tokio::spawn(async move {
        while let Some(frame) = read_frame(&mut client_read).await {
            let api_key = i16::from_be_bytes([frame[4], frame[5]]);
            let correlation_id = i32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]);
            if api_key == ApiKey::Produce.key() {
                ids.lock().unwrap().insert(correlation_id);
            }
            if server_write.write_all(&frame).await.is_err() {
                return;
            }
        }
    });
    while let Some(frame) = read_frame(&mut server_read).await {
        let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        let is_produce = produce_ids.lock().unwrap().remove(&correlation_id);
        if is_produce
            && drop_next
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            dropped.fetch_add(1, Ordering::SeqCst);
            break;
        }
        if client_write.write_all(&frame).await.is_err() {
            break;
        }
    }
    // Both halves of both sockets close here.
    upstream.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_batch_is_answered_with_its_original_offset_and_written_once() {
    let (proxy, listener) = Proxy::bind().await;
    // Clients learn the proxy's address from Metadata, so every connection goes through it.
    let node = start(&[format!(
        "advertised.listeners=PLAINTEXT://127.0.0.1:{}",
        proxy.port
    )])
    .await;
    proxy.serve(listener, node.bootstrap.clone());
    let bootstrap = format!("127.0.0.1:{}", proxy.port);
    let client = connect(&bootstrap).await;
    create_topic(&client, NewTopic::new("retry", 1, 1)).await;
    let producer = Producer::new(
        client.clone(),
        ProducerConfig {
            retry_backoff: Duration::from_millis(10),
            ..ProducerConfig::default()
        },
    )
    .unwrap();
    assert_eq!(
        producer
            .send("retry", 0, &[ProducedRecord::value("first")])
            .await
            .unwrap()
            .base_offset,
        0
    );

    // The answer to the next batch is lost once: the producer sends the same batch again.
    proxy.drop_produce_responses.store(1, Ordering::SeqCst);
    let records = [
        ProducedRecord::value("second").with_timestamp(7_000),
        ProducedRecord::value("third").with_timestamp(7_001),
    ];
    let sent = producer.send("retry", 0, &records).await.unwrap();
    assert_eq!(
        proxy.dropped.load(Ordering::SeqCst),
        1,
        "the first answer was dropped"
    );
    assert_eq!(
        sent.base_offset, 1,
        "the duplicate is answered with the original offset"
    );
    // Kafka answers a duplicate with the batch's max timestamp as its log append time.
    assert_eq!(sent.log_append_time, 7_001);
    let identity = producer.identity().await.unwrap();
    assert_eq!(
        identity.producer_epoch, 0,
        "a retry that succeeds keeps the epoch"
    );
    assert_eq!(
        producer
            .send("retry", 0, &[ProducedRecord::value("fourth")])
            .await
            .unwrap()
            .base_offset,
        3
    );

    // Every attempt's answer is lost: the send fails, and the next one bumps the epoch
    // (restarting the sequence at 0), which the broker accepts.
    let retries = producer.config().retries as usize;
    proxy
        .drop_produce_responses
        .store(retries + 1, Ordering::SeqCst);
    let e = producer
        .send("retry", 0, &[ProducedRecord::value("fifth")])
        .await
        .unwrap_err();
    assert!(e.is_transport(), "{e}");
    proxy.drop_produce_responses.store(0, Ordering::SeqCst);
    assert_eq!(
        producer
            .send("retry", 0, &[ProducedRecord::value("sixth")])
            .await
            .unwrap()
            .base_offset,
        5
    );
    let bumped = producer.identity().await.unwrap();
    assert_eq!(
        (bumped.producer_id, bumped.producer_epoch),
        (identity.producer_id, 1)
    );

    let consumer = Consumer::new(client.clone());
    let values: Vec<Option<String>> = fetch_all(&consumer, "retry", 0, 0)
        .await
        .iter()
        .map(|r| text(&r.value))
        .collect();
    let expected = ["first", "second", "third", "fourth", "fifth", "sixth"];
    assert_eq!(
        values,
        expected
            .iter()
            .map(|v| Some(v.to_string()))
            .collect::<Vec<_>>(),
        "each batch is in the log once"
    );
    node.handle.shutdown().await;
}

/// (key, value, timestamp) of one record.
type Row = (Option<String>, Option<String>, i64);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_under_log_dirs_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let log_dirs = format!("log.dirs={}", dir.path().display());
    let node = start(std::slice::from_ref(&log_dirs)).await;
    let client = connect(&node.bootstrap).await;
    create_topic(&client, NewTopic::new("durable", 2, 1)).await;
    let producer = Producer::new(
        client.clone(),
        ProducerConfig {
            compression: Compression::Lz4,
            ..ProducerConfig::default()
        },
    )
    .unwrap();
    let mut expected: Vec<Vec<Row>> = vec![Vec::new(), Vec::new()];
    for batch in 0..4i64 {
        for partition in 0..2 {
            let records: Vec<ProducedRecord> = (0..3)
                .map(|i| {
                    ProducedRecord::keyed(
                        format!("k{batch}-{i}"),
                        format!("p{partition} b{batch} r{i}"),
                    )
                    .with_timestamp(10_000 + batch * 10 + i)
                })
                .collect();
            producer.send("durable", partition, &records).await.unwrap();
            expected[partition as usize].extend(
                records
                    .iter()
                    .map(|r| (text(&r.key), text(&r.value), r.timestamp.unwrap())),
            );
        }
    }
    drop((producer, client));
    node.handle.shutdown().await;

    let node = start(&[log_dirs]).await;
    let client = connect(&node.bootstrap).await;
    let consumer = Consumer::new(client.clone());
    assert_eq!(consumer.partitions("durable").await.unwrap(), vec![0, 1]);
    for partition in 0..2 {
        assert_eq!(
            consumer
                .list_offsets("durable", partition, EARLIEST_TIMESTAMP)
                .await
                .unwrap()
                .0,
            0
        );
        assert_eq!(
            consumer
                .list_offsets("durable", partition, LATEST_TIMESTAMP)
                .await
                .unwrap()
                .0,
            12
        );
        let got: Vec<Row> = fetch_all(&consumer, "durable", partition, 0)
            .await
            .iter()
            .map(|r| (text(&r.key), text(&r.value), r.timestamp))
            .collect();
        assert_eq!(got, expected[partition as usize], "partition {partition}");
    }
    // A new producer (a new producer id) goes on where the log ends.
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    assert_eq!(
        producer
            .send("durable", 1, &[ProducedRecord::value("after restart")])
            .await
            .unwrap()
            .base_offset,
        12
    );
    node.handle.shutdown().await;
}
