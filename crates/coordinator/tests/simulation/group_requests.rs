//! The classic and consumer group clients' requests, each a job of the node (a JoinGroup or
//! SyncGroup may be parked), and what their answers tell the clients and the models.
use std::collections::BTreeMap;

use kcoord_coordinator::classic::{ClassicAnswer, JoinContext, LeavingMember};
use kcoord_coordinator::{ConsumerHeartbeatContext, CoordinatorError};
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use kcoord_wire::messages::{HeartbeatRequest, JoinGroupResponse, SyncGroupResponse};
use kcoord_wire::ErrorCode;
use rand::Rng;

use super::classic_clients::{decode_assignment, Phase, CLASSIC_GROUP, CLASSIC_TOPIC};
use super::consumers::CONSUMER_GROUP;
use super::model::{Kind, Violation};
use super::node::Ticket;
use super::requests::{Committer, Owner};
use super::world::World;

/// A group client's request waiting for its answer (commits wait as every commit does, in
/// `requests.rs`).
pub(super) enum GroupRequest {
    /// A JoinGroup; its answer, unless it was parked.
    Join {
        client: usize,
        answer: Option<JoinGroupResponse>,
        incarnation: u64,
    },
    /// A SyncGroup of `generation`; its answer, unless it was parked.
    Sync {
        client: usize,
        generation: i32,
        answer: Option<SyncGroupResponse>,
        incarnation: u64,
    },
    Heartbeat {
        client: usize,
        code: ErrorCode,
    },
    /// A dynamic member's LeaveGroup: nobody waits for it.
    Leave,
    Consumer {
        client: usize,
        member_id: String,
        leave: bool,
        response: Box<Result<ConsumerGroupHeartbeatResponse, CoordinatorError>>,
        incarnation: u64,
    },
}

/// Answers no client of the simulation provokes: a bug of the coordinator or of the clients.
/// (GROUP_ID_NOT_FOUND is not one: a consumer whose session expired while the expiry pass
/// deleted its emptied group is told so, as by Kafka, and joins again.)
const UNEXPECTED: [ErrorCode; 5] = [
    ErrorCode::INVALID_REQUEST,
    ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
    ErrorCode::UNKNOWN_SERVER_ERROR,
    ErrorCode::INVALID_SESSION_TIMEOUT,
    ErrorCode::GROUP_MAX_SIZE_REACHED,
];

fn unexpected(who: &str, code: ErrorCode) -> Result<(), Violation> {
    if UNEXPECTED.contains(&code) {
        return Err(Violation::new(
            Kind::BadAnswer,
            format!("{who} was answered {code:?}"),
        ));
    }
    Ok(())
}

fn code_of(error_code: i16) -> ErrorCode {
    ErrorCode::from_code(error_code).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
}

fn runtime(e: String) -> Violation {
    Violation::new(Kind::RuntimeRefused, e)
}

impl World {
    fn group_wait(&mut self, ticket: Ticket, owner: Owner, request: GroupRequest) {
        self.set_waiting(owner, true);
        self.groups.waiting.insert(ticket, request);
    }

    pub(super) fn classic_join(&mut self, client: usize) -> Result<String, Violation> {
        let c = &mut self.groups.classic[client];
        c.phase = Phase::Joining;
        let request = c.join_request();
        let ctx = JoinContext {
            client_id: "classic",
            client_host: "/127.0.0.1",
            api_version: c.version,
        };
        let what = format!(" {} join {:?} v{}", c.name, c.member_id, c.version);
        let (answer, ticket) = self
            .node
            .call_parked(|s, now| s.classic_join(ctx, &request, now))
            .map_err(runtime)?;
        let told = answer.as_ref().map_or("parked".to_owned(), |a| {
            format!("{:?} gen {}", code_of(a.error_code), a.generation_id)
        });
        let incarnation = self.groups.classic_model.incarnation;
        let waiting = GroupRequest::Join {
            client,
            answer,
            incarnation,
        };
        self.group_wait(ticket, Owner::Classic(client), waiting);
        Ok(format!("{what} -> {told}"))
    }

