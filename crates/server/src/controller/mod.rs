//! The controller: one task owning the metadata log, as KRaft has one metadata log with one
//! owner. The log holds the topic catalog (topics, partitions, topic configs), the broker
//! registrations and the finalized features; the decisions about brokers and features are
//! made by the sans-IO [`kcoord_controller::Controller`], those about topics by the functions
//! in [`topics`], and both append to the same [`kcoord_metadata::Store`].
//!
//! Commands arrive over a channel (CreateTopics, DeleteTopics, and the same CreateTopics on
//! behalf of streams groups and Metadata auto-creation; BrokerRegistration, BrokerHeartbeat).
//! After each change the records go to the durable log when `metadata.log.dir` is set, the new
//! [`TopicsImage`] and [`ClusterImage`] are published for handlers, and every coordinator shard
//! is told about topic changes. Broker sessions expire on the wall clock: the task wakes at
//! the controller's `next_deadline()` and calls `tick`.

pub mod boot;

use std::sync::Arc;
use std::time::Duration;

use kcoord_controller::{ProducerIdBlock, TickEvent};
use kcoord_metadata::file_log::LogWriter;
use kcoord_metadata::{Record, TopicsImage};
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, CreateTopicsRequest, DeleteTopicsRequest,
};
use kcoord_wire::ErrorCode;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{error, info, warn};

use crate::catalog::TopicCatalog;
use crate::clock::now_ms;
use crate::cluster::{ClusterCatalog, ClusterImage};
use crate::group_configs::GroupConfigRules;
use crate::partitions::Partitions;
use crate::shards::Coordinators;
pub use boot::{ControllerBoot, MetadataLogError};
use kcoord_controller::group_configs::{self, GroupConfigChange, ResourceError};
use kcoord_controller::topics;
pub use kcoord_controller::TopicDefaults;

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

    /// DeleteTopics, likewise.
    pub async fn delete_topics(
        &self,
        request: DeleteTopicsRequest,
    ) -> Result<Vec<DeletableTopicResult>, ControllerUnavailable> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::DeleteTopics { request, reply }).await?;
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

/// The controller task, built but not yet running.
pub struct Controller {
    inner: kcoord_controller::Controller,
    /// The durable copy of the log (`metadata.log.dir`); `None` keeps it in memory only.
    writer: Option<LogWriter>,
    defaults: TopicDefaults,
    /// How group configs are validated and turned into the settings shards run groups with.
    group_rules: GroupConfigRules,
    /// The group configs the shards were last given.
    published_group_configs: kcoord_metadata::GroupConfigsImage,
    catalog: Arc<TopicCatalog>,
    cluster: Arc<ClusterCatalog>,
    coordinators: Coordinators,
    partitions: Arc<Partitions>,
    rx: mpsc::Receiver<Command>,
}

impl Controller {
    /// The task around `boot`'s controller. The catalogs should already hold `boot`'s images
    /// (see `ServerState::build_with`); shards are told about the topics when the task starts.
    pub fn new(
        boot: ControllerBoot,
        defaults: TopicDefaults,
        group_rules: GroupConfigRules,
        catalog: Arc<TopicCatalog>,
        cluster: Arc<ClusterCatalog>,
        coordinators: Coordinators,
        partitions: Arc<Partitions>,
    ) -> (ControllerHandle, Controller) {
        let (tx, rx) = mpsc::channel(CONTROLLER_QUEUE);
        (
            ControllerHandle { tx },
            Controller {
                inner: boot.controller,
                writer: boot.writer,
                defaults,
                group_rules,
                published_group_configs: kcoord_metadata::GroupConfigsImage::default(),
                catalog,
                cluster,
                coordinators,
                partitions,
                rx,
            },
        )
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
        loop {
            let wake = self.inner.next_deadline().map(until);
            let command = tokio::select! {
                command = self.rx.recv() => command,
                () = sleep_or_never(wake) => {
                    self.tick().await;
                    continue;
                }
                _ = crate::net::stopped(&mut stop) => None,
            };
            match command {
                Some(Command::CreateTopics { request, reply }) => {
                    let results = self.create_topics(&request).await;
                    let _ = reply.send(results);
                }
                Some(Command::DeleteTopics { request, reply }) => {
                    let results = self.delete_topics(&request).await;
                    let _ = reply.send(results);
                }
                Some(Command::RegisterBroker {
                    request,
                    version,
                    reply,
                }) => {
                    let response = self.register_broker(&request, version).await;
                    let _ = reply.send(response);
                }
                Some(Command::BrokerHeartbeat {
                    request,
                    version,
                    reply,
                }) => {
                    let response = self.broker_heartbeat(&request, version).await;
                    let _ = reply.send(response);
                }
                Some(Command::AllocateProducerIds { reply }) => {
                    let block = self.allocate_producer_ids().await;
                    let _ = reply.send(block);
                }
                Some(Command::AlterGroupConfigs {
                    changes,
                    validate_only,
                    reply,
                }) => {
                    let results = self.alter_group_configs(&changes, validate_only).await;
                    let _ = reply.send(results);
                }
                None => break,
            }
        }
    }

