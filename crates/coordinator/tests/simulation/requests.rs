//! The clients' requests: sent as jobs of the node, held until the disk answers them, then
//! handed to the client and, when acknowledged, to the model.
use std::collections::BTreeMap;

use kcoord_coordinator::commits::{CommitMember, OffsetToCommit};
use kcoord_coordinator::{CoordinatorError, CoordinatorShard, HeartbeatContext, HeartbeatResult};
use kcoord_wire::messages::streams_group_heartbeat_request::StreamsGroupHeartbeatRequest;
use kcoord_wire::ErrorCode;
use rand::Rng;

use super::clients::{self, SIMPLE_GROUP};
use super::model::{live_offsets, Kind, MaybeMade, OffsetKey, Violation};
use super::node::Ticket;
use super::world::World;

/// The client a request is of, which sends nothing else until it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// No client waits (a DeleteGroups, the offsets-only group's commits).
    Nobody,
    Streams(usize),
    Classic(usize),
    Consumer(usize),
}

/// Who commits, as OffsetCommit names it.
#[derive(Debug, Clone, Copy)]
pub struct Committer<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    /// The member epoch (streams, consumer groups) or generation (classic groups); -1 for none.
    pub epoch: i32,
}

/// A request waiting for its answer: what it was answered (decided when its job ran, the
/// client's only once acknowledged), and the committed offsets its job read.
pub struct Waiting {
    read: BTreeMap<OffsetKey, i64>,
    request: InFlight,
}

enum InFlight {
    Heartbeat {
        client: usize,
        /// The group's incarnation when the request was sent.
        incarnation: u64,
        leave: bool,
        response: Box<Result<HeartbeatResult, CoordinatorError>>,
    },
    Commit {
        owner: Owner,
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

const CONTEXT: HeartbeatContext<'static> = HeartbeatContext {
    client_id: "client",
    client_host: "/127.0.0.1",
    api_version: 1,
};

impl World {
    /// Runs a request's job; it waits for its answer as `request(response)`.
    fn send<R>(
        &mut self,
        handler: impl FnOnce(&CoordinatorShard, i64) -> kcoord_coordinator::Outcome<R>,
        request: impl FnOnce(R) -> InFlight,
    ) -> Result<Ticket, Violation> {
        let read = live_offsets(self.node.shard().state());
        let (response, ticket) = self
            .node
            .call(handler)
            .map_err(|e| Violation::new(Kind::RuntimeRefused, e))?;
        let request = request(response);
        self.waiting.insert(ticket, Waiting { read, request });
        Ok(ticket)
    }

    pub(super) fn send_heartbeat(
        &mut self,
        client: usize,
        request: StreamsGroupHeartbeatRequest,
        leave: bool,
    ) -> Result<String, Violation> {
        let incarnation = self.watch.incarnation(&request.group_id);
        let steady_before = self.node.shard().steady_hits();
        let mut epoch = None;
        let mut what = String::new();
        self.send(
            |shard, now| shard.streams_group_heartbeat(&CONTEXT, &request, now),
            |response| {
                what = match &response {
                    Ok(r) => format!(" -> epoch {}", r.response.member_epoch),
                    Err(e) => format!(" -> {:?} {:?}", e.code, e.message),
                };
                epoch = response.as_ref().ok().map(|r| r.response.member_epoch);
                InFlight::Heartbeat {
                    client,
                    incarnation,
                    leave,
                    response: Box::new(response),
                }
            },
        )?;
        let name = self.clients[client].name.clone();
        if let Some(epoch) = epoch.filter(|&e| !leave && e < 1) {
            let detail = format!("{name} was answered member epoch {epoch}");
            return Err(Violation::new(Kind::BadAnswer, detail));
        }
        self.stats.steady_heartbeats += self.node.shard().steady_hits() - steady_before;
        self.clients[client].waiting = true;
        Ok(format!(" {name}{what}"))
    }

    pub(super) fn member_commit(&mut self, client: usize) -> Result<String, Violation> {
        let c = &self.clients[client];
        let mut partitions = c.owned_partitions();
        if partitions.is_empty() {
            // A member that owns nothing commits all the same: the commit is checked against
            // its epoch, not its tasks.
            partitions.push((clients::TOPICS[0].0, self.rng.random_range(0..2)));
        }
        partitions.truncate(self.rng.random_range(1..=2));
        let (group, member_id, epoch) = (c.group, c.member.id.clone(), c.member.epoch);
        let who = Committer {
            member_id: &member_id,
            instance_id: None,
            epoch,
        };
        self.commit(Owner::Streams(client), group, who, partitions)
    }

    pub(super) fn commit(
        &mut self,
        owner: Owner,
        group: &str,
        who: Committer<'_>,
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
        let mut what = format!(" {group}/{}@{} {offsets:?}", who.member_id, who.epoch);
        let member = CommitMember {
            member_id: who.member_id,
            group_instance_id: who.instance_id,
            generation_or_epoch: who.epoch,
        };
        self.send(
            |shard, now| shard.commit_offsets_of(&member, group, 9, &to_commit, now),
            |response| {
                what += &format!(" -> {:?}", response.as_ref().map_err(|e| e.code));
                InFlight::Commit {
                    owner,
                    group: group.to_owned(),
                    offsets,
                    response,
                }
            },
        )?;
        self.set_waiting(owner, true);
        Ok(what)
    }

