//! The daemon's Prometheus metrics: one [`Registry`] per daemon, whose handles the code that
//! does the work updates as it goes, and which `/metrics` (`crate::http::metrics`) renders in
//! the text exposition format 0.0.4.
//!
//! Built on the `prometheus` crate (TiKV's client): it writes the 0.0.4 text format Prometheus
//! scrapes, and its `process` feature brings the standard process collector (RSS, threads, open
//! fds, CPU seconds), which `prometheus-client` lacks. What a request updates is found by
//! index (an array by API key, a struct per listener or method), with no label lookup and no
//! lock, and the counters updated on every request are striped per thread (`striped.rs`) and
//! turned into families by collectors of this module when scraped. Values that are cheaper to
//! compute when asked than to keep current (streams groups by state, members, partitions) are
//! read from the shards and the partitions at scrape time ([`Metrics::refresh`]).
//!
//! The names, what each measures and the Kafka JMX metric it corresponds to are listed in
//! docs/operations.md ("Metrics and health").

mod connections;
mod families;
mod groups;
mod logs;
mod plugin;
mod quotas;
mod requests;
mod striped;
mod transactions;

use std::sync::Arc;

use prometheus::{Histogram, HistogramOpts, IntCounter, IntGauge, Opts, Registry};
use tracing::warn;

pub use connections::{ConnectionMetrics, ListenerConnections, OpenConnection};
pub use groups::{GroupCount, GroupMetrics};
pub use logs::LogMetrics;
pub use plugin::{PluginMethod, PluginMetrics, PluginOutcome};
pub use quotas::{QuotaMetrics, QUOTA_TYPES};
pub use requests::RequestMetrics;
pub use transactions::TransactionMetrics;

/// Every metric family name starts with this (the process collector's `process_*` aside).
pub const PREFIX: &str = "kcoord";

/// Upper bounds of the latency histograms, in seconds: from a heartbeat's tens of
/// microseconds to a plugin call's timeout.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 10.0, 30.0,
];

/// The daemon's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub requests: RequestMetrics,
    pub connections: ConnectionMetrics,
    pub groups: GroupMetrics,
    pub plugin: PluginMetrics,
    /// The coordinator shards' logs (`group.coordinator.log.*`).
    pub coordinator_log: LogMetrics,
    /// The controller's metadata log (`metadata.log.dir`).
    pub controller_log: LogMetrics,
    pub data: DataPlaneMetrics,
    pub transactions: TransactionMetrics,
    /// Client quota throttling.
    pub quotas: QuotaMetrics,
    /// `kcoord_heap_live_bytes`, set at scrape time; none when the allocator is not counted
    /// (`crate::support::heap`).
    heap_live_bytes: Option<IntGauge>,
}

impl Metrics {
    /// A registry with every metric of the daemon, connections counted for `listeners`.
    pub fn new<'a>(listeners: impl IntoIterator<Item = &'a str>) -> Metrics {
        let registry = Registry::new();
        let logs = logs::LogFamilies::new(&registry);
        let metrics = Metrics {
            requests: RequestMetrics::new(&registry),
            connections: ConnectionMetrics::new(&registry, listeners),
            groups: GroupMetrics::new(&registry),
            plugin: PluginMetrics::new(&registry),
            coordinator_log: logs.for_log("coordinator"),
            controller_log: logs.for_log("controller"),
            data: DataPlaneMetrics::new(&registry),
            transactions: TransactionMetrics::new(&registry),
            quotas: QuotaMetrics::new(&registry),
            heap_live_bytes: crate::support::heap::live_bytes().map(|_| {
                gauge(
                    &registry,
                    "heap_live_bytes",
                    "Bytes allocated on the heap and not yet freed.",
                )
            }),
            registry,
        };
        register_process_collector(&metrics.registry);
        metrics
    }

    /// Brings the values computed at scrape time up to date (see the module documentation):
    /// `census` reports every group (its type, state and member count), and the node leads
    /// `partitions` partitions.
    pub fn refresh(&self, census: impl FnOnce(&mut dyn FnMut(GroupCount)), partitions: usize) {
        self.groups.refresh(census);
        if let (Some(gauge), Some(bytes)) =
            (&self.heap_live_bytes, crate::support::heap::live_bytes())
        {
            gauge.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        self.data
            .partitions
            .set(i64::try_from(partitions).unwrap_or(i64::MAX));
    }

    /// Every metric in the Prometheus text format 0.0.4.
    pub fn encode(&self) -> String {
        let families = self.registry.gather();
        let mut out = String::new();
        if let Err(e) = prometheus::TextEncoder::new().encode_utf8(&families, &mut out) {
            // Only a family built wrongly in this module can fail to encode.
            warn!(error = %e, "cannot encode the metrics");
        }
        out
    }
}

