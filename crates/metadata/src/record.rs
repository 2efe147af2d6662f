//! Typed records: the only inputs `replay` accepts. Each converts to and from a [`LogRecord`]
//! with the generated codecs.
use bytes::{Bytes, BytesMut};
use kcoord_wire::records as r;
use kcoord_wire::{Decodable, Encodable, Message};

use crate::log::LogRecord;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record type {0} is unknown")]
    UnknownType(i16),
    #[error("record type {record_type} has no {part}")]
    Missing { record_type: i16, part: &'static str },
    #[error("record type {record_type}: {source}")]
    Codec { record_type: i16, source: anyhow_error::Error },
}

/// The codecs report errors as `anyhow::Error` (kafka-protocol's trait signature).
mod anyhow_error {
    pub type Error = Box<dyn std::error::Error + Send + Sync>;
}

macro_rules! records {
    (
        metadata { $($mvariant:ident($mty:ident),)* }
        keyed { $($kvariant:ident($kkey:ident, $kval:ident),)* }
    ) => {
        /// Every record kcoord writes. Keyed (coordinator) records carry an optional value: `None`
        /// is a tombstone.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Record {
            $($mvariant(r::$mty),)*
            $($kvariant(r::$kkey, Option<r::$kval>),)*
        }

        impl Record {
            pub fn record_type(&self) -> i16 {
                match self {
                    $(Record::$mvariant(_) => r::$mty::API_KEY,)*
                    $(Record::$kvariant(..) => r::$kkey::API_KEY,)*
                }
            }

            /// Encodes at the latest version of each record schema.
            pub fn encode(&self) -> Result<(i16, i16, Option<Bytes>, Option<Bytes>), RecordError> {
                let record_type = self.record_type();
                match self {
                    $(Record::$mvariant(v) => {
                        let version = <r::$mty as Message>::VERSIONS.max;
                        Ok((record_type, version, None, Some(encode(v, version, record_type)?)))
                    })*
                    $(Record::$kvariant(k, v) => {
                        let version = <r::$kval as Message>::VERSIONS.max;
                        let key = encode(k, 0, record_type)?;
                        let value = match v { Some(v) => Some(encode(v, version, record_type)?), None => None };
                        Ok((record_type, version, Some(key), value))
                    })*
                }
            }

            pub fn decode(log: &LogRecord) -> Result<Record, RecordError> {
                let t = log.record_type;
                $(if t == r::$mty::API_KEY {
                    let value = log.value.as_ref().ok_or(RecordError::Missing { record_type: t, part: "value" })?;
                    return Ok(Record::$mvariant(decode(value, log.version, t)?));
                })*
                $(if t == r::$kkey::API_KEY {
                    let key = log.key.as_ref().ok_or(RecordError::Missing { record_type: t, part: "key" })?;
                    let value = match &log.value { Some(v) => Some(decode(v, log.version, t)?), None => None };
                    return Ok(Record::$kvariant(decode(key, 0, t)?, value));
                })*
                Err(RecordError::UnknownType(t))
            }
        }
    };
}

records! {
    metadata {
        Topic(TopicRecord),
        Partition(PartitionRecord),
        RemoveTopic(RemoveTopicRecord),
        Config(ConfigRecord),
    }
    keyed {
        OffsetCommit(OffsetCommitKey, OffsetCommitValue),
        StreamsGroupMetadata(StreamsGroupMetadataKey, StreamsGroupMetadataValue),
        StreamsGroupMemberMetadata(StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue),
        StreamsGroupTargetAssignmentMetadata(StreamsGroupTargetAssignmentMetadataKey, StreamsGroupTargetAssignmentMetadataValue),
        StreamsGroupTargetAssignmentMember(StreamsGroupTargetAssignmentMemberKey, StreamsGroupTargetAssignmentMemberValue),
        StreamsGroupCurrentMemberAssignment(StreamsGroupCurrentMemberAssignmentKey, StreamsGroupCurrentMemberAssignmentValue),
        StreamsGroupTopology(StreamsGroupTopologyKey, StreamsGroupTopologyValue),
    }
}

fn encode<T: Encodable>(value: &T, version: i16, record_type: i16) -> Result<Bytes, RecordError> {
    let mut buf = BytesMut::new();
    value.encode(&mut buf, version).map_err(|e| RecordError::Codec { record_type, source: e.into() })?;
    Ok(buf.freeze())
}

fn decode<T: Decodable>(bytes: &Bytes, version: i16, record_type: i16) -> Result<T, RecordError> {
    let mut input = bytes.clone();
    T::decode(&mut input, version).map_err(|e| RecordError::Codec { record_type, source: e.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_records_and_tombstones_survive_the_log_format() {
        let key = r::StreamsGroupMetadataKey { group_id: "g".into(), ..Default::default() };
        let id = uuid::Uuid::from_u128(42);
        let value = r::StreamsGroupMetadataValue { epoch: 3, topology_description_id: Some(id), ..Default::default() };
        for record in [Record::StreamsGroupMetadata(key.clone(), Some(value)), Record::StreamsGroupMetadata(key, None)] {
            let (record_type, version, k, v) = record.encode().unwrap();
            let log = LogRecord { offset: 0, record_type, version, key: k, value: v };
            assert_eq!(Record::decode(&log).unwrap(), record);
        }
    }

    #[test]
    fn unknown_types_are_errors_not_panics() {
        let log = LogRecord { offset: 0, record_type: 999, version: 0, key: None, value: None };
        assert!(matches!(Record::decode(&log), Err(RecordError::UnknownType(999))));
        let log = LogRecord { offset: 0, record_type: 2, version: 0, key: None, value: Some(Bytes::from_static(&[1])) };
        assert!(matches!(Record::decode(&log), Err(RecordError::Codec { .. })));
    }
}
