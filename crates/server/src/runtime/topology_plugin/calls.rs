//! Where `set_topology`, `get_topology` and `delete_topology` run: a small tokio runtime of
//! the plugin's own, so a plugin whose future blocks its thread holds one of these threads
//! and never a worker of the daemon's runtime; and at most `max.concurrent.calls` of them at
//! once, so a plugin that stops answering cannot pile up calls without end.
//!
//! Every call has one deadline, set when it starts: waiting for a free slot and running both
//! count against it. A call on the plugin's runtime is dropped there at its deadline (which
//! frees its slot unless the plugin blocked its thread), and its caller stops waiting then
//! whatever the plugin's runtime is doing.

use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use kcoord_plugin_api::PluginError;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::{timeout_at, Instant};

use super::PluginCallError;
use crate::metrics::{PluginMethod, PluginMetrics, PluginOutcome};

/// The plugin's runtime and its call slots.
pub(super) struct CallRuntime {
    /// `Some` until dropped; shut down without waiting, since a thread the plugin blocked
    /// would never let a waiting drop return.
    runtime: Option<Runtime>,
    handle: Handle,
    slots: Arc<Semaphore>,
    limit: usize,
}

impl CallRuntime {
    /// A runtime of `threads` threads, for at most `limit` calls at once.
    pub fn new(threads: usize, limit: usize) -> io::Result<CallRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            // A plugin's own `spawn_blocking` stays within the plugin's threads too.
            .max_blocking_threads(threads)
            .thread_name("plugin-call")
            .enable_all()
            .build()?;
        Ok(CallRuntime {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            slots: Arc::new(Semaphore::new(limit.min(Semaphore::MAX_PERMITS))),
            limit,
        })
    }

    /// Starts `call` with `timeout` to finish in. With a slot free it goes straight to the
    /// plugin's runtime; otherwise a task on the caller's runtime waits for one (until the
    /// deadline) and starts it then, so nothing queues on the plugin's runtime, whose threads
    /// the plugin may be blocking.
    pub fn start<T, F>(&self, call: F, timeout: Duration) -> PluginCall<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, PluginError>> + Send + 'static,
    {
        let deadline = Instant::now() + timeout;
        let task = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(slot) => Task::Plugin(self.handle.spawn(bounded(call, slot, deadline, timeout))),
            Err(_) => Task::Waiting({
                let (handle, slots, limit) =
                    (self.handle.clone(), Arc::clone(&self.slots), self.limit);
                tokio::spawn(async move {
                    let slot = match timeout_at(deadline, slots.acquire_owned()).await {
                        Ok(Ok(slot)) => slot,
                        Ok(Err(_closed)) => return Err(PluginCallError::Closed),
                        Err(_elapsed) => return Err(PluginCallError::Busy { limit, timeout }),
                    };
                    let mut running =
                        AbortOnDrop(handle.spawn(bounded(call, slot, deadline, timeout)));
                    finish(&mut running.0, deadline, timeout).await
                })
            }),
        };
        PluginCall {
            running: Some(Running {
                task,
                deadline,
                timeout,
            }),
        }
    }
}

impl Drop for CallRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// `call` holding `slot`, given up at `deadline`.
async fn bounded<T>(
    call: impl Future<Output = Result<T, PluginError>>,
    slot: OwnedSemaphorePermit,
    deadline: Instant,
    timeout: Duration,
) -> Result<T, PluginCallError> {
    let outcome = timeout_at(deadline, call).await;
    drop(slot);
    match outcome {
        Ok(answer) => answer.map_err(PluginCallError::Plugin),
        Err(_elapsed) => Err(PluginCallError::TimedOut(timeout)),
    }
}

