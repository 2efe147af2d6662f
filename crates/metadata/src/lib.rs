//! The metadata log of kcoord and the state built from it.
//!
//! Every change is a [`Record`] appended to a [`MetadataLog`] and applied by
//! [`State::replay`], the only way state changes. Restarting is replaying: a [`Store`] rebuilt
//! from the same log has the same state. The log compacts its keyed (coordinator) records as
//! Kafka compacts `__consumer_offsets`, keeping the latest record of each key; the [`log`]
//! module says why the compacted log still replays to the same state.
pub mod file_log;
pub mod image;
pub mod log;
pub mod metadata_version;
pub mod record;

pub use file_log::{FileLogError, LoadedLog, LogWriter};
pub use image::brokers::{BrokerListener, BrokerRegistration, BrokersImage, FeatureRange};
pub use image::features::FeaturesImage;
pub use image::group_configs::{GroupConfigsImage, GROUP_RESOURCE};
pub use image::offsets::{CommittedOffset, OffsetsImage};
pub use image::producer_ids::ProducerIdsImage;
pub use image::streams::{
    entry_by_str, Endpoint, Id, MemberState, PendingTasks, StreamsGroup, StreamsGroupMember,
    StreamsGroupsImage, TaskEpochs, Tasks, TasksTuple,
};
pub use image::topics::{
    invalid_topic_name, is_internal_topic, is_valid_topic_name, unify_collision_chars,
    validate_topic_name, PartitionImage, TopicImage, TopicsImage, CLUSTER_METADATA_TOPIC,
    MAX_TOPIC_NAME_LENGTH,
};
pub use image::vec_map::{VecMap, VecSet};
pub use log::{LogRecord, LogRecordRef, MetadataLog};
pub use metadata_version::{MetadataVersion, MetadataVersionError};
pub use record::{Record, RecordAndVersion, RecordError};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("record at offset {offset} does not apply: {reason}")]
    Inconsistent { offset: u64, reason: String },
}

/// Everything the records describe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub topics: TopicsImage,
    pub streams_groups: StreamsGroupsImage,
    pub offsets: OffsetsImage,
    pub brokers: BrokersImage,
    pub features: FeaturesImage,
    /// Per-group config overrides (ConfigRecords of resource type GROUP).
    pub group_configs: GroupConfigsImage,
    /// The producer ids handed out so far (Kafka's `ProducerIdControlManager`).
    pub producer_ids: ProducerIdsImage,
}

impl State {
    /// Applies one record at log offset `offset` (kept where Kafka keeps it, e.g. as a broker's
    /// registration offset, and used in error messages).
    pub fn replay(&mut self, record: &Record, offset: u64) -> Result<(), ReplayError> {
        let inconsistent = |reason: String| ReplayError::Inconsistent { offset, reason };
        match record {
            Record::Topic(r) => self.topics.replay_topic(r),
            Record::Partition(r) => self.topics.replay_partition(r).map_err(inconsistent)?,
            Record::RemoveTopic(r) => self.topics.replay_remove(r).map_err(inconsistent)?,
            Record::Config(r) => {
                self.topics.replay_config(r);
                self.group_configs.replay_config(r);
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
            Record::OffsetCommit(k, v) => self.offsets.replay(k, v.as_ref()),
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
        }
        Ok(())
    }
}

/// A log and the state replayed from it, kept in step.
#[derive(Debug, Default)]
pub struct Store {
    log: MetadataLog,
    state: State,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn log(&self) -> &MetadataLog {
        &self.log
    }

    /// Encodes (each record at its latest version), replays and appends a batch. Returns the
    /// offset of the batch's first record. The whole batch is encoded before anything changes,
    /// and each record enters the log only once it has been applied, so log and state stay in
    /// step even if a record is rejected.
    pub fn append(&mut self, batch: Vec<Record>) -> Result<u64, ReplayError> {
        self.append_versioned(batch.into_iter().map(Record::at_latest_version).collect())
    }

    /// [`Store::append`] with the version of each record chosen by the caller, as Kafka's
    /// controller chooses them from the finalized `metadata.version`.
    pub fn append_versioned(&mut self, batch: Vec<RecordAndVersion>) -> Result<u64, ReplayError> {
        let encoded = batch
            .iter()
            .map(|r| r.record.encode_version(r.version))
            .collect::<Result<Vec<_>, _>>()?;
        let first = self.log.next_offset();
        for (entry, (record_type, version, key, value)) in batch.iter().zip(encoded) {
            self.state.replay(&entry.record, self.log.next_offset())?;
            self.log.push(record_type, version, key, value);
        }
        // After the whole batch: a compaction inside it could split a group's deletion.
        self.log.compact_if_due();
        Ok(first)
    }

    /// Rebuilds a store from the records of `log`, decoding every one of them. A compacted log
    /// gives the same state as the whole one did (see [`log`] for why).
    pub fn replay_log(log: &MetadataLog) -> Result<Store, ReplayError> {
        let mut state = State::default();
        for entry in log.iter() {
            state.replay(&Record::decode(&entry.to_record())?, entry.offset)?;
        }
        Ok(Store {
            log: log.clone(),
            state,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::records::{PartitionRecord, TopicRecord};

    #[test]
    fn a_rejected_record_leaves_log_and_state_in_step() {
        let mut store = Store::new();
        let topic = TopicRecord {
            name: "t".into(),
            topic_id: uuid::Uuid::from_u128(1),
            ..Default::default()
        };
        let orphan = PartitionRecord {
            topic_id: uuid::Uuid::from_u128(2),
            ..Default::default()
        };
        assert!(store
            .append(vec![Record::Topic(topic), Record::Partition(orphan)])
            .is_err());
        assert_eq!(store.log().len(), 1);
        assert_eq!(
            Store::replay_log(store.log()).unwrap().state(),
            store.state()
        );
    }
}