    pub(super) fn classic_sync(&mut self, client: usize) -> Result<String, Violation> {
        let partitions = self.partition_count(0);
        let c = &mut self.groups.classic[client];
        let request = c.sync_request(partitions);
        let generation = request.generation_id;
        // The coordinator stores the assignment of the generation's leader only.
        let group = self.node.shard().classic_group(CLASSIC_GROUP);
        let leads =
            group.is_some_and(|g| g.generation_id == generation && g.is_leader(&request.member_id));
        if leads && !request.assignments.is_empty() {
            let identities: BTreeMap<&str, String> = match &c.phase {
                Phase::Syncing { members, .. } => members
                    .iter()
                    .map(|(m, i)| (m.as_str(), i.clone().unwrap_or_else(|| m.clone())))
                    .collect(),
                _ => BTreeMap::new(),
            };
            let assignment = request
                .assignments
                .iter()
                .map(|a| {
                    let who = identities.get(a.member_id.as_str()).cloned();
                    (
                        who.unwrap_or_else(|| a.member_id.clone()),
                        decode_assignment(&a.assignment),
                    )
                })
                .collect();
            self.groups
                .classic_model
                .leader_sent(generation, assignment);
        }
        let what = format!(
            " {} sync gen {generation} {}",
            c.name,
            request.assignments.len()
        );
        let (answer, ticket) = self
            .node
            .call_parked(|s, now| s.classic_sync(&request, now))
            .map_err(runtime)?;
        let told = answer.as_ref().map_or("parked".to_owned(), |a| {
            format!("{:?}", code_of(a.error_code))
        });
        let waiting = GroupRequest::Sync {
            client,
            generation,
            answer,
            incarnation: self.groups.classic_model.incarnation,
        };
        self.group_wait(ticket, Owner::Classic(client), waiting);
        Ok(format!("{what} -> {told}"))
    }

    pub(super) fn classic_heartbeat(&mut self, client: usize) -> Result<String, Violation> {
        let c = &self.groups.classic[client];
        let request = HeartbeatRequest {
            group_id: CLASSIC_GROUP.into(),
            generation_id: c.generation().unwrap_or(-1),
            member_id: c.member_id.clone(),
            group_instance_id: c.instance.clone(),
            ..Default::default()
        };
        let name = c.name.clone();
        let (code, ticket) = self.call(|s, now| s.classic_heartbeat(&request, now))?;
        self.group_wait(
            ticket,
            Owner::Classic(client),
            GroupRequest::Heartbeat { client, code },
        );
        Ok(format!(
            " {name} heartbeat gen {} -> {code:?}",
            request.generation_id
        ))
    }

