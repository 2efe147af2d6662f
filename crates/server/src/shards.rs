//! The coordinator shards at run time: `group.coordinator.threads` tasks, each owning one
//! sans-IO [`CoordinatorShard`] and the groups whose id hashes to it, as Kafka partitions
//! `__consumer_offsets`. Connections hand a job to the owning shard over its channel and await
//! the answer on a oneshot, so the heartbeat path takes no lock. Each task also sleeps until
//! the shard's next deadline and then calls `tick` with the wall clock, which is read here and
//! nowhere in the coordinator crate.
//!
//! Topic catalog changes arrive from the controller as a command on the same channel, so a
//! request sent after a CreateTopics answer is always handled against the new catalog.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use kcoord_coordinator::timers::TickEvent;
use kcoord_coordinator::{CoordinatorShard, StreamsGroupConfig};
use kcoord_metadata::TopicsImage;
use kcoord_wire::ErrorCode;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{error, info};

use crate::clock;

/// Commands queued per shard before senders wait (back-pressure on the connections).
const SHARD_QUEUE: usize = 1024;

/// A job run on the shard's task: the shard, the topic catalog it knows, and `now` (ms).
type Job = Box<dyn FnOnce(&mut CoordinatorShard, &TopicsImage, i64) + Send>;

enum Command {
    Run(Job),
    TopicsChanged(Arc<TopicsImage>),
}

/// Why a shard could not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// The shard task is not running (shutting down, or never started).
    #[error("the coordinator shard is not available")]
    Unavailable,
    /// The job panicked; the shard logged it and goes on serving other groups.
    #[error("the coordinator shard failed while handling the request")]
    Failed,
}

impl ShardError {
    /// The Kafka error a client gets instead of an answer.
    pub fn error_code(self) -> ErrorCode {
        match self {
            ShardError::Unavailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ShardError::Failed => ErrorCode::UNKNOWN_SERVER_ERROR,
        }
    }
}

/// One shard as seen from a connection.
#[derive(Debug, Clone)]
pub struct ShardHandle {
    index: usize,
    tx: mpsc::Sender<Command>,
    /// True until the shard task has finished its startup work (replaying what it owns; today
    /// there is nothing to replay, so only a [`LoadGate`] keeps it true). Handlers that must
    /// answer COORDINATOR_LOAD_IN_PROGRESS meanwhile read it; jobs sent meanwhile just wait.
    loading: watch::Receiver<bool>,
}

/// Holds every shard in its loading state until [`LoadGate::open`], so that tests can observe
/// COORDINATOR_LOAD_IN_PROGRESS deterministically (`Extensions::load_gate`).
#[derive(Debug, Clone)]
pub struct LoadGate {
    open: Arc<watch::Sender<bool>>,
}

impl Default for LoadGate {
    fn default() -> Self {
        LoadGate::new()
    }
}

impl LoadGate {
    /// A closed gate.
    pub fn new() -> Self {
        LoadGate {
            open: Arc::new(watch::channel(false).0),
        }
    }

    /// Lets the shards finish loading.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    async fn wait(&self) {
        let mut open = self.open.subscribe();
        // The sender lives in `self`, so this only ends when the gate opens.
        let _ = open.wait_for(|open| *open).await;
    }
}

impl ShardHandle {
    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether the shard is still loading (COORDINATOR_LOAD_IN_PROGRESS).
    pub fn is_loading(&self) -> bool {
        *self.loading.borrow()
    }

    /// Waits until the shard has loaded (returns at once if it has; never if its task was not
    /// started).
    pub async fn loaded(&self) {
        let mut loading = self.loading.clone();
        let _ = loading.wait_for(|loading| !*loading).await;
    }

    /// Runs `f` on the shard and returns what it returned.
    pub async fn call<R, F>(&self, f: F) -> Result<R, ShardError>
    where
        R: Send + 'static,
        F: FnOnce(&mut CoordinatorShard, &TopicsImage, i64) -> R + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |shard, topics, now| {
            let _ = reply.send(f(shard, topics, now));
        });
        self.tx
            .send(Command::Run(job))
            .await
            .map_err(|_| ShardError::Unavailable)?;
        // The reply is dropped unsent only when the job panicked (or the task stopped with the
        // job still queued).
        answer.await.map_err(|_| ShardError::Failed)
    }
}

