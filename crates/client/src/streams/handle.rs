//! A streams member running on its own task, with timers, controlled through a handle.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::debug;

use crate::client::Client;
use crate::error::ClientError;
use crate::streams::assignment::Assignment;
use crate::streams::member::{MemberSnapshot, MemberState, StreamsMember};
use crate::streams::member_config::StreamsMemberConfig;
use crate::streams::push::PushCompletion;
use crate::streams::status::StreamsGroupStatus;

enum Command {
    Leave {
        permanently: bool,
        done: oneshot::Sender<Result<(), ClientError>>,
    },
    ShutdownApplication,
    HeartbeatNow,
}

/// Controls a member started with [`StreamsMember::start`] or [`StreamsMember::spawn`].
///
/// Dropping the handle stops the member without leaving, like [`StreamsMemberHandle::kill`].
#[derive(Debug)]
pub struct StreamsMemberHandle {
    group_id: String,
    member_id: String,
    commands: mpsc::UnboundedSender<Command>,
    snapshot: watch::Receiver<MemberSnapshot>,
    task: JoinHandle<()>,
}

impl StreamsMember {
    /// Starts a member for `config` on its own task: it joins, then heartbeats on the
    /// coordinator's interval, at once when its tasks changed, and after a back-off on errors.
    pub fn start(client: &Client, config: StreamsMemberConfig) -> StreamsMemberHandle {
        StreamsMember::new(client, config).spawn()
    }

    /// Runs this member on its own task from wherever it is now.
    pub fn spawn(self) -> StreamsMemberHandle {
        let (commands, queue) = mpsc::unbounded_channel();
        let (publish, snapshot) = watch::channel(self.snapshot());
        let (group_id, member_id) = (self.group_id().to_string(), self.member_id().to_string());
        let task = tokio::spawn(run(self, queue, publish));
        StreamsMemberHandle {
            group_id,
            member_id,
            commands,
            snapshot,
            task,
        }
    }
}

async fn run(
    mut member: StreamsMember,
    mut commands: mpsc::UnboundedReceiver<Command>,
    publish: watch::Sender<MemberSnapshot>,
) {
    // Delays count from the end of the previous heartbeat: a back-off then starts when the
    // error is known, and an interval is longer by one round trip, which no timer minds.
    let mut last_done: Option<Instant> = None;
    // The topology description push in flight: polled beside the heartbeat timer, never
    // awaited by a heartbeat, so a push whose answer is slow or never comes delays nothing.
    let mut push: Option<Pin<Box<dyn Future<Output = PushCompletion> + Send>>> = None;
    loop {
        if push.is_none() {
            if let Some(started) = member.maybe_push() {
                push = Some(Box::pin(started.send()));
                publish_snapshot(&member, &publish);
            }
        }
        let due = last_done.map_or_else(Instant::now, |done| done + member.next_heartbeat_delay());
        // A push held back by throttling or back-off wakes the loop when it may go. (One that
        // could go now but did not is waiting for a coordinator, which the heartbeat finds.)
        let push_due = if push.is_none() {
            member
                .next_push_delay()
                .filter(|d| !d.is_zero())
                .map(|d| Instant::now() + d)
        } else {
            None
        };
        tokio::select! {
            // Commands first: a leave must not wait behind a heartbeat that is already due.
            biased;
            command = commands.recv() => match command {
                Some(Command::Leave { permanently, done }) => {
                    let result = if permanently { member.leave_permanently().await } else { member.leave().await };
                    publish.send_replace(member.snapshot());
                    let _ = done.send(result);
                    return;
                }
                Some(Command::ShutdownApplication) => {
                    member.shutdown_application();
                    continue;
                }
                Some(Command::HeartbeatNow) => {
                    member.hurry();
                    continue;
                }
                // Every handle is gone: stop without leaving.
                None => return,
            },
            completion = async { push.as_mut().expect("guarded by the branch condition").await }, if push.is_some() => {
                push = None;
                member.handle_push_completion(completion);
                publish_snapshot(&member, &publish);
                continue;
            }
            () = tokio::time::sleep_until(push_due.unwrap_or(due)), if push_due.is_some_and(|at| at < due) => continue,
            () = tokio::time::sleep_until(due) => {}
        }
        let outcome = member.heartbeat_once().await;
        last_done = Some(Instant::now());
        publish_snapshot(&member, &publish);
        if let Err(error) = outcome {
            debug!(group = member.group_id(), member = member.member_id(), error = %error, "member task ends");
            return;
        }
    }
}

