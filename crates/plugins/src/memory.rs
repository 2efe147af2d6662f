//! `memory`: the reference plugin. Keeps the latest description of each group in memory and
//! follows every one of the specification's Plugin Implementation Guidelines:
//!
//! - `requires_topology_push` is synchronous and touches one map entry under a short lock (O(1));
//! - descriptions of groups not heard from for `ttl.ms`, and of superseded ids, are dropped;
//!   every `requires_topology_push` call is a keep-alive for its group;
//! - descriptions larger than `max.bytes` (encoded size) are refused with `TooLarge`, and that id
//!   is never asked for again;
//! - one request per id while a push is in flight (until `inflight.timeout.ms`);
//! - exponential back-off with jitter after transient failures (a push that never arrived);
//! - permanent disable for an id after `TooLarge` or `InvalidRequest`;
//! - no further requests once the current id is stored;
//! - concurrent `set_topology` calls for the same (group, id) are idempotent.
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use kcoord_plugin_api::{
    PluginConfigs, PluginError, RequestContext, StreamsGroupTopologyDescription, StreamsGroupTopologyDescriptionPlugin, Uuid,
};

use crate::clock::{Clock, SystemClock};
use crate::gate::{Backoff, PushState};

/// Prefix of this plugin's configuration keys.
pub const PREFIX: &str = "group.streams.topology.description.memory.";

#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPluginConfig {
    /// A group not heard from for this long is forgotten.
    pub ttl_ms: u64,
    /// The largest description stored, in encoded bytes.
    pub max_bytes: usize,
    pub backoff: Backoff,
}

impl Default for MemoryPluginConfig {
    fn default() -> Self {
        MemoryPluginConfig {
            ttl_ms: 24 * 60 * 60 * 1000,
            max_bytes: 4 * 1024 * 1024,
            // Kafka 4.4's broker-side back-off: 30 s doubling to 1 h, ±20%.
            backoff: Backoff { base_ms: 30_000, max_ms: 3_600_000, jitter: 0.2, in_flight_timeout_ms: 60_000 },
        }
    }
}

impl MemoryPluginConfig {
    /// Reads `group.streams.topology.description.memory.*`; absent keys keep their defaults.
    pub fn from_configs(configs: &PluginConfigs) -> Result<Self, PluginError> {
        let mut c = MemoryPluginConfig::default();
        let get = |key: &str| configs.get(&format!("{PREFIX}{key}"));
        let number = |key: &str, v: &String| {
            v.trim().parse::<u64>().map_err(|_| PluginError::InvalidRequest(format!("{PREFIX}{key}: expected a non-negative integer, got {v:?}")))
        };
        if let Some(v) = get("ttl.ms") {
            c.ttl_ms = number("ttl.ms", v)?.max(1);
        }
        if let Some(v) = get("max.bytes") {
            c.max_bytes = number("max.bytes", v)? as usize;
        }
        if let Some(v) = get("backoff.base.ms") {
            c.backoff.base_ms = number("backoff.base.ms", v)?;
        }
        if let Some(v) = get("backoff.max.ms") {
            c.backoff.max_ms = number("backoff.max.ms", v)?;
        }
        if let Some(v) = get("inflight.timeout.ms") {
            c.backoff.in_flight_timeout_ms = number("inflight.timeout.ms", v)?;
        }
        if let Some(v) = get("backoff.jitter") {
            let j = v.trim().parse::<f64>().ok().filter(|j| (0.0..=1.0).contains(j));
            c.backoff.jitter = j.ok_or_else(|| PluginError::InvalidRequest(format!("{PREFIX}backoff.jitter: expected a number in [0, 1], got {v:?}")))?;
        }
        if c.backoff.max_ms < c.backoff.base_ms {
            return Err(PluginError::InvalidRequest(format!("{PREFIX}backoff.max.ms must be at least {PREFIX}backoff.base.ms")));
        }
        Ok(c)
    }
}

#[derive(Debug)]
struct Stored {
    id: Uuid,
    description: Arc<StreamsGroupTopologyDescription>,
}

#[derive(Debug)]
struct GroupEntry {
    /// The latest id the coordinator asked about; `state` is about this id.
    current_id: Uuid,
    state: PushState,
    stored: Option<Stored>,
    last_seen: u64,
}

impl GroupEntry {
    fn new(id: Uuid, now: u64) -> Self {
        GroupEntry { current_id: id, state: PushState::Idle, stored: None, last_seen: now }
    }

    /// A new id supersedes the old one: what was stored for the old id is dropped.
    fn move_to(&mut self, id: Uuid) {
        if self.current_id != id {
            self.current_id = id;
            self.state = PushState::Idle;
            if self.stored.as_ref().is_some_and(|s| s.id != id) {
                self.stored = None;
            }
        }
    }
}

#[derive(Debug)]
pub struct MemoryPlugin {
    config: MemoryPluginConfig,
    clock: Arc<dyn Clock>,
    groups: Mutex<HashMap<String, GroupEntry>>,
    last_sweep: AtomicU64,
    /// Entries looked at by `requires_topology_push`, to prove it stays O(1) in tests.
    entries_visited: AtomicU64,
}

