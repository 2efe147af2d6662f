//! Controller snapshots: records that, replayed into an empty [`State`], rebuild the
//! controller's part of it (Kafka's controller writes such a snapshot from its managers'
//! `iterator`s). [`snapshot_log`] puts them in a [`MetadataLog`] that
//! [`crate::file_log::LogWriter::rewrite`] can write in place of the whole log.
//!
//! # What a snapshot cannot carry
//!
//! Two fields of the images are log offsets, not record contents, and come from the offset a
//! snapshot record is replayed at, as in Kafka (whose snapshot records all replay at the
//! snapshot's offset):
//!
//! - a broker's [`crate::BrokerRegistration::registration_offset`] becomes the offset of its
//!   RegisterBrokerRecord in the snapshot. Placed at the end of the snapshot log, it is at or
//!   below the snapshot's last offset; a broker that fetched the whole snapshot has passed it.
//! - the finalized-features epoch ([`crate::FeaturesImage::epoch`]) becomes the offset of the
//!   snapshot's last FeatureLevelRecord, and -1 if no feature is finalized (a log whose only
//!   feature records disabled features had an epoch and no level to show for it).
//!
//! Everything else replays to an equal image (the tests check it). Coordinator state (streams
//! groups, offsets) is not part of a controller snapshot: a shard's log is compacted instead.
use kcoord_wire::records::{self as r, register_broker_record as rb};

use crate::image::group_configs::GROUP_RESOURCE;
use crate::image::topics::{TopicImage, TOPIC_RESOURCE};
use crate::log::{MetadataLog, OffsetBehind};
use crate::metadata_version::FEATURE_NAME;
use crate::record::{Record, RecordAndVersion, RecordError};
use crate::{file_log, BrokerRegistration, State};

impl State {
    /// Records that, replayed in order into an empty [`State`], rebuild its controller images:
    /// finalized features (`metadata.version` first), the producer id block, topics with their
    /// configs and partitions, group configs, then broker registrations (fenced state,
    /// controlled shutdown, directories, features and static configs folded into one
    /// RegisterBrokerRecord each). See the module docs for the two offsets it cannot carry.
    pub fn snapshot_records(&self) -> Vec<Record> {
        let mut records = self.feature_records();
        if self.producer_ids.next_producer_id() > 0 {
            records.push(Record::ProducerIds(r::ProducerIdsRecord {
                // The image keeps only the next block's start, all that replay checks.
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: self.producer_ids.next_producer_id(),
                ..Default::default()
            }));
        }
        for topic in self.topics.iter() {
            push_topic(&mut records, topic);
        }
        for (group, configs) in self.group_configs.iter() {
            for (name, value) in configs {
                records.push(config(GROUP_RESOURCE, group, name, value));
            }
        }
        records.extend(self.brokers.iter().map(register_broker));
        records
    }

    fn feature_records(&self) -> Vec<Record> {
        let mut finalized = self.features.finalized();
        let metadata_version = finalized.remove_entry(FEATURE_NAME);
        metadata_version
            .into_iter()
            .chain(finalized)
            .map(|(name, feature_level)| {
                Record::FeatureLevel(r::FeatureLevelRecord {
                    name,
                    feature_level,
                    ..Default::default()
                })
            })
            .collect()
    }
}

fn config(resource_type: i8, resource: &str, name: &str, value: &str) -> Record {
    Record::Config(r::ConfigRecord {
        resource_type,
        resource_name: resource.to_string(),
        name: name.to_string(),
        value: Some(value.to_string()),
        ..Default::default()
    })
}

