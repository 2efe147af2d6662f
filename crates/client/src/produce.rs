//! A producer: one record batch per [`Producer::send`], built with `kcoord_record_batches` and sent
//! to the partition's leader with Produce at the newest version both sides know (topic ids
//! from v13, looked up with Metadata).
//!
//! Idempotence (the default, as in Kafka's Java producer) works as Kafka's does for a
//! producer without a transactional id (docs/kafka-data-plane-facts.md §2, §3):
//!
//! - the first send asks for a producer id with InitProducerId, retrying
//!   COORDINATOR_LOAD_IN_PROGRESS and the other retriable answers with a short, bounded
//!   backoff;
//! - every partition gets its own sequence, starting at 0 and advanced by the batch's record
//!   count with Kafka's wrap-around after `i32::MAX`;
//! - a retriable failure (a transport error, NOT_LEADER_OR_FOLLOWER, ...) sends the *same*
//!   batch again, same sequence, so a batch that was written although its answer was lost is
//!   answered as a duplicate with its original offset instead of being written twice;
//! - when a send fails in a way that leaves the broker's sequence unknown (the answer was
//!   never seen, or OUT_OF_ORDER_SEQUENCE_NUMBER / INVALID_PRODUCER_EPOCH), the next send
//!   first bumps the epoch on the client side and restarts every sequence at 0, as the Java
//!   producer does (a new producer id once the epoch would pass `i16::MAX`).
//!
//! Sends are serialized: one batch is in flight per producer at a time, which keeps each
//! partition's sequences in order without Kafka's in-flight bookkeeping.
//!
//! With acks=0 the request is written and nothing is awaited: the server never answers it
//! ([`crate::Connection::send_no_response`]), and the result's fields are all -1, as the Java
//! producer reports them. Kafka's producer refuses idempotence without acks=-1, and so does
//! [`Producer::new`].

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use kcoord_record_batches::{
    increment_sequence, BatchBuilder, BatchOptions, Compression, RecordHeader, NO_SEQUENCE,
};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::produce_response::PartitionProduceResponse;
use kcoord_wire::messages::{InitProducerIdRequest, MetadataRequest, ProduceRequest};
use kcoord_wire::{ErrorCode, Request};
use tokio::sync::Mutex;
use tracing::debug;
use uuid::Uuid;

use crate::client::Client;
use crate::error::ClientError;
use crate::topic_meta::{is_stale_metadata, TopicCache};

mod transactional;

/// The first Produce version that names topics by id.
const TOPIC_ID_VERSION: i16 = 13;
/// InitProducerId is retried at least this many times (the first request after a Kafka
/// broker starts is usually answered COORDINATOR_LOAD_IN_PROGRESS).
const MIN_INIT_RETRIES: u32 = 10;

/// How a [`Producer`] sends. The defaults are the Java producer's, where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    /// Kafka's `acks`: -1 (all in-sync replicas, the default), 1 (the leader) or 0 (no answer).
    pub acks: i16,
    /// Kafka's `compression.type`.
    pub compression: Compression,
    /// Kafka's `compression.<codec>.level`; `None` is the codec's default.
    pub compression_level: Option<i32>,
    /// Kafka's `enable.idempotence` (default true; needs acks=-1).
    pub idempotent: bool,
    /// How many times a retriable failure is retried (Kafka's `retries`, bounded here).
    pub retries: u32,
    /// The first backoff between attempts (Kafka's `retry.backoff.ms`, 100 ms); it doubles
    /// with every retry up to [`ProducerConfig::retry_backoff_max`].
    pub retry_backoff: Duration,
    /// Kafka's `retry.backoff.max.ms` (1 s).
    pub retry_backoff_max: Duration,
    /// Kafka's `transactional.id`: with one, every send belongs to a transaction
    /// ([`Producer::init_transactions`], [`Producer::commit_transaction`]).
    pub transactional_id: Option<String>,
    /// Kafka's `transaction.timeout.ms` (60 s).
    pub transaction_timeout: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            acks: -1,
            compression: Compression::None,
            compression_level: None,
            idempotent: true,
            retries: 5,
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            transactional_id: None,
            transaction_timeout: Duration::from_secs(60),
        }
    }
}

