//! Committing one handler's outcome on the controller's runtime, and what the task does with
//! a batch once it is committed (module docs of [`super`], steps 1-4).

use std::sync::Arc;

use kcoord_controller::{AclChange, Controller, ControllerError, Outcome};
use kcoord_metadata::file_log::FileLogError;
use kcoord_metadata::{ReplayError, Store};
use kcoord_runtime::RunError;
use kcoord_wire::ErrorCode;
use tracing::error;

use super::ControllerRuntime;
use crate::support::clock::now_ms;

/// Why a batch was not applied. Nothing of it changed in memory.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The handler panicked: a bug.
    #[error("the {api} handler panicked: {message}")]
    Panicked { api: &'static str, message: String },
    /// A record does not encode or the batch does not replay: a bug.
    #[error("{0}")]
    Invalid(ControllerError),
    /// A record is larger than one entry of the log may be.
    #[error("record offset {offset} is {size} bytes, more than a metadata log entry may hold")]
    TooLarge { offset: u64, size: usize },
    /// The durable log could not take the batch.
    #[error("could not write the metadata log: {0}")]
    Log(#[from] FileLogError),
}

impl CommitError {
    /// What the client is answered, after Kafka 4.4's `EventHandlerExceptionInfo.fromInternal`
    /// (metadata/src/main/java/org/apache/kafka/controller/errors/). A write the metadata log
    /// cannot take never commits: Kafka's active controller then resigns
    /// (`QuorumController.renounce`), which fails every pending write with
    /// `NotControllerException("No controller appears to be active.")`: NOT_CONTROLLER, a
    /// retriable error on which Kafka's admin client and brokers look for the controller again
    /// and retry. An overly large batch is POLICY_VIOLATION ("Unable to perform excessively
    /// large batch operation.", from `BoundedListTooLongException`); anything else, a bug, is
    /// UNKNOWN_SERVER_ERROR.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            CommitError::Log(_) => ErrorCode::NOT_CONTROLLER,
            CommitError::TooLarge { .. } => ErrorCode::POLICY_VIOLATION,
            CommitError::Panicked { .. } | CommitError::Invalid(_) => {
                ErrorCode::UNKNOWN_SERVER_ERROR
            }
        }
    }

    /// The error (code and message) answered for it.
    fn to_controller_error(&self) -> ControllerError {
        let message = match self {
            CommitError::Log(_) => {
                "The controller could not write its metadata log; nothing was changed. Retry."
                    .to_owned()
            }
            CommitError::TooLarge { .. } => {
                "Unable to perform excessively large batch operation.".to_owned()
            }
            other => format!("The controller could not apply the change: {other}"),
        };
        ControllerError::new(self.error_code(), message)
    }
}

/// A request the controller did not carry out: the error to answer, and what the handler had
/// decided when the failure came after the decision (so that results refused by the decision
/// itself keep their own errors).
#[derive(Debug)]
pub struct Refused<R> {
    pub error: ControllerError,
    pub decided: Option<R>,
}

impl<R> Refused<R> {
    pub(super) fn by_handler(error: ControllerError) -> Self {
        Refused {
            error,
            decided: None,
        }
    }
}

impl ControllerRuntime {
    /// Runs one handler and commits its outcome (module docs, steps 1-4): the answer, or why
    /// the request was not carried out.
    pub(super) async fn handle<R>(
        &mut self,
        api: &'static str,
        handler: impl FnOnce(&Controller) -> Result<Outcome<R>, ControllerError>,
    ) -> Result<R, Refused<R>> {
        let mut batch = BatchFacts::default();
        let ran = self.controller.run(|controller| match handler(controller) {
            Ok(outcome) => {
                batch = BatchFacts::of(&outcome);
                outcome.map(Ok)
            }
            Err(refused) => Outcome::answer(Err(refused)),
        });
        let committed = match ran {
            Ok(committed) => committed,
            Err(refused) => return Err(self.refused(api, refused)),
        };
        let response = committed.response.map_err(Refused::by_handler)?;
        let grown = self.controller.log_mut().take_appended_bytes();
        self.snapshots.grew(grown);
        self.sessions.applied(&batch.effects);
        self.feed_authorizer(&batch.acl_changes);
        if batch.security_changed {
            self.published_security = Arc::new(self.controller.state().security.clone());
        }
        if committed.records > 0 {
            self.publish(batch.topics_changed).await;
        }
        Ok(response)
    }

