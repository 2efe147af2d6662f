//! Control records (Kafka's `ControlRecordType` and `EndTransactionMarker`): the key of every
//! record in a control batch is `version int16, type int16`; a transaction marker's value is
//! `version int16, coordinator epoch int32`. Both versions are 0.
//!
//! [`end_txn_marker_batch`] builds a marker batch as Kafka's
//! `MemoryRecords.withEndTransactionMarker` writes it; [`EndTxnMarker::of_batch`] reads one back.

use bytes::Bytes;

use crate::{
    BatchBuilder, BatchOptions, Compression, RecordBatch, RecordsError, TimestampType, NO_SEQUENCE,
};

/// A control record's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    Abort,
    Commit,
    LeaderChange,
    SnapshotHeader,
    SnapshotFooter,
    KRaftVersion,
    KRaftVoters,
    /// A type this version does not know (Kafka: `UNKNOWN`, ignored by readers).
    Unknown(i16),
}

impl ControlRecordType {
    pub fn from_type_id(id: i16) -> ControlRecordType {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KRaftVersion,
            6 => ControlRecordType::KRaftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    pub fn type_id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KRaftVersion => 5,
            ControlRecordType::KRaftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// The record key: version 0 and the type.
    pub fn key(self) -> [u8; 4] {
        let t = self.type_id().to_be_bytes();
        [0, 0, t[0], t[1]]
    }

    /// Reads a control record key as Kafka's `ControlRecordType.parse` does: at least 4 bytes,
    /// a version of at least 0 (newer versions are read as version 0).
    pub fn parse_key(key: &[u8]) -> Result<ControlRecordType, RecordsError> {
        let Some(&[v0, v1, t0, t1]) = key.get(..4).and_then(|k| <&[u8; 4]>::try_from(k).ok())
        else {
            return Err(RecordsError::InvalidArgument(format!(
                "Invalid value size found for control record key. Must have at least 4 bytes, but found only {}",
                key.len()
            )));
        };
        let version = i16::from_be_bytes([v0, v1]);
        if version < 0 {
            return Err(RecordsError::InvalidArgument(format!(
                "Invalid version found for control record: {version}. May indicate data corruption"
            )));
        }
        Ok(ControlRecordType::from_type_id(i16::from_be_bytes([
            t0, t1,
        ])))
    }
}

/// A COMMIT or ABORT marker's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndTxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

impl EndTxnMarker {
    pub fn control_type(&self) -> ControlRecordType {
        if self.commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        }
    }

    /// The marker record's value: version 0, the coordinator epoch.
    pub fn value(&self) -> [u8; 6] {
        let e = self.coordinator_epoch.to_be_bytes();
        [0, 0, e[0], e[1], e[2], e[3]]
    }

    /// The coordinator epoch of a marker record's value, as Kafka's
    /// `EndTransactionMarker.deserializeValue` reads it: a version of at least 0 (a newer
    /// version is read as version 0, extra bytes ignored), then the epoch.
    pub fn parse_value(value: &[u8]) -> Result<i32, RecordsError> {
        let Some(&[v0, v1, e0, e1, e2, e3]) =
            value.get(..6).and_then(|v| <&[u8; 6]>::try_from(v).ok())
        else {
            return Err(RecordsError::InvalidArgument(format!(
                "end transaction marker value of {} bytes is too short",
                value.len()
            )));
        };
        let version = i16::from_be_bytes([v0, v1]);
        if version < 0 {
            return Err(RecordsError::InvalidArgument(format!(
                "Invalid version found for end transaction marker: {version}. May indicate data corruption"
            )));
        }
        Ok(i32::from_be_bytes([e0, e1, e2, e3]))
    }

    /// The marker of a control batch (its first record), `None` for a control batch of
    /// another type or with no record left (compaction may empty one).
    pub fn of_batch(batch: &RecordBatch) -> Result<Option<EndTxnMarker>, RecordsError> {
        if !batch.header().is_control() {
            return Ok(None);
        }
        // A control batch holds one small record; this bounds a damaged compressed one.
        const MAX_CONTROL_BYTES: usize = 1 << 16;
        let Some(record) = batch.records(MAX_CONTROL_BYTES)?.next().transpose()? else {
            return Ok(None);
        };
        let key = record.key.as_deref().unwrap_or_default();
        match ControlRecordType::parse_key(key)? {
            ControlRecordType::Commit | ControlRecordType::Abort => {}
            _ => return Ok(None),
        }
        EndTxnMarker::parse(key, record.value.as_deref().unwrap_or_default()).map(Some)
    }