/// One record to send. A `None` timestamp is the time of the send, as in Kafka.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducedRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// Header keys are strings (Kafka's `Header.key()`); values may be null.
    pub headers: Vec<(String, Option<Bytes>)>,
    /// Milliseconds since the epoch (CreateTime).
    pub timestamp: Option<i64>,
}

impl ProducedRecord {
    /// A record with a value and no key.
    pub fn value(value: impl Into<Bytes>) -> Self {
        ProducedRecord {
            value: Some(value.into()),
            ..Default::default()
        }
    }

    /// A record with a key and a value.
    pub fn keyed(key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        ProducedRecord {
            key: Some(key.into()),
            value: Some(value.into()),
            ..Default::default()
        }
    }

    pub fn with_header(mut self, key: impl Into<String>, value: Option<Bytes>) -> Self {
        self.headers.push((key.into(), value));
        self
    }

    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = Some(timestamp);
        self
    }
}

/// What the leader said about an appended batch (Kafka's `RecordMetadata` for its first record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendResult {
    /// The offset of the batch's first record (-1 with acks=0).
    pub base_offset: i64,
    /// The broker's time for a LogAppendTime topic, else -1. For a batch the broker recognised
    /// as a duplicate Kafka sends the batch's max timestamp here.
    pub log_append_time: i64,
    /// The partition's log start offset (-1 with acks=0).
    pub log_start_offset: i64,
}

impl SendResult {
    /// What a send with acks=0 reports: nothing is known.
    const UNKNOWN: SendResult = SendResult {
        base_offset: -1,
        log_append_time: -1,
        log_start_offset: -1,
    };
}

/// The idempotent producer's identity (InitProducerId's answer, with epochs bumped since).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdentity {
    pub producer_id: i64,
    pub producer_epoch: i16,
}

#[derive(Debug, Default)]
struct State {
    identity: Option<ProducerIdentity>,
    /// Set when a failed send left some broker-side sequence unknown.
    bump_epoch: bool,
    /// The next sequence of each (topic, partition) for the current identity.
    sequences: HashMap<(String, i32), i32>,
    /// The partitions added to the open transaction (a transactional producer's).
    in_transaction: std::collections::BTreeSet<(String, i32)>,
}

/// Sends record batches; see the [module documentation](self). Cheap to share behind an
/// `Arc`: every method takes `&self`.
#[derive(Debug)]
pub struct Producer {
    client: Client,
    config: ProducerConfig,
    topics: TopicCache,
    state: Mutex<State>,
}

impl Producer {
    /// A producer on `client`'s connections. Fails, as Kafka's does, for idempotence without
    /// acks=-1. Nothing is sent until the first [`Producer::send`].
    pub fn new(client: Client, config: ProducerConfig) -> Result<Producer, ClientError> {
        if config.idempotent && config.acks != -1 {
            return Err(ClientError::InvalidArgument(
                "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.".to_string(),
            ));
        }
        Ok(Producer {
            client,
            config,
            topics: TopicCache::default(),
            state: Mutex::new(State::default()),
        })
    }

    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The producer id and epoch in use, once the first idempotent send obtained them.
    pub async fn identity(&self) -> Option<ProducerIdentity> {
        self.state.lock().await.identity
    }

    /// The partitions of `topic`, from a fresh Metadata answer.
    pub async fn partitions(&self, topic: &str) -> Result<Vec<i32>, ClientError> {
        self.topics.invalidate(topic);
        Ok(self.topics.get(&self.client, topic).await?.partition_ids())
    }

