//! Control records (Kafka's `ControlRecordType` and `EndTransactionMarker`): the key of every
//! record in a control batch is `version int16, type int16`; a transaction marker's value is
//! `version int16, coordinator epoch int32`. Both versions are 0.

use crate::RecordsError;

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
        Ok(EndTxnMarker {
            commit,
            coordinator_epoch: i32::from_be_bytes([e0, e1, e2, e3]),
        })
    }
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
    }
}
