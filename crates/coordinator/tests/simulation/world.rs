//! One simulated run: the node, its clients, the requests in flight and the model of what was
//! acknowledged, driven by one seed.
use std::collections::BTreeMap;

use kcoord_coordinator::StreamsGroupConfig;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::checks;
use super::clients::{self, Client, SIMPLE_GROUP, STREAMS_GROUPS};
use super::disk::{PlantedBug, SimDisk, TornWrites};
use super::groups::Groups;
use super::mixed::Mixed;
use super::model::{Acknowledged, EpochWatch, Kind, Violation};
use super::node::{Node, Ticket};
use super::producers;
use super::requests::{Committer, Owner, Waiting};
use super::steps::{self, Situation, Step};
use super::transactions::Txns;
use super::Stats;

pub struct World {
    pub(super) rng: StdRng,
    pub(super) node: Node,
    pub(super) clients: Vec<Client>,
    session_timeout_ms: i64,
    /// The partition count of each topic of the catalog.
    partitions: [i32; clients::TOPICS.len()],
    /// The newest topology epoch of each streams group's clients.
    topology_epochs: [i32; STREAMS_GROUPS.len()],
    pub(super) waiting: BTreeMap<Ticket, Waiting>,
    pub(super) model: Acknowledged,
    pub(super) watch: EpochWatch,
    /// The offset value of the next commit: each commit's is unique.
    pub(super) next_offset_value: i64,
    /// The transactional producers, the marker writer and the data plane (inert unless the
    /// run drives transactions).
    pub(super) txn: Txns,
    /// The classic group and the consumer group (inert unless the run drives them).
    pub(super) groups: Groups,
    /// The mixed group (inert unless the run drives it).
    pub(super) mixed: Mixed,
    pub stats: Stats,
}

impl World {
    pub fn new(
        seed: u64,
        bug: PlantedBug,
        torn: TornWrites,
        transactions: bool,
        groups: bool,
    ) -> Result<World, Violation> {
        let mut rng = StdRng::seed_from_u64(seed);
        let config = config(&mut rng);
        let txn = Txns::new(transactions, bug, seed, &mut rng);
        let groups = Groups::new(groups, &mut rng);
        let txn_config = transactions.then(producers::config);
        let session_timeout_ms = i64::from(config.session_timeout_ms);
        let partitions = clients::TOPICS.map(|(_, count)| count);
        let disk = SimDisk::new(bug, torn);
        let node = Node::start(
            config,
            txn_config,
            seed,
            clients::catalog(partitions),
            disk,
            1_000_000,
        )
        .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        Ok(World {
            rng,
            node,
            clients: Client::all(),
            session_timeout_ms,
            partitions,
            topology_epochs: [1; STREAMS_GROUPS.len()],
            waiting: BTreeMap::new(),
            model: Acknowledged::default(),
            watch: EpochWatch::default(),
            next_offset_value: 1,
            txn,
            groups,
            mixed: Mixed::default(),
            stats: Stats::default(),
        })
    }

    /// Drives the mixed group too (it draws nothing when made: a run with it draws as one
    /// without until its first step).
    pub fn drive_mixed(&mut self) {
        self.mixed = Mixed::new(true);
    }

    /// Draws and runs one step, then checks every invariant. Returns what happened, for the
    /// trace.
    pub fn step(&mut self) -> Result<String, Violation> {
        let situation = Situation {
            session_timeout_ms: self.session_timeout_ms,
            queued_batches: self.node.queued_batches(),
            queued_records: self.node.queued_records(),
        };
        // A run without transactions or groups draws exactly as before they were simulated.
        let ours = match self.draw_mixed(situation.queued_batches) {
            Some(step) => Some(step),
            None => match self.draw_group(situation.queued_batches) {
                Some(step) => Some(step),
                None => self.draw_txn(situation.queued_batches),
            },
        };
        let step = match ours {
            Some(step) => step,
            None => steps::draw(&mut self.rng, &self.clients, situation),
        };
        let rolled_back = matches!(step, Step::FailWrite | Step::Crash { .. });
        let during = |v: Violation| Violation::new(v.kind, format!("{step:?}: {}", v.detail));
        let what = self.run(&step).map_err(during)?;
        let answered = self.deliver().map_err(during)?;
        self.check(rolled_back).map_err(during)?;
        Ok(format!(
            "t={} log={} {step:?}{what}{answered}",
            self.node.now(),
            self.stats.log_records
        ))
    }

