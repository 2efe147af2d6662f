//! The shard as the runtime drives it ([`kcoord_runtime::Core`]), and the shard rebuilt from
//! its log: at startup, and whenever its state stopped following its log (a durable log that
//! refused batches the shard had already replayed, or a bug the runtime caught).
use kcoord_metadata::{LogRecord, MetadataLog, RecordAndVersion, ReplayError, Store};
use kcoord_runtime::Core;

use crate::effects::{Effect, MemberEffect};
use crate::shard::{CoordinatorShard, FastMap, Id};
use crate::timeline::Timelines;
use crate::timer_queue::Timers;
use crate::StreamsGroupConfig;

impl Core for CoordinatorShard {
    type Effect = Effect;

    fn prepare(&self, records: &[RecordAndVersion]) -> Result<Vec<LogRecord>, ReplayError> {
        self.store.prepare(records)
    }

    fn replay(
        &mut self,
        records: &[RecordAndVersion],
        entries: Vec<LogRecord>,
    ) -> Result<(), ReplayError> {
        self.store.commit(records, entries)?;
        for record in records {
            self.timelines.observe(&record.record);
        }
        Ok(())
    }

    fn apply(&mut self, effect: Effect) {
        self.apply_effect(effect);
    }

    fn next_offset(&self) -> u64 {
        self.store.log().next_offset()
    }
}

impl CoordinatorShard {
    /// A shard rebuilt from `log` (its durable log), with `seed` for the TopologyDescriptionIds
    /// it mints. Every member gets a fresh session timer, and the members that were revoking
    /// tasks a fresh rebalance timer, as Kafka's `GroupMetadataManager.onLoaded` schedules them
    /// after a coordinator failover. What Kafka keeps only in memory (endpoint epochs, shutdown
    /// requests, reported task offsets, initial delays) starts empty, as after a failover.
    pub fn from_log(
        config: StreamsGroupConfig,
        seed: u64,
        log: &MetadataLog,
        now: i64,
    ) -> Result<CoordinatorShard, ReplayError> {
        Ok(CoordinatorShard::new(config, seed).reloaded(ReplayedLog::keeping_records(log)?, now))
    }

    /// This shard's settings, inputs and statistics over the groups of `replayed` (its log),
    /// with what is kept only in memory started afresh as [`CoordinatorShard::from_log`] says.
    pub fn reloaded(&self, replayed: ReplayedLog, now: i64) -> CoordinatorShard {
        let ReplayedLog { store, timelines } = replayed;
        let classic = self.classic.loaded(&store.state().classic_groups, now);
        let mut shard = CoordinatorShard {
            store,
            topics: self.topics.clone(),
            soft: FastMap::default(),
            delays: Default::default(),
            timers: Timers::default(),
            base: self.base.clone(),
            overrides: self.overrides.clone(),
            expiry_next: self.expiry_next,
            seed: self.seed,
            ids_minted: self.ids_minted,
            steady_path: self.steady_path,
            max_groups: self.max_groups,
            groups_elsewhere: self.groups_elsewhere,
            stats: self.stats,
            steady_hits: self.steady_hits,
            // Kafka's last epochs live only in memory: a reload forgets them.
            txn: crate::transactions::TxnSoftState {
                last_epochs: Default::default(),
                ..self.txn.clone()
            },
            classic,
            consumer: self.consumer.clone(),
            consumer_overrides: self.consumer_overrides.clone(),
            timelines,
        };
        for effect in shard.loaded_timers(now) {
            shard.apply_effect(effect);
        }
        shard
    }

    /// The timers of a shard just loaded.
    fn loaded_timers(&self, now: i64) -> Vec<Effect> {
        let mut timers = self.loaded_consumer_timers(now);
        for group in self.store.state().streams_groups.iter() {
            let session = i64::from(self.settings(&group.group_id).config.session_timeout_ms);
            for member in group.members.values() {
                let group_id = Id::from(group.group_id.as_str());
                timers.push(Effect::Member(MemberEffect::SessionTimer {
                    group_id: group_id.clone(),
                    member_id: member.member_id.clone(),
                    deadline: now + session,
                }));
                if member.state == kcoord_metadata::MemberState::UnrevokedTasks {
                    timers.push(Effect::Member(MemberEffect::RebalanceTimer {
                        group_id,
                        member_id: member.member_id.clone(),
                        deadline: now + i64::from(member.rebalance_timeout_ms.max(0)),
                        epoch: member.member_epoch,
                    }));
                }
            }
        }
        timers
    }
}

/// A shard's log replayed, for [`CoordinatorShard::reloaded`]: made off the shard's lock, since
/// a large log takes a while, with or without a copy of its records kept in memory.
pub struct ReplayedLog {
    store: Store,
    timelines: Timelines,
}

impl ReplayedLog {
    /// `log` replayed, its records kept in memory: for groups kept in memory only, where that
    /// copy is the only one, read again to rebuild the shard after a bug.
    pub fn keeping_records(log: &MetadataLog) -> Result<ReplayedLog, ReplayError> {
        Ok(ReplayedLog::of(Store::replay_log(log)?, log))
    }

    /// `log` replayed, its records not kept ([`Store::replay_durable_log`]): for a log durable
    /// elsewhere (a file, an upstream partition), which is read again whenever the records are
    /// needed, so that memory holds an idle member once, as state.
    pub fn durable(log: &MetadataLog) -> Result<ReplayedLog, ReplayError> {
        Ok(ReplayedLog::of(Store::replay_durable_log(log)?, log))
    }

    /// No groups (a shard another node serves).
    pub fn empty() -> ReplayedLog {
        ReplayedLog::of(Store::new(), &MetadataLog::new())
    }

    fn of(store: Store, log: &MetadataLog) -> ReplayedLog {
        ReplayedLog {
            store,
            timelines: Timelines::from_log(log),
        }
    }
}
