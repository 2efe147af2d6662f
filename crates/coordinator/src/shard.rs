//! A coordinator shard: the groups it owns, their log, and the soft state Kafka also keeps only
//! in memory (configured topologies, endpoint epochs, shutdown requests, timers).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kcoord_metadata::{Record, ReplayError, State, Store, StreamsGroup, TopicsImage};
use rand::{Rng, SeedableRng};
use uuid::Uuid;

pub use kcoord_wire::GroupState;

use crate::config::StreamsGroupConfig;
use crate::error::CoordinatorError;
use crate::topology::ConfiguredTopology;

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
/// heartbeat compares with the group's `LastAssignmentConfigs`.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSettings {
    pub config: StreamsGroupConfig,
    pub assignment_configs: BTreeMap<String, String>,
}

impl GroupSettings {
    pub fn new(config: StreamsGroupConfig) -> GroupSettings {
        GroupSettings {
            assignment_configs: config.assignment_configs(),
            config,
        }
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
    /// member id -> its last reported task offsets (`StreamsGroup.taskOffsets`).
    pub task_offsets: BTreeMap<String, MemberTaskOffsets>,
}

/// A timer the shard owns; `tick(now)` fires the due ones.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKind {
    Session,
    /// Armed while the member is revoking; carries the member epoch it was armed for.
    Rebalance(i32),
}

/// The timers armed for one member, in a map keyed by its id.
#[derive(Debug, Default)]
struct MemberTimers {
    /// The session deadline.
    session: Option<i64>,
    /// The deadline the session timer sits under in the queue: never later than `session`.
    /// Every heartbeat pushes the deadline back, and moving the queue entry each time (a
    /// B-tree remove and insert) was a tenth of the daemon's heartbeat cost; instead the entry
    /// stays where it is and, when it comes due early, `take_due` re-queues it at the real
    /// deadline: about once per session timeout instead of once per heartbeat.
    session_queued: Option<i64>,
    rebalance: Option<(i64, i32)>,
}

/// hashbrown's maps (foldhash, seeded per map) for the per-heartbeat lookups: a fraction of
/// SipHash's cost on short ids.
pub(crate) type FastMap<K, V> = hashbrown::HashMap<K, V>;

pub(crate) use kcoord_metadata::Id;

#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// (deadline, group, member, kind), in that order: ids compare as their text, so due
    /// timers come out ordered by deadline, then group and member id.
    queue: BTreeSet<(i64, Id, Id, TimerKind)>,
    /// group -> member -> its armed timers; looked up by `&str`, without allocating.
    by_member: FastMap<Id, FastMap<Id, MemberTimers>>,
}

/// `map[key]`, inserted with its default when missing (without building the key otherwise).
pub(crate) fn entry_or_default<'a, V: Default>(
    map: &'a mut FastMap<Id, V>,
    key: &str,
) -> &'a mut V {
    kcoord_metadata::entry_by_str(map, key, V::default)
}

/// A member's timers, created when it has none.
fn member_entry<'a>(
    by_member: &'a mut FastMap<Id, FastMap<Id, MemberTimers>>,
    group: &str,
    member: &str,
) -> &'a mut MemberTimers {
    entry_or_default(entry_or_default(by_member, group), member)
}

impl Timers {
    pub(crate) fn schedule_session(&mut self, group: &str, member: &str, deadline: i64) {
        // Almost every heartbeat: the entry in the queue is no later than the new deadline and
        // will be re-queued when it comes due. (A lookup by `&str`: no key is built.)
        if let Some(entry) = self
            .by_member
            .get_mut(group)
            .and_then(|m| m.get_mut(member))
        {
            if entry
                .session_queued
                .is_some_and(|queued| queued <= deadline)
            {
                entry.session = Some(deadline);
                return;
            }
        }
        let entry = member_entry(&mut self.by_member, group, member);
        entry.session = Some(deadline);
        if let Some(queued) = entry.session_queued.replace(deadline) {
            self.queue
                .remove(&(queued, group.into(), member.into(), TimerKind::Session));
        }
        self.queue
            .insert((deadline, group.into(), member.into(), TimerKind::Session));
    }

    pub(crate) fn schedule_rebalance(
        &mut self,
        group: &str,
        member: &str,
        deadline: i64,
        epoch: i32,
    ) {
        let entry = member_entry(&mut self.by_member, group, member);
        if let Some((old, old_epoch)) = entry.rebalance.replace((deadline, epoch)) {
            self.queue.remove(&(
                old,
                group.into(),
                member.into(),
                TimerKind::Rebalance(old_epoch),
            ));
        }
        self.queue.insert((
            deadline,
            group.into(),
            member.into(),
            TimerKind::Rebalance(epoch),
        ));
    }

