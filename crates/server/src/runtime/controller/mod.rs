//! The controller runtime: the one task that runs the controller's decisions. Every decision
//! (topics, group configs, broker registrations and heartbeats, fencing, producer ids) is
//! made by the sans-IO [`kcoord_controller::Controller`]; this module owns what a decision
//! cannot: the command channel, the wall clock, the durable log, and publishing the results.
//! It is named `controller_runtime`, not `controller`, because the controller, the thing that
//! decides, is `crates/controller`; this is the room that runs it, as the shards' runtime runs
//! the coordinator (a `runtime/` directory would suggest one runtime for both, and the shards'
//! runtime lives in `shards.rs`).
//!
//! Commands arrive over a channel (CreateTopics, DeleteTopics, and the same CreateTopics on
//! behalf of streams groups and Metadata auto-creation; IncrementalAlterConfigs of groups;
//! BrokerRegistration, BrokerHeartbeat; producer id blocks). For each, the runtime:
//!
//! 1. calls the handler, a function of (controller, request, `now`), under a panic guard (a
//!    panic answers UNKNOWN_SERVER_ERROR, applies nothing, and the task keeps serving);
//! 2. checks the outcome's batch: every record encodes, fits one log entry, and the whole batch
//!    replays onto a copy of the controller's state ([`kcoord_controller::Controller::prepare`]);
//! 3. appends the batch to the durable log first, when `metadata.log.dir` is set;
//! 4. only then applies it to memory ([`kcoord_controller::Controller::apply`]), publishes the
//!    new [`TopicsImage`] and [`ClusterImage`], creates or deletes partition logs, tells every
//!    coordinator shard about topic and group-config changes, and answers.
//!
//! A batch refused at step 2 or 3 changes nothing in memory; the client gets Kafka's error
//! (NOT_CONTROLLER when the log could not be written: see [`CommitError::error_code`]).
//! Broker sessions expire on the wall clock: the task wakes at the controller's
//! `next_deadline()` and runs `tick`'s outcome the same way.
//!
//! Between commands, when the log has grown enough since the last snapshot ([`snapshots`]),
//! the task replaces it by a snapshot of the state: the file is rewritten with it (atomically:
//! a failed rewrite leaves the old file, is logged, and changes nothing) and the controller is
//! rebuilt over it, with the same state, offsets and broker sessions, so that neither memory
//! nor the next restart grows with the history.

pub mod boot;
pub mod durable;
mod outcome_log;
mod security;
pub mod snapshots;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use kcoord_controller::group_configs::{GroupConfigChange, ResourceError};
use kcoord_controller::{
    random_topic_id, AclChange, BrokerHeartbeatReply, BrokerRegistrationReply, Controller,
    ControllerError, Outcome, ProducerIdBlock, TickEvent, TopicAccess,
};
use kcoord_metadata::file_log::FileLogError;
use kcoord_metadata::{ReplayError, SecurityImage, Store, TopicsImage};
use kcoord_runtime::{RunError, Runtime};
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, CreateTopicsRequest, DeleteTopicsRequest,
};
use kcoord_wire::ErrorCode;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{error, info, warn};

use crate::support::logging::capped;
use outcome_log::{log_topic_outcomes, TopicOutcome};

use crate::runtime::catalog::TopicCatalog;
use crate::runtime::cluster::{ClusterCatalog, ClusterImage};
use crate::runtime::group_configs::GroupConfigRules;
use crate::runtime::partitions::Partitions;
use crate::runtime::shards::Coordinators;
use crate::security::Authorizer;
use crate::support::clock::now_ms;
pub use boot::{ControllerBoot, MetadataLogError};
use durable::{ControllerLog, DurableLog};
use snapshots::{SessionMirror, SnapshotTracker};

const CONTROLLER_QUEUE: usize = 256;

/// The controller task is not running (shutting down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the controller is not available")]
pub struct ControllerUnavailable;

