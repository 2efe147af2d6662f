//! Where the coordinator shards keep their durable logs, and how hard they push them to disk
//! (`group.coordinator.log.fsync`; config/README.md, "Durability of groups and offsets").

use std::path::{Path, PathBuf};

use super::values::boolean;
use super::{ConfigError, Reader};

/// The directory under a log dir (or the metadata log dir) that holds one directory per shard.
/// Not named like a partition (`<topic>-<n>`), so the data plane never takes it for one.
pub const COORDINATOR_DIR: &str = "group-coordinator";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorLogSettings {
    /// `<dir>/<shard index>/` holds each shard's log; `None` keeps groups and offsets in memory.
    pub dir: Option<PathBuf>,
    /// fsync each group commit before answering (the default), or only write it to the file
    /// (it then survives a crash of the daemon, not one of the machine).
    pub fsync: bool,
}

impl Default for CoordinatorLogSettings {
    fn default() -> Self {
        CoordinatorLogSettings {
            dir: None,
            fsync: true,
        }
    }
}

/// The shards' logs go beside the partitions, as Kafka keeps `__consumer_offsets` in the first
/// log dir; without `log.dirs`, inside `metadata.log.dir`; without either, nowhere.
pub(super) fn read(
    r: &Reader<'_>,
    log_dirs: &[PathBuf],
    metadata_log_dir: Option<&Path>,
) -> Result<CoordinatorLogSettings, ConfigError> {
    let root = log_dirs.first().map(PathBuf::as_path).or(metadata_log_dir);
    Ok(CoordinatorLogSettings {
        dir: root.map(|d| d.join(COORDINATOR_DIR)),
        fsync: r.get("group.coordinator.log.fsync", true, boolean)?,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    fn parse(extra: &str) -> Config {
        Config::parse("test.properties", &format!("node.id=1\n{extra}")).unwrap()
    }

    #[test]
    fn shard_logs_live_in_the_first_log_dir_else_in_the_metadata_log_dir_else_nowhere() {
        let c = parse("");
        assert_eq!(c.coordinator_log.dir, None);
        assert!(c.coordinator_log.fsync);
        let c = parse("log.dirs=/a,/b\n");
        assert_eq!(
            c.coordinator_log.dir.as_deref(),
            Some(Path::new("/a/group-coordinator"))
        );
        let c = parse("metadata.log.dir=/m\ngroup.coordinator.log.fsync=false\n");
        assert_eq!(
            c.coordinator_log.dir.as_deref(),
            Some(Path::new("/m/group-coordinator"))
        );
        assert!(!c.coordinator_log.fsync);
    }
}
