//! Feature versions advertised in ApiVersions v3+ (KIP-584). For now the only feature is
//! `metadata.version`, supported 7 (3.3-IV3, Kafka's minimum) to 34 (4.5-IV0, this project's
//! level, wire-decisions.md) and finalized at 34. A later issue makes the finalized level
//! configurable and ties the epoch to the metadata log.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportedFeature {
    pub name: &'static str,
    pub min_version: i16,
    pub max_version: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalizedFeature {
    pub name: &'static str,
    pub level: i16,
}

/// What ApiVersions reports about features.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub supported: Vec<SupportedFeature>,
    pub finalized: Vec<FinalizedFeature>,
    /// -1 would tell clients to ignore `finalized`.
    pub finalized_epoch: i64,
}

pub const METADATA_VERSION: &str = "metadata.version";
pub const METADATA_VERSION_MIN: i16 = 7;
pub const METADATA_VERSION_LATEST: i16 = 34;

impl Default for Features {
    fn default() -> Self {
        Features {
            supported: vec![SupportedFeature {
                name: METADATA_VERSION,
                min_version: METADATA_VERSION_MIN,
                max_version: METADATA_VERSION_LATEST,
            }],
            finalized: vec![FinalizedFeature {
                name: METADATA_VERSION,
                level: METADATA_VERSION_LATEST,
            }],
            finalized_epoch: 0,
        }
    }
}
