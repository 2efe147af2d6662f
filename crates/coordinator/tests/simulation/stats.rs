//! What the runs did, so that a run that stopped exercising something shows (and the CI run
//! asserts a floor on the rare events).
use std::fmt;

use kcoord_coordinator::{CoordinatorShard, TickEvent};

#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub seeds: u64,
    pub steps: u64,
    pub acknowledged: u64,
    pub refused: u64,
    pub commits: u64,
    pub groups_deleted: u64,
    pub crashes: u64,
    pub failed_writes: u64,
    pub rewrites: u64,
    pub sessions_expired: u64,
    pub rebalances_timed_out: u64,
    pub delayed_assignments: u64,
    pub groups_expired: u64,
    /// Heartbeats the steady-state path answered.
    pub steady_heartbeats: u64,
    /// Steps after which the shard's file and queue held fewer records than before without a
    /// rollback: a rewrite compacted the file.
    pub log_compactions: u64,
    pub txn_commits: u64,
    pub txn_aborts: u64,
    pub txn_timeouts: u64,
    pub txn_ids_expired: u64,
    pub txn_offsets: u64,
    /// Producer requests the coordinator refused (fenced, unknown id, aborted under it).
    pub txn_refused: u64,
    /// Transactions the marker writer completed.
    pub txns_completed: u64,
    /// Crashes that stopped the marker writer in the middle of its work.
    pub writer_interrupted: u64,
    /// EndTxn acknowledged at transaction version 2 (each hands out the epoch to go on with).
    pub txn_v2_ends: u64,
    /// Of those, retries of an EndTxn whose answer was lost (sent with the old epoch).
    pub txn_v2_retries: u64,
    /// SyncGroup answers acknowledged without error, and the highest generation they named.
    pub classic_syncs: u64,
    pub max_generation: i32,
    /// Parked JoinGroup and SyncGroup requests refused by a crash or a failed write.
    pub parked_refused: u64,
    /// Static classic members that restarted, and that took their own place on rejoining
    /// (answered at once, with no rebalance).
    pub classic_restarts: u64,
    pub static_replacements: u64,
    /// Acknowledged LeaveGroup requests of dynamic classic members.
    pub classic_leaves: u64,
    /// Consumer group heartbeats acknowledged (not leaves), leaves acknowledged, and answers
    /// that fenced a consumer or did not know it.
    pub consumer_heartbeats: u64,
    pub consumer_leaves: u64,
    pub consumers_fenced: u64,
    /// Runs whose classic and consumer groups settled at the end.
    pub groups_converged: u64,
    /// The mixed group: acknowledged SyncGroup answers (and those the coordinator of a
    /// consumer group gave), heartbeats that told a classic member inside a consumer group to
    /// rejoin, acknowledged consumer heartbeats, online upgrades and downgrades, steps that
    /// rolled its type back, restarts of the static instance in the other protocol, runs whose mixed group settled, and as which type.
    pub mixed_syncs: u64,
    pub mixed_coordinator_syncs: u64,
    pub mixed_rejoins_told: u64,
    pub mixed_heartbeats: u64,
    pub mixed_upgrades: u64,
    pub mixed_downgrades: u64,
    pub mixed_rolled_back: u64,
    pub mixed_switches: u64,
    pub mixed_converged: u64,
    pub mixed_ended_classic: u64,
    pub mixed_ended_consumer: u64,
    pub max_group_epoch: i32,
    /// The most records the shard's file and queue held.
    pub max_log_records: usize,
    /// The records of the shard's file and queue after the last step.
    pub log_records: usize,
}

impl Stats {
    pub fn count_tick(&mut self, events: &[TickEvent]) {
        for event in events {
            match event {
                TickEvent::SessionExpired { .. } | TickEvent::ClassicMemberExpired { .. } => {
                    self.sessions_expired += 1
                }
                TickEvent::RebalanceTimedOut { .. } => self.rebalances_timed_out += 1,
                TickEvent::AssignmentComputed { .. } => self.delayed_assignments += 1,
                TickEvent::GroupExpired { .. } => self.groups_expired += 1,
                TickEvent::TransactionTimedOut { .. } => self.txn_timeouts += 1,
                TickEvent::TransactionalIdExpired { .. } => self.txn_ids_expired += 1,
                TickEvent::OffsetsExpired { .. } => {}
            }
        }
    }

    /// After a step: the shard, and the records of its file and queue.
    pub fn observe(&mut self, shard: &CoordinatorShard, records: usize, rolled_back: bool) {
        let epochs = shard.state().streams_groups.iter().map(|g| g.group_epoch);
        self.max_group_epoch = epochs.fold(self.max_group_epoch, i32::max);
        if records < self.log_records && !rolled_back {
            self.log_compactions += 1;
        }
        self.log_records = records;
        self.max_log_records = self.max_log_records.max(records);
    }