/// `process_*`: resident memory, threads, open fds, CPU seconds (Linux only).
fn register_process_collector(registry: &Registry) {
    #[cfg(target_os = "linux")]
    if let Err(e) = registry.register(Box::new(
        prometheus::process_collector::ProcessCollector::for_self(),
    )) {
        warn!(error = %e, "the process metrics could not be registered");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = registry;
}

/// Registers `collector` and hands it back. Names and labels are constants of this module, so
/// a refusal is a bug here; it is logged and the metric left out of the scrape.
fn register<C: prometheus::core::Collector + Clone + 'static>(
    registry: &Registry,
    collector: C,
) -> C {
    if let Err(e) = registry.register(Box::new(collector.clone())) {
        warn!(error = %e, "a metric could not be registered; it is left out of /metrics");
    }
    collector
}

/// Every metric here is built from constant names, help texts and buckets: valid ones, as the
/// tests check by building [`Metrics`]. Not data from outside.
const VALID: &str = "the metric definitions of this module are valid";

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let made = IntCounter::with_opts(Opts::new(format!("{PREFIX}_{name}"), help));
    register(registry, made.expect(VALID))
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let made = IntGauge::with_opts(Opts::new(format!("{PREFIX}_{name}"), help));
    register(registry, made.expect(VALID))
}

fn histogram(registry: &Registry, name: &str, help: &str) -> Histogram {
    register(
        registry,
        Histogram::with_opts(histogram_opts(name, help)).expect(VALID),
    )
}

fn histogram_opts(name: &str, help: &str) -> HistogramOpts {
    HistogramOpts::new(format!("{PREFIX}_{name}"), help).buckets(LATENCY_BUCKETS.to_vec())
}

/// Partitions, and what Produce appended and Fetch sent (the data plane).
#[derive(Debug)]
pub struct DataPlaneMetrics {
    /// Set at scrape time.
    partitions: IntGauge,
    /// Counted per request: striped (see `striped.rs`).
    counts: Arc<DataCounts>,
}

#[derive(Debug)]
struct DataCounts {
    counts: striped::Striped,
    descs: [prometheus::core::Desc; DATA_COUNTERS.len()],
}

/// (name, help) of each data plane counter, in the order of their indexes.
const DATA_COUNTERS: [(&str, &str); 4] = [
    (
        "produce_bytes_total",
        "Bytes of record batches appended by Produce.",
    ),
    ("produce_records_total", "Records appended by Produce."),
    (
        "fetch_bytes_total",
        "Bytes of record batches sent in Fetch responses.",
    ),
    (
        "fetch_records_total",
        "Records in the batches sent in Fetch responses.",
    ),
];

impl DataPlaneMetrics {
    fn new(registry: &Registry) -> DataPlaneMetrics {
        let descs = DATA_COUNTERS.map(|(name, help)| {
            prometheus::core::Desc::new(
                format!("{PREFIX}_{name}"),
                help.to_owned(),
                Vec::new(),
                Default::default(),
            )
            .expect(VALID)
        });
        let counts = Arc::new(DataCounts {
            counts: striped::Striped::new(DATA_COUNTERS.len()),
            descs,
        });
        register(registry, DataCollector(Arc::clone(&counts)));
        DataPlaneMetrics {
            partitions: gauge(registry, "partitions", "Partitions this node leads."),
            counts,
        }
    }

    /// Produce appended a batch of `bytes` holding `records` records.
    pub fn produced(&self, bytes: usize, records: u64) {
        self.counts.counts.add(0, bytes as u64);
        self.counts.counts.add(1, records);
    }

    /// A Fetch response carries `bytes` of batches holding `records` records.
    pub fn fetched(&self, bytes: u64, records: u64) {
        self.counts.counts.add(2, bytes);
        self.counts.counts.add(3, records);
    }
}

#[derive(Debug, Clone)]
struct DataCollector(Arc<DataCounts>);

impl prometheus::core::Collector for DataCollector {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.0.descs.iter().collect()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        self.0
            .descs
            .iter()
            .enumerate()
            .map(|(index, desc)| {
                let value = families::counter(&[], self.0.counts.get(index));
                families::family(
                    &desc.fq_name,
                    &desc.help,
                    prometheus::proto::MetricType::COUNTER,
                    vec![value],
                )
            })
            .collect()
    }
}
