//! How the rest of the daemon reaches the controller task: jobs over a channel, each run on
//! the task's runtime between the others. [`ControllerHandle::run`] commits one handler of
//! [`kcoord_controller::Controller`]: an RPC that needs the controller calls it from its own
//! file, and needs nothing here.

use std::future::Future;
use std::pin::Pin;

use kcoord_controller::group_configs::{GroupConfigChange, ResourceError};
use kcoord_controller::{Controller, ControllerError, Outcome, ProducerIdBlock, TopicAccess};
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, CreateTopicsRequest, DeleteTopicsRequest,
};
use tokio::sync::{mpsc, oneshot};

use super::{ControllerRuntime, Refused};
use crate::support::clock::now_ms;

/// The controller task is not running (shutting down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the controller is not available")]
pub struct ControllerUnavailable;

/// A future borrowing the controller's runtime.
pub(super) type Work<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the task runs for a caller: its work, with the answer sent back inside.
pub(super) type Job = Box<dyn for<'a> FnOnce(&'a mut ControllerRuntime) -> Work<'a, ()> + Send>;

/// How the rest of the daemon talks to the controller.
#[derive(Debug, Clone)]
pub struct ControllerHandle {
    tx: mpsc::Sender<Job>,
}

impl ControllerHandle {
    pub(super) fn new(tx: mpsc::Sender<Job>) -> ControllerHandle {
        ControllerHandle { tx }
    }

    /// Runs `work` on the controller task, between its other jobs, and returns its answer.
    async fn call<T, W>(&self, work: W) -> Result<T, ControllerUnavailable>
    where
        T: Send + 'static,
        W: for<'a> FnOnce(&'a mut ControllerRuntime) -> Work<'a, T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |runtime| {
            Box::pin(async move {
                let _ = reply.send(work(runtime).await);
            })
        });
        self.tx.send(job).await.map_err(|_| ControllerUnavailable)?;
        answer.await.map_err(|_| ControllerUnavailable)
    }

    /// Commits `handler`'s outcome (a handler of [`Controller`], given the wall clock's `now`)
    /// as one batch, and answers once it is in the log (on disk, with `metadata.log.dir`) and
    /// published: the response, or why the batch was refused.
    pub async fn run<R, H>(
        &self,
        api: &'static str,
        handler: H,
    ) -> Result<Result<R, Refused<R>>, ControllerUnavailable>
    where
        R: Send + 'static,
        H: FnOnce(&Controller, i64) -> Result<Outcome<R>, ControllerError> + Send + 'static,
    {
        self.call(move |runtime| {
            Box::pin(async move {
                let now = now_ms();
                runtime
                    .handle(api, |controller| handler(controller, now))
                    .await
            })
        })
        .await
    }

    /// Reads the controller between jobs.
    pub async fn read<T, F>(&self, read: F) -> Result<T, ControllerUnavailable>
    where
        T: Send + 'static,
        F: FnOnce(&Controller) -> T + Send + 'static,
    {
        self.call(move |runtime| Box::pin(async move { read(&runtime.controller) }))
            .await
    }

    /// CreateTopics; answers once the topics are in the published catalog and every shard has
    /// been told (also for the topics created on behalf of streams groups and Metadata).
    pub async fn create_topics(
        &self,
        request: CreateTopicsRequest,
    ) -> Result<Vec<CreatableTopicResult>, ControllerUnavailable> {
        self.call(move |runtime| Box::pin(async move { runtime.create_topics(&request).await }))
            .await
    }

    /// DeleteTopics, likewise, of the topics `access` allows.
    pub async fn delete_topics(
        &self,
        request: DeleteTopicsRequest,
        access: TopicAccess,
    ) -> Result<Vec<DeletableTopicResult>, ControllerUnavailable> {
        self.call(move |runtime| {
            Box::pin(async move { runtime.delete_topics(&request, &access).await })
        })
        .await
    }

    /// BrokerRegistration at request version `version`; answers once the registration is in
    /// the log (on disk, with `metadata.log.dir`) and published.
    pub async fn register_broker(
        &self,
        request: BrokerRegistrationRequest,
        version: i16,
    ) -> Result<BrokerRegistrationResponse, ControllerUnavailable> {
        self.call(move |runtime| {
            Box::pin(async move { runtime.register_broker(&request, version).await })
        })
        .await
    }

    /// BrokerHeartbeat at request version `version`.
    pub async fn broker_heartbeat(
        &self,
        request: BrokerHeartbeatRequest,
        version: i16,
    ) -> Result<BrokerHeartbeatResponse, ControllerUnavailable> {
        self.call(move |runtime| {
            Box::pin(async move { runtime.broker_heartbeat(&request, version).await })
        })
        .await
    }

    /// A block of producer ids for this node's InitProducerId, on disk (with
    /// `metadata.log.dir`) before it is answered.
    pub async fn allocate_producer_ids(
        &self,
    ) -> Result<Result<ProducerIdBlock, String>, ControllerUnavailable> {
        self.call(|runtime| Box::pin(async move { runtime.allocate_producer_ids().await }))
            .await
    }

    /// IncrementalAlterConfigs of GROUP resources: one result per change, in order; answers
    /// once the records are in the log (on disk, with `metadata.log.dir`) and every shard runs
    /// with the new configs.
    pub async fn alter_group_configs(
        &self,
        changes: Vec<GroupConfigChange>,
        validate_only: bool,
    ) -> Result<Vec<Result<(), ResourceError>>, ControllerUnavailable> {
        self.call(move |runtime| {
            Box::pin(async move { runtime.alter_group_configs(&changes, validate_only).await })
        })
        .await
    }
}