/// What `task` came to, waiting at most until `deadline` (then it is aborted).
async fn finish<T>(
    task: &mut JoinHandle<Result<T, PluginCallError>>,
    deadline: Instant,
    timeout: Duration,
) -> Result<T, PluginCallError> {
    match timeout_at(deadline, &mut *task).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) if e.is_panic() => Err(PluginCallError::Panicked),
        // Cancelled: only the plugin's runtime shutting down does that.
        Ok(Err(_cancelled)) => Err(PluginCallError::Closed),
        Err(_elapsed) => {
            task.abort();
            Err(PluginCallError::TimedOut(timeout))
        }
    }
}

/// A plugin call that counts how it ended (`kcoord_topology_plugin_calls_total`) and, once
/// it reached the plugin, how long it took from its start (the wait for a slot included).
/// Ending without an answer is a timeout when the plugin had it (the deadline dropped it), and
/// busy when it never got a slot.
pub(super) struct Recorded<T> {
    call: Pin<Box<dyn Future<Output = Result<T, PluginError>> + Send>>,
    method: PluginMethod,
    metrics: PluginMetrics,
    started: std::time::Instant,
    polled: bool,
    ended: bool,
}

impl<T> Recorded<T> {
    pub(super) fn new(
        call: impl Future<Output = Result<T, PluginError>> + Send + 'static,
        method: PluginMethod,
        metrics: PluginMetrics,
    ) -> Self {
        Recorded {
            call: Box::pin(call),
            method,
            metrics,
            started: std::time::Instant::now(),
            polled: false,
            ended: false,
        }
    }

    fn end(&mut self, outcome: PluginOutcome) {
        self.ended = true;
        let elapsed = self.polled.then(|| self.started.elapsed());
        self.metrics.called(self.method, outcome, elapsed);
    }
}

impl<T> Future for Recorded<T> {
    type Output = Result<T, PluginError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        this.polled = true;
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| this.call.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(answer)) => {
                this.end(match &answer {
                    Ok(_) => PluginOutcome::Ok,
                    Err(_) => PluginOutcome::Error,
                });
                Poll::Ready(answer)
            }
            Err(panic) => {
                this.end(PluginOutcome::Panic);
                // The task's panic is how the caller learns it (`PluginCallError::Panicked`).
                std::panic::resume_unwind(panic)
            }
        }
    }
}

impl<T> Drop for Recorded<T> {
    fn drop(&mut self) {
        if !self.ended {
            let outcome = if self.polled {
                PluginOutcome::Timeout
            } else {
                PluginOutcome::Busy
            };
            self.end(outcome);
        }
    }
}

/// A task on the plugin's runtime that must not outlive the task waiting for it.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A plugin call in progress. Dropping it does not cancel the call, which still ends by its
/// deadline.
pub struct PluginCall<T> {
    running: Option<Running<T>>,
}

struct Running<T> {
    task: Task<T>,
    deadline: Instant,
    timeout: Duration,
}

enum Task<T> {
    /// On the plugin's runtime, whose threads the plugin may be blocking: waited for until
    /// the deadline, whatever that runtime does.
    Plugin(JoinHandle<Result<T, PluginCallError>>),
    /// Waiting for a slot on the caller's runtime, which gives up at the deadline by itself
    /// (`Busy`, or whatever the call came to).
    Waiting(JoinHandle<Result<T, PluginCallError>>),
}

impl<T> PluginCall<T> {
    /// A call that was never made: no plugin is configured.
    pub(super) fn not_configured() -> Self {
        PluginCall { running: None }
    }

    /// What the call came to, waiting at most until its deadline.
    pub async fn outcome(self) -> Result<T, PluginCallError> {
        let Some(running) = self.running else {
            return Err(PluginCallError::NotConfigured);
        };
        match running.task {
            Task::Plugin(mut task) => finish(&mut task, running.deadline, running.timeout).await,
            Task::Waiting(task) => task.await.unwrap_or_else(|e| {
                Err(if e.is_panic() {
                    PluginCallError::Panicked
                } else {
                    PluginCallError::Closed
                })
            }),
        }
    }
}
