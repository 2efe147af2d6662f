//! `memory`: the reference plugin. Keeps the latest description of each group in memory and
//! follows every one of the specification's Plugin Implementation Guidelines:
//!
//! - `requires_topology_push` is synchronous and O(1). In the steady state (the current id
//!   stored or refused, the answer "no") it reads a lock-free snapshot of those groups: no lock,
//!   no allocation, no random number, and nothing written that the daemon's threads would pass
//!   back and forth but a keep-alive stamp now and then. Otherwise it updates one map entry
//!   under a short lock; two callers asking about different groups rarely share a lock;
//! - descriptions of groups not heard from for `ttl.ms`, and of superseded ids, are dropped;
//!   every `requires_topology_push` call is a keep-alive for its group, recorded to within
//!   `ttl.ms / 64` (at most a second);
//! - descriptions larger than `max.bytes` (encoded size) are refused with `TooLarge`, and that id
//!   is never asked for again;
//! - all descriptions together hold at most `max.total.bytes` (encoded size): a push that would
//!   pass it is refused as a transient failure (`Other`, which the coordinator answers
//!   TOPOLOGY_DESCRIPTION_UPDATE_FAILED), and its id is asked for again after the back-off, when
//!   expired or deleted groups may have made room;
//! - one request per id while a push is in flight (until `inflight.timeout.ms`);
//! - exponential back-off with jitter after transient failures (a push that never arrived);
//! - permanent disable for an id after `TooLarge` or `InvalidRequest`;
//! - no further requests once the current id is stored;
//! - concurrent `set_topology` calls for the same (group, id) are idempotent.
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use arc_swap::ArcSwap;
use async_trait::async_trait;
use kcoord_plugin_api::{
    PluginConfigs, PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
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
    /// All stored descriptions together, in encoded bytes.
    pub max_total_bytes: usize,
    pub backoff: Backoff,
}

/// Default of `max.total.bytes`: 128 MiB of encoded descriptions, room for 32 descriptions of
/// the largest size, or about 13,000 of a sizeable application's 10 KB.
pub const DEFAULT_MAX_TOTAL_BYTES: usize = 128 * 1024 * 1024;

impl Default for MemoryPluginConfig {
    fn default() -> Self {
        MemoryPluginConfig {
            ttl_ms: 24 * 60 * 60 * 1000,
            max_bytes: 4 * 1024 * 1024,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            // Kafka 4.4's broker-side back-off: 30 s doubling to 1 h, ±20%.
            backoff: Backoff {
                base_ms: 30_000,
                max_ms: 3_600_000,
                jitter: 0.2,
                in_flight_timeout_ms: 60_000,
            },
        }
    }
}

impl MemoryPluginConfig {
    /// Reads `group.streams.topology.description.memory.*`; absent keys keep their defaults.
    pub fn from_configs(configs: &PluginConfigs) -> Result<Self, PluginError> {
        Self::from_prefixed(configs, PREFIX)
    }

    /// The same settings under another plugin's prefix (the `file` plugin shares them).
    pub fn from_prefixed(configs: &PluginConfigs, prefix: &str) -> Result<Self, PluginError> {
        let mut c = MemoryPluginConfig::default();
        let get = |key: &str| configs.get(&format!("{prefix}{key}"));
        let number = |key: &str, v: &String| {
            v.trim().parse::<u64>().map_err(|_| {
                PluginError::InvalidRequest(format!(
                    "{prefix}{key}: expected a non-negative integer, got {v:?}"
                ))
            })
        };
        if let Some(v) = get("ttl.ms") {
            c.ttl_ms = number("ttl.ms", v)?.max(1);
        }
        if let Some(v) = get("max.bytes") {
            c.max_bytes = number("max.bytes", v)? as usize;
        }
        if let Some(v) = get("max.total.bytes") {
            c.max_total_bytes = number("max.total.bytes", v)? as usize;
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
            let j = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|j| (0.0..=1.0).contains(j));
            c.backoff.jitter = j.ok_or_else(|| {
                PluginError::InvalidRequest(format!(
                    "{prefix}backoff.jitter: expected a number in [0, 1], got {v:?}"
                ))
            })?;
        }
        if c.max_total_bytes < c.max_bytes {
            return Err(PluginError::InvalidRequest(format!(
                "{prefix}max.total.bytes ({}) must be at least {prefix}max.bytes ({})",
                c.max_total_bytes, c.max_bytes
            )));
        }
        if c.backoff.max_ms < c.backoff.base_ms {
            return Err(PluginError::InvalidRequest(format!(
                "{prefix}backoff.max.ms must be at least {prefix}backoff.base.ms"
            )));
        }
        Ok(c)
    }
}

