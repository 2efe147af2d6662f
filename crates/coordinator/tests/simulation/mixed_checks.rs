//! What the mixed group (`mixed.rs`) must keep after every step, what its answers must be, and
//! its convergence at the end of a run.
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kcoord_coordinator::classic::ClassicGroupState;
use kcoord_coordinator::consumer_protocol::read_assignment;
use kcoord_coordinator::CoordinatorShard;
use kcoord_metadata::{ConsumerGroup, ConsumerMemberState};
use kcoord_wire::messages::{JoinGroupResponse, SyncGroupRequest, SyncGroupResponse};
use kcoord_wire::ErrorCode;
use rand::Rng;

use super::classic_clients::{ClassicClient, Phase, CLASSIC_TOPIC};
use super::consumers::topic_id;
use super::mixed::{MixedAction, MixedStep, MIXED_GROUP};
use super::model::{Kind, Violation};
use super::world::World;

/// The mixed group's type after a step.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    #[default]
    Absent,
    Classic {
        members: usize,
    },
    Consumer {
        members: usize,
    },
}

/// Answers no client of the mixed group provokes (GROUP_ID_NOT_FOUND is not one: an upgrade
/// Kafka refuses, and a group the expiry pass deleted, answer it).
const UNEXPECTED: [ErrorCode; 6] = [
    ErrorCode::INVALID_REQUEST,
    ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
    ErrorCode::UNKNOWN_SERVER_ERROR,
    ErrorCode::INVALID_SESSION_TIMEOUT,
    ErrorCode::GROUP_MAX_SIZE_REACHED,
    ErrorCode::UNSUPPORTED_VERSION,
];

fn bad(what: String) -> Result<(), Violation> {
    Err(Violation::new(Kind::BadAnswer, what))
}

pub fn expected(who: &str, code: ErrorCode) -> Result<(), Violation> {
    if UNEXPECTED.contains(&code) {
        return bad(format!("{who} (mixed group) was answered {code:?}"));
    }
    Ok(())
}

/// The partitions of the topic an assignment in the consumer protocol gives, if it is one.
fn assigned_partitions(bytes: &[u8]) -> Option<BTreeSet<i32>> {
    let assignment = read_assignment(bytes).ok()?;
    let mut partitions = BTreeSet::new();
    for (topic, ps) in assignment.partitions {
        if topic != CLASSIC_TOPIC {
            return None;
        }
        partitions.extend(ps);
    }
    Some(partitions)
}

/// A SyncGroup answer's assignment is a `ConsumerProtocolAssignment` of the topic (an empty
/// one too: a member the leader left out).
pub fn real_assignment(who: &str, bytes: &Bytes) -> Result<(), Violation> {
    if !bytes.is_empty() && assigned_partitions(bytes).is_none() {
        return bad(format!("{who} was synced a malformed assignment {bytes:?}"));
    }
    Ok(())
}

/// What a classic leader (in `phase`) assigns each member, by identity: a static member that
/// takes its own place later, under a new member id, is given what its old one was.
pub fn sent(phase: &Phase, request: &SyncGroupRequest) -> BTreeMap<String, BTreeSet<i32>> {
    let instances: BTreeMap<&str, &str> = match phase {
        Phase::Syncing { members, .. } => members
            .iter()
            .filter_map(|(m, i)| Some((m.as_str(), i.as_deref()?)))
            .collect(),
        _ => BTreeMap::new(),
    };
    request
        .assignments
        .iter()
        .map(|a| {
            let partitions = assigned_partitions(&a.assignment).unwrap_or_default();
            let id = a.member_id.as_str();
            (
                instances.get(id).copied().unwrap_or(id).to_owned(),
                partitions,
            )
        })
        .collect()
}

/// A SyncGroup answer of the classic group gives the member what its leader assigned it.
pub fn leader_assigned(
    c: &ClassicClient,
    generation: i32,
    sent: Option<&BTreeMap<String, BTreeSet<i32>>>,
    assignment: &Bytes,
) -> Result<(), Violation> {
    let Some(sent) = sent else {
        return Ok(());
    };
    let given = assigned_partitions(assignment).unwrap_or_default();
    let expected = sent.get(&c.identity()).cloned().unwrap_or_default();
    if given != expected {
        bad(format!(
            "{} synced classic generation {generation}: given {given:?}, its leader assigned {expected:?}",
            c.name
        ))?;
    }
    Ok(())
}

/// A classic member of the mixed group while it is a consumer group, as the shard has it.
pub struct MemberView {
    epoch: i32,
    target_epoch: i32,
    state: ConsumerMemberState,
    assigned: BTreeSet<i32>,
}

