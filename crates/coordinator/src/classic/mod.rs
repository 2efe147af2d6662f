//! Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), after Kafka 4.4's
//! `GroupMetadataManager` and `ClassicGroup`.
//!
//! As in Kafka, a classic group lives in memory (soft state) and is written to the log as one
//! GroupMetadata record when it is created, when a generation's assignment is stored, when a
//! static member is replaced and when it becomes empty; a restart brings each group back from
//! its last record. JoinGroup and SyncGroup wait for the rest of the group: their handlers
//! return [`Reply::Parked`] with a [`WaiterId`], and whichever job completes the phase lists the
//! answers in an effect ([`ClassicEffect::Answer`]); the runtime's owner takes them
//! ([`CoordinatorShard::take_classic_answers`]) and hands each to the request that waits for it.
mod change;
mod downgrade;
mod expiry;
mod group;
mod join;
mod membership;
mod sync;
mod timers;

use std::sync::Arc;

use kcoord_metadata::ClassicGroupsImage;
use kcoord_wire::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kcoord_wire::messages::{JoinGroupResponse, SyncGroupResponse};

pub use group::{ClassicGroup, ClassicGroupState, ClassicMember, Protocol};
pub use join::JoinContext;
pub use membership::LeavingMember;
pub use timers::{ClassicTask, ClassicTimer, DueClassicTimer};

use crate::effects::Effect;
use crate::shard::{CoordinatorShard, FastMap, Id};
use crate::Outcome;