    async fn create_topics(&mut self, request: &CreateTopicsRequest) -> Vec<CreatableTopicResult> {
        let decision = topics::create_topics(
            &self.inner.state().topics,
            &self.defaults,
            request,
            topics::random_topic_id,
        );
        for r in &decision.results {
            let outcome = ErrorCode::from_code(r.error_code).map_or("UNKNOWN", ErrorCode::name);
            info!(
                topic = %r.name,
                topic_id = %r.topic_id,
                partitions = r.num_partitions,
                replication_factor = r.replication_factor,
                validate_only = request.validate_only,
                outcome,
                message = r.error_message.as_deref().unwrap_or(""),
                "CreateTopics"
            );
        }
        let mut results = decision.results;
        if let Err(message) = self.apply(decision.records).await {
            // The records never reached the log: nothing was created.
            for r in results.iter_mut().filter(|r| r.error_code == 0) {
                *r = CreatableTopicResult {
                    name: std::mem::take(&mut r.name),
                    error_code: ErrorCode::UNKNOWN_SERVER_ERROR.code(),
                    error_message: Some(message.clone()),
                    ..Default::default()
                };
            }
        }
        results
    }

    async fn delete_topics(&mut self, request: &DeleteTopicsRequest) -> Vec<DeletableTopicResult> {
        let decision = topics::delete_topics(&self.inner.state().topics, request);
        for r in &decision.results {
            let outcome = ErrorCode::from_code(r.error_code).map_or("UNKNOWN", ErrorCode::name);
            info!(
                topic = r.name.as_deref().unwrap_or(""),
                topic_id = %r.topic_id,
                outcome,
                "DeleteTopics"
            );
        }
        let mut results = decision.results;
        if let Err(message) = self.apply(decision.records).await {
            for r in results.iter_mut().filter(|r| r.error_code == 0) {
                r.error_code = ErrorCode::UNKNOWN_SERVER_ERROR.code();
                r.error_message = Some(message.clone());
            }
        }
        results
    }

    async fn alter_group_configs(
        &mut self,
        changes: &[GroupConfigChange],
        validate_only: bool,
    ) -> Vec<Result<(), ResourceError>> {
        let decision = group_configs::alter_group_configs(
            &self.inner.state().group_configs,
            &self.group_rules,
            changes,
            validate_only,
        );
        for (change, result) in changes.iter().zip(&decision.results) {
            let outcome = match result {
                Ok(()) => "NONE",
                Err((code, _)) => code.name(),
            };
            info!(
                group = %change.group,
                operations = change.ops.len(),
                validate_only,
                outcome,
                message = result.as_ref().err().and_then(|(_, m)| m.as_deref()).unwrap_or(""),
                "IncrementalAlterConfigs (group)"
            );
        }
        let mut results = decision.results;
        if let Err(message) = self.apply(decision.records).await {
            for r in results.iter_mut().filter(|r| r.is_ok()) {
                *r = Err((ErrorCode::UNKNOWN_SERVER_ERROR, Some(message.clone())));
            }
        }
        results
    }

    /// Hands every shard the settings of the groups it owns, when the group configs differ
    /// from what the shards were last given.
    async fn publish_group_configs(&mut self) {
        let image = &self.inner.state().group_configs;
        if *image == self.published_group_configs {
            return;
        }
        self.coordinators
            .group_configs_changed(image, &self.group_rules)
            .await;
        self.published_group_configs = image.clone();
    }