/// Every shard; routes a group to its owner.
#[derive(Debug, Clone)]
pub struct Coordinators {
    shards: Arc<[ShardHandle]>,
}

/// The shard tasks, built but not yet running.
pub struct ShardTasks {
    tasks: Vec<ShardTask>,
}

struct ShardTask {
    index: usize,
    shard: CoordinatorShard,
    rx: mpsc::Receiver<Command>,
    loading: watch::Sender<bool>,
    gate: Option<LoadGate>,
}

impl Coordinators {
    /// `count` shards (at least one) configured with `config`.
    pub fn new(count: usize, config: &StreamsGroupConfig) -> (Coordinators, ShardTasks) {
        let count = count.max(1);
        let mut handles = Vec::with_capacity(count);
        let mut tasks = Vec::with_capacity(count);
        for index in 0..count {
            let (tx, rx) = mpsc::channel(SHARD_QUEUE);
            let (loading, loading_rx) = watch::channel(true);
            handles.push(ShardHandle {
                index,
                tx,
                loading: loading_rx,
            });
            // The seed only drives the TopologyDescriptionIds a shard mints; it must differ
            // between shards and runs, not be secret.
            let seed = uuid::Uuid::new_v4().as_u64_pair().0 ^ index as u64;
            tasks.push(ShardTask {
                index,
                shard: CoordinatorShard::new(config.clone(), seed),
                rx,
                loading,
                gate: None,
            });
        }
        (
            Coordinators {
                shards: handles.into(),
            },
            ShardTasks { tasks },
        )
    }

    pub fn len(&self) -> usize {
        self.shards.len()
    }

    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// The shard that owns `group_id`.
    pub fn for_group(&self, group_id: &str) -> &ShardHandle {
        &self.shards[shard_index(group_id, self.shards.len())]
    }

    pub fn all(&self) -> impl Iterator<Item = &ShardHandle> {
        self.shards.iter()
    }

    /// Tells every shard that the catalog changed. Queued behind the requests already sent, so
    /// each shard sees the change before any request that follows this call.
    pub async fn topics_changed(&self, image: &Arc<TopicsImage>) {
        for shard in self.shards.iter() {
            // A shard that is gone has nothing to update.
            let _ = shard
                .tx
                .send(Command::TopicsChanged(Arc::clone(image)))
                .await;
        }
    }
}

/// Kafka's `Utils.abs(groupId.hashCode()) % partitions`: Java's `String.hashCode` over UTF-16
/// units, so the mapping is stable across runs and platforms.
pub fn shard_index(group_id: &str, shards: usize) -> usize {
    let hash = group_id.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    (hash & 0x7fff_ffff) as usize % shards.max(1)
}

impl ShardTasks {
    /// Every shard stays loading until `gate` opens.
    pub fn with_load_gate(mut self, gate: LoadGate) -> Self {
        for task in &mut self.tasks {
            task.gate = Some(gate.clone());
        }
        self
    }

    /// Starts every shard task; they stop when `stop` turns true (or its sender is dropped).
    pub fn spawn(self, stop: &watch::Receiver<bool>) -> Vec<tokio::task::JoinHandle<()>> {
        self.tasks
            .into_iter()
            .map(|task| tokio::spawn(task.run(stop.clone())))
            .collect()
    }
}

