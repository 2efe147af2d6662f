//! One simulated run: the node, its clients, the requests in flight and the model of what was
//! acknowledged, driven by one seed.
use std::collections::BTreeMap;

use kcoord_coordinator::groups::OffsetToCommit;
use kcoord_coordinator::{CoordinatorError, HeartbeatContext, HeartbeatResult, StreamsGroupConfig};
use kcoord_wire::ErrorCode;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::checks;
use super::clients::{self, Client, SIMPLE_GROUP, STREAMS_GROUPS};
use super::disk::PlantedBug;
use super::model::{Acknowledged, EpochWatch, Kind, Violation};
use super::node::{Node, Ticket};
use super::steps::{self, Step};
use super::Stats;

/// A request waiting for its answer, with what it was answered (decided when its job ran, the
/// client's only once acknowledged).
enum InFlight {
    Heartbeat {
        client: usize,
        /// The group's incarnation when the request was sent.
        incarnation: u64,
        leave: bool,
        response: Box<Result<HeartbeatResult, CoordinatorError>>,
    },
    Commit {
        client: Option<usize>,
        group: String,
        offsets: Vec<(&'static str, i32, i64)>,
        response: Result<Vec<ErrorCode>, CoordinatorError>,
    },
    DeleteGroups {
        groups: Vec<String>,
        response: Vec<Result<(), CoordinatorError>>,
    },
    DeleteOffsets {
        partitions: Vec<(&'static str, i32)>,
        response: Result<Vec<Vec<ErrorCode>>, CoordinatorError>,
    },
}

pub struct World {
    rng: StdRng,
    pub node: Node,
    clients: Vec<Client>,
    session_timeout_ms: i64,
    /// The newest topology epoch of each streams group's clients.
    topology_epochs: [i32; STREAMS_GROUPS.len()],
    in_flight: BTreeMap<Ticket, InFlight>,
    model: Acknowledged,
    watch: EpochWatch,
    /// The offset value of the next commit: each commit's is unique.
    next_offset_value: i64,
    pub stats: Stats,
}

const CONTEXT: HeartbeatContext<'static> = HeartbeatContext {
    client_id: "client",
    client_host: "/127.0.0.1",
    api_version: 1,
};

impl World {
    pub fn new(seed: u64, bug: PlantedBug) -> Result<World, Violation> {
        let mut rng = StdRng::seed_from_u64(seed);
        let config = config(&mut rng);
        let session_timeout_ms = i64::from(config.session_timeout_ms);
        let node = Node::start(config, seed, clients::catalog(), bug, 1_000_000)
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        Ok(World {
            rng,
            node,
            clients: Client::all(),
            session_timeout_ms,
            topology_epochs: [1; STREAMS_GROUPS.len()],
            in_flight: BTreeMap::new(),
            model: Acknowledged::default(),
            watch: EpochWatch::default(),
            next_offset_value: 1,
            stats: Stats::default(),
        })
    }

    /// Draws and runs one step, then checks every invariant. Returns what happened, for the
    /// trace.
    pub fn step(&mut self) -> Result<String, Violation> {
        let queued = self.node.queued_batches();
        let step = steps::draw(
            &mut self.rng,
            &self.clients,
            self.session_timeout_ms,
            queued,
        );
        let rolled_back = matches!(step, Step::FailWrite | Step::Crash);
        let what = self.run(&step)?;
        let answered = self.deliver();
        self.check(rolled_back)?;
        Ok(format!("t={} {step:?}{what}{answered}", self.node.now()))
    }

    /// Lets the writer catch up, then checks: the end of a run is a quiescent point.
    pub fn drain(&mut self) -> Result<(), Violation> {
        self.node.sync(usize::MAX);
        self.deliver();
        self.check(false)
    }

