//! The metadata log of kcoord and the state built from it.
//!
//! Every change is a [`Record`] appended to a [`MetadataLog`] and applied by
//! [`LogState::replay`], the only way state changes. Restarting is replaying: a [`Store`] rebuilt
//! from the same log has the same state. The log compacts its keyed (coordinator) records as
//! Kafka compacts `__consumer_offsets`, keeping the latest record of each key; the [`log`]
//! module says why the compacted log still replays to the same state.
pub mod file_log;
pub mod image;
pub mod log;
pub mod metadata_version;
pub mod record;
pub mod snapshot;

pub use file_log::{CutReason, EntryTooLarge, FileLogError, LoadedLog, LogWriter, TailCut};
pub use image::broker_configs::{BrokerConfigsImage, BROKER_RESOURCE};
pub use image::brokers::{BrokerListener, BrokerRegistration, BrokersImage, FeatureRange};
pub use image::classic_groups::ClassicGroupsImage;
pub use image::client_quotas::{ClientQuotasImage, QuotaEntity};
pub use image::consumer_groups::{
    ConsumerGroup, ConsumerGroupMember, ConsumerGroupsImage, ConsumerMemberExtras,
    ConsumerMemberState, PartitionEpochs, ResolvedRegex, TopicPartitions,
};
pub use image::features::FeaturesImage;
pub use image::group_configs::{GroupConfigsImage, GROUP_RESOURCE};
pub use image::keyed_map::{Keyed, KeyedMap};
pub use image::offsets::{CommittedOffset, OffsetsImage};
pub use image::process_id::ProcessId;
pub use image::producer_ids::ProducerIdsImage;
pub use image::security::SecurityImage;
pub use image::streams::{
    entry_by_str, shared_assignment_configs, Endpoint, Id, MemberState, StreamsGroup,
    StreamsGroupMember, StreamsGroupsImage, TopologyVersion, MAX_TOPOLOGY_VERSIONS,
};
pub use image::tasks::{PendingTasks, SharedTasks, TaskEpochs, Tasks, TasksTuple};
pub use image::topics::{
    invalid_topic_name, is_internal_topic, is_valid_topic_name, unify_collision_chars,
    validate_topic_name, PartitionImage, TopicImage, TopicsImage, CLUSTER_METADATA_TOPIC,
    MAX_TOPIC_NAME_LENGTH,
};
pub use image::transactions::{TransactionMetadata, TransactionState, TransactionsImage};
pub use image::txn_offsets::TxnOffsetsImage;
pub use image::vec_map::{VecMap, VecSet};
pub use log::{LogRecord, LogRecordRef, MetadataLog, OffsetBehind};
pub use metadata_version::{MetadataVersion, MetadataVersionError};
pub use record::{Record, RecordAndVersion, RecordError};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("record at offset {offset} does not apply: {reason}")]
    Inconsistent { offset: u64, reason: String },
    #[error("record {index} of the batch (type {record_type}) is too large for the log: {source}")]
    TooLarge {
        index: usize,
        record_type: i16,
        #[source]
        source: file_log::EntryTooLarge,
    },
}

/// Everything the records describe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogState {
    pub topics: TopicsImage,
    pub streams_groups: StreamsGroupsImage,
    /// Classic groups as their last GroupMetadata record left them.
    pub classic_groups: ClassicGroupsImage,
    /// KIP-848 consumer groups.
    pub consumer_groups: ConsumerGroupsImage,
    pub offsets: OffsetsImage,
    pub brokers: BrokersImage,
    pub features: FeaturesImage,
    /// Per-group config overrides (ConfigRecords of resource type GROUP).
    pub group_configs: GroupConfigsImage,
    /// The producer ids handed out so far (Kafka's `ProducerIdControlManager`).
    pub producer_ids: ProducerIdsImage,
    /// Dynamic broker configs (ConfigRecords of resource type BROKER).
    pub broker_configs: BrokerConfigsImage,
    /// ACLs and SCRAM credentials.
    pub security: SecurityImage,
    /// Client quotas (AlterClientQuotas).
    pub client_quotas: ClientQuotasImage,
    /// The transaction coordinator's transactional ids.
    pub transactions: TransactionsImage,
    /// Offsets committed inside open transactions.
    pub txn_offsets: TxnOffsetsImage,
    /// Distinct group ids among the streams, classic and consumer groups and the groups with
    /// committed offsets.
    groups: usize,
}

