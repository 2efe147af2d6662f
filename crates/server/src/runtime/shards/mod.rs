//! The coordinator shards at run time: `offsets.topic.num.partitions` shards, each one sans-IO
//! [`CoordinatorShard`] owning the groups whose id hashes to it, as Kafka partitions
//! `__consumer_offsets`.
//!
//! A request runs on the connection task that received it, holding its shard's lock for the
//! few microseconds the shard needs: no channel, no reply oneshot, no cross-thread wake-up on
//! the heartbeat path. Requests of one shard are thereby serialized (as Kafka's coordinator
//! runtime serializes a partition's events), and requests of different shards run in parallel.
//! A request whose work grows with a list the client chose (many groups, partitions or offsets)
//! runs as several small jobs and yields between them (`handlers::groups`, OffsetFetch), or is
//! refused before its job when it could not be written anyway (an OffsetCommit larger than one
//! batch), so no client holds a shard, and the heartbeats of its groups, for long.
//! A connection answers its requests one after another, so a client's pipelined requests are
//! handled in the order sent, and the responses of one read batch leave in one write.
//!
//! Timers run on one task per shard, which sleeps until the shard's next deadline and then
//! calls `tick` with the wall clock (read here and nowhere in the coordinator crate). A request
//! that brings the next deadline forward wakes it.
//!
//! Every job on a shard (a request, a timer, a catalog change) is one handler of
//! [`CoordinatorShard`] committed by the shard's [`kcoord_runtime::Runtime`]: the handler
//! decides without changing anything, the runtime appends its records as one batch, replays
//! them and applies its effects; a handler that panics or whose batch cannot be appended
//! changes nothing. With a durable log (`group.coordinator.log.*`) the batch is queued for the
//! shard's writer and the request is answered once it is on disk ([`crate::runtime::shard_log`]). At startup each
//! shard replays its own log on its own task; until it has, its groups answer
//! COORDINATOR_LOAD_IN_PROGRESS and the other shards serve.
//!
//! Topic catalog changes arrive from the controller through [`Coordinators::topics_changed`],
//! which returns once every shard holds the new catalog, so a request sent after a CreateTopics
//! answer is always handled against it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};

use kcoord_coordinator::classic::ClassicGroupConfig;
use kcoord_coordinator::{
    CoordinatorShard, Effect, GroupConfigRules, StreamsGroupConfig, TransactionConfig,
};
use kcoord_metadata::TopicsImage;
use kcoord_runtime::Runtime;
use tokio::sync::{mpsc, watch, Notify};
use tracing::{error, info};

use crate::config::coordinator_log::CoordinatorLogSettings;
use crate::metrics::Metrics;
use crate::support::clock::Stamp;

mod handle;
mod parked;
mod task;
mod upstream;
mod writer;

use handle::{Locked, ShardSink, Shared};
pub use handle::{ShardError, ShardHandle};
use task::ShardTask;
pub use task::{LoadGate, ShardTasks};

/// The settings of what the shards coordinate besides streams groups.
#[derive(Debug, Clone, Default)]
pub struct Protocols {
    pub transactions: TransactionConfig,
    pub classic: ClassicGroupConfig,
    pub consumer: kcoord_coordinator::ConsumerGroupConfig,
}

/// Every shard; routes a group to its owner.
#[derive(Debug, Clone)]
pub struct Coordinators {
    shards: Arc<[ShardHandle]>,
    /// Wakes the marker task ([`crate::runtime::transactions`]): a transaction's outcome was
    /// decided.
    markers: Arc<Notify>,
}

impl Coordinators {
    /// `count` shards (at least one) configured with `config`, in memory, without a bound on
    /// the groups.
    pub fn new(count: usize, config: &StreamsGroupConfig) -> (Coordinators, ShardTasks) {
        Self::with_logs(
            count,
            config,
            &CoordinatorLogSettings::default(),
            &Protocols::default(),
            usize::MAX,
            Arc::new(Metrics::new([])),
        )
    }