/// Kafka's `group.*` settings of classic groups.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassicGroupConfig {
    /// `group.min.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`.
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`.
    pub max_size: i32,
    /// How long a new member's JoinGroup may wait before it is dropped (Kafka's
    /// `classicGroupNewMemberJoinTimeoutMs`, five minutes, not configurable).
    pub new_member_join_timeout_ms: i32,
}

impl Default for ClassicGroupConfig {
    fn default() -> Self {
        ClassicGroupConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: i32::MAX,
            new_member_join_timeout_ms: 300_000,
        }
    }
}

/// Names a parked JoinGroup or SyncGroup request.
pub type WaiterId = u64;

/// The answer to a parked request.
#[derive(Debug, Clone, PartialEq)]
pub enum ClassicAnswer {
    Join(JoinGroupResponse),
    Sync(SyncGroupResponse),
}

/// A handler's answer: now, or later to the waiter it names.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<T> {
    Now(T),
    Parked(WaiterId),
}

/// What the shard keeps of classic groups, all of it in memory.
#[derive(Debug, Default)]
pub(crate) struct ClassicSoftState {
    pub(crate) groups: FastMap<Id, Arc<ClassicGroup>>,
    pub(crate) timers: timers::ClassicTimers,
    /// Answers decided and not yet taken by the runtime's owner.
    outbox: Vec<(WaiterId, ClassicAnswer)>,
    /// The next waiter id to hand out.
    next_waiter: WaiterId,
    pub(crate) config: ClassicGroupConfig,
}

/// A change to the classic groups' soft state.
#[derive(Debug, Clone)]
pub enum ClassicEffect {
    /// The group's state after the job (`None`: it is gone).
    Group {
        group_id: Id,
        group: Option<Arc<ClassicGroup>>,
    },
    Schedule {
        timer: ClassicTimer,
        deadline: i64,
        task: ClassicTask,
    },
    Cancel(ClassicTimer),
    /// Queue entries that came due before their real deadline move to it.
    Requeue(Vec<ClassicTimer>),
    /// A parked request's answer.
    Answer(WaiterId, Box<ClassicAnswer>),
    /// The job handed out this many waiter ids.
    WaitersMinted(u64),
    /// The owner took this many answers.
    AnswersTaken(usize),
}

impl ClassicSoftState {
    /// The groups of `image` as a restart finds them: Stable groups with a session timer per
    /// member, Empty ones; nothing parked.
    pub(crate) fn loaded(&self, image: &ClassicGroupsImage, now: i64) -> ClassicSoftState {
        let mut soft = ClassicSoftState {
            config: self.config.clone(),
            next_waiter: self.next_waiter,
            ..Default::default()
        };
        for (group_id, value) in image.iter() {
            let group = ClassicGroup::from_record(group_id, value);
            for member in group.members.values() {
                soft.timers.schedule(
                    ClassicTimer::Heartbeat {
                        group_id: group.group_id.clone(),
                        member_id: member.member_id.clone(),
                    },
                    now + i64::from(member.session_timeout_ms),
                    ClassicTask::ExpireHeartbeat,
                );
            }
            soft.groups.insert(group_id.into(), Arc::new(group));
        }
        soft
    }
}

impl CoordinatorShard {
    /// Sets the classic groups' settings; before the shard runs.
    pub fn with_classic_groups(mut self, config: ClassicGroupConfig) -> Self {
        self.classic.config = config;
        self
    }

    pub fn classic_config(&self) -> &ClassicGroupConfig {
        &self.classic.config
    }

    /// The live classic group `group_id`.
    pub fn classic_group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.classic.groups.get(group_id).map(|g| &**g)
    }

    /// Every live classic group.
    pub fn classic_groups(&self) -> impl Iterator<Item = &ClassicGroup> {
        self.classic.groups.values().map(|g| &**g)
    }

    /// Whether answers wait to be taken.
    pub fn has_classic_answers(&self) -> bool {
        !self.classic.outbox.is_empty()
    }

    /// The answers decided so far, for the runtime's owner to hand to their requests.
    pub fn take_classic_answers(&self) -> Outcome<Vec<(WaiterId, ClassicAnswer)>> {
        let answers = self.classic.outbox.clone();
        let taken = answers.len();
        Outcome::answer(answers).with_effect(Effect::Classic(ClassicEffect::AnswersTaken(taken)))
    }

    pub(crate) fn next_classic_deadline(&self) -> Option<i64> {
        self.classic.timers.next_deadline()
    }

    pub(crate) fn apply_classic(&mut self, effect: ClassicEffect) {
        let classic = &mut self.classic;
        match effect {
            ClassicEffect::Group { group_id, group } => match group {
                Some(group) => {
                    classic.groups.insert(group_id, group);
                }
                None => {
                    classic.groups.remove(&group_id);
                    classic.timers.cancel_group(&group_id);
                }
            },
            ClassicEffect::Schedule {
                timer,
                deadline,
                task,
            } => classic.timers.schedule(timer, deadline, task),
            ClassicEffect::Cancel(timer) => classic.timers.cancel(&timer),
            ClassicEffect::Requeue(early) => classic.timers.requeue(&early),
            ClassicEffect::Answer(waiter, answer) => classic.outbox.push((waiter, *answer)),
            ClassicEffect::WaitersMinted(n) => classic.next_waiter += n,
            ClassicEffect::AnswersTaken(n) => {
                classic.outbox.drain(..n.min(classic.outbox.len()));
            }
        }
    }
}

/// DescribeGroups' view of a classic group (Kafka's `describeGroups`): a Stable group shows
/// its protocol and each member's metadata; others only who the members are.
pub fn describe(group: &ClassicGroup) -> DescribedGroup {
    let stable = group.is(ClassicGroupState::Stable);
    let protocol = group.protocol_name.clone().filter(|_| stable);
    DescribedGroup {
        group_id: group.group_id.to_string(),
        group_state: group.state.name().to_owned(),
        protocol_type: group.protocol_type.clone().unwrap_or_default(),
        protocol_data: protocol.clone().unwrap_or_default(),
        members: group
            .members
            .values()
            .map(|m| DescribedGroupMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                member_metadata: protocol
                    .as_deref()
                    .and_then(|p| m.metadata(p))
                    .cloned()
                    .unwrap_or_default(),
                member_assignment: m.assignment.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