impl LogState {
    /// The groups: streams groups, and groups that only have committed offsets (a streams
    /// group with offsets counts once). Kept as records replay, so reading it costs nothing.
    pub fn group_count(&self) -> usize {
        self.groups
    }

    fn holds_group(&self, group_id: &str) -> bool {
        self.streams_groups.get(group_id).is_some()
            || self.classic_groups.get(group_id).is_some()
            || self.consumer_groups.get(group_id).is_some()
            || self.offsets.group(group_id).is_some()
    }

    fn count_groups(&self) -> usize {
        let classic_only = self
            .classic_groups
            .iter()
            .filter(|(g, _)| self.streams_groups.get(g).is_none())
            .count();
        let offsets_only = self
            .offsets
            .group_ids()
            .filter(|g| {
                self.streams_groups.get(g).is_none() && self.classic_groups.get(g).is_none()
            })
            .filter(|g| self.consumer_groups.get(g).is_none())
            .count();
        self.streams_groups.len() + self.consumer_groups.len() + classic_only + offsets_only
    }

    /// The group a coordinator record belongs to.
    fn group_of(record: &Record) -> Option<&str> {
        match record {
            Record::OffsetCommit(k, _) => Some(&k.group),
            Record::GroupMetadata(k, _) => Some(&k.group),
            Record::StreamsGroupMetadata(k, _) => Some(&k.group_id),
            Record::StreamsGroupMemberMetadata(k, _) => Some(&k.group_id),
            Record::StreamsGroupTargetAssignmentMetadata(k, _) => Some(&k.group_id),
            Record::StreamsGroupTargetAssignmentMember(k, _) => Some(&k.group_id),
            Record::StreamsGroupCurrentMemberAssignment(k, _) => Some(&k.group_id),
            Record::StreamsGroupTopology(k, _) => Some(&k.group_id),
            Record::ConsumerGroupMetadata(k, _) => Some(&k.group_id),
            Record::ConsumerGroupPartitionMetadata(k, _) => Some(&k.group_id),
            Record::ConsumerGroupMemberMetadata(k, _) => Some(&k.group_id),
            Record::ConsumerGroupTargetAssignmentMetadata(k, _) => Some(&k.group_id),
            Record::ConsumerGroupTargetAssignmentMember(k, _) => Some(&k.group_id),
            Record::ConsumerGroupCurrentMemberAssignment(k, _) => Some(&k.group_id),
            Record::ConsumerGroupRegularExpression(k, _) => Some(&k.group_id),
            _ => None,
        }
    }

    /// Applies one record at log offset `offset`, keeping the group count.
    pub fn replay(&mut self, record: &Record, offset: u64) -> Result<(), ReplayError> {
        let Some(group) = Self::group_of(record) else {
            return self.replay_record(record, offset);
        };
        let before = self.holds_group(group);
        self.replay_record(record, offset)?;
        match (before, self.holds_group(group)) {
            (false, true) => self.groups += 1,
            (true, false) => self.groups = self.groups.saturating_sub(1),
            _ => {}
        }
        Ok(())
    }

