//! Shared by the data-plane benches (`data_plane`, `load --background-produce`): an idempotent
//! producer's request stream over one raw, pipelined connection, cheap enough that the load
//! generator stays small next to the daemon; plus the setup it needs (topics, producer ids).
//!
//! A [`ProduceStream`] is one partition's stream: one record batch is built once, encoded once
//! into a Produce frame, and every request is that frame with its correlation id and the
//! batch's base sequence patched in and the batch CRC recomputed (so the daemon's duplicate and
//! sequence checks see a proper idempotent producer: sequences increase by the batch's record
//! count). Every answer is decoded and checked: no error, and the base offset the stream
//! expects (so a lost or duplicated batch is an error). Against the discard server
//! (`data_plane --discard-server`) the answers carry only the correlation id.
//!
//! [`run`] drives one stream: P requests in flight (or paced), the window's CPU-free counts.
#![allow(dead_code)] // each bench uses its own part

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_client::Connection;
use kcoord_record_batches::{BatchBuilder, BatchOptions, Compression};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::FrameDecoder;
use kcoord_wire::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, InitProducerIdRequest, MetadataRequest,
    ProduceRequest, ProduceResponse,
};
use tokio::io::AsyncReadExt;
use uuid::Uuid;

use crate::secure::Dial;

/// Produce v12: the newest version that names topics (v13 names them by id); what a Kafka 3.x
/// Java producer sends.
pub const PRODUCE_VERSION: i16 = 12;
/// A connection that gets no response for this long fails the bench.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
const READ_CHUNK: usize = 64 * 1024;
/// Offsets in a record batch (magic 2).
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
/// Offset of the correlation id in a request frame: size (4), api key (2), version (2).
const CORRELATION_ID_AT: usize = 8;

// ---------------------------------------------------------------------------------------------
// Setup through the client library

/// Creates topics (name, partitions) with these topic configs in one request; their ids.
pub async fn create_topics(
    conn: &Connection,
    topics: &[(String, i32)],
    configs: &[(&str, &str)],
) -> Result<Vec<Uuid>, String> {
    let request = CreateTopicsRequest {
        topics: topics
            .iter()
            .map(|(name, partitions)| CreatableTopic {
                name: name.clone(),
                num_partitions: *partitions,
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
            })
            .collect(),
        timeout_ms: 60_000,
        ..Default::default()
    };
    let response = conn
        .send_negotiated(request)
        .await
        .map_err(|e| format!("CreateTopics: {e}"))?;
    if response.topics.len() != topics.len() {
        return Err(format!(
            "CreateTopics: {} answers for {} topics",
            response.topics.len(),
            topics.len()
        ));
    }
    let mut ids = Vec::with_capacity(topics.len());
    for ((name, _), t) in topics.iter().zip(&response.topics) {
        if t.error_code != 0 {
            return Err(format!(
                "CreateTopics {name}: error {} {:?}",
                t.error_code, t.error_message
            ));
        }
        if t.topic_id.is_nil() {
            return Err(format!("CreateTopics {name}: no topic id in the answer"));
        }
        ids.push(t.topic_id);
    }
    await_leaders(conn, topics).await?;
    Ok(ids)
}

