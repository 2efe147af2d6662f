//! Typed records: the only inputs `replay` accepts. Each converts to and from a [`LogRecord`]
//! with the generated codecs.
use bytes::{Bytes, BytesMut};
use kcoord_wire::records as r;
use kcoord_wire::{Decodable, Encodable, Message, VersionRange};

use crate::log::LogRecord;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record type {0} is unknown")]
    UnknownType(i16),
    #[error("record type {record_type} has no {part}")]
    Missing {
        record_type: i16,
        part: &'static str,
    },
    #[error("record type {record_type}: {source}")]
    Codec {
        record_type: i16,
        source: anyhow_error::Error,
    },
    #[error("record type {record_type} has no version {version}")]
    UnsupportedVersion { record_type: i16, version: i16 },
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

            /// The versions the record's schema (the value's, for keyed records) defines.
            pub fn versions(&self) -> VersionRange {
                match self {
                    $(Record::$mvariant(_) => <r::$mty as Message>::VERSIONS,)*
                    $(Record::$kvariant(..) => <r::$kval as Message>::VERSIONS,)*
                }
            }

            /// Encodes at the latest version of each record schema.
            pub fn encode(&self) -> Result<(i16, i16, Option<Bytes>, Option<Bytes>), RecordError> {
                self.encode_version(self.versions().max)
            }

            /// Encodes at `version`. A field the version cannot carry holding a non-default
            /// value is an error, never silently dropped: that is what keeps, say, static
            /// configs out of a RegisterBrokerRecord older than v5.
            pub fn encode_version(&self, version: i16) -> Result<(i16, i16, Option<Bytes>, Option<Bytes>), RecordError> {
                let record_type = self.record_type();
                let range = self.versions();
                if version < range.min || version > range.max {
                    return Err(RecordError::UnsupportedVersion { record_type, version });
                }
                match self {
                    $(Record::$mvariant(v) => Ok((record_type, version, None, Some(encode(v, version, record_type)?))),)*
                    $(Record::$kvariant(k, v) => {
                        let key = encode(k, 0, record_type)?;
                        let value = match v { Some(v) => Some(encode(v, version, record_type)?), None => None };
                        Ok((record_type, version, Some(key), value))
                    })*
                }
            }

            /// Metadata record types and coordinator record types are two numbering spaces
            /// that overlap (1 is UnregisterBroker and OffsetCommit, 17 is
            /// BrokerRegistrationChange and StreamsGroupMetadata); the key tells them apart:
            /// coordinator records always have one, metadata records never.
            pub fn decode(log: &LogRecord) -> Result<Record, RecordError> {
                let t = log.record_type;
                match &log.key {
                    None => {
                        $(if t == r::$mty::API_KEY {
                            let value = log.value.as_ref().ok_or(RecordError::Missing { record_type: t, part: "value" })?;
                            return Ok(Record::$mvariant(decode(value, log.version, t)?));
                        })*
                        $(if t == r::$kkey::API_KEY {
                            return Err(RecordError::Missing { record_type: t, part: "key" });
                        })*
                    }
                    Some(key) => {
                        $(if t == r::$kkey::API_KEY {
                            let value = match &log.value { Some(v) => Some(decode(v, log.version, t)?), None => None };
                            return Ok(Record::$kvariant(decode(key, 0, t)?, value));
                        })*
                    }
                }
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
        RegisterBroker(RegisterBrokerRecord),
        UnregisterBroker(UnregisterBrokerRecord),
        FenceBroker(FenceBrokerRecord),
        UnfenceBroker(UnfenceBrokerRecord),
        FeatureLevel(FeatureLevelRecord),
        BrokerRegistrationChange(BrokerRegistrationChangeRecord),
        ProducerIds(ProducerIdsRecord),
        AccessControlEntry(AccessControlEntryRecord),
        RemoveAccessControlEntry(RemoveAccessControlEntryRecord),
        UserScramCredential(UserScramCredentialRecord),
        RemoveUserScramCredential(RemoveUserScramCredentialRecord),
        ClientQuota(ClientQuotaRecord),
    }
    keyed {
        OffsetCommit(OffsetCommitKey, OffsetCommitValue),
        GroupMetadata(GroupMetadataKey, GroupMetadataValue),
        StreamsGroupMetadata(StreamsGroupMetadataKey, StreamsGroupMetadataValue),
        StreamsGroupMemberMetadata(StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue),
        StreamsGroupTargetAssignmentMetadata(StreamsGroupTargetAssignmentMetadataKey, StreamsGroupTargetAssignmentMetadataValue),
        StreamsGroupTargetAssignmentMember(StreamsGroupTargetAssignmentMemberKey, StreamsGroupTargetAssignmentMemberValue),
        StreamsGroupCurrentMemberAssignment(StreamsGroupCurrentMemberAssignmentKey, StreamsGroupCurrentMemberAssignmentValue),
        StreamsGroupTopology(StreamsGroupTopologyKey, StreamsGroupTopologyValue),
        TransactionLog(TransactionLogKey, TransactionLogValue),
        TxnOffsetCommit(TxnOffsetCommitKey, OffsetCommitValue),
        ConsumerGroupMetadata(ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
        ConsumerGroupPartitionMetadata(ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
        ConsumerGroupMemberMetadata(ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
        ConsumerGroupTargetAssignmentMetadata(ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
        ConsumerGroupTargetAssignmentMember(ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
        ConsumerGroupCurrentMemberAssignment(ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
        ConsumerGroupRegularExpression(ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
    }
}

/// A record and the version to write it at (Kafka's `ApiMessageAndVersion`): the controller
/// picks record versions from the finalized `metadata.version`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordAndVersion {
    pub record: Record,
    pub version: i16,
}

impl Record {
    /// This record, to be written at `version`.
    pub fn at_version(self, version: i16) -> RecordAndVersion {
        RecordAndVersion {
            record: self,
            version,
        }
    }

    /// This record, to be written at its schema's latest version.
    pub fn at_latest_version(self) -> RecordAndVersion {
        let version = self.versions().max;
        RecordAndVersion {
            record: self,
            version,
        }
    }
}

fn encode<T: Encodable>(value: &T, version: i16, record_type: i16) -> Result<Bytes, RecordError> {
    let mut buf = BytesMut::new();
    value
        .encode(&mut buf, version)
        .map_err(|e| RecordError::Codec {
            record_type,
            source: e.into(),
        })?;
    Ok(buf.freeze())
}

fn decode<T: Decodable>(bytes: &Bytes, version: i16, record_type: i16) -> Result<T, RecordError> {
    let mut input = bytes.clone();
    T::decode(&mut input, version).map_err(|e| RecordError::Codec {
        record_type,
        source: e.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_records_and_tombstones_survive_the_log_format() {
        let key = r::StreamsGroupMetadataKey {
            group_id: "g".into(),
            ..Default::default()
        };
        let id = uuid::Uuid::from_u128(42);
        let value = r::StreamsGroupMetadataValue {
            epoch: 3,
            topology_description_id: Some(id),
            ..Default::default()
        };
        for record in [
            Record::StreamsGroupMetadata(key.clone(), Some(value)),
            Record::StreamsGroupMetadata(key, None),
        ] {
            let (record_type, version, k, v) = record.encode().unwrap();
            let log = LogRecord {
                offset: 0,
                record_type,
                version,
                key: k,
                value: v,
            };
            assert_eq!(Record::decode(&log).unwrap(), record);
        }
    }

    #[test]
    fn versions_a_record_cannot_carry_are_errors() {
        let mut register = r::RegisterBrokerRecord {
            broker_id: 1,
            ..Default::default()
        };
        register
            .static_configs
            .push(r::register_broker_record::BrokerStaticConfig {
                name: "a".into(),
                value: None,
                ..Default::default()
            });
        let record = Record::RegisterBroker(register);
        assert!(record.encode_version(5).is_ok());
        for version in 0..5 {
            assert!(
                matches!(
                    record.encode_version(version),
                    Err(RecordError::Codec { record_type: 0, .. })
                ),
                "v{version} cannot hold StaticConfigs"
            );
        }
        assert!(matches!(
            record.encode_version(6),
            Err(RecordError::UnsupportedVersion {
                record_type: 0,
                version: 6
            })
        ));
        assert!(matches!(
            record.encode_version(-1),
            Err(RecordError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn older_versions_round_trip_what_they_can_carry() {
        let register = r::RegisterBrokerRecord {
            broker_id: 3,
            broker_epoch: 9,
            fenced: false,
            ..Default::default()
        };
        for version in 0..=5 {
            let record = Record::RegisterBroker(register.clone());
            let (record_type, v, k, value) = record.encode_version(version).unwrap();
            let log = LogRecord {
                offset: 0,
                record_type,
                version: v,
                key: k,
                value,
            };
            assert_eq!(Record::decode(&log).unwrap(), record, "v{version}");
        }
    }

    #[test]
    fn overlapping_record_types_are_told_apart_by_the_key() {
        let change = Record::BrokerRegistrationChange(r::BrokerRegistrationChangeRecord {
            broker_id: 4,
            ..Default::default()
        });
        let group = Record::StreamsGroupMetadata(
            r::StreamsGroupMetadataKey {
                group_id: "g".into(),
                ..Default::default()
            },
            None,
        );
        let unregister = Record::UnregisterBroker(r::UnregisterBrokerRecord {
            broker_id: 2,
            broker_epoch: 7,
            ..Default::default()
        });
        let commit = Record::OffsetCommit(
            r::OffsetCommitKey {
                group: "g".into(),
                topic: "t".into(),
                partition: 0,
                ..Default::default()
            },
            None,
        );
        for record in [change, group, unregister, commit] {
            let (record_type, version, key, value) = record.encode().unwrap();
            let log = LogRecord {
                offset: 0,
                record_type,
                version,
                key,
                value,
            };
            assert_eq!(Record::decode(&log).unwrap(), record);
        }
    }

    #[test]
    fn unknown_types_are_errors_not_panics() {
        let log = LogRecord {
            offset: 0,
            record_type: 999,
            version: 0,
            key: None,
            value: None,
        };
        assert!(matches!(
            Record::decode(&log),
            Err(RecordError::UnknownType(999))
        ));
        let log = LogRecord {
            offset: 0,
            record_type: 2,
            version: 0,
            key: None,
            value: Some(Bytes::from_static(&[1])),
        };
        assert!(matches!(
            Record::decode(&log),
            Err(RecordError::Codec { .. })
        ));
    }
}
