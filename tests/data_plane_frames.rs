//! The data plane against hand-built requests: every malformed batch gets Kafka's error and
//! appends nothing (corrupt CRCs, wrong lengths, bad magic, bad compression, the size limit
//! at and one byte above), Produce's request-level rules (acks, transactions, duplicates of a
//! partition), Fetch's long polling, ranges and sessions, ListOffsets' special values,
//! DeleteRecords, OffsetForLeaderEpoch and InitProducerId. The daemon runs in this process.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_client::{ClientConfig, Connection};
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::{
    CreateTopicsRequest, DeleteRecordsRequest, FetchRequest, FetchResponse, FindCoordinatorRequest,
    InitProducerIdRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, ProduceRequest,
    ProduceResponse,
};
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(20);

struct Daemon {
    handle: Option<kcoord_server::ServerHandle>,
    broker: String,
}

async fn daemon(lines: &[&str]) -> Daemon {
    let mut text = String::from("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=2\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    let config =
        kcoord_server::Config::parse("data-plane-frames", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let broker = handle.broker_addr().expect("broker listener").to_string();
    Daemon {
        handle: Some(handle),
        broker,
    }
}

impl Daemon {
    async fn connect(&self) -> Connection {
        let config = ClientConfig::new("frames")
            .with_request_timeout(WAIT)
            .with_connect_timeout(WAIT);
        Connection::connect(&self.broker, config)
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"))
    }

    async fn stop(mut self) {
        if let Some(h) = self.handle.take() {
            tokio::time::timeout(WAIT, h.shutdown())
                .await
                .expect("stopped in time");
        }
    }
}

async fn create(conn: &Connection, name: &str, partitions: i32, configs: &[(&str, &str)]) -> Uuid {
    use kcoord_wire::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: 1,
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: (*k).into(),
                    value: Some((*v).into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let resp = conn.send(req, 7).await.unwrap();
    assert_eq!(
        resp.topics[0].error_code, 0,
        "{:?}",
        resp.topics[0].error_message
    );
    resp.topics[0].topic_id
}

fn batch(values: &[&str], options: BatchOptions) -> BytesMut {
    let mut b = BatchBuilder::new(options);
    for v in values {
        b.push(now_ms(), Some(b"k"), Some(v.as_bytes()), &[])
            .unwrap();
    }
    b.build_mut().unwrap()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn produce_request(topic: &str, parts: Vec<(i32, Bytes)>, acks: i16) -> ProduceRequest {
    ProduceRequest {
        acks,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: parts
                .into_iter()
                .map(|(index, records)| PartitionProduceData {
                    index,
                    records: Some(records.into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn produce(
    conn: &Connection,
    topic: &str,
    partition: i32,
    records: Bytes,
) -> (i16, i64, Option<String>) {
    let resp: ProduceResponse = conn
        .send(produce_request(topic, vec![(partition, records)], -1), 12)
        .await
        .unwrap();
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset, p.error_message.clone())
}

async fn latest(conn: &Connection, topic: &str, partition: i32) -> i64 {
    list_offset(conn, topic, partition, -1, 9).await.1
}

/// (error, offset, timestamp, leader epoch) of ListOffsets at `version`.
async fn list_offset(
    conn: &Connection,
    topic: &str,
    partition: i32,
    timestamp: i64,
    version: i16,
) -> (i16, i64, i64, i32) {
    use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition,
                timestamp,
                current_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = conn.send(req, version).await.unwrap();
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset, p.timestamp, p.leader_epoch)
}

fn fetch_request(
    topic: &str,
    partitions: &[(i32, i64)],
    max_wait_ms: i32,
    min_bytes: i32,
) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes,
        max_bytes: 50 << 20,
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: partitions
                .iter()
                .map(|(p, o)| FetchPartition {
                    partition: *p,
                    fetch_offset: *o,
                    partition_max_bytes: 1 << 20,
                    current_leader_epoch: -1,
                    log_start_offset: -1,
                    last_fetched_epoch: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Values of every record in a fetch answer's partition.
fn values(resp: &FetchResponse, partition: usize) -> Vec<String> {
    let bytes = resp.responses[0].partitions[partition]
        .records
        .as_ref()
        .map(|r| r.to_bytes())
        .unwrap_or_default();
    let mut out = Vec::new();
    for b in kcoord_record_batches::split_batches(bytes) {
        let (_, b) = b.unwrap();
        let batch = kcoord_record_batches::RecordBatch::parse(b).unwrap();
        for r in batch.decode_records(1 << 24).unwrap() {
            out.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    out
}

#[tokio::test]
async fn malformed_batches_get_kafkas_errors_and_append_nothing() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    create(&conn, "t", 1, &[]).await;
    let good = batch(&["a", "b"], BatchOptions::default());

    let mut crc = good.clone();
    let last = crc.len() - 1;
    crc[last] ^= 0x55;
    assert_eq!(
        produce(&conn, "t", 0, crc.freeze()).await.0,
        2,
        "a wrong CRC is CORRUPT_MESSAGE"
    );

    let mut long = good.clone();
    long[8..12].copy_from_slice(&((good.len() as i32 - 12) + 100).to_be_bytes());
    assert_eq!(
        produce(&conn, "t", 0, long.freeze()).await.0,
        87,
        "a length past the bytes leaves no whole batch: INVALID_RECORD"
    );

    let mut short = good.clone();
    short[8..12].copy_from_slice(&5i32.to_be_bytes());
    assert_eq!(
        produce(&conn, "t", 0, short.freeze()).await.0,
        2,
        "a length below the record overhead is CORRUPT_MESSAGE"
    );

    let mut magic1 = good.clone();
    magic1[16] = 1;
    assert_eq!(
        produce(&conn, "t", 0, magic1.freeze()).await.0,
        87,
        "magic 1 is INVALID_RECORD"
    );
    let mut magic3 = good.clone();
    magic3[16] = 3;
    assert_eq!(
        produce(&conn, "t", 0, magic3.freeze()).await.0,
        2,
        "an unknown magic is CORRUPT_MESSAGE"
    );

    // Claims gzip, holds garbage; the CRC is right, so only decompression can tell.
    let mut gzip = good.clone();
    gzip[22] |= 1;
    kcoord_record_batches::write_crc(&mut gzip).unwrap();
    assert_eq!(
        produce(&conn, "t", 0, gzip.freeze()).await.0,
        -1,
        "an undecompressable batch is UNKNOWN_SERVER_ERROR, as Kafka answers"
    );

    let mut count = good.clone();
    count[57..61].copy_from_slice(&5i32.to_be_bytes());
    kcoord_record_batches::write_crc(&mut count).unwrap();
    assert_eq!(
        produce(&conn, "t", 0, count.freeze()).await.0,
        87,
        "a record count the records do not match"
    );

    let mut two = good.clone();
    two.extend_from_slice(&good);
    assert_eq!(
        produce(&conn, "t", 0, two.freeze()).await.0,
        87,
        "two batches in one partition"
    );

    assert_eq!(latest(&conn, "t", 0).await, 0, "nothing was appended");
    assert_eq!(
        produce(&conn, "t", 0, good.freeze()).await.0,
        0,
        "the good batch still goes in"
    );
    assert_eq!(latest(&conn, "t", 0).await, 2);
    d.stop().await;
}

#[tokio::test]
async fn message_too_large_at_the_limit_and_one_byte_above() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    create(&conn, "limited", 1, &[("max.message.bytes", "2000")]).await;
    let sized = |total: usize| {
        let overhead = batch(&[""], BatchOptions::default()).len();
        // One more value byte can grow the varint lengths: search the value size for the total.
        (0..total)
            .map(|n| batch(&[&"x".repeat(n)], BatchOptions::default()))
            .find(|b| b.len() == total)
            .unwrap_or_else(|| panic!("no batch of {total} bytes (overhead {overhead})"))
    };
    let (code, _, _) = produce(&conn, "limited", 0, sized(2000).freeze()).await;
    assert_eq!(code, 0, "a batch of exactly max.message.bytes is accepted");
    let (code, offset, _) = produce(&conn, "limited", 0, sized(2001).freeze()).await;
    assert_eq!(
        (code, offset),
        (10, -1),
        "one byte more is MESSAGE_TOO_LARGE"
    );
    assert_eq!(latest(&conn, "limited", 0).await, 1);
    d.stop().await;
}

#[tokio::test]
async fn produce_request_rules_acks_transactions_unknown_topics_and_repeated_partitions() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    let id = create(&conn, "p", 2, &[]).await;
    let good = batch(&["a"], BatchOptions::default()).freeze();

    let resp: ProduceResponse = conn
        .send(produce_request("p", vec![(0, good.clone())], 5), 12)
        .await
        .unwrap();
    assert_eq!(
        resp.responses[0].partition_responses[0].error_code, 21,
        "acks=5 is INVALID_REQUIRED_ACKS"
    );

    let resp: ProduceResponse = conn
        .send(produce_request("nope", vec![(0, good.clone())], -1), 12)
        .await
        .unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 3);
    let mut by_id = produce_request("", vec![(0, good.clone())], -1);
    by_id.topic_data[0].topic_id = Uuid::from_u128(99);
    let resp: ProduceResponse = conn.send(by_id, 13).await.unwrap();
    assert_eq!(
        resp.responses[0].partition_responses[0].error_code, 100,
        "v13 with an unknown topic id"
    );
    let mut by_id = produce_request("", vec![(1, good.clone())], -1);
    by_id.topic_data[0].topic_id = id;
    let resp: ProduceResponse = conn.send(by_id, 13).await.unwrap();
    assert_eq!(
        resp.responses[0].partition_responses[0].error_code, 0,
        "v13 by the topic's id"
    );

    let txn = batch(
        &["t"],
        BatchOptions {
            producer_id: 1,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..BatchOptions::default()
        },
    )
    .freeze();
    let resp: ProduceResponse = conn
        .send(
            produce_request("p", vec![(0, txn), (1, good.clone())], -1),
            12,
        )
        .await
        .unwrap();
    assert!(
        resp.responses[0]
            .partition_responses
            .iter()
            .all(|p| p.error_code == 53),
        "a transactional batch without a transactional id fails the whole request"
    );

    // The same partition twice, one batch bad: neither is appended.
    let mut bad = BytesMut::from(&good[..]);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let resp: ProduceResponse = conn
        .send(
            produce_request("p", vec![(0, good.clone()), (0, bad.freeze())], -1),
            12,
        )
        .await
        .unwrap();
    let codes: Vec<i16> = resp.responses[0]
        .partition_responses
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![87, 2]);
    assert_eq!(latest(&conn, "p", 0).await, 0);
    d.stop().await;
}

#[tokio::test]
async fn acks_0_is_not_answered_and_an_error_closes_the_connection() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    create(&conn, "quiet", 1, &[]).await;
    // Over a raw socket: no response comes for acks=0; the next request is answered.
    let addr: std::net::SocketAddr = d.broker.parse().unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let frame = |req: &ProduceRequest, correlation: i32| {
        use kcoord_wire::Encodable;
        let header = kcoord_wire::messages::RequestHeader {
            request_api_key: 0,
            request_api_version: 9,
            correlation_id: correlation,
            client_id: Some("raw".into()),
            ..Default::default()
        };
        let mut out = BytesMut::new();
        kcoord_wire::frame::write_frame::<anyhow::Error>(&mut out, |b| {
            header.encode(b, 2)?;
            req.encode(b, 9)
        })
        .unwrap();
        out
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let good = batch(&["fire and forget"], BatchOptions::default()).freeze();
    stream
        .write_all(&frame(
            &produce_request("quiet", vec![(0, good.clone())], 0),
            1,
        ))
        .await
        .unwrap();
    stream
        .write_all(&frame(&produce_request("quiet", vec![(0, good)], 1), 2))
        .await
        .unwrap();
    let mut size = [0u8; 4];
    tokio::time::timeout(WAIT, stream.read_exact(&mut size))
        .await
        .unwrap()
        .unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).await.unwrap();
    assert_eq!(
        i32::from_be_bytes([body[0], body[1], body[2], body[3]]),
        2,
        "the first answer is the acks=1 request's"
    );
    assert_eq!(latest(&conn, "quiet", 0).await, 2, "both were appended");
    // acks=0 to an unknown topic: the connection is closed so the client refreshes metadata.
    let bad = batch(&["x"], BatchOptions::default()).freeze();
    stream
        .write_all(&frame(&produce_request("missing", vec![(0, bad)], 0), 3))
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(WAIT, stream.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read, 0, "closed without an answer");
    d.stop().await;
}

#[tokio::test]
async fn an_empty_fetch_waits_for_max_wait_and_a_late_record_ends_the_wait() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    create(&conn, "poll", 1, &[]).await;
    let started = Instant::now();
    let resp: FetchResponse = conn
        .send(fetch_request("poll", &[(0, 0)], 500, 1), 12)
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "answered after {:?}",
        started.elapsed()
    );
    assert!(values(&resp, 0).is_empty());

    let fetcher = d.connect().await;
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let resp: FetchResponse = fetcher
            .send(fetch_request("poll", &[(0, 0)], 15_000, 1), 12)
            .await
            .unwrap();
        (started.elapsed(), resp)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        produce(
            &conn,
            "poll",
            0,
            batch(&["late"], BatchOptions::default()).freeze()
        )
        .await
        .0,
        0
    );
    let (elapsed, resp) = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
    assert_eq!(values(&resp, 0), vec!["late"]);
    assert!(
        elapsed < Duration::from_secs(15),
        "woken by the append, not by max_wait ({elapsed:?})"
    );
    d.stop().await;
}

#[tokio::test]
async fn fetch_ranges_limits_and_sessions() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    create(&conn, "f", 2, &[]).await;
    for i in 0..3 {
        produce(
            &conn,
            "f",
            0,
            batch(&[&format!("p0-{i}")], BatchOptions::default()).freeze(),
        )
        .await;
    }
    produce(
        &conn,
        "f",
        1,
        batch(&[&"big".repeat(1000)], BatchOptions::default()).freeze(),
    )
    .await;

    // Out of range above the log end and below the log start; at the end: empty, no error.
    let resp: FetchResponse = conn
        .send(fetch_request("f", &[(0, 4)], 0, 0), 12)
        .await
        .unwrap();
    assert_eq!(resp.responses[0].partitions[0].error_code, 1);
    let resp: FetchResponse = conn
        .send(fetch_request("f", &[(0, 3)], 0, 0), 12)
        .await
        .unwrap();
    assert_eq!(
        (
            resp.responses[0].partitions[0].error_code,
            resp.responses[0].partitions[0].high_watermark
        ),
        (0, 3)
    );

    // "At least one batch": a partition_max_bytes of 1 still returns the first batch whole,
    // and the next partition, whose batch no longer fits, gets nothing.
    let mut req = fetch_request("f", &[(1, 0), (0, 0)], 0, 0);
    for p in &mut req.topics[0].partitions {
        p.partition_max_bytes = 1;
    }
    let resp: FetchResponse = conn.send(req, 12).await.unwrap();
    assert_eq!(values(&resp, 0).len(), 1);
    assert!(values(&resp, 1).is_empty());

    // A session: epoch 0 creates it and answers every partition; then only what changed.
    let mut req = fetch_request("f", &[(0, 3), (1, 1)], 0, 0);
    req.session_epoch = 0;
    let full: FetchResponse = conn.send(req, 12).await.unwrap();
    assert_ne!(full.session_id, 0);
    assert_eq!(full.responses[0].partitions.len(), 2);
    let incremental = |epoch: i32, forgotten: Vec<ForgottenTopic>| FetchRequest {
        session_id: full.session_id,
        session_epoch: epoch,
        topics: vec![],
        forgotten_topics_data: forgotten,
        ..fetch_request("f", &[], 0, 0)
    };
    let resp: FetchResponse = conn.send(incremental(1, vec![]), 12).await.unwrap();
    assert!(
        resp.responses.iter().all(|t| t.partitions.is_empty()),
        "nothing changed: {:?}",
        resp.responses
    );
    produce(
        &conn,
        "f",
        0,
        batch(&["new"], BatchOptions::default()).freeze(),
    )
    .await;
    let resp: FetchResponse = conn.send(incremental(2, vec![]), 12).await.unwrap();
    assert_eq!(resp.responses[0].partitions.len(), 1);
    assert_eq!(resp.responses[0].partitions[0].partition_index, 0);
    assert_eq!(values(&resp, 0), vec!["new"]);
    let resp: FetchResponse = conn.send(incremental(2, vec![]), 12).await.unwrap();
    assert_eq!(
        resp.error_code, 71,
        "a repeated epoch is INVALID_FETCH_SESSION_EPOCH"
    );
    let resp: FetchResponse = conn
        .send(
            FetchRequest {
                session_id: 12345,
                ..incremental(1, vec![])
            },
            12,
        )
        .await
        .unwrap();
    assert_eq!(resp.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");
    d.stop().await;
}

#[tokio::test]
async fn list_offsets_delete_records_and_offset_for_leader_epoch() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    create(&conn, "o", 1, &[]).await;
    for i in 0..5 {
        produce(
            &conn,
            "o",
            0,
            batch(&[&format!("v{i}")], BatchOptions::default()).freeze(),
        )
        .await;
    }
    assert_eq!(
        list_offset(&conn, "o", 0, -2, 9).await,
        (0, 0, -1, 0),
        "EARLIEST"
    );
    assert_eq!(
        list_offset(&conn, "o", 0, -1, 9).await,
        (0, 5, -1, 0),
        "LATEST"
    );
    assert_eq!(
        list_offset(&conn, "o", 0, -3, 7).await.0,
        0,
        "MAX_TIMESTAMP from v7"
    );
    assert_eq!(
        list_offset(&conn, "o", 0, -3, 6).await.0,
        35,
        "MAX_TIMESTAMP before v7 is UNSUPPORTED_VERSION"
    );
    assert_eq!(
        list_offset(&conn, "o", 0, -5, 9).await,
        (0, -1, -1, -1),
        "LATEST_TIERED: nothing without tiered storage"
    );
    assert_eq!(
        list_offset(&conn, "o", 0, now_ms() + 60_000, 9).await.1,
        -1,
        "no record that late"
    );

    use kcoord_wire::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    let delete = |offset: i64| DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: "o".into(),
            partitions: vec![DeleteRecordsPartition {
                partition_index: 0,
                offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        timeout_ms: 1000,
        ..Default::default()
    };
    let resp = conn.send(delete(3), 2).await.unwrap();
    assert_eq!(
        (
            resp.topics[0].partitions[0].error_code,
            resp.topics[0].partitions[0].low_watermark
        ),
        (0, 3)
    );
    let resp = conn.send(delete(9), 2).await.unwrap();
    assert_eq!(
        resp.topics[0].partitions[0].error_code, 1,
        "beyond the high watermark"
    );
    assert_eq!(list_offset(&conn, "o", 0, -2, 9).await.1, 3);
    let resp: FetchResponse = conn
        .send(fetch_request("o", &[(0, 2)], 0, 0), 12)
        .await
        .unwrap();
    assert_eq!(
        resp.responses[0].partitions[0].error_code, 1,
        "below the new log start"
    );

    use kcoord_wire::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    let epoch = |leader_epoch: i32| OffsetForLeaderEpochRequest {
        replica_id: -1,
        topics: vec![OffsetForLeaderTopic {
            topic: "o".into(),
            partitions: vec![OffsetForLeaderPartition {
                partition: 0,
                current_leader_epoch: 0,
                leader_epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = conn.send(epoch(0), 4).await.unwrap();
    let p = &resp.topics[0].partitions[0];
    assert_eq!(
        (p.error_code, p.leader_epoch, p.end_offset),
        (0, 0, 5),
        "epoch 0 ends at the log end"
    );
    let resp = conn.send(epoch(3), 4).await.unwrap();
    let p = &resp.topics[0].partitions[0];
    assert_eq!((p.error_code, p.leader_epoch, p.end_offset), (0, -1, -1));
    d.stop().await;
}

#[tokio::test]
async fn init_producer_id_hands_out_new_ids_and_coordinates_transactions_here() {
    let d = daemon(&[]).await;
    let conn = d.connect().await;
    let init = |transactional_id: Option<&str>, timeout: i32| InitProducerIdRequest {
        transactional_id: transactional_id.map(str::to_owned),
        transaction_timeout_ms: timeout,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    // Idempotent producers ignore the timeout.
    let a = conn.send(init(None, i32::MAX), 4).await.unwrap();
    let b = conn.send(init(None, i32::MAX), 4).await.unwrap();
    assert_eq!((a.error_code, a.producer_epoch, b.error_code), (0, 0, 0));
    assert!(b.producer_id > a.producer_id);
    // A transactional id: above transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT, then
    // an id with epoch 0, bumped by the next InitProducerId.
    let t = conn.send(init(Some("tx"), i32::MAX), 4).await.unwrap();
    assert_eq!((t.error_code, t.producer_id), (50, -1));
    let t = conn.send(init(Some("tx"), 60_000), 4).await.unwrap();
    assert_eq!((t.error_code, t.producer_epoch), (0, 0));
    assert!(t.producer_id > b.producer_id);
    let again = conn.send(init(Some("tx"), 60_000), 4).await.unwrap();
    assert_eq!(
        (again.error_code, again.producer_id, again.producer_epoch),
        (0, t.producer_id, 1)
    );
    let found = conn
        .send(
            FindCoordinatorRequest {
                key: "tx".into(),
                key_type: 1,
                ..Default::default()
            },
            3,
        )
        .await
        .unwrap();
    assert_eq!((found.error_code, found.node_id), (0, 1));
    d.stop().await;
}
