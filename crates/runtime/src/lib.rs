//! The one runtime of kcoord: every core (the controller, each coordinator shard, and the
//! cores still to come) is driven by [`Runtime`], and by nothing else.
//!
//! A core is a state plus handlers. A handler is a plain function of the state, a request and
//! `now` that returns an [`Outcome`]: the records to append, the response, and the effects to
//! apply. It reads the state and changes nothing; what it wants changed is in its outcome.
//! [`Runtime::run`] then, in this order:
//!
//! 1. runs the handler, catching a panic (a panic is a refusal: nothing was applied, because a
//!    handler cannot apply anything);
//! 2. **prepares** the batch ([`Core::prepare`]): encodes every record at the offset the log
//!    will give it, checks that each fits one log entry, and proves that the batch replays;
//!    a batch refused here changes nothing;
//! 3. **appends** the prepared batch to the [`Log`], all or nothing: in memory only
//!    ([`Volatile`]), or to the durable log the owner configured (written and synced before
//!    it returns, or queued for a group commit whose receipt the caller waits on before it
//!    answers); a batch the log refuses changes nothing;
//! 4. **replays** the batch into the state ([`Core::replay`]), the only way records change
//!    it; preparation proved that this cannot fail;
//! 5. **applies** the outcome's effects ([`Core::apply`]): what a core keeps only in memory
//!    (timers, caches, broker sessions, statistics), changed after the records and in order;
//! 6. hands back the response with the log's receipt: the caller answers once the receipt
//!    says the batch (and every batch before it, which the handler may have read) is durable.
//!
//! Nothing is applied before the append succeeds, so a failure at any step up to 3 leaves
//! the core as it was, and there is nothing to undo. Apache Kafka's coordinator runtime
//! (`CoordinatorResult` and `replay`) and raft-rs's `Ready` are the models; the difference from
//! Kafka is that a refused write changes nothing here, where Kafka's runtime replays first and
//! reverts to a snapshot.
//!
//! Two things can still fail after the append, and both are bugs or faults outside the core:
//! a replay that does not match its preparation, or a panic in replay or an effect
//! ([`RunError::Diverged`]); and a group-committed batch that the disk refuses after it was
//! queued (the log's owner sees that). In both cases the state no longer follows the log, and
//! the owner rebuilds the core from its log, as a restart would: a restart is a replay.
//!
//! Inputs that come from outside a core's own requests (a new topic catalog, changed group
//! configs, the node's group count) reach it as effects through [`Runtime::input`], through
//! the same [`Core::apply`] a handler's effects go through.
use std::panic::AssertUnwindSafe;

use kcoord_metadata::{LogRecord, RecordAndVersion, ReplayError};

/// What a handler decided: the records to append (one batch, all or nothing), the response,
/// and the effects to apply once the batch is in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<R, E> {
    pub records: Vec<RecordAndVersion>,
    pub response: R,
    pub effects: Vec<E>,
}

impl<R, E> Outcome<R, E> {
    /// An answer that changes nothing.
    pub fn answer(response: R) -> Self {
        Outcome {
            records: Vec::new(),
            response,
            effects: Vec::new(),
        }
    }

    /// The same records and effects with another answer.
    pub fn map<S>(self, f: impl FnOnce(R) -> S) -> Outcome<S, E> {
        Outcome {
            records: self.records,
            response: f(self.response),
            effects: self.effects,
        }
    }

    /// Adds an effect, applied after those already in the outcome.
    pub fn with_effect(mut self, effect: E) -> Self {
        self.effects.push(effect);
        self
    }

    /// Adds effects, applied after those already in the outcome.
    pub fn with_effects(mut self, effects: impl IntoIterator<Item = E>) -> Self {
        self.effects.extend(effects);
        self
    }
}

/// A state the runtime can drive: its handlers are its own business (each a function of
/// `&Self` returning an [`Outcome`]); these are the steps the runtime takes with their
/// outcomes.
pub trait Core {
    /// A change kept in memory only, applied after the batch.
    type Effect;

    /// The batch encoded at the offsets the core's log gives it next, once it is known to
    /// fit the log and to replay onto the current state. Changes nothing.
    fn prepare(&self, records: &[RecordAndVersion]) -> Result<Vec<LogRecord>, ReplayError>;

    /// Appends `entries` (what [`Core::prepare`] made of `records`) to the core's in-memory
    /// log and replays `records`. An `Err` is a bug: the state must then be rebuilt.
    fn replay(
        &mut self,
        records: &[RecordAndVersion],
        entries: Vec<LogRecord>,
    ) -> Result<(), ReplayError>;

    /// Applies one effect.
    fn apply(&mut self, effect: Self::Effect);

    /// The offset the core's log gives its next record.
    fn next_offset(&self) -> u64;
}

/// A core borrowed for one commit, as a controller driven by hand is (tests, tools).
impl<C: Core + ?Sized> Core for &mut C {
    type Effect = C::Effect;

    fn prepare(&self, records: &[RecordAndVersion]) -> Result<Vec<LogRecord>, ReplayError> {
        (**self).prepare(records)
    }

    fn replay(
        &mut self,
        records: &[RecordAndVersion],
        entries: Vec<LogRecord>,
    ) -> Result<(), ReplayError> {
        (**self).replay(records, entries)
    }

    fn apply(&mut self, effect: C::Effect) {
        (**self).apply(effect);
    }

    fn next_offset(&self) -> u64 {
        (**self).next_offset()
    }
}

/// Where the runtime appends a prepared batch before the core replays it.
pub trait Log {
    /// What the caller waits on before it answers (nothing, for a log that is durable when
    /// `append` returns).
    type Receipt;
    type Error: std::error::Error + Send + Sync + 'static;