    /// Sends `records` to `topic`-`partition` as one batch and waits for the leader's answer
    /// (with acks=0: until the request is written). Retriable failures are retried up to
    /// [`ProducerConfig::retries`] times with the same batch; a topic that Metadata does not
    /// know is reported at once (UNKNOWN_TOPIC_OR_PARTITION, as a [`ClientError::Kafka`] of
    /// Metadata). A Produce error is a [`ClientError::Kafka`] of Produce with the partition's
    /// code and Kafka's ErrorMessage (or its record errors).
    pub async fn send(
        &self,
        topic: &str,
        partition: i32,
        records: &[ProducedRecord],
    ) -> Result<SendResult, ClientError> {
        if records.is_empty() {
            return Err(ClientError::InvalidArgument(
                "a batch needs at least one record".to_string(),
            ));
        }
        let count = i32::try_from(records.len()).map_err(|_| {
            ClientError::InvalidArgument(format!(
                "{} records do not fit in one batch",
                records.len()
            ))
        })?;
        let mut state = self.state.lock().await;
        let identity = if self.config.transactional_id.is_some() {
            let identity = state.identity.ok_or_else(|| {
                ClientError::InvalidArgument(
                    "a transactional producer sends after init_transactions".to_string(),
                )
            })?;
            self.add_to_transaction(&mut state, topic, partition, identity)
                .await?;
            Some(identity)
        } else if self.config.idempotent {
            Some(self.current_identity(&mut state).await?)
        } else {
            None
        };
        let key = (topic.to_string(), partition);
        let sequence = identity.map(|_| state.sequences.get(&key).copied().unwrap_or(0));
        let batch = self.build_batch(records, identity, sequence)?;
        // Whether some attempt may have been written although no answer came back.
        let mut maybe_written = false;
        let mut retries = 0;
        loop {
            let error = match self.attempt(topic, partition, batch.clone()).await {
                Ok(result) => {
                    if let Some(sequence) = sequence {
                        state
                            .sequences
                            .insert(key, increment_sequence(sequence, count));
                    }
                    return Ok(result);
                }
                Err(e) => e,
            };
            maybe_written |= error.is_transport();
            if is_stale_metadata(&error) {
                self.topics.invalidate(topic);
            }
            if is_retriable_send_error(&error) && retries < self.config.retries {
                retries += 1;
                let backoff = self.backoff(retries);
                debug!(topic, partition, retries, error = %error, ?backoff, "retrying produce");
                tokio::time::sleep(backoff).await;
                continue;
            }
            // A transactional producer's epoch is its coordinator's to bump: after such a
            // failure its owner aborts or starts again with init_transactions.
            if identity.is_some()
                && self.config.transactional_id.is_none()
                && (maybe_written || breaks_sequence(&error))
            {
                state.bump_epoch = true;
            }
            return Err(error);
        }
    }

    /// One Produce of `batch` to the partition's leader.
    async fn attempt(
        &self,
        topic: &str,
        partition: i32,
        batch: Bytes,
    ) -> Result<SendResult, ClientError> {
        let meta = self
            .topics
            .get_with(&self.client, topic, &[partition])
            .await?;
        let conn = meta.leader_connection(&self.client, partition).await?;
        let mut version = conn.negotiated_version::<ProduceRequest>().await?;
        if meta.id.is_nil() {
            // No topic id to name the topic with: the last version with names.
            version = version.min(TOPIC_ID_VERSION - 1);
        }
        let by_id = version >= TOPIC_ID_VERSION;
        let timeout = conn.config().request_timeout;
        let request = ProduceRequest {
            transactional_id: self.config.transactional_id.clone(),
            acks: self.config.acks,
            timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
            topic_data: vec![topic_produce_data(
                topic,
                by_id.then_some(meta.id),
                partition,
                batch,
            )],
            ..Default::default()
        };
        if self.config.acks == 0 {
            conn.send_no_response(request, version).await?;
            return Ok(SendResult::UNKNOWN);
        }
        let response = conn.send(request, version).await?;
        let answer = response
            .responses
            .into_iter()
            .filter(|t| {
                if by_id {
                    t.topic_id == meta.id
                } else {
                    t.name == topic
                }
            })
            .flat_map(|t| t.partition_responses)
            .find(|p| p.index == partition)
            .ok_or_else(|| {
                ClientError::Protocol(format!(
                    "Produce v{version} response has no entry for {topic}-{partition}"
                ))
            })?;
        send_result(answer)
    }

