//! The coordinator node around one shard, as the daemon runs it (`crates/server/src/runtime/shards/`):
//! a request is one job of the real [`Runtime`] over the real [`CoordinatorShard`], its batch
//! queued on the [`SimDisk`]; it is answered (acknowledged) once the disk says the offset its
//! receipt names is durable, and refused (NOT_COORDINATOR, or a broken connection) if the
//! disk loses the batch first. The clock is the driver's.
use std::collections::VecDeque;
use std::sync::Arc;

use kcoord_coordinator::{CoordinatorShard, Outcome, StreamsGroupConfig, Tick, TransactionConfig};
use kcoord_metadata::{MetadataLog, Store, TopicsImage};
use kcoord_runtime::Runtime;

use super::disk::{PlantedBug, SimDisk};

/// Names a request waiting for its answer.
pub type Ticket = u64;

/// The requests answered since the driver last asked, each in the order it was answered.
#[derive(Debug, Default)]
pub struct Answered {
    pub acknowledged: Vec<Ticket>,
    pub refused: Vec<Ticket>,
}

pub struct Node {
    runtime: Runtime<CoordinatorShard, SimDisk>,
    config: StreamsGroupConfig,
    /// The transaction coordinator's settings, when the run drives transactions (its checks
    /// are started only then, so that a run without transactions has no timer of theirs).
    transactions: Option<TransactionConfig>,
    /// The shard's seed for the TopologyDescriptionIds it mints.
    seed: u64,
    /// The topic catalog the controller publishes to the shard.
    topics: Arc<TopicsImage>,
    /// (offset that must be durable, request), in offset order: jobs run one at a time.
    waiters: VecDeque<(u64, Ticket)>,
    next_ticket: Ticket,
    answered: Answered,
    now: i64,
}

impl Node {
    /// A node loading its shard from `disk`'s file (a new node's is empty).
    pub fn start(
        config: StreamsGroupConfig,
        transactions: Option<TransactionConfig>,
        seed: u64,
        topics: Arc<TopicsImage>,
        disk: SimDisk,
        now: i64,
    ) -> Result<Node, String> {
        let runtime = boot(&config, transactions, seed, &topics, disk, now)?;
        Ok(Node {
            runtime,
            config,
            transactions,
            seed,
            topics,
            waiters: VecDeque::new(),
            next_ticket: 0,
            answered: Answered::default(),
            now,
        })
    }

    pub fn shard(&self) -> &CoordinatorShard {
        self.runtime.core()
    }

    pub fn now(&self) -> i64 {
        self.now
    }

    /// The file's records, read back; an error if the file log refuses the file.
    pub fn durable_log(&self) -> Result<MetadataLog, String> {
        self.runtime.log().read_back()
    }

    /// Batches waiting for the writer.
    pub fn queued_batches(&self) -> usize {
        self.runtime.log().queued_batches()
    }

    /// Nothing queued and nobody waiting: memory and the file should hold the same.
    pub fn is_quiescent(&self) -> bool {
        self.queued_batches() == 0 && self.waiters.is_empty()
    }

    /// Runs `handler` as one job. Its response is the client's once the ticket is
    /// acknowledged. An `Err` is a job the runtime refused: a handler that panicked, or a batch
    /// that does not replay, which are bugs.
    pub fn call<R>(
        &mut self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> Outcome<R>,
    ) -> Result<(R, Ticket), String> {
        let now = self.now;
        let done = self
            .runtime
            .run(|shard| handler(shard, now))
            .map_err(|refused| format!("the runtime refused a job: {}", refused.error))?;
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        // As `ShardLog::submit`: a request whose receipt is durable already is answered at
        // once; the others wait in offset order.
        if done.receipt <= self.runtime.log().durable_offset() {
            self.answered.acknowledged.push(ticket);
        } else {
            self.waiters.push_back((done.receipt, ticket));
        }
        Ok((done.response, ticket))
    }

    /// Moves the clock forward by `ms` and runs every timer due, as the shard's timer task.
    pub fn advance(&mut self, ms: i64) -> Tick {
        self.now += ms;
        let tick = kcoord_coordinator::tick(&mut self.runtime, self.now);
        self.settle();
        tick
    }

    /// The next deadline of the shard's timers.
    pub fn next_deadline(&self) -> Option<i64> {
        self.runtime.next_deadline()
    }

