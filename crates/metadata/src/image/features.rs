//! Finalized feature levels (metadata record 12 FeatureLevelRecord), as Kafka's
//! `FeatureControlManager.replay` keeps them.
use std::collections::BTreeMap;

use kcoord_wire::records::FeatureLevelRecord;

use crate::metadata_version::{MetadataVersion, FEATURE_NAME};

/// `kraft.version` lives in the Raft layer, not in FeatureLevelRecords; Kafka skips such
/// records on replay (KAFKA-18979) and so do we.
const KRAFT_VERSION: &str = "kraft.version";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeaturesImage {
    metadata_version: Option<MetadataVersion>,
    /// Every other finalized feature with a level above 0.
    others: BTreeMap<String, i16>,
    /// Offset of the last FeatureLevelRecord applied: the epoch ApiVersions reports with the
    /// finalized features.
    last_change_offset: Option<u64>,
}

impl FeaturesImage {
    /// The finalized `metadata.version`, once a FeatureLevelRecord set it.
    pub fn metadata_version(&self) -> Option<MetadataVersion> {
        self.metadata_version
    }

    /// Every finalized feature, `metadata.version` included, by name.
    pub fn finalized(&self) -> BTreeMap<String, i16> {
        let mut all = self.others.clone();
        if let Some(mv) = self.metadata_version {
            all.insert(FEATURE_NAME.to_string(), mv.feature_level());
        }
        all
    }

    /// The finalized level of `name`; 0 (disabled) when it is not finalized.
    pub fn level(&self, name: &str) -> i16 {
        if name == FEATURE_NAME {
            return self
                .metadata_version
                .map_or(0, MetadataVersion::feature_level);
        }
        self.others.get(name).copied().unwrap_or(0)
    }

    /// The finalized-features epoch: the offset of the last FeatureLevelRecord, -1 if none.
    pub fn epoch(&self) -> i64 {
        self.last_change_offset.map_or(-1, |o| o as i64)
    }

    pub(crate) fn replay(&mut self, r: &FeatureLevelRecord, offset: u64) -> Result<(), String> {
        if r.name == FEATURE_NAME {
            let mv =
                MetadataVersion::from_feature_level(r.feature_level).map_err(|e| e.to_string())?;
            self.metadata_version = Some(mv);
        } else if r.name == KRAFT_VERSION {
            return Ok(());
        } else if r.feature_level < 0 {
            return Err(format!(
                "Tried to apply FeatureLevelRecord for {} with negative level {}",
                r.name, r.feature_level
            ));
        } else if r.feature_level == 0 {
            self.others.remove(&r.name);
        } else {
            self.others.insert(r.name.clone(), r.feature_level);
        }
        self.last_change_offset = Some(offset);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, level: i16) -> FeatureLevelRecord {
        FeatureLevelRecord {
            name: name.into(),
            feature_level: level,
            ..Default::default()
        }
    }

    #[test]
    fn metadata_version_and_other_features_are_finalized_by_records() {
        let mut image = FeaturesImage::default();
        assert_eq!(image.metadata_version(), None);
        assert_eq!(image.epoch(), -1);
        image.replay(&record("metadata.version", 33), 0).unwrap();
        image.replay(&record("group.version", 1), 1).unwrap();
        assert_eq!(
            image.metadata_version().map(|v| v.to_string()).as_deref(),
            Some("4.4-IV2")
        );
        assert_eq!(
            image.finalized(),
            BTreeMap::from([
                ("group.version".to_string(), 1),
                ("metadata.version".to_string(), 33)
            ])
        );
        assert_eq!(image.epoch(), 1);
        // Level 0 disables a feature.
        image.replay(&record("group.version", 0), 2).unwrap();
        assert_eq!(image.level("group.version"), 0);
        assert_eq!(image.finalized().len(), 1);
        // kraft.version is skipped; unknown metadata.version levels do not apply.
        image.replay(&record("kraft.version", 1), 3).unwrap();
        assert_eq!(image.level("kraft.version"), 0);
        assert_eq!(image.epoch(), 2);
        assert!(image.replay(&record("metadata.version", 6), 4).is_err());
        assert!(image.replay(&record("group.version", -1), 4).is_err());
    }
}
