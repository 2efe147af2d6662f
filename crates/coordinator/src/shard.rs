//! A coordinator shard's state: the groups it owns and their log (the [`Store`]), and what
//! Kafka also keeps only in memory (configured topologies, endpoint epochs, shutdown requests,
//! timers). Handlers read it (`&self`) and return [`crate::Outcome`]s; it changes only when the
//! runtime replays a batch or applies an effect ([`crate::effects`]).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kcoord_metadata::{LogState, Store, StreamsGroup, TopicsImage};
use rand::{Rng, SeedableRng};
use uuid::Uuid;

pub use kcoord_wire::GroupState;

use crate::configured_topology::ConfiguredTopology;
use crate::effects::{Effect, GroupEffect};
use crate::error::CoordinatorError;
use crate::soft_state::{GroupSoftState, MemberTaskOffsets};
use crate::streams_group_config::StreamsGroupConfig;
use crate::timer_queue::Timers;
pub(crate) use crate::timer_queue::{FastMap, Id};

/// `StreamsGroup.maybeUpdateGroupState`, derived from the persisted group.
pub fn group_state(group: &StreamsGroup) -> GroupState {
    if group.members.is_empty() {
        return GroupState::Empty;
    }
    let ready = group
        .topology_epoch()
        .is_some_and(|e| e == group.validated_topology_epoch);
    if !ready {
        return GroupState::NotReady;
    }
    if group.group_epoch > group.target_assignment_epoch {
        return GroupState::Assigning;
    }
    let reconciled = group.members.values().all(|m| {
        m.member_epoch == group.target_assignment_epoch
            && m.state == kcoord_metadata::MemberState::Stable
    });
    if reconciled {
        GroupState::Stable
    } else {
        GroupState::Reconciling
    }
}

/// The settings a group runs with, and the assignment configs derived from them that every
/// heartbeat compares with the group's `LastAssignmentConfigs`: the process's shared copy
/// (`shared_assignment_configs`), which a group assigned with them holds too, so the
/// comparison finds the same pointer.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSettings {
    pub config: StreamsGroupConfig,
    pub assignment_configs: Arc<BTreeMap<String, String>>,
}

impl GroupSettings {
    pub fn new(config: StreamsGroupConfig) -> GroupSettings {
        GroupSettings {
            assignment_configs: kcoord_metadata::shared_assignment_configs(
                config.assignment_configs(),
            ),
            config,
        }
    }
}

/// Plain counts of the shard's work since it was created (never reset, not even by a reload):
/// the daemon reads them before and after each job to feed its metrics and to time the jobs
/// that computed an assignment (the shard itself reads no clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// Group epoch bumps (Kafka's streams-group-rebalance count): a member joined, left or was
    /// fenced, or its subscription or the group's settings changed.
    pub rebalances: u64,
    /// Target assignments computed by the assignor.
    pub assignments: u64,
}

/// Default of `group.coordinator.max.groups`: kcoord's own bound (Kafka has none) on the groups
/// one node holds, streams groups and groups with only committed offsets alike.
pub const DEFAULT_MAX_GROUPS: usize = 100_000;