    /// The shard's state, printed in an order that does not depend on hashing.
    pub fn fingerprint(&self) -> String {
        let state = self.node.shard().state();
        let mut groups: Vec<_> = state.streams_groups.iter().collect();
        groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        let mut consumers: Vec<_> = state.consumer_groups.iter().collect();
        consumers.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        let classic: Vec<_> = self.node.shard().classic_groups().collect();
        format!(
            "{groups:?} {consumers:?} {classic:?} {:?} {:?}",
            state.offsets, state.transactions
        )
    }

    /// Lets the writer catch up, then checks: the end of a run is a quiescent point.
    pub fn drain(&mut self) -> Result<(), Violation> {
        self.node.sync(usize::MAX);
        self.deliver()?;
        if self.txn.enabled {
            self.finish_txns()?;
        }
        if self.groups.enabled {
            self.converge_groups()?;
        }
        if self.mixed.enabled {
            self.converge_mixed()?;
        }
        self.check(false)
    }

    /// The partition count of the catalog's topic `topic`.
    pub(super) fn partition_count(&self, topic: usize) -> i32 {
        self.partitions[topic]
    }

    fn run(&mut self, step: &Step) -> Result<String, Violation> {
        let bug = |e: String| Violation::new(Kind::RuntimeRefused, e);
        match step {
            Step::Txn(step) => self.run_txn(step),
            Step::Group(step) => self.run_group(step),
            Step::Mixed(step) => self.run_mixed(step),
            Step::Heartbeat {
                client,
                report_tasks,
            } => self.heartbeat(*client, *report_tasks),
            Step::Leave { client } => self.leave(*client, false),
            Step::UpgradeTopology { client } => self.leave(*client, true),
            Step::MemberCommit { client } => self.member_commit(*client),
            Step::SimpleCommit { partitions } => {
                let who = Committer {
                    member_id: "",
                    instance_id: None,
                    epoch: -1,
                };
                self.commit(Owner::Nobody, SIMPLE_GROUP, who, partitions.clone())
            }
            Step::DeleteGroups { groups } => self.delete_groups(groups.clone()),
            Step::DeleteOffsets { partitions } => self.delete_offsets(partitions.clone()),
            Step::Advance { ms } => self.advance(*ms),
            Step::AdvanceToDeadline => {
                let now = self.node.now();
                let deadline = self.node.next_deadline().unwrap_or(now);
                self.advance((deadline - now).max(0))
            }
            Step::GrowTopic { topic } => {
                let count = &mut self.partitions[*topic];
                *count = (*count + 1).min(clients::MAX_PARTITIONS);
                let catalog = clients::catalog(self.partitions);
                self.node.publish_topics(catalog).map_err(bug)?;
                Ok(format!(" -> {:?}", self.partitions))
            }
            Step::Sync { batches } => {
                self.node.sync(*batches);
                Ok(String::new())
            }
            Step::FailWrite => {
                self.stats.failed_writes += 1;
                self.node.fail_write().map_err(bug)?;
                Ok(String::new())
            }
            Step::RewriteCompacted => {
                self.stats.rewrites += 1;
                self.node.rewrite_compacted().map_err(bug)?;
                Ok(String::new())
            }
            Step::Crash { written } => {
                self.stats.crashes += 1;
                // The requests still waiting are refused, but those whose records reached the
                // file were made: the model takes what the file has of them.
                let maybe = self.maybe_made();
                self.node.crash_and_restart(*written).map_err(bug)?;
                self.writer_crashed();
                self.model.absorb(self.node.shard().state(), &maybe);
                Ok(String::new())
            }
        }
    }

    fn heartbeat(&mut self, client: usize, report_tasks: bool) -> Result<String, Violation> {
        let request = self.clients[client].heartbeat(report_tasks);
        self.send_heartbeat(client, request, false)
    }

    fn leave(&mut self, client: usize, upgrade: bool) -> Result<String, Violation> {
        let group = group_index(self.clients[client].group);
        let upgrade_to = upgrade.then(|| {
            let own = self.clients[client].member.topology.epoch;
            if own >= self.topology_epochs[group] {
                self.topology_epochs[group] = own + 1;
            }
            self.topology_epochs[group]
        });
        let same_id = self.rng.random_bool(0.5);
        let request = self.clients[client].leave(upgrade_to, same_id);
        self.send_heartbeat(client, request, true)
    }

