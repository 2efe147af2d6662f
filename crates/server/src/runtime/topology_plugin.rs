//! The KIP-1331 topology description plugin as the daemon holds it: built from the
//! configuration (or injected by an embedding program), guarded on every call, bounded in time
//! and in the threads it may hold.
//!
//! A plugin is code the daemon does not control, called on request paths that must keep
//! working whatever it does: block, never answer, panic. So none of it runs on a worker of
//! the daemon's runtime:
//!
//! - `requires_topology_push` (on the heartbeat path) runs on [`CHECK_THREADS`] threads of
//!   the plugin's own ([`checks`]). (Except for a built-in plugin whose check is known never to
//!   block, `memory`'s: handing a question to another thread and the answer back costs several
//!   times a whole heartbeat, so that one is asked on the heartbeat's thread, inside
//!   `catch_unwind`; see [`RequiresPushOn`].) The heartbeat waits for the answer at most
//!   [`REQUIRES_PUSH_BUDGET`] (or `group.streams.topology.description.timeout.ms` when that is
//!   shorter); an answer not given in time, a question that cannot even be queued because
//!   every check thread has a backlog, and a panic all count as `false`, the specification's
//!   backstop, and the heartbeat goes on. A check thread in the plugin for longer than the
//!   budget is taken as stuck and gets no new questions until it returns, so a plugin that
//!   blocks forever delays only the heartbeats asked in the first budget's time (by at most
//!   the budget each); every heartbeat after that is answered at once. Panics are logged at WARN at most once per
//!   group per [`PANIC_WARN_INTERVAL`], late or unasked questions at most once per that
//!   interval in all. The question's buffers are reused per thread, so a steady heartbeat
//!   allocates only the answer's channel and the future waiting for it (and nothing when the
//!   plugin is asked in place).
//! - `set_topology`, `get_topology` and `delete_topology` run on a small runtime of the
//!   plugin's own ([`calls`]), at most `group.streams.topology.description.max.concurrent.calls`
//!   at once. Each call, waiting for a free slot included, has
//!   `group.streams.topology.description.timeout.ms` to finish; then it is dropped and
//!   answered as a failure ([`PluginCallError::TimedOut`] or [`PluginCallError::Busy`]), which
//!   the handlers map as the specification maps a plugin failure: a push is
//!   TOPOLOGY_DESCRIPTION_UPDATE_FAILED, a describe read ERROR, a delete is logged. A panic
//!   ends that call only ([`PluginCallError::Panicked`]).
//! - `close()` runs on a thread of its own at shutdown, and shutdown waits for it at most
//!   `timeout.ms`: a plugin whose close hangs is logged once and left behind.
//!
//! Without a plugin (the key unset), every accessor answers "not configured", nothing is
//! ever called and no thread is started.

mod calls;
mod checks;
mod health;
mod requires_push;