/// A shard of the group coordinator. Its handlers take `&self` and `now` (ms).
pub struct CoordinatorShard {
    pub(crate) store: Store,
    /// The topic catalog the shard's groups are configured against.
    pub(crate) topics: Arc<TopicsImage>,
    pub(crate) soft: FastMap<Id, GroupSoftState>,
    /// (deadline, group) of every group whose soft state holds an `initial_delay_deadline`, so
    /// the next deadline is found without visiting every group.
    pub(crate) delays: BTreeSet<(i64, String)>,
    pub(crate) timers: Timers,
    /// The broker's settings (`group.streams.*`), for groups without overrides.
    pub(crate) base: Arc<GroupSettings>,
    /// The settings of the groups that have config overrides (Kafka's `GroupConfigManager`:
    /// `streams.*` group configs set with IncrementalAlterConfigs), evaluated by the caller.
    pub(crate) overrides: FastMap<Id, Arc<GroupSettings>>,
    /// When expired offsets are next looked for (`cleanupGroupMetadata`); none until the
    /// runtime's owner starts the expiry ([`Effect::StartOffsetExpiry`]).
    pub(crate) expiry_next: Option<i64>,
    /// The TopologyDescriptionIds this shard mints come from `seed` and how many it minted.
    pub(crate) seed: u64,
    pub(crate) ids_minted: u64,
    /// Whether steady-state heartbeats take the short path of `steady.rs` (tests turn it off
    /// to compare).
    pub(crate) steady_path: bool,
    /// How many groups the node may hold (`group.coordinator.max.groups`), and how many the
    /// other shards held when this job started (the runtime's owner keeps it current).
    pub(crate) max_groups: usize,
    pub(crate) groups_elsewhere: usize,
    pub(crate) stats: ShardStats,
    /// Heartbeats answered by the steady-state path (`steady.rs`), for tests.
    pub(crate) steady_hits: u64,
    /// What the transaction coordinator keeps in memory.
    pub(crate) txn: crate::transactions::TxnSoftState,
    /// The classic groups, which Kafka too keeps in memory.
    pub(crate) classic: crate::classic::ClassicSoftState,
    /// The consumer group settings (`group.consumer.*`).
    pub(crate) consumer: Arc<crate::consumer::ConsumerGroupConfig>,
    /// The consumer groups with `consumer.*` group configs, with the settings they make.
    pub(crate) consumer_overrides: FastMap<Id, Arc<crate::consumer::ConsumerGroupConfig>>,
    /// Each streams group's rebalance timeline, derived from its records.
    pub(crate) timelines: crate::timeline::Timelines,
}

impl std::fmt::Debug for CoordinatorShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorShard")
            .field("groups", &self.store.state().group_count())
            .field("log_records", &self.store.log().len())
            .finish_non_exhaustive()
    }
}

impl CoordinatorShard {
    /// `seed` drives the TopologyDescriptionIds this shard mints (tests pass a fixed one).
    pub fn new(config: StreamsGroupConfig, seed: u64) -> Self {
        CoordinatorShard {
            store: Store::new(),
            topics: Arc::default(),
            soft: FastMap::default(),
            delays: BTreeSet::new(),
            timers: Timers::default(),
            base: Arc::new(GroupSettings::new(config)),
            overrides: FastMap::default(),
            expiry_next: None,
            seed,
            ids_minted: 0,
            steady_path: true,
            max_groups: usize::MAX,
            groups_elsewhere: 0,
            stats: ShardStats::default(),
            steady_hits: 0,
            txn: Default::default(),
            classic: Default::default(),
            consumer: Arc::default(),
            consumer_overrides: FastMap::default(),
            timelines: Default::default(),
        }
    }

    /// The consumer group settings (`group.consumer.*`); set before the shard runs.
    pub fn with_consumer_config(mut self, config: crate::consumer::ConsumerGroupConfig) -> Self {
        self.consumer = Arc::new(config);
        self
    }

    /// Bounds the groups of the node (`group.coordinator.max.groups`); set before the shard
    /// runs.
    pub fn with_max_groups(mut self, max: usize) -> Self {
        self.max_groups = max;
        self
    }

    /// Turns the steady-state heartbeat path off (or on again), so that tests can compare its
    /// answers with the full path's; set before the shard runs.
    #[doc(hidden)]
    pub fn with_steady_path(mut self, enabled: bool) -> Self {
        self.steady_path = enabled;
        self
    }

    /// What the shard has done so far (see [`ShardStats`]).
    pub fn stats(&self) -> ShardStats {
        self.stats
    }

    /// How many heartbeats the steady-state path answered.
    #[doc(hidden)]
    pub fn steady_hits(&self) -> u64 {
        self.steady_hits
    }

    /// GROUP_MAX_SIZE_REACHED when the node already holds `group.coordinator.max.groups`
    /// groups: a new group, streams or offsets-only, is refused. The error is the one Kafka
    /// refuses a member over `group.streams.max.size` with, the closest Kafka has for a
    /// coordinator that will not take more: clients treat it as fatal and show the message,
    /// where a retriable error (COORDINATOR_NOT_AVAILABLE) would have them retry forever.
    pub(crate) fn check_room_for_group(&self) -> crate::error::Result<()> {
        let held = self
            .groups_elsewhere
            .saturating_add(self.store.state().group_count());
        if held >= self.max_groups {
            return Err(CoordinatorError::new(
                kcoord_wire::ErrorCode::GROUP_MAX_SIZE_REACHED,
                format!(
                    "The coordinator holds its maximum of {} groups (group.coordinator.max.groups); no new group can be created.",
                    self.max_groups
                ),
            ));
        }
        Ok(())
    }

