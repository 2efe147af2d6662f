//! The transaction markers (Kafka's `TransactionMarkerChannelManager`, on one node): once a
//! transaction's outcome is decided (PrepareCommit or PrepareAbort in its shard's log), a
//! COMMIT or ABORT marker goes to each of its partitions: a control batch into each data
//! partition, and for each group shard in the transaction (AddOffsetsToTxn) its pending
//! offsets committed or dropped. Then the transaction completes in its shard's log.
//!
//! The task looks at every shard when woken (an EndTxn, an InitProducerId that aborted, a
//! timeout, a shard that loaded prepared transactions from its log) and every second, so a
//! marker that could not be written is tried again, and a crash between the decision and the
//! last marker is completed after the restart: the decision is in the log, and writing a
//! marker twice changes nothing the second time.

use std::sync::Arc;
use std::time::Duration;

use kcoord_coordinator::transactions::CONSUMER_OFFSETS;
use kcoord_coordinator::PreparedTransaction;
use tokio::sync::{watch, Notify};
use tracing::info;

use crate::metrics::Metrics;
use crate::runtime::partitions::{MarkerError, Partitions};
use crate::runtime::shards::{Coordinators, ShardHandle};
use crate::support::clock;
use crate::support::logging::{log_per_group, LogLimiter};

/// How often prepared transactions are looked for without a wake-up.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// The coordinator epoch markers carry: one coordinator, always the same.
pub const COORDINATOR_EPOCH: i32 = 0;

/// The marker of `producer_id`'s transaction for `__consumer_offsets` partition `partition`:
/// the shards holding that partition's groups commit (`commit`) or drop the offsets the
/// transaction wrote there. Returns how many were committed.
pub async fn settle_offsets(
    coordinators: &Coordinators,
    partition: i32,
    producer_id: i64,
    commit: bool,
) -> Result<usize, crate::runtime::shards::ShardError> {
    let mut committed = 0;
    for shard in coordinators.shards_of_offsets_partition(partition) {
        committed += shard
            .call(move |s, _| s.complete_transactional_offsets(producer_id, commit))
            .await?;
    }
    Ok(committed)
}

/// Writes the markers of decided transactions.
pub struct MarkerTask {
    coordinators: Coordinators,
    partitions: Arc<Partitions>,
    metrics: Arc<Metrics>,
    /// A marker refused again and again is logged once a minute per transactional id.
    lines: LogLimiter<(&'static str, String)>,
}

impl MarkerTask {
    pub fn new(
        coordinators: Coordinators,
        partitions: Arc<Partitions>,
        metrics: Arc<Metrics>,
    ) -> MarkerTask {
        MarkerTask {
            coordinators,
            partitions,
            metrics,
            lines: crate::support::logging::group_lines(),
        }
    }

    pub fn spawn(self, stop: &watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let wake: Arc<Notify> = self.coordinators.markers_due();
            loop {
                self.sweep().await;
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(SWEEP_INTERVAL) => {}
                    _ = crate::support::shutdown::stopped(&mut stop) => break,
                }
            }
        })
    }

    /// Completes every prepared transaction of every loaded shard.
    async fn sweep(&self) {
        for shard in self.coordinators.all() {
            // A look under the lock first, so that idle shards run no job; the read then waits
            // until the decisions it returns are durable, so no marker precedes its decision.
            let any = shard.peek(|s| s.state().transactions.prepared().next().is_some());
            if any != Ok(true) {
                continue;
            }
            let Ok(prepared) = shard.read(|s| s.prepared_transactions()).await else {
                continue;
            };
            for txn in prepared {
                self.complete(shard, &txn).await;
            }
        }
    }

    /// Writes `txn`'s markers and completes it; a marker that failed leaves it prepared, for
    /// the next sweep.
    async fn complete(&self, shard: &ShardHandle, txn: &PreparedTransaction) {
        let started = std::time::Instant::now();
        for (topic, partition) in &txn.partitions {
            if !self.write_marker(txn, topic, *partition).await {
                return;
            }
        }
        match shard.call(|s, now| s.complete_transaction(txn, now)).await {
            Ok(true) => {
                self.metrics
                    .transactions
                    .completed(txn.commit, started.elapsed());
                info!(
                    transactional_id = %txn.transactional_id,
                    producer_id = txn.producer_id,
                    producer_epoch = txn.producer_epoch,
                    commit = txn.commit,
                    partitions = txn.partitions.len(),
                    "transaction completed"
                );
            }
            Ok(false) => {}
            Err(e) => {
                log_per_group!(warn, self.lines, "complete", &txn.transactional_id, transactional_id = %txn.transactional_id, error = %e, "could not complete the transaction; it is tried again")
            }
        }
    }

    /// One marker; false when it must be tried again later.
    async fn write_marker(&self, txn: &PreparedTransaction, topic: &str, partition: i32) -> bool {
        if topic == CONSUMER_OFFSETS {
            let settled =
                settle_offsets(&self.coordinators, partition, txn.producer_id, txn.commit).await;
            if let Err(e) = settled {
                log_per_group!(warn, self.lines, "offsets", &txn.transactional_id, transactional_id = %txn.transactional_id, partition, error = %e, "could not settle the transaction's offsets; tried again");
            }
            return settled.is_ok();
        }
        let marker = kcoord_storage::TxnMarker {
            producer_id: txn.producer_id,
            producer_epoch: txn.producer_epoch,
            coordinator_epoch: COORDINATOR_EPOCH,
            commit: txn.commit,
            transaction_version: txn.transaction_version,
        };
        let written =
            self.partitions
                .write_txn_marker_with(topic, partition, &marker, clock::now_ms());
        match written {
            Ok(_) => true,
            // A partition deleted since it joined the transaction: Kafka drops its marker.
            Err(MarkerError::UnknownPartition { .. }) => true,
            Err(e) => {
                log_per_group!(warn, self.lines, "marker", &txn.transactional_id, transactional_id = %txn.transactional_id, topic, partition, error = %e, "a transaction marker was refused; tried again");
                false
            }
        }
    }
}
