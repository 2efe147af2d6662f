//! The background work on partition logs, as Kafka's `LogManager` schedules it: retention every
//! `log.retention.check.interval.ms`, `flush.ms` every `log.flush.scheduler.interval.ms`,
//! producer expiry every `producer.id.expiration.check.interval.ms`, and compaction of
//! `cleanup.policy=compact` topics every `log.cleaner.backoff.ms`. One task; each pass runs on
//! a blocking thread and takes each partition's lock in turn, never two at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, warn};

use super::Partitions;
use crate::support::clock::now_ms;

/// Kafka's `log.initial.task.delay.ms`: the first retention pass waits this long after start.
const INITIAL_DELAY_MS: i64 = 30_000;

pub fn spawn(
    partitions: Arc<Partitions>,
    stop: &watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(partitions, stop.clone()))
}

/// Which kinds of work a pass does.
#[derive(Debug, Clone, Copy)]
struct Due {
    retention: bool,
    flush: bool,
    expiry: bool,
    clean: bool,
}

/// One pass over every partition, each locked in turn. A compaction holds its partition's lock
/// while it rewrites the partition's sealed segments.
fn one_pass(partitions: &Partitions, due: Due, now: i64, expiration_ms: i64) {
    for p in partitions.all() {
        let mut log = p.log();
        if due.retention {
            let deleted = log.apply_retention(now);
            if deleted > 0 {
                debug!(partition = %p.name(), deleted, "retention");
            }
        }
        if due.flush {
            if let Err(e) = log.flush_if_due(now) {
                warn!(partition = %p.name(), error = %e, "scheduled flush failed");
            }
        }
        if due.expiry {
            log.expire_producers(now, expiration_ms);
        }
        if due.clean && log.config().cleanup_compact {
            match log.compact(now) {
                Ok(stats) if stats.removed_records > 0 => {
                    debug!(partition = %p.name(), removed = stats.removed_records, "compacted")
                }
                Ok(_) => {}
                Err(e) => warn!(partition = %p.name(), error = %e, "compaction failed"),
            }
        }
        let seals = log.take_seals();
        drop(log);
        if !seals.is_empty() {
            super::seals::run_here(&p.name(), &seals);
        }
    }
}

/// One kind of periodic work and when it is next due.
struct Job {
    every_ms: i64,
    next_ms: i64,
}

impl Job {
    fn new(every_ms: i64, first_ms: i64) -> Job {
        Job {
            every_ms,
            next_ms: first_ms,
        }
    }

    fn due(&mut self, now: i64) -> bool {
        if self.every_ms == i64::MAX || now < self.next_ms {
            return false;
        }
        self.next_ms = now.saturating_add(self.every_ms);
        true
    }
}

async fn run(partitions: Arc<Partitions>, mut stop: watch::Receiver<bool>) {
    let s = partitions.settings().clone();
    let start = now_ms();
    let mut retention = Job::new(
        s.retention_check_interval_ms,
        start + INITIAL_DELAY_MS.min(s.retention_check_interval_ms),
    );
    let mut flush = Job::new(
        s.flush_scheduler_interval_ms,
        start.saturating_add(s.flush_scheduler_interval_ms),
    );
    let mut expiry = Job::new(
        s.producer_id_expiration_check_interval_ms,
        start + s.producer_id_expiration_check_interval_ms,
    );
    let cleaner_every = if s.cleaner_enable {
        s.cleaner_backoff_ms.max(1)
    } else {
        i64::MAX
    };
    let mut cleaner = Job::new(cleaner_every, start.saturating_add(cleaner_every));
    loop {
        let next = [&retention, &flush, &expiry, &cleaner]
            .iter()
            .filter(|j| j.every_ms != i64::MAX)
            .map(|j| j.next_ms)
            .min()
            .unwrap_or(i64::MAX);
        let sleep = Duration::from_millis(
            u64::try_from(next.saturating_sub(now_ms()))
                .unwrap_or(0)
                .min(3_600_000),
        );
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = crate::support::shutdown::stopped(&mut stop) => break,
        }
        let now = now_ms();
        let due = Due {
            retention: retention.due(now),
            flush: flush.due(now),
            expiry: expiry.due(now),
            clean: cleaner.due(now),
        };
        if !(due.retention || due.flush || due.expiry || due.clean) {
            continue;
        }
        // File work (deleting, rewriting, fsync) runs off the runtime's workers.
        let pass = {
            let partitions = Arc::clone(&partitions);
            let expiration_ms = s.producer_id_expiration_ms;
            tokio::task::spawn_blocking(move || one_pass(&partitions, due, now, expiration_ms))
        };
        if let Err(e) = pass.await {
            warn!(error = %e, "a maintenance pass failed");
        }
    }
    partitions.flush_all();
}