impl ShardTask {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut topics = Arc::new(TopicsImage::default());
        // Startup: nothing to replay yet (the shard's state is in memory), so loading ends at
        // once unless a test holds it with a gate.
        if let Some(gate) = self.gate.take() {
            tokio::select! {
                _ = gate.wait() => {}
                _ = crate::net::stopped(&mut stop) => return,
            }
        }
        self.loading.send_replace(false);
        loop {
            // Deadlines are checked before waiting, so a busy shard still ticks on time.
            let now = clock::now_ms();
            if self.shard.next_deadline().is_some_and(|d| d <= now) {
                self.tick(&topics, now);
            }
            let wait = self
                .shard
                .next_deadline()
                .map(|d| Duration::from_millis(u64::try_from(d - now).unwrap_or(0).max(1)));
            tokio::select! {
                command = self.rx.recv() => match command {
                    Some(Command::Run(job)) => self.run_job(job, &topics),
                    Some(Command::TopicsChanged(image)) => {
                        topics = image;
                        self.shard.topics_changed();
                    }
                    None => break,
                },
                _ = sleep(wait) => {}
                _ = crate::net::stopped(&mut stop) => break,
            }
        }
    }

    fn run_job(&mut self, job: Job, topics: &TopicsImage) {
        let now = clock::now_ms();
        let shard = &mut self.shard;
        // A bug must not take every group of the shard down with it: the caller gets
        // UNKNOWN_SERVER_ERROR and the shard keeps serving.
        if std::panic::catch_unwind(AssertUnwindSafe(|| job(shard, topics, now))).is_err() {
            error!(
                shard = self.index,
                "a coordinator request panicked; answered UNKNOWN_SERVER_ERROR"
            );
        }
    }

    fn tick(&mut self, topics: &TopicsImage, now: i64) {
        let shard = &mut self.shard;
        let ticked = std::panic::catch_unwind(AssertUnwindSafe(|| shard.tick(topics, now)));
        match ticked {
            Ok(Ok(events)) => {
                for event in events {
                    log_tick_event(self.index, &event);
                }
            }
            Ok(Err(e)) => error!(shard = self.index, error = %e, "coordinator timers failed"),
            Err(_) => error!(shard = self.index, "coordinator timers panicked"),
        }
    }
}

async fn sleep(wait: Option<Duration>) {
    match wait {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

fn log_tick_event(shard: usize, event: &TickEvent) {
    match event {
        TickEvent::SessionExpired {
            group_id,
            member_id,
        } => info!(
            shard,
            group = %group_id,
            member = %member_id,
            "streams group member fenced: session timeout expired"
        ),
        TickEvent::RebalanceTimedOut {
            group_id,
            member_id,
        } => info!(
            shard,
            group = %group_id,
            member = %member_id,
            "streams group member fenced: it did not revoke its tasks within its rebalance timeout"
        ),
        TickEvent::AssignmentComputed { group_id, epoch } => info!(
            shard,
            group = %group_id,
            epoch,
            "streams group target assignment computed after the initial rebalance delay"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_index_is_javas_string_hash() {
        // "orders".hashCode() == -1008770331 in Java; abs-masked: 1138713317.
        assert_eq!(shard_index("orders", 1 << 31), 1_138_713_317);
        assert_eq!(shard_index("orders", 50), 1_138_713_317 % 50);
        assert_eq!(shard_index("", 4), 0);
        for n in 1..8 {
            for g in ["a", "group-1", "ünïcode", "x".repeat(300).as_str()] {
                assert!(shard_index(g, n) < n);
                assert_eq!(shard_index(g, n), shard_index(g, n));
            }
        }
    }

    #[tokio::test]
    async fn jobs_run_on_the_shard_and_panics_do_not_kill_it() {
        let (coordinators, tasks) = Coordinators::new(2, &StreamsGroupConfig::default());
        let (stop_tx, stop) = watch::channel(false);
        let joins = tasks.spawn(&stop);
        let shard = coordinators.for_group("g");
        let groups = shard.call(|s, _, now| (s.group_ids(), now > 0)).await;
        assert_eq!(groups, Ok((Vec::new(), true)));
        let panicked = shard.call(|_, _, _| -> u8 { panic!("boom") }).await;
        assert_eq!(panicked, Err(ShardError::Failed));
        assert_eq!(shard.call(|_, _, _| 5).await, Ok(5));
        let _ = stop_tx.send(true);
        for j in joins {
            j.await.unwrap();
        }
        assert_eq!(shard.call(|_, _, _| 5).await, Err(ShardError::Unavailable));
    }

    #[tokio::test]
    async fn topic_changes_reach_every_shard() {
        let (coordinators, tasks) = Coordinators::new(3, &StreamsGroupConfig::default());
        let (_stop_tx, stop) = watch::channel(false);
        tasks.spawn(&stop);
        let mut store = kcoord_metadata::Store::new();
        store
            .append(vec![kcoord_metadata::Record::Topic(
                kcoord_wire::records::TopicRecord {
                    name: "t".into(),
                    topic_id: uuid::Uuid::from_u128(3),
                    ..Default::default()
                },
            )])
            .unwrap();
        coordinators
            .topics_changed(&Arc::new(store.state().topics.clone()))
            .await;
        for shard in coordinators.all() {
            assert_eq!(shard.call(|_, topics, _| topics.len()).await, Ok(1));
        }
    }
}