/// Waits (up to a minute) until Metadata shows a leader for every partition of `topics`: Apache
/// Kafka answers CreateTopics before its broker leads the new partitions (NOT_LEADER_OR_FOLLOWER
/// until then); kcoord leads them when it answers.
async fn await_leaders(conn: &Connection, topics: &[(String, i32)]) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let request = MetadataRequest {
            topics: Some(
                topics
                    .iter()
                    .map(|(name, _)| MetadataRequestTopic {
                        name: Some(name.clone()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        let response = conn
            .send_negotiated(request)
            .await
            .map_err(|e| format!("Metadata: {e}"))?;
        let ready = topics.iter().all(|(name, partitions)| {
            response.topics.iter().any(|t| {
                t.name.as_deref() == Some(name.as_str())
                    && t.error_code == 0
                    && t.partitions.len() == *partitions as usize
                    && t.partitions
                        .iter()
                        .all(|p| p.error_code == 0 && p.leader_id >= 0)
            })
        });
        if ready {
            // Kafka's broker can show the leader in Metadata a moment before its replica
            // manager leads the partition; a bench is not a test, so it simply waits a second.
            tokio::time::sleep(Duration::from_secs(1)).await;
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "no leader for every partition of {topics:?} after a minute"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Deletes topics by name.
pub async fn delete_topics(conn: &Connection, names: &[String]) -> Result<(), String> {
    let request = DeleteTopicsRequest {
        topics: names
            .iter()
            .map(|n| DeleteTopicState {
                name: Some(n.clone()),
                ..Default::default()
            })
            .collect(),
        topic_names: names.to_vec(),
        timeout_ms: 60_000,
        ..Default::default()
    };
    let response = conn
        .send_negotiated(request)
        .await
        .map_err(|e| format!("DeleteTopics: {e}"))?;
    for r in &response.responses {
        if r.error_code != 0 {
            return Err(format!(
                "DeleteTopics {:?}: error {} {:?}",
                r.name, r.error_code, r.error_message
            ));
        }
    }
    Ok(())
}

/// A new idempotent producer: (producer id, epoch). Retriable errors are retried for up to a
/// minute, as a client does: Apache Kafka answers COORDINATOR_LOAD_IN_PROGRESS (14) until its
/// producer id manager has its first block from the controller.
pub async fn init_producer_id(conn: &Connection) -> Result<(i64, i16), String> {
    const RETRIABLE: [i16; 3] = [14, 15, 16]; // loading, not available, not coordinator
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let request = InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: i32::MAX,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        let response = conn
            .send_negotiated(request)
            .await
            .map_err(|e| format!("InitProducerId: {e}"))?;
        if response.error_code == 0 && response.producer_id >= 0 {
            return Ok((response.producer_id, response.producer_epoch));
        }
        if !RETRIABLE.contains(&response.error_code) || Instant::now() > deadline {
            return Err(format!(
                "InitProducerId: error {}, producer id {}",
                response.error_code, response.producer_id
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Batches

/// A record value of `size` bytes: words from a small vocabulary picked by a fixed
/// pseudo-random sequence (`seed`), so lz4 finds matches as in text or JSON, but not a
/// repeated pattern.
pub fn record_value(size: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 32] = [
        "user",
        "event",
        "click",
        "view",
        "order",
        "price",
        "amount",
        "region",
        "session",
        "device",
        "mobile",
        "desktop",
        "page",
        "product",
        "category",
        "timestamp",
        "value",
        "status",
        "ok",
        "error",
        "retry",
        "cart",
        "checkout",
        "search",
        "query",
        "result",
        "true",
        "false",
        "null",
        "id",
        "name",
        "country",
    ];
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(size + 16);
    while out.len() < size {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS[(x % 32) as usize].as_bytes());
        // A number now and then, as ids and amounts are.
        if x % 5 == 0 {
            out.extend_from_slice(format!("={}", (x >> 40) % 100_000).as_bytes());
        }
        out.push(b' ');
    }
    out.truncate(size);
    out
}

/// One batch to produce: `records` records of `record_bytes` bytes (null key), `codec`.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The batch's bytes, base sequence 0, producer id 0 epoch 0 (patched per stream).
    pub bytes: Bytes,
    pub records: i32,
    /// Uncompressed record values in the batch.
    pub value_bytes: usize,
    pub compression: Compression,
}

/// Builds a batch of about `batch_bytes` of record values (at least one record).
pub fn build_batch(
    record_bytes: usize,
    batch_bytes: usize,
    compression: Compression,
    seed: u64,
) -> Result<Batch, String> {
    let records = (batch_bytes / record_bytes.max(1)).max(1);
    let mut builder = BatchBuilder::new(BatchOptions {
        compression,
        producer_id: 0,
        producer_epoch: 0,
        base_sequence: 0,
        ..Default::default()
    });
    let now = now_ms();
    for i in 0..records {
        let value = record_value(record_bytes, seed.wrapping_add(i as u64));
        builder
            .push(now, None, Some(&value), &[])
            .map_err(|e| format!("building a batch: {e}"))?;
    }
    let bytes = builder
        .build()
        .map_err(|e| format!("building a batch: {e}"))?;
    Ok(Batch {
        bytes,
        records: i32::try_from(records).map_err(|_| "too many records in a batch")?,
        value_bytes: records * record_bytes,
        compression,
    })
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The Produce request of one batch to one partition (acks=-1).
pub fn produce_request(topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(records.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Checks a Produce answer (frame without its size prefix, correlation id already matched):
/// one topic, one partition, no error; its base offset.
pub fn produce_answer(frame: Bytes, correlation_id: i32) -> Result<i64, String> {
    let response: ProduceResponse =
        super::fleet::decode_response(ApiKey::Produce, PRODUCE_VERSION, correlation_id, frame)?;
    let p = match response.responses.as_slice() {
        [t] => match t.partition_responses.as_slice() {
            [p] => p,
            other => return Err(format!("Produce answer with {} partitions", other.len())),
        },
        other => return Err(format!("Produce answer with {} topics", other.len())),
    };
    if p.error_code != 0 {
        return Err(format!(
            "Produce to {}-{}: error {} {:?}",
            response.responses[0].name, p.index, p.error_code, p.error_message
        ));
    }
    Ok(p.base_offset)
}

/// A new topic of `partitions` partitions with these topic configs, and one idempotent
/// producer's stream per partition, each sending `batch` (the background load of `load` and
/// `soak`).
pub async fn streams_on_new_topic(
    conn: &Connection,
    topic: &str,
    partitions: usize,
    configs: &[(&str, &str)],
    batch: &Batch,
) -> Result<Vec<ProduceStream>, String> {
    let count = i32::try_from(partitions).map_err(|_| "too many partitions")?;
    create_topics(conn, &[(topic.to_string(), count)], configs).await?;
    let mut streams = Vec::with_capacity(partitions);
    for p in 0..count {
        let (producer_id, epoch) = init_producer_id(conn).await?;
        streams.push(ProduceStream::new(
            topic,
            p,
            batch,
            producer_id,
            epoch,
            true,
        )?);
    }
    Ok(streams)
}

// ---------------------------------------------------------------------------------------------
// The stream of one partition

/// One idempotent producer's requests to one partition, the same batch over and over.
pub struct ProduceStream {
    /// The request frame, size prefix included, correlation id 0, base sequence 0.
    frame: Vec<u8>,
    batch_at: usize,
    batch_len: usize,
    pub records: i32,
    pub value_bytes: usize,
    next_sequence: i32,
    /// The base offset the next answer must carry.
    next_offset: i64,
    /// Whether answers are Produce responses (false: the discard server's bare ones).
    verify: bool,
}

impl ProduceStream {
    /// A stream to `topic`-`partition` for producer (`producer_id`, `epoch`), starting at
    /// sequence 0 and, for a new partition, offset 0. With `verify` false the answers are
    /// the discard server's (a correlation id only).
    pub fn new(
        topic: &str,
        partition: i32,
        batch: &Batch,
        producer_id: i64,
        epoch: i16,
        verify: bool,
    ) -> Result<ProduceStream, String> {
        let mut bytes = BytesMut::from(&batch.bytes[..]);
        bytes[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&producer_id.to_be_bytes());
        bytes[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].copy_from_slice(&epoch.to_be_bytes());
        kcoord_record_batches::write_crc(&mut bytes).map_err(|e| format!("batch CRC: {e}"))?;
        let batch_bytes = bytes.freeze();
        let request = produce_request(topic, partition, batch_bytes.clone());
        let mut frame = BytesMut::new();
        super::fleet::encode_request(ApiKey::Produce, PRODUCE_VERSION, 0, &request, &mut frame)?;
        // The batch is near the end (only tagged-field counts follow it).
        let n = batch_bytes.len();
        let batch_at = (0..=frame.len().saturating_sub(n))
            .rev()
            .find(|&at| frame[at..at + n] == batch_bytes[..])
            .ok_or("the batch is not in the encoded Produce frame")?;
        Ok(ProduceStream {
            frame: frame.to_vec(),
            batch_at,
            batch_len: n,
            records: batch.records,
            value_bytes: batch.value_bytes,
            next_sequence: 0,
            next_offset: 0,
            verify,
        })
    }

    /// Bytes of the batch on the wire.
    pub fn batch_len(&self) -> usize {
        self.batch_len
    }

    /// Bytes of a whole request frame.
    pub fn frame_len(&self) -> usize {
        self.frame.len()
    }

    /// Appends the next request (the next base sequence) with this correlation id.
    pub fn write(&mut self, correlation_id: i32, out: &mut BytesMut) -> Result<(), String> {
        let start = out.len();
        out.extend_from_slice(&self.frame);
        out[start + CORRELATION_ID_AT..start + CORRELATION_ID_AT + 4]
            .copy_from_slice(&correlation_id.to_be_bytes());
        let batch = &mut out[start + self.batch_at..start + self.batch_at + self.batch_len];
        batch[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4]
            .copy_from_slice(&self.next_sequence.to_be_bytes());
        kcoord_record_batches::write_crc(batch).map_err(|e| format!("batch CRC: {e}"))?;
        self.next_sequence =
            kcoord_record_batches::increment_sequence(self.next_sequence, self.records);
        Ok(())
    }

    /// Checks the answer to the oldest request in flight (frame without its size prefix).
    pub fn check(&mut self, frame: Bytes, correlation_id: i32) -> Result<(), String> {
        if !self.verify {
            return if frame.len() == 4 && frame[..] == correlation_id.to_be_bytes() {
                Ok(())
            } else {
                Err(format!("discard server answer of {} bytes", frame.len()))
            };
        }
        let base_offset = produce_answer(frame, correlation_id)?;
        if base_offset != self.next_offset {
            return Err(format!(
                "Produce answer at base offset {base_offset}, expected {}",
                self.next_offset
            ));
        }
        self.next_offset += i64::from(self.records);
        Ok(())
    }

    /// The partition's log end offset as far as this stream knows (its answered batches).
    pub fn end_offset(&self) -> i64 {
        self.next_offset
    }
}

// ---------------------------------------------------------------------------------------------
// Running a stream

/// When to send: from now until `end` (no new request after it); answers received in
/// `[measure_from, end]` are counted.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub measure_from: Instant,
    pub end: Instant,
}

impl Window {
    pub fn starting_now(warmup: f64, seconds: f64) -> Window {
        let measure_from = Instant::now() + Duration::from_secs_f64(warmup);
        Window {
            measure_from,
            end: measure_from + Duration::from_secs_f64(seconds),
        }
    }
}

/// How one stream runs.
#[derive(Debug, Clone, Copy)]
pub struct Drive {
    /// Requests in flight at most.
    pub inflight: usize,
    /// At most one request per this interval (`None`: as fast as answers come).
    pub pace: Option<Duration>,
    /// Stop after this many requests (`None`: at the window's end).
    pub limit: Option<u64>,
}

/// What one stream did.
#[derive(Debug, Default, Clone)]
pub struct StreamStats {
    /// Answers received in the measured window.
    pub requests: u64,
    pub batch_bytes: u64,
    pub records: u64,
    pub value_bytes: u64,
    /// Request latencies (ns) of those answers.
    pub latencies_ns: Vec<u32>,
    /// Every answer, in the window or not.
    pub total_requests: u64,
}

impl StreamStats {
    pub fn add(&mut self, other: &StreamStats) {
        self.requests += other.requests;
        self.batch_bytes += other.batch_bytes;
        self.records += other.records;
        self.value_bytes += other.value_bytes;
        self.total_requests += other.total_requests;
        self.latencies_ns.extend_from_slice(&other.latencies_ns);
    }
}

/// Runs `stream` over a connection made as `dial` says (plain TCP, TLS or SASL over TLS)
/// until the window ends (or the limit is sent), then waits for every answer. The first error
/// ends the run; the stream comes back either way.
pub async fn run(
    dial: Dial,
    mut stream: ProduceStream,
    drive: Drive,
    window: Window,
) -> (ProduceStream, Result<StreamStats, String>) {
    let result = drive_stream(&dial, &mut stream, drive, window).await;
    (stream, result)
}

async fn drive_stream(
    dial: &Dial,
    stream: &mut ProduceStream,
    drive: Drive,
    window: Window,
) -> Result<StreamStats, String> {
    let addr = dial.addr();
    let mut conn = dial.connect().await?;
    let decoder = FrameDecoder::new(64 * 1024 * 1024);
    let inflight = drive.inflight.max(1);
    let mut sent: VecDeque<(i32, Instant)> = VecDeque::with_capacity(inflight);
    let mut out = BytesMut::with_capacity(inflight * stream.frame_len());
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut stats = StreamStats::default();
    let mut next_id: i32 = 0;
    let mut sent_total: u64 = 0;
    let mut next_send = Instant::now();
    loop {
        let now = Instant::now();
        while sent.len() < inflight
            && now < window.end
            && drive.limit.is_none_or(|l| sent_total < l)
            && (drive.pace.is_none() || now >= next_send)
        {
            stream.write(next_id, &mut out)?;
            sent.push_back((next_id, now));
            next_id = next_id.wrapping_add(1);
            sent_total += 1;
            if let Some(p) = drive.pace {
                // A late tick does not bunch the ones after it.
                next_send = (next_send + p).max(now);
            }
        }
        if !out.is_empty() {
            conn.write_flushed(&out)
                .await
                .map_err(|e| format!("write to {addr}: {e}"))?;
            out.clear();
        }
        let more = Instant::now() < window.end && drive.limit.is_none_or(|l| sent_total < l);
        if sent.is_empty() {
            if !more {
                return Ok(stats);
            }
            tokio::time::sleep_until(next_send.min(window.end).into()).await;
            continue;
        }
        // Wait for answers, or for the next paced send if there is room for it.
        let wake = (more && drive.pace.is_some() && sent.len() < inflight)
            .then(|| next_send.min(window.end));
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        tokio::select! {
            read = tokio::time::timeout(IO_TIMEOUT, conn.read_buf(&mut buf)) => match read {
                Ok(Ok(0)) => return Err(format!("{addr} closed the connection")),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(format!("read from {addr}: {e}")),
                Err(_) => return Err(format!("no answer from {addr} for {IO_TIMEOUT:?}")),
            },
            _ = tokio::time::sleep_until(wake.unwrap_or(window.end).into()), if wake.is_some() => continue,
        }
        let now = Instant::now();
        while let Some(frame) = decoder
            .decode(&mut buf)
            .map_err(|e| format!("answer framing: {e}"))?
        {
            let (id, at) = sent.pop_front().ok_or("an answer nobody asked for")?;
            let got = frame
                .get(..4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            if got != Some(id) {
                return Err(format!("expected correlation id {id}, got {got:?}"));
            }
            stream.check(frame, id)?;
            stats.total_requests += 1;
            if now >= window.measure_from && now <= window.end {
                stats.requests += 1;
                stats.batch_bytes += stream.batch_len() as u64;
                stats.records += stream.records as u64;
                stats.value_bytes += stream.value_bytes as u64;
                let ns = now.duration_since(at).as_nanos();
                stats
                    .latencies_ns
                    .push(u32::try_from(ns).unwrap_or(u32::MAX));
            }
        }
    }
}

/// Nearest-rank percentile of sorted samples, in µs.
pub fn percentile_us(sorted_ns: &[u32], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_ns.len() as f64).ceil() as usize;
    f64::from(sorted_ns[rank.clamp(1, sorted_ns.len()) - 1]) / 1000.0
}
