//! Controller snapshots: records that, replayed into an empty [`LogState`], rebuild the
//! controller's part of it (Kafka's controller writes such a snapshot from its managers'
//! `iterator`s). [`LogState::snapshot`] puts them in a [`MetadataLog`] that
//! [`crate::file_log::LogWriter::rewrite`] writes in place of the whole log, so that a restart
//! reads the snapshot plus what was appended after it, not the whole history.
//!
//! # Offsets a snapshot keeps
//!
//! Two fields of the images are log offsets, not record contents: a broker's
//! [`crate::BrokerRegistration::registration_offset`] (the offset of its RegisterBrokerRecord,
//! which a heartbeat's `current_metadata_offset` must reach for the broker to be caught up and
//! unfenced) and the finalized-features epoch ([`crate::FeaturesImage::epoch`], the offset of the
//! last FeatureLevelRecord). Kafka replays every snapshot record at the snapshot's offset, which
//! moves both; its brokers replicate the metadata log and soon report an offset past it. A
//! kcoord broker replicates nothing and reports its own registration offset (its broker epoch),
//! so [`LogState::snapshot`] keeps both offsets instead: the log may have gaps, and each
//! RegisterBrokerRecord is placed at its broker's registration offset, the last
//! FeatureLevelRecord at the features epoch, and every other record at the highest offsets
//! left free below the snapshot's next offset. Replaying that log gives back the very same
//! state (the tests check it); the broker epoch itself is a field of the record, as in Kafka.
//!
//! [`LogState::snapshot_records`] and [`snapshot_log`] are the plain form: records at offsets just
//! below the next offset, where a registration offset becomes the offset of the broker's
//! record in the snapshot and the features epoch that of the last FeatureLevelRecord (-1 if no
//! feature is finalized). Coordinator state (streams groups, offsets) is not part of a
//! controller snapshot: a shard's log is compacted instead.
use kcoord_wire::records::{self as r, register_broker_record as rb};

use crate::image::group_configs::GROUP_RESOURCE;
use crate::image::topics::{TopicImage, TOPIC_RESOURCE};
use std::collections::BTreeSet;

use crate::log::{MetadataLog, OffsetBehind};
use crate::metadata_version::{MetadataVersion, FEATURE_NAME};
use crate::record::{Record, RecordAndVersion, RecordError};
use crate::{file_log, BrokerRegistration, LogState};

impl LogState {
    /// Records that, replayed in order into an empty [`LogState`], rebuild its controller images:
    /// finalized features (`metadata.version` first), the producer id block, topics with their
    /// configs and partitions, group configs, ACLs, SCRAM credentials, then broker
    /// registrations (fenced state, controlled shutdown, directories, features and static
    /// configs folded into one RegisterBrokerRecord each). See the module docs for the two offsets it cannot carry.
    pub fn snapshot_records(&self) -> Vec<Record> {
        let mut records = self.feature_records();
        records.extend(self.other_records());
        records.extend(self.brokers.iter().map(register_broker));
        records
    }

    /// A snapshot of the controller images as a log whose next offset is `next_offset`, for
    /// [`crate::file_log::LogWriter::rewrite`]: the records of [`LogState::snapshot_records`], at
    /// the versions the finalized `metadata.version` writes them (FeatureLevelRecord and
    /// ProducerIdsRecord 0, RegisterBrokerRecord [`MetadataVersion::register_broker_record_version`],
    /// the others their latest, as the controller writes them), each at the offset that makes
    /// the replayed log equal to this state (module docs): registrations at their offsets, the
    /// last FeatureLevelRecord at the features epoch, the rest just below `next_offset`.
    ///
    /// Fails when the records do not fit below `next_offset` around those offsets, or a
    /// record does not encode or is too large for an entry; then nothing is to be written. A
    /// state replayed from a log with that next offset always fits: every record of the
    /// snapshot stands for at least one record of the log, at an offset of its own.
    pub fn snapshot(&self, next_offset: u64) -> Result<MetadataLog, SnapshotError> {
        let broker_version = self
            .features
            .metadata_version()
            .unwrap_or(MetadataVersion::LATEST)
            .register_broker_record_version();
        let (mut features, mut others) = self.versioned_records();
        let total = features.len() + others.len() + self.brokers.len();
        let misplaced = |reason: String| SnapshotError::Placement {
            records: total,
            next_offset,
            reason,
        };
        let mut placed: Vec<(u64, RecordAndVersion)> = Vec::with_capacity(total);
        let mut taken = BTreeSet::new();
        let mut pin = |offset: u64, record: RecordAndVersion, what: &dyn Fn() -> String| {
            if offset >= next_offset || !taken.insert(offset) {
                return Err(misplaced(format!(
                    "{} at offset {offset} is taken or not below the next offset",
                    what()
                )));
            }
            placed.push((offset, record));
            Ok(())
        };
        let mut brokers: Vec<&BrokerRegistration> = self.brokers.iter().collect();
        brokers.sort_by_key(|b| b.registration_offset);
        for b in brokers {
            let record = register_broker(b).at_version(broker_version);
            pin(b.registration_offset, record, &|| {
                format!("the registration of broker {}", b.id)
            })?;
        }
        let epoch = u64::try_from(self.features.epoch()).ok();
        match (epoch, features.pop()) {
            (Some(epoch), Some(last)) => {
                pin(epoch, last, &|| "the last FeatureLevelRecord".to_owned())?;
                let below = free_below(&mut taken, epoch, features.len()).ok_or_else(|| {
                    misplaced(format!(
                        "{} FeatureLevelRecords do not fit below the features epoch {epoch}",
                        features.len() + 1
                    ))
                })?;
                placed.extend(below.into_iter().zip(features));
            }
            // No epoch to keep (no feature record ever counted): they go with the others.
            (None, last) => {
                features.extend(last);
                others.splice(0..0, features);
            }
            (Some(_), None) => {}
        }
        let at = free_below(&mut taken, next_offset, others.len()).ok_or_else(|| {
            misplaced(format!(
                "{} records do not fit below the next offset beside the {} kept offsets",
                others.len(),
                placed.len()
            ))
        })?;
        placed.extend(at.into_iter().zip(others));
        placed_log(placed, next_offset)
    }