fn consumer_group(shard: &CoordinatorShard) -> Option<&ConsumerGroup> {
    shard.state().consumer_groups.get(MIXED_GROUP)
}

fn input_partitions(held: &kcoord_metadata::PartitionEpochs) -> BTreeSet<i32> {
    held.get(&topic_id(0))
        .map(|ps| ps.keys().copied().collect())
        .unwrap_or_default()
}

pub fn classic_member_view(shard: &CoordinatorShard, member_id: &str) -> Option<MemberView> {
    let group = consumer_group(shard)?;
    let m = group.members.get(member_id)?;
    Some(MemberView {
        epoch: m.member_epoch,
        target_epoch: group.target_assignment_epoch,
        state: m.state,
        assigned: input_partitions(&m.assigned),
    })
}

/// A JoinGroup answered inside a consumer group has no member list (the coordinator assigns)
/// and the member's epoch as its generation.
pub fn join_answer(shard: &CoordinatorShard, answer: &JoinGroupResponse) -> Result<(), Violation> {
    let Some(group) = consumer_group(shard).filter(|_| answer.error_code == 0) else {
        return Ok(());
    };
    let epoch = group
        .members
        .get(answer.member_id.as_str())
        .map(|m| m.member_epoch);
    if !answer.members.is_empty() || epoch != Some(answer.generation_id) {
        return bad(format!(
            "a JoinGroup inside the consumer group was answered generation {} with {} members (member epoch {epoch:?})",
            answer.generation_id,
            answer.members.len()
        ));
    }
    Ok(())
}

/// A SyncGroup inside a consumer group is answered, leader or not, with the member's current
/// assignment in the consumer protocol.
pub fn sync_answer(
    before: Option<&MemberView>,
    request: &SyncGroupRequest,
    answer: &SyncGroupResponse,
) -> Result<(), Violation> {
    let Some(view) = before.filter(|_| answer.error_code == 0) else {
        return Ok(());
    };
    let given = assigned_partitions(&answer.assignment);
    if given.as_ref() != Some(&view.assigned) {
        bad(format!(
            "{} synced generation {} inside the consumer group: given {given:?}, assigned {:?}",
            request.member_id, request.generation_id, view.assigned
        ))?;
    }
    Ok(())
}

/// A Heartbeat inside a consumer group: REBALANCE_IN_PROGRESS when the member must rejoin
/// (behind the target, or revoking); whether it was told to.
pub fn heartbeat_answer(
    before: Option<&MemberView>,
    generation: i32,
    code: ErrorCode,
) -> Result<bool, Violation> {
    let Some(view) = before.filter(|v| v.epoch == generation) else {
        return Ok(false);
    };
    let must_rejoin =
        view.epoch < view.target_epoch || view.state == ConsumerMemberState::UnrevokedPartitions;
    if must_rejoin && code != ErrorCode::REBALANCE_IN_PROGRESS {
        bad(format!(
            "a classic member at epoch {} ({:?}, target {}) was answered {code:?}",
            view.epoch, view.state, view.target_epoch
        ))?;
    }
    Ok(code == ErrorCode::REBALANCE_IN_PROGRESS)
}

/// (who, (incarnation, epoch or generation), current as the shard has it, the partitions it
/// believes it owns).
type Owner = (String, (u64, i32), bool, BTreeSet<i32>);

impl World {
    fn mixed_type(&self) -> Result<GroupType, Violation> {
        let shard = self.node.shard();
        match (shard.classic_group(MIXED_GROUP), consumer_group(shard)) {
            (Some(_), Some(_)) => Err(Violation::new(
                Kind::BadAnswer,
                "the mixed group is both a classic and a consumer group",
            )),
            (Some(g), None) => Ok(GroupType::Classic {
                members: g.members.len(),
            }),
            (None, Some(g)) => Ok(GroupType::Consumer {
                members: g.members.len(),
            }),
            (None, None) => Ok(GroupType::Absent),
        }
    }