    /// Applies one record at log offset `offset` (kept where Kafka keeps it, e.g. as a broker's
    /// registration offset, and used in error messages).
    fn replay_record(&mut self, record: &Record, offset: u64) -> Result<(), ReplayError> {
        let inconsistent = |reason: String| ReplayError::Inconsistent { offset, reason };
        match record {
            Record::Topic(r) => self.topics.replay_topic(r).map_err(inconsistent)?,
            Record::Partition(r) => self.topics.replay_partition(r).map_err(inconsistent)?,
            Record::RemoveTopic(r) => self.topics.replay_remove(r).map_err(inconsistent)?,
            Record::Config(r) => {
                self.topics.replay_config(r);
                self.group_configs.replay_config(r);
                self.broker_configs.replay_config(r);
            }
            Record::RegisterBroker(r) => self
                .brokers
                .replay_register(r, offset)
                .map_err(inconsistent)?,
            Record::UnregisterBroker(r) => {
                self.brokers.replay_unregister(r).map_err(inconsistent)?
            }
            Record::FenceBroker(r) => self.brokers.replay_fence(r).map_err(inconsistent)?,
            Record::UnfenceBroker(r) => self.brokers.replay_unfence(r).map_err(inconsistent)?,
            Record::BrokerRegistrationChange(r) => {
                self.brokers.replay_change(r).map_err(inconsistent)?
            }
            Record::FeatureLevel(r) => self.features.replay(r, offset).map_err(inconsistent)?,
            Record::ProducerIds(r) => self.producer_ids.replay(r).map_err(inconsistent)?,
            Record::AccessControlEntry(r) => self.security.replay_acl(r).map_err(inconsistent)?,
            Record::RemoveAccessControlEntry(r) => {
                self.security.replay_remove_acl(r).map_err(inconsistent)?
            }
            Record::UserScramCredential(r) => self.security.replay_credential(r),
            Record::ClientQuota(r) => self.client_quotas.replay(r),
            Record::RemoveUserScramCredential(r) => self
                .security
                .replay_remove_credential(r)
                .map_err(inconsistent)?,
            Record::OffsetCommit(k, v) => self.offsets.replay(k, v.as_ref(), offset),
            Record::GroupMetadata(k, v) => self.classic_groups.replay(k, v.as_ref()),
            Record::TransactionLog(k, v) => self.transactions.replay(k, v.as_ref()),
            Record::TxnOffsetCommit(k, v) => self.txn_offsets.replay(k, v.as_ref(), offset),
            Record::StreamsGroupMetadata(k, v) => {
                self.streams_groups.replay_metadata(&k.group_id, v.as_ref())
            }
            Record::StreamsGroupMemberMetadata(k, v) => {
                self.streams_groups
                    .replay_member_metadata(&k.group_id, &k.member_id, v.as_ref())
            }
            Record::StreamsGroupTargetAssignmentMetadata(k, v) => self
                .streams_groups
                .replay_target_metadata(&k.group_id, v.as_ref()),
            Record::StreamsGroupTargetAssignmentMember(k, v) => self
                .streams_groups
                .replay_target_member(&k.group_id, &k.member_id, v.as_ref()),
            Record::StreamsGroupCurrentMemberAssignment(k, v) => self
                .streams_groups
                .replay_current_assignment(&k.group_id, &k.member_id, v.as_ref()),
            Record::StreamsGroupTopology(k, v) => {
                self.streams_groups.replay_topology(&k.group_id, v.as_ref())
            }
            Record::ConsumerGroupMetadata(..)
            | Record::ConsumerGroupPartitionMetadata(..)
            | Record::ConsumerGroupMemberMetadata(..)
            | Record::ConsumerGroupTargetAssignmentMetadata(..)
            | Record::ConsumerGroupTargetAssignmentMember(..)
            | Record::ConsumerGroupCurrentMemberAssignment(..)
            | Record::ConsumerGroupRegularExpression(..) => self.replay_consumer_group(record),
        }
        Ok(())
    }
}

