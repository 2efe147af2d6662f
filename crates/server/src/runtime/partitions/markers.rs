//! Transaction markers written into the partitions this node leads, for the transaction
//! coordinator (Kafka's `ReplicaManager.appendRecords` with origin COORDINATOR, which
//! `KafkaApis.handleWriteTxnMarkersRequest` calls for each partition of a marker).

use kcoord_storage::{AppendError, TxnMarker};
use tracing::{debug, warn};

use super::Partitions;

/// Why a marker was not written; [`MarkerError::error_code`] is the partition's code in
/// Kafka's WriteTxnMarkers response.
#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    /// UNKNOWN_TOPIC_OR_PARTITION (3): no such partition here. `__consumer_offsets` has no
    /// partition in the data plane (offsets live in the coordinator shards), so its markers
    /// land here too: the coordinator completes those itself.
    #[error("no partition {topic}-{partition} in the data plane")]
    UnknownPartition { topic: String, partition: i32 },
    /// The log refused it: INVALID_PRODUCER_EPOCH (47), TRANSACTION_COORDINATOR_FENCED (52),
    /// or KAFKA_STORAGE_ERROR (56).
    #[error("marker for {topic}-{partition} refused: {source}")]
    Refused {
        topic: String,
        partition: i32,
        #[source]
        source: AppendError,
    },
}

impl MarkerError {
    /// Kafka's error code.
    pub fn error_code(&self) -> i16 {
        match self {
            MarkerError::UnknownPartition { .. } => 3,
            MarkerError::Refused { source, .. } => source.error_code(),
        }
    }
}

impl Partitions {
    /// Writes a COMMIT (`commit`) or ABORT marker for `producer_id` into `topic`-`partition`
    /// and wakes the fetches waiting on it (the last stable offset may have moved, which a
    /// read_committed fetch waits for). Returns the marker's offset. The epochs are checked
    /// as Kafka checks a marker of transaction version 0/1 (an older producer epoch or
    /// coordinator epoch is refused); [`Partitions::write_txn_marker_with`] takes the version.
    #[allow(clippy::too_many_arguments)]
    pub fn write_txn_marker(
        &self,
        topic: &str,
        partition: i32,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        now: i64,
    ) -> Result<i64, MarkerError> {
        let marker = TxnMarker {
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
            transaction_version: 0,
        };
        self.write_txn_marker_with(topic, partition, &marker, now)
    }

    /// [`Partitions::write_txn_marker`] with every field of the marker, the transaction
    /// version included.
    pub fn write_txn_marker_with(
        &self,
        topic: &str,
        partition: i32,
        marker: &TxnMarker,
        now: i64,
    ) -> Result<i64, MarkerError> {
        let Some(p) = self.by_name(topic, partition) else {
            return Err(MarkerError::UnknownPartition {
                topic: topic.to_owned(),
                partition,
            });
        };
        let written = p.log().append_marker(marker, p.leader_epoch, now);
        match written {
            Ok(appended) => {
                p.appended.notify_waiters();
                debug!(
                    topic,
                    partition,
                    producer_id = marker.producer_id,
                    commit = marker.commit,
                    offset = appended.base_offset,
                    "transaction marker written"
                );
                Ok(appended.base_offset)
            }
            Err(source) => {
                warn!(topic, partition, producer_id = marker.producer_id, error = %source, "transaction marker refused");
                Err(MarkerError::Refused {
                    topic: topic.to_owned(),
                    partition,
                    source,
                })
            }
        }
    }
}
