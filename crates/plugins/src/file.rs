//! `file`: a durable plugin. It keeps each group's descriptions, the current one and up to
//! `history.count - 1` before it, as files in `dir`, and finds them again after a restart or a
//! crash, so the coordinator's versions of a group (its TopologyDescriptionIds) can be read
//! back and compared after kcoord restarts.
//!
//! When to ask for a push is decided by a [`MemoryPlugin`] inside, so every guideline of the
//! specification holds as it does there: `requires_topology_push` is O(1), lock-free in the
//! steady state and never touches the disk; TTL expiry; `max.bytes` (TooLarge, never asked
//! again); one request in flight; back-off with jitter; no second request for a stored id.
//! This plugin adds:
//!
//! - crash-safe writes (temporary file, fsync, rename, fsync of the directory); a file that is
//!   torn, corrupt or of another format is skipped at start-up with one WARN for all of them;
//! - `max.total.bytes` counts the files' bytes: a push that would pass it first makes room by
//!   removing the oldest superseded versions (of any group), and is refused as a transient
//!   failure (asked again after the back-off) if that is not enough; a failed write (a full
//!   disk) is a transient failure too;
//! - a group forgotten by the TTL (not heard from for `ttl.ms`) or deleted loses its files. A
//!   restart counts as hearing from every group on disk, so a group whose application is gone
//!   goes `ttl.ms` after the restart.
mod disk;
mod format;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use kcoord_plugin_api::{
    PluginConfigs, PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};

use crate::clock::{Clock, SystemClock};
use crate::memory::{MemoryPlugin, MemoryPluginConfig};
pub use disk::DiskError;

/// Prefix of this plugin's configuration keys.
pub const PREFIX: &str = "group.streams.topology.description.file.";

/// Default of `history.count`: a group's last eight deployments.
pub const DEFAULT_HISTORY_COUNT: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct FilePluginConfig {
    /// `ttl.ms`, `max.bytes`, `max.total.bytes` and the back-off, read as the `memory` plugin
    /// reads them (under this plugin's prefix).
    pub limits: MemoryPluginConfig,
    pub dir: PathBuf,
    /// Descriptions kept per group, the current one included; the oldest goes first.
    pub history_count: usize,
}

impl FilePluginConfig {
    pub fn from_configs(configs: &PluginConfigs) -> Result<Self, PluginError> {
        let limits = MemoryPluginConfig::from_prefixed(configs, PREFIX)?;
        let dir = configs
            .get(&format!("{PREFIX}dir"))
            .map(|d| d.trim())
            .filter(|d| !d.is_empty())
            .ok_or_else(|| {
                PluginError::InvalidRequest(format!("{PREFIX}dir is required by the file plugin"))
            })?;
        let history_count = match configs.get(&format!("{PREFIX}history.count")) {
            None => DEFAULT_HISTORY_COUNT,
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    PluginError::InvalidRequest(format!(
                        "{PREFIX}history.count: expected a positive integer, got {v:?}"
                    ))
                })?,
        };
        Ok(FilePluginConfig {
            limits,
            dir: PathBuf::from(dir),
            history_count,
        })
    }
}

/// One description on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    id: Uuid,
    stored_ms: u64,
    bytes: usize,
}

/// What is on disk, per group oldest first, and the bytes of all of it.
#[derive(Debug, Default)]
struct Index {
    groups: HashMap<String, Vec<Version>>,
    bytes: usize,
}

impl Index {
    fn add(&mut self, group_id: &str, version: Version) {
        self.bytes += version.bytes;
        let versions = self.groups.entry(group_id.to_owned()).or_default();
        versions.push(version);
        versions.sort_by_key(|v| v.stored_ms);
    }

    fn holds(&self, group_id: &str, id: Uuid) -> bool {
        self.groups
            .get(group_id)
            .is_some_and(|vs| vs.iter().any(|v| v.id == id))
    }

    fn remove(&mut self, group_id: &str, id: Uuid) {
        if let Some(versions) = self.groups.get_mut(group_id) {
            versions.retain(|v| {
                v.id != id || {
                    self.bytes -= v.bytes;
                    false
                }
            });
            if versions.is_empty() {
                self.groups.remove(group_id);
            }
        }
    }

