//! A coordinator shard: the groups it owns, their log, and the soft state Kafka also keeps only
//! in memory (configured topologies, endpoint epochs, shutdown requests, timers).
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use kcoord_metadata::{Record, ReplayError, State, Store, StreamsGroup, TopicsImage};
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use crate::config::StreamsGroupConfig;
use crate::error::CoordinatorError;
use crate::topology::ConfiguredTopology;

/// Kafka's group states, as described and listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    NotReady,
    Assigning,
    Reconciling,
    Stable,
    Dead,
}

impl GroupState {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::NotReady => "NotReady",
            GroupState::Assigning => "Assigning",
            GroupState::Reconciling => "Reconciling",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// `StreamsGroup.maybeUpdateGroupState`, derived from the persisted group.
pub fn group_state(group: &StreamsGroup) -> GroupState {
    if group.members.is_empty() {
        return GroupState::Empty;
    }
    let ready = group.topology_epoch().is_some_and(|e| e == group.validated_topology_epoch);
    if !ready {
        return GroupState::NotReady;
    }
    if group.group_epoch > group.target_assignment_epoch {
        return GroupState::Assigning;
    }
    let reconciled = group.members.values().all(|m| {
        m.member_epoch == group.target_assignment_epoch && m.state == kcoord_metadata::MemberState::Stable
    });
    if reconciled {
        GroupState::Stable
    } else {
        GroupState::Reconciling
    }
}

/// What Kafka keeps about a group only in memory.
#[derive(Debug, Default)]
pub struct GroupSoftState {
    /// The configured topology for (topology epoch, metadata hash); dropped whenever the topic
    /// catalog changes, so the steady-state heartbeat never rehashes topic metadata.
    pub configured: Option<(i32, i64, Arc<ConfiguredTopology>)>,
    pub endpoint_information_epoch: i32,
    pub shutdown_requested_by: Option<String>,
    pub initial_delay_deadline: Option<i64>,
}

/// A timer the shard owns; `tick(now)` fires the due ones.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKind {
    Session,
    /// Armed while the member is revoking; carries the member epoch it was armed for.
    Rebalance(i32),
}

#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// (deadline, group, member, kind); entries whose deadline no longer matches `by_member`
    /// are stale and skipped.
    queue: BTreeSet<(i64, String, String, TimerKind)>,
    by_member: HashMap<(String, String), (Option<i64>, Option<(i64, i32)>)>,
}

impl Timers {
    pub(crate) fn schedule_session(&mut self, group: &str, member: &str, deadline: i64) {
        let entry = self.by_member.entry((group.to_string(), member.to_string())).or_default();
        if let Some(old) = entry.0.replace(deadline) {
            self.queue.remove(&(old, group.to_string(), member.to_string(), TimerKind::Session));
        }
        self.queue.insert((deadline, group.to_string(), member.to_string(), TimerKind::Session));
    }

    pub(crate) fn schedule_rebalance(&mut self, group: &str, member: &str, deadline: i64, epoch: i32) {
        let entry = self.by_member.entry((group.to_string(), member.to_string())).or_default();
        if let Some((old, old_epoch)) = entry.1.replace((deadline, epoch)) {
            self.queue.remove(&(old, group.to_string(), member.to_string(), TimerKind::Rebalance(old_epoch)));
        }
        self.queue.insert((deadline, group.to_string(), member.to_string(), TimerKind::Rebalance(epoch)));
    }

    pub(crate) fn cancel_rebalance(&mut self, group: &str, member: &str) {
        if let Some(entry) = self.by_member.get_mut(&(group.to_string(), member.to_string())) {
            if let Some((old, epoch)) = entry.1.take() {
                self.queue.remove(&(old, group.to_string(), member.to_string(), TimerKind::Rebalance(epoch)));
            }
        }
    }

    pub(crate) fn cancel_member(&mut self, group: &str, member: &str) {
        if let Some((session, rebalance)) = self.by_member.remove(&(group.to_string(), member.to_string())) {
            if let Some(d) = session {
                self.queue.remove(&(d, group.to_string(), member.to_string(), TimerKind::Session));
            }
            if let Some((d, e)) = rebalance {
                self.queue.remove(&(d, group.to_string(), member.to_string(), TimerKind::Rebalance(e)));
            }
        }
    }

