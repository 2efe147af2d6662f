//! Per-API request metrics: how many requests, how long from the frame read to the response
//! handed to the connection's writer, and every error code the responses carried.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kcoord_wire::api::ApiKey;
use kcoord_wire::{ErrorCode, ErrorCodes};
use prometheus::core::{Collector, Desc};
use prometheus::proto::{Counter, LabelPair, Metric, MetricFamily, MetricType};
use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec, Opts, Registry};

use super::{histogram_opts, register, PREFIX, VALID};

const ERRORS: &str = "request_errors_total";

/// The handles of every API, by API key.
#[derive(Debug)]
pub struct RequestMetrics {
    by_key: Box<[Option<ApiMetrics>]>,
    errors: Arc<ErrorCounts>,
}

#[derive(Debug)]
struct ApiMetrics {
    requests: IntCounter,
    latency: Histogram,
}

impl RequestMetrics {
    pub(super) fn new(registry: &Registry) -> RequestMetrics {
        let requests = IntCounterVec::new(
            Opts::new(
                format!("{PREFIX}_requests_total"),
                "Requests answered (or, for Produce with acks=0, handled), by API.",
            ),
            &["api"],
        )
        .expect(VALID);
        let latency = HistogramVec::new(
            histogram_opts(
                "request_duration_seconds",
                "Time from a request's frame read to its response handed to the connection's writer, by API.",
            ),
            &["api"],
        )
        .expect(VALID);
        let requests = register(registry, requests);
        let latency = register(registry, latency);
        let mut by_key: Vec<Option<ApiMetrics>> = Vec::new();
        for api in ApiKey::ALL {
            let index = key_index(api.key());
            if by_key.len() <= index {
                by_key.resize_with(index + 1, || None);
            }
            by_key[index] = Some(ApiMetrics {
                requests: requests.with_label_values(&[api.name()]),
                latency: latency.with_label_values(&[api.name()]),
            });
        }
        let errors = Arc::new(ErrorCounts::new());
        register(registry, ErrorCollector(Arc::clone(&errors)));
        RequestMetrics {
            by_key: by_key.into(),
            errors,
        }
    }

    /// A request for `api` was served in `elapsed`.
    #[inline]
    pub fn served(&self, api: ApiKey, elapsed: Duration) {
        if let Some(Some(m)) = self.by_key.get(key_index(api.key())) {
            m.requests.inc();
            m.latency.observe(elapsed.as_secs_f64());
        }
    }

    /// Counts every error code of `response` (NONE included), as Kafka's `ErrorsPerSec`.
    #[inline]
    pub fn response<R: ErrorCodes>(&self, api: ApiKey, version: i16, response: &R) {
        if let Some(Some(row)) = self.errors.by_key.get(key_index(api.key())) {
            response.for_each_error_code(version, &mut |code| row.count(code));
        }
    }
}

fn key_index(key: i16) -> usize {
    usize::try_from(key).unwrap_or(usize::MAX)
}

/// One counter per (API, error code), kept as plain atomics and listed only once non-zero:
/// 40 APIs times 140 codes of zeros would bury the few that matter.
#[derive(Debug)]
struct ErrorCounts {
    desc: Desc,
    by_key: Box<[Option<ErrorRow>]>,
}

#[derive(Debug)]
struct ErrorRow {
    api: ApiKey,
    /// Indexed by code + 1 (UNKNOWN_SERVER_ERROR is -1); codes past the end count as -1.
    by_code: Box<[AtomicU64]>,
}

impl ErrorRow {
    #[inline]
    fn count(&self, code: i16) {
        let index = usize::try_from(i32::from(code) + 1)
            .ok()
            .filter(|i| *i < self.by_code.len())
            .unwrap_or(0);
        self.by_code[index].fetch_add(1, Ordering::Relaxed);
    }
}

impl ErrorCounts {
    fn new() -> ErrorCounts {
        let codes = ErrorCode::ALL.iter().map(|c| c.code()).max().unwrap_or(0);
        let width = usize::try_from(i32::from(codes) + 2).unwrap_or(1);
        let mut by_key: Vec<Option<ErrorRow>> = Vec::new();
        for api in ApiKey::ALL {
            let index = key_index(api.key());
            if by_key.len() <= index {
                by_key.resize_with(index + 1, || None);
            }
            by_key[index] = Some(ErrorRow {
                api: *api,
                by_code: (0..width).map(|_| AtomicU64::new(0)).collect(),
            });
        }
        let desc = Desc::new(
            format!("{PREFIX}_{ERRORS}"),
            "Error codes in responses, by API and Kafka error name (NONE included), as Kafka's ErrorsPerSec counts them.".to_owned(),
            vec!["api".to_owned(), "error".to_owned()],
            Default::default(),
        )
        .expect(VALID);
        ErrorCounts {
            desc,
            by_key: by_key.into(),
        }
    }

    /// The non-zero counts by (API name, error name); a code Kafka does not know is
    /// UNKNOWN_SERVER_ERROR, as `Errors.forCode` makes it.
    fn rows(&self) -> BTreeMap<(&'static str, &'static str), u64> {
        let mut rows = BTreeMap::new();
        for row in self.by_key.iter().flatten() {
            for (index, count) in row.by_code.iter().enumerate() {
                let count = count.load(Ordering::Relaxed);
                if count == 0 {
                    continue;
                }
                let code = i16::try_from(index).map_or(-1, |i| i - 1);
                let error = ErrorCode::from_code(code)
                    .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
                    .name();
                *rows.entry((row.api.name(), error)).or_insert(0) += count;
            }
        }
        rows
    }
}

#[derive(Debug, Clone)]
struct ErrorCollector(Arc<ErrorCounts>);

impl Collector for ErrorCollector {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.0.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let metrics = self
            .0
            .rows()
            .into_iter()
            .map(|((api, error), count)| {
                let mut counter = Counter::default();
                counter.set_value(count as f64);
                let mut metric = Metric::from_label(vec![label("api", api), label("error", error)]);
                metric.set_counter(counter);
                metric
            })
            .collect();
        let mut family = MetricFamily::default();
        family.set_name(self.0.desc.fq_name.clone());
        family.set_help(self.0.desc.help.clone());
        family.set_field_type(MetricType::COUNTER);
        family.set_metric(metrics);
        vec![family]
    }
}

fn label(name: &str, value: &str) -> LabelPair {
    let mut pair = LabelPair::default();
    pair.set_name(name.to_owned());
    pair.set_value(value.to_owned());
    pair
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
        let rows = metrics.errors.rows();
        assert_eq!(
            rows.into_iter().collect::<Vec<_>>(),
            vec![
                (("StreamsGroupHeartbeat", "UNKNOWN_MEMBER_ID"), 2),
                (("StreamsGroupHeartbeat", "UNKNOWN_SERVER_ERROR"), 1),
            ],
            "an OffsetCommit response without topics carries no error code"
        );
    }
}
