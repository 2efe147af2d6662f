//! Per-API request metrics: how many requests, how long from the frame read to the response
//! handed to the connection's writer (for a request forwarded to the upstream cluster, to its
//! answer's arrival), and every error code the responses carried. Counted in
//! [`Striped`] counters (a request costs its thread two or three uncontended adds) and turned
//! into families when scraped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kcoord_wire::api::ApiKey;
use kcoord_wire::{ErrorCode, ErrorCodes};
use prometheus::core::{Collector, Desc};
use prometheus::proto::{MetricFamily, MetricType};
use prometheus::Registry;

use super::families::{counter, family, histogram};
use super::striped::Striped;
use super::{register, LATENCY_BUCKETS, PREFIX, VALID};

const REQUESTS: &str = "requests_total";
const REQUESTS_HELP: &str =
    "Requests served (Produce with acks=0: handled), by API; the duration histogram's count.";
const DURATION: &str = "request_duration_seconds";
const DURATION_HELP: &str =
    "Time from a request's frame read to its response handed to the connection's writer (a forwarded request: to the cluster's answer), by API.";
const ERRORS: &str = "request_errors_total";
const ERRORS_HELP: &str = "Error codes in responses, by API and Kafka error name (NONE included), as Kafka's ErrorsPerSec counts them.";

/// The request counters of every API.
#[derive(Debug)]
pub struct RequestMetrics {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The APIs counted: those an RPC file declares. An API with only a schema gets no series,
    /// as dispatch closes the connection before a request for it could be counted.
    apis: Box<[ApiKey]>,
    /// API key -> dense index of the API in `apis`.
    dense: Box<[Option<usize>]>,
    /// The buckets' upper bounds in nanoseconds.
    bounds_nanos: Box<[u64]>,
    /// Per API: one count per bucket (the last one past every bound), then the nanoseconds.
    latency: Striped,
    /// Per API: one count per error code + 1 (UNKNOWN_SERVER_ERROR is -1).
    errors: Striped,
    codes: usize,
    descs: [Desc; 3],
}

impl RequestMetrics {
    /// Series for every API with a schema: each is served (an RPC file declares it), which
    /// `rpc::versions`' tests check. Metrics sit below the RPC room, so they take the list
    /// from the schemas rather than from the declarations.
    pub(super) fn new(registry: &Registry) -> RequestMetrics {
        Self::for_apis(registry, ApiKey::ALL.into())
    }

    /// Series for `apis` only; requests of any other API are not counted.
    fn for_apis(registry: &Registry, apis: Box<[ApiKey]>) -> RequestMetrics {
        let mut dense: Vec<Option<usize>> = Vec::new();
        for (index, api) in apis.iter().enumerate() {
            let key = key_index(api.key());
            if dense.len() <= key {
                dense.resize(key + 1, None);
            }
            dense[key] = Some(index);
        }
        let max_code = ErrorCode::ALL.iter().map(|c| c.code()).max().unwrap_or(0);
        let codes = usize::try_from(i32::from(max_code) + 2).unwrap_or(1);
        let desc = |name: &str, help: &str, labels: &[&str]| {
            Desc::new(
                format!("{PREFIX}_{name}"),
                help.to_owned(),
                labels.iter().map(|l| (*l).to_owned()).collect(),
                Default::default(),
            )
            .expect(VALID)
        };
        let inner = Arc::new(Inner {
            dense: dense.into(),
            bounds_nanos: LATENCY_BUCKETS
                .iter()
                .map(|s| (s * 1e9).round() as u64)
                .collect(),
            latency: Striped::new(apis.len() * (LATENCY_BUCKETS.len() + 2)),
            errors: Striped::new(apis.len() * codes),
            codes,
            apis,
            descs: [
                desc(REQUESTS, REQUESTS_HELP, &["api"]),
                desc(DURATION, DURATION_HELP, &["api"]),
                desc(ERRORS, ERRORS_HELP, &["api", "error"]),
            ],
        });
        register(registry, RequestCollector(Arc::clone(&inner)));
        RequestMetrics { inner }
    }