/// Publishes the member's snapshot when it changed.
fn publish_snapshot(member: &StreamsMember, publish: &watch::Sender<MemberSnapshot>) {
    publish.send_if_modified(|current| {
        let next = member.snapshot();
        let changed = *current != next;
        *current = next;
        changed
    });
}

impl StreamsMemberHandle {
    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// What the member knows right now.
    pub fn snapshot(&self) -> MemberSnapshot {
        self.snapshot.borrow().clone()
    }

    /// A receiver that sees every change of the member's snapshot.
    pub fn subscribe(&self) -> watch::Receiver<MemberSnapshot> {
        self.snapshot.clone()
    }

    pub fn assignment(&self) -> Assignment {
        self.snapshot.borrow().assignment.clone()
    }

    pub fn statuses(&self) -> Vec<StreamsGroupStatus> {
        self.snapshot.borrow().statuses.clone()
    }

    pub fn member_epoch(&self) -> i32 {
        self.snapshot.borrow().member_epoch
    }

    pub fn state(&self) -> MemberState {
        self.snapshot.borrow().state
    }

    /// Waits until `predicate` holds for the member's snapshot, for at most `timeout`.
    /// Fails early when the member stops without the predicate holding.
    pub async fn wait_for(
        &self,
        mut predicate: impl FnMut(&MemberSnapshot) -> bool,
        timeout: Duration,
    ) -> Result<MemberSnapshot, ClientError> {
        let mut receiver = self.snapshot.clone();
        let waited = tokio::time::timeout(timeout, async {
            receiver.wait_for(|s| predicate(s)).await.map(|s| s.clone())
        })
        .await;
        match waited {
            Ok(Ok(snapshot)) => Ok(snapshot),
            Ok(Err(_)) => {
                let last = receiver.borrow().clone();
                Err(ClientError::MemberNotActive {
                    member_id: self.member_id.clone(),
                    reason: format!(
                        "it stopped in state {:?} (last error: {})",
                        last.state,
                        last.last_error.as_deref().unwrap_or("none")
                    ),
                })
            }
            Err(_) => {
                let last = receiver.borrow().clone();
                Err(ClientError::WaitTimeout {
                    what: format!(
                        "streams member {} of group {} (last: state {:?}, epoch {}, {} active tasks, error {})",
                        self.member_id,
                        self.group_id,
                        last.state,
                        last.member_epoch,
                        last.assignment.active_count(),
                        last.last_error.as_deref().unwrap_or("none")
                    ),
                    after: timeout,
                })
            }
        }
    }

    /// Sets ShutdownApplication on the next heartbeats, sent at once.
    pub fn shutdown_application(&self) {
        let _ = self.commands.send(Command::ShutdownApplication);
    }

    /// Sends the next heartbeat without waiting for the interval.
    pub fn heartbeat_now(&self) {
        let _ = self.commands.send(Command::HeartbeatNow);
    }

    /// Leaves (epoch -1, or -2 for a static member) and stops the member.
    pub async fn leave(self) -> Result<(), ClientError> {
        self.leave_inner(false).await
    }

    /// Leaves with epoch -1 (static members too) and stops the member.
    pub async fn leave_permanently(self) -> Result<(), ClientError> {
        self.leave_inner(true).await
    }

    async fn leave_inner(self, permanently: bool) -> Result<(), ClientError> {
        let (done, result) = oneshot::channel();
        let stopped = || ClientError::MemberNotActive {
            member_id: self.member_id.clone(),
            reason: "its task has stopped".to_string(),
        };
        if self
            .commands
            .send(Command::Leave { permanently, done })
            .is_err()
        {
            return Err(stopped());
        }
        result.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// Stops the member at once WITHOUT leaving, as a crashed process would: nothing more is
    /// sent (a heartbeat already written to the socket may still be answered).
    pub fn kill(self) {
        self.task.abort();
    }

    /// True once the member's task has ended (left, failed, or killed).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl Drop for StreamsMemberHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