    pub(crate) fn cancel_rebalance(&mut self, group: &str, member: &str) {
        let Some(entry) = self
            .by_member
            .get_mut(group)
            .and_then(|m| m.get_mut(member))
        else {
            return;
        };
        if let Some((old, epoch)) = entry.rebalance.take() {
            self.queue.remove(&(
                old,
                group.into(),
                member.into(),
                TimerKind::Rebalance(epoch),
            ));
        }
    }

    pub(crate) fn cancel_member(&mut self, group: &str, member: &str) {
        let Some(members) = self.by_member.get_mut(group) else {
            return;
        };
        let Some(entry) = members.remove(member) else {
            return;
        };
        if members.is_empty() {
            self.by_member.remove(group);
        }
        if let Some(d) = entry.session_queued {
            self.queue
                .remove(&(d, group.into(), member.into(), TimerKind::Session));
        }
        if let Some((d, e)) = entry.rebalance {
            self.queue
                .remove(&(d, group.into(), member.into(), TimerKind::Rebalance(e)));
        }
    }

    /// Removes and returns the timers due at `now`, ordered by deadline, then group and member
    /// id. Session timers queued early whose real deadline is later are re-queued at it.
    pub(crate) fn take_due(&mut self, now: i64) -> Vec<(String, String, TimerKind)> {
        let mut due = Vec::new();
        while self.queue.first().is_some_and(|first| first.0 <= now) {
            let Some((queued, group, member, kind)) = self.queue.pop_first() else {
                break;
            };
            let Some(entry) = self
                .by_member
                .get_mut(&*group)
                .and_then(|m| m.get_mut(&*member))
            else {
                continue;
            };
            let deadline = match kind {
                TimerKind::Session => match entry.session {
                    Some(deadline) if deadline > now => {
                        entry.session_queued = Some(deadline);
                        self.queue.insert((deadline, group, member, kind));
                        continue;
                    }
                    _ => {
                        entry.session_queued = None;
                        entry.session.take().unwrap_or(queued)
                    }
                },
                TimerKind::Rebalance(_) => {
                    entry.rebalance = None;
                    queued
                }
            };
            due.push((deadline, group, member, kind));
        }
        due.sort();
        due.into_iter()
            .map(|(_, group, member, kind)| (group.to_string(), member.to_string(), kind))
            .collect()
    }

    /// No later than the earliest pending deadline (a session timer may sit in the queue under
    /// an earlier one; ticking then fires nothing and re-queues it), so the server knows when
    /// to tick next.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        self.queue.first().map(|e| e.0)
    }
}

/// A shard of the group coordinator. All methods are synchronous and take `now` (ms).
pub struct CoordinatorShard {
    pub(crate) store: Store,
    pub(crate) soft: FastMap<Id, GroupSoftState>,
    /// (deadline, group) of every group whose soft state holds an `initial_delay_deadline`, so
    /// the next deadline is found without visiting every group. Changed only through
    /// [`CoordinatorShard::arm_initial_delay`], [`CoordinatorShard::clear_initial_delay`] and
    /// [`CoordinatorShard::forget_soft_state`].
    pub(crate) delays: BTreeSet<(i64, String)>,
    pub(crate) timers: Timers,
    /// The broker's settings (`group.streams.*`), for groups without overrides.
    pub(crate) base: Arc<GroupSettings>,
    /// The settings of the groups that have config overrides (Kafka's `GroupConfigManager`:
    /// `streams.*` group configs set with IncrementalAlterConfigs), evaluated by the caller.
    pub(crate) overrides: FastMap<Id, Arc<GroupSettings>>,
    /// When expired offsets are next looked for (`cleanupGroupMetadata`); none until
    /// [`CoordinatorShard::start_offset_expiry`].
    pub(crate) expiry_next: Option<i64>,
    pub(crate) ids: rand::rngs::StdRng,
    /// Whether steady-state heartbeats take the short path of `steady.rs` (tests turn it off
    /// to compare), and how many did.
    pub(crate) steady_path: bool,
    pub(crate) steady_hits: u64,
    /// Set when a batch was refused during the current job, which must then be undone
    /// (see [`crate::runtime`]).
    pub(crate) poisoned: bool,
    /// How many groups the node may hold (`group.coordinator.max.groups`), and how many the
    /// other shards held when this job started (the runtime keeps it current).
    pub(crate) max_groups: usize,
    pub(crate) groups_elsewhere: usize,
    /// What the shard has done since it was created, for the daemon's metrics. Cells, so that
    /// the code deciding a job counts while it holds the shard's groups borrowed.
    pub(crate) stats: StatCells,
}