    fn build_batch(
        &self,
        records: &[ProducedRecord],
        identity: Option<ProducerIdentity>,
        sequence: Option<i32>,
    ) -> Result<Bytes, ClientError> {
        let mut options = BatchOptions {
            compression: self.config.compression,
            compression_level: self.config.compression_level,
            transactional: self.config.transactional_id.is_some(),
            ..Default::default()
        };
        if let (Some(identity), Some(sequence)) = (identity, sequence) {
            options.producer_id = identity.producer_id;
            options.producer_epoch = identity.producer_epoch;
            options.base_sequence = sequence;
        } else {
            options.base_sequence = NO_SEQUENCE;
        }
        let now = now_ms();
        let mut builder = BatchBuilder::new(options);
        let invalid =
            |e: kcoord_record_batches::RecordsError| ClientError::InvalidArgument(e.to_string());
        for record in records {
            let headers: Vec<RecordHeader> = record
                .headers
                .iter()
                .map(|(k, v)| RecordHeader::new(Bytes::copy_from_slice(k.as_bytes()), v.clone()))
                .collect();
            builder
                .push(
                    record.timestamp.unwrap_or(now),
                    record.key.as_deref(),
                    record.value.as_deref(),
                    &headers,
                )
                .map_err(invalid)?;
        }
        builder.build().map_err(invalid)
    }

    /// The identity to send with: obtained on first use, bumped after a failure that left a
    /// sequence unknown.
    async fn current_identity(&self, state: &mut State) -> Result<ProducerIdentity, ClientError> {
        match state.identity {
            Some(identity) if !state.bump_epoch => Ok(identity),
            Some(identity) if identity.producer_epoch < i16::MAX => {
                let bumped = ProducerIdentity {
                    producer_epoch: identity.producer_epoch + 1,
                    ..identity
                };
                debug!(
                    producer_id = bumped.producer_id,
                    epoch = bumped.producer_epoch,
                    "bumped the producer epoch"
                );
                state.identity = Some(bumped);
                state.bump_epoch = false;
                state.sequences.clear();
                Ok(bumped)
            }
            _ => {
                let identity = self.init_producer_id().await?;
                state.identity = Some(identity);
                state.bump_epoch = false;
                state.sequences.clear();
                Ok(identity)
            }
        }
    }