    /// Commits an outcome already decided, as [`ControllerRuntime::handle`] commits a
    /// handler's.
    #[cfg(test)]
    pub(super) async fn commit<R>(
        &mut self,
        api: &'static str,
        outcome: Outcome<R>,
    ) -> Result<R, Refused<R>> {
        self.handle(api, |_| Ok(outcome)).await
    }

    /// Why a batch was not committed, logged; a controller whose state no longer follows its
    /// log is rebuilt from it.
    fn refused<R>(
        &mut self,
        api: &'static str,
        refused: kcoord_runtime::Refused<Result<R, ControllerError>, FileLogError>,
    ) -> Refused<R> {
        let decided = refused.decided.and_then(Result::ok);
        let next_offset = self.controller.store().log().next_offset();
        let (error, decided) = match refused.error {
            RunError::Panicked(message) => (CommitError::Panicked { api, message }, None),
            RunError::Invalid(ReplayError::TooLarge { index, source, .. }) => (
                CommitError::TooLarge {
                    offset: next_offset + index as u64,
                    size: source.size,
                },
                decided,
            ),
            RunError::Invalid(e) => (CommitError::Invalid(ControllerError::internal(e)), decided),
            RunError::Log(e) => (CommitError::Log(e), decided),
            RunError::Diverged(reason) => {
                self.rebuild(now_ms());
                (
                    CommitError::Invalid(ControllerError::internal(reason)),
                    None,
                )
            }
        };
        error!(api, error = %error, records = 0, "controller batch not applied; nothing changed");
        Refused {
            error: error.to_controller_error(),
            decided,
        }
    }

    /// Rebuilds the controller from its log, with the broker sessions it had.
    fn rebuild(&mut self, now: i64) {
        let rebuilt = Store::replay_log(self.controller.store().log())
            .map_err(|e| e.to_string())
            .and_then(|store| {
                Controller::with_store(self.controller.config().clone(), store, now)
                    .map_err(|e| e.to_string())
            });
        match rebuilt {
            Ok(mut controller) => {
                self.sessions.restore(&mut controller);
                self.controller.replace_core(controller);
            }
            Err(e) => {
                error!(error = %e, "the controller's log does not replay; the controller keeps its state")
            }
        }
    }
}

/// The records the topic catalog is built from (a ConfigRecord may also be about a broker;
/// publishing the topics once too often costs nothing).
fn is_topic_record(record_type: i16) -> bool {
    use kcoord_wire::records::{ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord};
    [
        TopicRecord::API_KEY,
        PartitionRecord::API_KEY,
        RemoveTopicRecord::API_KEY,
        ConfigRecord::API_KEY,
    ]
    .contains(&record_type)
}

/// What the runtime's owner does with a batch once it is committed, read from the outcome
/// before the runtime takes it.
#[derive(Default)]
struct BatchFacts {
    topics_changed: bool,
    security_changed: bool,
    acl_changes: Vec<AclChange>,
    effects: Vec<kcoord_controller::Effect>,
}

impl BatchFacts {
    fn of<R>(outcome: &Outcome<R>) -> BatchFacts {
        let types = || outcome.records.iter().map(|r| r.record.record_type());
        BatchFacts {
            topics_changed: types().any(is_topic_record),
            security_changed: types().any(is_security_record),
            acl_changes: outcome
                .records
                .iter()
                .filter_map(|r| AclChange::of(&r.record))
                .collect(),
            effects: outcome.effects.clone(),
        }
    }
}

/// The records of the ACLs and SCRAM credentials.
fn is_security_record(record_type: i16) -> bool {
    use kcoord_wire::records::{
        AccessControlEntryRecord, RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord,
        UserScramCredentialRecord,
    };
    [
        AccessControlEntryRecord::API_KEY,
        RemoveAccessControlEntryRecord::API_KEY,
        UserScramCredentialRecord::API_KEY,
        RemoveUserScramCredentialRecord::API_KEY,
    ]
    .contains(&record_type)
}