enum Command {
    CreateTopics {
        request: CreateTopicsRequest,
        reply: oneshot::Sender<Vec<CreatableTopicResult>>,
    },
    DeleteTopics {
        request: DeleteTopicsRequest,
        access: TopicAccess,
        reply: oneshot::Sender<Vec<DeletableTopicResult>>,
    },
    RegisterBroker {
        request: BrokerRegistrationRequest,
        version: i16,
        reply: oneshot::Sender<BrokerRegistrationResponse>,
    },
    BrokerHeartbeat {
        request: BrokerHeartbeatRequest,
        version: i16,
        reply: oneshot::Sender<BrokerHeartbeatResponse>,
    },
    AllocateProducerIds {
        reply: oneshot::Sender<Result<ProducerIdBlock, String>>,
    },
    AlterGroupConfigs {
        changes: Vec<GroupConfigChange>,
        validate_only: bool,
        reply: oneshot::Sender<Vec<Result<(), ResourceError>>>,
    },
    CreateAcls {
        creations: Vec<kcoord_acl::AclCreation>,
        reply: oneshot::Sender<Vec<kcoord_controller::CreateAclResult>>,
    },
    DeleteAcls {
        filters: Vec<kcoord_acl::AclBindingFilter>,
        reply: oneshot::Sender<Vec<kcoord_controller::DeleteAclsResult>>,
    },
    AlterScramCredentials {
        request: kcoord_wire::messages::AlterUserScramCredentialsRequest,
        reply: oneshot::Sender<
            Vec<kcoord_wire::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult>,
        >,
    },
}

/// How the rest of the daemon talks to the controller.
#[derive(Debug, Clone)]
pub struct ControllerHandle {
    tx: mpsc::Sender<Command>,
}

impl ControllerHandle {
    /// CreateTopics; answers once the topics are in the published catalog and every shard has
    /// been told.
    pub async fn create_topics(
        &self,
        request: CreateTopicsRequest,
    ) -> Result<Vec<CreatableTopicResult>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::CreateTopics { request, reply }).await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// DeleteTopics, likewise, of the topics `access` allows.
    pub async fn delete_topics(
        &self,
        request: DeleteTopicsRequest,
        access: TopicAccess,
    ) -> Result<Vec<DeletableTopicResult>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::DeleteTopics {
            request,
            access,
            reply,
        })
        .await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// BrokerRegistration at request version `version`; answers once the registration is in
    /// the log (on disk, with `metadata.log.dir`) and published.
    pub async fn register_broker(
        &self,
        request: BrokerRegistrationRequest,
        version: i16,
    ) -> Result<BrokerRegistrationResponse, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::RegisterBroker {
            request,
            version,
            reply,
        })
        .await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// BrokerHeartbeat at request version `version`.
    pub async fn broker_heartbeat(
        &self,
        request: BrokerHeartbeatRequest,
        version: i16,
    ) -> Result<BrokerHeartbeatResponse, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::BrokerHeartbeat {
            request,
            version,
            reply,
        })
        .await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// A block of producer ids for this node's InitProducerId, on disk (with
    /// `metadata.log.dir`) before it is answered.
    pub async fn allocate_producer_ids(
        &self,
    ) -> Result<Result<ProducerIdBlock, String>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::AllocateProducerIds { reply }).await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// IncrementalAlterConfigs of GROUP resources: one result per change, in order; answers
    /// once the records are in the log (on disk, with `metadata.log.dir`) and every shard runs
    /// with the new configs.
    pub async fn alter_group_configs(
        &self,
        changes: Vec<GroupConfigChange>,
        validate_only: bool,
    ) -> Result<Vec<Result<(), ResourceError>>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::AlterGroupConfigs {
            changes,
            validate_only,
            reply,
        })
        .await?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    async fn send(&self, command: Command) -> Result<(), ControllerUnavailable> {
        self.tx
            .send(command)
            .await
            .map_err(|_| ControllerUnavailable)
    }
}