    pub fn add(&mut self, run: &Stats) {
        self.seeds += 1;
        self.steps += run.steps;
        self.acknowledged += run.acknowledged;
        self.refused += run.refused;
        self.commits += run.commits;
        self.groups_deleted += run.groups_deleted;
        self.crashes += run.crashes;
        self.failed_writes += run.failed_writes;
        self.rewrites += run.rewrites;
        self.sessions_expired += run.sessions_expired;
        self.rebalances_timed_out += run.rebalances_timed_out;
        self.delayed_assignments += run.delayed_assignments;
        self.groups_expired += run.groups_expired;
        self.steady_heartbeats += run.steady_heartbeats;
        self.log_compactions += run.log_compactions;
        self.txn_commits += run.txn_commits;
        self.txn_aborts += run.txn_aborts;
        self.txn_timeouts += run.txn_timeouts;
        self.txn_ids_expired += run.txn_ids_expired;
        self.txn_offsets += run.txn_offsets;
        self.txn_refused += run.txn_refused;
        self.txns_completed += run.txns_completed;
        self.writer_interrupted += run.writer_interrupted;
        self.txn_v2_ends += run.txn_v2_ends;
        self.txn_v2_retries += run.txn_v2_retries;
        self.classic_syncs += run.classic_syncs;
        self.max_generation = self.max_generation.max(run.max_generation);
        self.parked_refused += run.parked_refused;
        self.classic_restarts += run.classic_restarts;
        self.static_replacements += run.static_replacements;
        self.classic_leaves += run.classic_leaves;
        self.consumer_heartbeats += run.consumer_heartbeats;
        self.consumer_leaves += run.consumer_leaves;
        self.consumers_fenced += run.consumers_fenced;
        self.groups_converged += run.groups_converged;
        self.mixed_syncs += run.mixed_syncs;
        self.mixed_coordinator_syncs += run.mixed_coordinator_syncs;
        self.mixed_rejoins_told += run.mixed_rejoins_told;
        self.mixed_heartbeats += run.mixed_heartbeats;
        self.mixed_upgrades += run.mixed_upgrades;
        self.mixed_downgrades += run.mixed_downgrades;
        self.mixed_rolled_back += run.mixed_rolled_back;
        self.mixed_switches += run.mixed_switches;
        self.mixed_converged += run.mixed_converged;
        self.mixed_ended_classic += run.mixed_ended_classic;
        self.mixed_ended_consumer += run.mixed_ended_consumer;
        self.max_group_epoch = self.max_group_epoch.max(run.max_group_epoch);
        self.max_log_records = self.max_log_records.max(run.max_log_records);
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simulation: {} seeds, {} steps; requests acknowledged {}, refused {}; commits {}, \
             group deletions {}; crashes {}, failed writes {}, file rewrites {}; sessions expired \
             {}, rebalance timeouts {}, delayed assignments {}, groups expired {}; steady \
             heartbeats {}; log compactions {}; highest group epoch {}, longest log {} records; \
             transactions committed {}, aborted {}, timed out {}, completed by the marker writer \
             {} (interrupted by a crash {}); transactional offsets {}; producer requests refused \
             {}; transactional ids expired {}; EndTxn at version 2 {} (retried after a lost \
             answer {})",
            self.seeds,
            self.steps,
            self.acknowledged,
            self.refused,
            self.commits,
            self.groups_deleted,
            self.crashes,
            self.failed_writes,
            self.rewrites,
            self.sessions_expired,
            self.rebalances_timed_out,
            self.delayed_assignments,
            self.groups_expired,
            self.steady_heartbeats,
            self.log_compactions,
            self.max_group_epoch,
            self.max_log_records,
            self.txn_commits,
            self.txn_aborts,
            self.txn_timeouts,
            self.txns_completed,
            self.writer_interrupted,
            self.txn_offsets,
            self.txn_refused,
            self.txn_ids_expired,
            self.txn_v2_ends,
            self.txn_v2_retries,
        )?;
        if self.classic_syncs + self.consumer_heartbeats > 0 {
            write!(
                f,
                "; classic SyncGroup answers {} (highest generation {}), parked requests refused {}, \
                 static restarts {} (taking their own place {}), leaves {}; consumer heartbeats {}, \
                 leaves {}, fenced or unknown {}; groups settled at the end {}",
                self.classic_syncs,
                self.max_generation,
                self.parked_refused,
                self.classic_restarts,
                self.static_replacements,
                self.classic_leaves,
                self.consumer_heartbeats,
                self.consumer_leaves,
                self.consumers_fenced,
                self.groups_converged,
            )?;
        }
        if self.mixed_syncs + self.mixed_heartbeats > 0 {
            write!(
                f,
                "; mixed group: SyncGroup answers {} (from a consumer group {}), told to rejoin {}, \
                 consumer heartbeats {}, upgrades {}, downgrades {}, type rolled back {}, \
                 static member switching protocols {}, settled {} (as classic {}, as consumer {})",
                self.mixed_syncs,
                self.mixed_coordinator_syncs,
                self.mixed_rejoins_told,
                self.mixed_heartbeats,
                self.mixed_upgrades,
                self.mixed_downgrades,
                self.mixed_rolled_back,
                self.mixed_switches,
                self.mixed_converged,
                self.mixed_ended_classic,
                self.mixed_ended_consumer,
            )?;
        }
        Ok(())
    }
}
