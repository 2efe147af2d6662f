//! What a runtime needs to run this shard's handlers as Kafka's coordinator runtime runs its
//! shards: each job's records come out as one batch for the durable log, a job that fails half-way
//! is undone, and a shard can be rebuilt from its log (at startup, or when the log refused a
//! batch whose records were already applied in memory).
//!
//! A handler applies its records at once (as Kafka's runtime replays a handler's records before
//! the log has committed them), so that the next request of the shard sees them; the runtime
//! answers the request only once the batch is durable, and when it is not, rebuilds the shard from
//! what the log holds: memory never keeps a change the log lacks.
use kcoord_metadata::{LogRecord, MetadataLog, ReplayError, Store};

use crate::shard::{CoordinatorShard, Timers};
use crate::StreamsGroupConfig;

/// Where a job started: the log offset its first record gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobMark(u64);

/// How a job ended, for the runtime.
#[derive(Debug)]
pub enum JobEnd {
    /// The records the job appended (possibly none), in order, to be made durable.
    Appended(Vec<LogRecord>),
    /// A batch of the job could not be applied; everything the job appended was undone.
    RolledBack,
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
        let mut shard = CoordinatorShard::new(config, seed);
        shard.store = Store::replay_log(log)?;
        shard.arm_loaded_timers(now);
        Ok(shard)
    }

    /// Starts a job: holds compaction so that the job's records can be undone.
    pub fn begin_job(&mut self) -> JobMark {
        self.poisoned = false;
        self.store.hold_compaction();
        JobMark(self.store.log().next_offset())
    }

    /// Ends the job started at `mark`: the records it appended, or, if one of its batches was
    /// refused (the job answered with an error after earlier batches applied), none of them.
    pub fn end_job(&mut self, mark: JobMark, now: i64) -> Result<JobEnd, ReplayError> {
        if std::mem::take(&mut self.poisoned) {
            self.undo_job(mark, now)?;
            return Ok(JobEnd::RolledBack);
        }
        let records = self
            .store
            .log()
            .records_from(mark.0)
            .map(|r| r.to_record())
            .collect();
        self.store.release_compaction();
        Ok(JobEnd::Appended(records))
    }

    /// Undoes the job started at `mark` (it panicked, or a batch was refused): the log and the
    /// groups go back to what they were, and the in-memory state is rebuilt as after a load.
    pub fn undo_job(&mut self, mark: JobMark, now: i64) -> Result<(), ReplayError> {
        self.store.rollback_to(mark.0)?;
        self.store.release_compaction();
        self.forget_memory_state(now);
        Ok(())
    }

    /// The shard's log, compacted (latest record of each key, tombstones dropped with what they
    /// delete): what its durable file is rewritten to when it has grown.
    pub fn compacted_log(&mut self) -> MetadataLog {
        self.store.compact_log();
        self.store.log().clone()
    }

    /// Replaces the shard's groups with those of `store`: its durable log, replayed by the
    /// caller off the shard's lock (replaying a large log takes a while), at startup or after
    /// the file refused later records that memory had already applied.
    pub fn reset_to_store(&mut self, store: Store, now: i64) {
        self.store = store;
        self.forget_memory_state(now);
    }

    /// Drops what is kept only in memory and re-arms the timers from the groups.
    fn forget_memory_state(&mut self, now: i64) {
        self.soft.clear();
        self.delays.clear();
        self.timers = Timers::default();
        self.arm_loaded_timers(now);
    }

    fn arm_loaded_timers(&mut self, now: i64) {
        let mut arm = Vec::new();
        for group in self.store.state().streams_groups.iter() {
            let session = i64::from(
                self.group_settings(&group.group_id)
                    .config
                    .session_timeout_ms,
            );
            for member in group.members.values() {
                let rebalance = (member.state == kcoord_metadata::MemberState::UnrevokedTasks)
                    .then(|| {
                        (
                            now + i64::from(member.rebalance_timeout_ms.max(0)),
                            member.member_epoch,
                        )
                    });
                arm.push((
                    group.group_id.clone(),
                    member.member_id.to_string(),
                    now + session,
                    rebalance,
                ));
            }
        }
        for (group, member, session, rebalance) in arm {
            self.timers.schedule_session(&group, &member, session);
            if let Some((deadline, epoch)) = rebalance {
                self.timers
                    .schedule_rebalance(&group, &member, deadline, epoch);
            }
        }
    }
}
