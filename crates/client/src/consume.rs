//! A simple consumer: no group, no fetch session, positions kept by the caller.
//!
//! [`Consumer::fetch`] sends a sessionless Fetch (session id 0, epoch -1, as Kafka's
//! `FetchRequest.Builder.forConsumer` without a session) to the partition's leader at the
//! newest version both sides know (topic ids from v13), and reads the answer as Kafka's
//! consumer does (`CompletedFetch`, docs/kafka-data-plane-facts.md §13): every batch's CRC is
//! checked and its records decoded (decompressed within a bound); records below the fetch
//! offset are skipped (a batch may start before it); control batches are skipped, and with
//! read_committed so are the batches of aborted transactions; a partial batch at the end is
//! ignored; and the next offset to fetch is the last whole batch's last offset + 1, so empty
//! and compacted batches are stepped over.
//!
//! [`Consumer::list_offsets`] is ListOffsets for one partition ([`EARLIEST_TIMESTAMP`],
//! [`LATEST_TIMESTAMP`], [`MAX_TIMESTAMP`] or a timestamp), [`Consumer::partitions`] the
//! partitions Metadata lists.
//!
//! Metadata (topic ids, leaders) is cached per consumer and dropped when an answer says it
//! is stale (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_ID, a broken connection, ...); the error is
//! returned, and the next call looks the topic up again.
//!
//! A Fetch that waits (`max_wait_ms`) holds its connection: like Kafka's, a kcoord broker
//! handles one request per connection at a time, so a Produce sent on the same connection
//! waits behind it. A consumer that shares a process with a [`crate::Producer`] should have a
//! [`Client`] of its own (as Kafka's Java consumer and producer each have their own network
//! client).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use kcoord_record_batches::{
    split_batches, ControlRecordType, Record, RecordBatch, RecordsError, TimestampType,
};
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
use kcoord_wire::messages::fetch_response::{AbortedTransaction, PartitionData};
use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kcoord_wire::messages::{FetchRequest, ListOffsetsRequest};
use kcoord_wire::Request;
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;
use crate::topic_meta::{is_stale_metadata, TopicCache, TopicMeta};

/// ListOffsets' timestamp for the offset after the last (the high watermark).
pub const LATEST_TIMESTAMP: i64 = -1;
/// ListOffsets' timestamp for the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets' timestamp for the record with the largest timestamp (v7+).
pub const MAX_TIMESTAMP: i64 = -3;

/// The first Fetch version that names topics by id.
const TOPIC_ID_VERSION: i16 = 13;
/// The first ListOffsets version with TimeoutMs.
const LIST_OFFSETS_TIMEOUT_VERSION: i16 = 10;
/// The first ListOffsets version with IsolationLevel.
const LIST_OFFSETS_ISOLATION_VERSION: i16 = 2;

/// Kafka's `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IsolationLevel {
    #[default]
    ReadUncommitted,
    ReadCommitted,
}

impl IsolationLevel {
    /// The wire value: 0 read_uncommitted, 1 read_committed.
    pub fn id(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }

    /// Kafka's config names, `read_uncommitted` and `read_committed`.
    pub fn from_name(name: &str) -> Option<IsolationLevel> {
        match name {
            "read_uncommitted" => Some(IsolationLevel::ReadUncommitted),
            "read_committed" => Some(IsolationLevel::ReadCommitted),
            _ => None,
        }
    }
}

/// The limits of one Fetch. The defaults are the Java consumer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchOptions {
    /// How long the broker may wait for `min_bytes` (`fetch.max.wait.ms`, 500).
    pub max_wait_ms: i32,
    /// `fetch.min.bytes` (1).
    pub min_bytes: i32,
    /// `fetch.max.bytes` (52428800).
    pub max_bytes: i32,
    /// `max.partition.fetch.bytes` (1048576).
    pub partition_max_bytes: i32,
    pub isolation_level: IsolationLevel,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 52_428_800,
            partition_max_bytes: 1_048_576,
            isolation_level: IsolationLevel::ReadUncommitted,
        }
    }
}

