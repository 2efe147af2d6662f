//! Client quota throttling (Kafka's `ClientQuotaManager` sensors `throttle-time` per quota
//! type, and `ConnectionQuotas`' refused connections): how long clients were throttled and how
//! many responses carried a throttle, by quota type (`produce`, `fetch`, `request`).

use prometheus::{IntCounter, IntCounterVec, Opts, Registry};

use super::{register, PREFIX, VALID};

/// The quota types, as the `quota` label names them.
pub const QUOTA_TYPES: [&str; 3] = ["produce", "fetch", "request"];

#[derive(Debug)]
pub struct QuotaMetrics {
    /// By index of [`QUOTA_TYPES`].
    throttle_ms: [IntCounter; 3],
    throttled: [IntCounter; 3],
    connections: IntCounter,
}

impl QuotaMetrics {
    pub(super) fn new(registry: &Registry) -> QuotaMetrics {
        let vec_of = |name: &str, help: &str| {
            register(
                registry,
                IntCounterVec::new(Opts::new(format!("{PREFIX}_{name}"), help), &["quota"])
                    .expect(VALID),
            )
        };
        let time = vec_of(
            "throttle_time_ms_total",
            "Milliseconds clients were throttled for exceeding a client quota, by quota type.",
        );
        let count = vec_of(
            "throttled_requests_total",
            "Responses that throttled their client for exceeding a client quota, by quota type.",
        );
        QuotaMetrics {
            throttle_ms: QUOTA_TYPES.map(|q| time.with_label_values(&[q])),
            throttled: QUOTA_TYPES.map(|q| count.with_label_values(&[q])),
            connections: super::counter(
                registry,
                "connections_throttled_total",
                "Connections closed for exceeding their address's connection_creation_rate quota.",
            ),
        }
    }

    /// A response throttled its client for `ms` under the quota type of index `quota`.
    pub fn throttled(&self, quota: usize, ms: u32) {
        if let (Some(time), Some(count)) = (self.throttle_ms.get(quota), self.throttled.get(quota))
        {
            time.inc_by(u64::from(ms));
            count.inc();
        }
    }
}

impl QuotaMetrics {
    /// A connection was over its address's `connection_creation_rate`.
    pub fn connection_throttled(&self) {
        self.connections.inc();
    }
}
