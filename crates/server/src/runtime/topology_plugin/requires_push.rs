//! `requires_topology_push`, the heartbeat's question: asked on the heartbeat's thread for a
//! plugin known never to block, else handed to a check thread ([`super::checks`]) and waited
//! for within the heartbeat's budget, or not asked while the plugin is failing
//! ([`super::health`]). The question's buffers are reused per thread.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use kcoord_plugin_api::{RequestContext as PluginContext, Uuid};
use tokio::sync::oneshot;
use tracing::warn;

use super::checks::{Check, Job, Reply};
use super::health::Turn;
use super::PROBE_INTERVAL;
use super::{copy_context, panic_message, set_str, Inner, Limits, TopologyDescriptions};
use crate::metrics::{PluginMethod, PluginOutcome};

/// What `requires_topology_push` answered (`true`: ask the member to push), as a future:
/// ready at once when there is no plugin or it was asked on this thread, else waiting for a
/// check thread (within the budget).
pub enum PushAnswer {
    Known(bool),
    Waiting(Pin<Box<dyn Future<Output = bool> + Send>>),
}

impl Future for PushAnswer {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        match self.get_mut() {
            PushAnswer::Known(answer) => Poll::Ready(*answer),
            PushAnswer::Waiting(answer) => answer.as_mut().poll(cx),
        }
    }
}

impl TopologyDescriptions {
    /// `requires_topology_push` for `ctx`, guarded: false without a plugin, and when the
    /// plugin panics, does not answer within the budget, or cannot be asked (see the module
    /// documentation).
    pub fn requires_push(&self, ctx: &PluginContext, group_id: &str, id: Uuid) -> PushAnswer {
        self.requires_push_with(group_id, id, |pctx| copy_context(pctx, ctx))
    }

    /// `requires_topology_push` with the context `fill` writes into reused buffers (the
    /// heartbeat path fills it from the request being handled without allocating).
    pub fn requires_push_with(
        &self,
        group_id: &str,
        id: Uuid,
        fill: impl FnOnce(&mut PluginContext),
    ) -> PushAnswer {
        let Some(inner) = &self.inner else {
            return PushAnswer::Known(false);
        };
        let mut check = spare_check();
        fill(&mut check.ctx);
        if inner.checks.is_none() {
            return PushAnswer::Known(inner.ask_here(check, group_id, id));
        }
        set_str(&mut check.group_id, group_id);
        check.id = id;
        let inner = Arc::clone(inner);
        PushAnswer::Waiting(Box::pin(async move { inner.ask_threads(check).await }))
    }
}

impl Limits {
    /// How long a heartbeat waits for `requires_topology_push`.
    fn requires_push_budget(&self) -> Duration {
        self.requires_push_budget.min(self.timeout)
    }
}

impl Inner {
    /// `check`'s answer from a check thread, waited for within the budget; "no" at once while
    /// the plugin is failing, the question handed to a check thread as a probe when one is
    /// due ([`super::health`]).
    async fn ask_threads(&self, check: Check) -> bool {
        let Some(checks) = &self.checks else {
            return false;
        };
        let budget = self.limits.requires_push_budget();
        let asked = Instant::now();
        let record = |outcome, elapsed| {
            self.metrics
                .called(PluginMethod::RequiresTopologyPush, outcome, elapsed)
        };
        match self.health.turn(asked) {
            Turn::Ask => {}
            Turn::Skip => {
                recycle(check);
                record(PluginOutcome::Skipped, None);
                return false;
            }
            Turn::Probe => {
                let health = Arc::clone(&self.health);
                let reply = Reply::Probe { health, budget };
                // Not submitted (every thread stuck or full): the next probe is already due
                // one interval from now.
                checks.submit(Job { check, reply }, next_start(), budget);
                return false;
            }
        }
        let (reply, answer) = oneshot::channel();
        let reply = Reply::Heartbeat(reply);
        if !checks.submit(Job { check, reply }, next_start(), budget) {
            self.failed("every check thread is stuck in the plugin or has a backlog; not asked");
            record(PluginOutcome::Busy, None);
            return false;
        }
        match tokio::time::timeout(budget, answer).await {
            Ok(Ok((check, answer))) => {
                // A panic is an answer in time too: the plugin is asked on (R4, R7).
                self.health.answered();
                let outcome = match answer {
                    Ok(_) => PluginOutcome::Ok,
                    Err(_) => PluginOutcome::Panic,
                };
                record(outcome, Some(asked.elapsed()));
                let push = answer.unwrap_or_else(|panic| {
                    self.warn_panic(&check.group_id, check.id, &panic);
                    false
                });
                recycle(check);
                push
            }
            // The thread dropped the question: it is shutting down.
            Ok(Err(_dropped)) => false,
            Err(_elapsed) => {
                self.failed("no answer within the heartbeat's budget");
                record(PluginOutcome::Timeout, Some(asked.elapsed()));
                false
            }
        }
    }

