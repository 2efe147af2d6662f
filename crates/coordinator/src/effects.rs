//! Everything a coordinator shard keeps only in memory changes through one [`Effect`]: timers,
//! what Kafka keeps of a group outside the log, statistics, and the inputs the shard gets
//! from the rest of the node. A handler lists the effects it wants in its outcome; the
//! runtime applies them, in order, after the outcome's records are in the log and replayed,
//! so an effect may read the state those records made (e.g. whether the group is now empty).
use std::collections::BTreeMap;
use std::sync::Arc;

use kcoord_metadata::TopicsImage;

use crate::configured_topology::ConfiguredTopology;
use crate::shard::{CoordinatorShard, GroupSettings, Id};
use crate::soft_state::{GroupSoftState, MemberTaskOffsets};
use crate::streams_group_config::StreamsGroupConfig;
use crate::timer_queue::{entry_or_default, DueTimers};

/// A change to what the shard keeps in memory only.
#[derive(Debug, Clone)]
pub enum Effect {
    /// A member's timers or reported offsets.
    Member(MemberEffect),
    /// What Kafka keeps of a group outside the log.
    Group(GroupEffect),
    /// The due timers `tick` fires: they leave the queue (and early ones move back).
    TimersTaken(DueTimers),
    /// The job minted this many TopologyDescriptionIds.
    IdsMinted(u64),
    /// A group epoch was bumped (a rebalance, for the metrics).
    Rebalanced,
    /// The assignor computed a target assignment.
    AssignmentComputed,
    /// Expired offsets are next looked for at this time.
    OffsetExpiryAt(i64),
    /// Input: a new topic catalog; every group configures its topology again at its next
    /// heartbeat.
    Topics(Arc<TopicsImage>),
    /// Input: the settings of every group with config overrides (the others run with the
    /// broker's).
    GroupConfigs(BTreeMap<String, StreamsGroupConfig>),
    /// Input: every group's config overrides as stored (the consumer groups' come from their
    /// `consumer.*` keys).
    ConsumerGroupConfigs(BTreeMap<String, BTreeMap<String, String>>),
    /// Input: how many groups the node's other shards hold.
    GroupsElsewhere(usize),
    /// What the transaction coordinator keeps in memory.
    Txn(crate::transactions::TxnEffect),
    /// What the classic groups keep in memory.
    Classic(crate::classic::ClassicEffect),
}

/// A change to one member's timers or reported offsets.
#[derive(Debug, Clone)]
pub enum MemberEffect {
    /// Arms (or pushes back) the member's session timer.
    SessionTimer {
        group_id: Id,
        member_id: Id,
        deadline: i64,
    },
    /// A heartbeat the steady-state path answered: the session timer pushed back, counted.
    SteadyHeartbeat {
        group_id: Id,
        member_id: Id,
        deadline: i64,
    },
    /// Arms the member's rebalance timer for its revocation at `epoch`.
    RebalanceTimer {
        group_id: Id,
        member_id: Id,
        deadline: i64,
        epoch: i32,
    },
    CancelRebalanceTimer {
        group_id: Id,
        member_id: Id,
    },
    /// The member's last reported TaskOffsets and TaskEndOffsets (`None`: forgotten).
    TaskOffsets {
        group_id: Id,
        member_id: Id,
        offsets: Option<MemberTaskOffsets>,
    },
    /// The member left the group: its timers and the task offsets it reported go.
    Gone {
        group_id: Id,
        member_id: Id,
    },
}

/// A change to what Kafka keeps of a group only in memory ([`GroupSoftState`]).
#[derive(Debug, Clone)]
pub enum GroupEffect {
    /// The group's topology configured against the current catalog, cached.
    TopologyConfigured {
        group_id: Id,
        epoch: i32,
        hash: i64,
        configured: Arc<ConfiguredTopology>,
    },
    EndpointInformationEpoch {
        group_id: Id,
        epoch: i32,
    },
    /// A member asked the application to shut down; the first request is kept.
    ShutdownRequested {
        group_id: Id,
        member_id: String,
    },
    /// Kafka forgets a shutdown request once the group is empty (read after the batch).
    ForgetShutdownIfEmpty {
        group_id: Id,
    },
    /// Arms the group's initial rebalance delay unless one is armed.
    InitialDelay {
        group_id: Id,
        deadline: i64,
    },
    ClearInitialDelay {
        group_id: Id,
    },
    /// The group was deleted: everything kept in memory about it goes.
    Gone {
        group_id: Id,
    },
}

