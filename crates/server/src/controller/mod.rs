//! The controller: one task owning the catalog's metadata log (topics, partitions, topic
//! configs), as KRaft has one metadata log with one owner. Commands arrive over a channel
//! (CreateTopics, DeleteTopics, and the same CreateTopics on behalf of streams groups and
//! Metadata auto-creation); each change is appended to the log, the new [`TopicsImage`] is
//! published to the [`TopicCatalog`] that handlers read, and every coordinator shard is told.
//!
//! The decisions themselves are sans-IO functions in [`topics`]. A later issue adds broker
//! registrations: a new [`Command`] variant and its decision function, same log, same
//! publication path.

pub mod topics;

use std::sync::Arc;

use kcoord_metadata::{Record, Store, TopicsImage};
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{CreateTopicsRequest, DeleteTopicsRequest};
use kcoord_wire::ErrorCode;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{error, info};

use crate::catalog::TopicCatalog;
use crate::shards::Coordinators;
pub use topics::TopicDefaults;

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

    async fn send(&self, command: Command) -> Result<(), ControllerUnavailable> {
        self.tx
            .send(command)
            .await
            .map_err(|_| ControllerUnavailable)
    }
}

/// The controller task, built but not yet running.
pub struct Controller {
    store: Store,
    defaults: TopicDefaults,
    catalog: Arc<TopicCatalog>,
    coordinators: Coordinators,
    rx: mpsc::Receiver<Command>,
}

impl Controller {
    pub fn new(
        defaults: TopicDefaults,
        catalog: Arc<TopicCatalog>,
        coordinators: Coordinators,
    ) -> (ControllerHandle, Controller) {
        let (tx, rx) = mpsc::channel(CONTROLLER_QUEUE);
        (
            ControllerHandle { tx },
            Controller {
                store: Store::new(),
                defaults,
                catalog,
                coordinators,
                rx,
            },
        )
    }

    /// Starts the task; it stops when `stop` turns true (or its sender is dropped).
    pub fn spawn(self, stop: &watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run(stop.clone()))
    }

    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            let command = tokio::select! {
                command = self.rx.recv() => command,
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
                None => break,
            }
        }
    }

    async fn create_topics(&mut self, request: &CreateTopicsRequest) -> Vec<CreatableTopicResult> {
        let decision = topics::create_topics(
            &self.store.state().topics,
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
        let decision = topics::delete_topics(&self.store.state().topics, request);
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

    /// Appends, publishes, tells the shards. Returns why the records did not apply.
    async fn apply(&mut self, records: Vec<Record>) -> Result<(), String> {
        if records.is_empty() {
            return Ok(());
        }
        // A decision that does not replay is a bug. The records before the failing one did
        // apply, so the image is published either way: it is what the log says.
        let applied = self.store.append(records).map(|_| ()).map_err(|e| {
            error!(error = %e, "controller records did not apply");
            format!("The controller could not apply the change: {e}")
        });
        let image: Arc<TopicsImage> = Arc::new(self.store.state().topics.clone());
        self.catalog.publish(Arc::clone(&image));
        self.coordinators.topics_changed(&image).await;
        applied
    }
}