impl LogState {
    /// The consumer group records (KIP-848); any other record is not for this image.
    fn replay_consumer_group(&mut self, record: &Record) {
        let groups = &mut self.consumer_groups;
        match record {
            Record::ConsumerGroupMetadata(k, v) => groups.replay_metadata(&k.group_id, v.as_ref()),
            Record::ConsumerGroupPartitionMetadata(k, v) => {
                groups.replay_partition_metadata(&k.group_id, v.is_some())
            }
            Record::ConsumerGroupMemberMetadata(k, v) => {
                groups.replay_member_metadata(&k.group_id, &k.member_id, v.as_ref())
            }
            Record::ConsumerGroupTargetAssignmentMetadata(k, v) => {
                groups.replay_target_metadata(&k.group_id, v.as_ref())
            }
            Record::ConsumerGroupTargetAssignmentMember(k, v) => {
                groups.replay_target_member(&k.group_id, &k.member_id, v.as_ref())
            }
            Record::ConsumerGroupCurrentMemberAssignment(k, v) => {
                groups.replay_current_assignment(&k.group_id, &k.member_id, v.as_ref())
            }
            Record::ConsumerGroupRegularExpression(k, v) => {
                groups.replay_regex(&k.group_id, &k.regular_expression, v.as_ref())
            }
            _ => {}
        }
    }
}

/// A log and the state replayed from it, kept in step.
#[derive(Debug, Default)]
pub struct Store {
    log: MetadataLog,
    state: LogState,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn state(&self) -> &LogState {
        &self.state
    }

    pub fn log(&self) -> &MetadataLog {
        &self.log
    }

    /// Encodes (each record at its latest version), replays and appends a batch. Returns the
    /// offset of the batch's first record. All or nothing: a batch with a record that does not
    /// encode, is too large for a durable log entry ([`file_log::MAX_ENTRY_BYTES`]) or does not
    /// replay changes neither the log nor the state.
    pub fn append(&mut self, batch: Vec<Record>) -> Result<u64, ReplayError> {
        self.append_versioned(batch.into_iter().map(Record::at_latest_version).collect())
    }

    /// [`Store::append`] with the version of each record chosen by the caller, as Kafka's
    /// controller chooses them from the finalized `metadata.version`.
    pub fn append_versioned(&mut self, batch: Vec<RecordAndVersion>) -> Result<u64, ReplayError> {
        let first = self.log.next_offset();
        self.append_logged(batch)?;
        Ok(first)
    }

    /// [`Store::append_versioned`], returning the batch's records as the log holds them (with
    /// their offsets). A log that compacts may drop them at the end of this very call (a
    /// tombstone goes with what it deletes), so a caller that keeps a durable copy writes these
    /// with [`file_log::LogWriter::write`] rather than reading them back from [`Store::log`].
    pub fn append_logged(
        &mut self,
        batch: Vec<RecordAndVersion>,
    ) -> Result<Vec<LogRecord>, ReplayError> {
        let entries = self.prepare(&batch)?;
        self.commit(&batch, entries.clone())?;
        Ok(entries)
    }

    /// The first half of an append, which changes nothing: encodes the batch at the offsets
    /// the log will give it, checks that each record fits a durable log entry, and, when a
    /// record's replay can refuse it (a controller record checked against the state), replays
    /// the batch onto copies of the images it touches. A batch this accepts is committed by
    /// [`Store::commit`] without error, so a runtime can make it durable in between.
    pub fn prepare(&self, batch: &[RecordAndVersion]) -> Result<Vec<LogRecord>, ReplayError> {
        let first = self.log.next_offset();
        let entries = encode_batch(batch)?
            .into_iter()
            .zip(first..)
            .map(|((record_type, version, key, value), offset)| LogRecord {
                offset,
                record_type,
                version,
                key,
                value,
            })
            .collect();
        if let Some(mut scratch) = scratch_state(&self.state, batch) {
            for (entry, offset) in batch.iter().zip(first..) {
                scratch.replay(&entry.record, offset)?;
            }
        }
        Ok(entries)
    }