use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kcoord_plugin_api::{
    PluginConfigs, PluginError, RequestContext as PluginContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use tokio::sync::oneshot;
use tracing::{info, warn};

use crate::config::streams::GroupCoordinatorConfig;
use crate::config::Config;
use crate::metrics::{PluginMethod, PluginMetrics};

use calls::CallRuntime;
pub use calls::PluginCall;
use checks::CheckThreads;
use health::Health;
pub use health::PROBE_INTERVAL;
pub use requires_push::PushAnswer;

pub use crate::config::streams::{
    TOPOLOGY_DESCRIPTION_MAX_CONCURRENT_CALLS as DEFAULT_MAX_CONCURRENT_CALLS,
    TOPOLOGY_DESCRIPTION_TIMEOUT_MS as DEFAULT_TIMEOUT_MS,
};
/// How long a heartbeat waits for `requires_topology_push` (at most `timeout.ms`). The
/// specification asks the method to "return quickly"; a plugin needing longer is broken or
/// stuck, and the heartbeat answers as if it said no. Far below any session timeout, and a
/// heartbeat delayed by it is still answered well within a client's request timeout.
pub const REQUIRES_PUSH_BUDGET: Duration = Duration::from_millis(100);
/// Threads `requires_topology_push` runs on, per plugin: two, so one slow call does not hold
/// every heartbeat behind it.
pub const CHECK_THREADS: usize = 2;
/// Questions queued per check thread. A thread stuck in the plugin delays at most this many
/// heartbeats (by the budget each); once its queue is full it is passed over.
pub const CHECK_QUEUE: usize = 256;
/// Threads of the plugin's runtime for set/get/delete: the memory plugin's calls finish at
/// their first poll, and an external store's client is asynchronous; a plugin that blocks its
/// thread holds one of these, never more.
pub const CALL_THREADS: usize = 2;
/// A group's `requires_topology_push` panics are logged at most this often; so are late or
/// unasked questions, all groups together.
pub const PANIC_WARN_INTERVAL: Duration = Duration::from_secs(60);
/// Groups remembered by the WARN rate limiter before old entries are dropped.
const WARN_LIMITER_CAPACITY: usize = 10_000;

pub type Plugin = dyn StreamsGroupTopologyDescriptionPlugin;

/// A plugin that could not be started.
#[derive(Debug, thiserror::Error)]
pub enum PluginStartError {
    /// The configuration names an unknown plugin, or the plugin rejected its settings.
    #[error("{key}: {source}")]
    Config {
        /// The configuration key that named the plugin.
        key: &'static str,
        #[source]
        source: kcoord_plugins::RegistryError,
    },
    /// The plugin's threads could not be started.
    #[error("topology description plugin {name}: cannot start its threads: {source}")]
    Threads {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

/// How a guarded plugin call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginCallError {
    /// The plugin answered with an error.
    #[error("{0}")]
    Plugin(PluginError),
    /// The plugin did not answer in time; the call was abandoned.
    #[error("the plugin did not complete within {0:?}")]
    TimedOut(Duration),
    /// No call slot came free in time: `limit` calls were still running in the plugin.
    #[error("the plugin was busy: {limit} calls were running for all of {timeout:?}")]
    Busy { limit: usize, timeout: Duration },
    /// The plugin panicked.
    #[error("the plugin panicked")]
    Panicked,
    /// The plugin's runtime is shut down.
    #[error("the plugin is closed")]
    Closed,
    /// No plugin is configured.
    #[error("no topology description plugin is configured")]
    NotConfigured,
}

/// How the daemon bounds its plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Each set/get/delete call, its wait for a slot included, and `close()`.
    pub timeout: Duration,
    /// set/get/delete calls in the plugin at once.
    pub max_concurrent_calls: usize,
    /// How long a heartbeat waits for `requires_topology_push` (used up to `timeout`):
    /// [`REQUIRES_PUSH_BUDGET`], not a configuration key.
    pub requires_push_budget: Duration,
    /// How often heartbeats probe a plugin that stopped answering in time: [`PROBE_INTERVAL`],
    /// not a configuration key.
    pub requires_push_probe_interval: Duration,
}

impl Limits {
    /// `timeout`, and the default number of concurrent calls.
    pub fn with_timeout(timeout: Duration) -> Self {
        Limits {
            timeout,
            max_concurrent_calls: DEFAULT_MAX_CONCURRENT_CALLS as usize,
            requires_push_budget: REQUIRES_PUSH_BUDGET,
            requires_push_probe_interval: PROBE_INTERVAL,
        }
    }

    /// `group.streams.topology.description.timeout.ms` and `...max.concurrent.calls`.
    pub fn from_config(streams: &GroupCoordinatorConfig) -> Self {
        Limits {
            timeout: Duration::from_millis(u64::from(
                streams.topology_description_timeout_ms.unsigned_abs(),
            )),
            max_concurrent_calls: streams
                .topology_description_max_concurrent_calls
                .unsigned_abs() as usize,
            requires_push_budget: REQUIRES_PUSH_BUDGET,
            requires_push_probe_interval: PROBE_INTERVAL,
        }
    }
}

/// Where `requires_topology_push` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequiresPushOn {
    /// On the plugin's own check threads, within the heartbeat's budget: every plugin the
    /// daemon does not know never blocks there.
    PluginThreads,
    /// On the heartbeat's own thread: only for a built-in plugin whose check is known never to
    /// block (`kcoord_plugins::registry::requires_push_never_blocks`).
    HeartbeatThread,
}