/// How long a fencing batch the log refused waits before `tick` runs again.
const TICK_RETRY_MS: i64 = 1_000;

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
struct Refused<R> {
    error: ControllerError,
    decided: Option<R>,
}

impl<R> Refused<R> {
    fn by_handler(error: ControllerError) -> Self {
        Refused {
            error,
            decided: None,
        }
    }
}

/// The controller task, built but not yet running.
pub struct ControllerRuntime {
    /// The controller on its runtime, whose log is the durable one (`metadata.log.dir`) or
    /// none beyond memory.
    controller: Runtime<Controller, ControllerLog>,
    /// How group configs are validated and turned into the settings shards run groups with.
    group_rules: GroupConfigRules,
    /// The group configs the shards were last given.
    published_group_configs: kcoord_metadata::GroupConfigsImage,
    catalog: Arc<TopicCatalog>,
    cluster: Arc<ClusterCatalog>,
    coordinators: Coordinators,
    partitions: Arc<Partitions>,
    rx: mpsc::Receiver<Command>,
    /// After the log refused a fencing batch: not before this time (ms) again.
    tick_retry_at: Option<i64>,
    /// The log's growth since its last snapshot.
    snapshots: SnapshotTracker,
    /// The controller's broker sessions, to carry them over to the controller a snapshot
    /// rebuilds.
    sessions: SessionMirror,
    /// Told about every ACL change once it is applied ([`ControllerRuntime::attach_authorizer`]).
    authorizer: Option<Arc<dyn Authorizer>>,
    /// The ACLs and SCRAM credentials handlers last saw, shared by every [`ClusterImage`]
    /// until a batch changes them.
    published_security: Arc<SecurityImage>,
}

impl ControllerRuntime {
    /// The task around `boot`'s controller. The catalogs should already hold `boot`'s images
    /// (see `ServerState::build_with`); shards are told about the topics when the task starts.
    pub fn new(
        boot: ControllerBoot,
        group_rules: GroupConfigRules,
        catalog: Arc<TopicCatalog>,
        cluster: Arc<ClusterCatalog>,
        coordinators: Coordinators,
        partitions: Arc<Partitions>,
        log_metrics: crate::metrics::LogMetrics,
    ) -> (ControllerHandle, ControllerRuntime) {
        let (tx, rx) = mpsc::channel(CONTROLLER_QUEUE);
        let durable = boot.writer.map(|writer| {
            Box::new(durable::MeteredLog {
                writer,
                metrics: log_metrics,
            }) as Box<dyn DurableLog>
        });
        let log = boot.controller.store().log();
        // What a snapshot of the replayed state would hold: the rest of the log is history.
        let snapshot_bytes = boot
            .controller
            .state()
            .snapshot(log.next_offset())
            .map_or(0, |s| snapshots::log_bytes(&s));
        let snapshots = SnapshotTracker::new(boot.snapshots, log, snapshot_bytes, now_ms());
        let sessions = SessionMirror::activated(&boot.controller, boot.activated_at);
        let published_security = Arc::clone(&cluster.snapshot().security);
        (
            ControllerHandle { tx },
            ControllerRuntime {
                controller: Runtime::new(boot.controller, ControllerLog::new(durable)),
                group_rules,
                published_group_configs: kcoord_metadata::GroupConfigsImage::default(),
                catalog,
                cluster,
                coordinators,
                partitions,
                rx,
                tick_retry_at: None,
                snapshots,
                sessions,
                authorizer: None,
                published_security,
            },
        )
    }

    /// Makes `authorizer` decide with the log's ACLs, now and after every change. Call it
    /// before the listeners accept: until then it has none.
    pub fn attach_authorizer(&mut self, authorizer: Option<Arc<dyn Authorizer>>) {
        if let Some(authorizer) = &authorizer {
            authorizer.acls_loaded(self.controller.acls());
        }
        self.authorizer = authorizer;
    }

