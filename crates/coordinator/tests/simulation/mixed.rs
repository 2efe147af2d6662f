//! The mixed group of a run with it (`seeded_mixed_runs_keep_every_invariant`): classic
//! consumers (JoinGroup, SyncGroup, Heartbeat, LeaveGroup with the consumer embedded protocol,
//! the leader's range assignment when the group is classic) and KIP-848 consumers in one group,
//! so that Kafka 4.4's online migration upgrades it when a consumer joins a classic group with
//! members, and downgrades it when the last consumer leaves. Clients stop and start again, so
//! that a run has stretches with only one kind. The checks and the convergence are in
//! `mixed_checks.rs`.
use std::collections::{BTreeMap, BTreeSet};

use kcoord_coordinator::classic::{ClassicAnswer, JoinContext, LeavingMember};
use kcoord_coordinator::{ConsumerHeartbeatContext, CoordinatorError};
use kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use kcoord_wire::messages::{HeartbeatRequest, JoinGroupResponse, SyncGroupResponse};
use kcoord_wire::ErrorCode;
use rand::Rng;

use super::classic_clients::{ClassicClient, Phase, CLASSIC_TOPIC};
use super::consumers::ConsumerClient;
use super::mixed_checks::{self, GroupType};
use super::model::{Kind, Violation};
use super::node::Ticket;
use super::steps::Step;
use super::world::World;

pub const MIXED_GROUP: &str = "mixed";
const CLASSIC_MEMBERS: usize = 2;
const CONSUMERS: usize = 2;

/// The mixed group's clients (inert unless the run drives it).
#[derive(Default)]
pub struct Mixed {
    pub enabled: bool,
    pub classic: Vec<ClassicClient>,
    pub consumers: Vec<ConsumerClient>,
    /// Whether each client runs (classic ones first): a stopped client sends nothing.
    pub running: Vec<bool>,
    /// Each request in flight, and its client (none for a LeaveGroup: nobody waits for it).
    waiting: BTreeMap<Ticket, (Option<usize>, MixedRequest, u64)>,
    /// The group's type after the last step, to count the migrations.
    pub(super) last_type: GroupType,
    /// Bumped whenever the group starts its epochs over (deleted, or replaced empty by one of
    /// the other type).
    pub(super) incarnation: u64,
    /// (incarnation, generation) -> member (a static one by its instance id) -> what a classic
    /// leader assigned it.
    pub(super) leader_sent: BTreeMap<(u64, i32), BTreeMap<String, BTreeSet<i32>>>,
    /// The incarnation each client's epoch or generation is of (classic ones first).
    pub(super) answered_in: Vec<u64>,
}

impl Mixed {
    pub fn new(enabled: bool) -> Mixed {
        if !enabled {
            return Mixed::default();
        }
        let mut classic = ClassicClient::of(MIXED_GROUP, CLASSIC_MEMBERS, false);
        for (i, c) in classic.iter_mut().enumerate() {
            // Apart from the consumers' names (`mixed/m0`, ...), which are theirs.
            c.name = format!("{MIXED_GROUP}/classic{i}");
            c.session_timeout_ms = 4_000;
        }
        let mut consumers = ConsumerClient::of(MIXED_GROUP, CONSUMERS, &[CLASSIC_TOPIC], false);
        // One instance switches protocols as it restarts (Kafka's rolling migration of a static
        // member): the last classic client and the last consumer share its instance id, and one
        // of them runs at a time.
        let instance = Some(format!("{MIXED_GROUP}-static"));
        classic[CLASSIC_MEMBERS - 1].instance = instance.clone();
        consumers[CONSUMERS - 1].consumer.instance_id = instance;
        let mut running = vec![true; CLASSIC_MEMBERS + CONSUMERS];
        running[CLASSIC_MEMBERS + CONSUMERS - 1] = false;
        Mixed {
            enabled,
            classic,
            consumers,
            running,
            answered_in: vec![0; CLASSIC_MEMBERS + CONSUMERS],
            ..Default::default()
        }
    }