impl Default for MemoryPlugin {
    fn default() -> Self {
        MemoryPlugin::with_clock(MemoryPluginConfig::default(), Arc::new(SystemClock))
    }
}

impl MemoryPlugin {
    pub fn with_clock(config: MemoryPluginConfig, clock: Arc<dyn Clock>) -> Self {
        MemoryPlugin {
            config,
            clock,
            groups: Mutex::new(HashMap::new()),
            last_sweep: AtomicU64::new(0),
            entries_visited: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &MemoryPluginConfig {
        &self.config
    }

    /// A poisoned lock only means another caller panicked mid-update of plain data; the map
    /// is still usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, GroupEntry>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn expired(&self, entry: &GroupEntry, now: u64) -> bool {
        now.saturating_sub(entry.last_seen) >= self.config.ttl_ms
    }

    /// Drops expired groups; runs from the async operations at most every quarter TTL, never
    /// on the heartbeat path.
    fn maybe_sweep(&self, groups: &mut HashMap<String, GroupEntry>, now: u64) {
        let interval = (self.config.ttl_ms / 4).max(1);
        let last = self.last_sweep.load(Ordering::Relaxed);
        if now.saturating_sub(last) < interval {
            return;
        }
        self.last_sweep.store(now, Ordering::Relaxed);
        groups.retain(|_, e| now.saturating_sub(e.last_seen) < self.config.ttl_ms);
    }

    /// Number of groups held (expired ones included until the next sweep).
    pub fn group_count(&self) -> usize {
        self.lock().len()
    }

    pub fn entries_visited(&self) -> u64 {
        self.entries_visited.load(Ordering::Relaxed)
    }

    /// Records a transient failure for the current id (for storage backends built on this one).
    pub fn transient_failure(&self, group_id: &str) {
        let now = self.clock.now_ms();
        if let Some(e) = self.lock().get_mut(group_id) {
            e.state.transient_failure(now, &self.config.backoff, rand::random::<f64>());
        }
    }

    fn validate(description: &StreamsGroupTopologyDescription) -> Result<(), PluginError> {
        let mut ids = HashSet::new();
        for s in &description.subtopologies {
            if !ids.insert(s.id.as_str()) {
                return Err(PluginError::InvalidRequest(format!("sub-topology {} appears twice", s.id)));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for MemoryPlugin {
    fn configure(&mut self, configs: &PluginConfigs) -> Result<(), PluginError> {
        self.config = MemoryPluginConfig::from_configs(configs)?;
        Ok(())
    }

    fn requires_topology_push(&self, _ctx: &RequestContext, group_id: &str, id: Uuid) -> bool {
        let now = self.clock.now_ms();
        let unit = rand::random::<f64>();
        let mut groups = self.lock();
        self.entries_visited.fetch_add(1, Ordering::Relaxed);
        let entry = groups.entry(group_id.to_string()).or_insert_with(|| GroupEntry::new(id, now));
        if self.expired(entry, now) {
            *entry = GroupEntry::new(id, now);
        }
        entry.last_seen = now;
        entry.move_to(id);
        entry.state.should_request(now, &self.config.backoff, unit)
    }

    async fn set_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        let size = description.encoded_size();
        let valid = Self::validate(&description);
        let now = self.clock.now_ms();
        let mut groups = self.lock();
        self.maybe_sweep(&mut groups, now);
        let entry = groups.entry(group_id.to_string()).or_insert_with(|| GroupEntry::new(id, now));
        // The coordinator asks about the new id before any member can push under it, so a push
        // for another id is for a superseded topology: nothing to store.
        if entry.current_id != id || entry.stored.as_ref().is_some_and(|s| s.id == id) {
            return Ok(());
        }
        entry.last_seen = now;
        if size > self.config.max_bytes {
            entry.state = PushState::Disabled;
            return Err(PluginError::TooLarge(format!(
                "the description is {size} bytes, more than the {} bytes this plugin stores",
                self.config.max_bytes
            )));
        }
        if let Err(e) = valid {
            entry.state = PushState::Disabled;
            return Err(e);
        }
        entry.stored = Some(Stored { id, description: Arc::new(description) });
        entry.state = PushState::Stored;
        Ok(())
    }

    async fn delete_topology(&self, _ctx: &RequestContext, group_id: &str) -> Result<(), PluginError> {
        self.lock().remove(group_id);
        Ok(())
    }

    async fn get_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        let now = self.clock.now_ms();
        let mut groups = self.lock();
        self.maybe_sweep(&mut groups, now);
        let Some(entry) = groups.get(group_id) else { return Ok(None) };
        if self.expired(entry, now) {
            groups.remove(group_id);
            return Ok(None);
        }
        Ok(entry.stored.as_ref().filter(|s| s.id == id).map(|s| (*s.description).clone()))
    }
}

#[cfg(test)]
mod tests;
