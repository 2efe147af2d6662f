//! The KIP-1331 topology description plugin as the daemon holds it: built from the
//! configuration (or injected by an embedding program), guarded on every call, bounded in time.
//!
//! A plugin is code the daemon does not control, called on request paths that must keep
//! working whatever it does:
//!
//! - `requires_topology_push` is synchronous and on the heartbeat path. It runs on the
//!   connection task that handled the heartbeat, never on a coordinator shard (whose other
//!   groups would wait behind it), inside `catch_unwind`: a panic counts as `false` and is
//!   logged at WARN at most once per group per [`PANIC_WARN_INTERVAL`], because a plugin that
//!   panics on every heartbeat would otherwise flood the log. Its request context is reused
//!   per thread ([`with_plugin_context`]), so the call allocates nothing of the daemon's.
//! - `set_topology`, `get_topology` and `delete_topology` each run on a task of their own, so a
//!   panic ends that task only (tokio reports it as a `JoinError`), and the caller waits at most
//!   `group.streams.topology.description.timeout.ms`; a call still running then is aborted and
//!   answered as a failure, so a plugin that never completes cannot hold a request forever.
//!
//! Without a plugin (the key unset), every accessor answers "not configured" and nothing is
//! ever called.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kcoord_plugin_api::{
    PluginConfigs, PluginError, RequestContext as PluginContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::config::Config;
use crate::state::RequestContext;

/// Default of `group.streams.topology.description.timeout.ms`.
pub const DEFAULT_TIMEOUT_MS: i32 = 30_000;
/// A group's `requires_topology_push` panics are logged at most this often.
pub const PANIC_WARN_INTERVAL: Duration = Duration::from_secs(60);
/// Groups remembered by the WARN rate limiter before old entries are dropped.
const WARN_LIMITER_CAPACITY: usize = 10_000;
/// The principal every request has until authentication exists (Kafka's PLAINTEXT default).
pub const ANONYMOUS: &str = "User:ANONYMOUS";

pub type Plugin = dyn StreamsGroupTopologyDescriptionPlugin;

/// A plugin that could not be built at startup.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {source}")]
pub struct PluginStartError {
    /// The configuration key that named the plugin.
    pub key: &'static str,
    #[source]
    pub source: kcoord_plugins::RegistryError,
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
    /// The plugin panicked.
    #[error("the plugin panicked")]
    Panicked,
    /// No plugin is configured.
    #[error("no topology description plugin is configured")]
    NotConfigured,
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
    timeout: Duration,
    panic_warnings: WarnLimiter,
}

impl fmt::Debug for TopologyDescriptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            None => f.write_str("TopologyDescriptions(disabled)"),
            Some(inner) => f
                .debug_struct("TopologyDescriptions")
                .field("plugin", &inner.name)
                .field("timeout", &inner.timeout)
                .finish(),
        }
    }
}

impl TopologyDescriptions {
    /// The feature off: no plugin.
    pub fn disabled() -> Self {
        TopologyDescriptions { inner: None }
    }

    /// `plugin`, already configured, with calls bounded by `timeout`.
    pub fn new(plugin: Arc<Plugin>, name: impl Into<String>, timeout: Duration) -> Self {
        TopologyDescriptions {
            inner: Some(Arc::new(Inner {
                plugin,
                name: name.into(),
                timeout,
                panic_warnings: WarnLimiter::new(PANIC_WARN_INTERVAL),
            })),
        }
    }

    /// The plugin the configuration names, built by the registry and configured with every
    /// key of the configuration file; disabled when no plugin is named.
    pub fn from_config(config: &Config) -> Result<Self, PluginStartError> {
        let streams = &config.streams;
        let Some((key, name)) = streams.topology_description_plugin() else {
            return Ok(TopologyDescriptions::disabled());
        };
        let configs: PluginConfigs = streams.topology_description_configs.clone();
        let plugin = kcoord_plugins::create(name, &configs)
            .map_err(|source| PluginStartError { key, source })?;
        info!(
            plugin = name,
            key,
            timeout_ms = streams.topology_description_timeout_ms,
            "topology description plugin configured"
        );
        Ok(TopologyDescriptions::new(
            plugin,
            name,
            Duration::from_millis(u64::from(
                streams.topology_description_timeout_ms.unsigned_abs(),
            )),
        ))
    }