#[derive(Debug)]
struct Stored {
    id: Uuid,
    description: Arc<StreamsGroupTopologyDescription>,
    /// Its share of `max.total.bytes`, given back however the description goes (superseded,
    /// expired, deleted, failed).
    _charge: Charge,
}

/// Bytes counted against the plugin's total while this lives.
#[derive(Debug)]
struct Charge {
    bytes: usize,
    total: Arc<AtomicUsize>,
}

impl Charge {
    /// `bytes` more on `total`, unless that would pass `max`.
    fn reserve(total: &Arc<AtomicUsize>, bytes: usize, max: usize) -> Option<Charge> {
        total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&after| after <= max)
            })
            .ok()?;
        Some(Charge {
            bytes,
            total: Arc::clone(total),
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[derive(Debug)]
struct GroupEntry {
    /// The latest id the coordinator asked about; `state` is about this id.
    current_id: Uuid,
    state: PushState,
    stored: Option<Stored>,
    /// When the group was last heard from (ms). While the group is settled, calls answered
    /// without the lock stamp its snapshot entry instead; see [`Shard::last_seen`].
    last_seen: u64,
}

impl GroupEntry {
    fn new(id: Uuid, now: u64) -> Self {
        GroupEntry {
            current_id: id,
            state: PushState::Idle,
            stored: None,
            last_seen: now,
        }
    }

    /// The id that is never asked for again (stored or refused), if the current one is.
    fn settled_id(&self) -> Option<Uuid> {
        matches!(self.state, PushState::Stored | PushState::Disabled).then_some(self.current_id)
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
    /// Keyed by compact strings: a group id of up to 24 bytes is stored in the key, so the
    /// lookup's key comparison reads no other allocation.
    groups: hashbrown::HashMap<compact_str::CompactString, GroupEntry>,
    /// Entries looked at under the lock by `requires_topology_push` (tests prove O(1)).
    #[cfg(test)]
    visited: u64,
}

/// A group whose current id is settled, as the lock-free path sees it.
#[derive(Debug)]
struct SettledGroup {
    hash: u64,
    group_id: compact_str::CompactString,
    id: Uuid,
    /// Keep-alives of the lock-free path (ms), kept here rather than behind a pointer to the
    /// entry: the path then reads one slot and nothing else.
    last_seen: AtomicU64,
}

impl SettledGroup {
    fn last_seen(&self) -> u64 {
        self.last_seen.load(Ordering::Relaxed)
    }

    /// Records `now` once the stamp is `step` old: stamping every call would make this cache
    /// line travel between the threads asking about the group.
    fn touch(&self, now: u64, step: u64) {
        if now.saturating_sub(self.last_seen()) >= step {
            self.last_seen.fetch_max(now, Ordering::Relaxed);
        }
    }
}

/// The settled groups of a shard: an open-addressing table (linear probing, at most half
/// full) rather than a general map, so the lock-free path reads the snapshot's header and then
/// one slot, which holds the key, the id and the keep-alive: two cache misses where a hash map
/// behind the snapshot took four (header, control bytes, bucket, and the last one dependent on
/// the others).
#[derive(Debug, Default)]
struct Settled {
    hasher: hashbrown::DefaultHashBuilder,
    slots: Box<[Option<SettledGroup>]>,
}

impl Settled {
    fn new(groups: Vec<(compact_str::CompactString, Uuid, u64)>) -> Self {
        let hasher = hashbrown::DefaultHashBuilder::default();
        let mut slots: Box<[Option<SettledGroup>]> = (0..(groups.len() * 2).next_power_of_two())
            .map(|_| None)
            .collect();
        let mask = slots.len().wrapping_sub(1);
        for (group_id, id, last_seen) in groups {
            let hash = hasher.hash_one(group_id.as_str());
            let mut at = hash as usize & mask;
            while slots[at].is_some() {
                at = (at + 1) & mask;
            }
            slots[at] = Some(SettledGroup {
                hash,
                group_id,
                id,
                last_seen: AtomicU64::new(last_seen),
            });
        }
        Settled { hasher, slots }
    }

    fn get(&self, group_id: &str) -> Option<&SettledGroup> {
        if self.slots.is_empty() {
            return None;
        }
        let hash = self.hasher.hash_one(group_id);
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        // Never full (at most half), so an empty slot ends every probe.
        while let Some(group) = &self.slots[at] {
            if group.hash == hash && group.group_id == group_id {
                return Some(group);
            }
            at = (at + 1) & mask;
        }
        None
    }

    fn iter(&self) -> impl Iterator<Item = &SettledGroup> {
        self.slots.iter().flatten()
    }
}

/// Aligned so that two shards never share a cache line (128: x86 prefetches line pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    locked: Mutex<ShardMap>,
    /// The groups of `locked` whose current id is settled, replaced (under the lock) whenever
    /// that set changes, which in the steady state it does not.
    settled: ArcSwap<Settled>,
    /// Calls answered from `settled` (tests prove O(1)).
    #[cfg(test)]
    settled_visits: AtomicU64,
}

impl Shard {
    /// A poisoned lock only means another caller panicked mid-update of plain data; the map
    /// is still usable.
    fn lock(&self) -> MutexGuard<'_, ShardMap> {
        self.locked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When the group was last heard from: its entry's stamp or, if later, the one calls
    /// without the lock left in the snapshot. Call it holding the lock.
    fn last_seen(&self, group_id: &str, entry: &GroupEntry) -> u64 {
        let settled = self
            .settled
            .load()
            .get(group_id)
            .map_or(0, SettledGroup::last_seen);
        entry.last_seen.max(settled)
    }

    /// Brings `settled` up to date after `group_id` changed under the lock `map` (a no-op
    /// unless its settled id did change).
    fn republish(&self, map: &mut ShardMap, group_id: &str) {
        let now_settled = map.groups.get(group_id).and_then(GroupEntry::settled_id);
        if self.settled.load().get(group_id).map(|s| s.id) != now_settled {
            self.republish_all(map);
        }
    }

    /// A new snapshot of the settled groups; the old one's keep-alives move into the entries
    /// first, so none is lost.
    fn republish_all(&self, map: &mut ShardMap) {
        self.collect_keepalives(map);
        let settled = map
            .groups
            .iter()
            .filter_map(|(g, e)| Some((g.clone(), e.settled_id()?, e.last_seen)))
            .collect();
        self.settled.store(Arc::new(Settled::new(settled)));
    }

    /// Moves the snapshot's keep-alives into the entries (holding the lock).
    fn collect_keepalives(&self, map: &mut ShardMap) {
        for s in self.settled.load().iter() {
            if let Some(e) = map.groups.get_mut(s.group_id.as_str()) {
                e.last_seen = e.last_seen.max(s.last_seen());
            }
        }
    }
}

#[derive(Debug)]
pub struct MemoryPlugin {
    config: MemoryPluginConfig,
    clock: Arc<dyn Clock>,
    shards: Box<[Shard]>,
    /// Per-instance, so which groups share a shard cannot be chosen from outside.
    shard_seed: u64,
    last_sweep: AtomicU64,
    /// Encoded bytes of every stored description, at most `max_total_bytes`.
    stored_bytes: Arc<AtomicUsize>,
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
            stored_bytes: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub fn config(&self) -> &MemoryPluginConfig {
        &self.config
    }

    /// The shard holding `group_id`. A multiplicative (FxHash-style) hash: it runs on every
    /// heartbeat, and only spreads groups over shards — each shard's map hashes again with its
    /// own randomly seeded hasher, so colliding group ids cost one shard's parallelism, never
    /// its lookups.
    fn shard(&self, group_id: &str) -> &Shard {
        let mut h = self.shard_seed;
        for chunk in group_id.as_bytes().chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        // The top bits: the multiplication mixes every input bit into them.
        let index = (h >> (64 - SHARDS.trailing_zeros())) as usize;
        &self.shards[index % SHARDS]
    }

    fn expired_since(&self, last_seen: u64, now: u64) -> bool {
        now.saturating_sub(last_seen) >= self.config.ttl_ms
    }

    /// How stale a keep-alive stamp may get before a call renews it.
    fn keepalive_step(&self) -> u64 {
        (self.config.ttl_ms / 64).clamp(1, 1000)
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
            let mut map = shard.lock();
            shard.collect_keepalives(&mut map);
            let before = map.groups.len();
            map.groups
                .retain(|_, e| now.saturating_sub(e.last_seen) < self.config.ttl_ms);
            if map.groups.len() != before {
                shard.republish_all(&mut map);
            }
        }
    }

    /// Encoded bytes of all stored descriptions (what `max.total.bytes` bounds).
    pub fn stored_bytes(&self) -> usize {
        self.stored_bytes.load(Ordering::Acquire)
    }

    /// Number of groups held (expired ones included until the next sweep).
    pub fn group_count(&self) -> usize {
        self.shards.iter().map(|s| s.lock().groups.len()).sum()
    }

    #[cfg(test)]
    fn entries_visited(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.lock().visited + s.settled_visits.load(Ordering::Relaxed))
            .sum()
    }

    /// Records a transient failure for the current id (for storage backends built on this one):
    /// the id is asked for again after the back-off, and a description already kept for it is
    /// dropped, since the backend failed to store it; the next push stores it anew.
    pub fn transient_failure(&self, group_id: &str) {
        let now = self.clock.now_ms();
        let shard = self.shard(group_id);
        let mut map = shard.lock();
        if let Some(e) = map.groups.get_mut(group_id) {
            e.state
                .transient_failure(now, &self.config.backoff, rand::random::<f64>());
            if e.stored.as_ref().is_some_and(|s| s.id == e.current_id) {
                e.stored = None;
            }
            shard.republish(&mut map, group_id);
        }
    }

    /// The steady state's answer without the lock: `Some(false)` when the group's current id
    /// is settled and the group alive.
    fn settled_answer(&self, shard: &Shard, group_id: &str, id: Uuid, now: u64) -> Option<bool> {
        let settled = shard.settled.load();
        let group = settled.get(group_id).filter(|g| g.id == id)?;
        if self.expired_since(group.last_seen(), now) {
            return None;
        }
        group.touch(now, self.keepalive_step());
        #[cfg(test)]
        shard.settled_visits.fetch_add(1, Ordering::Relaxed);
        Some(false)
    }

    /// One call's keep-alive and decision, on the group's entry (found or just inserted),
    /// last heard from at `last_seen`.
    fn heartbeat(&self, entry: &mut GroupEntry, last_seen: u64, id: Uuid, now: u64) -> bool {
        if self.expired_since(last_seen, now) {
            *entry = GroupEntry::new(id, now);
        }
        entry.last_seen = now;
        entry.move_to(id);
        entry
            .state
            .should_request_with(now, &self.config.backoff, rand::random::<f64>)
    }

    /// `set_topology` on the group's entry.
    fn store(
        &self,
        entry: &mut GroupEntry,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
        size: usize,
        valid: Result<(), PluginError>,
        now: u64,
    ) -> Result<(), PluginError> {
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
        let max_total = self.config.max_total_bytes;
        let Some(charge) = Charge::reserve(&self.stored_bytes, size, max_total) else {
            // Room may come (groups expire or are deleted): ask again after the back-off.
            entry
                .state
                .transient_failure(now, &self.config.backoff, rand::random::<f64>());
            return Err(PluginError::Other(format!(
                "the description is {size} bytes and the stored ones already hold {} of the {max_total} bytes this plugin stores in all",
                self.stored_bytes()
            )));
        };
        entry.stored = Some(Stored {
            id,
            description: Arc::new(description),
            _charge: charge,
        });
        entry.state = PushState::Stored;
        Ok(())
    }

    fn validate(description: &StreamsGroupTopologyDescription) -> Result<(), PluginError> {
        let mut ids = HashSet::new();
        for s in &description.subtopologies {
            if !ids.insert(s.id.as_str()) {
                return Err(PluginError::InvalidRequest(format!(
                    "sub-topology {} appears twice",
                    s.id
                )));
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
        let shard = self.shard(group_id);
        if let Some(answer) = self.settled_answer(shard, group_id, id, now) {
            return answer;
        }
        let mut map = shard.lock();
        #[cfg(test)]
        {
            map.visited += 1;
        }
        // Looked up by `&str` first: the key is allocated only for a group seen the first time.
        let answer = match map.groups.get_mut(group_id) {
            Some(entry) => {
                let last_seen = shard.last_seen(group_id, entry);
                self.heartbeat(entry, last_seen, id, now)
            }
            None => {
                let entry = map
                    .groups
                    .entry(group_id.into())
                    .or_insert_with(|| GroupEntry::new(id, now));
                self.heartbeat(entry, now, id, now)
            }
        };
        shard.republish(&mut map, group_id);
        answer
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
        let shard = self.shard(group_id);
        let mut map = shard.lock();
        let entry = map
            .groups
            .entry(group_id.into())
            .or_insert_with(|| GroupEntry::new(id, now));
        let result = self.store(entry, id, description, size, valid, now);
        shard.republish(&mut map, group_id);
        result
    }

    async fn delete_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
    ) -> Result<(), PluginError> {
        let shard = self.shard(group_id);
        let mut map = shard.lock();
        map.groups.remove(group_id);
        shard.republish(&mut map, group_id);
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
        let shard = self.shard(group_id);
        let mut map = shard.lock();
        let Some(entry) = map.groups.get(group_id) else {
            return Ok(None);
        };
        if self.expired_since(shard.last_seen(group_id, entry), now) {
            map.groups.remove(group_id);
            shard.republish(&mut map, group_id);
            return Ok(None);
        }
        Ok(entry
            .stored
            .as_ref()
            .filter(|s| s.id == id)
            .map(|s| (*s.description).clone()))
    }
}

mod backend;
#[cfg(test)]
pub(crate) mod tests;