/// The topic, then its configs (a config of a topic not yet created would be ignored), then its
/// partitions.
fn push_topic(records: &mut Vec<Record>, topic: &TopicImage) {
    records.push(Record::Topic(r::TopicRecord {
        name: topic.name.clone(),
        topic_id: topic.id,
        replication_factor: topic.requested_replication_factor,
        ..Default::default()
    }));
    for (name, value) in &topic.configs {
        records.push(config(TOPIC_RESOURCE, &topic.name, name, value));
    }
    for p in topic.partitions.values() {
        records.push(Record::Partition(r::PartitionRecord {
            partition_id: p.partition,
            topic_id: topic.id,
            replicas: p.replicas.clone(),
            isr: p.isr.clone(),
            leader: p.leader,
            leader_epoch: p.leader_epoch,
            ..Default::default()
        }));
    }
}

fn register_broker(b: &BrokerRegistration) -> Record {
    Record::RegisterBroker(r::RegisterBrokerRecord {
        broker_id: b.id,
        is_migrating_zk_broker: b.is_migrating_zk_broker,
        incarnation_id: b.incarnation_id,
        broker_epoch: b.epoch,
        end_points: b
            .listeners
            .iter()
            .map(|l| rb::BrokerEndpoint {
                name: l.name.clone(),
                host: l.host.clone(),
                port: l.port,
                security_protocol: l.security_protocol,
                ..Default::default()
            })
            .collect(),
        features: b
            .supported_features
            .iter()
            .map(|(name, range)| rb::BrokerFeature {
                name: name.clone(),
                min_supported_version: range.min,
                max_supported_version: range.max,
                ..Default::default()
            })
            .collect(),
        rack: b.rack.clone(),
        fenced: b.fenced,
        in_controlled_shutdown: b.in_controlled_shutdown,
        log_dirs: b.directories.clone(),
        cordoned_log_dirs: b.cordoned_directories.clone(),
        static_configs: b
            .static_configs
            .iter()
            .map(|(name, value)| rb::BrokerStaticConfig {
                name: name.clone(),
                value: value.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("snapshot record {index}: {source}")]
    TooLarge {
        index: usize,
        #[source]
        source: file_log::EntryTooLarge,
    },
    #[error("a snapshot of {records} records does not fit below next offset {next_offset}")]
    TooManyRecords { records: usize, next_offset: u64 },
}

/// A log holding `records` (encoded at their versions) at the offsets just below
/// `next_offset`, with that next offset: what a controller writes with
/// [`crate::file_log::LogWriter::rewrite`] in place of its whole log, so that offsets handed out
/// afterwards go on from `next_offset`. A snapshot of a log never has more records than the log
/// had offsets, so they fit.
pub fn snapshot_log(
    records: &[RecordAndVersion],
    next_offset: u64,
) -> Result<MetadataLog, SnapshotError> {
    let first =
        next_offset
            .checked_sub(records.len() as u64)
            .ok_or(SnapshotError::TooManyRecords {
                records: records.len(),
                next_offset,
            })?;
    let mut log = MetadataLog::new();
    for (index, r) in records.iter().enumerate() {
        let (record_type, version, key, value) = r.record.encode_version(r.version)?;
        file_log::check_entry_size(key.as_deref(), value.as_deref())
            .map_err(|source| SnapshotError::TooLarge { index, source })?;
        push(
            &mut log,
            first + index as u64,
            (record_type, version, key, value),
        );
    }
    push_next_offset(&mut log, next_offset);
    Ok(log)
}

type Encoded = (i16, i16, Option<bytes::Bytes>, Option<bytes::Bytes>);

/// Offsets go up by one from `first`, starting at an empty log: `push_at` cannot refuse them.
fn push(log: &mut MetadataLog, offset: u64, (record_type, version, key, value): Encoded) {
    let pushed: Result<(), OffsetBehind> = log.push_at(offset, record_type, version, key, value);
    debug_assert!(pushed.is_ok(), "{pushed:?}");
}

/// `next_offset` is at least the last record's offset + 1 by construction.
fn push_next_offset(log: &mut MetadataLog, next_offset: u64) {
    let advanced = log.advance_next_offset(next_offset);
    debug_assert!(advanced.is_ok(), "{advanced:?}");
}

#[cfg(test)]
mod tests;