#[derive(Debug, Default)]
pub(crate) struct StatCells {
    rebalances: std::cell::Cell<u64>,
    assignments: std::cell::Cell<u64>,
}

impl StatCells {
    pub(crate) fn rebalanced(&self) {
        self.rebalances.set(self.rebalances.get() + 1);
    }

    pub(crate) fn assigned(&self) {
        self.assignments.set(self.assignments.get() + 1);
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

impl CoordinatorShard {
    /// `seed` drives the TopologyDescriptionIds this shard mints (tests pass a fixed one).
    pub fn new(config: StreamsGroupConfig, seed: u64) -> Self {
        CoordinatorShard {
            store: Store::new(),
            soft: FastMap::default(),
            delays: BTreeSet::new(),
            timers: Timers::default(),
            base: Arc::new(GroupSettings::new(config)),
            overrides: FastMap::default(),
            expiry_next: None,
            ids: rand::rngs::StdRng::seed_from_u64(seed),
            steady_path: true,
            steady_hits: 0,
            poisoned: false,
            max_groups: usize::MAX,
            groups_elsewhere: 0,
            stats: StatCells::default(),
        }
    }

    /// What the shard has done so far (see [`ShardStats`]).
    pub fn stats(&self) -> ShardStats {
        ShardStats {
            rebalances: self.stats.rebalances.get(),
            assignments: self.stats.assignments.get(),
        }
    }

    /// Bounds the groups of the node (`group.coordinator.max.groups`).
    pub fn set_max_groups(&mut self, max: usize) {
        self.max_groups = max;
    }

    /// How many groups the node's other shards hold: with this shard's own, what a new group
    /// is checked against.
    pub fn set_groups_elsewhere(&mut self, groups: usize) {
        self.groups_elsewhere = groups;
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
            return Err(crate::error::CoordinatorError::new(
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
        Arc::clone(self.overrides.get(group_id).unwrap_or(&self.base))
    }

    /// Replaces every group's overrides: `configs` holds, for each group with overrides, the
    /// settings it runs with (the caller applies the group's configs to the broker's and keeps
    /// them within the broker's bounds, as Kafka's `GroupConfig.evaluate` does). A group whose
    /// assignment configs change gets a new target assignment at its next heartbeat.
    pub fn set_group_configs(&mut self, configs: BTreeMap<String, StreamsGroupConfig>) {
        self.overrides = configs
            .into_iter()
            .map(|(group, config)| {
                (
                    Id::from(group.as_str()),
                    Arc::new(GroupSettings::new(config)),
                )
            })
            .collect();
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
        self.store
            .append(records)
            .map(|_| ())
            .map_err(|e: ReplayError| {
                // Earlier batches of the same job may have applied: the runtime undoes them all.
                self.poisoned = true;
                CoordinatorError::new(
                    kcoord_wire::ErrorCode::UNKNOWN_SERVER_ERROR,
                    format!("records did not apply: {e}"),
                )
            })
    }

    /// Turns the steady-state heartbeat path off (or on again), so that tests can compare its
    /// answers with the full path's.
    #[doc(hidden)]
    pub fn set_steady_path(&mut self, enabled: bool) {
        self.steady_path = enabled;
    }

    /// How many heartbeats the steady-state path answered.
    #[doc(hidden)]
    pub fn steady_hits(&self) -> u64 {
        self.steady_hits
    }

    /// No later than the next time `tick` has work to do (it may be earlier: see `Timers`).
    pub fn next_deadline(&self) -> Option<i64> {
        let delay = self.delays.first().map(|(d, _)| *d);
        self.timers
            .next_deadline()
            .into_iter()
            .chain(delay)
            .chain(self.expiry_next)
            .min()
    }

    /// Arms the periodic search for expired offsets, first due one
    /// `offsets.retention.check.interval.ms` after `now` (Kafka schedules it when a shard is
    /// loaded: `scheduleGroupMetadataExpiration`).
    pub fn start_offset_expiry(&mut self, now: i64) {
        let interval = self.base.config.offsets_retention_check_interval_ms.max(1);
        self.expiry_next = Some(now.saturating_add(interval));
    }

    /// All group ids this shard knows, sorted.
    pub fn group_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .store
            .state()
            .streams_groups
            .iter()
            .map(|g| g.group_id.clone())
            .collect();
        ids.sort_unstable();
        ids
    }

    pub(crate) fn soft_mut(&mut self, group_id: &str) -> &mut GroupSoftState {
        entry_or_default(&mut self.soft, group_id)
    }

    /// Arms the group's initial rebalance delay unless one is armed; returns the deadline in
    /// force.
    pub(crate) fn arm_initial_delay(&mut self, group_id: &str, deadline: i64) -> i64 {
        let soft = self.soft_mut(group_id);
        match soft.initial_delay_deadline {
            Some(armed) => armed,
            None => {
                soft.initial_delay_deadline = Some(deadline);
                self.delays.insert((deadline, group_id.to_string()));
                deadline
            }
        }
    }

    /// Disarms the group's initial rebalance delay.
    pub(crate) fn clear_initial_delay(&mut self, group_id: &str) {
        if let Some(soft) = self.soft.get_mut(group_id) {
            if let Some(deadline) = soft.initial_delay_deadline.take() {
                self.delays.remove(&(deadline, group_id.to_string()));
            }
        }
    }

    /// The members' reported task offsets (empty when none reported).
    pub(crate) fn task_offsets(&self, group_id: &str) -> BTreeMap<String, MemberTaskOffsets> {
        self.soft
            .get(group_id)
            .map(|s| s.task_offsets.clone())
            .unwrap_or_default()
    }

    /// Forgets what a member that left the group reported (`StreamsGroup.removeMember`).
    pub(crate) fn forget_member_offsets(&mut self, group_id: &str, member_id: &str) {
        if let Some(soft) = self.soft.get_mut(group_id) {
            soft.task_offsets.remove(member_id);
        }
    }

    /// Drops everything kept in memory about the group (it was deleted).
    pub(crate) fn forget_soft_state(&mut self, group_id: &str) {
        self.clear_initial_delay(group_id);
        self.soft.remove(group_id);
    }

    /// Configures (or reuses the cached configuration of) the group's topology. A topology that
    /// cannot be configured at all fails the heartbeat with STREAMS_INVALID_TOPOLOGY.
    pub(crate) fn configured_topology(
        &mut self,
        group_id: &str,
        topology: &kcoord_wire::records::StreamsGroupTopologyValue,
        topics: &TopicsImage,
    ) -> Result<(i64, Arc<ConfiguredTopology>), CoordinatorError> {
        configured_topology_in(&mut self.soft, group_id, topology, topics)
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

/// [`CoordinatorShard::configured_topology`] on the soft state alone, so that the topology can
/// be borrowed from the shard's log state meanwhile.
pub(crate) fn configured_topology_in(
    soft: &mut FastMap<Id, GroupSoftState>,
    group_id: &str,
    topology: &kcoord_wire::records::StreamsGroupTopologyValue,
    topics: &TopicsImage,
) -> Result<(i64, Arc<ConfiguredTopology>), CoordinatorError> {
    let soft = entry_or_default(soft, group_id);
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

/// Reported offsets per member are transient telemetry; kept out of the log.
pub type TaskOffsets = BTreeMap<crate::task::TaskId, i64>;

/// What a member last reported in TaskOffsets and TaskEndOffsets (Kafka's `MemberTaskOffsets`):
/// kept in memory only, dropped with the member, used by the assignor and described.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberTaskOffsets {
    pub offsets: TaskOffsets,
    pub end_offsets: TaskOffsets,
}

impl MemberTaskOffsets {
    /// `MemberTaskOffsets.update`: a null list keeps what was reported before; a list given
    /// replaces it whole. A task reported twice is INVALID_REQUEST.
    pub fn update(
        &self,
        offsets: Option<&[kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset]>,
        end_offsets: Option<&[kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset]>,
    ) -> Result<MemberTaskOffsets, CoordinatorError> {
        fn to_map(
            list: &[kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset],
        ) -> Result<TaskOffsets, CoordinatorError> {
            let mut map = TaskOffsets::new();
            for t in list {
                let task = crate::task::TaskId::new(t.subtopology_id.clone(), t.partition);
                if map.insert(task, t.offset).is_some() {
                    return Err(CoordinatorError::invalid_request(format!(
                        "Task offsets contain a duplicate entry for subtopology {} and partition {}.",
                        t.subtopology_id, t.partition
                    )));
                }
            }
            Ok(map)
        }
        Ok(MemberTaskOffsets {
            offsets: match offsets {
                Some(list) => to_map(list)?,
                None => self.offsets.clone(),
            },
            end_offsets: match end_offsets {
                Some(list) => to_map(list)?,
                None => self.end_offsets.clone(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_timers_come_out_by_deadline_then_group_then_member() {
        let mut t = Timers::default();
        t.schedule_session("g2", "a", 10);
        t.schedule_session("g1", "b", 10);
        t.schedule_session("g1", "a", 10);
        t.schedule_rebalance("g1", "a", 5, 3);
        t.schedule_session("g3", "z", 20);
        // Re-arming later leaves the queue entry where it was; it is re-queued when due.
        t.schedule_session("g3", "z", 30);
        t.schedule_rebalance("g1", "a", 7, 4);
        assert_eq!(t.next_deadline(), Some(7));
        let due = t.take_due(10);
        let due: Vec<(&str, &str, TimerKind)> = due
            .iter()
            .map(|(g, m, k)| (g.as_str(), m.as_str(), k.clone()))
            .collect();
        assert_eq!(
            due,
            vec![
                ("g1", "a", TimerKind::Rebalance(4)),
                ("g1", "a", TimerKind::Session),
                ("g1", "b", TimerKind::Session),
                ("g2", "a", TimerKind::Session),
            ]
        );
        assert_eq!(t.next_deadline(), Some(20));
        assert!(t.take_due(20).is_empty(), "g3/z's deadline is 30, not 20");
        assert_eq!(t.next_deadline(), Some(30));
        // A fired timer is disarmed: cancelling finds nothing of it in the queue.
        t.cancel_rebalance("g1", "a");
        t.schedule_rebalance("g3", "z", 25, 1);
        t.cancel_rebalance("g3", "z");
        assert_eq!(t.next_deadline(), Some(30));
        t.cancel_member("g3", "z");
        assert_eq!(t.next_deadline(), None);
        assert!(
            !t.by_member.contains_key("g3"),
            "a group without timers is forgotten"
        );
    }

    #[test]
    fn session_timers_pushed_back_fire_at_their_last_deadline_in_deadline_order() {
        let mut t = Timers::default();
        t.schedule_session("g", "late", 10);
        t.schedule_session("g", "early", 12);
        // Heartbeats push "late" back three times; its queue entry stays at 10.
        for deadline in [20, 30, 40] {
            t.schedule_session("g", "late", deadline);
        }
        assert_eq!(t.queue.len(), 2);
        // Pulling a deadline forward moves the entry at once.
        t.schedule_session("g", "early", 11);
        assert_eq!(t.next_deadline(), Some(10));
        assert!(t.take_due(10).is_empty());
        let fired = |due: Vec<(String, String, TimerKind)>| {
            due.into_iter().map(|(_, m, _)| m).collect::<Vec<_>>()
        };
        assert_eq!(fired(t.take_due(39)), vec!["early"]);
        assert_eq!(t.next_deadline(), Some(40));
        // Two timers due in one tick come out by real deadline, whatever their queue order.
        t.schedule_session("g", "a", 45);
        t.schedule_session("g", "a", 50);
        t.schedule_session("g", "b", 48);
        let _ = t.take_due(46); // "late" fires; "a" is re-queued at 50
        t.schedule_session("g", "c", 49);
        assert_eq!(fired(t.take_due(60)), vec!["b", "c", "a"]);
        assert_eq!(t.next_deadline(), None);
        assert!(t.by_member.get("g").is_some_and(|m| m
            .values()
            .all(|e| e.session.is_none() && e.session_queued.is_none())));
    }

    #[test]
    fn the_next_deadline_includes_initial_delays_without_visiting_every_group() {
        let mut shard = CoordinatorShard::new(StreamsGroupConfig::default(), 1);
        assert_eq!(shard.next_deadline(), None);
        assert_eq!(shard.arm_initial_delay("g1", 50), 50);
        // Already armed: the first deadline stays.
        assert_eq!(shard.arm_initial_delay("g1", 60), 50);
        assert_eq!(shard.arm_initial_delay("g2", 40), 40);
        shard.timers.schedule_session("g1", "m", 45);
        assert_eq!(shard.next_deadline(), Some(40));
        shard.clear_initial_delay("g2");
        assert_eq!(
            shard.soft.get("g2").and_then(|s| s.initial_delay_deadline),
            None
        );
        assert_eq!(shard.next_deadline(), Some(45));
        shard.forget_soft_state("g1");
        assert!(shard.delays.is_empty());
        shard.timers.cancel_member("g1", "m");
        assert_eq!(shard.next_deadline(), None);
    }
}