    /// Removes and returns the timers due at `now`.
    pub(crate) fn take_due(&mut self, now: i64) -> Vec<(String, String, TimerKind)> {
        let mut due = Vec::new();
        while let Some(first) = self.queue.first().cloned() {
            if first.0 > now {
                break;
            }
            self.queue.remove(&first);
            let (_, group, member, kind) = first;
            if let Some(entry) = self.by_member.get_mut(&(group.clone(), member.clone())) {
                match kind {
                    TimerKind::Session => entry.0 = None,
                    TimerKind::Rebalance(_) => entry.1 = None,
                }
            }
            due.push((group, member, kind));
        }
        due
    }

    /// The earliest pending deadline, so the server knows when to tick next.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.queue.first().map(|e| e.0)
    }
}

/// A shard of the group coordinator. All methods are synchronous and take `now` (ms).
pub struct CoordinatorShard {
    pub(crate) store: Store,
    pub(crate) soft: HashMap<String, GroupSoftState>,
    pub(crate) timers: Timers,
    pub(crate) config: StreamsGroupConfig,
    pub(crate) ids: rand::rngs::StdRng,
}

impl CoordinatorShard {
    /// `seed` drives the TopologyDescriptionIds this shard mints (tests pass a fixed one).
    pub fn new(config: StreamsGroupConfig, seed: u64) -> Self {
        CoordinatorShard {
            store: Store::new(),
            soft: HashMap::new(),
            timers: Timers::default(),
            config,
            ids: rand::rngs::StdRng::seed_from_u64(seed),
        }
    }

    pub fn config(&self) -> &StreamsGroupConfig {
        &self.config
    }

    pub fn state(&self) -> &State {
        self.store.state()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn group(&self, group_id: &str) -> Option<&StreamsGroup> {
        self.store.state().streams_groups.get(group_id)
    }

    pub(crate) fn mint_id(&mut self) -> Uuid {
        // Version-4 layout from the shard's generator; never the nil uuid (which means null).
        let bytes: [u8; 16] = self.ids.random();
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    pub(crate) fn append(&mut self, records: Vec<Record>) -> Result<(), CoordinatorError> {
        if records.is_empty() {
            return Ok(());
        }
        self.store.append(records).map(|_| ()).map_err(|e: ReplayError| {
            CoordinatorError::new(kcoord_wire::ErrorCode::UNKNOWN_SERVER_ERROR, format!("records did not apply: {e}"))
        })
    }

    /// The next time `tick` has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        let delays = self.soft.values().filter_map(|s| s.initial_delay_deadline);
        self.timers.next_deadline().into_iter().chain(delays).min()
    }

    /// All group ids this shard knows.
    pub fn group_ids(&self) -> Vec<String> {
        self.store.state().streams_groups.iter().map(|g| g.group_id.clone()).collect()
    }

    pub(crate) fn soft_mut(&mut self, group_id: &str) -> &mut GroupSoftState {
        self.soft.entry(group_id.to_string()).or_default()
    }

    /// Configures (or reuses the cached configuration of) the group's topology. A topology that
    /// cannot be configured at all fails the heartbeat with STREAMS_INVALID_TOPOLOGY.
    pub(crate) fn configured_topology(
        &mut self,
        group_id: &str,
        topology: &kcoord_wire::records::StreamsGroupTopologyValue,
        topics: &TopicsImage,
    ) -> Result<(i64, Arc<ConfiguredTopology>), CoordinatorError> {
        let soft = self.soft_mut(group_id);
        if let Some((epoch, hash, configured)) = &soft.configured {
            if *epoch == topology.epoch {
                return Ok((*hash, configured.clone()));
            }
        }
        let configured = crate::topology::configure(topology, topics)
            .map_err(|e| CoordinatorError::new(e.error_code(), e.message.clone()))?;
        let hash = configured.metadata_hash;
        let configured = Arc::new(configured);
        soft.configured = Some((topology.epoch, hash, configured.clone()));
        Ok((hash, configured))
    }

    /// Kafka clears a shutdown request once the group is empty.
    pub(crate) fn forget_if_empty(&mut self, group_id: &str) {
        if self.group(group_id).is_none_or(|g| g.members.is_empty()) {
            if let Some(soft) = self.soft.get_mut(group_id) {
                soft.shutdown_requested_by = None;
            }
        }
    }

    /// The topic catalog changed: every group reconfigures its topology on its next heartbeat.
    pub fn topics_changed(&mut self) {
        for soft in self.soft.values_mut() {
            soft.configured = None;
        }
    }
}

/// Reported offsets per member are transient telemetry; kept out of the log.
pub type TaskOffsets = BTreeMap<crate::task::TaskId, i64>;