impl CoordinatorShard {
    /// Applies one effect; [`kcoord_runtime::Core::apply`].
    pub(crate) fn apply_effect(&mut self, effect: Effect) {
        match effect {
            Effect::Member(effect) => self.apply_member_effect(effect),
            Effect::Group(effect) => self.apply_group_effect(effect),
            Effect::TimersTaken(due) => self.timers.take(&mut self.soft, &due),
            Effect::IdsMinted(n) => self.ids_minted = self.ids_minted.wrapping_add(n),
            Effect::Rebalanced => self.stats.rebalances += 1,
            Effect::AssignmentComputed => self.stats.assignments += 1,
            Effect::OffsetExpiryAt(at) => self.expiry_next = Some(at),
            Effect::Topics(topics) => {
                self.topics = topics;
                for soft in self.soft.values_mut() {
                    soft.configured = None;
                }
            }
            Effect::GroupConfigs(configs) => {
                self.overrides = configs
                    .into_iter()
                    .map(|(group, config)| {
                        (
                            Id::from(group.as_str()),
                            Arc::new(GroupSettings::new(config)),
                        )
                    })
                    .collect();
            }
            Effect::ConsumerGroupConfigs(overrides) => self.set_consumer_overrides(&overrides),
            Effect::GroupsElsewhere(groups) => self.groups_elsewhere = groups,
            Effect::Txn(effect) => self.apply_txn_effect(effect),
            Effect::Classic(effect) => self.apply_classic(effect),
        }
    }

    fn apply_member_effect(&mut self, effect: MemberEffect) {
        match effect {
            MemberEffect::SessionTimer {
                group_id,
                member_id,
                deadline,
            } => self
                .timers
                .schedule_session(&mut self.soft, &group_id, &member_id, deadline),
            MemberEffect::SteadyHeartbeat {
                group_id,
                member_id,
                deadline,
            } => {
                self.steady_hits += 1;
                self.timers
                    .schedule_session(&mut self.soft, &group_id, &member_id, deadline)
            }
            MemberEffect::RebalanceTimer {
                group_id,
                member_id,
                deadline,
                epoch,
            } => self.timers.schedule_rebalance(
                &mut self.soft,
                &group_id,
                &member_id,
                deadline,
                epoch,
            ),
            MemberEffect::CancelRebalanceTimer {
                group_id,
                member_id,
            } => self
                .timers
                .cancel_rebalance(&mut self.soft, &group_id, &member_id),
            MemberEffect::TaskOffsets {
                group_id,
                member_id,
                offsets: Some(offsets),
            } => {
                self.soft_mut(&group_id)
                    .task_offsets
                    .insert(member_id.to_string(), offsets);
            }
            MemberEffect::TaskOffsets {
                group_id,
                member_id,
                offsets: None,
            } => {
                if let Some(soft) = self.soft.get_mut(group_id.as_str()) {
                    soft.task_offsets.remove(member_id.as_str());
                }
            }
            MemberEffect::Gone {
                group_id,
                member_id,
            } => {
                self.timers
                    .cancel_member(&mut self.soft, &group_id, &member_id);
                if let Some(soft) = self.soft.get_mut(group_id.as_str()) {
                    soft.task_offsets.remove(member_id.as_str());
                    // A consumer group's entry holds only its timers; nothing ends it else.
                    if soft.is_idle() {
                        self.soft.remove(group_id.as_str());
                    }
                }
            }
        }
    }

    fn apply_group_effect(&mut self, effect: GroupEffect) {
        match effect {
            GroupEffect::TopologyConfigured {
                group_id,
                epoch,
                hash,
                configured,
            } => self.soft_mut(&group_id).configured = Some((epoch, hash, configured)),
            GroupEffect::EndpointInformationEpoch { group_id, epoch } => {
                self.soft_mut(&group_id).endpoint_information_epoch = epoch
            }
            GroupEffect::ShutdownRequested {
                group_id,
                member_id,
            } => {
                self.soft_mut(&group_id)
                    .shutdown_requested_by
                    .get_or_insert(member_id);
            }
            GroupEffect::ForgetShutdownIfEmpty { group_id } => {
                if self.group(&group_id).is_none_or(|g| g.members.is_empty()) {
                    if let Some(soft) = self.soft.get_mut(group_id.as_str()) {
                        soft.shutdown_requested_by = None;
                    }
                }
            }
            GroupEffect::InitialDelay { group_id, deadline } => {
                self.arm_initial_delay(&group_id, deadline)
            }
            GroupEffect::ClearInitialDelay { group_id } => self.clear_initial_delay(&group_id),
            GroupEffect::Gone { group_id } => {
                self.clear_initial_delay(&group_id);
                // Its members' timers stay until the members go (or fire and find none).
                if let Some(soft) = self.soft.get_mut(group_id.as_str()) {
                    let timers = std::mem::take(&mut soft.timers);
                    *soft = GroupSoftState {
                        timers,
                        ..GroupSoftState::default()
                    };
                    if soft.is_idle() {
                        self.soft.remove(group_id.as_str());
                    }
                }
            }
        }
    }

    fn soft_mut(&mut self, group_id: &str) -> &mut GroupSoftState {
        entry_or_default(&mut self.soft, group_id)
    }

    fn arm_initial_delay(&mut self, group_id: &str, deadline: i64) {
        let soft = self.soft_mut(group_id);
        if soft.initial_delay_deadline.is_none() {
            soft.initial_delay_deadline = Some(deadline);
            self.delays.insert((deadline, group_id.to_string()));
        }
    }

    fn clear_initial_delay(&mut self, group_id: &str) {
        if let Some(soft) = self.soft.get_mut(group_id) {
            if let Some(deadline) = soft.initial_delay_deadline.take() {
                self.delays.remove(&(deadline, group_id.to_string()));
            }
        }
    }
}
