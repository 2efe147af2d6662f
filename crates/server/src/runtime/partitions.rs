//! The partitions this node leads (Kafka's `ReplicaManager` for a single broker): one
//! [`kcoord_storage::Log`] per partition of the published topic catalog, in memory or under
//! `log.dirs`, kept in step with the catalog by [`Partitions::sync`], which the controller
//! calls before it publishes a change.
//!
//! A partition's log sits behind its own mutex, held for an append or for collecting a read's
//! chunks; file reads of those chunks happen after it is released. Appends wake the fetches
//! waiting on the partition ([`Partition::appended`]).

pub mod maintenance;
mod markers;
pub mod seals;
pub mod writeback;

pub use markers::MarkerError;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use kcoord_metadata::TopicsImage;
use kcoord_storage::dirs::{self, FoundLog};
use kcoord_storage::{Log, LogConfig, StorageError};
use tokio::sync::Notify;
use tracing::{error, info, warn};
use uuid::Uuid;

use crate::config::LogSettings;

/// One partition this node leads.
#[derive(Debug)]
pub struct Partition {
    pub topic: String,
    pub topic_id: Uuid,
    pub index: i32,
    pub leader_epoch: i32,
    log: Mutex<Log>,
    /// Woken after every append, for fetches waiting for data.
    pub appended: Notify,
}

impl Partition {
    /// The log, locked. A poisoned lock still holds a whole log: every mutation of it either
    /// completes or leaves it as it was.
    pub fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The settings its batches are validated with.
    pub fn config(&self) -> LogConfig {
        self.log().config().clone()
    }

    pub fn name(&self) -> String {
        format!("{}-{}", self.topic, self.index)
    }

    /// Every producer with state in this partition (id, epoch, last sequence, last timestamp,
    /// coordinator epoch, ongoing transaction's first offset), for DescribeProducers.
    pub fn active_producers(&self) -> Vec<kcoord_storage::ProducerSummary> {
        self.log().producer_summaries()
    }
}

/// Every partition log, by topic id and partition index.
#[derive(Debug)]
pub struct Partitions {
    settings: LogSettings,
    /// The dynamic broker configs in effect on this node (by broker key, e.g.
    /// `log.retention.ms`), over the config file's settings: the defaults of topic configs.
    dynamic: RwLock<std::collections::BTreeMap<String, String>>,
    logs: RwLock<HashMap<(Uuid, i32), Arc<Partition>>>,
    writeback: writeback::Writeback,
}

impl Partitions {
    /// No partitions yet; [`Partitions::sync`] creates them.
    pub fn new(settings: LogSettings) -> Partitions {
        Partitions {
            settings,
            dynamic: RwLock::default(),
            logs: RwLock::default(),
            writeback: writeback::Writeback::default(),
        }
    }

    /// Where appended bytes go to be written behind the appends.
    pub fn writeback(&self) -> &writeback::Writeback {
        &self.writeback
    }

    /// The partitions of `topics` at startup: logs found under `log.dirs` that belong to a
    /// topic of the catalog are opened (and recovered); the others (left by a topic deleted
    /// while the daemon was down, or by another metadata log) are renamed `...-stray` and kept,
    /// as Kafka keeps stray logs; missing ones are created.
    pub fn open(
        settings: LogSettings,
        topics: &TopicsImage,
        now_ms: i64,
    ) -> Result<Partitions, StorageError> {
        let partitions = Partitions::new(settings);
        let found = dirs::find_logs(&partitions.settings.log_dirs)?;
        let mut logs = HashMap::new();
        for f in found {
            match partitions.belongs(&f, topics) {
                Some((topic_id, leader_epoch, config)) => {
                    let log = Log::open(
                        format!("{}-{}", f.topic, f.partition),
                        &f.dir,
                        config,
                        now_ms,
                        partitions.settings.producer_id_expiration_ms,
                    )?;
                    logs.insert(
                        (topic_id, f.partition),
                        Arc::new(partition(
                            &f.topic,
                            topic_id,
                            f.partition,
                            leader_epoch,
                            log,
                        )),
                    );
                }
                None => {
                    // Kafka marks such a log as stray and keeps it: the metadata log may be the
                    // one that is wrong (a mistyped metadata.log.dir), and data is not ours to lose.
                    let stray = stray_name(&f.dir);
                    warn!(dir = %f.dir.display(), moved_to = %stray.display(), "a partition directory belongs to no topic of the catalog; kept aside as stray");
                    std::fs::rename(&f.dir, &stray).map_err(|e| StorageError::Io {
                        path: f.dir.display().to_string(),
                        source: e,
                    })?;
                }
            }
        }
        *partitions.write() = logs;
        partitions.sync(topics, now_ms);
        Ok(partitions)
    }

