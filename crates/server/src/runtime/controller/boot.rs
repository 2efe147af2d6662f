//! Building the controller before the daemon starts: in memory, or replayed from the log in
//! `metadata.log.dir`, so that a corrupt log stops startup before any listener is bound.

use std::path::PathBuf;

use kcoord_controller::{Controller, ControllerConfig, TopicDefaults, TopicLimits};
use kcoord_metadata::file_log::{self, FileLogError, LogWriter};
use kcoord_metadata::TopicsImage;
use tracing::{info, warn};

use super::snapshots::SnapshotPolicy;
use crate::config::Config;
use crate::runtime::cluster::ClusterImage;

/// Why the controller could not start from its log.
#[derive(Debug, thiserror::Error)]
pub enum MetadataLogError {
    #[error("metadata.log.dir: {0}")]
    File(#[from] FileLogError),
    #[error("metadata.log.dir {dir}: the log does not replay: {reason}")]
    Replay { dir: String, reason: String },
}

/// A controller ready to run, with the writer of its durable log if it has one.
pub struct ControllerBoot {
    pub(crate) controller: Controller,
    pub(crate) writer: Option<LogWriter>,
    /// When the log is replaced by a snapshot.
    pub(crate) snapshots: SnapshotPolicy,
    /// The `now` the controller started its broker sessions at.
    pub(crate) activated_at: i64,
}

impl std::fmt::Debug for ControllerBoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerBoot")
            .field("controller", &self.controller)
            .field("log", &self.writer.as_ref().map(|w| w.path().to_path_buf()))
            .finish()
    }
}

fn controller_config(config: &Config) -> ControllerConfig {
    ControllerConfig::new(config.cluster_id.clone())
        .with_metadata_version(config.controller.metadata_version)
        .with_session_timeout_ms(i64::from(config.controller.broker_session_timeout_ms))
        .with_topic_defaults(TopicDefaults {
            node_id: config.node_id,
            num_partitions: config.num_partitions,
            replication_factor: config.default_replication_factor,
        })
        .with_topic_limits(TopicLimits {
            max_topics: config.controller.max_topics,
            max_partitions: config.controller.max_partitions,
        })
}

impl ControllerBoot {
    /// A controller over a new in-memory log, bootstrapped with `metadata.version`.
    pub fn in_memory(config: &Config) -> ControllerBoot {
        let controller = match Controller::new(controller_config(config)) {
            Ok(controller) => controller,
            // Bootstrapping an empty log writes one FeatureLevelRecord at a level the config
            // parser already checked; it cannot fail short of a bug.
            Err(e) => panic!("bootstrapping an empty metadata log failed: {e}"),
        };
        ControllerBoot {
            controller,
            writer: None,
            snapshots: SnapshotPolicy::from_config(config),
            // `Controller::new` starts no session (an empty log has no broker).
            activated_at: 0,
        }
    }

    /// The controller as `config` asks: in memory, or replayed from `metadata.log.dir` (created
    /// when missing). `now` starts the sessions of the brokers the log says are unfenced. In
    /// gateway mode always in memory: the node keeps no state, and what its controller holds
    /// that must outlive it (kcoord's SCRAM credentials) is kept in the cluster.
    pub fn open(config: &Config, now: i64) -> Result<ControllerBoot, MetadataLogError> {
        let dir = match config.controller.metadata_log_dir.as_ref() {
            Some(dir) if config.gateway.is_none() => dir,
            _ => return Ok(ControllerBoot::in_memory(config)),
        };
        let loaded = file_log::open(dir)?;
        let shown = dir.display().to_string();
        if let Some(cut) = loaded.cut {
            // The last append never finished, so it was never acknowledged.
            warn!(
                file = %loaded.writer.path().display(),
                torn_bytes = cut.bytes,
                position = cut.position,
                "cut the torn tail of the metadata log: {cut}"
            );
        }
        let controller = Controller::from_log(controller_config(config), &loaded.log, now)
            .map_err(|e| MetadataLogError::Replay {
                dir: shown.clone(),
                reason: e.to_string(),
            })?;
        let mut writer = loaded.writer;
        // A new log was just bootstrapped: its FeatureLevelRecord must be on disk too.
        writer.sync_from(controller.store().log())?;
        let configured = config.controller.metadata_version;
        if controller.metadata_version() != configured && !loaded.log.is_empty() {
            // As a formatted Kafka cluster keeps the version it was formatted with.
            info!(
                dir = %shown,
                log = %controller.metadata_version(),
                configured = %configured,
                "metadata.version comes from the existing log, not the config"
            );
        }
        info!(
            dir = %shown,
            records = controller.store().log().len(),
            topics = controller.state().topics.len(),
            brokers = controller.brokers().len(),
            metadata_version = %controller.metadata_version(),
            "metadata log replayed"
        );
        Ok(ControllerBoot {
            controller,
            writer: Some(writer),
            snapshots: SnapshotPolicy::from_config(config),
            activated_at: now,
        })
    }

    pub fn topics_image(&self) -> TopicsImage {
        self.controller.state().topics.clone()
    }

    pub fn cluster_image(&self) -> ClusterImage {
        ClusterImage::from_controller(&self.controller)
    }

    /// Where the durable log is, if there is one.
    pub fn log_path(&self) -> Option<PathBuf> {
        self.writer.as_ref().map(|w| w.path().to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Config {
        Config::parse(
            "test",
            &format!(
                "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n{extra}"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn without_a_log_dir_the_controller_is_in_memory() {
        let boot = ControllerBoot::open(&config(""), 0).unwrap();
        assert!(boot.log_path().is_none());
        assert_eq!(
            boot.cluster_image()
                .finalized_features
                .get("metadata.version"),
            Some(&34)
        );
    }

    #[test]
    fn a_new_log_is_bootstrapped_on_disk_and_keeps_its_level_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let at = |mv: &str| {
            config(&format!(
                "metadata.log.dir={}\nmetadata.version={mv}\n",
                dir.path().display()
            ))
        };
        let boot = ControllerBoot::open(&at("4.4-IV2"), 0).unwrap();
        assert_eq!(boot.log_path(), Some(dir.path().join(file_log::FILE_NAME)));
        drop(boot);
        // The FeatureLevelRecord is on disk: a restart with another configured level keeps 33.
        let again = ControllerBoot::open(&at("4.5-IV0"), 0).unwrap();
        assert_eq!(again.cluster_image().metadata_version.feature_level(), 33);
        assert_eq!(again.controller.store().log().len(), 1);
    }

    #[test]
    fn a_corrupt_log_stops_startup() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(&format!("metadata.log.dir={}\n", dir.path().display()));
        drop(ControllerBoot::open(&c, 0).unwrap());
        let path = dir.path().join(file_log::FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        let e = ControllerBoot::open(&c, 0).unwrap_err().to_string();
        assert!(
            e.starts_with("metadata.log.dir: ") && e.contains("is corrupt: checksum"),
            "{e}"
        );
    }
}
