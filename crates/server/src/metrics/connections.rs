//! Connections per listener: open now, accepted and closed since the start.

use prometheus::{IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use super::{register, PREFIX, VALID};

#[derive(Debug)]
pub struct ConnectionMetrics {
    open: IntGaugeVec,
    accepted: IntCounterVec,
    closed: IntCounterVec,
}

/// One listener's handles, resolved when its accept loop starts.
#[derive(Debug, Clone)]
pub struct ListenerConnections {
    open: IntGauge,
    accepted: IntCounter,
    closed: IntCounter,
}

/// An open connection: counted as closed when dropped.
#[derive(Debug)]
pub struct OpenConnection(ListenerConnections);

impl ConnectionMetrics {
    pub(super) fn new<'a>(
        registry: &Registry,
        listeners: impl IntoIterator<Item = &'a str>,
    ) -> ConnectionMetrics {
        let vec_of = |name: &str, help: &str| {
            register(
                registry,
                IntCounterVec::new(Opts::new(format!("{PREFIX}_{name}"), help), &["listener"])
                    .expect(VALID),
            )
        };
        let metrics = ConnectionMetrics {
            open: register(
                registry,
                IntGaugeVec::new(
                    Opts::new(
                        format!("{PREFIX}_connections"),
                        "Open connections, by listener.",
                    ),
                    &["listener"],
                )
                .expect(VALID),
            ),
            accepted: vec_of(
                "connections_accepted_total",
                "Connections accepted and admitted by the connection quotas, by listener.",
            ),
            closed: vec_of(
                "connections_closed_total",
                "Connections closed, by listener.",
            ),
        };
        // Every listener is listed from the start, at zero.
        for name in listeners {
            metrics.for_listener(name);
        }
        metrics
    }

    /// The handles of listener `name`.
    pub fn for_listener(&self, name: &str) -> ListenerConnections {
        ListenerConnections {
            open: self.open.with_label_values(&[name]),
            accepted: self.accepted.with_label_values(&[name]),
            closed: self.closed.with_label_values(&[name]),
        }
    }
}

impl ListenerConnections {
    /// A connection was admitted; it counts as open until the value returned is dropped.
    pub fn opened(&self) -> OpenConnection {
        self.accepted.inc();
        self.open.inc();
        OpenConnection(self.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.dec();
        self.0.closed.inc();
    }
}
