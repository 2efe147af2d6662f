//! The classic group and the consumer group of a run with groups
//! (`seeded_group_runs_keep_every_invariant`): their clients, the steps drawn for them, the
//! checks after every step, and, at the end, their convergence.
use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::Rng;

use super::classic_clients::{ClassicClient, Phase, CLASSIC_GROUP};
use super::consumers::{topic_id, ConsumerClient, CONSUMER_GROUP};
use super::group_model::{self, ClassicModel, ConsumerModel};
use super::group_requests::GroupRequest;
use super::model::{Kind, Violation};
use super::node::Ticket;
use super::steps::Step;
use super::world::World;

/// Everything of a run that is about classic and consumer groups (inert unless the run
/// drives them).
#[derive(Default)]
pub struct Groups {
    pub enabled: bool,
    pub classic: Vec<ClassicClient>,
    pub consumers: Vec<ConsumerClient>,
    pub(super) waiting: BTreeMap<Ticket, GroupRequest>,
    pub classic_model: ClassicModel,
    pub consumer_model: ConsumerModel,
}

impl Groups {
    pub fn new(enabled: bool, rng: &mut StdRng) -> Groups {
        if !enabled {
            return Groups::default();
        }
        let mut classic = ClassicClient::all();
        for c in &mut classic {
            c.session_timeout_ms = rng.random_range(2_000..=5_000);
        }
        Groups {
            enabled,
            classic,
            consumers: ConsumerClient::all(),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub enum ClassicAction {
    Join,
    Sync,
    Heartbeat,
    Commit,
    /// LeaveGroup, then a restart (a dynamic member); a restart alone (the static member,
    /// whose consumer sends no LeaveGroup).
    Leave,
}

#[derive(Debug, Clone, Copy)]
pub enum ConsumerAction {
    Heartbeat { report: bool },
    Commit,
    Leave { restart: bool },
}

#[derive(Debug, Clone)]
pub enum GroupStep {
    Classic {
        client: usize,
        action: ClassicAction,
    },
    Consumer {
        client: usize,
        action: ConsumerAction,
    },
}

impl World {
    /// Half the steps of a run with groups are theirs (none of a run without: it draws exactly
    /// as before they were simulated); the writer syncs more often, since a rebalance waits for
    /// the disk at each of its phases.
    pub(super) fn draw_group(&mut self, queued_batches: usize) -> Option<Step> {
        if !self.groups.enabled || self.rng.random_ratio(1, 2) {
            return None;
        }
        if queued_batches > 0 && self.rng.random_ratio(1, 5) {
            return Some(Step::Sync {
                batches: queued_batches,
            });
        }
        let classic = (0..self.groups.classic.len()).filter(|&i| !self.groups.classic[i].waiting);
        let consumers = (0..self.groups.consumers.len())
            .filter(|&i| !self.groups.consumers[i].waiting)
            .map(|i| i + self.groups.classic.len());
        let idle: Vec<usize> = classic.chain(consumers).collect();
        if idle.is_empty() {
            return None;
        }
        let pick = idle[self.rng.random_range(0..idle.len())];
        let step = match pick.checked_sub(self.groups.classic.len()) {
            None => GroupStep::Classic {
                client: pick,
                action: self.classic_action(pick),
            },
            Some(client) => GroupStep::Consumer {
                client,
                action: self.consumer_action(client),
            },
        };
        Some(Step::Group(step))
    }

    fn classic_action(&mut self, client: usize) -> ClassicAction {
        let c = &self.groups.classic[client];
        match c.phase {
            Phase::Joining => ClassicAction::Join,
            Phase::Syncing { .. } => ClassicAction::Sync,
            Phase::Stable { .. } if self.classic_metadata_changed(client) => ClassicAction::Join,
            Phase::Stable { .. } => match self.rng.random_range(0..12) {
                0 => ClassicAction::Leave,
                1..=4 => ClassicAction::Commit,
                _ => ClassicAction::Heartbeat,
            },
        }
    }

    fn consumer_action(&mut self, client: usize) -> ConsumerAction {
        if self.groups.consumers[client].epoch() <= 0 {
            return ConsumerAction::Heartbeat { report: true };
        }
        match self.rng.random_range(0..16) {
            0 => ConsumerAction::Leave {
                restart: self.rng.random_bool(0.5),
            },
            1..=4 => ConsumerAction::Commit,
            5..=9 => ConsumerAction::Heartbeat { report: false },
            _ => ConsumerAction::Heartbeat { report: true },
        }
    }

    /// The leader assigned fewer partitions than the topic now has: Kafka's leader rejoins.
    pub(super) fn classic_metadata_changed(&self, client: usize) -> bool {
        let count = self.partition_count(0);
        self.groups.classic[client]
            .assigned_count
            .is_some_and(|assigned| assigned != count)
    }

    pub(super) fn run_group(&mut self, step: &GroupStep) -> Result<String, Violation> {
        match *step {
            GroupStep::Classic { client, action } => match action {
                ClassicAction::Join => self.classic_join(client),
                ClassicAction::Sync => self.classic_sync(client),
                ClassicAction::Heartbeat => self.classic_heartbeat(client),
                ClassicAction::Commit => self.classic_commit(client),
                ClassicAction::Leave => self.classic_leave(client),
            },
            GroupStep::Consumer { client, action } => match action {
                ConsumerAction::Heartbeat { report } => self.consumer_heartbeat(client, report),
                ConsumerAction::Commit => self.consumer_commit(client),
                ConsumerAction::Leave { restart } => self.consumer_leave(client, restart),
            },
        }
    }

    /// After every step (`rolled_back`: a crash or a failed write rebuilt the shard).
    pub(super) fn check_groups(&mut self, rolled_back: bool) -> Result<(), Violation> {
        if !self.groups.enabled {
            return Ok(());
        }
        let shard = self.node.shard();
        let classic = shard.classic_group(CLASSIC_GROUP);
        self.groups.classic_model.check(classic, rolled_back)?;
        let consumer = shard.state().consumer_groups.get(CONSUMER_GROUP);
        self.groups.consumer_model.check(consumer, rolled_back)?;
        let owners = self.groups.consumers.iter().filter(|c| c.epoch() > 0);
        group_model::same_epoch_owners_disjoint(
            owners.map(|c| (c.name.as_str(), (c.incarnation, c.epoch()), c.owned())),
        )
    }

    /// The end of a run, every write durable: each client does what it would next (a member
    /// joins, syncs or heartbeats with what it owns) while the clock moves in small steps,
    /// until both groups settle, with every check after each round.
    pub(super) fn converge_groups(&mut self) -> Result<(), Violation> {
        for _ in 0..400 {
            self.node.sync(usize::MAX);
            self.deliver()?;
            if self.groups_settled().is_ok() {
                self.stats.groups_converged += 1;
                return Ok(());
            }
            for client in 0..self.groups.classic.len() {
                if !self.groups.classic[client].waiting {
                    let action = match self.groups.classic[client].phase {
                        Phase::Joining => ClassicAction::Join,
                        Phase::Syncing { .. } => ClassicAction::Sync,
                        Phase::Stable { .. } if self.classic_metadata_changed(client) => {
                            ClassicAction::Join
                        }
                        Phase::Stable { .. } => ClassicAction::Heartbeat,
                    };
                    self.run_group(&GroupStep::Classic { client, action })?;
                }
            }
            for client in 0..self.groups.consumers.len() {
                if !self.groups.consumers[client].waiting {
                    self.consumer_heartbeat(client, true)?;
                }
            }
            self.node.sync(usize::MAX);
            self.deliver()?;
            self.advance(100)?;
            self.check_groups(false)?;
        }
        let why = self.groups_settled().unwrap_err();
        let shard = self.node.shard();
        let consumers = shard.state().consumer_groups.get(CONSUMER_GROUP);
        let classic = shard.classic_group(CLASSIC_GROUP);
        Err(Violation::new(
            Kind::NotConverged,
            format!("{why}\nconsumer group: {consumers:#?}\nclassic group: {classic:#?}"),
        ))
    }

    /// Whether both groups are settled: why not, if not.
    fn groups_settled(&self) -> Result<(), String> {
        self.classic_settled()?;
        self.consumers_settled()
    }

    /// The classic group is Stable with every client a member of its generation, holding its
    /// part of a range assignment of every partition of the topic.
    fn classic_settled(&self) -> Result<(), String> {
        let group = self
            .node
            .shard()
            .classic_group(CLASSIC_GROUP)
            .ok_or("no classic group")?;
        if group.state != kcoord_coordinator::classic::ClassicGroupState::Stable
            || group.members.len() != self.groups.classic.len()
        {
            return Err(format!(
                "classic group {:?} with {} members",
                group.state,
                group.members.len()
            ));
        }
        let mut owned = BTreeSet::new();
        for c in &self.groups.classic {
            let stable = matches!(c.phase, Phase::Stable { generation, .. } if generation == group.generation_id);
            if !stable || !group.members.contains_key(c.member_id.as_str()) || c.waiting {
                return Err(format!(
                    "{} is {:?} in generation {}",
                    c.name, c.phase, group.generation_id
                ));
            }
            owned.extend(c.owned().iter().copied());
        }
        let all: BTreeSet<i32> = (0..self.partition_count(0)).collect();
        if owned != all {
            return Err(format!("the classic members own {owned:?}"));
        }
        Ok(())
    }

    /// Every consumer is a member, reconciled to the group's target, owning what the
    /// coordinator assigned it; together they own every partition of both topics.
    fn consumers_settled(&self) -> Result<(), String> {
        let group = self
            .node
            .shard()
            .state()
            .consumer_groups
            .get(CONSUMER_GROUP)
            .ok_or("no consumer group")?;
        if group.members.len() != self.groups.consumers.len() {
            return Err(format!(
                "consumer group with {} members",
                group.members.len()
            ));
        }
        let mut owned = BTreeSet::new();
        for c in &self.groups.consumers {
            let member = group
                .members
                .get(c.consumer.id.as_str())
                .ok_or_else(|| format!("{} is not a member", c.name))?;
            let assigned: BTreeSet<(uuid::Uuid, i32)> = member
                .assigned
                .iter()
                .flat_map(|(t, ps)| ps.keys().map(move |p| (*t, *p)))
                .collect();
            if !member.is_reconciled_to(group.target_assignment_epoch)
                || c.epoch() != member.member_epoch
                || c.owned() != assigned
                || c.waiting
            {
                return Err(format!(
                    "{} at epoch {} owns {:?}; the coordinator has it at {} ({:?}) with {assigned:?}, target epoch {}",
                    c.name, c.epoch(), c.owned(), member.member_epoch, member.state, group.target_assignment_epoch
                ));
            }
            owned.extend(assigned);
        }
        let all: BTreeSet<(uuid::Uuid, i32)> = (0..super::clients::TOPICS.len())
            .flat_map(|t| (0..self.partition_count(t)).map(move |p| (topic_id(t), p)))
            .collect();
        if owned != all {
            return Err(format!("the consumers own {owned:?}"));
        }
        Ok(())
    }
}
