//! Feature versions advertised in ApiVersions v3+ (KIP-584). The supported ranges are this
//! build's: `metadata.version` from 7 (3.3-IV3, Kafka's minimum) to 34 (4.5-IV0, this
//! project's level, docs/decisions.md). The finalized levels and their epoch are the
//! controller's: `metadata.version` is bootstrapped from the config into the metadata log
//! (a FeatureLevelRecord), and the epoch is the log offset of the last such record, read from
//! the published [`crate::runtime::cluster::ClusterImage`].
//!
//! `streams.version` (KIP-1071) is supported 0-1 and always finalized at 1: kcoord serves
//! streams groups in every cluster and has no way to turn them off, so no record decides it.
//! `transaction.version` (KIP-890) is supported 0-2 and finalized at the transaction
//! coordinator's level, 2 as in Kafka 4.4: clients then add partitions with Produce and bump
//! the epoch at every EndTxn. `group.version` is supported 0-1 and always finalized at 1, as
//! a Kafka 4.4 cluster formatted at its latest version finalizes it: level 1 is KIP-848's
//! consumer rebalance protocol, which kcoord serves in every cluster (Kafka's consumer reads
//! the level to know ConsumerGroupHeartbeat is there). The features of what kcoord does not
//! serve (`share.version`, `eligible.leader.replicas.version`, `kraft.version`) are neither
//! supported nor finalized (README, "Differences from Apache Kafka 4.4").

use kcoord_metadata::MetadataVersion;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportedFeature {
    pub name: &'static str,
    pub min_version: i16,
    pub max_version: i16,
}

/// What ApiVersions reports as supported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub supported: Vec<SupportedFeature>,
}

pub const METADATA_VERSION: &str = kcoord_metadata::metadata_version::FEATURE_NAME;
pub const METADATA_VERSION_MIN: i16 = MetadataVersion::MINIMUM.feature_level();
pub const METADATA_VERSION_LATEST: i16 = MetadataVersion::LATEST.feature_level();
pub const STREAMS_VERSION: &str = "streams.version";
/// The `streams.version` level of every kcoord cluster (Kafka 4.4's highest).
pub const STREAMS_VERSION_LEVEL: i16 = 1;
pub const GROUP_VERSION: &str = "group.version";
/// The `group.version` level of every kcoord cluster: 1, consumer groups (Kafka 4.4's highest).
pub const GROUP_VERSION_LEVEL: i16 = 1;
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// The highest `transaction.version` this build serves.
pub const TRANSACTION_VERSION_MAX: i16 = kcoord_coordinator::transactions::TV_2;

impl Default for Features {
    fn default() -> Self {
        Features {
            supported: vec![
                SupportedFeature {
                    name: METADATA_VERSION,
                    min_version: METADATA_VERSION_MIN,
                    max_version: METADATA_VERSION_LATEST,
                },
                SupportedFeature {
                    name: STREAMS_VERSION,
                    min_version: 0,
                    max_version: STREAMS_VERSION_LEVEL,
                },
                SupportedFeature {
                    name: GROUP_VERSION,
                    min_version: 0,
                    max_version: GROUP_VERSION_LEVEL,
                },
                SupportedFeature {
                    name: TRANSACTION_VERSION,
                    min_version: 0,
                    max_version: TRANSACTION_VERSION_MAX,
                },
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_version_range_is_kafkas_minimum_to_ours() {
        assert_eq!((METADATA_VERSION_MIN, METADATA_VERSION_LATEST), (7, 34));
    }
}
