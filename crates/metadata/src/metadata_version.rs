//! `metadata.version`: Kafka's `MetadataVersion` table (trunk `server-common/.../MetadataVersion.java`,
//! from its minimum 3.3-IV3 = 7 to 4.4-IV2 = 33) plus this project's 4.5-IV0 = 34, the first
//! level whose RegisterBrokerRecord is v5 and keeps KIP-1326's StaticConfigs
//! (docs/decisions.md, "Numbers this project chose").
//!
//! The finalized level decides which version of each record the controller writes; replaying a
//! FeatureLevelRecord with a level outside the table is an error, as in Kafka.
use std::fmt;
use std::str::FromStr;

/// The name of the feature in FeatureLevelRecord, ApiVersions and BrokerRegistration.
pub const FEATURE_NAME: &str = "metadata.version";

/// `(feature level, release, internal version, didMetadataChange)`, oldest first.
const TABLE: &[(i16, &str, &str, bool)] = &[
    (7, "3.3", "IV3", true),
    (8, "3.4", "IV0", true),
    (9, "3.5", "IV0", false),
    (10, "3.5", "IV1", false),
    (11, "3.5", "IV2", true),
    (12, "3.6", "IV0", false),
    (13, "3.6", "IV1", true),
    (14, "3.6", "IV2", true),
    (15, "3.7", "IV0", true),
    (16, "3.7", "IV1", false),
    (17, "3.7", "IV2", true),
    (18, "3.7", "IV3", false),
    (19, "3.7", "IV4", false),
    (20, "3.8", "IV0", false),
    (21, "3.9", "IV0", false),
    (22, "4.0", "IV0", false),
    (23, "4.0", "IV1", true),
    (24, "4.0", "IV2", false),
    (25, "4.0", "IV3", false),
    (26, "4.1", "IV0", false),
    (27, "4.1", "IV1", false),
    (28, "4.2", "IV0", false),
    (29, "4.2", "IV1", false),
    (30, "4.3", "IV0", true),
    (31, "4.4", "IV0", false),
    (32, "4.4", "IV1", true),
    (33, "4.4", "IV2", true),
    // kcoord: RegisterBrokerRecord v5 with StaticConfigs (KIP-1326).
    (34, "4.5", "IV0", true),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataVersionError {
    /// Kafka's `MetadataVersion.fromFeatureLevel` message.
    #[error("No MetadataVersion with feature level {0}. Valid feature levels are from {min} to {max}.", min = MetadataVersion::MINIMUM.0, max = MetadataVersion::LATEST.0)]
    UnknownLevel(i16),
    /// Kafka's `MetadataVersion.fromVersionString` message.
    #[error("Unknown metadata.version '{0}'. Supported metadata.version are: {list}", list = MetadataVersion::all().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))]
    UnknownVersion(String),
}

/// A `metadata.version` feature level that is in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MetadataVersion(i16);

impl MetadataVersion {
    /// Kafka's `MINIMUM_VERSION`.
    pub const IBP_3_3_IV3: MetadataVersion = MetadataVersion(7);
    /// ZooKeeper migration: RegisterBrokerRecord v2 (IsMigratingZkBroker).
    pub const IBP_3_4_IV0: MetadataVersion = MetadataVersion(8);
    /// KRaft support for SCRAM (Kafka's `isScramSupported`).
    pub const IBP_3_5_IV2: MetadataVersion = MetadataVersion(11);
    /// JBOD in KRaft: RegisterBrokerRecord v3 (LogDirs), directory checks on registration.
    pub const IBP_3_7_IV2: MetadataVersion = MetadataVersion(17);
    /// Cordoned log dirs: RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3.
    pub const IBP_4_3_IV0: MetadataVersion = MetadataVersion(30);
    /// CIDR ranges as ACL hosts (Kafka's `isCidrAclSupported`).
    pub const IBP_4_4_IV1: MetadataVersion = MetadataVersion(32);
    /// Kafka's latest production level.
    pub const IBP_4_4_IV2: MetadataVersion = MetadataVersion(33);
    /// kcoord: RegisterBrokerRecord v5 with StaticConfigs.
    pub const IBP_4_5_IV0: MetadataVersion = MetadataVersion(34);

    pub const MINIMUM: MetadataVersion = MetadataVersion::IBP_3_3_IV3;
    pub const LATEST: MetadataVersion = MetadataVersion::IBP_4_5_IV0;

    /// Every level, oldest first.
    pub fn all() -> impl Iterator<Item = MetadataVersion> {
        TABLE.iter().map(|(level, ..)| MetadataVersion(*level))
    }

    pub fn from_feature_level(level: i16) -> Result<MetadataVersion, MetadataVersionError> {
        TABLE
            .iter()
            .any(|(l, ..)| *l == level)
            .then_some(MetadataVersion(level))
            .ok_or(MetadataVersionError::UnknownLevel(level))
    }

    /// Kafka's `fromVersionString`: `3.8-IV0`, or a release (`3.8`, also `3.8.1`: only the
    /// first two segments count) meaning its latest internal version.
    pub fn from_version_string(text: &str) -> Result<MetadataVersion, MetadataVersionError> {
        let segments: Vec<&str> = text.split('.').collect();
        let key = if segments.len() <= 2 {
            text.to_string()
        } else {
            segments[..2].join(".")
        };
        let exact = TABLE
            .iter()
            .find(|(_, release, iv, _)| format!("{release}-{iv}") == key);
        let latest_of_release = TABLE.iter().rev().find(|(_, release, ..)| *release == key);
        exact
            .or(latest_of_release)
            .map(|(level, ..)| MetadataVersion(*level))
            .ok_or_else(|| MetadataVersionError::UnknownVersion(text.to_string()))
    }

    /// A version string as above, or a bare feature level such as `34` (what config files and
    /// `kafka-features.sh --metadata` accept between them).
    pub fn parse(text: &str) -> Result<MetadataVersion, MetadataVersionError> {
        let text = text.trim();
        match text.parse::<i16>() {
            Ok(level) => MetadataVersion::from_feature_level(level),
            Err(_) => MetadataVersion::from_version_string(text),
        }
    }

    pub const fn feature_level(self) -> i16 {
        self.0
    }

    fn entry(self) -> (i16, &'static str, &'static str, bool) {
        // Only levels from the table are ever constructed.
        TABLE
            .iter()
            .copied()
            .find(|(l, ..)| *l == self.0)
            .unwrap_or((self.0, "?", "?", true))
    }

    /// The release, e.g. `4.4`.
    pub fn release(self) -> &'static str {
        self.entry().1
    }

    pub fn did_metadata_change(self) -> bool {
        self.entry().3
    }

    pub fn is_migration_supported(self) -> bool {
        self >= MetadataVersion::IBP_3_4_IV0
    }

    pub fn is_directory_assignment_supported(self) -> bool {
        self >= MetadataVersion::IBP_3_7_IV2
    }

    pub fn is_cordoned_log_dirs_supported(self) -> bool {
        self >= MetadataVersion::IBP_4_3_IV0
    }

    /// SCRAM credentials can be stored (AlterUserScramCredentials).
    pub fn is_scram_supported(self) -> bool {
        self >= MetadataVersion::IBP_3_5_IV2
    }

    /// ACL hosts may be CIDR ranges (CreateAcls).
    pub fn is_cidr_acl_supported(self) -> bool {
        self >= MetadataVersion::IBP_4_4_IV1
    }

    /// KIP-1326: RegisterBrokerRecord can carry StaticConfigs.
    pub fn is_static_configs_supported(self) -> bool {
        self >= MetadataVersion::IBP_4_5_IV0
    }

    /// Kafka's `registerBrokerRecordVersion`, extended with v5 for StaticConfigs.
    pub fn register_broker_record_version(self) -> i16 {
        if self.is_static_configs_supported() {
            5
        } else if self.is_cordoned_log_dirs_supported() {
            4
        } else if self.is_directory_assignment_supported() {
            3
        } else if self.is_migration_supported() {
            2
        } else {
            1
        }
    }
}

