//! In gateway mode the coordinator shards keep their logs in the upstream cluster, not on
//! kcoord's disk: shard `i`'s log is partition `i` of a compacted topic
//! (`gateway.coordinator.log.topic`), so a kcoord node holds no state of its own and any node
//! can take a shard over by reading its partition.
//!
//! Each record is stored as Kafka's group coordinator stores its records in
//! `__consumer_offsets`: the key is the record type (a big-endian i16) before the encoded key,
//! the value the record's version before the encoded value, a tombstone a null value. The
//! cluster's log cleaner then compacts the partition as it compacts Kafka's own coordinator
//! logs: by key, keeping the latest of each.
//!
//! A shard writes with a transactional producer whose transactional id names the topic and the
//! partition, one transaction per write (a batch of one or more jobs' records, committed before
//! any request depending on it is answered). Claiming a shard ([`CoordinatorLogs::claim`])
//! initializes that producer, which bumps its epoch: every earlier writer of the shard (a node
//! that has lost it, or a previous run of this node) is fenced by the cluster's transaction
//! coordinator, and its open transaction is aborted before the claim returns. Reading the
//! partition with `read_committed` after the claim therefore sees exactly what was
//! acknowledged, and nothing a fenced writer can still add.

use bytes::{Buf, Bytes};
use kcoord_client::admin::NewTopic;
use kcoord_client::consume::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};
use kcoord_client::{
    Client, ClientError, Consumer, FetchOptions, IsolationLevel, ProducedRecord, Producer,
    ProducerConfig,
};
use kcoord_metadata::{LogRecord, MetadataLog};
use kcoord_wire::ErrorCode;

/// How long a topic just created may stay unknown to the broker asked.
const TOPIC_PROPAGATION: std::time::Duration = std::time::Duration::from_secs(30);

/// Why the coordinator logs' topic cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorLogError {
    #[error("the upstream cluster: {0}")]
    Upstream(#[from] ClientError),
    #[error(
        "upstream topic {topic} has {found} partitions, but offsets.topic.num.partitions is {shards}: \
         groups hash to shards by that count, and another would strand them (set it to {found}, \
         or name another gateway.coordinator.log.topic)"
    )]
    PartitionCount {
        topic: String,
        found: usize,
        shards: usize,
    },
    #[error("offset {offset} of {topic}-{partition} is not a kcoord coordinator record: {why}")]
    NotARecord {
        topic: String,
        partition: usize,
        offset: i64,
        why: &'static str,
    },
    #[error("a coordinator record without a key cannot be kept in a compacted topic (type {0})")]
    Keyless(i16),
}

/// The upstream topic of the coordinator shards' logs.
#[derive(Debug)]
pub struct CoordinatorLogs {
    client: Client,
    topic: String,
    shards: usize,
}

