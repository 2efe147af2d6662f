//! `memory`: the reference plugin. Keeps the latest description of each group in memory and
//! follows every one of the specification's Plugin Implementation Guidelines:
//!
//! - `requires_topology_push` is synchronous and touches one map entry under a short lock (O(1));
//!   in the steady state (the description stored, the answer "no") it allocates nothing, draws
//!   no random number, and two callers asking about different groups rarely share a lock;
//! - descriptions of groups not heard from for `ttl.ms`, and of superseded ids, are dropped;
//!   every `requires_topology_push` call is a keep-alive for its group;
//! - descriptions larger than `max.bytes` (encoded size) are refused with `TooLarge`, and that id
//!   is never asked for again;
//! - one request per id while a push is in flight (until `inflight.timeout.ms`);
//! - exponential back-off with jitter after transient failures (a push that never arrived);
//! - permanent disable for an id after `TooLarge` or `InvalidRequest`;
//! - no further requests once the current id is stored;
//! - concurrent `set_topology` calls for the same (group, id) are idempotent.
use std::collections::HashSet;
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

/// Groups are spread over this many independently locked maps, so the daemon's workers,
/// each asking about the group it just heartbeated, seldom wait for one another.
const SHARDS: usize = 64;
// `shard` picks one by the hash's top bits.
const _: () = assert!(SHARDS.is_power_of_two());

#[derive(Debug, Default)]
struct ShardMap {
    /// hashbrown's map (foldhash, seeded per map): the lookup is on every heartbeat, and
    /// SipHash of the group id was a fifth of this plugin's cost there.
    groups: hashbrown::HashMap<Box<str>, GroupEntry>,
    /// Entries looked at by `requires_topology_push`, to prove it stays O(1) in tests. Counted
    /// under the shard's lock: one counter for all callers would be a cache line every
    /// heartbeat writes.
    visited: u64,
}

/// Aligned so that two shards never share a cache line (128: x86 prefetches line pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(Mutex<ShardMap>);

#[derive(Debug)]
pub struct MemoryPlugin {
    config: MemoryPluginConfig,
    clock: Arc<dyn Clock>,
    shards: Box<[Shard]>,
    /// Per-instance, so which groups share a shard cannot be chosen from outside.
    shard_seed: u64,
    last_sweep: AtomicU64,
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
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            shard_seed: rand::random(),
            last_sweep: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &MemoryPluginConfig {
        &self.config
    }

    /// A poisoned lock only means another caller panicked mid-update of plain data; the map
    /// is still usable.
    fn lock(shard: &Shard) -> MutexGuard<'_, ShardMap> {
        shard.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The shard holding `group_id`. A multiplicative (FxHash-style) hash: it runs on every
    /// heartbeat, and only spreads groups over shards — each shard's map hashes again with its
    /// own randomly seeded hasher, so colliding group ids cost one shard's parallelism, never
    /// its lookups.
    fn shard(&self, group_id: &str) -> MutexGuard<'_, ShardMap> {
        let mut h = self.shard_seed;
        for chunk in group_id.as_bytes().chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        // The top bits: the multiplication mixes every input bit into them.
        let index = (h >> (64 - SHARDS.trailing_zeros())) as usize;
        Self::lock(&self.shards[index % SHARDS])
    }

    fn expired(&self, entry: &GroupEntry, now: u64) -> bool {
        now.saturating_sub(entry.last_seen) >= self.config.ttl_ms
    }

    /// Drops expired groups; runs from the async operations at most every quarter TTL, never
    /// on the heartbeat path. Shards are swept one at a time, so heartbeats wait at most for
    /// one shard's sweep.
    fn maybe_sweep(&self, now: u64) {
        let interval = (self.config.ttl_ms / 4).max(1);
        let last = self.last_sweep.load(Ordering::Relaxed);
        if now.saturating_sub(last) < interval {
            return;
        }
        self.last_sweep.store(now, Ordering::Relaxed);
        for shard in self.shards.iter() {
            Self::lock(shard).groups.retain(|_, e| now.saturating_sub(e.last_seen) < self.config.ttl_ms);
        }
    }

    /// Number of groups held (expired ones included until the next sweep).
    pub fn group_count(&self) -> usize {
        self.shards.iter().map(|s| Self::lock(s).groups.len()).sum()
    }

    pub fn entries_visited(&self) -> u64 {
        self.shards.iter().map(|s| Self::lock(s).visited).sum()
    }

    /// Records a transient failure for the current id (for storage backends built on this one).
    pub fn transient_failure(&self, group_id: &str) {
        let now = self.clock.now_ms();
        if let Some(e) = self.shard(group_id).groups.get_mut(group_id) {
            e.state.transient_failure(now, &self.config.backoff, rand::random::<f64>());
        }
    }

    /// One call's keep-alive and decision, on the group's entry (found or just inserted).
    fn heartbeat(&self, entry: &mut GroupEntry, id: Uuid, now: u64) -> bool {
        if self.expired(entry, now) {
            *entry = GroupEntry::new(id, now);
        }
        entry.last_seen = now;
        entry.move_to(id);
        entry.state.should_request_with(now, &self.config.backoff, rand::random::<f64>)
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
        // Read on every call: each one is the group's keep-alive against the TTL.
        let now = self.clock.now_ms();
        let mut shard = self.shard(group_id);
        shard.visited += 1;
        // Looked up by `&str` first: the key is allocated only for a group seen the first time.
        match shard.groups.get_mut(group_id) {
            Some(entry) => self.heartbeat(entry, id, now),
            None => {
                let entry = shard.groups.entry(group_id.into()).or_insert_with(|| GroupEntry::new(id, now));
                self.heartbeat(entry, id, now)
            }
        }
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
        self.maybe_sweep(now);
        let mut shard = self.shard(group_id);
        let entry = shard.groups.entry(group_id.into()).or_insert_with(|| GroupEntry::new(id, now));
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
        self.shard(group_id).groups.remove(group_id);
        Ok(())
    }

    async fn get_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        let now = self.clock.now_ms();
        self.maybe_sweep(now);
        let mut shard = self.shard(group_id);
        let groups = &mut shard.groups;
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