    pub(super) fn classic_commit(&mut self, client: usize) -> Result<String, Violation> {
        let c = &self.groups.classic[client];
        let mut partitions: Vec<(&'static str, i32)> =
            c.owned().iter().map(|p| (CLASSIC_TOPIC, *p)).collect();
        if partitions.is_empty() {
            partitions.push((CLASSIC_TOPIC, 0));
        }
        partitions.truncate(self.rng.random_range(1..=2));
        let (member_id, instance) = (c.member_id.clone(), c.instance.clone());
        let who = Committer {
            member_id: &member_id,
            instance_id: instance.as_deref(),
            epoch: c.generation().unwrap_or(-1),
        };
        self.commit(Owner::Classic(client), CLASSIC_GROUP, who, partitions)
    }

    /// A dynamic member sends LeaveGroup and restarts; the static member restarts alone.
    pub(super) fn classic_leave(&mut self, client: usize) -> Result<String, Violation> {
        let version = if self.rng.random_ratio(1, 4) { 3 } else { 9 };
        let c = &mut self.groups.classic[client];
        let leaving = [LeavingMember {
            member_id: c.member_id.clone(),
            group_instance_id: None,
        }];
        let name = c.name.clone();
        c.restart(version);
        if c.instance.is_some() {
            self.stats.classic_restarts += 1;
            return Ok(format!(" {name} restarts"));
        }
        let (answer, ticket) = self.call(|s, now| s.classic_leave(CLASSIC_GROUP, &leaving, now))?;
        self.groups.waiting.insert(ticket, GroupRequest::Leave);
        Ok(format!(
            " {name} leaves {:?} -> {:?}",
            leaving[0].member_id,
            answer.map(|m| m.len())
        ))
    }

    pub(super) fn consumer_heartbeat(
        &mut self,
        client: usize,
        report: bool,
    ) -> Result<String, Violation> {
        let request = self.groups.consumers[client].heartbeat(report);
        self.send_consumer(client, request, false)
    }

    pub(super) fn consumer_leave(
        &mut self,
        client: usize,
        restart: bool,
    ) -> Result<String, Violation> {
        let request = self.groups.consumers[client].leave(restart);
        self.send_consumer(client, request, true)
    }

    fn send_consumer(
        &mut self,
        client: usize,
        request: kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
        leave: bool,
    ) -> Result<String, Violation> {
        let allow = |_: &str| true;
        let ctx = ConsumerHeartbeatContext {
            client_id: "consumer",
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
        let name = &self.groups.consumers[client].name;
        let what = format!(
            " {name} {}@{}{what}",
            request.member_id, request.member_epoch
        );
        let waiting = GroupRequest::Consumer {
            client,
            member_id: request.member_id.clone(),
            leave,
            response: Box::new(response),
            incarnation: self.groups.consumer_model.incarnation,
        };
        self.group_wait(ticket, Owner::Consumer(client), waiting);
        Ok(what)
    }

    pub(super) fn consumer_commit(&mut self, client: usize) -> Result<String, Violation> {
        let c = &self.groups.consumers[client];
        let mut partitions = c.owned_partitions();
        if partitions.is_empty() {
            partitions.push((CLASSIC_TOPIC, 0));
        }
        partitions.truncate(self.rng.random_range(1..=2));
        let (member_id, epoch) = (c.consumer.id.clone(), c.epoch());
        let who = Committer {
            member_id: &member_id,
            instance_id: None,
            epoch,
        };
        self.commit(Owner::Consumer(client), CONSUMER_GROUP, who, partitions)
    }

    /// A group client's commit was refused by the coordinator: Kafka's consumer rejoins when
    /// the error says its membership is stale.
    pub(super) fn commit_refused(&mut self, owner: Owner, code: ErrorCode) {
        let rejoins = [
            ErrorCode::REBALANCE_IN_PROGRESS,
            ErrorCode::ILLEGAL_GENERATION,
            ErrorCode::UNKNOWN_MEMBER_ID,
            ErrorCode::FENCED_INSTANCE_ID,
            ErrorCode::FENCED_MEMBER_EPOCH,
        ];
        if !rejoins.contains(&code) {
            return;
        }
        match owner {
            Owner::Classic(client) => self.groups.classic[client].rejoin_after(code),
            Owner::Consumer(client) => {
                let c = &mut self.groups.consumers[client];
                self.groups.consumer_model.gone(&c.consumer.id);
                c.forget();
            }
            Owner::Nobody | Owner::Streams(_) => {}
        }
    }

    /// Whether `ticket` is a group client's request; if so, its answer reaches the client
    /// (acknowledged) or it is refused (NOT_COORDINATOR: the client tries again).
    pub(super) fn group_answered(
        &mut self,
        ticket: Ticket,
        acknowledged: bool,
    ) -> Option<Result<(), Violation>> {
        let request = self.groups.waiting.remove(&ticket)?;
        let parked = self.node.take_classic_answer(ticket);
        if !acknowledged {
            self.group_refused(request);
            return Some(Ok(()));
        }
        Some(self.group_acknowledged(request, parked))
    }

    fn group_refused(&mut self, request: GroupRequest) {
        match request {
            GroupRequest::Join { client, answer, .. } => {
                self.stats.parked_refused += u64::from(answer.is_none());
                self.set_waiting(Owner::Classic(client), false);
            }
            GroupRequest::Sync { client, answer, .. } => {
                self.stats.parked_refused += u64::from(answer.is_none());
                self.set_waiting(Owner::Classic(client), false);
                self.groups.classic[client].rejoin_after(ErrorCode::NOT_COORDINATOR);
            }
            GroupRequest::Heartbeat { client, .. } => {
                self.set_waiting(Owner::Classic(client), false)
            }
            GroupRequest::Consumer { client, .. } => {
                self.set_waiting(Owner::Consumer(client), false)
            }
            GroupRequest::Leave => {}
        }
    }

    fn group_acknowledged(
        &mut self,
        request: GroupRequest,
        parked: Option<ClassicAnswer>,
    ) -> Result<(), Violation> {
        match request {
            GroupRequest::Join {
                client,
                answer,
                incarnation,
            } => {
                self.set_waiting(Owner::Classic(client), false);
                // A static member that rejoins with no member id and is answered at once took
                // its own place (no rebalance).
                let c = &self.groups.classic[client];
                if answer.is_some() && c.instance.is_some() && c.member_id.is_empty() {
                    self.stats.static_replacements +=
                        u64::from(answer.as_ref().is_some_and(|a| a.error_code == 0));
                }
                let answer = match (answer, parked) {
                    (Some(a), _) | (None, Some(ClassicAnswer::Join(a))) => a,
                    _ => {
                        return Err(Violation::new(
                            Kind::BadAnswer,
                            "a parked JoinGroup got no JoinGroup answer",
                        ))
                    }
                };
                self.classic_joined(client, &answer, incarnation)
            }
            GroupRequest::Sync {
                client,
                generation,
                answer,
                incarnation,
            } => {
                self.set_waiting(Owner::Classic(client), false);
                let answer = match (answer, parked) {
                    (Some(a), _) | (None, Some(ClassicAnswer::Sync(a))) => a,
                    _ => {
                        return Err(Violation::new(
                            Kind::BadAnswer,
                            "a parked SyncGroup got no SyncGroup answer",
                        ))
                    }
                };
                self.classic_synced(client, (incarnation, generation), &answer)
            }
            GroupRequest::Heartbeat { client, code } => {
                self.set_waiting(Owner::Classic(client), false);
                let c = &mut self.groups.classic[client];
                unexpected(&c.name, code)?;
                c.rejoin_after(code);
                Ok(())
            }
            GroupRequest::Leave => {
                self.stats.classic_leaves += 1;
                Ok(())
            }
            GroupRequest::Consumer {
                client,
                member_id,
                leave,
                response,
                incarnation,
            } => {
                self.set_waiting(Owner::Consumer(client), false);
                self.consumer_answered(client, (&member_id, incarnation), leave, *response)
            }
        }
    }

    /// A JoinGroup's answer, decided in the group's `incarnation` (an answer of a group since
    /// deleted binds nothing of the group created again).
    fn classic_joined(
        &mut self,
        client: usize,
        answer: &JoinGroupResponse,
        incarnation: u64,
    ) -> Result<(), Violation> {
        let code = code_of(answer.error_code);
        let c = &mut self.groups.classic[client];
        unexpected(&c.name, code)?;
        if code == ErrorCode::NONE && incarnation == self.groups.classic_model.incarnation {
            self.groups
                .classic_model
                .answered(client, answer.generation_id)?;
        }
        self.groups.classic[client].joined(answer);
        Ok(())
    }

    fn classic_synced(
        &mut self,
        client: usize,
        (incarnation, generation): (u64, i32),
        answer: &SyncGroupResponse,
    ) -> Result<(), Violation> {
        let code = code_of(answer.error_code);
        let c = &mut self.groups.classic[client];
        unexpected(&c.name, code)?;
        if code == ErrorCode::NONE && incarnation == self.groups.classic_model.incarnation {
            self.stats.classic_syncs += 1;
            self.stats.max_generation = self.stats.max_generation.max(generation);
            let partitions = decode_assignment(&answer.assignment);
            let member = c.identity();
            self.groups
                .classic_model
                .synced(client, &member, generation, &partitions)?;
        }
        self.groups.classic[client].synced(generation, code, &answer.assignment);
        Ok(())
    }

    fn consumer_answered(
        &mut self,
        client: usize,
        (member_id, incarnation): (&str, u64),
        leave: bool,
        response: Result<ConsumerGroupHeartbeatResponse, CoordinatorError>,
    ) -> Result<(), Violation> {
        let c = &mut self.groups.consumers[client];
        // What a group since deleted answered binds nothing of the group created again.
        let current = incarnation == self.groups.consumer_model.incarnation;
        match response {
            Ok(_) if leave => {
                self.stats.consumer_leaves += 1;
                self.groups.consumer_model.gone(member_id);
            }
            Ok(r) => {
                if r.member_epoch < 1 {
                    let detail = format!("{} was answered member epoch {}", c.name, r.member_epoch);
                    return Err(Violation::new(Kind::BadAnswer, detail));
                }
                self.stats.consumer_heartbeats += 1;
                c.adopt(&r, incarnation);
                if current {
                    self.groups
                        .consumer_model
                        .acknowledged(member_id, r.member_epoch);
                }
            }
            Err(e) if leave => unexpected(&c.name, e.code)?,
            Err(e) => {
                unexpected(&c.name, e.code)?;
                self.stats.consumers_fenced += 1;
                self.groups.consumer_model.gone(member_id);
                c.forget();
            }
        }
        Ok(())
    }
}