    async fn register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        version: i16,
    ) -> BrokerRegistrationResponse {
        let before = self.inner.store().log().next_offset();
        let outcome = self.inner.try_register_broker(request, version, now_ms());
        match &outcome {
            Ok(reply) => info!(
                broker_id = request.broker_id,
                incarnation_id = %kcoord_controller::kafka_uuid(&request.incarnation_id),
                version,
                broker_epoch = reply.epoch,
                static_configs = request.static_configs.len(),
                static_configs_kept = self.inner.static_configs(request.broker_id).map_or(0, |c| c.len()),
                metadata_version = %self.inner.metadata_version(),
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
        let mut response = match outcome {
            Ok(reply) => BrokerRegistrationResponse {
                broker_epoch: reply.epoch,
                ..Default::default()
            },
            Err(e) => BrokerRegistrationResponse {
                error_code: e.code.code(),
                broker_epoch: -1,
                ..Default::default()
            },
        };
        if self.after_change(before).await.is_err() && response.error_code == 0 {
            // Not on disk: the broker must not act on an epoch a restart could forget.
            response = BrokerRegistrationResponse {
                error_code: ErrorCode::UNKNOWN_SERVER_ERROR.code(),
                broker_epoch: -1,
                ..Default::default()
            };
        }
        response
    }

    async fn broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        version: i16,
    ) -> BrokerHeartbeatResponse {
        let before = self.inner.store().log().next_offset();
        let was_fenced = self.inner.broker(request.broker_id).map(|b| b.fenced);
        let mut response = self.inner.broker_heartbeat(request, now_ms());
        let now_fenced = self.inner.broker(request.broker_id).map(|b| b.fenced);
        if response.error_code != 0 {
            // Kafka logs these at INFO/DEBUG too: a restarted broker with an old epoch is common.
            info!(
                broker_id = request.broker_id,
                broker_epoch = request.broker_epoch,
                version,
                error =
                    ErrorCode::from_code(response.error_code).map_or("UNKNOWN", ErrorCode::name),
                "BrokerHeartbeat refused"
            );
        } else if was_fenced != now_fenced {
            info!(
                broker_id = request.broker_id,
                broker_epoch = request.broker_epoch,
                fenced = response.is_fenced,
                should_shut_down = response.should_shut_down,
                "broker state changed"
            );
        }
        if self.after_change(before).await.is_err() && response.error_code == 0 {
            response = BrokerHeartbeatResponse {
                error_code: ErrorCode::UNKNOWN_SERVER_ERROR.code(),
                ..Default::default()
            };
        }
        response
    }

    async fn allocate_producer_ids(&mut self) -> Result<ProducerIdBlock, String> {
        let before = self.inner.store().log().next_offset();
        let block = self
            .inner
            .allocate_producer_ids(self.defaults.node_id, -1)
            .map_err(|e| e.to_string());
        // Not on disk: a restart could hand the same ids out again.
        self.after_change(before).await?;
        if let Ok(b) = &block {
            info!(
                first = b.first,
                size = b.size,
                "allocated a producer id block"
            );
        }
        block
    }

    /// Fences the brokers whose session expired.
    async fn tick(&mut self) {
        let before = self.inner.store().log().next_offset();
        match self.inner.tick(now_ms()) {
            Ok(events) => {
                for TickEvent::SessionExpired { broker_id, epoch } in events {
                    info!(
                        broker_id,
                        broker_epoch = epoch,
                        "fencing broker because its session has timed out"
                    );
                }
            }
            Err(e) => error!(error = %e, "fencing expired broker sessions failed"),
        }
        let _ = self.after_change(before).await;
    }

    /// Appends topic records, then persists and publishes. Returns why they did not apply.
    async fn apply(&mut self, records: Vec<Record>) -> Result<(), String> {
        if records.is_empty() {
            return Ok(());
        }
        let before = self.inner.store().log().next_offset();
        // A decision that does not replay is a bug. The records before the failing one did
        // apply, so the images are published either way: they are what the log says.
        let applied = self.inner.append(records).map(|_| ()).map_err(|e| {
            error!(error = %e, "controller records did not apply");
            format!("The controller could not apply the change: {e}")
        });
        let persisted = self.after_change(before).await;
        applied.and(persisted)
    }

    /// After records from offset `before` on were appended (possibly none): writes them to the
    /// durable log, publishes the images, and tells the shards when topics changed. `Err` when
    /// the durable log could not take them.
    async fn after_change(&mut self, before: u64) -> Result<(), String> {
        let log = self.inner.store().log();
        if log.next_offset() == before {
            return Ok(());
        }
        let persisted = match self.writer.as_mut() {
            None => Ok(()),
            Some(writer) => writer.sync_from(log).map(|_| ()).map_err(|e| {
                // The change stays in memory; the next change writes it again.
                error!(error = %e, "could not write the metadata log");
                format!("The controller could not write its metadata log: {e}")
            }),
        };
        let topics_changed = log
            .records_from(before)
            .any(|r| is_topic_record(r.record_type));
        self.cluster
            .publish(Arc::new(ClusterImage::from_controller(&self.inner)));
        if topics_changed {
            let image: Arc<TopicsImage> = Arc::new(self.inner.state().topics.clone());
            // Logs first: a client that sees a partition in the catalog can produce to it.
            self.partitions.sync(&image, now_ms());
            self.catalog.publish(Arc::clone(&image));
            self.coordinators.topics_changed(&image).await;
        }
        self.publish_group_configs().await;
        persisted
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