    /// An injected plugin if there is one (it wins over the configuration), else the one the
    /// configuration names.
    pub fn build(config: &Config, injected: Option<Arc<Plugin>>) -> Result<Self, PluginStartError> {
        match injected {
            Some(plugin) => {
                let timeout = Duration::from_millis(u64::from(
                    config
                        .streams
                        .topology_description_timeout_ms
                        .unsigned_abs(),
                ));
                info!(
                    timeout_ms = timeout.as_millis() as u64,
                    "injected topology description plugin configured"
                );
                Ok(TopologyDescriptions::new(plugin, "injected", timeout))
            }
            None => TopologyDescriptions::from_config(config),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// The bound on set/get/delete calls, when a plugin is configured.
    pub fn timeout(&self) -> Option<Duration> {
        self.inner.as_ref().map(|i| i.timeout)
    }

    /// `requires_topology_push`, guarded: false without a plugin or when the plugin panics
    /// (logged at WARN, rate limited per group).
    pub fn requires_push(&self, ctx: &PluginContext, group_id: &str, id: Uuid) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        let plugin = &inner.plugin;
        match std::panic::catch_unwind(AssertUnwindSafe(|| {
            plugin.requires_topology_push(ctx, group_id, id)
        })) {
            Ok(answer) => answer,
            Err(panic) => {
                if let Some(suppressed) = inner.panic_warnings.allow(group_id, Instant::now()) {
                    warn!(
                        group = %group_id, topology_description_id = %id, plugin = %inner.name,
                        panic = %panic_message(panic.as_ref()), suppressed_since_last_warning = suppressed,
                        "topology description plugin panicked in requires_topology_push; treated as false"
                    );
                }
                false
            }
        }
    }

    /// [`requires_push`](Self::requires_push) for the request being handled, with the plugin's
    /// context built as [`with_plugin_context`] does: without allocating, once this thread has
    /// handled a request like it. For the heartbeat path.
    pub fn requires_push_for(&self, ctx: &RequestContext<'_>, group_id: &str, id: Uuid) -> bool {
        if self.inner.is_none() {
            return false;
        }
        with_plugin_context(ctx, |pctx| self.requires_push(pctx, group_id, id))
    }

    /// Starts `set_topology` on its own task; await [`PluginCall::outcome`] for the result.
    pub fn set(
        &self,
        ctx: PluginContext,
        group_id: String,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> PluginCall<()> {
        self.start(move |plugin| async move {
            plugin.set_topology(&ctx, &group_id, id, description).await
        })
    }

    /// Starts `get_topology` on its own task.
    pub fn get(
        &self,
        ctx: PluginContext,
        group_id: String,
        id: Uuid,
    ) -> PluginCall<Option<StreamsGroupTopologyDescription>> {
        self.start(move |plugin| async move { plugin.get_topology(&ctx, &group_id, id).await })
    }

    /// Starts `delete_topology` on its own task.
    pub fn delete(&self, ctx: PluginContext, group_id: String) -> PluginCall<()> {
        self.start(move |plugin| async move { plugin.delete_topology(&ctx, &group_id).await })
    }

    fn start<T, F, Fut>(&self, call: F) -> PluginCall<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Plugin>) -> Fut,
        Fut: std::future::Future<Output = Result<T, PluginError>> + Send + 'static,
    {
        let Some(inner) = &self.inner else {
            return PluginCall { running: None };
        };
        // The deadline starts now, so calls started together (describe's per-group reads)
        // share one bound however they are awaited.
        let deadline = tokio::time::Instant::now() + inner.timeout;
        let handle = tokio::spawn(call(Arc::clone(&inner.plugin)));
        PluginCall {
            running: Some(Running {
                handle,
                deadline,
                timeout: inner.timeout,
            }),
        }
    }

    /// `close()` on shutdown; a panic there is logged, not propagated.
    pub fn close(&self) {
        if let Some(inner) = &self.inner {
            let plugin = &inner.plugin;
            if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| plugin.close())) {
                warn!(plugin = %inner.name, panic = %panic_message(panic.as_ref()), "topology description plugin panicked in close");
            }
        }
    }
}

/// A plugin call in progress.
pub struct PluginCall<T> {
    running: Option<Running<T>>,
}

struct Running<T> {
    handle: JoinHandle<Result<T, PluginError>>,
    deadline: tokio::time::Instant,
    timeout: Duration,
}

