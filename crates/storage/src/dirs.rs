//! The layout of `log.dirs`, as Kafka lays it out: one directory per partition named
//! `<topic>-<partition>`, holding its segments and a `partition.metadata` file with the topic
//! id, so that a directory left by a deleted topic is never taken for a new topic of the same
//! name.

use std::path::{Path, PathBuf};

use crate::error::StorageError;
use crate::segment;

const PARTITION_METADATA: &str = "partition.metadata";

/// Kafka's name for the metadata log's directory is `__cluster_metadata-0`.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// A partition directory found in a log dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLog {
    pub dir: PathBuf,
    pub topic: String,
    pub partition: i32,
    /// From `partition.metadata`, as written (Kafka's base64 uuid text).
    pub topic_id: Option<String>,
}

/// `<topic>-<partition>`.
pub fn partition_dir_name(topic: &str, partition: i32) -> String {
    format!("{topic}-{partition}")
}

/// Every partition directory under `log_dirs`. Directories Kafka marks as being deleted or
/// moved (`-delete`, `-future`, `-stray`) and anything not named like a partition are skipped.
pub fn find_logs(log_dirs: &[PathBuf]) -> Result<Vec<FoundLog>, StorageError> {
    let mut found = Vec::new();
    for root in log_dirs {
        std::fs::create_dir_all(root).map_err(|e| StorageError::io(root, e))?;
        for entry in std::fs::read_dir(root).map_err(|e| StorageError::io(root, e))? {
            let dir = entry.map_err(|e| StorageError::io(root, e))?.path();
            if !dir.is_dir() {
                continue;
            }
            let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            let Some((topic, partition)) = name.rsplit_once('-') else {
                continue;
            };
            let Ok(partition) = partition.parse::<i32>() else {
                continue;
            };
            // The metadata log lives beside the partitions, as in Kafka (`__cluster_metadata-0`).
            if topic.is_empty() || partition < 0 || topic == METADATA_TOPIC {
                continue;
            }
            let topic_id = read_topic_id(&dir)?;
            found.push(FoundLog {
                dir,
                topic: topic.to_owned(),
                partition,
                topic_id,
            });
        }
    }
    found.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(found)
}

fn read_topic_id(dir: &Path) -> Result<Option<String>, StorageError> {
    let path = dir.join(PARTITION_METADATA);
    let text = segment::read_small_file(&path).map_err(|e| StorageError::io(&path, e))?;
    Ok(text.and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("topic_id:"))
            .map(|id| id.trim().to_owned())
    }))
}

/// Creates the directory of a new partition in the log dir holding the fewest partitions (as
/// Kafka picks one), with its `partition.metadata`.
pub fn create_log_dir(
    log_dirs: &[PathBuf],
    counts: &[usize],
    topic: &str,
    partition: i32,
    topic_id: &str,
) -> Result<PathBuf, StorageError> {
    let root = log_dirs
        .iter()
        .zip(counts.iter().chain(std::iter::repeat(&0)))
        .min_by_key(|(_, n)| **n)
        .map(|(root, _)| root)
        .ok_or_else(|| {
            StorageError::io(
                Path::new("log.dirs"),
                std::io::Error::other("no log directory configured"),
            )
        })?;
    let dir = root.join(partition_dir_name(topic, partition));
    if dir.exists() {
        // A leftover of a topic deleted while the daemon was down.
        std::fs::remove_dir_all(&dir).map_err(|e| StorageError::io(&dir, e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| StorageError::io(&dir, e))?;
    let path = dir.join(PARTITION_METADATA);
    segment::write_small_file(&path, &format!("version: 0\ntopic_id: {topic_id}\n"))
        .map_err(|e| StorageError::io(&path, e))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_dirs_are_found_with_their_topic_ids() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let roots = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        let d1 = create_log_dir(&roots, &[1, 0], "orders-v2", 3, "AAAAAAAAAAAAAAAAAAAAAQ").unwrap();
        assert!(d1.starts_with(b.path()), "the emptier dir is chosen");
        create_log_dir(&roots, &[0, 1], "orders-v2", 0, "AAAAAAAAAAAAAAAAAAAAAQ").unwrap();
        std::fs::create_dir(a.path().join("not a partition")).unwrap();
        std::fs::create_dir(a.path().join("x-1.delete")).unwrap();
        let found = find_logs(&roots).unwrap();
        let names: Vec<(String, i32, Option<String>)> = found
            .into_iter()
            .map(|f| (f.topic, f.partition, f.topic_id))
            .collect();
        assert_eq!(
            names,
            vec![
                (
                    "orders-v2".to_owned(),
                    0,
                    Some("AAAAAAAAAAAAAAAAAAAAAQ".to_owned())
                ),
                (
                    "orders-v2".to_owned(),
                    3,
                    Some("AAAAAAAAAAAAAAAAAAAAAQ".to_owned())
                ),
            ]
        );
    }
}