    /// Reads a marker from a control record's key and value.
    pub fn parse(key: &[u8], value: &[u8]) -> Result<EndTxnMarker, RecordsError> {
        let commit = match ControlRecordType::parse_key(key)? {
            ControlRecordType::Commit => true,
            ControlRecordType::Abort => false,
            other => {
                return Err(RecordsError::InvalidArgument(format!(
                    "Invalid control record type for end transaction marker {other:?}"
                )))
            }
        };
        Ok(EndTxnMarker {
            commit,
            coordinator_epoch: EndTxnMarker::parse_value(value)?,
        })
    }
}

/// A transaction marker batch as Kafka's `MemoryRecords.withEndTransactionMarker` writes it
/// for a partition leader: base offset 0 (the log assigns it), no partition leader epoch (the
/// log assigns it too), uncompressed CreateTime, the control and transactional attributes, the
/// producer's id and epoch, base sequence -1, and one record at `timestamp` whose key is
/// version 0 and the marker's type and whose value is the marker (version 0, coordinator
/// epoch).
pub fn end_txn_marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    timestamp: i64,
) -> Result<Bytes, RecordsError> {
    let mut builder = BatchBuilder::new(BatchOptions {
        compression: Compression::None,
        timestamp_type: TimestampType::CreateTime,
        producer_id,
        producer_epoch,
        base_sequence: NO_SEQUENCE,
        transactional: true,
        control: true,
        ..BatchOptions::default()
    });
    builder.push(
        timestamp,
        Some(&marker.control_type().key()),
        Some(&marker.value()),
        &[],
    )?;
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_markers_round_trip() {
        assert_eq!(ControlRecordType::Commit.key(), [0, 0, 0, 1]);
        assert_eq!(
            ControlRecordType::parse_key(&[0, 0, 0, 0]),
            Ok(ControlRecordType::Abort)
        );
        // A newer key version is read as version 0; extra bytes are ignored.
        assert_eq!(
            ControlRecordType::parse_key(&[0, 3, 0, 2, 9, 9]),
            Ok(ControlRecordType::LeaderChange)
        );
        assert_eq!(
            ControlRecordType::parse_key(&[0, 0, 0, 42]),
            Ok(ControlRecordType::Unknown(42))
        );
        assert!(ControlRecordType::parse_key(&[0, 0, 0]).is_err());
        assert!(ControlRecordType::parse_key(&[0xff, 0xff, 0, 0]).is_err());
        let m = EndTxnMarker {
            commit: true,
            coordinator_epoch: 7,
        };
        assert_eq!(
            EndTxnMarker::parse(&m.control_type().key(), &m.value()),
            Ok(m)
        );
        assert!(EndTxnMarker::parse(&ControlRecordType::LeaderChange.key(), &m.value()).is_err());
        assert!(EndTxnMarker::parse(&[0, 0, 0, 1], &[0, 0, 1]).is_err());
        assert_eq!(EndTxnMarker::parse_value(&[0, 1, 0, 0, 1, 0, 9]), Ok(256));
        assert!(EndTxnMarker::parse_value(&[0xff, 0, 0, 0, 0, 1]).is_err());
    }

    #[test]
    fn a_marker_batch_is_what_kafka_writes() {
        let marker = EndTxnMarker {
            commit: false,
            coordinator_epoch: 3,
        };
        let bytes = end_txn_marker_batch(42, 5, marker, 1_700_000_000_000).unwrap();
        let batch = RecordBatch::parse(bytes.clone()).unwrap();
        let h = *batch.header();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!(h.compression(), Ok(Compression::None));
        assert_eq!(h.timestamp_type(), TimestampType::CreateTime);
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (42, 5, -1)
        );
        assert_eq!(
            (h.base_offset, h.record_count, h.last_offset_delta),
            (0, 1, 0)
        );
        assert_eq!(
            (h.base_timestamp, h.max_timestamp),
            (1_700_000_000_000, 1_700_000_000_000)
        );
        assert!(batch.is_crc_valid());
        let records = batch.decode_records(1024).unwrap();
        assert_eq!(records[0].key.as_deref(), Some(&[0u8, 0, 0, 0][..]));
        assert_eq!(records[0].value.as_deref(), Some(&[0u8, 0, 0, 0, 0, 3][..]));
        assert_eq!(EndTxnMarker::of_batch(&batch), Ok(Some(marker)));
        // A data batch is no marker.
        let mut data = BatchBuilder::new(BatchOptions::default());
        data.push(1, None, Some(b"v"), &[]).unwrap();
        let data = RecordBatch::parse(data.build().unwrap()).unwrap();
        assert_eq!(EndTxnMarker::of_batch(&data), Ok(None));
    }
}