    fn run(&mut self, step: &Step) -> Result<String, Violation> {
        let bug = |e: String| Violation::new(Kind::RuntimeRefused, e);
        match step {
            Step::Heartbeat {
                client,
                report_tasks,
            } => self.heartbeat(*client, *report_tasks),
            Step::Leave { client } => self.leave(*client, false),
            Step::UpgradeTopology { client } => self.leave(*client, true),
            Step::MemberCommit { client } => self.member_commit(*client),
            Step::SimpleCommit { partitions } => {
                self.commit(None, SIMPLE_GROUP, "", -1, partitions.clone())
            }
            Step::DeleteGroups { groups } => self.delete_groups(groups.clone()),
            Step::DeleteOffsets { partitions } => self.delete_offsets(partitions.clone()),
            Step::Advance { ms } => self.advance(*ms),
            Step::AdvanceToDeadline => {
                let now = self.node.now();
                let deadline = self.node.next_deadline().unwrap_or(now);
                self.advance((deadline - now).max(0))
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
                self.node.rewrite_compacted();
                Ok(String::new())
            }
            Step::Crash => {
                self.stats.crashes += 1;
                self.node.crash_and_restart().map_err(bug)?;
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
        let request = self.clients[client].leave(upgrade_to);
        self.send_heartbeat(client, request, true)
    }

    fn send_heartbeat(
        &mut self,
        client: usize,
        request: kcoord_wire::messages::streams_group_heartbeat_request::StreamsGroupHeartbeatRequest,
        leave: bool,
    ) -> Result<String, Violation> {
        let incarnation = self.watch.incarnation(&request.group_id);
        let (response, ticket) = self
            .node
            .call(|shard, now| shard.streams_group_heartbeat(&CONTEXT, &request, now))
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        let what = match &response {
            Ok(r) => format!(" -> epoch {}", r.response.member_epoch),
            Err(e) => format!(" -> {:?} {:?}", e.code, e.message),
        };
        self.clients[client].waiting = true;
        let request = InFlight::Heartbeat {
            client,
            incarnation,
            leave,
            response: Box::new(response),
        };
        self.in_flight.insert(ticket, request);
        Ok(format!(" {}{what}", self.clients[client].name))
    }

    fn member_commit(&mut self, client: usize) -> Result<String, Violation> {
        let c = &self.clients[client];
        let mut partitions = c.owned_partitions();
        if partitions.is_empty() {
            // A member that owns nothing commits all the same: the commit is checked against
            // its epoch, not its tasks.
            partitions.push((clients::TOPICS[0].0, self.rng.random_range(0..2)));
        }
        partitions.truncate(self.rng.random_range(1..=2));
        let (group, member_id, epoch) = (c.group, c.member.id.clone(), c.member.epoch);
        self.commit(Some(client), group, &member_id, epoch, partitions)
    }

    fn commit(
        &mut self,
        client: Option<usize>,
        group: &str,
        member_id: &str,
        epoch: i32,
        partitions: Vec<(&'static str, i32)>,
    ) -> Result<String, Violation> {
        let offsets: Vec<(&'static str, i32, i64)> = partitions
            .into_iter()
            .map(|(topic, partition)| {
                self.next_offset_value += 1;
                (topic, partition, self.next_offset_value)
            })
            .collect();
        let to_commit: Vec<OffsetToCommit> = offsets.iter().map(offset_to_commit).collect();
        let (response, ticket) = self
            .node
            .call(|shard, now| shard.commit_offsets(group, member_id, epoch, 9, &to_commit, now))
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        let what = format!(" {group}/{member_id}@{epoch} {offsets:?} -> {response:?}");
        if let Some(client) = client {
            self.clients[client].waiting = true;
        }
        let request = InFlight::Commit {
            client,
            group: group.to_owned(),
            offsets,
            response,
        };
        self.in_flight.insert(ticket, request);
        Ok(what)
    }

    fn delete_groups(&mut self, groups: Vec<String>) -> Result<String, Violation> {
        let (response, ticket) = self
            .node
            .call(|shard, _| shard.delete_groups(&groups))
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        let codes: Vec<_> = response
            .iter()
            .map(|r| r.as_ref().err().map(|e| e.code))
            .collect();
        self.in_flight
            .insert(ticket, InFlight::DeleteGroups { groups, response });
        Ok(format!(" -> {codes:?}"))
    }

    fn delete_offsets(
        &mut self,
        partitions: Vec<(&'static str, i32)>,
    ) -> Result<String, Violation> {
        let topics: Vec<(String, Vec<i32>)> = partitions
            .iter()
            .map(|(topic, partition)| ((*topic).to_owned(), vec![*partition]))
            .collect();
        let (response, ticket) = self
            .node
            .call(|shard, _| shard.delete_offsets(SIMPLE_GROUP, &topics))
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        let what = format!(" -> {:?}", response.as_ref().map_err(|e| e.code));
        self.in_flight.insert(
            ticket,
            InFlight::DeleteOffsets {
                partitions,
                response,
            },
        );
        Ok(what)
    }

    fn advance(&mut self, ms: i64) -> Result<String, Violation> {
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

    /// Hands every answered request to its client and the model; returns them, for the trace.
    fn deliver(&mut self) -> String {
        let answered = self.node.take_answered();
        let mut trace = String::new();
        for ticket in &answered.acknowledged {
            if let Some(request) = self.in_flight.remove(ticket) {
                self.stats.acknowledged += 1;
                self.acknowledge(request);
            }
        }
        for ticket in &answered.refused {
            if let Some(request) = self.in_flight.remove(ticket) {
                self.stats.refused += 1;
                self.refuse(request);
            }
        }
        if !answered.acknowledged.is_empty() {
            trace += &format!(" | acknowledged {:?}", answered.acknowledged);
        }
        if !answered.refused.is_empty() {
            trace += &format!(" | refused {:?}", answered.refused);
        }
        trace
    }

    fn acknowledge(&mut self, request: InFlight) {
        match request {
            InFlight::Heartbeat {
                client,
                incarnation,
                leave,
                response,
            } => {
                let c = &mut self.clients[client];
                c.waiting = false;
                match *response {
                    Ok(_) if leave => {}
                    Ok(result) => {
                        c.member.adopt(&result.response);
                        let epoch = result.response.member_epoch;
                        if epoch > 0 {
                            self.model.member_epoch(c.group, incarnation, epoch);
                        }
                    }
                    // Fenced, unknown, or refused its instance id: it joins again.
                    Err(_) => c.forget(),
                }
            }
            InFlight::Commit {
                client,
                group,
                offsets,
                response,
            } => {
                self.idle(client);
                let Ok(codes) = response else { return };
                for ((topic, partition, offset), code) in offsets.iter().zip(codes) {
                    if code == ErrorCode::NONE {
                        self.stats.commits += 1;
                        self.model.committed(&group, topic, *partition, *offset);
                    }
                }
            }
            InFlight::DeleteGroups { groups, response } => {
                for (group, deleted) in groups.iter().zip(response) {
                    if deleted.is_ok() {
                        self.stats.groups_deleted += 1;
                        self.model.group_deleted(group);
                    }
                }
            }
            InFlight::DeleteOffsets {
                partitions,
                response,
            } => {
                let Ok(codes) = response else { return };
                for ((topic, partition), code) in partitions.iter().zip(codes) {
                    if code.first() == Some(&ErrorCode::NONE) {
                        self.model.offset_deleted(SIMPLE_GROUP, topic, *partition);
                    }
                }
            }
        }
    }

    /// A refused request changes nothing the client knows: it will try again.
    fn refuse(&mut self, request: InFlight) {
        match request {
            InFlight::Heartbeat { client, .. } => self.idle(Some(client)),
            InFlight::Commit { client, .. } => self.idle(client),
            InFlight::DeleteGroups { .. } | InFlight::DeleteOffsets { .. } => {}
        }
    }

    fn idle(&mut self, client: Option<usize>) {
        if let Some(client) = client {
            self.clients[client].waiting = false;
        }
    }

    /// Every invariant, after a step.
    fn check(&mut self, rolled_back: bool) -> Result<(), Violation> {
        let shard = self.node.shard();
        let state = shard.state();
        checks::replays_to_live(shard.store().log(), shard, "the shard's log")?;
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
        self.stats.observe(shard);
        if self.node.is_quiescent() {
            self.model.check_offsets(state, "the shard")?;
            checks::replays_to_live(&self.node.durable_log(), shard, "the file")?;
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

fn offset_to_commit(&(topic, partition, offset): &(&'static str, i32, i64)) -> OffsetToCommit {
    OffsetToCommit {
        topic: topic.into(),
        topic_id: uuid::Uuid::nil(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: None,
    }
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