/// The daemon's plugin, or none. Cheap to clone (one `Arc`).
#[derive(Clone, Default)]
pub struct TopologyDescriptions {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    plugin: Arc<Plugin>,
    /// What the configuration called it (or "injected"), for logs.
    name: String,
    limits: Limits,
    /// The check threads; `None` when the plugin is asked on the heartbeat's thread.
    checks: Option<CheckThreads>,
    calls: CallRuntime,
    panic_warnings: WarnLimiter,
    /// Late and unasked `requires_topology_push` questions, under one key.
    slow_warnings: WarnLimiter,
    /// Whether heartbeats still ask the check threads.
    health: Arc<Health>,
    /// Calls by method and outcome, and their time.
    metrics: PluginMetrics,
}

impl fmt::Debug for TopologyDescriptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            None => f.write_str("TopologyDescriptions(disabled)"),
            Some(inner) => f
                .debug_struct("TopologyDescriptions")
                .field("plugin", &inner.name)
                .field("limits", &inner.limits)
                .finish(),
        }
    }
}

impl TopologyDescriptions {
    /// The feature off: no plugin.
    pub fn disabled() -> Self {
        TopologyDescriptions { inner: None }
    }

    /// `plugin`, already configured, with calls bounded by `timeout` and the default number
    /// of concurrent calls; starts its threads.
    pub fn new(
        plugin: Arc<Plugin>,
        name: impl Into<String>,
        timeout: Duration,
    ) -> std::io::Result<Self> {
        Self::with_limits(plugin, name, Limits::with_timeout(timeout))
    }

    /// `plugin`, already configured, bounded by `limits`; starts its threads.
    pub fn with_limits(
        plugin: Arc<Plugin>,
        name: impl Into<String>,
        limits: Limits,
    ) -> std::io::Result<Self> {
        Self::running(plugin, name, limits, RequiresPushOn::PluginThreads)
    }

    /// [`with_limits`](Self::with_limits), with `requires_topology_push` run where `on` says.
    pub fn running(
        plugin: Arc<Plugin>,
        name: impl Into<String>,
        limits: Limits,
        on: RequiresPushOn,
    ) -> std::io::Result<Self> {
        Self::metered(plugin, name, limits, on, PluginMetrics::unregistered())
    }

    /// [`running`](Self::running), its calls counted in `metrics`.
    fn metered(
        plugin: Arc<Plugin>,
        name: impl Into<String>,
        limits: Limits,
        on: RequiresPushOn,
        metrics: PluginMetrics,
    ) -> std::io::Result<Self> {
        let checks = match on {
            RequiresPushOn::PluginThreads => {
                Some(CheckThreads::start(&plugin, CHECK_THREADS, CHECK_QUEUE)?)
            }
            RequiresPushOn::HeartbeatThread => None,
        };
        let calls = CallRuntime::new(CALL_THREADS, limits.max_concurrent_calls)?;
        let name = name.into();
        let health = Arc::new(Health::new(&name, limits.requires_push_probe_interval));
        Ok(TopologyDescriptions {
            inner: Some(Arc::new(Inner {
                plugin,
                name,
                limits,
                checks,
                calls,
                panic_warnings: WarnLimiter::new(PANIC_WARN_INTERVAL),
                slow_warnings: WarnLimiter::new(PANIC_WARN_INTERVAL),
                health,
                metrics,
            })),
        })
    }