impl<T> PluginCall<T> {
    /// What the call came to, waiting at most until its deadline.
    pub async fn outcome(self) -> Result<T, PluginCallError> {
        let Some(Running {
            mut handle,
            deadline,
            timeout,
        }) = self.running
        else {
            return Err(PluginCallError::NotConfigured);
        };
        match tokio::time::timeout_at(deadline, &mut handle).await {
            Ok(Ok(answer)) => answer.map_err(PluginCallError::Plugin),
            // Cancelled is impossible (only this call could abort it); treat it as a panic.
            Ok(Err(_join)) => Err(PluginCallError::Panicked),
            Err(_elapsed) => {
                handle.abort();
                Err(PluginCallError::TimedOut(timeout))
            }
        }
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

/// The request context a plugin sees for the request being handled ([`refill`] must agree).
pub fn plugin_context(ctx: &RequestContext<'_>) -> PluginContext {
    PluginContext {
        principal: ANONYMOUS.to_owned(),
        client_id: ctx.header.client_id.clone().unwrap_or_default(),
        client_address: ctx.peer.ip(),
        listener_name: ctx.listener.name.clone(),
        api_key: ctx.header.request_api_key,
        api_version: ctx.header.request_api_version,
        correlation_id: ctx.header.correlation_id,
    }
}

thread_local! {
    /// The last context [`with_plugin_context`] built on this thread; its strings' buffers are
    /// reused by the next call. Boxed so that taking it out and putting it back moves a pointer.
    static SCRATCH_CONTEXT: Cell<Option<Box<PluginContext>>> = const { Cell::new(None) };
}

/// Calls `f` with the request context a plugin sees for `ctx`, equal to [`plugin_context`]'s.
///
/// `requires_topology_push` runs on every heartbeat and the plugin only borrows its context,
/// so instead of three new strings per call, a per-thread context is overwritten in place: a
/// string is rewritten only when it differs, into its old buffer, which allocates only when
/// it is too short (the client id of a connection seen for the first time, say).
pub fn with_plugin_context<R>(ctx: &RequestContext<'_>, f: impl FnOnce(&PluginContext) -> R) -> R {
    // Taken out while in use, so a call that `f` itself makes on this thread (or one during
    // thread exit, when the storage is gone) finds none and builds its own.
    let pctx = match SCRATCH_CONTEXT.try_with(Cell::take) {
        Ok(Some(mut pctx)) => {
            refill(&mut pctx, ctx);
            pctx
        }
        _ => Box::new(plugin_context(ctx)),
    };
    let answer = f(&pctx);
    let _ = SCRATCH_CONTEXT.try_with(|cell| cell.set(Some(pctx)));
    answer
}

/// Makes `pctx` what [`plugin_context`] would build for `ctx`, reusing its buffers.
fn refill(pctx: &mut PluginContext, ctx: &RequestContext<'_>) {
    fn set(dst: &mut String, src: &str) {
        if dst != src {
            dst.clear();
            dst.push_str(src);
        }
    }
    // Every field named, so a field added to the context cannot be left stale here.
    let PluginContext {
        principal,
        client_id,
        client_address,
        listener_name,
        api_key,
        api_version,
        correlation_id,
    } = pctx;
    set(principal, ANONYMOUS);
    set(
        client_id,
        ctx.header.client_id.as_deref().unwrap_or_default(),
    );
    *client_address = ctx.peer.ip();
    set(listener_name, &ctx.listener.name);
    *api_key = ctx.header.request_api_key;
    *api_version = ctx.header.request_api_version;
    *correlation_id = ctx.header.correlation_id;
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

#[cfg(test)]
mod context_tests {
    use std::net::SocketAddr;

    use kcoord_wire::messages::RequestHeader;

    use super::*;
    use crate::config::ListenerKind;
    use crate::handlers::testing;

    #[test]
    fn the_reused_context_is_the_one_plugin_context_builds() {
        let server = testing::server();
        let c = testing::Ctx::new(&server, ListenerKind::Broker);
        let first = c.ctx(&server);
        let controller = testing::listener(&server, ListenerKind::Controller);
        let header = RequestHeader {
            request_api_key: 88,
            request_api_version: 2,
            correlation_id: 42,
            client_id: Some("a-much-longer-client-id-than-the-first-one".to_owned()),
            ..Default::default()
        };
        let second = RequestContext {
            listener: &controller,
            peer: SocketAddr::from(([10, 0, 0, 9], 50000)),
            header: &header,
            ..first
        };
        let no_client_id = RequestHeader {
            client_id: None,
            ..header.clone()
        };
        let third = RequestContext {
            header: &no_client_id,
            ..first
        };
        for ctx in [first, second, third, first, first] {
            assert_eq!(
                with_plugin_context(&ctx, PluginContext::clone),
                plugin_context(&ctx)
            );
        }
        // The guarded call hands the plugin that same context.
        struct Recording(Mutex<Vec<PluginContext>>);
        #[async_trait::async_trait]
        impl StreamsGroupTopologyDescriptionPlugin for Recording {
            fn requires_topology_push(&self, ctx: &PluginContext, _: &str, _: Uuid) -> bool {
                self.0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(ctx.clone());
                true
            }
            async fn set_topology(
                &self,
                _: &PluginContext,
                _: &str,
                _: Uuid,
                _: StreamsGroupTopologyDescription,
            ) -> Result<(), PluginError> {
                Ok(())
            }
            async fn delete_topology(&self, _: &PluginContext, _: &str) -> Result<(), PluginError> {
                Ok(())
            }
            async fn get_topology(
                &self,
                _: &PluginContext,
                _: &str,
                _: Uuid,
            ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
                Ok(None)
            }
        }
        let plugin = Arc::new(Recording(Mutex::new(Vec::new())));
        let t = TopologyDescriptions::new(plugin.clone(), "recording", Duration::from_secs(1));
        assert!(t.requires_push_for(&second, "g", Uuid::from_u128(1)));
        assert!(t.requires_push_for(&first, "g", Uuid::from_u128(1)));
        let seen = plugin
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert_eq!(seen, [plugin_context(&second), plugin_context(&first)]);
        assert!(!TopologyDescriptions::disabled().requires_push_for(
            &first,
            "g",
            Uuid::from_u128(1)
        ));

        // Asked again from inside: both see their own request.
        with_plugin_context(&first, |outer| {
            assert_eq!(
                with_plugin_context(&second, PluginContext::clone),
                plugin_context(&second)
            );
            assert_eq!(*outer, plugin_context(&first));
        });
    }
}