    pub(super) fn advance(&mut self, ms: i64) -> Result<String, Violation> {
        let tick = self.node.advance(ms);
        if let Some(reason) = tick.diverged {
            return Err(Violation::new(
                Kind::RuntimeRefused,
                format!("a timer diverged: {reason}"),
            ));
        }
        // A timer job the runtime refused is in `failures` next to the jobs that failed as
        // they may (an assignment that cannot be computed): told apart by the runtime's words.
        if let Some(refused) = tick.failures.iter().find(|f| {
            f.starts_with("the handler panicked") || f.starts_with("the batch cannot be appended")
        }) {
            return Err(Violation::new(
                Kind::RuntimeRefused,
                format!("a timer job: {refused}"),
            ));
        }
        self.stats.count_tick(&tick.events);
        Ok(format!(" -> {:?} {:?}", tick.events, tick.failures))
    }

    /// Hands every answered request to its client (and, acknowledged, to the model); returns
    /// them, for the trace.
    pub(super) fn deliver(&mut self) -> Result<String, Violation> {
        let answered = self.node.take_answered();
        let mut trace = String::new();
        for &ticket in &answered.acknowledged {
            if let Some(waiting) = self.waiting.remove(&ticket) {
                self.stats.acknowledged += 1;
                self.acknowledge(ticket, waiting)?;
            } else if let Some(answered) = self.group_answered(ticket, true) {
                self.stats.acknowledged += 1;
                answered?;
            } else if let Some(answered) = self.mixed_answered(ticket, true) {
                self.stats.acknowledged += 1;
                answered?;
            } else {
                self.txn_answered(ticket, true)?;
            }
        }
        for ticket in &answered.refused {
            if let Some(waiting) = self.waiting.remove(ticket) {
                self.stats.refused += 1;
                self.refuse(waiting);
            } else if let Some(answered) = self.group_answered(*ticket, false) {
                self.stats.refused += 1;
                answered?;
            } else if let Some(answered) = self.mixed_answered(*ticket, false) {
                self.stats.refused += 1;
                answered?;
            } else {
                self.txn_answered(*ticket, false)?;
            }
        }
        if !answered.acknowledged.is_empty() {
            trace += &format!(" | acknowledged {:?}", answered.acknowledged);
        }
        if !answered.refused.is_empty() {
            trace += &format!(" | refused {:?}", answered.refused);
        }
        Ok(trace)
    }

    /// Every invariant, after a step.
    fn check(&mut self, rolled_back: bool) -> Result<(), Violation> {
        let whole = self
            .node
            .whole_log()
            .map_err(|e| Violation::new(Kind::ReplayDiffers, e))?;
        let shard = self.node.shard();
        let state = shard.state();
        checks::replays_to_live(&whole, shard, "the shard's file and queue")?;
        checks::no_task_owned_twice(state)?;
        checks::epochs_ordered(state)?;
        // After a rollback a group that vanished lost what was acknowledged of it; otherwise a
        // group that vanished was deleted, and what is acknowledged of it next is of a new one.
        if rolled_back {
            self.model.check_member_epochs(state, &self.watch)?;
            self.watch.observe(state, true)?;
        } else {
            self.watch.observe(state, false)?;
            self.model.check_member_epochs(state, &self.watch)?;
        }
        self.model.check_left(state)?;
        self.check_txns()?;
        self.check_groups(rolled_back)?;
        self.check_mixed(rolled_back)?;
        let shard = self.node.shard();
        let state = shard.state();
        self.stats.observe(shard, whole.len(), rolled_back);
        if self.node.is_quiescent() {
            self.model.check_offsets(state, "the shard")?;
            let file = self
                .node
                .durable_log()
                .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
            checks::replays_to_live(&file, shard, "the file")?;
        }
        Ok(())
    }
}

fn group_index(group: &str) -> usize {
    STREAMS_GROUPS
        .iter()
        .position(|g| *g == group)
        .expect("a streams group of the simulation")
}

/// The settings of a run: small timeouts, so that sessions, rebalance timeouts and initial
/// delays fire; offsets kept forever, so that only acknowledged requests remove them.
fn config(rng: &mut StdRng) -> StreamsGroupConfig {
    StreamsGroupConfig {
        session_timeout_ms: rng.random_range(2_000..=6_000),
        heartbeat_interval_ms: 500,
        num_standby_replicas: rng.random_range(0..=1),
        initial_rebalance_delay_ms: [0, 0, 300, 1_000][rng.random_range(0..4)],
        assignment_interval_ms: 0,
        offsets_retention_ms: i64::MAX,
        offsets_retention_check_interval_ms: 5_000,
        ..Default::default()
    }
}
