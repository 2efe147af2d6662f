//! Calls into the topology description plugin, by method and outcome, with their latency.

use std::sync::Arc;
use std::time::Duration;

use prometheus::core::{Collector, Desc};
use prometheus::proto::{MetricFamily, MetricType};
use prometheus::{Histogram, HistogramVec, Registry};

use super::families::{counter, family};
use super::striped::Striped;
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

/// The counters of every (method, outcome) and the latency of each method. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PluginMetrics {
    /// `requires_topology_push` is asked on every heartbeat: striped, like the request counters.
    calls: Arc<CallCounts>,
    latency: [Histogram; PluginMethod::ALL.len()],
}

#[derive(Debug)]
struct CallCounts {
    counts: Striped,
    desc: Desc,
}

const OUTCOMES: usize = PluginOutcome::ALL.len();

impl PluginMetrics {
    pub(super) fn new(registry: &Registry) -> PluginMetrics {
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
        let metrics = Self::with(&latency);
        register(registry, CallCollector(Arc::clone(&metrics.calls)));
        metrics
    }

    /// Handles that no registry lists: for a plugin started outside the daemon (tests).
    pub fn unregistered() -> PluginMetrics {
        let latency = HistogramVec::new(
            prometheus::HistogramOpts::new("unregistered", "unregistered"),
            &["method"],
        )
        .expect(VALID);
        Self::with(&latency)
    }

    fn with(latency: &HistogramVec) -> PluginMetrics {
        let desc = Desc::new(
            format!("{PREFIX}_topology_plugin_calls_total"),
            "Calls of the topology description plugin, by method and outcome.".to_owned(),
            vec!["method".to_owned(), "outcome".to_owned()],
            Default::default(),
        )
        .expect(VALID);
        PluginMetrics {
            calls: Arc::new(CallCounts {
                counts: Striped::new(PluginMethod::ALL.len() * OUTCOMES),
                desc,
            }),
            latency: PluginMethod::ALL.map(|m| latency.with_label_values(&[m.name()])),
        }
    }

    /// A call of `method` ended with `outcome`, after `elapsed` when it was timed.
    #[inline]
    pub fn called(&self, method: PluginMethod, outcome: PluginOutcome, elapsed: Option<Duration>) {
        self.calls
            .counts
            .add(method as usize * OUTCOMES + outcome as usize, 1);
        if let Some(elapsed) = elapsed {
            self.latency[method as usize].observe(elapsed.as_secs_f64());
        }
    }
}

#[derive(Debug, Clone)]
struct CallCollector(Arc<CallCounts>);

impl Collector for CallCollector {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.0.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let metrics = PluginMethod::ALL
            .iter()
            .flat_map(|m| PluginOutcome::ALL.iter().map(move |o| (*m, *o)))
            .map(|(m, o)| {
                let count = self.0.counts.get(m as usize * OUTCOMES + o as usize);
                counter(&[("method", m.name()), ("outcome", o.name())], count)
            })
            .collect();
        let desc = &self.0.desc;
        vec![family(
            &desc.fq_name,
            &desc.help,
            MetricType::COUNTER,
            metrics,
        )]
    }
}