    /// The topic id, leader epoch and settings of the catalog partition a found log holds.
    fn belongs(&self, f: &FoundLog, topics: &TopicsImage) -> Option<(Uuid, i32, LogConfig)> {
        let topic = topics.get(&f.topic)?;
        let p = topic.partitions.get(&f.partition)?;
        let id = kcoord_wire::kafka_uuid(&topic.id);
        if f.topic_id.as_deref() != Some(id.as_str()) {
            return None;
        }
        let config = self.log_config(&topic.configs).ok()?;
        Some((topic.id, p.leader_epoch, config))
    }

    /// A topic's settings: the broker defaults (the config file's, overridden by the dynamic
    /// broker configs) overridden by its configs.
    pub fn log_config(
        &self,
        configs: &std::collections::BTreeMap<String, String>,
    ) -> Result<LogConfig, kcoord_storage::log_config::InvalidConfig> {
        self.defaults().with_topic_configs(configs)
    }

    /// The settings of a topic without configs of its own.
    pub fn defaults(&self) -> LogConfig {
        let dynamic = self.dynamic.read().unwrap_or_else(PoisonError::into_inner);
        self.settings.defaults.with_broker_configs(&dynamic)
    }

    /// Takes the dynamic broker configs in effect on this node; the next [`Partitions::sync`]
    /// applies them to every log. Whether they changed.
    pub fn set_broker_configs(&self, configs: std::collections::BTreeMap<String, String>) -> bool {
        let mut dynamic = self.dynamic.write().unwrap_or_else(PoisonError::into_inner);
        let changed = *dynamic != configs;
        *dynamic = configs;
        changed
    }

