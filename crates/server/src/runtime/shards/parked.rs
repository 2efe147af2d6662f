//! JoinGroup and SyncGroup requests parked until the rest of their classic group catches up.
//!
//! The shard decides that a request waits ([`Reply::Parked`] with a waiter id) and, in
//! whichever later job completes the phase, what each waiter is answered; here the waiting
//! requests are kept by id and each answer is handed over, with what it must wait for to be
//! durable (the records of the job that decided it, and everything before them). A shard
//! rebuilt from its log forgets what it kept in memory, its parked requests among it: they are
//! answered NOT_COORDINATOR, as Kafka answers them when a coordinator unloads, and their
//! clients find the coordinator again and rejoin.
use std::collections::HashMap;

use kcoord_coordinator::classic::{ClassicAnswer, Reply, WaiterId};
use kcoord_coordinator::{CoordinatorShard, Outcome};
use tokio::sync::oneshot;
use tracing::error;

use super::handle::{Locked, ShardSink, Shared};
use super::{ShardError, ShardHandle};
use crate::runtime::shard_log::DurableWait;
use crate::support::clock::Stamp;

/// An answer handed to a parked request, and what to wait for before sending it.
pub(super) type Delivery = (ClassicAnswer, DurableWait);

/// The parked requests of one shard.
#[derive(Debug, Default)]
pub(super) struct Parked {
    waiting: HashMap<WaiterId, oneshot::Sender<Delivery>>,
}

impl Parked {
    /// Forgets every parked request (their senders dropped: each is answered NOT_COORDINATOR).
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
    }
}

impl Shared {
    /// Hands the answers the shard decided to their parked requests; under the shard's lock.
    pub(super) fn deliver(&self, locked: &mut Locked) {
        if !locked.runtime.core().has_classic_answers() {
            return;
        }
        let answers = match locked.runtime.run(|shard| shard.take_classic_answers()) {
            Ok(done) => done.response,
            Err(refused) => {
                error!(shard = self.index, error = %refused.error, "could not take the classic groups' answers");
                return;
            }
        };
        let next_offset = kcoord_runtime::Core::next_offset(locked.runtime.core());
        for (waiter, answer) in answers {
            let Some(sender) = locked.parked.waiting.remove(&waiter) else {
                // Its request was parked by a shard state since rebuilt, or never registered.
                continue;
            };
            let durable = match locked.runtime.log() {
                ShardSink::Memory => DurableWait::Ready,
                ShardSink::Durable(log) => log.submit(Vec::new(), next_offset),
            };
            // The request may have gone with its connection: nothing to answer then.
            let _ = sender.send((answer, durable));
        }
    }
}

impl ShardHandle {
    /// Runs a JoinGroup or SyncGroup `handler` as one job; its answer now, or, when the shard
    /// parks the request, the answer a later job gives it (`unwrap` takes it out of the
    /// [`ClassicAnswer`]). Answered once what it depends on is durable.
    pub async fn call_parked<T>(
        &self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> Outcome<Reply<T>>,
        unwrap: fn(ClassicAnswer) -> Option<T>,
    ) -> Result<T, ShardError> {
        self.ready()?;
        let reply = {
            let mut locked = self.shared.lock();
            // The shard may have moved, or be reloading, since the check above.
            self.ready()?;
            let ran = self.shared.run_job(&mut locked, Stamp::now(), handler);
            let parked = match ran {
                Ok((Reply::Parked(waiter), _)) => {
                    let (sender, receiver) = oneshot::channel();
                    locked.parked.waiting.insert(waiter, sender);
                    Ok(Err(receiver))
                }
                Ok((Reply::Now(answer), wait)) => Ok(Ok((answer, wait))),
                Err(e) => Err(e),
            };
            self.shared.deliver(&mut locked);
            self.shared.wake_timers(&locked);
            parked?
        };
        match reply {
            Ok((answer, durable)) => {
                durable.wait().await.map_err(|_| ShardError::NotDurable)?;
                Ok(answer)
            }
            Err(receiver) => {
                let (answer, durable) = receiver.await.map_err(|_| ShardError::Moved)?;
                durable.wait().await.map_err(|_| ShardError::NotDurable)?;
                unwrap(answer).ok_or(ShardError::Failed)
            }
        }
    }
}
