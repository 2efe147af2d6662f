//! The controller role's keys: `metadata.version`, `broker.session.timeout.ms` and
//! `metadata.log.dir` (config/README.md).

use std::path::PathBuf;

use kcoord_metadata::MetadataVersion;

use super::values::{int_in, optional_string};
use super::{ConfigError, Reader};

/// Kafka's `broker.session.timeout.ms` default.
pub const DEFAULT_BROKER_SESSION_TIMEOUT_MS: i32 = 9_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSettings {
    /// The `metadata.version` a new metadata log is bootstrapped with. A log that already has
    /// one keeps it, as a formatted Kafka cluster keeps the version it was formatted with.
    pub metadata_version: MetadataVersion,
    /// A registered broker that has not heartbeaten for longer is fenced.
    pub broker_session_timeout_ms: i32,
    /// Where the controller's metadata log is kept; `None` keeps it in memory only.
    pub metadata_log_dir: Option<PathBuf>,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        ControllerSettings {
            metadata_version: MetadataVersion::LATEST,
            broker_session_timeout_ms: DEFAULT_BROKER_SESSION_TIMEOUT_MS,
            metadata_log_dir: None,
        }
    }
}

pub(super) fn read(r: &Reader<'_>) -> Result<ControllerSettings, ConfigError> {
    let d = ControllerSettings::default();
    Ok(ControllerSettings {
        // Kafka's own messages: `Unknown metadata.version '4.9-IV0'. Supported metadata.version
        // are: 3.3-IV3, ...`, or the valid feature levels for a bare number.
        metadata_version: r.get("metadata.version", d.metadata_version, |v| {
            MetadataVersion::parse(v).map_err(|e| e.to_string())
        })?,
        broker_session_timeout_ms: r.get(
            "broker.session.timeout.ms",
            d.broker_session_timeout_ms,
            |v| int_in(v, 1, i32::MAX),
        )?,
        metadata_log_dir: r.get("metadata.log.dir", None, |v| {
            Ok(optional_string(v).map(PathBuf::from))
        })?,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};
    use kcoord_metadata::MetadataVersion;

    fn parse(extra: &str) -> Result<Config, ConfigError> {
        Config::parse(
            "c.properties",
            &format!(
                "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n{extra}"
            ),
        )
    }

    #[test]
    fn defaults_are_the_latest_level_nine_seconds_and_memory_only() {
        let c = parse("").unwrap().controller;
        assert_eq!(c.metadata_version, MetadataVersion::LATEST);
        assert_eq!(c.metadata_version.feature_level(), 34);
        assert_eq!(c.broker_session_timeout_ms, 9_000);
        assert_eq!(c.metadata_log_dir, None);
    }

    #[test]
    fn keys_are_read() {
        let c = parse("metadata.version=4.4-IV2\nbroker.session.timeout.ms=500\nmetadata.log.dir=/var/lib/kcoord\n")
            .unwrap()
            .controller;
        assert_eq!(c.metadata_version, MetadataVersion::IBP_4_4_IV2);
        assert_eq!(c.broker_session_timeout_ms, 500);
        assert_eq!(
            c.metadata_log_dir.as_deref(),
            Some(std::path::Path::new("/var/lib/kcoord"))
        );
        assert_eq!(
            parse("metadata.version=30\n")
                .unwrap()
                .controller
                .metadata_version
                .feature_level(),
            30
        );
        assert_eq!(
            parse("metadata.log.dir=  \n")
                .unwrap()
                .controller
                .metadata_log_dir,
            None
        );
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        let e = parse("\nmetadata.version=4.9-IV0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.properties:4: metadata.version: Unknown metadata.version '4.9-IV0'. Supported metadata.version are: 3.3-IV3,"),
            "{e}"
        );
        assert!(e.ends_with("4.4-IV2, 4.5-IV0"), "{e}");
        let e = parse("metadata.version=6\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "c.properties:3: metadata.version: No MetadataVersion with feature level 6. Valid feature levels are from 7 to 34."
        );
        let e = parse("broker.session.timeout.ms=0\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.properties:3: broker.session.timeout.ms: expected a positive integer, got 0"
        );
    }
}
