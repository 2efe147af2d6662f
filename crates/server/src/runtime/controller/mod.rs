//! The controller's runtime: the one task that runs the controller's decisions. Every decision
//! (topics, group configs, broker registrations and heartbeats, fencing, producer ids, ACLs,
//! SCRAM credentials) is a handler of the sans-IO [`kcoord_controller::Controller`],
//! committed by its [`kcoord_runtime::Runtime`] (the contract is written there); this module
//! owns what a decision cannot: the job channel, the wall clock, the durable log, snapshots,
//! and publishing the results.
//!
//! Work arrives over a channel as jobs ([`ControllerHandle::run`]: one handler, committed as
//! one batch). For each outcome the runtime prepares the batch (every record encodes, fits one
//! log entry, and replays onto copies of the images it touches), appends it to the durable log
//! first when `metadata.log.dir` is set, and only then replays it in memory; this task then
//! publishes the new [`TopicsImage`] and [`ClusterImage`], creates or deletes partition logs,
//! tells every coordinator shard about topic and group-config changes, hands the authorizer the
//! ACL changes, and answers.
//!
//! A batch refused before the append changes nothing; the client gets Kafka's error
//! (NOT_CONTROLLER when the log could not be written: see [`CommitError::error_code`]).
//! Broker sessions expire on the wall clock: the task wakes at the controller's
//! `next_deadline()` and commits `tick`'s outcome the same way.
//!
//! Between jobs, when the log has grown enough since the last snapshot ([`snapshots`]), the
//! task replaces it by a snapshot of the state: the file is rewritten with it (atomically: a
//! failed rewrite leaves the old file, is logged, and changes nothing) and the controller is
//! rebuilt over it, with the same state, offsets and broker sessions, so that neither memory
//! nor the next restart grows with the history.

pub mod boot;
mod commands;
mod commit;
pub mod durable;
mod handle;
mod outcome_log;
mod security;
pub mod snapshots;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use kcoord_controller::{Controller, TickEvent};
use kcoord_coordinator::GroupConfigRules;
use kcoord_metadata::{SecurityImage, TopicsImage};
use kcoord_runtime::Runtime;
use tokio::sync::{mpsc, watch};
use tracing::{error, info};

use crate::runtime::catalog::TopicCatalog;
use crate::runtime::cluster::{ClusterCatalog, ClusterImage};
use crate::runtime::partitions::Partitions;
use crate::runtime::shards::Coordinators;
use crate::security::Authorizer;
use crate::support::clock::now_ms;
pub use boot::{ControllerBoot, MetadataLogError};
pub use commit::{CommitError, Refused};
use durable::{ControllerLog, DurableLog};
use handle::Job;
pub use handle::{ControllerHandle, ControllerUnavailable};
use snapshots::{SessionMirror, SnapshotTracker};

const CONTROLLER_QUEUE: usize = 256;

/// How long a fencing batch the log refused waits before `tick` runs again.
const TICK_RETRY_MS: i64 = 1_000;

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
    rx: mpsc::Receiver<Job>,
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
    /// In gateway mode the topic catalog and the group configs the shards and handlers see
    /// are the upstream cluster's (`daemon/gateway_mirror.rs`), not this controller's.
    mirrored_by_gateway: bool,
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
            ControllerHandle::new(tx),
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
                mirrored_by_gateway: false,
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

    /// Leaves the topic catalog and the group configs to gateway mode's mirror of the
    /// upstream cluster: a topic this controller creates is not published, where it would
    /// replace the mirror and make the shards drop the offsets of every mirrored topic, and
    /// nor are group configs set at its controller listener, which the cluster's would undo.
    pub fn leave_topics_and_group_configs_to_the_gateway(&mut self) {
        self.mirrored_by_gateway = true;
    }

    /// Starts the task; it stops when `stop` turns true (or its sender is dropped).
    pub fn spawn(self, stop: &watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.run(stop.clone()))
    }

    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        // Dynamic broker configs replayed from the log: the logs were opened without them.
        if self.publish_broker_configs() {
            self.partitions.sync(&self.catalog.snapshot(), now_ms());
        }
        // Topics replayed from the log: the shards start with an empty catalog.
        let replayed = self.catalog.snapshot();
        if !replayed.is_empty() && !self.mirrored_by_gateway {
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
            let job = tokio::select! {
                job = self.rx.recv() => job,
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
            match job {
                Some(job) => {
                    job(&mut self).await;
                    self.maybe_snapshot(now_ms());
                }
                None => break,
            }
        }
    }

    /// When `tick` has work to do: the next session expiry, but not before a refused fencing
    /// batch may be retried.
    fn next_wake(&self) -> Option<i64> {
        let deadline = self.controller.next_deadline()?;
        Some(self.tick_retry_at.map_or(deadline, |at| deadline.max(at)))
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
        if self.mirrored_by_gateway || *image == self.published_group_configs {
            return;
        }
        self.coordinators
            .group_configs_changed(image, &self.group_rules)
            .await;
        self.published_group_configs = image.clone();
    }

    /// Hands the partitions the dynamic broker configs in effect on this node (from the image
    /// just published); whether they changed.
    fn publish_broker_configs(&self) -> bool {
        let node_id = self.controller.config().topic_defaults.node_id;
        let configs = self.cluster.snapshot().dynamic_broker_configs(node_id);
        self.partitions.set_broker_configs(configs)
    }

    /// After a batch was applied: publishes the images, and tells the partitions and shards
    /// when topics changed.
    async fn publish(&mut self, topics_changed: bool) {
        self.cluster
            .publish(Arc::new(ClusterImage::from_controller_with(
                &self.controller,
                Arc::clone(&self.published_security),
            )));
        let broker_configs_changed = self.publish_broker_configs();
        if broker_configs_changed && !topics_changed {
            self.partitions.sync(&self.catalog.snapshot(), now_ms());
        }
        if topics_changed && !self.mirrored_by_gateway {
            let image: Arc<TopicsImage> = Arc::new(self.controller.state().topics.clone());
            // Logs first: a client that sees a partition in the catalog can produce to it.
            self.partitions.sync(&image, now_ms());
            self.catalog.publish(Arc::clone(&image));
            self.coordinators.topics_changed(&image).await;
        }
        self.publish_group_configs().await;
    }
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