    /// The broker-wide settings (a group's own are [`CoordinatorShard::group_settings`]).
    pub fn config(&self) -> &StreamsGroupConfig {
        &self.base.config
    }

    /// The settings `group_id` runs with: its overrides where it has any, else the broker's
    /// (Kafka's `GroupMetadataManager.streamsGroupSessionTimeoutMs(groupId)` and siblings).
    pub fn group_settings(&self, group_id: &str) -> Arc<GroupSettings> {
        Arc::clone(self.settings(group_id))
    }

    /// [`CoordinatorShard::group_settings`], borrowed.
    pub(crate) fn settings(&self, group_id: &str) -> &Arc<GroupSettings> {
        self.overrides.get(group_id).unwrap_or(&self.base)
    }

    pub fn state(&self) -> &LogState {
        self.store.state()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The topic catalog the shard's groups are configured against.
    pub fn topics(&self) -> &Arc<TopicsImage> {
        &self.topics
    }

    /// The group's rebalance timeline ([`crate::timeline`]).
    pub fn timeline(&self, group_id: &str) -> Option<&crate::timeline::GroupTimeline> {
        self.timelines.get(group_id)
    }

    pub fn group(&self, group_id: &str) -> Option<&StreamsGroup> {
        self.store.state().streams_groups.get(group_id)
    }

    /// The `nth` id (from 0) this job mints; the job's outcome says how many it minted
    /// ([`Effect::IdsMinted`]), so that the next job mints new ones. Version-4 layout; never
    /// the nil uuid (which means null).
    pub(crate) fn mint_id(&self, nth: u64) -> Uuid {
        let index = self.ids_minted.wrapping_add(nth);
        let mut ids = rand::rngs::StdRng::seed_from_u64(
            self.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        let bytes: [u8; 16] = ids.random();
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    /// No later than the next time `tick` has work to do (it may be earlier: see `Timers`).
    pub fn next_deadline(&self) -> Option<i64> {
        let delay = self.delays.first().map(|(d, _)| *d);
        self.timers
            .next_deadline()
            .into_iter()
            .chain(delay)
            .chain(self.expiry_next)
            .chain(self.transaction_check_deadline())
            .chain(self.next_classic_deadline())
            .min()
    }

    /// All group ids this shard knows, sorted.
    pub fn group_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .store
            .state()
            .streams_groups
            .iter()
            .map(|g| g.group_id.clone())
            .chain(
                self.store
                    .state()
                    .consumer_groups
                    .iter()
                    .map(|g| g.group_id.clone()),
            )
            .collect();
        ids.sort_unstable();
        ids
    }

    pub(crate) fn soft(&self, group_id: &str) -> Option<&GroupSoftState> {
        self.soft.get(group_id)
    }

    /// The members' reported task offsets (empty when none reported).
    pub(crate) fn task_offsets(&self, group_id: &str) -> BTreeMap<String, MemberTaskOffsets> {
        self.soft(group_id)
            .map(|s| s.task_offsets.clone())
            .unwrap_or_default()
    }

    /// The group's configured topology: the cached one when it was configured for this
    /// topology epoch (and `fresh` is false), else configured now and its caching pushed onto
    /// `effects`. A topology that cannot be configured at all fails the heartbeat with
    /// STREAMS_INVALID_TOPOLOGY.
    pub(crate) fn configured_topology(
        &self,
        group_id: &str,
        topology: &kcoord_wire::records::StreamsGroupTopologyValue,
        fresh: bool,
        effects: &mut Vec<Effect>,
    ) -> Result<(i64, Arc<ConfiguredTopology>), CoordinatorError> {
        let cached = self.soft(group_id).and_then(|s| s.configured.as_ref());
        if let Some((epoch, hash, configured)) = cached.filter(|_| !fresh) {
            if *epoch == topology.epoch {
                return Ok((*hash, configured.clone()));
            }
        }
        let configured = crate::configured_topology::configure(topology, &*self.topics)
            .map_err(|e| CoordinatorError::new(e.error_code(), e.message.clone()))?;
        let hash = configured.metadata_hash;
        let configured = Arc::new(configured);
        effects.push(Effect::Group(GroupEffect::TopologyConfigured {
            group_id: group_id.into(),
            epoch: topology.epoch,
            hash,
            configured: configured.clone(),
        }));
        Ok((hash, configured))
    }
}

#[cfg(test)]
mod tests;
