//! Calls into the topology description plugin, by method and outcome, with their latency.

use std::time::Duration;

use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec, Opts, Registry};

use super::{histogram_opts, register, PREFIX, VALID};

/// The plugin's methods the daemon calls on request paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginMethod {
    RequiresTopologyPush,
    SetTopology,
    GetTopology,
    DeleteTopology,
}

impl PluginMethod {
    const ALL: [PluginMethod; 4] = [
        PluginMethod::RequiresTopologyPush,
        PluginMethod::SetTopology,
        PluginMethod::GetTopology,
        PluginMethod::DeleteTopology,
    ];

    /// The method's name in the plugin interface.
    pub fn name(self) -> &'static str {
        match self {
            PluginMethod::RequiresTopologyPush => "requires_topology_push",
            PluginMethod::SetTopology => "set_topology",
            PluginMethod::GetTopology => "get_topology",
            PluginMethod::DeleteTopology => "delete_topology",
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginOutcome {
    /// The plugin answered (for requires_topology_push: in time).
    Ok,
    /// The plugin answered with an error.
    Error,
    /// No answer in time (requires_topology_push: the heartbeat's budget; the others: the
    /// call's timeout), or the call was abandoned at shutdown.
    Timeout,
    /// Never handed to the plugin: no call slot or check thread free in time.
    Busy,
    /// requires_topology_push not asked: the plugin is failing and this heartbeat was not its
    /// probe.
    Skipped,
    /// The plugin panicked.
    Panic,
}

impl PluginOutcome {
    const ALL: [PluginOutcome; 6] = [
        PluginOutcome::Ok,
        PluginOutcome::Error,
        PluginOutcome::Timeout,
        PluginOutcome::Busy,
        PluginOutcome::Skipped,
        PluginOutcome::Panic,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PluginOutcome::Ok => "ok",
            PluginOutcome::Error => "error",
            PluginOutcome::Timeout => "timeout",
            PluginOutcome::Busy => "busy",
            PluginOutcome::Skipped => "skipped",
            PluginOutcome::Panic => "panic",
        }
    }
}

/// The handles of every (method, outcome). Cheap to clone.
#[derive(Debug, Clone)]
pub struct PluginMetrics {
    calls: [[IntCounter; PluginOutcome::ALL.len()]; PluginMethod::ALL.len()],
    latency: [Histogram; PluginMethod::ALL.len()],
}

impl PluginMetrics {
    pub(super) fn new(registry: &Registry) -> PluginMetrics {
        let calls = register(
            registry,
            IntCounterVec::new(
                Opts::new(
                    format!("{PREFIX}_topology_plugin_calls_total"),
                    "Calls of the topology description plugin, by method and outcome.",
                ),
                &["method", "outcome"],
            )
            .expect(VALID),
        );
        let latency = register(
            registry,
            HistogramVec::new(
                histogram_opts(
                    "topology_plugin_call_duration_seconds",
                    "Time of each plugin call that reached the plugin, by method, waiting for a call slot included (requires_topology_push asked on the heartbeat's own thread is not timed).",
                ),
                &["method"],
            )
            .expect(VALID),
        );
        Self::with(&calls, &latency)
    }

    /// Handles that no registry lists: for a plugin started outside the daemon (tests).
    pub fn unregistered() -> PluginMetrics {
        let calls = IntCounterVec::new(
            Opts::new("unregistered", "unregistered"),
            &["method", "outcome"],
        )
        .expect(VALID);
        let latency = HistogramVec::new(
            prometheus::HistogramOpts::new("unregistered", "unregistered"),
            &["method"],
        )
        .expect(VALID);
        Self::with(&calls, &latency)
    }

    fn with(calls: &IntCounterVec, latency: &HistogramVec) -> PluginMetrics {
        PluginMetrics {
            calls: PluginMethod::ALL.map(|m| {
                PluginOutcome::ALL.map(|o| calls.with_label_values(&[m.name(), o.name()]))
            }),
            latency: PluginMethod::ALL.map(|m| latency.with_label_values(&[m.name()])),
        }
    }

    /// A call of `method` ended with `outcome`, after `elapsed` when it was timed.
    #[inline]
    pub fn called(&self, method: PluginMethod, outcome: PluginOutcome, elapsed: Option<Duration>) {
        let m = method as usize;
        self.calls[m][outcome as usize].inc();
        if let Some(elapsed) = elapsed {
            self.latency[m].observe(elapsed.as_secs_f64());
        }
    }
}