impl CoordinatorLogs {
    /// Connects to the cluster and makes sure the topic exists, compacted, with one partition
    /// per shard (created with `replication_factor`, -1 for the cluster's default).
    pub async fn open(
        client: Client,
        topic: &str,
        shards: usize,
        replication_factor: i16,
    ) -> Result<CoordinatorLogs, CoordinatorLogError> {
        let logs = CoordinatorLogs {
            client,
            topic: topic.to_owned(),
            shards,
        };
        logs.ensure_topic(replication_factor).await?;
        Ok(logs)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    async fn ensure_topic(&self, replication_factor: i16) -> Result<(), CoordinatorLogError> {
        let partitions = i32::try_from(self.shards).unwrap_or(i32::MAX);
        create_compacted(&self.client, &self.topic, partitions, replication_factor).await?;
        let consumer = Consumer::new(self.client.clone());
        let found = once_propagated(|| consumer.partitions(&self.topic))
            .await?
            .len();
        if found != self.shards {
            return Err(CoordinatorLogError::PartitionCount {
                topic: self.topic.clone(),
                found,
                shards: self.shards,
            });
        }
        Ok(())
    }

    /// Takes shard `shard` over: fences every earlier writer of its partition, then reads the
    /// partition's committed records. The writer appends after them.
    pub async fn claim(
        &self,
        shard: usize,
    ) -> Result<(ShardLogWriter, MetadataLog), CoordinatorLogError> {
        let config = ProducerConfig {
            transactional_id: Some(format!("kcoord-coordinator-log-{}-{shard}", self.topic)),
            ..ProducerConfig::default()
        };
        let producer = Producer::new(self.client.clone(), config)?;
        producer.init_transactions().await?;
        let log = self.read(shard).await?;
        let writer = ShardLogWriter {
            producer,
            topic: self.topic.clone(),
            partition: i32::try_from(shard).unwrap_or(i32::MAX),
        };
        Ok((writer, log))
    }

    /// The committed records of the shard's partition, from its start to its end.
    async fn read(&self, shard: usize) -> Result<MetadataLog, CoordinatorLogError> {
        let partition = i32::try_from(shard).unwrap_or(i32::MAX);
        let consumer = Consumer::new(self.client.clone());
        let (start, end) = bounds(&consumer, &self.topic, partition).await?;
        let options = FetchOptions {
            isolation_level: IsolationLevel::ReadCommitted,
            max_wait_ms: 0,
            ..FetchOptions::default()
        };
        let mut log = MetadataLog::new();
        let mut position = start.max(0);
        while position < end {
            let fetched = consumer
                .fetch(&self.topic, partition, position, &options)
                .await?;
            let mut batch = Vec::with_capacity(fetched.records.len());
            for record in fetched.records {
                let stored = decode(record.key, record.value).map_err(|why| {
                    CoordinatorLogError::NotARecord {
                        topic: self.topic.clone(),
                        partition: shard,
                        offset: record.offset,
                        why,
                    }
                })?;
                batch.push(stored);
            }
            log.append(batch);
            // The claim resolved every transaction, so the stable end is the end: a fetch that
            // moves no further has nothing more to give.
            if fetched.next_offset <= position {
                break;
            }
            position = fetched.next_offset;
        }
        Ok(log)
    }
}

/// The first and next offsets of `topic`'s `partition`.
pub(crate) async fn bounds(
    consumer: &Consumer,
    topic: &str,
    partition: i32,
) -> Result<(i64, i64), ClientError> {
    let (start, _) = consumer
        .list_offsets(topic, partition, EARLIEST_TIMESTAMP)
        .await?;
    let (end, _) = consumer
        .list_offsets(topic, partition, LATEST_TIMESTAMP)
        .await?;
    Ok((start, end))
}

/// Creates `topic` compacted, with `partitions` partitions and `replication_factor` (-1 for the
/// cluster's default), unless it exists.
pub(crate) async fn create_compacted(
    client: &Client,
    topic: &str,
    partitions: i32,
    replication_factor: i16,
) -> Result<(), ClientError> {
    let wanted =
        NewTopic::new(topic, partitions, replication_factor).config("cleanup.policy", "compact");
    for created in client.create_topics(&[wanted], false).await? {
        match created.result {
            Ok(_) => {}
            Err(e) if e.error_code() == Some(ErrorCode::TOPIC_ALREADY_EXISTS) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `ask`'s answer, asked again while it fails with a retriable error for at most
/// [`TOPIC_PROPAGATION`]: a topic just created reaches each broker a little after the
/// controller.
pub(crate) async fn once_propagated<T, F, A>(mut ask: F) -> Result<T, ClientError>
where
    F: FnMut() -> A,
    A: std::future::Future<Output = Result<T, ClientError>>,
{
    let deadline = std::time::Instant::now() + TOPIC_PROPAGATION;
    loop {
        match ask().await {
            Err(e) if e.is_retriable() && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            result => return result,
        }
    }
}

/// The writer of one claimed shard's partition.
#[derive(Debug)]
pub struct ShardLogWriter {
    producer: Producer,
    topic: String,
    partition: i32,
}

impl ShardLogWriter {
    /// Writes `records` as one batch in one transaction, committed when this returns `Ok`.
    /// PRODUCER_FENCED or INVALID_PRODUCER_EPOCH ([`is_fenced`]) means another writer claimed
    /// the shard; any other error leaves the transaction to be aborted by the next claim.
    pub async fn append(&self, records: &[LogRecord]) -> Result<(), CoordinatorLogError> {
        let produced = records.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        if produced.is_empty() {
            return Ok(());
        }
        self.producer
            .send(&self.topic, self.partition, &produced)
            .await?;
        self.producer.commit_transaction().await?;
        Ok(())
    }

    /// Aborts the open transaction (after a failed append), which tells whether this writer
    /// still holds the shard: a fenced one gets [`is_fenced`]'s errors.
    pub async fn abort(&self) -> Result<(), CoordinatorLogError> {
        Ok(self.producer.abort_transaction().await?)
    }
}

/// Whether `error` says another writer has claimed the shard since.
pub fn is_fenced(error: &CoordinatorLogError) -> bool {
    matches!(error, CoordinatorLogError::Upstream(e) if matches!(
        e.error_code(),
        Some(ErrorCode::PRODUCER_FENCED | ErrorCode::INVALID_PRODUCER_EPOCH)
    ))
}

/// A record as the log takes it: `(type, version, key, value)`.
pub(crate) type Entry = (i16, i16, Option<Bytes>, Option<Bytes>);

/// A stored record as the log's entry, or why it is not one.
pub(crate) fn decode(key: Option<Bytes>, value: Option<Bytes>) -> Result<Entry, &'static str> {
    let mut key = key.ok_or("no key")?;
    if key.len() < 2 {
        return Err("a key shorter than its record type");
    }
    let record_type = key.get_i16();
    let (version, value) = match value {
        None => (0, None),
        Some(mut value) if value.len() >= 2 => (value.get_i16(), Some(value)),
        Some(_) => return Err("a value shorter than its version"),
    };
    Ok((record_type, version, Some(key), value))
}

fn encode(record: &LogRecord) -> Result<ProducedRecord, CoordinatorLogError> {
    let key = record
        .key
        .as_ref()
        .ok_or(CoordinatorLogError::Keyless(record.record_type))?;
    Ok(stored(
        record.record_type,
        record.version,
        key,
        record.value.as_deref(),
    ))
}

/// A keyed record as the cluster keeps it: the record type before the key, the version before
/// the value, a tombstone a null value ([`decode`] reads it back).
pub(crate) fn stored(
    record_type: i16,
    version: i16,
    key: &[u8],
    value: Option<&[u8]>,
) -> ProducedRecord {
    let mut stored_key = Vec::with_capacity(2 + key.len());
    stored_key.extend_from_slice(&record_type.to_be_bytes());
    stored_key.extend_from_slice(key);
    let value = value.map(|value| {
        let mut stored = Vec::with_capacity(2 + value.len());
        stored.extend_from_slice(&version.to_be_bytes());
        stored.extend_from_slice(value);
        Bytes::from(stored)
    });
    ProducedRecord {
        key: Some(Bytes::from(stored_key)),
        value,
        ..ProducedRecord::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_stored_as_kafka_stores_its_coordinator_records() {
        let record = LogRecord {
            offset: 4,
            record_type: 17,
            version: 3,
            key: Some(Bytes::from_static(b"\x00\x01g")),
            value: Some(Bytes::from_static(b"v")),
        };
        let stored = encode(&record).unwrap();
        assert_eq!(stored.key.as_deref(), Some(&b"\x00\x11\x00\x01g"[..]));
        assert_eq!(stored.value.as_deref(), Some(&b"\x00\x03v"[..]));
        assert_eq!(
            decode(stored.key, stored.value),
            Ok((17, 3, record.key.clone(), record.value.clone()))
        );
        assert_eq!(decode(None, None), Err("no key"));
        assert!(decode(Some(Bytes::from_static(b"\x00")), None).is_err());
        assert!(decode(
            Some(Bytes::from_static(b"\x00\x11")),
            Some(Bytes::from_static(b"\x01"))
        )
        .is_err());
        let tombstone = LogRecord {
            value: None,
            ..record.clone()
        };
        assert_eq!(encode(&tombstone).unwrap().value, None);
        let keyless = LogRecord {
            key: None,
            ..record
        };
        assert!(matches!(
            encode(&keyless),
            Err(CoordinatorLogError::Keyless(17))
        ));
    }
}