    /// Starts the task; it stops when `stop` turns true (or its sender is dropped).
    pub fn spawn(self, stop: &watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run(stop.clone()))
    }

    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        // Topics replayed from the log: the shards start with an empty catalog.
        let replayed = self.catalog.snapshot();
        if !replayed.is_empty() {
            self.coordinators.topics_changed(&replayed).await;
        }
        // Group configs replayed from the log: the shards start without overrides.
        self.publish_group_configs().await;
        // A log replayed with a long history is snapshotted at once.
        self.maybe_snapshot(now_ms());
        loop {
            let tick_at = self.next_wake();
            let wake = [tick_at, self.snapshots.next_deadline()]
                .into_iter()
                .flatten()
                .min()
                .map(until);
            let command = tokio::select! {
                command = self.rx.recv() => command,
                () = sleep_or_never(wake) => {
                    let now = now_ms();
                    if tick_at.is_some_and(|at| at <= now) {
                        self.tick(now).await;
                    }
                    self.maybe_snapshot(now_ms());
                    continue;
                }
                _ = crate::support::shutdown::stopped(&mut stop) => None,
            };
            match command {
                Some(command) => {
                    self.serve(command).await;
                    self.maybe_snapshot(now_ms());
                }
                None => break,
            }
        }
    }

    /// Replaces the log by a snapshot when one is due ([`snapshots`]).
    fn maybe_snapshot(&mut self, now: i64) {
        if self.snapshots.due(now) {
            self.snapshot(now);
        }
    }

    /// Replaces the log, in memory and on disk, by a snapshot of the controller's state at its
    /// next offset, and rebuilds the controller over it with the same state and broker
    /// sessions. Anything that fails leaves the log and the controller as they were (an
    /// ERROR says why), and the next attempt waits [`snapshots::RETRY_AFTER_FAILURE_MS`].
    /// Returns whether the snapshot was taken.
    fn snapshot(&mut self, now: i64) -> bool {
        let started = std::time::Instant::now();
        let records_before = self.controller.store().log().len();
        let bytes_before = self.snapshots.log_bytes;
        let next_offset = self.controller.store().log().next_offset();
        let file = self
            .controller
            .log()
            .durable
            .as_ref()
            .map(|d| d.path().display().to_string());
        let file = file.as_deref().unwrap_or("(in memory)");
        let built = match self.build_snapshot(next_offset, now) {
            Ok(built) => built,
            Err(reason) => {
                self.snapshots.failed(now);
                error!(file, next_offset, reason = %reason, retry_in_ms = snapshots::RETRY_AFTER_FAILURE_MS, "could not build a snapshot of the metadata log; the log is kept as it is");
                return false;
            }
        };
        let (log, mut controller) = built;
        if let Some(durable) = self.controller.log_mut().durable.as_mut() {
            if let Err(e) = durable.rewrite(&log) {
                self.snapshots.failed(now);
                error!(file, next_offset, error = %e, retry_in_ms = snapshots::RETRY_AFTER_FAILURE_MS, "could not write a snapshot of the metadata log; the old file is kept");
                return false;
            }
        }
        self.sessions.restore(&mut controller);
        self.controller.replace_core(controller);
        self.snapshots.taken(&log, now);
        info!(
            file,
            next_offset,
            records_before,
            records = log.len(),
            bytes_before,
            bytes = self.snapshots.log_bytes,
            took_ms = started.elapsed().as_millis() as u64,
            "replaced the metadata log by a snapshot"
        );
        true
    }

    /// The snapshot log and a controller over it, once the snapshot is known to replay to the
    /// very state the controller has.
    fn build_snapshot(
        &self,
        next_offset: u64,
        now: i64,
    ) -> Result<(kcoord_metadata::MetadataLog, Controller), String> {
        let log = self
            .controller
            .state()
            .snapshot(next_offset)
            .map_err(|e| e.to_string())?;
        let store = Store::replay_log(&log).map_err(|e| format!("it does not replay: {e}"))?;
        if store.state() != self.controller.state() {
            return Err("it does not replay to the controller's state".to_owned());
        }
        let controller = Controller::with_store(self.controller.config().clone(), store, now)
            .map_err(|e| e.to_string())?;
        Ok((log, controller))
    }

    /// When `tick` has work to do: the next session expiry, but not before a refused fencing
    /// batch may be retried.
    fn next_wake(&self) -> Option<i64> {
        let deadline = self.controller.next_deadline()?;
        Some(self.tick_retry_at.map_or(deadline, |at| deadline.max(at)))
    }

    async fn serve(&mut self, command: Command) {
        match command {
            Command::CreateTopics { request, reply } => {
                let results = self.create_topics(&request).await;
                let _ = reply.send(results);
            }
            Command::DeleteTopics {
                request,
                access,
                reply,
            } => {
                let results = self.delete_topics(&request, &access).await;
                let _ = reply.send(results);
            }
            Command::RegisterBroker {
                request,
                version,
                reply,
            } => {
                let response = self.register_broker(&request, version).await;
                let _ = reply.send(response);
            }
            Command::BrokerHeartbeat {
                request,
                version,
                reply,
            } => {
                let response = self.broker_heartbeat(&request, version).await;
                let _ = reply.send(response);
            }
            Command::AllocateProducerIds { reply } => {
                let block = self.allocate_producer_ids().await;
                let _ = reply.send(block);
            }
            Command::AlterGroupConfigs {
                changes,
                validate_only,
                reply,
            } => {
                let results = self.alter_group_configs(&changes, validate_only).await;
                let _ = reply.send(results);
            }
            Command::CreateAcls { creations, reply } => {
                let results = self.create_acls(&creations).await;
                let _ = reply.send(results);
            }
            Command::DeleteAcls { filters, reply } => {
                let results = self.delete_acls(&filters).await;
                let _ = reply.send(results);
            }
            Command::AlterScramCredentials { request, reply } => {
                let results = self.alter_scram_credentials(&request).await;
                let _ = reply.send(results);
            }
        }
    }

    /// Runs one handler and commits its outcome (module docs, steps 1-4): the answer, or why
    /// the request was not carried out.
    async fn handle<R>(
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
    async fn commit<R>(&mut self, api: &'static str, outcome: Outcome<R>) -> Result<R, Refused<R>> {
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

    async fn create_topics(&mut self, request: &CreateTopicsRequest) -> Vec<CreatableTopicResult> {
        let results = match self
            .handle("CreateTopics", |c| {
                Ok(c.create_topics(request, random_topic_id))
            })
            .await
        {
            Ok(results) => results,
            Err(refused) => refused_topics(request, refused),
        };
        log_topic_outcomes(
            "CreateTopics",
            request.validate_only,
            results.iter().map(|r| TopicOutcome {
                name: &r.name,
                topic_id: r.topic_id,
                error_code: r.error_code,
                message: r.error_message.as_deref(),
                layout: Some((r.num_partitions, r.replication_factor)),
            }),
        );
        results
    }

    async fn delete_topics(
        &mut self,
        request: &DeleteTopicsRequest,
        access: &TopicAccess,
    ) -> Vec<DeletableTopicResult> {
        let results = match self
            .handle("DeleteTopics", |c| Ok(c.delete_topics(request, access)))
            .await
        {
            Ok(results) => results,
            Err(refused) => refused_deletions(request, refused),
        };
        log_topic_outcomes(
            "DeleteTopics",
            false,
            results.iter().map(|r| TopicOutcome {
                name: r.name.as_deref().unwrap_or(""),
                topic_id: r.topic_id,
                error_code: r.error_code,
                message: r.error_message.as_deref(),
                layout: None,
            }),
        );
        results
    }

    async fn alter_group_configs(
        &mut self,
        changes: &[GroupConfigChange],
        validate_only: bool,
    ) -> Vec<Result<(), ResourceError>> {
        let rules = self.group_rules.clone();
        let results = match self
            .handle("IncrementalAlterConfigs", |c| {
                Ok(c.alter_group_configs(&rules, changes, validate_only))
            })
            .await
        {
            Ok(results) => results,
            Err(Refused { error, decided }) => {
                let failed = || Err((error.code, Some(error.message.clone())));
                match decided {
                    Some(results) => results
                        .into_iter()
                        .map(|r| r.and_then(|()| failed()))
                        .collect(),
                    None => changes.iter().map(|_| failed()).collect(),
                }
            }
        };
        for (change, result) in changes.iter().zip(&results) {
            let outcome = match result {
                Ok(()) => "NONE",
                Err((code, _)) => code.name(),
            };
            info!(
                group = %capped(&change.group),
                operations = change.ops.len(),
                validate_only,
                outcome,
                message = result.as_ref().err().and_then(|(_, m)| m.as_deref()).unwrap_or(""),
                "IncrementalAlterConfigs (group)"
            );
        }
        results
    }

    async fn register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        version: i16,
    ) -> BrokerRegistrationResponse {
        let now = now_ms();
        let result = self
            .handle("BrokerRegistration", |c| {
                c.register_broker(request, version, now)
            })
            .await
            .map_err(|refused| refused.error);
        match &result {
            Ok(reply) => info!(
                broker_id = request.broker_id,
                incarnation_id = %kcoord_controller::kafka_uuid(&request.incarnation_id),
                version,
                broker_epoch = reply.epoch,
                static_configs = request.static_configs.len(),
                static_configs_kept = self.controller.static_configs(request.broker_id).map_or(0, |c| c.len()),
                metadata_version = %self.controller.metadata_version(),
                "BrokerRegistration"
            ),
            Err(e) => warn!(
                broker_id = request.broker_id,
                incarnation_id = %kcoord_controller::kafka_uuid(&request.incarnation_id),
                version,
                error = e.code.name(),
                message = %e.message,
                "BrokerRegistration refused"
            ),
        }
        BrokerRegistrationReply::response(&result)
    }

    async fn broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        version: i16,
    ) -> BrokerHeartbeatResponse {
        let was_fenced = self.controller.broker(request.broker_id).map(|b| b.fenced);
        let now = now_ms();
        let result = self
            .handle("BrokerHeartbeat", |c| c.broker_heartbeat(request, now))
            .await
            .map_err(|refused| refused.error);
        let now_fenced = self.controller.broker(request.broker_id).map(|b| b.fenced);
        match &result {
            // Kafka logs these at INFO/DEBUG too: a restarted broker with an old epoch is common.
            Err(e) => info!(
                broker_id = request.broker_id,
                broker_epoch = request.broker_epoch,
                version,
                error = e.code.name(),
                message = %e.message,
                "BrokerHeartbeat refused"
            ),
            Ok(reply) if was_fenced != now_fenced => info!(
                broker_id = request.broker_id,
                broker_epoch = request.broker_epoch,
                fenced = reply.is_fenced,
                should_shut_down = reply.should_shut_down,
                "broker state changed"
            ),
            Ok(_) => {}
        }
        BrokerHeartbeatReply::response(&result)
    }

    async fn allocate_producer_ids(&mut self) -> Result<ProducerIdBlock, String> {
        let node_id = self.controller.config().topic_defaults.node_id;
        let block = self
            .handle("AllocateProducerIds", |c| {
                c.allocate_producer_ids(node_id, -1)
            })
            .await
            .map_err(|refused| refused.error.to_string())?;
        info!(
            first = block.first,
            size = block.size,
            "allocated a producer id block"
        );
        Ok(block)
    }

    /// Fences the brokers whose session expired at `now`.
    async fn tick(&mut self, now: i64) {
        match self.handle("tick", |c| Ok(c.tick(now))).await {
            Ok(events) => {
                self.tick_retry_at = None;
                for TickEvent::SessionExpired { broker_id, epoch } in events {
                    info!(
                        broker_id,
                        broker_epoch = epoch,
                        "fencing broker because its session has timed out"
                    );
                }
            }
            Err(refused) => {
                // The sessions stay expired: the next tick fences them.
                self.tick_retry_at = Some(now.saturating_add(TICK_RETRY_MS));
                error!(error = %refused.error, retry_in_ms = TICK_RETRY_MS, "fencing expired broker sessions failed");
            }
        }
    }

    /// Hands every shard the settings of the groups it owns, when the group configs differ
    /// from what the shards were last given.
    async fn publish_group_configs(&mut self) {
        let image = &self.controller.state().group_configs;
        if *image == self.published_group_configs {
            return;
        }
        self.coordinators
            .group_configs_changed(image, &self.group_rules)
            .await;
        self.published_group_configs = image.clone();
    }

    /// After a batch was applied: publishes the images, and tells the partitions and shards
    /// when topics changed.
    async fn publish(&mut self, topics_changed: bool) {
        self.cluster
            .publish(Arc::new(ClusterImage::from_controller_with(
                &self.controller,
                Arc::clone(&self.published_security),
            )));
        if topics_changed {
            let image: Arc<TopicsImage> = Arc::new(self.controller.state().topics.clone());
            // Logs first: a client that sees a partition in the catalog can produce to it.
            self.partitions.sync(&image, now_ms());
            self.catalog.publish(Arc::clone(&image));
            self.coordinators.topics_changed(&image).await;
        }
        self.publish_group_configs().await;
    }
}