    /// InitProducerId without a transactional id, retried while the answer is retriable.
    async fn init_producer_id(&self) -> Result<ProducerIdentity, ClientError> {
        let mut retries = 0;
        loop {
            let outcome = async {
                let conn = self.client.bootstrap_connection().await?;
                let request = InitProducerIdRequest {
                    transactional_id: None,
                    // What the Java idempotent producer sends; the broker ignores it.
                    transaction_timeout_ms: i32::MAX,
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                };
                let response = conn.send_negotiated(request).await?;
                ClientError::check(InitProducerIdRequest::KEY, response.error_code, None)?;
                if response.producer_id < 0 || response.producer_epoch < 0 {
                    return Err(ClientError::Protocol(format!(
                        "InitProducerId answered no error but producer id {} epoch {}",
                        response.producer_id, response.producer_epoch
                    )));
                }
                Ok(ProducerIdentity {
                    producer_id: response.producer_id,
                    producer_epoch: response.producer_epoch,
                })
            }
            .await;
            match outcome {
                Ok(identity) => {
                    debug!(
                        producer_id = identity.producer_id,
                        epoch = identity.producer_epoch,
                        "got a producer id"
                    );
                    return Ok(identity);
                }
                Err(e)
                    if e.is_retriable() && retries < self.config.retries.max(MIN_INIT_RETRIES) =>
                {
                    retries += 1;
                    debug!(error = %e, retries, "retrying InitProducerId");
                    tokio::time::sleep(self.backoff(retries)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn backoff(&self, retry: u32) -> Duration {
        backoff(&self.config, retry)
    }
}

/// The topic's part of a Produce of `batch` to `partition`: named by its id when `id` is given,
/// else by its name.
fn topic_produce_data(
    topic: &str,
    id: Option<Uuid>,
    partition: i32,
    batch: Bytes,
) -> TopicProduceData {
    TopicProduceData {
        name: if id.is_some() {
            String::new()
        } else {
            topic.to_string()
        },
        topic_id: id.unwrap_or_else(Uuid::nil),
        partition_data: vec![PartitionProduceData {
            index: partition,
            records: Some(batch.into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The partition's answer to a Produce, or its error with the broker's message (else the
/// record errors).
fn send_result(answer: PartitionProduceResponse) -> Result<SendResult, ClientError> {
    let code = answer.error_code;
    // Brokers before Kafka 2.x answered a duplicate with DUPLICATE_SEQUENCE_NUMBER; the Java
    // producer takes it as success.
    if code != ErrorCode::NONE.code() && code != ErrorCode::DUPLICATE_SEQUENCE_NUMBER.code() {
        let message = answer.error_message.or_else(|| {
            let errors: Vec<String> = answer
                .record_errors
                .iter()
                .map(|e| {
                    format!(
                        "record {}: {}",
                        e.batch_index,
                        e.batch_index_error_message.as_deref().unwrap_or("invalid")
                    )
                })
                .collect();
            (!errors.is_empty()).then(|| errors.join("; "))
        });
        return Err(ClientError::Kafka {
            api: ProduceRequest::KEY,
            code,
            message,
        });
    }
    Ok(SendResult {
        base_offset: answer.base_offset,
        log_append_time: answer.log_append_time_ms,
        log_start_offset: answer.log_start_offset,
    })
}

/// The wait before retry number `retry` (1-based): doubling from `retry_backoff` up to
/// `retry_backoff_max`.
fn backoff(config: &ProducerConfig, retry: u32) -> Duration {
    let factor = 1u32
        .checked_shl(retry.saturating_sub(1))
        .unwrap_or(u32::MAX);
    config
        .retry_backoff
        .saturating_mul(factor)
        .min(config.retry_backoff_max.max(config.retry_backoff))
}

/// Retriable, except that a topic Metadata does not know is the caller's problem, reported at
/// once rather than waited for.
fn is_retriable_send_error(error: &ClientError) -> bool {
    let unknown_in_metadata = matches!(error, ClientError::Kafka { api, code, .. }
        if *api == MetadataRequest::KEY && *code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code());
    error.is_retriable() && !unknown_in_metadata
}

/// Errors after which the broker's idea of this producer's sequences no longer matches ours.
fn breaks_sequence(error: &ClientError) -> bool {
    matches!(
        error.error_code(),
        Some(
            ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
                | ErrorCode::INVALID_PRODUCER_EPOCH
                | ErrorCode::UNKNOWN_PRODUCER_ID
        )
    )
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Kafka's `Utils.murmur2`, the hash of its default partitioner.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    // Java's length is an int; the cast wraps as Java's would for the (impossible) longer arrays.
    let mut h: u32 = SEED ^ (data.len() as u32);
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate().rev() {
            h ^= u32::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner picks for a keyed record:
/// `toPositive(murmur2(key)) % num_partitions` (`BuiltInPartitioner.partitionForKey`).
/// `num_partitions` below 1 counts as 1.
pub fn partition_for_key(key: &[u8], num_partitions: i32) -> i32 {
    (murmur2(key) & 0x7fff_ffff) % num_partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafkas_utils_test() {
        // Apache Kafka's UtilsTest.testMurmur2.
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973932308),
            (b"foobar", -790332482),
            (b"a-little-bit-long-string", -985981536),
            (b"a-little-bit-longer-string", -1486304829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            (b"abc", 479470107),
        ];
        for (data, hash) in cases {
            assert_eq!(murmur2(data), hash, "{:?}", String::from_utf8_lossy(data));
        }
        for n in 1..10 {
            let p = partition_for_key(b"foobar", n);
            assert!((0..n).contains(&p));
            assert_eq!(p, (-790332482i32 & 0x7fff_ffff) % n);
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_max() {
        let config = ProducerConfig::default();
        let backoff = |retry: u32| backoff(&config, retry);
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(4), Duration::from_millis(800));
        assert_eq!(backoff(5), Duration::from_secs(1));
        assert_eq!(backoff(40), Duration::from_secs(1));
    }

    #[test]
    fn unknown_topics_in_metadata_are_not_retried() {
        let metadata = ClientError::Kafka {
            api: MetadataRequest::KEY,
            code: 3,
            message: None,
        };
        assert!(!is_retriable_send_error(&metadata));
        let produce = ClientError::Kafka {
            api: ProduceRequest::KEY,
            code: 3,
            message: None,
        };
        assert!(is_retriable_send_error(&produce));
        let leader = ClientError::Kafka {
            api: MetadataRequest::KEY,
            code: 5,
            message: None,
        };
        assert!(is_retriable_send_error(&leader));
        assert!(!is_retriable_send_error(&ClientError::Kafka {
            api: ProduceRequest::KEY,
            code: 87,
            message: None
        }));
        assert!(breaks_sequence(&ClientError::Kafka {
            api: ProduceRequest::KEY,
            code: 45,
            message: None
        }));
    }
}