    /// The second half: appends `entries` (what [`Store::prepare`] made of `batch`, against
    /// this very store) to the log and replays `batch`. The log takes the batch before the
    /// state does, so that a store rebuilt from the log after a failure here holds the batch
    /// as a durable copy of it would. An `Err` means the batch was not prepared against this
    /// store: a bug, after which the state must be rebuilt from the log.
    pub fn commit(
        &mut self,
        batch: &[RecordAndVersion],
        entries: Vec<LogRecord>,
    ) -> Result<(), ReplayError> {
        let first = self.log.next_offset();
        if entries.first().is_some_and(|e| e.offset != first) || entries.len() != batch.len() {
            return Err(ReplayError::Inconsistent {
                offset: first,
                reason: "the batch was prepared against another log".to_owned(),
            });
        }
        for entry in entries {
            self.log
                .push(entry.record_type, entry.version, entry.key, entry.value);
        }
        for (entry, offset) in batch.iter().zip(first..) {
            self.state.replay(&entry.record, offset)?;
        }
        // After the whole batch: a compaction inside it could split a group's deletion.
        self.log.compact_if_due();
        Ok(())
    }

    /// Compacts the log now (before it is written out whole as a durable snapshot).
    pub fn compact_log(&mut self) {
        self.log.compact();
    }

    /// Rebuilds a store from the records of `log`, decoding every one of them, and keeps a copy
    /// of them. A compacted log gives the same state as the whole one did (see [`log`] for why).
    pub fn replay_log(log: &MetadataLog) -> Result<Store, ReplayError> {
        Ok(Store {
            log: log.clone(),
            state: replay_state(log)?,
        })
    }

    /// [`Store::replay_log`] for a log that is durable elsewhere: the store keeps no copy of its
    /// records ([`MetadataLog::offsets_only`]), so whoever must replay it again reads the
    /// durable log.
    pub fn replay_durable_log(log: &MetadataLog) -> Result<Store, ReplayError> {
        Ok(Store {
            log: MetadataLog::offsets_only(log.next_offset()),
            state: replay_state(log)?,
        })
    }
}

fn replay_state(log: &MetadataLog) -> Result<LogState, ReplayError> {
    let mut state = LogState::default();
    for entry in log.iter() {
        state.replay(&Record::decode(&entry.to_record())?, entry.offset)?;
    }
    Ok(state)
}

type Encoded = (i16, i16, Option<bytes::Bytes>, Option<bytes::Bytes>);

/// Every record of the batch, encoded, once each is known to fit a durable log entry.
fn encode_batch(batch: &[RecordAndVersion]) -> Result<Vec<Encoded>, ReplayError> {
    batch
        .iter()
        .enumerate()
        .map(|(index, r)| {
            let encoded = r.record.encode_version(r.version)?;
            file_log::check_entry_size(encoded.2.as_deref(), encoded.3.as_deref()).map_err(
                |source| ReplayError::TooLarge {
                    index,
                    record_type: encoded.0,
                    source,
                },
            )?;
            Ok(encoded)
        })
        .collect()
}

/// The images of [`LogState`], as bits.
const TOPICS: u16 = 1;
const STREAMS_GROUPS: u16 = 1 << 1;
const OFFSETS: u16 = 1 << 2;
const BROKERS: u16 = 1 << 3;
const FEATURES: u16 = 1 << 4;
const GROUP_CONFIGS: u16 = 1 << 5;
const PRODUCER_IDS: u16 = 1 << 6;
const SECURITY: u16 = 1 << 7;
const TRANSACTIONS: u16 = 1 << 8;
const TXN_OFFSETS: u16 = 1 << 9;
const CLASSIC_GROUPS: u16 = 1 << 10;
const CONSUMER_GROUPS: u16 = 1 << 11;
const CLIENT_QUOTAS: u16 = 1 << 12;