    /// What each running client believes it owns, and whether the shard has it current.
    fn mixed_owners(&self) -> Vec<Owner> {
        let shard = self.node.shard();
        let classic = shard.classic_group(MIXED_GROUP);
        let consumer = consumer_group(shard);
        let incarnation = |client: usize| self.mixed.answered_in[client];
        let mut owners = Vec::new();
        for (i, c) in self.mixed.classic.iter().enumerate() {
            let Phase::Stable { generation, .. } = c.phase else {
                continue;
            };
            let id = c.member_id.as_str();
            let current = classic
                .is_some_and(|g| g.generation_id == generation && g.members.contains_key(id))
                || consumer
                    .and_then(|g| g.members.get(id))
                    .is_some_and(|m| m.member_epoch == generation);
            let owned = c.owned().iter().copied().collect();
            owners.push((c.name.clone(), (incarnation(i), generation), current, owned));
        }
        let classic_count = self.mixed.classic.len();
        for (i, c) in self.mixed.consumers.iter().enumerate() {
            if c.epoch() <= 0 {
                continue;
            }
            let current = consumer
                .and_then(|g| g.members.get(c.consumer.id.as_str()))
                .is_some_and(|m| m.member_epoch == c.epoch());
            let owned = c.owned().into_iter().map(|(_, p)| p).collect();
            let epoch = (incarnation(classic_count + i), c.epoch());
            owners.push((c.name.clone(), epoch, current, owned));
        }
        owners
    }