/// One record as fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    pub offset: i64,
    /// The record's CreateTime, or the batch's LogAppendTime.
    pub timestamp: i64,
    pub timestamp_type: TimestampType,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// Header keys decoded as UTF-8, malformed sequences replaced (as Kafka's Java clients do).
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// What one partition's Fetch answer held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub records: Vec<ConsumedRecord>,
    pub high_watermark: i64,
    /// -1 when the server sent none.
    pub last_stable_offset: i64,
    /// -1 when the server sent none.
    pub log_start_offset: i64,
    /// Where the next fetch should start: the last whole batch's last offset + 1, or the fetch
    /// offset when there was no batch.
    pub next_offset: i64,
}

/// Reads partitions; see the [module documentation](self).
#[derive(Debug)]
pub struct Consumer {
    client: Client,
    topics: TopicCache,
    /// Bound on one batch's decompressed records.
    max_uncompressed: usize,
}

impl Consumer {
    pub fn new(client: Client) -> Consumer {
        let max_uncompressed = client.config().max_response_size;
        Consumer {
            client,
            topics: TopicCache::default(),
            max_uncompressed,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The partitions of `topic` Metadata lists, in order (a topic error, e.g.
    /// UNKNOWN_TOPIC_OR_PARTITION, as a [`ClientError::Kafka`] of Metadata).
    pub async fn partitions(&self, topic: &str) -> Result<Vec<i32>, ClientError> {
        self.topics.invalidate(topic);
        Ok(self.topics.get(&self.client, topic).await?.partition_ids())
    }

    /// ListOffsets for `topic`-`partition` at `timestamp` ([`LATEST_TIMESTAMP`],
    /// [`EARLIEST_TIMESTAMP`], [`MAX_TIMESTAMP`] or milliseconds since the epoch): the
    /// `(offset, timestamp)` the leader answers, `(-1, -1)` when no record is at or after a
    /// timestamp.
    pub async fn list_offsets(
        &self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> Result<(i64, i64), ClientError> {
        let result = self.list_offsets_once(topic, partition, timestamp).await;
        if let Err(e) = &result {
            if is_stale_metadata(e) {
                self.topics.invalidate(topic);
            }
        }
        result
    }

    async fn list_offsets_once(
        &self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> Result<(i64, i64), ClientError> {
        let meta = self
            .topics
            .get_with(&self.client, topic, &[partition])
            .await?;
        let conn = meta.leader_connection(&self.client, partition).await?;
        let version = conn.negotiated_version::<ListOffsetsRequest>().await?;
        let request = ListOffsetsRequest {
            replica_id: -1,
            isolation_level: if version >= LIST_OFFSETS_ISOLATION_VERSION {
                IsolationLevel::ReadUncommitted.id()
            } else {
                0
            },
            topics: vec![ListOffsetsTopic {
                name: topic.to_string(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: partition,
                    current_leader_epoch: -1,
                    timestamp,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            timeout_ms: if version >= LIST_OFFSETS_TIMEOUT_VERSION {
                millis_i32(conn.config().request_timeout)
            } else {
                0
            },
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        let answer = response
            .topics
            .into_iter()
            .filter(|t| t.name == topic)
            .flat_map(|t| t.partitions)
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| {
                ClientError::Protocol(format!(
                    "ListOffsets v{version} response has no entry for {topic}-{partition}"
                ))
            })?;
        ClientError::check(ListOffsetsRequest::KEY, answer.error_code, None)?;
        Ok((answer.offset, answer.timestamp))
    }

    /// Fetches `topic`-`partition` from `offset`. A partition error (OFFSET_OUT_OF_RANGE,
    /// NOT_LEADER_OR_FOLLOWER, ...) is a [`ClientError::Kafka`] of Fetch; undecodable or
    /// corrupt batches are a [`ClientError::Protocol`].
    pub async fn fetch(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        options: &FetchOptions,
    ) -> Result<Fetched, ClientError> {
        let mut results = self
            .fetch_partitions(topic, &[(partition, offset)], options)
            .await?;
        match results.pop() {
            Some((_, result)) => result,
            None => Err(ClientError::Protocol(format!(
                "no Fetch result for {topic}-{partition}"
            ))),
        }
    }

    /// Fetches several partitions of `topic`, each from its own offset: one Fetch per leader,
    /// sent at once, so that `max_wait_ms` is waited once. The results are in the order of
    /// `positions`, each with its partition. The outer error is for a failure before anything
    /// was sent (the topic's metadata).
    pub async fn fetch_partitions(
        &self,
        topic: &str,
        positions: &[(i32, i64)],
        options: &FetchOptions,
    ) -> Result<Vec<(i32, Result<Fetched, ClientError>)>, ClientError> {
        let wanted: Vec<i32> = positions.iter().map(|(p, _)| *p).collect();
        let meta = self.topics.get_with(&self.client, topic, &wanted).await?;
        let mut results: HashMap<i32, Result<Fetched, ClientError>> = HashMap::new();
        // Partitions by leader, in order.
        let mut by_leader: BTreeMap<i32, Vec<(i32, i64)>> = BTreeMap::new();
        for &(partition, offset) in positions {
            match meta.leader(partition) {
                Ok((leader, _, _)) => by_leader
                    .entry(leader)
                    .or_default()
                    .push((partition, offset)),
                Err(e) => {
                    results.insert(partition, Err(e));
                }
            }
        }
        let mut requests = JoinSet::new();
        for (_, partitions) in by_leader {
            let Some(&(first, _)) = partitions.first() else {
                continue;
            };
            let conn = match meta.leader_connection(&self.client, first).await {
                Ok(conn) => conn,
                Err(e) => {
                    for (p, _) in partitions {
                        results.insert(p, Err(e.clone()));
                    }
                    continue;
                }
            };
            let (meta, options, max_uncompressed) = (meta.clone(), *options, self.max_uncompressed);
            requests.spawn(async move {
                let outcome =
                    fetch_from(&conn, &meta, &partitions, &options, max_uncompressed).await;
                (partitions, outcome)
            });
        }
        while let Some(joined) = requests.join_next().await {
            let (partitions, outcome) =
                joined.map_err(|e| ClientError::Protocol(format!("fetch task failed: {e}")))?;
            match outcome {
                Ok(answers) => results.extend(answers),
                Err(e) => {
                    for (p, _) in partitions {
                        results.insert(p, Err(e.clone()));
                    }
                }
            }
        }
        if results
            .values()
            .any(|r| r.as_ref().is_err_and(is_stale_metadata))
        {
            self.topics.invalidate(topic);
        }
        Ok(positions
            .iter()
            .map(|&(p, _)| {
                let result = results.remove(&p).unwrap_or_else(|| {
                    Err(ClientError::Protocol(format!(
                        "partition {p} was named twice"
                    )))
                });
                (p, result)
            })
            .collect())
    }
}

/// One sessionless Fetch of `partitions` (all led by `conn`'s node).
async fn fetch_from(
    conn: &Connection,
    meta: &TopicMeta,
    partitions: &[(i32, i64)],
    options: &FetchOptions,
    max_uncompressed: usize,
) -> Result<Vec<(i32, Result<Fetched, ClientError>)>, ClientError> {
    let mut version = conn.negotiated_version::<FetchRequest>().await?;
    if meta.id.is_nil() {
        version = version.min(TOPIC_ID_VERSION - 1);
    }
    let by_id = version >= TOPIC_ID_VERSION;
    let request = fetch_request(meta, by_id, partitions, options);
    let wait = Duration::from_millis(u64::try_from(options.max_wait_ms).unwrap_or(0));
    let response = conn
        .send_with_timeout(
            request,
            version,
            conn.config().request_timeout.saturating_add(wait),
        )
        .await?;
    ClientError::check(FetchRequest::KEY, response.error_code, None)?;
    let mut answers: HashMap<i32, _> = response
        .responses
        .into_iter()
        .filter(|t| {
            if by_id {
                t.topic_id == meta.id
            } else {
                t.topic == meta.name
            }
        })
        .flat_map(|t| t.partitions)
        .map(|p| (p.partition_index, p))
        .collect();
    let read_committed = options.isolation_level == IsolationLevel::ReadCommitted;
    Ok(partitions
        .iter()
        .map(|&(partition, offset)| {
            let result = match answers.remove(&partition) {
                None => Err(ClientError::Protocol(format!(
                    "Fetch v{version} response has no entry for {}-{partition}",
                    meta.name
                ))),
                Some(p) => fetched(p, &meta.name, offset, read_committed, max_uncompressed),
            };
            (partition, result)
        })
        .collect())
}

/// The sessionless FetchRequest for `partitions` of the topic, named by id (`by_id`) or name.
fn fetch_request(
    meta: &TopicMeta,
    by_id: bool,
    partitions: &[(i32, i64)],
    options: &FetchOptions,
) -> FetchRequest {
    FetchRequest {
        max_wait_ms: options.max_wait_ms,
        min_bytes: options.min_bytes,
        max_bytes: options.max_bytes,
        isolation_level: options.isolation_level.id(),
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: if by_id {
                String::new()
            } else {
                meta.name.clone()
            },
            topic_id: if by_id { meta.id } else { Uuid::nil() },
            partitions: partitions
                .iter()
                .map(|&(partition, offset)| FetchPartition {
                    partition,
                    fetch_offset: offset,
                    partition_max_bytes: options.partition_max_bytes,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// What one partition's answer `p` holds for a Fetch at `offset` of `topic`.
fn fetched(
    p: PartitionData,
    topic: &str,
    offset: i64,
    read_committed: bool,
    max_uncompressed: usize,
) -> Result<Fetched, ClientError> {
    ClientError::check(FetchRequest::KEY, p.error_code, None)?;
    let data = p.records.map(|r| r.to_bytes()).unwrap_or_default();
    let aborted = if read_committed {
        p.aborted_transactions.unwrap_or_default()
    } else {
        Vec::new()
    };
    let label = format!("{topic}-{}", p.partition_index);
    let (records, next_offset) = decode_records(
        data,
        offset,
        &aborted,
        read_committed,
        max_uncompressed,
        &label,
    )?;
    Ok(Fetched {
        records,
        high_watermark: p.high_watermark,
        last_stable_offset: p.last_stable_offset,
        log_start_offset: p.log_start_offset,
        next_offset,
    })
}

/// The records of a Fetch answer's `data` at or after `fetch_offset`, and the next offset to
/// fetch; see the [module documentation](self).
fn decode_records(
    data: Bytes,
    fetch_offset: i64,
    aborted: &[AbortedTransaction],
    read_committed: bool,
    max_uncompressed: usize,
    label: &str,
) -> Result<(Vec<ConsumedRecord>, i64), ClientError> {
    let corrupt = |what: String| {
        ClientError::Protocol(format!("Fetch of {label} at offset {fetch_offset}: {what}"))
    };
    let had_bytes = !data.is_empty();
    let mut records = Vec::new();
    let mut next_offset = fetch_offset;
    let mut whole_batches = 0usize;
    let mut aborted = AbortedTransactions::new(aborted);
    for item in split_batches(data) {
        let (header, bytes) = match item {
            Ok(batch) => batch,
            // A partial batch at the end: the broker cut the answer at its size limits.
            Err(RecordsError::Truncated { .. }) => break,
            Err(e) => return Err(corrupt(e.to_string())),
        };
        whole_batches += 1;
        let batch = RecordBatch::from_parts(header, bytes);
        batch
            .verify_crc()
            .map_err(|e| corrupt(format!("batch at offset {}: {e}", header.base_offset)))?;
        next_offset = next_offset.max(header.next_offset());
        if read_committed && header.has_producer_id() && aborted.skips(&batch, max_uncompressed) {
            continue;
        }
        if header.is_control() {
            continue;
        }
        let batch_records = batch
            .records(max_uncompressed)
            .map_err(|e| corrupt(format!("batch at offset {}: {e}", header.base_offset)))?;
        for record in batch_records {
            let record = record
                .map_err(|e| corrupt(format!("batch at offset {}: {e}", header.base_offset)))?;
            let offset = record.offset(&header);
            if offset >= fetch_offset {
                records.push(consumed(record, offset, &batch));
            }
        }
    }
    if had_bytes && whole_batches == 0 {
        return Err(ClientError::Protocol(format!(
            "Failed to make progress reading messages at {label}={fetch_offset}. Received a non-empty fetch response from the server, but no complete records were found."
        )));
    }
    Ok((records, next_offset))
}

/// A record of `batch`, at `offset`, as the consumer hands it out.
#[inline]
fn consumed(record: Record, offset: i64, batch: &RecordBatch) -> ConsumedRecord {
    let header = batch.header();
    ConsumedRecord {
        offset,
        timestamp: record.timestamp(header),
        timestamp_type: header.timestamp_type(),
        headers: record
            .headers
            .into_iter()
            .map(|h| (String::from_utf8_lossy(&h.key).into_owned(), h.value))
            .collect(),
        key: record.key,
        value: record.value,
    }
}

/// Kafka's CompletedFetch: aborted transactions by first offset, and the producers whose
/// aborted transaction has begun and not yet ended with its ABORT marker.
struct AbortedTransactions {
    pending: std::iter::Peekable<std::vec::IntoIter<(i64, i64)>>,
    producers: HashSet<i64>,
}

impl AbortedTransactions {
    fn new(aborted: &[AbortedTransaction]) -> AbortedTransactions {
        let mut pending: Vec<(i64, i64)> = aborted
            .iter()
            .map(|a| (a.first_offset, a.producer_id))
            .collect();
        pending.sort_unstable();
        AbortedTransactions {
            pending: pending.into_iter().peekable(),
            producers: HashSet::new(),
        }
    }

    /// Whether read_committed skips `batch` (one with a producer id) as part of an aborted
    /// transaction. Batches are met in offset order.
    fn skips(&mut self, batch: &RecordBatch, max_uncompressed: usize) -> bool {
        let header = batch.header();
        while let Some(&(first, producer)) = self.pending.peek() {
            if first > header.last_offset() {
                break;
            }
            self.producers.insert(producer);
            self.pending.next();
        }
        if header.is_control() {
            if is_abort_marker(batch, max_uncompressed) {
                self.producers.remove(&header.producer_id);
            }
            return false;
        }
        header.is_transactional() && self.producers.contains(&header.producer_id)
    }
}

/// Whether a control batch holds an ABORT marker (its first record's key says so).
fn is_abort_marker(batch: &RecordBatch, max_uncompressed: usize) -> bool {
    let first = batch
        .records(max_uncompressed)
        .ok()
        .and_then(|mut records| records.next())
        .and_then(Result::ok);
    first
        .and_then(|r| r.key)
        .is_some_and(|key| ControlRecordType::parse_key(&key) == Ok(ControlRecordType::Abort))
}

fn millis_i32(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_record_batches::{
        BatchBuilder, BatchOptions, Compression, RecordHeader, NO_TIMESTAMP,
    };

    fn batch(base_offset: i64, values: &[&str]) -> Bytes {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset,
            ..Default::default()
        });
        for (i, v) in values.iter().enumerate() {
            let headers = [RecordHeader::new(
                Bytes::from_static(b"h"),
                Some(Bytes::from(format!("{i}"))),
            )];
            b.push(
                1_000 + i as i64,
                Some(v.as_bytes()),
                Some(v.as_bytes()),
                &headers,
            )
            .unwrap();
        }
        b.build().unwrap()
    }

    fn control(base_offset: i64, producer_id: i64, kind: ControlRecordType) -> Bytes {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset,
            control: true,
            transactional: true,
            producer_id,
            producer_epoch: 0,
            ..Default::default()
        });
        b.push(
            NO_TIMESTAMP,
            Some(&kind.key()),
            Some(&[0, 0, 0, 0, 0, 0]),
            &[],
        )
        .unwrap();
        b.build().unwrap()
    }

    fn transactional(base_offset: i64, producer_id: i64, value: &str) -> Bytes {
        let mut b = BatchBuilder::new(BatchOptions {
            base_offset,
            transactional: true,
            producer_id,
            producer_epoch: 0,
            base_sequence: 0,
            ..Default::default()
        });
        b.push(5, None, Some(value.as_bytes()), &[]).unwrap();
        b.build().unwrap()
    }

    fn concat(parts: &[Bytes]) -> Bytes {
        parts
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect::<Vec<u8>>()
            .into()
    }

    fn values(records: &[ConsumedRecord]) -> Vec<(i64, String)> {
        records
            .iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn records_below_the_fetch_offset_and_a_trailing_partial_batch_are_skipped() {
        let first = batch(0, &["a", "b", "c"]);
        let second = batch(3, &["d"]);
        let third = batch(4, &["e"]);
        let data = concat(&[first, second, third.slice(..third.len() - 1)]);
        let (records, next) = decode_records(data, 1, &[], false, 1 << 20, "t-0").unwrap();
        assert_eq!(
            values(&records),
            vec![(1, "b".into()), (2, "c".into()), (3, "d".into())]
        );
        assert_eq!(next, 4);
        assert_eq!(records[0].timestamp, 1_001);
        assert_eq!(records[0].timestamp_type, TimestampType::CreateTime);
        assert_eq!(
            records[0].headers,
            vec![("h".to_string(), Some(Bytes::from_static(b"1")))]
        );
        assert_eq!(records[0].key.as_deref(), Some(&b"b"[..]));
    }

    #[test]
    fn nothing_but_a_partial_batch_is_an_error_and_nothing_is_nothing() {
        let only = batch(0, &["a"]);
        let e = decode_records(only.slice(..only.len() - 3), 0, &[], false, 1 << 20, "t-0")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("Failed to make progress reading messages at t-0=0"),
            "{e}"
        );
        assert_eq!(
            decode_records(Bytes::new(), 7, &[], false, 1 << 20, "t-0").unwrap(),
            (vec![], 7)
        );
    }

    #[test]
    fn control_batches_are_skipped_and_aborted_ones_with_read_committed() {
        let data = concat(&[
            transactional(0, 9, "aborted"),
            control(1, 9, ControlRecordType::Abort),
            transactional(2, 9, "committed"),
            control(3, 9, ControlRecordType::Commit),
            batch(4, &["plain"]),
        ]);
        let aborted = [AbortedTransaction {
            producer_id: 9,
            first_offset: 0,
            ..Default::default()
        }];
        let (records, next) =
            decode_records(data.clone(), 0, &aborted, true, 1 << 20, "t-0").unwrap();
        assert_eq!(
            values(&records),
            vec![(2, "committed".into()), (4, "plain".into())]
        );
        assert_eq!(next, 5);
        let (records, _) = decode_records(data, 0, &[], false, 1 << 20, "t-0").unwrap();
        assert_eq!(
            values(&records),
            vec![
                (0, "aborted".into()),
                (2, "committed".into()),
                (4, "plain".into())
            ]
        );
    }

    #[test]
    fn compressed_batches_decode_and_corrupt_ones_do_not() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut b = BatchBuilder::new(BatchOptions {
                base_offset: 10,
                compression: codec,
                ..Default::default()
            });
            b.push(1, None, Some(b"x"), &[]).unwrap();
            b.push(2, None, Some(b"y"), &[]).unwrap();
            let (records, next) =
                decode_records(b.build().unwrap(), 10, &[], false, 1 << 20, "t-0").unwrap();
            assert_eq!(
                values(&records),
                vec![(10, "x".into()), (11, "y".into())],
                "{codec}"
            );
            assert_eq!(next, 12);
        }
        let mut bad = batch(0, &["a"]).to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let e = decode_records(bad.into(), 0, &[], false, 1 << 20, "t-0").unwrap_err();
        assert!(
            matches!(e, ClientError::Protocol(_)) && e.to_string().contains("corrupt"),
            "{e}"
        );
    }
}