    /// Appends `entries`, all or nothing: on `Err` nothing of the batch is in the log.
    /// `next_offset` is the core's next offset after the batch; a log that makes batches
    /// durable later uses it, for a batch with no records, to make the caller wait for the
    /// batches before it, which the handler may have read.
    fn append(
        &mut self,
        entries: &[LogRecord],
        next_offset: u64,
    ) -> Result<Self::Receipt, Self::Error>;
}

/// A log kept in memory only (the core's own in-memory log is the whole of it).
#[derive(Debug, Clone, Copy, Default)]
pub struct Volatile;

impl Log for Volatile {
    type Receipt = ();
    type Error = std::convert::Infallible;

    fn append(&mut self, _: &[LogRecord], _: u64) -> Result<(), std::convert::Infallible> {
        Ok(())
    }
}

/// Why a handler's outcome was not committed.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E: std::error::Error + 'static> {
    /// The handler panicked: a bug. Nothing was applied.
    #[error("the handler panicked: {0}")]
    Panicked(String),
    /// The batch does not encode, does not fit a log entry, or does not replay. Nothing was
    /// applied.
    #[error("the batch cannot be appended: {0}")]
    Invalid(ReplayError),
    /// The log refused the batch. Nothing was applied.
    #[error("the log refused the batch: {0}")]
    Log(#[source] E),
    /// The batch is in the log but the state did not take it (a replay that contradicts its
    /// preparation, or a panic in replay or an effect): a bug. The core must be rebuilt from
    /// its log before it runs anything else.
    #[error("the state no longer follows the log: {0}")]
    Diverged(String),
}

/// A refused outcome: why, and the handler's response when the refusal came after it decided
/// (so that parts of a response the handler itself refused keep their own errors).
#[derive(Debug)]
pub struct Refused<R, E: std::error::Error + 'static> {
    pub error: RunError<E>,
    pub decided: Option<R>,
}

/// A committed outcome: the response, what to wait for before answering, and how many records
/// the batch had.
#[derive(Debug)]
pub struct Committed<R, A> {
    pub response: R,
    pub receipt: A,
    pub records: usize,
}

/// A core and the log its batches go to. It reads as its core (`Deref`); it changes the core
/// only through [`Runtime::run`] and [`Runtime::input`].
#[derive(Debug)]
pub struct Runtime<C, L> {
    core: C,
    log: L,
}

impl<C, L> std::ops::Deref for Runtime<C, L> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.core
    }
}

impl<C: Core, L: Log> Runtime<C, L> {
    pub fn new(core: C, log: L) -> Self {
        Runtime { core, log }
    }

    pub fn core(&self) -> &C {
        &self.core
    }

    pub fn log(&self) -> &L {
        &self.log
    }

    /// The log, for its owner's upkeep (a snapshot rewrites a durable log).
    pub fn log_mut(&mut self) -> &mut L {
        &mut self.log
    }

    /// Replaces the log (a shard's durable log becomes its log once the shard has loaded).
    pub fn set_log(&mut self, log: L) {
        self.log = log;
    }

    /// Replaces the core with one rebuilt from its log (after [`RunError::Diverged`], or when
    /// a durable log refused batches the core had already replayed).
    pub fn replace_core(&mut self, core: C) -> C {
        std::mem::replace(&mut self.core, core)
    }

    /// Gives the core and the log back.
    pub fn into_parts(self) -> (C, L) {
        (self.core, self.log)
    }

    /// Runs `handler` on the core and commits its outcome (steps 1 to 6 of the module docs).
    pub fn run<R>(
        &mut self,
        handler: impl FnOnce(&C) -> Outcome<R, C::Effect>,
    ) -> Result<Committed<R, L::Receipt>, Refused<R, L::Error>> {
        let core = &self.core;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler(core)))
            .map_err(|payload| refused(RunError::Panicked(panic_message(&*payload)), None))?;
        self.commit(outcome)
    }

    /// Steps 2 to 6 for an outcome already decided.
    pub fn commit<R>(
        &mut self,
        outcome: Outcome<R, C::Effect>,
    ) -> Result<Committed<R, L::Receipt>, Refused<R, L::Error>> {
        let Outcome {
            records,
            response,
            effects,
        } = outcome;
        let entries = if records.is_empty() {
            Vec::new()
        } else {
            match self.core.prepare(&records) {
                Ok(entries) => entries,
                Err(e) => return Err(refused(RunError::Invalid(e), Some(response))),
            }
        };
        let next_offset = entries
            .last()
            .map_or_else(|| self.core.next_offset(), |last| last.offset + 1);
        let receipt = match self.log.append(&entries, next_offset) {
            Ok(receipt) => receipt,
            Err(e) => return Err(refused(RunError::Log(e), Some(response))),
        };
        let appended = records.len();
        let core = &mut self.core;
        let applied = std::panic::catch_unwind(AssertUnwindSafe(|| {
            if !records.is_empty() {
                core.replay(&records, entries).map_err(|e| e.to_string())?;
            }
            for effect in effects {
                core.apply(effect);
            }
            Ok::<(), String>(())
        }));
        match applied {
            Ok(Ok(())) => Ok(Committed {
                response,
                receipt,
                records: appended,
            }),
            Ok(Err(reason)) => Err(refused(RunError::Diverged(reason), None)),
            Err(payload) => Err(refused(
                RunError::Diverged(format!("panicked: {}", panic_message(&*payload))),
                None,
            )),
        }
    }

    /// Applies an input from outside the core's requests, through [`Core::apply`] as a
    /// handler's effects are applied.
    pub fn input(&mut self, effect: C::Effect) {
        self.core.apply(effect);
    }
}

fn refused<R, E: std::error::Error + 'static>(
    error: RunError<E>,
    decided: Option<R>,
) -> Refused<R, E> {
    Refused { error, decided }
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests;
