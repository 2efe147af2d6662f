//! The controller role's keys: `metadata.version`, `broker.session.timeout.ms`,
//! `metadata.log.dir` and when the metadata log is snapshotted (config/README.md).

use std::path::PathBuf;

use kcoord_metadata::MetadataVersion;

use super::values::{int_in, optional_string};
use super::{ConfigError, Reader};

/// Kafka's `broker.session.timeout.ms` default.
pub const DEFAULT_BROKER_SESSION_TIMEOUT_MS: i32 = 9_000;
/// Kafka's `metadata.log.max.record.bytes.between.snapshots` default (20 MiB).
pub const DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS: i64 = 20 * 1024 * 1024;
/// Kafka's `metadata.log.max.snapshot.interval.ms` default (one hour).
pub const DEFAULT_MAX_SNAPSHOT_INTERVAL_MS: i64 = 60 * 60 * 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSettings {
    /// The `metadata.version` a new metadata log is bootstrapped with. A log that already has
    /// one keeps it, as a formatted Kafka cluster keeps the version it was formatted with.
    pub metadata_version: MetadataVersion,
    /// A registered broker that has not heartbeaten for longer is fenced.
    pub broker_session_timeout_ms: i32,
    /// Where the controller's metadata log is kept; `None` keeps it in memory only.
    pub metadata_log_dir: Option<PathBuf>,
    /// The log is snapshotted once this many bytes of records were appended since the last
    /// snapshot (or as many as the last snapshot holds, when that is more).
    pub max_record_bytes_between_snapshots: i64,
    /// ... or once this long has passed since the last snapshot with records appended since;
    /// 0 turns the time trigger off.
    pub max_snapshot_interval_ms: i64,
    /// `controller.max.topics` and `controller.max.partitions` (kcoord's own): the most topics,
    /// and partitions of all topics, the catalog holds; a creation past them is refused.
    pub max_topics: usize,
    pub max_partitions: usize,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        ControllerSettings {
            metadata_version: MetadataVersion::LATEST,
            broker_session_timeout_ms: DEFAULT_BROKER_SESSION_TIMEOUT_MS,
            metadata_log_dir: None,
            max_record_bytes_between_snapshots: DEFAULT_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS,
            max_snapshot_interval_ms: DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
            max_topics: kcoord_controller::DEFAULT_MAX_TOPICS,
            max_partitions: kcoord_controller::DEFAULT_MAX_PARTITIONS,
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
        max_record_bytes_between_snapshots: r.get(
            "metadata.log.max.record.bytes.between.snapshots",
            d.max_record_bytes_between_snapshots,
            |v| int_in(v, 1, i64::MAX),
        )?,
        max_snapshot_interval_ms: r.get(
            "metadata.log.max.snapshot.interval.ms",
            d.max_snapshot_interval_ms,
            |v| int_in(v, 0, i64::MAX),
        )?,
        max_topics: r.get("controller.max.topics", d.max_topics, |v| {
            int_in(v, 1, i32::MAX).map(|n: i32| n as usize)
        })?,
        max_partitions: r.get("controller.max.partitions", d.max_partitions, |v| {
            int_in(v, 1, i32::MAX).map(|n: i32| n as usize)
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
        assert_eq!(c.max_record_bytes_between_snapshots, 20_971_520);
        assert_eq!(c.max_snapshot_interval_ms, 3_600_000);
        assert_eq!((c.max_topics, c.max_partitions), (10_000, 100_000));
    }

    #[test]
    fn catalog_limits_are_positive_integers() {
        let c = parse("controller.max.topics=5\ncontroller.max.partitions=50\n")
            .unwrap()
            .controller;
        assert_eq!((c.max_topics, c.max_partitions), (5, 50));
        for bad in [
            "controller.max.topics=0",
            "controller.max.partitions=-1",
            "controller.max.partitions=many",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("c.properties:3: controller.max."), "{e}");
        }
    }

    #[test]
    fn snapshot_keys_are_read_with_kafkas_bounds() {
        let c = parse(
            "metadata.log.max.record.bytes.between.snapshots=4096
metadata.log.max.snapshot.interval.ms=0
",
        )
        .unwrap()
        .controller;
        assert_eq!(c.max_record_bytes_between_snapshots, 4096);
        assert_eq!(c.max_snapshot_interval_ms, 0);
        let e = parse(
            "metadata.log.max.record.bytes.between.snapshots=0
",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "c.properties:3: metadata.log.max.record.bytes.between.snapshots: expected a positive integer, got 0"
        );
        assert!(parse(
            "metadata.log.max.snapshot.interval.ms=-1
"
        )
        .is_err());
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