    /// The plugin the configuration names, built by the registry and configured with every
    /// key of the configuration file; disabled when no plugin is named.
    pub fn from_config(config: &Config) -> Result<Self, PluginStartError> {
        Self::from_config_metered(config, PluginMetrics::unregistered())
    }

    fn from_config_metered(
        config: &Config,
        metrics: PluginMetrics,
    ) -> Result<Self, PluginStartError> {
        let streams = &config.streams;
        let Some((key, name)) = streams.topology_description_plugin() else {
            return Ok(TopologyDescriptions::disabled());
        };
        let configs: PluginConfigs = streams.topology_description_configs.clone();
        let plugin = kcoord_plugins::create(name, &configs)
            .map_err(|source| PluginStartError::Config { key, source })?;
        let limits = Limits::from_config(streams);
        let on = if kcoord_plugins::registry::requires_push_never_blocks(name) {
            RequiresPushOn::HeartbeatThread
        } else {
            RequiresPushOn::PluginThreads
        };
        info!(
            plugin = name,
            key,
            timeout_ms = limits.timeout.as_millis() as u64,
            max_concurrent_calls = limits.max_concurrent_calls,
            requires_topology_push_on = ?on,
            "topology description plugin configured"
        );
        Self::metered(plugin, name, limits, on, metrics).map_err(|source| {
            PluginStartError::Threads {
                name: name.to_owned(),
                source,
            }
        })
    }

    /// An injected plugin if there is one (it wins over the configuration), else the one the
    /// configuration names; its calls counted in `metrics`.
    pub fn build(
        config: &Config,
        injected: Option<Arc<Plugin>>,
        metrics: PluginMetrics,
    ) -> Result<Self, PluginStartError> {
        match injected {
            Some(plugin) => {
                let limits = Limits::from_config(&config.streams);
                info!(
                    timeout_ms = limits.timeout.as_millis() as u64,
                    max_concurrent_calls = limits.max_concurrent_calls,
                    "injected topology description plugin configured"
                );
                Self::metered(
                    plugin,
                    "injected",
                    limits,
                    RequiresPushOn::PluginThreads,
                    metrics,
                )
                .map_err(|source| PluginStartError::Threads {
                    name: "injected".to_owned(),
                    source,
                })
            }
            None => TopologyDescriptions::from_config_metered(config, metrics),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The bound on set/get/delete calls, when a plugin is configured.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.as_ref().map(|i| i.limits.timeout)
    }

    /// Where `requires_topology_push` runs, when a plugin is configured.
    pub fn requires_push_on(&self) -> Option<RequiresPushOn> {
        self.inner.as_ref().map(|i| match i.checks {
            Some(_) => RequiresPushOn::PluginThreads,
            None => RequiresPushOn::HeartbeatThread,
        })
    }

    /// The limits, when a plugin is configured.
    pub fn limits(&self) -> Option<Limits> {
        self.inner.as_ref().map(|i| i.limits)
    }

    /// Starts `set_topology` on the plugin's runtime; await [`PluginCall::outcome`] for the
    /// result.
    pub fn set(
        &self,
        ctx: PluginContext,
        group_id: String,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> PluginCall<()> {
        self.start(PluginMethod::SetTopology, move |plugin| async move {
            plugin.set_topology(&ctx, &group_id, id, description).await
        })
    }

    /// Starts `get_topology` on the plugin's runtime.
    pub fn get(
        &self,
        ctx: PluginContext,
        group_id: String,
        id: Uuid,
    ) -> PluginCall<Option<StreamsGroupTopologyDescription>> {
        self.start(PluginMethod::GetTopology, move |plugin| async move {
            plugin.get_topology(&ctx, &group_id, id).await
        })
    }

    /// Starts `delete_topology` on the plugin's runtime.
    pub fn delete(&self, ctx: PluginContext, group_id: String) -> PluginCall<()> {
        self.start(PluginMethod::DeleteTopology, move |plugin| async move {
            plugin.delete_topology(&ctx, &group_id).await
        })
    }

    fn start<T, F, Fut>(&self, method: PluginMethod, call: F) -> PluginCall<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Plugin>) -> Fut,
        Fut: std::future::Future<Output = Result<T, PluginError>> + Send + 'static,
    {
        let Some(inner) = &self.inner else {
            return PluginCall::not_configured();
        };
        let call = calls::Recorded::new(
            call(Arc::clone(&inner.plugin)),
            method,
            inner.metrics.clone(),
        );
        // The deadline starts now, so calls started together (describe's per-group reads)
        // share one bound however they are awaited.
        inner.calls.start(call, inner.limits.timeout)
    }

    /// `close()` on shutdown, on a thread of its own: waits for it at most `timeout.ms`, then
    /// goes on without it (logged once). A panic there is logged, not propagated.
    pub async fn close(&self) {
        let Some(inner) = &self.inner else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        let plugin = Arc::clone(&inner.plugin);
        let closing = std::thread::Builder::new()
            .name("plugin-close".to_owned())
            .spawn(move || {
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| plugin.close()));
                let _ = tx.send(outcome.map_err(|panic| panic_message(panic.as_ref())));
            });
        if let Err(e) = closing {
            warn!(plugin = %inner.name, error = %e, "cannot start a thread to close the topology description plugin; not closed");
            return;
        }
        match tokio::time::timeout(inner.limits.timeout, rx).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(panic))) => {
                warn!(plugin = %inner.name, panic = %panic, "topology description plugin panicked in close")
            }
            // The thread ended without a word: only a panic while sending could do that.
            Ok(Err(_gone)) => {
                warn!(plugin = %inner.name, "topology description plugin's close ended abnormally")
            }
            Err(_elapsed) => warn!(
                plugin = %inner.name, timeout_ms = inner.limits.timeout.as_millis() as u64,
                "topology description plugin did not finish close in time; stopping without waiting for it"
            ),
        }
    }
}