    pub fn settings(&self) -> &LogSettings {
        &self.settings
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<(Uuid, i32), Arc<Partition>>> {
        self.logs.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<(Uuid, i32), Arc<Partition>>> {
        self.logs.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, topic_id: Uuid, partition: i32) -> Option<Arc<Partition>> {
        self.read().get(&(topic_id, partition)).cloned()
    }

    /// The partition of topic `topic` (by name) with index `partition`.
    pub fn by_name(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.read()
            .values()
            .find(|p| p.index == partition && p.topic == topic)
            .cloned()
    }

    pub fn all(&self) -> Vec<Arc<Partition>> {
        self.read().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// Brings the logs in line with the catalog: a log for every partition (created empty),
    /// none for a deleted topic (its files are removed), and each topic's configs applied.
    /// A log that cannot be created is logged and retried at the next change; produce to it
    /// answers as for an unknown partition meanwhile.
    pub fn sync(&self, topics: &TopicsImage, now_ms: i64) {
        let mut logs = self.write();
        let wanted: std::collections::HashSet<(Uuid, i32)> = topics
            .iter()
            .flat_map(|t| t.partitions.keys().map(move |p| (t.id, *p)))
            .collect();
        let removed: Vec<(Uuid, i32)> = logs
            .keys()
            .filter(|k| !wanted.contains(k))
            .copied()
            .collect();
        for key in removed {
            if let Some(p) = logs.remove(&key) {
                // Fetches still holding it finish on their copy; the files go now, with no
                // seal of a rolled segment left to write into the directory.
                let dir = {
                    let mut log = p.log();
                    log.abandon_seals();
                    log.dir().map(PathBuf::from)
                };
                if let Some(dir) = dir {
                    if let Err(e) = std::fs::remove_dir_all(&dir) {
                        warn!(dir = %dir.display(), error = %e, "could not delete the log of a deleted topic");
                    }
                }
                info!(topic = %p.topic, partition = p.index, "deleted partition log");
                p.appended.notify_waiters();
            }
        }
        let mut per_dir = self.partitions_per_dir(&logs);
        for topic in topics.iter() {
            let config = match self.log_config(&topic.configs) {
                Ok(c) => c,
                Err(e) => {
                    // CreateTopics validated them; a config from an older log may not.
                    warn!(topic = %topic.name, error = %e, "topic config ignored");
                    self.defaults()
                }
            };
            for (index, p) in &topic.partitions {
                if let Some(existing) = logs.get(&(topic.id, *index)) {
                    let mut log = existing.log();
                    if *log.config() != config {
                        log.set_config(config.clone());
                    }
                    continue;
                }
                match self.create_log(
                    &topic.name,
                    topic.id,
                    *index,
                    config.clone(),
                    &mut per_dir,
                    now_ms,
                ) {
                    Ok(log) => {
                        logs.insert(
                            (topic.id, *index),
                            Arc::new(partition(
                                &topic.name,
                                topic.id,
                                *index,
                                p.leader_epoch,
                                log,
                            )),
                        );
                    }
                    Err(e) => {
                        error!(topic = %topic.name, partition = index, error = %e, "could not create the partition log")
                    }
                }
            }
        }
    }

    fn partitions_per_dir(&self, logs: &HashMap<(Uuid, i32), Arc<Partition>>) -> Vec<usize> {
        let mut counts = vec![0; self.settings.log_dirs.len()];
        for p in logs.values() {
            if let Some(dir) = p.log().dir() {
                if let Some(i) = self
                    .settings
                    .log_dirs
                    .iter()
                    .position(|root| dir.starts_with(root))
                {
                    counts[i] += 1;
                }
            }
        }
        counts
    }

    fn create_log(
        &self,
        topic: &str,
        topic_id: Uuid,
        index: i32,
        config: LogConfig,
        per_dir: &mut [usize],
        now_ms: i64,
    ) -> Result<Log, StorageError> {
        let name = format!("{topic}-{index}");
        if self.settings.in_memory() {
            return Ok(Log::in_memory(name, config, now_ms));
        }
        let dir = dirs::create_log_dir(
            &self.settings.log_dirs,
            per_dir,
            topic,
            index,
            &kcoord_wire::kafka_uuid(&topic_id),
        )?;
        if let Some(i) = self
            .settings
            .log_dirs
            .iter()
            .position(|root| dir.starts_with(root))
        {
            per_dir[i] += 1;
        }
        Log::open(
            name,
            &dir,
            config,
            now_ms,
            self.settings.producer_id_expiration_ms,
        )
    }

    /// Flushes every log (at shutdown).
    pub fn flush_all(&self) {
        for p in self.all() {
            if let Err(e) = p.log().flush() {
                error!(topic = %p.topic, partition = p.index, error = %e, "flush failed");
            }
        }
    }
}

/// Kafka's name for a stray log: `<topic>-<partition>.<unique id>-stray`, beside it.
fn stray_name(dir: &std::path::Path) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.with_file_name(format!("{name}.{}-stray", Uuid::new_v4().simple()))
}

fn partition(topic: &str, topic_id: Uuid, index: i32, leader_epoch: i32, log: Log) -> Partition {
    Partition {
        topic: topic.to_owned(),
        topic_id,
        index,
        leader_epoch,
        log: Mutex::new(log),
        appended: Notify::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_of_unknown_topics_are_kept_aside_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let settings = LogSettings {
            log_dirs: vec![dir.path().to_path_buf()],
            ..LogSettings::default()
        };
        let ghost = dirs::create_log_dir(
            &settings.log_dirs,
            &[0],
            "ghost",
            0,
            "AAAAAAAAAAAAAAAAAAAAAQ",
        )
        .unwrap();
        std::fs::write(ghost.join("00000000000000000000.log"), b"data").unwrap();
        let partitions = Partitions::open(settings, &TopicsImage::default(), 0).unwrap();
        assert!(partitions.is_empty());
        assert!(!ghost.exists());
        let strays: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(strays.len(), 1);
        let name = strays[0]
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with("ghost-0.") && name.ends_with("-stray"),
            "{name}"
        );
        assert_eq!(
            std::fs::read(strays[0].join("00000000000000000000.log")).unwrap(),
            b"data"
        );
    }
}