    /// What to remove so that `incoming` more bytes for `group_id` fit `history_count` and
    /// `max_bytes`: the group's oldest past its count, then the oldest superseded version of
    /// any group; and whether that is enough (if not, it is every superseded version).
    fn make_room(
        &self,
        group_id: &str,
        incoming: usize,
        history_count: usize,
        max_bytes: usize,
    ) -> (Vec<(String, Uuid)>, bool) {
        let own = self.groups.get(group_id).map_or(&[][..], Vec::as_slice);
        let surplus = (own.len() + 1).saturating_sub(history_count);
        let mut evict: Vec<(String, Uuid)> = own[..surplus]
            .iter()
            .map(|v| (group_id.to_owned(), v.id))
            .collect();
        let mut bytes = self.bytes - own[..surplus].iter().map(|v| v.bytes).sum::<usize>();
        let mut superseded: Vec<(&String, &Version)> = self
            .groups
            .iter()
            .flat_map(|(g, vs)| {
                // A group's latest stays, but for the group being written it is superseded.
                let keep = usize::from(g != group_id);
                vs[..vs.len() - keep].iter().map(move |v| (g, v))
            })
            .filter(|(g, v)| !(*g == group_id && own[..surplus].contains(v)))
            .collect();
        superseded.sort_by_key(|(_, v)| v.stored_ms);
        let mut candidates = superseded.into_iter();
        while bytes + incoming > max_bytes {
            let Some((g, v)) = candidates.next() else {
                return (evict, false);
            };
            bytes -= v.bytes;
            evict.push((g.clone(), v.id));
        }
        (evict, true)
    }
}

#[derive(Debug)]
pub struct FilePlugin {
    config: FilePluginConfig,
    clock: Arc<dyn Clock>,
    /// Decides when to ask for pushes and keeps the current descriptions in memory.
    gate: MemoryPlugin,
    /// Held while the disk changes, so identical concurrent pushes write once.
    index: Mutex<Index>,
    last_sweep: AtomicU64,
}

impl FilePlugin {
    /// A plugin on `config.dir`, with what an earlier one left there.
    pub fn open(config: FilePluginConfig, clock: Arc<dyn Clock>) -> Result<Self, PluginError> {
        let plugin = FilePlugin {
            gate: MemoryPlugin::with_clock(config.limits.clone(), Arc::clone(&clock)),
            config,
            clock,
            index: Mutex::new(Index::default()),
            last_sweep: AtomicU64::new(0),
        };
        plugin.load()?;
        Ok(plugin)
    }

    pub fn config(&self) -> &FilePluginConfig {
        &self.config
    }