    /// `count` shards configured with `config`, each keeping its log in `<dir>/<index>` when
    /// `logs` names a directory, holding at most `max_groups` groups together, counting their
    /// work in `metrics`.
    pub fn with_logs(
        count: usize,
        config: &StreamsGroupConfig,
        logs: &CoordinatorLogSettings,
        protocols: &Protocols,
        max_groups: usize,
        metrics: Arc<Metrics>,
    ) -> (Coordinators, ShardTasks) {
        let count = count.max(1);
        let groups_total = Arc::new(AtomicUsize::new(0));
        let wake = Arc::new(Notify::new());
        let markers = Arc::new(Notify::new());
        let (to_writer, loaded) = mpsc::unbounded_channel();
        let mut handles = Vec::with_capacity(count);
        let mut tasks = Vec::with_capacity(count);
        for index in 0..count {
            // Groups kept in memory have nothing to load: such a shard serves from the start.
            let in_memory = logs.dir.is_none();
            let (loading, loading_rx) = watch::channel(!in_memory);
            // The seed only drives the TopologyDescriptionIds a shard mints; it must differ
            // between shards and runs, not be secret.
            let seed = uuid::Uuid::new_v4().as_u64_pair().0 ^ index as u64;
            let shard = CoordinatorShard::new(config.clone(), seed)
                .with_max_groups(max_groups)
                .with_transactions(protocols.transactions)
                .with_classic_groups(protocols.classic.clone())
                .with_consumer_config(protocols.consumer.clone());
            let shared = Arc::new(Shared {
                index,
                locked: Mutex::new(Locked {
                    runtime: Runtime::new(shard, ShardSink::Memory),
                    armed: i64::MAX,
                    parked: Default::default(),
                }),
                deadline_moved: Notify::new(),
                stopped: AtomicBool::new(false),
                owned: AtomicBool::new(true),
                loaded: AtomicBool::new(in_memory),
                log: OnceLock::new(),
                jobs: AtomicU64::new(0),
                groups: AtomicUsize::new(0),
                groups_total: Arc::clone(&groups_total),
                metrics: Arc::clone(&metrics),
                markers: Arc::clone(&markers),
            });
            handles.push(ShardHandle {
                shared: Arc::clone(&shared),
                loading: loading_rx,
            });
            tasks.push(ShardTask {
                shared,
                loading,
                gate: None,
                log_dir: logs.dir.as_ref().map(|d| d.join(index.to_string())),
                to_writer: logs
                    .dir
                    .is_some()
                    .then(|| (to_writer.clone(), Arc::clone(&wake))),
                upstream: None,
            });
        }
        (
            Coordinators {
                shards: handles.into(),
                markers,
            },
            ShardTasks {
                tasks,
                writer: logs.dir.is_some().then_some((loaded, wake, logs.fsync)),
            },
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

    /// The shard that coordinates `transactional_id` (Kafka's `partitionFor` on
    /// `__transaction_state`, with as many partitions as there are shards).
    pub fn for_transactional_id(&self, transactional_id: &str) -> &ShardHandle {
        self.for_group(transactional_id)
    }

    /// What wakes the marker task.
    pub fn markers_due(&self) -> Arc<Notify> {
        Arc::clone(&self.markers)
    }

    /// Tells the marker task a transaction's outcome was decided.
    pub fn wake_markers(&self) {
        self.markers.notify_one();
    }

    /// The shard with this index.
    pub fn shard(&self, index: usize) -> Option<&ShardHandle> {
        self.shards.get(index)
    }

    /// The `__consumer_offsets` partition Kafka would keep `group_id` on (what a transaction
    /// holding the group's offsets names): Kafka's `Utils.abs(groupId.hashCode()) % n`.
    pub fn offsets_partition(&self, group_id: &str) -> i32 {
        let n = self.shards.len().max(1) as i64;
        i32::try_from(i64::from(java_hash(group_id)).abs() % n).unwrap_or(0)
    }

    /// The shards holding the groups of `__consumer_offsets` partition `partition`: a group
    /// whose hash is negative lives in another shard than its Kafka partition (see
    /// [`shard_index`]), so there are at most two.
    pub fn shards_of_offsets_partition(&self, partition: i32) -> Vec<&ShardHandle> {
        let n = self.shards.len().max(1) as i64;
        let Some(p) = usize::try_from(partition)
            .ok()
            .filter(|p| *p < self.shards.len())
        else {
            return Vec::new();
        };
        // For a negative hash h: (h & 0x7fffffff) % n == (2^31 % n - |h| % n) mod n.
        let negative = ((1i64 << 31) % n - i64::from(partition)).rem_euclid(n) as usize;
        let mut shards: Vec<&ShardHandle> = self.shards.get(p).into_iter().collect();
        if negative != p {
            shards.extend(self.shards.get(negative));
        }
        shards
    }

    pub fn all(&self) -> impl Iterator<Item = &ShardHandle> {
        self.shards.iter()
    }

    /// Gives every shard the new catalog; returns once all of them hold it. The topics of the
    /// shard's previous catalog that are gone (by id) are deleted topics: their committed
    /// offsets are removed from every group (Kafka's `GroupCoordinatorService.onMetadataUpdate`
    /// → `onTopicsDeleted` on every shard).
    pub async fn topics_changed(&self, image: &Arc<TopicsImage>) {
        for handle in self.shards.iter() {
            let mut locked = handle.shared.lock();
            let ran = handle
                .shared
                .run_job(&mut locked, Stamp::now(), |shard, _| {
                    shard.topics_changed(Arc::clone(image))
                });
            match ran {
                Ok(((deleted, removed), _)) if removed > 0 => info!(
                    shard = handle.index(),
                    removed,
                    topics = ?deleted.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
                    "removed the committed offsets of deleted topics"
                ),
                Ok(_) => {}
                Err(e) => error!(
                    shard = handle.index(),
                    error = %e,
                    "giving the coordinator shard the new topic catalog failed"
                ),
            }
        }
    }

    /// Gives every shard the settings of the groups it owns that have config overrides
    /// (Kafka's `GroupConfigManager.updateGroupConfig`, run when a group's ConfigRecords are
    /// published); returns once all of them run with them.
    pub async fn group_configs_changed(
        &self,
        image: &kcoord_metadata::GroupConfigsImage,
        rules: &GroupConfigRules,
    ) {
        let mut per_shard: Vec<BTreeMap<String, StreamsGroupConfig>> =
            vec![Default::default(); self.shards.len()];
        let mut raw: Vec<BTreeMap<String, BTreeMap<String, String>>> =
            vec![Default::default(); self.shards.len()];
        for (group, overrides) in image.iter() {
            let index = shard_index(group, self.shards.len());
            per_shard[index].insert(group.to_owned(), rules.effective(overrides));
            raw[index].insert(group.to_owned(), overrides.clone());
        }
        for ((handle, configs), overrides) in self.shards.iter().zip(per_shard).zip(raw) {
            let mut locked = handle.shared.lock();
            locked.runtime.input(Effect::GroupConfigs(configs));
            locked
                .runtime
                .input(Effect::ConsumerGroupConfigs(overrides));
        }
    }
}

/// Kafka's `Utils.abs(groupId.hashCode()) % partitions`: Java's `String.hashCode` over UTF-16
/// units, so the mapping is stable across runs and platforms.
///
/// Kafka takes the hash's absolute value where this masks it; the two agree for the groups whose
/// hash is positive. Shard logs already on disk hold their groups where this puts them, so the
/// mapping stays; [`Coordinators::offsets_partition`] gives Kafka's partition where a client sees
/// it (a transaction's `__consumer_offsets` partition).
pub fn shard_index(group_id: &str, shards: usize) -> usize {
    (java_hash(group_id) & 0x7fff_ffff) as usize % shards.max(1)
}

/// Java's `String.hashCode`.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_coordinator::{Outcome, ReplayedLog};

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

    #[test]
    fn offsets_partitions_are_kafkas_and_lead_back_to_the_groups_shard() {
        let (coordinators, _tasks) = Coordinators::new(50, &StreamsGroupConfig::default());
        // "orders".hashCode() == -1008770331: Kafka's partition is 1008770331 % 50 == 31.
        assert_eq!(coordinators.offsets_partition("orders"), 31);
        for g in [
            "orders",
            "a",
            "group-1",
            "txn-offsets-simple-group-g",
            "ünïcode",
        ] {
            let p = coordinators.offsets_partition(g);
            let owner = coordinators.for_group(g).index();
            let candidates: Vec<usize> = coordinators
                .shards_of_offsets_partition(p)
                .iter()
                .map(|s| s.index())
                .collect();
            assert!(
                candidates.contains(&owner),
                "{g}: {p} -> {candidates:?}, owner {owner}"
            );
        }
        assert!(coordinators.shards_of_offsets_partition(-1).is_empty());
        assert!(coordinators.shards_of_offsets_partition(50).is_empty());
    }

    #[tokio::test]
    async fn jobs_run_on_the_shard_and_panics_do_not_kill_it_and_stopped_shards_refuse() {
        let (coordinators, tasks) = Coordinators::new(2, &StreamsGroupConfig::default());
        let (stop_tx, stop) = watch::channel(false);
        let joins = tasks.spawn(&stop);
        let shard = coordinators.for_group("g");
        let groups = shard
            .call(|s, now| Outcome::answer((s.group_ids(), now > 0)))
            .await;
        assert_eq!(groups, Ok((Vec::new(), true)));
        let panicked = shard.call(|_, _| -> Outcome<u8> { panic!("boom") }).await;
        assert_eq!(panicked, Err(ShardError::Failed));
        assert_eq!(shard.read(|_| 5).await, Ok(5));
        let _ = stop_tx.send(true);
        for j in joins {
            j.await.unwrap();
        }
        assert_eq!(shard.read(|_| 5).await, Err(ShardError::Unavailable));
    }

    fn commit(
        shard: &CoordinatorShard,
        group: &str,
        offset: i64,
        now: i64,
    ) -> Outcome<Vec<kcoord_wire::ErrorCode>> {
        let offsets = [kcoord_coordinator::commits::OffsetToCommit {
            topic: "t".into(),
            topic_id: uuid::Uuid::nil(),
            partition: 0,
            offset,
            leader_epoch: -1,
            metadata: None,
        }];
        shard
            .commit_offsets(group, "", -1, 9, &offsets, now)
            .map(|codes| codes.expect("a simple commit"))
    }

    #[tokio::test]
    async fn a_job_that_panics_after_deciding_changes_nothing() {
        let (coordinators, _tasks) = Coordinators::new(1, &StreamsGroupConfig::default());
        let shard = coordinators.for_group("g");
        assert!(shard.call(|s, now| commit(s, "g", 1, now)).await.is_ok());
        let refused = shard
            .call(|s, now| -> Outcome<()> {
                let _decided = (commit(s, "g", 2, now), commit(s, "h", 5, now));
                panic!("a bug after the records were decided")
            })
            .await;
        assert_eq!(refused, Err(ShardError::Failed));
        let (g, h, records) = shard
            .read(|s| {
                (
                    s.state().offsets.get("g", "t", 0).map(|c| c.offset),
                    s.state().offsets.group("h").is_some(),
                    s.store().log().next_offset(),
                )
            })
            .await
            .expect("the shard still serves");
        assert_eq!((g, h, records), (Some(1), false, 1));
    }

    /// Groups kept in a file: memory holds no copy of the shard's records, so a shard whose
    /// state stopped following its log (the runtime's `Diverged`, stood in for here by a state
    /// that lost a committed offset) answers COORDINATOR_LOAD_IN_PROGRESS until the log's writer
    /// has rebuilt it from the file, and then serves what the file holds.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_diverged_shard_with_a_durable_log_is_rebuilt_from_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let logs = CoordinatorLogSettings {
            dir: Some(dir.path().to_path_buf()),
            fsync: false,
        };
        let (coordinators, tasks) = Coordinators::with_logs(
            1,
            &StreamsGroupConfig::default(),
            &logs,
            &Protocols::default(),
            usize::MAX,
            Arc::new(Metrics::new([])),
        );
        let (_stop_tx, stop) = watch::channel(false);
        tasks.spawn(&stop);
        let shard = coordinators.for_group("g");
        shard.loaded().await;
        assert!(shard.call(|s, now| commit(s, "g", 7, now)).await.is_ok());
        let offset = |s: &CoordinatorShard| s.state().offsets.get("g", "t", 0).map(|c| c.offset);
        let kept = shard.read(|s| s.store().log().keeps_records()).await;
        assert_eq!(kept, Ok(false), "memory keeps a copy of a durable log");
        {
            let mut locked = shard.shared.lock();
            let apart = locked.runtime.reloaded(ReplayedLog::empty(), 0);
            locked.runtime.replace_core(apart);
            assert_eq!(offset(locked.runtime.core()), None);
            shard.shared.rebuild(&mut locked, 0);
            assert_eq!(shard.ready(), Err(ShardError::Loading));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let rebuilt = loop {
            match shard.read(offset).await {
                Err(ShardError::Loading) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                other => break other,
            }
        };
        assert_eq!(rebuilt, Ok(Some(7)));
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
            assert_eq!(shard.read(|s| s.topics().len()).await, Ok(1));
        }
    }
}