impl fmt::Display for MetadataVersion {
    /// Kafka's `toString`: `4.4-IV2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (_, release, iv, _) = self.entry();
        write!(f, "{release}-{iv}")
    }
}

impl FromStr for MetadataVersion {
    type Err = MetadataVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MetadataVersion::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_names_follow_kafkas_table_plus_4_5_iv0() {
        assert_eq!(MetadataVersion::MINIMUM.feature_level(), 7);
        assert_eq!(MetadataVersion::MINIMUM.to_string(), "3.3-IV3");
        assert_eq!(MetadataVersion::IBP_4_4_IV2.to_string(), "4.4-IV2");
        assert_eq!(MetadataVersion::LATEST.to_string(), "4.5-IV0");
        assert_eq!(MetadataVersion::LATEST.feature_level(), 34);
        assert_eq!(MetadataVersion::all().count(), 28);
        let levels: Vec<i16> = MetadataVersion::all()
            .map(MetadataVersion::feature_level)
            .collect();
        assert_eq!(levels, (7..=34).collect::<Vec<_>>());
    }

    #[test]
    fn names_releases_and_numbers_parse() {
        let level = |s: &str| MetadataVersion::parse(s).map(MetadataVersion::feature_level);
        assert_eq!(level("4.4-IV2"), Ok(33));
        assert_eq!(level("3.9-IV0"), Ok(21));
        assert_eq!(level("4.5-IV0"), Ok(34));
        assert_eq!(level("34"), Ok(34));
        assert_eq!(level(" 17 "), Ok(17));
        // A release means its latest internal version; a third segment is ignored.
        assert_eq!(level("3.7"), Ok(19));
        assert_eq!(level("4.4"), Ok(33));
        assert_eq!(level("3.8.1"), Ok(20));
        assert_eq!(level("3.8-IV0"), Ok(20));
    }

    #[test]
    fn unknown_versions_get_kafkas_messages() {
        let e = MetadataVersion::parse("3.2-IV0").unwrap_err();
        assert!(e.to_string().starts_with("Unknown metadata.version '3.2-IV0'. Supported metadata.version are: 3.3-IV3, 3.4-IV0,"), "{e}");
        assert!(e.to_string().ends_with("4.4-IV2, 4.5-IV0"), "{e}");
        assert_eq!(
            MetadataVersion::parse("6").unwrap_err().to_string(),
            "No MetadataVersion with feature level 6. Valid feature levels are from 7 to 34."
        );
        assert!(MetadataVersion::from_feature_level(35).is_err());
        assert!(MetadataVersion::parse("").is_err());
    }

    #[test]
    fn register_broker_record_version_follows_the_level() {
        let version = |level| {
            MetadataVersion::from_feature_level(level)
                .unwrap()
                .register_broker_record_version()
        };
        assert_eq!(version(7), 1);
        assert_eq!(version(8), 2);
        assert_eq!(version(16), 2);
        assert_eq!(version(17), 3);
        assert_eq!(version(29), 3);
        assert_eq!(version(30), 4);
        assert_eq!(version(33), 4);
        assert_eq!(version(34), 5);
    }
}