/// Rewrites `dst` to `src` in place (allocating only when its buffer is too short).
pub(crate) fn set_str(dst: &mut String, src: &str) {
    if dst != src {
        dst.clear();
        dst.push_str(src);
    }
}

/// The text of a panic payload (`panic!("...")` gives a `&str` or a `String`).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// Makes `dst` equal to `src`, reusing its buffers.
pub(crate) fn copy_context(dst: &mut PluginContext, src: &PluginContext) {
    let PluginContext {
        principal,
        client_id,
        client_address,
        listener_name,
        api_key,
        api_version,
        correlation_id,
    } = dst;
    set_str(principal, &src.principal);
    set_str(client_id, &src.client_id);
    *client_address = src.client_address;
    set_str(listener_name, &src.listener_name);
    *api_key = src.api_key;
    *api_version = src.api_version;
    *correlation_id = src.correlation_id;
}

/// At most one WARN per key per interval; counts what it suppressed in between.
struct WarnLimiter {
    interval: Duration,
    last: Mutex<HashMap<String, (Instant, u64)>>,
}

impl WarnLimiter {
    fn new(interval: Duration) -> Self {
        WarnLimiter {
            interval,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// `Some(suppressed since the last one)` when a warning for `key` may be logged now.
    fn allow(&self, key: &str, now: Instant) -> Option<u64> {
        // A poisoned map only lost a timestamp; logging one warning too many is harmless.
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, suppressed)) = last.get_mut(key) {
            if now.duration_since(*at) < self.interval {
                *suppressed += 1;
                return None;
            }
            let count = *suppressed;
            *at = now;
            *suppressed = 0;
            return Some(count);
        }
        if last.len() >= WARN_LIMITER_CAPACITY {
            let interval = self.interval;
            last.retain(|_, (at, _)| now.duration_since(*at) < interval);
        }
        if last.len() < WARN_LIMITER_CAPACITY {
            last.insert(key.to_owned(), (now, 0));
        }
        Some(0)
    }
}

#[cfg(test)]
mod tests;
