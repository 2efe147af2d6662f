//! A registered broker heartbeating on its own task, controlled through a handle.
use std::time::Duration;

use kcoord_wire::ErrorCode;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::debug;

use super::RegisteredBroker;
use crate::error::ClientError;

/// What the controller last said about the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerStatus {
    /// IsFenced of the last answered heartbeat (a new registration starts fenced).
    pub fenced: bool,
    pub caught_up: bool,
    /// The controller granted a shutdown (ShouldShutDown); no more heartbeats follow.
    pub shut_down: bool,
    /// Heartbeats answered without an error.
    pub heartbeats: u64,
    /// The last failure, if the last heartbeat failed.
    pub last_error: Option<String>,
    /// The task stopped: shut down, the epoch went stale, or the handle was dropped.
    pub stopped: bool,
}

enum Command {
    ShutDown(oneshot::Sender<()>),
}

/// Controls a broker started with [`RegisteredBroker::start_heartbeats`]. Dropping it stops the
/// heartbeats without a shutdown, as a crashed broker would.
#[derive(Debug)]
pub struct BrokerHandle {
    broker_id: i32,
    epoch: i64,
    status: watch::Receiver<BrokerStatus>,
    commands: mpsc::UnboundedSender<Command>,
    task: JoinHandle<()>,
}

pub(crate) fn start(broker: RegisteredBroker) -> BrokerHandle {
    let initial = BrokerStatus {
        fenced: true,
        caught_up: false,
        shut_down: false,
        heartbeats: 0,
        last_error: None,
        stopped: false,
    };
    let (publish, status) = watch::channel(initial);
    let (commands, queue) = mpsc::unbounded_channel();
    let (broker_id, epoch) = (broker.broker_id, broker.epoch);
    let task = tokio::spawn(run(broker, queue, publish));
    BrokerHandle {
        broker_id,
        epoch,
        status,
        commands,
        task,
    }
}

async fn run(
    broker: RegisteredBroker,
    mut commands: mpsc::UnboundedReceiver<Command>,
    publish: watch::Sender<BrokerStatus>,
) {
    let mut shutting_down: Option<oneshot::Sender<()>> = None;
    let mut first = true;
    loop {
        let delay = if first {
            Duration::ZERO
        } else {
            broker.heartbeat_interval
        };
        first = false;
        tokio::select! {
            biased;
            command = commands.recv(), if shutting_down.is_none() => match command {
                // Ask at once rather than waiting for the interval.
                Some(Command::ShutDown(done)) => shutting_down = Some(done),
                None => break,
            },
            () = tokio::time::sleep(delay) => {}
        }
        let outcome = broker
            .heartbeat_once(broker.metadata_offset(), false, shutting_down.is_some())
            .await;
        let stale =
            matches!(&outcome, Err(e) if e.error_code() == Some(ErrorCode::STALE_BROKER_EPOCH));
        let granted = matches!(&outcome, Ok(r) if r.should_shut_down);
        publish.send_modify(|status| match &outcome {
            Ok(response) => {
                status.fenced = response.is_fenced;
                status.caught_up = response.is_caught_up;
                status.shut_down = response.should_shut_down;
                status.heartbeats += 1;
                status.last_error = None;
            }
            Err(e) => status.last_error = Some(e.to_string()),
        });
        if let Err(e) = &outcome {
            debug!(broker_id = broker.broker_id, error = %e, "broker heartbeat failed");
        }
        // A stale epoch never recovers (the broker would have to register again); a granted
        // shutdown is the end. Transport errors are retried on the next interval.
        if stale || granted {
            break;
        }
    }
    publish.send_modify(|status| status.stopped = true);
    if let Some(done) = shutting_down {
        let _ = done.send(());
    }
}

impl BrokerHandle {
    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    pub fn status(&self) -> BrokerStatus {
        self.status.borrow().clone()
    }

    /// A receiver that sees every change of the status.
    pub fn subscribe(&self) -> watch::Receiver<BrokerStatus> {
        self.status.clone()
    }

    /// Waits until `predicate` holds for the status, for at most `timeout`.
    pub async fn wait_for(
        &self,
        mut predicate: impl FnMut(&BrokerStatus) -> bool,
        timeout: Duration,
    ) -> Result<BrokerStatus, ClientError> {
        let mut receiver = self.status.clone();
        let waited = tokio::time::timeout(timeout, async {
            receiver
                .wait_for(|s| predicate(s) || s.stopped)
                .await
                .map(|s| s.clone())
        })
        .await;
        let last = self.status();
        match waited {
            Ok(Ok(status)) if predicate(&status) => Ok(status),
            _ => Err(ClientError::WaitTimeout {
                what: format!(
                    "broker {} (epoch {}; last: fenced {}, {} heartbeats, stopped {}, error {})",
                    self.broker_id,
                    self.epoch,
                    last.fenced,
                    last.heartbeats,
                    last.stopped,
                    last.last_error.as_deref().unwrap_or("none")
                ),
                after: timeout,
            }),
        }
    }

    /// Waits until the controller unfenced the broker.
    pub async fn wait_unfenced(&self, timeout: Duration) -> Result<BrokerStatus, ClientError> {
        self.wait_for(|s| !s.fenced && s.heartbeats > 0, timeout)
            .await
    }

    /// Heartbeats with WantShutDown until the controller answers ShouldShutDown, for at most
    /// `timeout`; the task then stops.
    pub async fn shut_down(self, timeout: Duration) -> Result<BrokerStatus, ClientError> {
        let (done, finished) = oneshot::channel();
        if self.commands.send(Command::ShutDown(done)).is_ok() {
            let _ = tokio::time::timeout(timeout, finished).await;
        }
        let status = self.status();
        if status.shut_down {
            Ok(status)
        } else {
            Err(ClientError::WaitTimeout {
                what: format!(
                    "the controller to let broker {} shut down (last error: {})",
                    self.broker_id,
                    status.last_error.as_deref().unwrap_or("none")
                ),
                after: timeout,
            })
        }
    }

    /// Stops heartbeating at once, without asking to shut down.
    pub fn kill(self) {
        self.task.abort();
    }

    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Drop for BrokerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