    /// After every step: one type at a time; no partition owned by two clients at one epoch
    /// (or generation), nor by two that the shard has current.
    pub(super) fn check_mixed(&mut self, rolled_back: bool) -> Result<(), Violation> {
        if !self.mixed.enabled {
            return Ok(());
        }
        self.track_mixed_type(rolled_back)?;
        let owners = self.mixed_owners();
        let mut by_epoch: BTreeMap<(u64, i32), BTreeMap<i32, &str>> = BTreeMap::new();
        let mut current: BTreeMap<i32, &str> = BTreeMap::new();
        for (name, epoch, is_current, owned) in &owners {
            for p in owned {
                let same_epoch = by_epoch.entry(*epoch).or_default().insert(*p, name);
                let both_current = if *is_current {
                    current.insert(*p, name)
                } else {
                    None
                };
                if let Some(other) = same_epoch.or(both_current) {
                    return Err(Violation::new(
                        Kind::PartitionOwnedTwice,
                        format!("mixed group: {other} and {name} both own partition {p} ((incarnation, epoch) {epoch:?}): {owners:?}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Follows the group's type, after every step and right after each request of its clients
    /// (a request that replaces the group is answered by the new one).
    pub(super) fn track_mixed_type(&mut self, rolled_back: bool) -> Result<(), Violation> {
        let now = self.mixed_type()?;
        // A group deleted, or an empty one replaced by one of the other type, starts its
        // epochs over; an online migration keeps them (a rollback that changes the type is
        // taken as starting over: it only keeps apart what might have been compared).
        let (upgraded, downgraded) = match (self.mixed.last_type, now) {
            _ if rolled_back => (false, false),
            (GroupType::Classic { members: 1.. }, GroupType::Consumer { .. }) => (true, false),
            (GroupType::Consumer { members: 1.. }, GroupType::Classic { .. }) => (false, true),
            _ => (false, false),
        };
        self.stats.mixed_upgrades += u64::from(upgraded);
        self.stats.mixed_downgrades += u64::from(downgraded);
        let changed = std::mem::discriminant(&now) != std::mem::discriminant(&self.mixed.last_type);
        if changed && !upgraded && !downgraded {
            self.mixed.incarnation += 1;
        }
        self.stats.mixed_rolled_back += u64::from(changed && rolled_back);
        // A rollback or a migration may bring a generation number back with other members:
        // what leaders assigned before binds only the answers already checked.
        if changed || rolled_back {
            self.mixed.leader_sent.clear();
        }
        self.mixed.last_type = now;
        Ok(())
    }

    /// The end of a run: the running clients go on while the clock moves in small steps until
    /// the mixed group settles, whatever its type.
    pub(super) fn converge_mixed(&mut self) -> Result<(), Violation> {
        self.node.sync(usize::MAX);
        self.deliver()?;
        // Half the runs end with every consumer leaving, so that the group settles as classic
        // (downgraded, if classic members run) as often as as a consumer group.
        if self.rng.random_bool(0.5) {
            for client in self.mixed.classic.len()..self.mixed.running.len() {
                if self.mixed.running[client] && !self.mixed_is_waiting(client) {
                    let action = MixedAction::Leave { stop: true };
                    self.run_mixed(&MixedStep { client, action })?;
                }
            }
        }
        for _ in 0..400 {
            self.node.sync(usize::MAX);
            self.deliver()?;
            if self.mixed_settled().is_ok() {
                self.stats.mixed_converged += 1;
                match self.mixed_type()? {
                    GroupType::Consumer { .. } => self.stats.mixed_ended_consumer += 1,
                    _ => self.stats.mixed_ended_classic += 1,
                }
                return Ok(());
            }
            let classic = self.mixed.classic.len();
            for client in 0..self.mixed.running.len() {
                if !self.mixed.running[client] || self.mixed_is_waiting(client) {
                    continue;
                }
                let action = match client.checked_sub(classic) {
                    None => match self.mixed.classic[client].phase {
                        Phase::Joining => MixedAction::Join,
                        Phase::Syncing { .. } => MixedAction::Sync,
                        Phase::Stable { .. } if self.mixed_metadata_changed(client) => {
                            MixedAction::Join
                        }
                        Phase::Stable { .. } => MixedAction::Heartbeat { report: true },
                    },
                    Some(_) => MixedAction::Heartbeat { report: true },
                };
                self.run_mixed(&MixedStep { client, action })?;
            }
            self.node.sync(usize::MAX);
            self.deliver()?;
            self.advance(100)?;
            self.check_mixed(false)?;
        }
        let why = self.mixed_settled().unwrap_err();
        let shard = self.node.shard();
        Err(Violation::new(
            Kind::NotConverged,
            format!(
                "{why}\nconsumer group: {:#?}\nclassic group: {:#?}",
                consumer_group(shard),
                shard.classic_group(MIXED_GROUP)
            ),
        ))
    }

    fn mixed_is_waiting(&self, client: usize) -> bool {
        match client.checked_sub(self.mixed.classic.len()) {
            None => self.mixed.classic[client].waiting,
            Some(c) => self.mixed.consumers[c].waiting,
        }
    }

    /// Every running client is a current member holding what the coordinator (or, classic,
    /// the leader) gave it, and together they own every partition of the topic once.
    fn mixed_settled(&self) -> Result<(), String> {
        let running = self.mixed.running.iter().filter(|r| **r).count();
        let shard = self.node.shard();
        let members = match (shard.classic_group(MIXED_GROUP), consumer_group(shard)) {
            (Some(g), _) if g.state != ClassicGroupState::Stable && running > 0 => {
                return Err(format!("the classic group is {:?}", g.state))
            }
            (Some(g), _) => g.members.len(),
            (None, Some(g)) => {
                self.consumer_members_settled(g)?;
                g.members.len()
            }
            (None, None) => 0,
        };
        if members != running {
            return Err(format!("{members} members, {running} clients running"));
        }
        let owners = self.mixed_owners();
        let mut owned = BTreeSet::new();
        for (name, epoch, current, theirs) in &owners {
            let client_running = self
                .mixed
                .classic
                .iter()
                .map(|c| &c.name)
                .chain(self.mixed.consumers.iter().map(|c| &c.name))
                .zip(&self.mixed.running)
                .any(|(n, r)| n == name && *r);
            if !client_running {
                continue;
            }
            if !current {
                return Err(format!("{name} at {epoch:?} is not current"));
            }
            if let Some(p) = theirs.iter().find(|p| owned.contains(*p)) {
                return Err(format!("partition {p} owned twice: {owners:?}"));
            }
            owned.extend(theirs.iter().copied());
        }
        let current = owners.iter().filter(|o| o.2).count();
        let all: BTreeSet<i32> = (0..self.partition_count(0)).collect();
        if current != running || (running > 0 && owned != all) || self.mixed_any_waiting() {
            return Err(format!("{current} of {running} current, owning {owned:?}"));
        }
        Ok(())
    }

    fn mixed_any_waiting(&self) -> bool {
        (0..self.mixed.running.len()).any(|c| self.mixed_is_waiting(c))
    }

    /// Inside a consumer group every member is reconciled to the target and its client owns
    /// what the coordinator assigned it.
    fn consumer_members_settled(&self, group: &ConsumerGroup) -> Result<(), String> {
        let target = group.target_assignment_epoch;
        for c in &self.mixed.classic {
            if let Some(m) = group.members.get(c.member_id.as_str()) {
                let owned: BTreeSet<i32> = c.owned().iter().copied().collect();
                if !m.is_reconciled_to(target) || owned != input_partitions(&m.assigned) {
                    return Err(format!("{} owns {owned:?}; the coordinator: {m:?}", c.name));
                }
            }
        }
        for c in &self.mixed.consumers {
            if let Some(m) = group.members.get(c.consumer.id.as_str()) {
                let owned: BTreeSet<i32> = c.owned().into_iter().map(|(_, p)| p).collect();
                if !m.is_reconciled_to(target) || owned != input_partitions(&m.assigned) {
                    return Err(format!("{} owns {owned:?}; the coordinator: {m:?}", c.name));
                }
            }
        }
        Ok(())
    }
}
