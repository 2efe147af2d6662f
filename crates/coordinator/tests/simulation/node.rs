//! The coordinator node around one shard, as the daemon runs it (`crates/server/src/runtime/shards/`):
//! a request is one job of the real [`Runtime`] over the real [`CoordinatorShard`], its batch
//! queued on the [`SimDisk`]; it is answered (acknowledged) once the disk says the offset its
//! receipt names is durable, and refused (NOT_COORDINATOR, or a broken connection) if the
//! disk loses the batch first. The clock is the driver's.
//!
//! A JoinGroup or SyncGroup the shard parks (`Reply::Parked`) is kept by its waiter id, as
//! `crates/server/src/runtime/shards/parked.rs` keeps it: after every job and tick the answers
//! the shard decided are taken, and each is acknowledged once everything appended up to then
//! (the records of the job that decided it among them) is durable. A crash or a failed write
//! rebuilds the shard, which forgets its parked requests: they are refused (NOT_COORDINATOR).
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use kcoord_coordinator::classic::{ClassicAnswer, ClassicGroupConfig, Reply, WaiterId};
use kcoord_coordinator::{
    ConsumerGroupConfig, CoordinatorShard, Outcome, ReplayedLog, StreamsGroupConfig, Tick,
    TransactionConfig,
};
use kcoord_metadata::{MetadataLog, TopicsImage};
use kcoord_runtime::Runtime;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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
    /// Parked JoinGroup and SyncGroup requests, by the waiter id the shard gave them.
    parked: BTreeMap<WaiterId, Ticket>,
    /// The answers handed to parked requests, until the driver takes them.
    classic_answers: BTreeMap<Ticket, ClassicAnswer>,
    /// How many times the process started: each start draws a new seed for the ids the shard
    /// mints, as the daemon's does (a restarted shard must not mint a member id again).
    boots: u64,
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
            parked: BTreeMap::new(),
            classic_answers: BTreeMap::new(),
            boots: 1,
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
        let ticket = self.new_ticket();
        self.wait_for(done.receipt, ticket);
        // A job of any kind (a LeaveGroup, an OffsetCommit that fences nobody) may answer
        // parked requests.
        self.deliver_parked()?;
        Ok((done.response, ticket))
    }

    /// Runs a JoinGroup or SyncGroup `handler` as one job: answered as [`Node::call`]'s when
    /// the shard answers now; parked otherwise, until a job decides its answer (perhaps this
    /// one), which [`Node::take_classic_answer`] gives once the ticket is acknowledged.
    pub fn call_parked<T>(
        &mut self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> Outcome<Reply<T>>,
    ) -> Result<(Option<T>, Ticket), String> {
        let now = self.now;
        let done = self
            .runtime
            .run(|shard| handler(shard, now))
            .map_err(|refused| format!("the runtime refused a job: {}", refused.error))?;
        let ticket = self.new_ticket();
        let answer = match done.response {
            Reply::Now(answer) => {
                self.wait_for(done.receipt, ticket);
                Some(answer)
            }
            Reply::Parked(waiter) => {
                self.parked.insert(waiter, ticket);
                None
            }
        };
        self.deliver_parked()?;
        Ok((answer, ticket))
    }

    /// The answer a parked request was given, once its ticket is answered.
    pub fn take_classic_answer(&mut self, ticket: Ticket) -> Option<ClassicAnswer> {
        self.classic_answers.remove(&ticket)
    }

    fn new_ticket(&mut self) -> Ticket {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        ticket
    }

    /// As `ShardLog::submit`: a request whose receipt is durable already is answered at once;
    /// the others wait in offset order.
    fn wait_for(&mut self, receipt: u64, ticket: Ticket) {
        if receipt <= self.runtime.log().durable_offset() {
            self.answered.acknowledged.push(ticket);
        } else {
            self.waiters.push_back((receipt, ticket));
        }
    }

    /// `Shared::deliver`: takes the answers the shard decided (one job) and hands each to its
    /// parked request, to be acknowledged once everything appended so far is durable.
    fn deliver_parked(&mut self) -> Result<(), String> {
        if !self.runtime.core().has_classic_answers() {
            return Ok(());
        }
        let done = self
            .runtime
            .run(|shard| shard.take_classic_answers())
            .map_err(|refused| format!("the answers could not be taken: {}", refused.error))?;
        for (waiter, answer) in done.response {
            // A waiter the driver does not know was parked by a shard since rebuilt.
            let Some(ticket) = self.parked.remove(&waiter) else {
                continue;
            };
            self.classic_answers.insert(ticket, answer);
            if self.runtime.log().bug() == PlantedBug::AnswersParkedAtOnce {
                self.answered.acknowledged.push(ticket);
            } else {
                self.wait_for(done.receipt, ticket);
            }
        }
        Ok(())
    }

    /// Moves the clock forward by `ms` and runs every timer due, as the shard's timer task.
    pub fn advance(&mut self, ms: i64) -> Tick {
        self.now += ms;
        let mut tick = kcoord_coordinator::tick(&mut self.runtime, self.now);
        if let Err(refused) = self.deliver_parked() {
            tick.diverged = Some(refused);
        }
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
            let replayed = ReplayedLog::durable(&self.durable_log()?)
                .map_err(|e| format!("the file does not replay: {e}"))?;
            let rebuilt = self.runtime.reloaded(replayed, self.now);
            self.runtime.replace_core(rebuilt);
        }
        self.refuse_all();
        Ok(())
    }

    /// The writer rewrites the file as its records compacted (`writer.rs`'s `compact`).
    pub fn rewrite_compacted(&mut self) -> Result<(), String> {
        self.runtime.log_mut().compact_file()
    }

    /// What the shard's state stems from: its file, then its queue.
    pub fn whole_log(&self) -> Result<MetadataLog, String> {
        self.runtime.log().whole_log()
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
        self.boots += 1;
        // Drawn, not mixed: the shard mixes the ids it mints into its seed, and a start's seed
        // mixed the same way gave a restarted shard an id it had minted before.
        let seed = StdRng::seed_from_u64(self.seed.wrapping_add(self.boots)).random();
        self.runtime = boot(
            &self.config,
            self.transactions,
            seed,
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
        self.deliver_parked()
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

    /// Every waiting request is refused, the parked ones too (their shard forgot them).
    fn refuse_all(&mut self) {
        let refused = self.waiters.drain(..).map(|(_, ticket)| ticket);
        self.answered.refused.extend(refused);
        let parked = std::mem::take(&mut self.parked).into_values();
        self.answered.refused.extend(parked);
        self.classic_answers.clear();
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
    // Configured before it loads, as the daemon's shards are: the timers armed at the load
    // take their settings (a consumer's session) from it.
    let replayed = ReplayedLog::durable(&disk.read_back()?)
        .map_err(|e| format!("the file does not replay: {e}"))?;
    let shard = CoordinatorShard::new(config.clone(), seed)
        .with_classic_groups(classic_config())
        .with_consumer_config(consumer_config())
        .reloaded(replayed, now);
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

/// The classic groups' settings: sessions of a few seconds may be asked for, so that silent
/// members expire within a run.
pub fn classic_config() -> ClassicGroupConfig {
    ClassicGroupConfig {
        min_session_timeout_ms: 1_000,
        max_session_timeout_ms: 30_000,
        initial_rebalance_delay_ms: 300,
        ..Default::default()
    }
}

/// The consumer groups' settings: short sessions, so that silent consumers are fenced.
pub fn consumer_config() -> ConsumerGroupConfig {
    ConsumerGroupConfig {
        session_timeout_ms: 4_000,
        heartbeat_interval_ms: 500,
        ..Default::default()
    }
}