    /// Bytes of the files kept (what `max.total.bytes` bounds).
    pub fn stored_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The ids kept for a group, oldest first.
    pub fn versions(&self, group_id: &str) -> Vec<Uuid> {
        self.lock()
            .groups
            .get(group_id)
            .map(|vs| vs.iter().map(|v| v.id).collect())
            .unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn load(&self) -> Result<(), PluginError> {
        let dir = &self.config.dir;
        let (found, skipped) = disk::scan(dir).map_err(other)?;
        if let Some(first) = skipped.first() {
            tracing::warn!(
                dir = %dir.display(), skipped = skipped.len(), first = %first,
                "file plugin: files that are not stored topology descriptions were skipped (torn or corrupt); their groups will be asked to push again"
            );
        }
        let mut index = self.lock();
        for f in found {
            let version = Version {
                id: f.id,
                stored_ms: f.stored_ms,
                bytes: f.bytes,
            };
            index.add(&f.group_id, version);
        }
        // A smaller `history.count` or `max.total.bytes` than the last run's applies now.
        let groups: Vec<String> = index.groups.keys().cloned().collect();
        for group_id in &groups {
            let history = self.config.history_count;
            let (mut evict, _) = index.make_room(group_id, 0, history + 1, usize::MAX);
            evict.retain(|(g, _)| g == group_id);
            self.evict(&mut index, evict);
        }
        // As far as superseded versions go: a group's latest is never removed at load.
        let (evict, _) = index.make_room("", 0, usize::MAX, self.config.limits.max_total_bytes);
        self.evict(&mut index, evict);
        for (group_id, versions) in &index.groups {
            if let Some(latest) = versions.last() {
                self.gate.restore(group_id, latest.id);
            }
        }
        Ok(())
    }

    /// Removes `versions` from disk and index; a file that cannot be removed is logged and
    /// forgotten (it comes back at the next start, which applies the limits again).
    fn evict(&self, index: &mut Index, versions: Vec<(String, Uuid)>) {
        for (group_id, id) in versions {
            index.remove(&group_id, id);
            if let Err(e) = disk::remove(&self.config.dir, &group_id, id) {
                tracing::warn!(group = %group_id, topology_description_id = %id, error = %e, "file plugin: could not remove a description");
            }
        }
    }

    /// Removes the files of groups the TTL has forgotten; at most every quarter TTL, from the
    /// async operations only.
    fn maybe_sweep(&self) {
        let now = self.clock.now_ms();
        let interval = (self.config.limits.ttl_ms / 4).max(1);
        if now.saturating_sub(self.last_sweep.load(Ordering::Relaxed)) < interval {
            return;
        }
        self.last_sweep.store(now, Ordering::Relaxed);
        let mut index = self.lock();
        let expired: Vec<(String, Uuid)> = index
            .groups
            .iter()
            .filter(|(g, _)| self.gate.last_heard(g).is_none())
            .flat_map(|(g, vs)| vs.iter().map(|v| (g.clone(), v.id)))
            .collect();
        self.evict(&mut index, expired);
    }

    /// Writes a description the gate just took, unless it is on disk already.
    fn persist(
        &self,
        group_id: &str,
        id: Uuid,
        description: &StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        let mut index = self.lock();
        if index.holds(group_id, id) {
            return Ok(());
        }
        let now = self.clock.now_ms();
        let bytes = disk::encode(group_id, id, now, description)
            .map_err(|e| PluginError::Other(format!("cannot encode the description: {e}")))?;
        let (history, max) = (
            self.config.history_count,
            self.config.limits.max_total_bytes,
        );
        let (evict, fits) = index.make_room(group_id, bytes.len(), history, max);
        if !fits {
            return Err(PluginError::Other(format!(
                "the description takes {} bytes on disk and the stored ones already hold {} of the {max} bytes this plugin stores in all",
                bytes.len(),
                index.bytes
            )));
        }
        disk::write(&self.config.dir, group_id, id, &bytes).map_err(other)?;
        self.evict(&mut index, evict);
        index.add(
            group_id,
            Version {
                id,
                stored_ms: now,
                bytes: bytes.len(),
            },
        );
        Ok(())
    }
}

fn other(e: DiskError) -> PluginError {
    PluginError::Other(e.to_string())
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for FilePlugin {
    fn configure(&mut self, configs: &PluginConfigs) -> Result<(), PluginError> {
        *self = FilePlugin::open(
            FilePluginConfig::from_configs(configs)?,
            Arc::clone(&self.clock),
        )?;
        Ok(())
    }

    fn requires_topology_push(&self, ctx: &RequestContext, group_id: &str, id: Uuid) -> bool {
        self.gate.requires_topology_push(ctx, group_id, id)
    }

    async fn set_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.maybe_sweep();
        let kept = description.clone();
        self.gate
            .set_topology(ctx, group_id, id, description)
            .await?;
        if !self.gate.holds(group_id, id) {
            return Ok(());
        }
        self.persist(group_id, id, &kept).inspect_err(|_| {
            self.gate.transient_failure(group_id);
        })
    }

    async fn delete_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
    ) -> Result<(), PluginError> {
        self.gate.delete_topology(ctx, group_id).await?;
        let mut index = self.lock();
        let ids: Vec<Uuid> = index
            .groups
            .get(group_id)
            .map(|vs| vs.iter().map(|v| v.id).collect())
            .unwrap_or_default();
        for id in ids {
            disk::remove(&self.config.dir, group_id, id).map_err(other)?;
            index.remove(group_id, id);
        }
        Ok(())
    }

    async fn get_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.maybe_sweep();
        if let Some(current) = self.gate.get_topology(ctx, group_id, id).await? {
            return Ok(Some(current));
        }
        if !self.lock().holds(group_id, id) || self.gate.last_heard(group_id).is_none() {
            return Ok(None);
        }
        let stored = disk::read(&self.config.dir, group_id, id).map_err(other)?;
        Ok(Some(stored.description.into()))
    }
}

impl Default for FilePlugin {
    /// Unconfigured: no directory until [`configure`](StreamsGroupTopologyDescriptionPlugin::configure).
    fn default() -> Self {
        let config = FilePluginConfig {
            limits: MemoryPluginConfig::default(),
            dir: PathBuf::new(),
            history_count: DEFAULT_HISTORY_COUNT,
        };
        FilePlugin {
            gate: MemoryPlugin::with_clock(config.limits.clone(), Arc::new(SystemClock)),
            config,
            clock: Arc::new(SystemClock),
            index: Mutex::new(Index::default()),
            last_sweep: AtomicU64::new(0),
        }
    }
}
