//! The durable logs: the coordinator shards' (`group.coordinator.log.*`) and the controller's
//! metadata log (`metadata.log.dir`), told apart by the label `log`.

use std::time::Duration;

use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec, Opts, Registry};

use super::{histogram_opts, register, PREFIX, VALID};

pub(super) struct LogFamilies {
    records: IntCounterVec,
    batches: IntCounterVec,
    bytes: IntCounterVec,
    fsync: HistogramVec,
}

/// One log's handles.
#[derive(Debug, Clone)]
pub struct LogMetrics {
    records: IntCounter,
    batches: IntCounter,
    bytes: IntCounter,
    fsync: Histogram,
}

impl LogFamilies {
    pub(super) fn new(registry: &Registry) -> LogFamilies {
        let counters = |name: &str, help: &str| {
            register(
                registry,
                IntCounterVec::new(Opts::new(format!("{PREFIX}_{name}"), help), &["log"])
                    .expect(VALID),
            )
        };
        LogFamilies {
            records: counters(
                "log_appended_records_total",
                "Records written to a durable log, by log (coordinator, controller).",
            ),
            batches: counters(
                "log_appended_batches_total",
                "Writes to a durable log, by log: a controller batch, or one coordinator shard's records of one writer round.",
            ),
            bytes: counters(
                "log_written_bytes_total",
                "Bytes written to a durable log's files by appends, by log.",
            ),
            fsync: register(
                registry,
                HistogramVec::new(
                    histogram_opts(
                        "log_fsync_duration_seconds",
                        "Time of each fsync (fdatasync) of a durable log's file, by log.",
                    ),
                    &["log"],
                )
                .expect(VALID),
            ),
        }
    }

    pub(super) fn for_log(&self, log: &str) -> LogMetrics {
        LogMetrics {
            records: self.records.with_label_values(&[log]),
            batches: self.batches.with_label_values(&[log]),
            bytes: self.bytes.with_label_values(&[log]),
            fsync: self.fsync.with_label_values(&[log]),
        }
    }
}

impl LogMetrics {
    /// A batch of `records` records, `bytes` long, was written.
    pub fn appended(&self, records: usize, bytes: u64) {
        self.records.inc_by(records as u64);
        self.batches.inc();
        self.bytes.inc_by(bytes);
    }

    /// An fsync took `elapsed`.
    pub fn synced(&self, elapsed: Duration) {
        self.fsync.observe(elapsed.as_secs_f64());
    }
}