/// CreateTopics results when the batch was not applied: topics the decision refused keep their
/// errors, the others get the batch's.
fn refused_topics(
    request: &CreateTopicsRequest,
    Refused { error, decided }: Refused<Vec<CreatableTopicResult>>,
) -> Vec<CreatableTopicResult> {
    let failed = |name: &str| CreatableTopicResult {
        name: name.to_owned(),
        error_code: error.code.code(),
        error_message: Some(error.message.clone()),
        ..Default::default()
    };
    match decided {
        Some(results) => results
            .into_iter()
            .map(|r| {
                if r.error_code == 0 {
                    failed(&r.name)
                } else {
                    r
                }
            })
            .collect(),
        None => request.topics.iter().map(|t| failed(&t.name)).collect(),
    }
}

/// DeleteTopics results when the batch was not applied, likewise.
fn refused_deletions(
    request: &DeleteTopicsRequest,
    Refused { error, decided }: Refused<Vec<DeletableTopicResult>>,
) -> Vec<DeletableTopicResult> {
    let failed = |name: Option<String>, topic_id| DeletableTopicResult {
        name,
        topic_id,
        error_code: error.code.code(),
        error_message: Some(error.message.clone()),
        ..Default::default()
    };
    match decided {
        Some(results) => results
            .into_iter()
            .map(|r| {
                if r.error_code == 0 {
                    failed(r.name, r.topic_id)
                } else {
                    r
                }
            })
            .collect(),
        None => request
            .topic_names
            .iter()
            .map(|n| failed(Some(n.clone()), uuid::Uuid::nil()))
            .chain(
                request
                    .topics
                    .iter()
                    .map(|t| failed(t.name.clone(), t.topic_id)),
            )
            .collect(),
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

/// How long until the wall-clock time `at_ms`.
fn until(at_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(at_ms.saturating_sub(now_ms())).unwrap_or(0))
}

async fn sleep_or_never(wake: Option<Duration>) {
    match wake {
        Some(after) => tokio::time::sleep(after).await,
        None => std::future::pending().await,
    }
}