    /// The other protocol's client of the switching instance, if `client` is one of the two.
    pub fn partner(&self, client: usize) -> Option<usize> {
        let (classic, all) = (self.classic.len(), self.running.len());
        match client {
            c if c + 1 == classic => Some(all - 1),
            c if c + 1 == all => Some(classic - 1),
            _ => None,
        }
    }

    fn waiting(&self, client: usize) -> bool {
        match client.checked_sub(self.classic.len()) {
            None => self.classic[client].waiting,
            Some(c) => self.consumers[c].waiting,
        }
    }

    fn set_waiting(&mut self, client: usize, waiting: bool) {
        match client.checked_sub(self.classic.len()) {
            None => self.classic[client].waiting = waiting,
            Some(c) => self.consumers[c].waiting = waiting,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub enum MixedAction {
    Join,
    Sync,
    Heartbeat {
        report: bool,
    },
    /// A classic member's LeaveGroup or a consumer's leave heartbeat, then a restart under a
    /// new member id, or a stop.
    Leave {
        stop: bool,
    },
}

/// A step of one mixed-group client (`client`: the classic ones first).
#[derive(Debug, Clone, Copy)]
pub struct MixedStep {
    pub client: usize,
    pub action: MixedAction,
}

enum MixedRequest {
    Join(Option<JoinGroupResponse>),
    /// A SyncGroup of `generation`, sent while the group was classic or not.
    Sync {
        generation: i32,
        answer: Option<SyncGroupResponse>,
        classic: bool,
    },
    Heartbeat(ErrorCode),
    Leave,
    Consumer {
        leave: bool,
        response: Box<Result<ConsumerGroupHeartbeatResponse, CoordinatorError>>,
    },
}

fn code_of(error_code: i16) -> ErrorCode {
    ErrorCode::from_code(error_code).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
}

fn runtime(e: String) -> Violation {
    Violation::new(Kind::RuntimeRefused, e)
}

impl World {
    /// Half the steps of a run with the mixed group are its clients' (none of a run without:
    /// it draws exactly as before).
    pub(super) fn draw_mixed(&mut self, queued_batches: usize) -> Option<Step> {
        if !self.mixed.enabled || self.rng.random_ratio(1, 2) {
            return None;
        }
        if queued_batches > 0 && self.rng.random_ratio(1, 5) {
            return Some(Step::Sync {
                batches: queued_batches,
            });
        }
        let count = self.mixed.running.len();
        let idle: Vec<usize> = (0..count).filter(|&i| !self.mixed.waiting(i)).collect();
        if idle.is_empty() {
            return None;
        }
        let client = idle[self.rng.random_range(0..idle.len())];
        let partner_runs = self
            .mixed
            .partner(client)
            .is_some_and(|p| self.mixed.running[p]);
        if !self.mixed.running[client] && partner_runs {
            return None;
        }
        if !self.mixed.running[client] {
            // Stopped clients start again slowly, consumers more slowly, so that the group
            // spends a while with only one kind of member (classic ones rebalancing on their
            // own), and migrates when the other kind comes back.
            let odds = if client < self.mixed.classic.len() {
                4
            } else {
                12
            };
            if !self.rng.random_ratio(1, odds) {
                return None;
            }
            self.mixed.running[client] = true;
        }
        let action = self.mixed_action(client);
        Some(Step::Mixed(MixedStep { client, action }))
    }

    fn mixed_action(&mut self, client: usize) -> MixedAction {
        match client.checked_sub(self.mixed.classic.len()) {
            None => match self.mixed.classic[client].phase {
                Phase::Joining => MixedAction::Join,
                Phase::Syncing { .. } => MixedAction::Sync,
                Phase::Stable { .. } if self.mixed_metadata_changed(client) => MixedAction::Join,
                Phase::Stable { .. } => match self.rng.random_range(0..12) {
                    0 => MixedAction::Leave {
                        stop: self.rng.random_bool(0.5),
                    },
                    _ => MixedAction::Heartbeat { report: true },
                },
            },
            Some(c) if self.mixed.consumers[c].epoch() <= 0 => {
                MixedAction::Heartbeat { report: true }
            }
            Some(_) => match self.rng.random_range(0..12) {
                0 => MixedAction::Leave {
                    stop: self.rng.random_ratio(3, 4),
                },
                1..=5 => MixedAction::Heartbeat { report: false },
                _ => MixedAction::Heartbeat { report: true },
            },
        }
    }

    /// The classic leader assigned fewer partitions than the topic now has: it rejoins.
    pub(super) fn mixed_metadata_changed(&self, client: usize) -> bool {
        let count = self.partition_count(0);
        self.mixed.classic[client]
            .assigned_count
            .is_some_and(|assigned| assigned != count)
    }

    pub(super) fn run_mixed(&mut self, step: &MixedStep) -> Result<String, Violation> {
        let MixedStep { client, action } = *step;
        let consumer = client.checked_sub(self.mixed.classic.len());
        match (consumer, action) {
            (None, MixedAction::Join) => self.mixed_join(client),
            (None, MixedAction::Sync) => self.mixed_sync(client),
            (None, MixedAction::Heartbeat { .. }) => self.mixed_heartbeat(client),
            (None, MixedAction::Leave { stop }) => self.mixed_classic_leave(client, stop),
            (Some(c), MixedAction::Leave { stop }) => {
                self.stop_or_switch(client, stop);
                let request = self.mixed.consumers[c].leave(true);
                self.mixed_consumer(client, request, true)
            }
            (Some(c), MixedAction::Heartbeat { report }) => {
                let request = self.mixed.consumers[c].heartbeat(report);
                self.mixed_consumer(client, request, false)
            }
            (Some(_), _) => unreachable!("a consumer joins by heartbeat"),
        }
    }

    fn mixed_wait(
        &mut self,
        client: usize,
        ticket: Ticket,
        request: MixedRequest,
    ) -> Result<(), Violation> {
        self.track_mixed_type(false)?;
        self.mixed.set_waiting(client, true);
        let incarnation = self.mixed.incarnation;
        self.mixed
            .waiting
            .insert(ticket, (Some(client), request, incarnation));
        Ok(())
    }

    fn mixed_join(&mut self, client: usize) -> Result<String, Violation> {
        let c = &mut self.mixed.classic[client];
        c.phase = Phase::Joining;
        let request = c.join_request();
        let ctx = JoinContext {
            client_id: "mixed",
            client_host: "/127.0.0.1",
            api_version: c.version,
        };
        let what = format!(" {} join {:?}", c.name, c.member_id);
        let (answer, ticket) = self
            .node
            .call_parked(|s, now| s.classic_join(ctx, &request, now))
            .map_err(runtime)?;
        if let Some(a) = &answer {
            mixed_checks::join_answer(self.node.shard(), a)?;
        }
        let told = answer.as_ref().map_or("parked".to_owned(), |a| {
            format!("{:?} gen {}", code_of(a.error_code), a.generation_id)
        });
        self.mixed_wait(client, ticket, MixedRequest::Join(answer))?;
        Ok(format!("{what} -> {told}"))
    }

    fn mixed_sync(&mut self, client: usize) -> Result<String, Violation> {
        let partitions = self.partition_count(0);
        let c = &mut self.mixed.classic[client];
        let request = c.sync_request(partitions);
        let generation = request.generation_id;
        let what = format!(
            " {} sync gen {generation} {}",
            c.name,
            request.assignments.len()
        );
        let shard = self.node.shard();
        let before = mixed_checks::classic_member_view(shard, &request.member_id);
        let classic = shard.classic_group(MIXED_GROUP).is_some();
        let (answer, ticket) = self
            .node
            .call_parked(|s, now| s.classic_sync(&request, now))
            .map_err(runtime)?;
        // A leader's assignment refused at once (a generation a rollback took back) binds
        // nothing.
        let taken = answer.as_ref().is_none_or(|a| a.error_code == 0);
        if classic && taken && !request.assignments.is_empty() {
            let key = (self.mixed.incarnation, generation);
            let sent = mixed_checks::sent(&self.mixed.classic[client].phase, &request);
            self.mixed.leader_sent.insert(key, sent);
        }
        if let Some(a) = &answer {
            mixed_checks::sync_answer(before.as_ref(), &request, a)?;
        }
        let told = answer.as_ref().map_or("parked".to_owned(), |a| {
            format!("{:?}", code_of(a.error_code))
        });
        let request = MixedRequest::Sync {
            generation,
            answer,
            classic,
        };
        self.mixed_wait(client, ticket, request)?;
        Ok(format!("{what} -> {told}"))
    }

    fn mixed_heartbeat(&mut self, client: usize) -> Result<String, Violation> {
        let c = &self.mixed.classic[client];
        let request = HeartbeatRequest {
            group_id: MIXED_GROUP.into(),
            generation_id: c.generation().unwrap_or(-1),
            member_id: c.member_id.clone(),
            group_instance_id: c.instance.clone(),
            ..Default::default()
        };
        let name = c.name.clone();
        let before = mixed_checks::classic_member_view(self.node.shard(), &request.member_id);
        let (code, ticket) = self.call(|s, now| s.classic_heartbeat(&request, now))?;
        let told = mixed_checks::heartbeat_answer(before.as_ref(), request.generation_id, code)?;
        self.stats.mixed_rejoins_told += u64::from(told);
        self.mixed_wait(client, ticket, MixedRequest::Heartbeat(code))?;
        Ok(format!(
            " {name} heartbeat gen {} -> {code:?}",
            request.generation_id
        ))
    }

    /// A client that stops; the switching instance starts again in the other protocol.
    fn stop_or_switch(&mut self, client: usize, stop: bool) {
        self.mixed.running[client] = !stop;
        if let Some(partner) = self.mixed.partner(client).filter(|_| stop) {
            self.mixed.running[partner] = true;
            self.stats.mixed_switches += 1;
        }
    }

    /// A dynamic member sends LeaveGroup and restarts (or stops); the static one sends none,
    /// as Kafka's consumer does not.
    fn mixed_classic_leave(&mut self, client: usize, stop: bool) -> Result<String, Violation> {
        self.stop_or_switch(client, stop);
        let c = &mut self.mixed.classic[client];
        let leaving = [LeavingMember {
            member_id: c.member_id.clone(),
            group_instance_id: None,
        }];
        let name = c.name.clone();
        c.restart(9);
        if c.instance.is_some() {
            return Ok(format!(" {name} restarts (stop: {stop})"));
        }
        let (answer, ticket) = self.call(|s, now| s.classic_leave(MIXED_GROUP, &leaving, now))?;
        self.track_mixed_type(false)?;
        let incarnation = self.mixed.incarnation;
        self.mixed
            .waiting
            .insert(ticket, (None, MixedRequest::Leave, incarnation));
        Ok(format!(
            " {name} leaves {:?} (stop: {stop}) -> {:?}",
            leaving[0].member_id,
            answer.map(|m| m.len())
        ))
    }

    fn mixed_consumer(
        &mut self,
        client: usize,
        request: ConsumerGroupHeartbeatRequest,
        leave: bool,
    ) -> Result<String, Violation> {
        let allow = |_: &str| true;
        let ctx = ConsumerHeartbeatContext {
            client_id: "mixed",
            client_host: "/127.0.0.1",
            api_version: 1,
            may_describe: &allow,
        };
        let (response, ticket) =
            self.call(|s, now| s.consumer_group_heartbeat(&ctx, &request, now))?;
        let what = match &response {
            Ok(r) => format!(" -> epoch {}", r.member_epoch),
            Err(e) => format!(" -> {:?}", e.code),
        };
        let what = format!(" {}@{}{what}", request.member_id, request.member_epoch);
        let response = Box::new(response);
        self.mixed_wait(client, ticket, MixedRequest::Consumer { leave, response })?;
        Ok(what)
    }

    /// Whether `ticket` is a mixed-group client's request; if so, its answer reaches the
    /// client (acknowledged) or it is refused (NOT_COORDINATOR: the client tries again).
    pub(super) fn mixed_answered(
        &mut self,
        ticket: Ticket,
        acknowledged: bool,
    ) -> Option<Result<(), Violation>> {
        let (client, request, incarnation) = self.mixed.waiting.remove(&ticket)?;
        let parked = self.node.take_classic_answer(ticket);
        if let Some(client) = client {
            self.mixed.set_waiting(client, false);
        }
        Some(match (client, acknowledged) {
            (None, _) => Ok(()),
            (Some(client), false) => {
                if matches!(request, MixedRequest::Sync { .. }) {
                    self.mixed.classic[client].rejoin_after(ErrorCode::NOT_COORDINATOR);
                }
                Ok(())
            }
            (Some(client), true) => self.mixed_acknowledged((client, incarnation), request, parked),
        })
    }

    /// An acknowledged answer, of the group's `incarnation` when it was sent.
    fn mixed_acknowledged(
        &mut self,
        (client, incarnation): (usize, u64),
        request: MixedRequest,
        parked: Option<ClassicAnswer>,
    ) -> Result<(), Violation> {
        let bad = |what: &str| Err(Violation::new(Kind::BadAnswer, what.to_owned()));
        match request {
            MixedRequest::Join(answer) => {
                let answer = match (answer, parked) {
                    (Some(a), _) | (None, Some(ClassicAnswer::Join(a))) => a,
                    _ => return bad("a parked JoinGroup got no JoinGroup answer"),
                };
                let c = &mut self.mixed.classic[client];
                mixed_checks::expected(&c.name, code_of(answer.error_code))?;
                c.joined(&answer);
            }
            MixedRequest::Sync {
                generation,
                answer,
                classic,
            } => {
                let answer = match (answer, parked) {
                    (Some(a), _) | (None, Some(ClassicAnswer::Sync(a))) => a,
                    _ => return bad("a parked SyncGroup got no SyncGroup answer"),
                };
                let code = code_of(answer.error_code);
                let c = &mut self.mixed.classic[client];
                mixed_checks::expected(&c.name, code)?;
                if code == ErrorCode::NONE {
                    mixed_checks::real_assignment(&c.name, &answer.assignment)?;
                    self.stats.mixed_syncs += 1;
                    self.stats.mixed_coordinator_syncs += u64::from(!classic);
                    if classic {
                        let sent = self.mixed.leader_sent.get(&(incarnation, generation));
                        mixed_checks::leader_assigned(c, generation, sent, &answer.assignment)?;
                    }
                    self.mixed.answered_in[client] = incarnation;
                }
                c.synced(generation, code, &answer.assignment);
            }
            MixedRequest::Heartbeat(code) => {
                let c = &mut self.mixed.classic[client];
                mixed_checks::expected(&c.name, code)?;
                c.rejoin_after(code);
            }
            MixedRequest::Leave => {}
            MixedRequest::Consumer { leave, response } => {
                let c = &mut self.mixed.consumers[client - self.mixed.classic.len()];
                match *response {
                    Ok(_) if leave => {}
                    Ok(r) if r.member_epoch < 1 => {
                        let detail =
                            format!("{} was answered member epoch {}", c.name, r.member_epoch);
                        return Err(Violation::new(Kind::BadAnswer, detail));
                    }
                    Ok(r) => {
                        self.stats.mixed_heartbeats += 1;
                        c.adopt(&r, incarnation);
                        self.mixed.answered_in[client] = incarnation;
                    }
                    Err(e) => {
                        mixed_checks::expected(&c.name, e.code)?;
                        if !leave {
                            c.forget();
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