    /// A request for `api` was served in `elapsed`.
    #[inline]
    pub fn served(&self, api: ApiKey, elapsed: Duration) {
        let inner = &*self.inner;
        let Some(api) = inner.api(api) else {
            return;
        };
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = inner.bounds_nanos.partition_point(|b| *b < nanos);
        let base = api * inner.latency_width();
        let here = inner.latency.here();
        add(here, base + bucket, 1);
        add(here, base + inner.bounds_nanos.len() + 1, nanos);
    }

    /// Counts every error code of `response` (NONE included), as Kafka's `ErrorsPerSec`.
    #[inline]
    pub fn response<R: ErrorCodes>(&self, api: ApiKey, version: i16, response: &R) {
        let inner = &*self.inner;
        let Some(api) = inner.api(api) else {
            return;
        };
        let here = inner.errors.here();
        let base = api * inner.codes;
        response.for_each_error_code(version, &mut |code| {
            // Codes past the table count as UNKNOWN_SERVER_ERROR (index 0), as Kafka's
            // `Errors.forCode` makes them.
            let index = usize::try_from(i32::from(code) + 1)
                .ok()
                .filter(|i| *i < inner.codes)
                .unwrap_or(0);
            add(here, base + index, 1);
        });
    }
}

#[inline]
fn add(counters: &[AtomicU64], index: usize, n: u64) {
    if let Some(counter) = counters.get(index) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

fn key_index(key: i16) -> usize {
    usize::try_from(key).unwrap_or(usize::MAX)
}

impl Inner {
    #[inline]
    fn api(&self, api: ApiKey) -> Option<usize> {
        self.dense.get(key_index(api.key())).copied().flatten()
    }

    fn latency_width(&self) -> usize {
        self.bounds_nanos.len() + 2
    }

    /// The non-zero error counts by (API name, error name); a code Kafka does not know is
    /// UNKNOWN_SERVER_ERROR.
    fn error_rows(&self) -> BTreeMap<(&'static str, &'static str), u64> {
        let mut rows = BTreeMap::new();
        for (api_index, api) in self.apis.iter().enumerate() {
            for index in 0..self.codes {
                let count = self.errors.get(api_index * self.codes + index);
                if count == 0 {
                    continue;
                }
                let code = i16::try_from(index).map_or(-1, |i| i - 1);
                let error = ErrorCode::from_code(code)
                    .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
                    .name();
                *rows.entry((api.name(), error)).or_insert(0) += count;
            }
        }
        rows
    }

    /// Per API: (name, bucket counts, seconds in all).
    fn latencies(&self) -> Vec<(&'static str, Vec<u64>, f64)> {
        let width = self.latency_width();
        let buckets = self.bounds_nanos.len() + 1;
        self.apis
            .iter()
            .enumerate()
            .map(|(api_index, api)| {
                let base = api_index * width;
                let counts = (0..buckets).map(|b| self.latency.get(base + b)).collect();
                let nanos = self.latency.get(base + buckets);
                (api.name(), counts, nanos as f64 / 1e9)
            })
            .collect()
    }
}

#[derive(Debug, Clone)]
struct RequestCollector(Arc<Inner>);

impl Collector for RequestCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.0.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let inner = &*self.0;
        let latencies = inner.latencies();
        let requests = latencies
            .iter()
            .map(|(api, counts, _)| counter(&[("api", api)], counts.iter().sum()))
            .collect();
        let durations = latencies
            .iter()
            .map(|(api, counts, seconds)| {
                histogram(&[("api", api)], LATENCY_BUCKETS, counts, *seconds)
            })
            .collect();
        let errors = inner
            .error_rows()
            .into_iter()
            .map(|((api, error), count)| counter(&[("api", api), ("error", error)], count))
            .collect();
        let [requests_desc, duration_desc, errors_desc] = &inner.descs;
        vec![
            family(
                &requests_desc.fq_name,
                &requests_desc.help,
                MetricType::COUNTER,
                requests,
            ),
            family(
                &duration_desc.fq_name,
                &duration_desc.help,
                MetricType::HISTOGRAM,
                durations,
            ),
            family(
                &errors_desc.fq_name,
                &errors_desc.help,
                MetricType::COUNTER,
                errors,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::messages::{OffsetCommitResponse, StreamsGroupHeartbeatResponse};

    #[test]
    fn error_codes_are_counted_by_api_and_name_and_only_non_zero_ones_are_listed() {
        let metrics = RequestMetrics::new(&Registry::new());
        let heartbeat = StreamsGroupHeartbeatResponse {
            error_code: ErrorCode::UNKNOWN_MEMBER_ID.code(),
            ..Default::default()
        };
        metrics.response(ApiKey::StreamsGroupHeartbeat, 0, &heartbeat);
        metrics.response(ApiKey::StreamsGroupHeartbeat, 0, &heartbeat);
        metrics.response(ApiKey::OffsetCommit, 9, &OffsetCommitResponse::default());
        let unknown = StreamsGroupHeartbeatResponse {
            error_code: 999,
            ..Default::default()
        };
        metrics.response(ApiKey::StreamsGroupHeartbeat, 0, &unknown);
        assert_eq!(
            metrics.inner.error_rows().into_iter().collect::<Vec<_>>(),
            vec![
                (("StreamsGroupHeartbeat", "UNKNOWN_MEMBER_ID"), 2),
                (("StreamsGroupHeartbeat", "UNKNOWN_SERVER_ERROR"), 1),
            ],
            "an OffsetCommit response without topics carries no error code"
        );
    }

    /// A schema without an RPC file (EndTxn has only its schema so far) adds no series: the
    /// series are those of the APIs the RPC files declare.
    #[test]
    fn only_declared_apis_have_series() {
        let metrics = RequestMetrics::new(&Registry::new());
        let listed: Vec<&str> = metrics
            .inner
            .latencies()
            .into_iter()
            .map(|(name, _, _)| name)
            .collect();
        let declared: Vec<&str> = ApiKey::ALL.iter().map(|api| api.name()).collect();
        assert_eq!(listed, declared);
        assert!(listed.contains(&"Metadata"));
        // Every API with a schema is declared today: an undeclared one is simulated by series
        // made without it.
        let metrics = RequestMetrics::for_apis(&Registry::new(), [ApiKey::Metadata].into());
        metrics.served(ApiKey::WriteTxnMarkers, Duration::from_micros(10));
        metrics.response(
            ApiKey::WriteTxnMarkers,
            1,
            &kcoord_wire::messages::WriteTxnMarkersResponse::default(),
        );
        assert!(metrics.inner.error_rows().is_empty());
        let latencies = metrics.inner.latencies();
        assert_eq!(latencies.len(), 1);
        assert_eq!(latencies[0].0, "Metadata");
        assert_eq!(
            latencies[0].1.iter().sum::<u64>(),
            0,
            "counted as another API"
        );
    }

    #[test]
    fn latencies_fall_in_their_buckets() {
        let metrics = RequestMetrics::new(&Registry::new());
        let api = ApiKey::Metadata;
        metrics.served(api, Duration::from_micros(10));
        metrics.served(api, Duration::from_micros(100));
        metrics.served(api, Duration::from_secs(100));
        let (_, counts, seconds) = metrics
            .inner
            .latencies()
            .into_iter()
            .find(|(name, _, _)| *name == "Metadata")
            .unwrap();
        // 10 µs is below the first bound (50 µs), 100 µs at the second, 100 s past the last.
        assert_eq!(counts[0], 1);
        assert_eq!(counts[1], 1);
        assert_eq!(counts[LATENCY_BUCKETS.len()], 1);
        assert_eq!(counts.iter().sum::<u64>(), 3);
        assert!((seconds - 100.000_11).abs() < 1e-9, "{seconds}");
    }
}