/// The images a record's replay changes, and whether that replay can fail (see
/// [`LogState::replay`]: only controller records are checked against the state).
fn footprint(record: &Record) -> (u16, bool) {
    match record {
        Record::Topic(_) | Record::Partition(_) | Record::RemoveTopic(_) => (TOPICS, true),
        Record::Config(_) => (TOPICS | GROUP_CONFIGS, false),
        Record::RegisterBroker(_)
        | Record::UnregisterBroker(_)
        | Record::FenceBroker(_)
        | Record::UnfenceBroker(_)
        | Record::BrokerRegistrationChange(_) => (BROKERS, true),
        Record::FeatureLevel(_) => (FEATURES, true),
        Record::ProducerIds(_) => (PRODUCER_IDS, true),
        Record::AccessControlEntry(_)
        | Record::RemoveAccessControlEntry(_)
        | Record::UserScramCredential(_)
        | Record::RemoveUserScramCredential(_) => (SECURITY, true),
        Record::ClientQuota(_) => (CLIENT_QUOTAS, false),
        Record::OffsetCommit(..) => (OFFSETS, false),
        Record::GroupMetadata(..) => (CLASSIC_GROUPS, false),
        Record::StreamsGroupMetadata(..)
        | Record::StreamsGroupMemberMetadata(..)
        | Record::StreamsGroupTargetAssignmentMetadata(..)
        | Record::StreamsGroupTargetAssignmentMember(..)
        | Record::StreamsGroupCurrentMemberAssignment(..)
        | Record::StreamsGroupTopology(..) => (STREAMS_GROUPS, false),
        Record::TransactionLog(..) => (TRANSACTIONS, false),
        Record::TxnOffsetCommit(..) => (TXN_OFFSETS, false),
        Record::ConsumerGroupMetadata(..)
        | Record::ConsumerGroupPartitionMetadata(..)
        | Record::ConsumerGroupMemberMetadata(..)
        | Record::ConsumerGroupTargetAssignmentMetadata(..)
        | Record::ConsumerGroupTargetAssignmentMember(..)
        | Record::ConsumerGroupCurrentMemberAssignment(..)
        | Record::ConsumerGroupRegularExpression(..) => (CONSUMER_GROUPS, false),
    }
}

fn copy_if<T: Clone + Default>(touched: u16, image: u16, value: &T) -> T {
    if touched & image != 0 {
        value.clone()
    } else {
        T::default()
    }
}

