//! The transaction coordinator's metrics: transactions committed, aborted and timed out, how
//! long their markers took, and (at scrape time) how many are open. Kafka's JMX has the
//! marker latency as `TransactionMarkerChannelManager`'s queue time and the rest as
//! `TransactionCoordinator` sensors; docs/operations.md lists the names.
use prometheus::{Histogram, IntCounter, IntGauge, Registry};

use super::{counter, gauge, histogram};

#[derive(Debug)]
pub struct TransactionMetrics {
    committed: IntCounter,
    aborted: IntCounter,
    /// Aborted by the coordinator because they outlived their timeout.
    pub timed_out: IntCounter,
    /// Ongoing or prepared, set at scrape time.
    pub open: IntGauge,
    markers: Histogram,
}

impl TransactionMetrics {
    pub(super) fn new(registry: &Registry) -> TransactionMetrics {
        TransactionMetrics {
            committed: counter(registry, "transactions_committed_total", "Transactions committed (their markers all written)."),
            aborted: counter(registry, "transactions_aborted_total", "Transactions aborted (their markers all written), timed-out ones included."),
            timed_out: counter(registry, "transactions_timed_out_total", "Transactions the coordinator aborted because they outlived transaction.timeout.ms."),
            open: gauge(registry, "transactions_open", "Transactions ongoing or with markers still to write."),
            markers: histogram(registry, "transaction_marker_seconds", "From the start of writing a decided transaction's markers to its completion."),
        }
    }

    /// A transaction's markers are all written.
    pub fn completed(&self, commit: bool, markers: std::time::Duration) {
        if commit {
            self.committed.inc();
        } else {
            self.aborted.inc();
        }
        self.markers.observe(markers.as_secs_f64());
    }
}