    /// The plugin failed a heartbeat's question because of `what`.
    fn failed(&self, what: &'static str) {
        self.health.failed(Instant::now());
        self.warn_slow(what);
    }

    /// The plugin asked on this thread (one known never to block) with `check`'s context, a
    /// panic counting as no.
    fn ask_here(&self, check: Check, group_id: &str, id: Uuid) -> bool {
        let plugin = &self.plugin;
        let answer = std::panic::catch_unwind(AssertUnwindSafe(|| {
            plugin.requires_topology_push(&check.ctx, group_id, id)
        }));
        recycle(check);
        // Counted, not timed: this check is a lock-free lookup of well under a microsecond,
        // and two clock readings would cost a good part of it on every heartbeat.
        let outcome = match answer {
            Ok(_) => PluginOutcome::Ok,
            Err(_) => PluginOutcome::Panic,
        };
        self.metrics
            .called(PluginMethod::RequiresTopologyPush, outcome, None);
        answer.unwrap_or_else(|panic| {
            self.warn_panic(group_id, id, &panic_message(panic.as_ref()));
            false
        })
    }

    fn warn_panic(&self, group_id: &str, id: Uuid, panic: &str) {
        if let Some(suppressed) = self.panic_warnings.allow(group_id, Instant::now()) {
            warn!(
                group = %group_id, topology_description_id = %id, plugin = %self.name,
                panic = %panic, suppressed_since_last_warning = suppressed,
                "topology description plugin panicked in requires_topology_push; treated as false"
            );
        }
    }

    fn warn_slow(&self, what: &'static str) {
        if let Some(suppressed) = self.slow_warnings.allow("", Instant::now()) {
            warn!(
                plugin = %self.name, problem = what,
                budget_ms = self.limits.requires_push_budget().as_millis() as u64,
                suppressed_since_last_warning = suppressed,
                probe_interval_ms = PROBE_INTERVAL.as_millis() as u64,
                "topology description plugin did not answer requires_topology_push; treated as false, and until it answers in time heartbeats do not ask it but for one probe per interval"
            );
        }
    }
}

/// Spare questions kept per thread for reuse.
const SPARE_CHECKS: usize = 64;

thread_local! {
    /// Questions answered on this thread, kept for their buffers.
    static SPARES: RefCell<Vec<Check>> = const { RefCell::new(Vec::new()) };
    /// Where this thread's next question starts looking for a check thread.
    static NEXT_START: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A question to fill in: a spare one, with its buffers, when this thread has one.
fn spare_check() -> Check {
    let spare = SPARES
        .try_with(|spares| spares.borrow_mut().pop())
        .ok()
        .flatten();
    spare.unwrap_or_else(|| Check {
        ctx: PluginContext::internal(0, 0),
        group_id: String::new(),
        id: Uuid::nil(),
    })
}

/// Keeps `check` for reuse on this thread (a few only).
fn recycle(check: Check) {
    let _ = SPARES.try_with(|spares| {
        let mut spares = spares.borrow_mut();
        if spares.len() < SPARE_CHECKS {
            spares.push(check);
        }
    });
}

/// Spreads this thread's questions over the check threads in turn.
fn next_start() -> usize {
    NEXT_START
        .try_with(|next| {
            let start = next.get();
            next.set(start.wrapping_add(1));
            start
        })
        .unwrap_or(0)
}