    pub(super) fn delete_groups(&mut self, groups: Vec<String>) -> Result<String, Violation> {
        let mut what = String::new();
        let ids = groups.clone();
        self.send(
            |shard, _| shard.delete_groups(&ids),
            |response| {
                let codes = response.iter().map(|r| r.as_ref().err().map(|e| e.code));
                what = format!(" -> {:?}", codes.collect::<Vec<_>>());
                InFlight::DeleteGroups { groups, response }
            },
        )?;
        Ok(what)
    }

    pub(super) fn delete_offsets(
        &mut self,
        partitions: Vec<(&'static str, i32)>,
    ) -> Result<String, Violation> {
        let topics: Vec<(String, Vec<i32>)> = partitions
            .iter()
            .map(|(topic, partition)| ((*topic).to_owned(), vec![*partition]))
            .collect();
        let mut what = String::new();
        self.send(
            |shard, _| shard.delete_offsets(SIMPLE_GROUP, &topics),
            |response| {
                what = format!(" -> {:?}", response.as_ref().map_err(|e| e.code));
                InFlight::DeleteOffsets {
                    partitions,
                    response,
                }
            },
        )?;
        Ok(what)
    }

    /// The request's answer reaches its client; what it changed joins the model. The answer
    /// was computed on the offsets its job read, and every change before it has been
    /// acknowledged by now (answers go out in offset order), so those must be exactly the
    /// acknowledged ones: an answer must not reveal a change that may still be lost, nor miss
    /// one that was acknowledged.
    pub(super) fn acknowledge(
        &mut self,
        ticket: Ticket,
        waiting: Waiting,
    ) -> Result<(), Violation> {
        self.model.check_read(&waiting.read).map_err(|v| {
            Violation::new(
                v.kind,
                format!("the answer to request {ticket}: {}", v.detail),
            )
        })?;
        match waiting.request {
            InFlight::Heartbeat {
                client,
                incarnation,
                leave,
                response,
            } => self.heartbeat_answered(client, incarnation, leave, *response),
            InFlight::Commit {
                owner,
                group,
                offsets,
                response,
            } => {
                self.set_waiting(owner, false);
                let codes = match response {
                    Ok(codes) => codes,
                    Err(e) => {
                        self.commit_refused(owner, e.code);
                        return Ok(());
                    }
                };
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
                let Ok(codes) = response else { return Ok(()) };
                for ((topic, partition), code) in partitions.iter().zip(codes) {
                    if code.first() == Some(&ErrorCode::NONE) {
                        self.model.offset_deleted(SIMPLE_GROUP, topic, *partition);
                    }
                }
            }
        }
        Ok(())
    }

    /// A heartbeat's acknowledged answer: the member adopts it (or, refused, joins again).
    fn heartbeat_answered(
        &mut self,
        client: usize,
        incarnation: u64,
        leave: bool,
        response: Result<HeartbeatResult, CoordinatorError>,
    ) {
        let c = &mut self.clients[client];
        c.waiting = false;
        match response {
            Ok(left) if leave => {
                if left.response.member_epoch == -1 {
                    self.model.member_left(c.group, &left.response.member_id);
                }
            }
            Ok(result) => {
                c.member.adopt(&result.response);
                let epoch = result.response.member_epoch;
                self.model.member_epoch(c.group, incarnation, epoch);
            }
            // Fenced, unknown, or refused its instance id: it joins again.
            Err(_) => c.forget(),
        }
    }

    /// What the requests still waiting would change if their records are in the file.
    pub(super) fn maybe_made(&self) -> MaybeMade {
        let mut maybe = MaybeMade::default();
        for waiting in self.waiting.values() {
            match &waiting.request {
                InFlight::Commit {
                    group,
                    offsets,
                    response: Ok(codes),
                    ..
                } => {
                    for ((topic, partition, offset), code) in offsets.iter().zip(codes) {
                        if *code == ErrorCode::NONE {
                            let key = (group.clone(), (*topic).to_owned(), *partition);
                            maybe.commits.insert((key, *offset));
                        }
                    }
                }
                InFlight::DeleteGroups { groups, response } => {
                    let deleted = groups.iter().zip(response).filter(|(_, r)| r.is_ok());
                    maybe.groups_deleted.extend(deleted.map(|(g, _)| g.clone()));
                }
                InFlight::DeleteOffsets {
                    partitions,
                    response: Ok(codes),
                } => {
                    for ((topic, partition), code) in partitions.iter().zip(codes) {
                        if code.first() == Some(&ErrorCode::NONE) {
                            let key = (SIMPLE_GROUP.to_owned(), (*topic).to_owned(), *partition);
                            maybe.deleted.insert(key);
                        }
                    }
                }
                _ => {}
            }
        }
        maybe
    }

    /// A refused request changes nothing the client knows: it will try again.
    pub(super) fn refuse(&mut self, waiting: Waiting) {
        match waiting.request {
            InFlight::Heartbeat { client, .. } => self.set_waiting(Owner::Streams(client), false),
            InFlight::Commit { owner, .. } => self.set_waiting(owner, false),
            InFlight::DeleteGroups { .. } | InFlight::DeleteOffsets { .. } => {}
        }
    }

    pub(super) fn set_waiting(&mut self, owner: Owner, waiting: bool) {
        match owner {
            Owner::Nobody => {}
            Owner::Streams(client) => self.clients[client].waiting = waiting,
            Owner::Classic(client) => self.groups.classic[client].waiting = waiting,
            Owner::Consumer(client) => self.groups.consumers[client].waiting = waiting,
        }
    }
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