/// A state holding copies of the images a batch touches (the others empty), built only when
/// one of its records can fail to replay, to try the batch on before anything changes. A
/// record's replay reads and writes only its own images ([`footprint`]), so the copies behave
/// as the whole state would. A coordinator batch (streams groups, offsets), whose replays
/// cannot fail, takes no copy: it is the hot path and its images are the large ones.
fn scratch_state(state: &LogState, batch: &[RecordAndVersion]) -> Option<LogState> {
    let (touched, fallible) = batch.iter().fold((0, false), |(t, f), r| {
        let (images, can_fail) = footprint(&r.record);
        (t | images, f || can_fail)
    });
    fallible.then(|| {
        let mut scratch = LogState {
            topics: copy_if(touched, TOPICS, &state.topics),
            streams_groups: copy_if(touched, STREAMS_GROUPS, &state.streams_groups),
            classic_groups: copy_if(touched, CLASSIC_GROUPS, &state.classic_groups),
            consumer_groups: copy_if(touched, CONSUMER_GROUPS, &state.consumer_groups),
            offsets: copy_if(touched, OFFSETS, &state.offsets),
            brokers: copy_if(touched, BROKERS, &state.brokers),
            features: copy_if(touched, FEATURES, &state.features),
            group_configs: copy_if(touched, GROUP_CONFIGS, &state.group_configs),
            producer_ids: copy_if(touched, PRODUCER_IDS, &state.producer_ids),
            // A ConfigRecord's replay cannot fail, so no batch needs a copy of these.
            broker_configs: BrokerConfigsImage::default(),
            security: copy_if(touched, SECURITY, &state.security),
            client_quotas: copy_if(touched, CLIENT_QUOTAS, &state.client_quotas),
            transactions: copy_if(touched, TRANSACTIONS, &state.transactions),
            txn_offsets: copy_if(touched, TXN_OFFSETS, &state.txn_offsets),
            groups: 0,
        };
        scratch.groups = scratch.count_groups();
        scratch
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::records::{ConfigRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord};

    fn topic(id: u128) -> Record {
        Record::Topic(TopicRecord {
            name: format!("t{id}"),
            topic_id: uuid::Uuid::from_u128(id),
            ..Default::default()
        })
    }

    fn topic_config(topic: &str, value: String) -> Record {
        Record::Config(ConfigRecord {
            resource_type: image::topics::TOPIC_RESOURCE,
            resource_name: topic.into(),
            name: "retention.ms".into(),
            value: Some(value),
            ..Default::default()
        })
    }

    /// A store holding topic t1, and a copy of its state.
    fn store_with_a_topic() -> (Store, LogState) {
        let mut store = Store::new();
        store.append(vec![topic(1)]).unwrap();
        let before = store.state().clone();
        (store, before)
    }

    #[test]
    fn a_topic_record_for_a_name_or_id_in_use_is_refused_and_changes_nothing() {
        let (mut store, before) = store_with_a_topic();
        let named = |name: &str, id: u128| {
            Record::Topic(TopicRecord {
                name: name.into(),
                topic_id: uuid::Uuid::from_u128(id),
                ..Default::default()
            })
        };
        // t1's name again would drop its partitions; its id again would point it elsewhere.
        assert!(store.append(vec![named("t1", 2)]).is_err());
        assert!(store.append(vec![named("another", 1)]).is_err());
        assert_eq!(store.state(), &before);
        assert_eq!(store.log().len(), 1);
    }

    #[test]
    fn a_rejected_record_leaves_nothing_of_its_batch() {
        let (mut store, before) = store_with_a_topic();
        let orphan = PartitionRecord {
            topic_id: uuid::Uuid::from_u128(99),
            ..Default::default()
        };
        let broker = RegisterBrokerRecord {
            broker_id: 1,
            ..Default::default()
        };
        // Records before the failing one change three images: none of it stays.
        let err = store
            .append(vec![
                topic(2),
                topic_config("t1", "1000".into()),
                Record::RegisterBroker(broker),
                Record::Partition(orphan),
            ])
            .unwrap_err();
        assert!(
            matches!(err, ReplayError::Inconsistent { offset: 4, .. }),
            "{err}"
        );
        assert_eq!(store.state(), &before);
        assert_eq!(store.log().len(), 1);
        assert_eq!(store.log().next_offset(), 1, "no offset is used up");
        assert_eq!(
            Store::replay_log(store.log()).unwrap().state(),
            store.state()
        );
        // The next batch goes on as if the rejected one never came.
        assert_eq!(store.append(vec![topic(2)]).unwrap(), 1);
    }

    #[test]
    fn a_record_too_large_for_the_log_is_refused_before_anything_is_replayed() {
        let (mut store, before) = store_with_a_topic();
        let huge = "x".repeat(file_log::MAX_ENTRY_BYTES);
        let err = store
            .append(vec![topic(2), topic_config("t1", huge)])
            .unwrap_err();
        assert!(
            matches!(
                err,
                ReplayError::TooLarge {
                    index: 1,
                    record_type: 4,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(store.state(), &before);
        assert_eq!(store.log().next_offset(), 1);
    }

    #[test]
    fn only_batches_that_can_fail_are_tried_on_copies_of_the_images_they_touch() {
        let state = LogState::default();
        let offset = Record::OffsetCommit(kcoord_wire::records::OffsetCommitKey::default(), None);
        let config = Record::Config(Default::default());
        let coordinator = vec![offset.at_latest_version(), config.at_latest_version()];
        assert!(scratch_state(&state, &coordinator).is_none());
        let controller = vec![
            topic(1).at_latest_version(),
            Record::RemoveTopic(Default::default()).at_latest_version(),
        ];
        let mut state = state;
        state.brokers = Store::replay_log(&{
            let mut store = Store::new();
            store
                .append(vec![Record::RegisterBroker(Default::default())])
                .unwrap();
            store.log().clone()
        })
        .unwrap()
        .state()
        .brokers
        .clone();
        state.topics = store_with_a_topic().1.topics;
        let scratch = scratch_state(&state, &controller).unwrap();
        assert_eq!(scratch.topics, state.topics, "the touched image is copied");
        assert_eq!(
            scratch.brokers,
            BrokersImage::default(),
            "the others are not"
        );
    }

    /// A store over a log durable elsewhere holds the same state and hands out the same
    /// offsets, and keeps none of the records, before or after it appends.
    #[test]
    fn a_store_over_a_durable_log_keeps_its_state_and_offsets_but_no_records() {
        let (mut kept, _) = store_with_a_topic();
        kept.append(vec![topic(2)]).unwrap();
        let mut durable = Store::replay_durable_log(kept.log()).unwrap();
        assert_eq!(durable.state(), kept.state());
        assert_eq!(durable.log().next_offset(), 2);
        assert!(durable.log().is_empty());
        assert!(!durable.log().keeps_records());
        let batch = vec![topic_config("t2", "5".into()).at_latest_version()];
        let written = durable.append_logged(batch.clone()).unwrap();
        assert_eq!(written, kept.append_logged(batch).unwrap());
        assert_eq!(durable.state(), kept.state());
        assert_eq!(durable.log().next_offset(), 3);
        assert!(durable.log().is_empty());
        assert_eq!(durable.log().heap_bytes(), 0);
    }

    #[test]
    fn append_logged_returns_the_batch_as_the_log_took_it() {
        let (mut store, _) = store_with_a_topic();
        let records = store
            .append_logged(vec![
                topic(2).at_latest_version(),
                topic_config("t2", "5".into()).at_latest_version(),
            ])
            .unwrap();
        assert_eq!(records, store.log().records()[1..].to_vec());
        assert_eq!(
            records.iter().map(|r| r.offset).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn the_group_count_follows_streams_groups_and_offsets_groups() {
        use kcoord_wire::records::{
            OffsetCommitKey, OffsetCommitValue, StreamsGroupMetadataKey, StreamsGroupMetadataValue,
        };
        let commit = |group: &str, partition: i32, keep: bool| {
            Record::OffsetCommit(
                OffsetCommitKey {
                    group: group.into(),
                    topic: "t".into(),
                    partition,
                    ..Default::default()
                },
                keep.then(OffsetCommitValue::default),
            )
        };
        let streams = |group: &str, keep: bool| {
            Record::StreamsGroupMetadata(
                StreamsGroupMetadataKey {
                    group_id: group.into(),
                    ..Default::default()
                },
                keep.then(StreamsGroupMetadataValue::default),
            )
        };
        let mut store = Store::new();
        store
            .append(vec![
                commit("offsets-only", 0, true),
                commit("offsets-only", 1, true),
                streams("app", true),
                commit("app", 0, true),
            ])
            .unwrap();
        // "app" has a streams group and offsets: it counts once.
        assert_eq!(store.state().group_count(), 2);
        let earlier = store.log().clone();
        store
            .append(vec![
                streams("other", true),
                commit("offsets-only", 0, false),
            ])
            .unwrap();
        assert_eq!(store.state().group_count(), 3);
        store
            .append(vec![commit("offsets-only", 1, false)])
            .unwrap();
        assert_eq!(store.state().group_count(), 2, "its last offset went");
        store.append(vec![streams("app", false)]).unwrap();
        assert_eq!(store.state().group_count(), 2, "app still has an offset");
        store.append(vec![commit("app", 0, false)]).unwrap();
        assert_eq!(store.state().group_count(), 1);
        assert_eq!(
            Store::replay_log(store.log())
                .unwrap()
                .state()
                .group_count(),
            1
        );
        let rebuilt = Store::replay_log(&earlier).unwrap();
        assert_eq!(rebuilt.state().group_count(), 2);
        assert_eq!(
            rebuilt.state().group_count(),
            rebuilt.state().count_groups()
        );
    }
}