    /// The writer writes and syncs the `batches` oldest queued batches.
    pub fn sync(&mut self, batches: usize) {
        self.runtime.log_mut().sync(batches);
        self.settle();
    }

    /// The disk refuses the writer's next write: the queue is lost, the shard is rebuilt from
    /// the file and every waiting request is refused (`writer.rs`'s `reload_after_failure`).
    pub fn fail_write(&mut self) -> Result<(), String> {
        self.runtime.log_mut().drop_queued();
        if self.runtime.log().bug() != PlantedBug::KeepsMemoryAfterFailedWrite {
            let store = Store::replay_log(&self.durable_log()?)
                .map_err(|e| format!("the file does not replay: {e}"))?;
            let rebuilt = self.runtime.reloaded(store, self.now);
            self.runtime.replace_core(rebuilt);
        }
        self.refuse_all();
        Ok(())
    }

    /// The writer rewrites the file as the shard's compacted log (`writer.rs`'s `compact`).
    pub fn rewrite_compacted(&mut self) {
        let snapshot = self.runtime.compacted_log();
        self.runtime.log_mut().rewrite(&snapshot);
        self.settle();
    }

    pub fn queued_records(&self) -> usize {
        self.runtime.log().queued_records()
    }

    /// The process dies (memory is lost, every waiting request's connection breaks) and starts
    /// again from the file; the first `written` queued records reached the file as it died
    /// (none: they were all still in the writer's queue).
    pub fn crash_and_restart(&mut self, written: usize) -> Result<(), String> {
        let mut disk = self.runtime.log().clone();
        disk.write_torn(written)?;
        self.runtime = boot(
            &self.config,
            self.transactions,
            self.seed,
            &self.topics,
            disk,
            self.now,
        )?;
        self.refuse_all();
        Ok(())
    }

    /// The controller publishes a new catalog: one job, as `Coordinators::topics_changed` runs
    /// it; a restarted shard gets it too.
    pub fn publish_topics(&mut self, topics: Arc<TopicsImage>) -> Result<(), String> {
        self.topics = topics;
        let topics = Arc::clone(&self.topics);
        self.runtime
            .run(|shard| shard.topics_changed(topics))
            .map_err(|refused| format!("the catalog was refused: {}", refused.error))?;
        Ok(())
    }

    /// Every request answered since the last call.
    pub fn take_answered(&mut self) -> Answered {
        std::mem::take(&mut self.answered)
    }

    /// Acknowledges the waiters whose offset the disk says is durable.
    fn settle(&mut self) {
        let durable = self.runtime.log().durable_offset();
        while let Some(&(needs, ticket)) = self.waiters.front() {
            if needs > durable {
                break;
            }
            self.waiters.pop_front();
            self.answered.acknowledged.push(ticket);
        }
    }

    fn refuse_all(&mut self) {
        let refused = self.waiters.drain(..).map(|(_, ticket)| ticket);
        self.answered.refused.extend(refused);
    }
}

/// A shard loaded from `disk`'s file as the daemon loads one (`task.rs`): replayed with fresh
/// timers, given the controller's catalog, and its offset expiry (and transaction checks)
/// started.
fn boot(
    config: &StreamsGroupConfig,
    transactions: Option<TransactionConfig>,
    seed: u64,
    topics: &Arc<TopicsImage>,
    disk: SimDisk,
    now: i64,
) -> Result<Runtime<CoordinatorShard, SimDisk>, String> {
    let shard = CoordinatorShard::from_log(config.clone(), seed, &disk.read_back()?, now)
        .map_err(|e| format!("the file does not replay: {e}"))?;
    let shard = match transactions {
        Some(txn) => shard.with_transactions(txn),
        None => shard,
    };
    let mut runtime = Runtime::new(shard, disk);
    runtime
        .run(|shard| shard.topics_changed(Arc::clone(topics)))
        .map_err(|refused| format!("the catalog was refused: {}", refused.error))?;
    runtime
        .run(|shard| shard.start_offset_expiry(now))
        .map_err(|refused| format!("the offset expiry was refused: {}", refused.error))?;
    if transactions.is_some() {
        runtime
            .run(|shard| shard.start_transaction_checks(now))
            .map_err(|refused| format!("the transaction checks were refused: {}", refused.error))?;
    }
    Ok(runtime)
}