    /// The feature records and the other records but the registrations, at the versions a
    /// snapshot writes them (module docs).
    fn versioned_records(&self) -> (Vec<RecordAndVersion>, Vec<RecordAndVersion>) {
        let features = self
            .feature_records()
            .into_iter()
            .map(|r| r.at_version(0))
            .collect();
        let others = self
            .other_records()
            .into_iter()
            .map(|r| match r {
                Record::ProducerIds(_) => r.at_version(0),
                r => r.at_latest_version(),
            })
            .collect();
        (features, others)
    }

    /// The producer id block, topics (with configs and partitions), group configs, ACLs,
    /// SCRAM credentials and client quotas.
    fn other_records(&self) -> Vec<Record> {
        let mut records = Vec::new();
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
        for (broker, configs) in self.broker_configs.iter() {
            for (name, value) in configs {
                records.push(config(crate::BROKER_RESOURCE, broker, name, value));
            }
        }
        records.extend(
            self.security
                .acls()
                .cloned()
                .map(Record::AccessControlEntry),
        );
        records.extend(
            self.security
                .credentials()
                .cloned()
                .map(Record::UserScramCredential),
        );
        records.extend(
            self.client_quotas
                .records()
                .into_iter()
                .map(Record::ClientQuota),
        );
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

/// A log of the `placed` records, each at its offset, whose next offset is `next_offset`.
fn placed_log(
    mut placed: Vec<(u64, RecordAndVersion)>,
    next_offset: u64,
) -> Result<MetadataLog, SnapshotError> {
    placed.sort_by_key(|(offset, _)| *offset);
    let mut log = MetadataLog::new();
    for (index, (offset, r)) in placed.into_iter().enumerate() {
        let encoded = encode(&r, index)?;
        let pushed = log.push_at(offset, encoded.0, encoded.1, encoded.2, encoded.3);
        debug_assert!(pushed.is_ok(), "{pushed:?}");
    }
    push_next_offset(&mut log, next_offset);
    Ok(log)
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
    #[error(
        "a snapshot of {records} records does not fit below next offset {next_offset}: {reason}"
    )]
    Placement {
        records: usize,
        next_offset: u64,
        reason: String,
    },
}

/// `count` offsets below `below` that are not `taken`, the highest ones, in increasing order;
/// they are taken. `None` when there are not that many.
fn free_below(taken: &mut BTreeSet<u64>, below: u64, count: usize) -> Option<Vec<u64>> {
    let mut found = Vec::with_capacity(count);
    let mut offset = below;
    while found.len() < count {
        offset = offset.checked_sub(1)?;
        if !taken.contains(&offset) {
            found.push(offset);
        }
    }
    taken.extend(found.iter().copied());
    found.reverse();
    Some(found)
}

/// One snapshot record, encoded, once it is known to fit an entry.
fn encode(r: &RecordAndVersion, index: usize) -> Result<Encoded, SnapshotError> {
    let encoded = r.record.encode_version(r.version)?;
    file_log::check_entry_size(encoded.2.as_deref(), encoded.3.as_deref())
        .map_err(|source| SnapshotError::TooLarge { index, source })?;
    Ok(encoded)
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
        push(&mut log, first + index as u64, encode(r, index)?);
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
