//! What Kafka keeps about a group only in memory: never in the log, rebuilt empty after a
//! load (as after a coordinator failover), changed only by the shard's effects.
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::configured_topology::ConfiguredTopology;
use crate::error::CoordinatorError;
use crate::timer_queue::{GroupTimers, HoldsTimers};

/// What Kafka keeps about a group only in memory.
#[derive(Debug, Default)]
pub struct GroupSoftState {
    /// The configured topology for (topology epoch, metadata hash); dropped whenever the topic
    /// catalog changes, so the steady-state heartbeat never rehashes topic metadata.
    pub configured: Option<(i32, i64, Arc<ConfiguredTopology>)>,
    pub endpoint_information_epoch: i32,
    pub shutdown_requested_by: Option<String>,
    pub initial_delay_deadline: Option<i64>,
    /// member id -> its last reported task offsets (`StreamsGroup.taskOffsets`).
    pub task_offsets: BTreeMap<String, MemberTaskOffsets>,
    /// The members' session and rebalance timers (of a consumer group's members too: a
    /// consumer group's entry holds only these).
    pub(crate) timers: GroupTimers,
}

impl GroupSoftState {
    /// Nothing kept: the entry can go, a default one standing for it as well.
    pub(crate) fn is_idle(&self) -> bool {
        // Every field named, so that a new one cannot be forgotten here.
        let GroupSoftState {
            configured,
            endpoint_information_epoch,
            shutdown_requested_by,
            initial_delay_deadline,
            task_offsets,
            timers,
        } = self;
        configured.is_none()
            && *endpoint_information_epoch == 0
            && shutdown_requested_by.is_none()
            && initial_delay_deadline.is_none()
            && task_offsets.is_empty()
            && timers.is_empty()
    }
}

impl HoldsTimers for GroupSoftState {
    fn timers(&self) -> &GroupTimers {
        &self.timers
    }

    fn timers_mut(&mut self) -> &mut GroupTimers {
        &mut self.timers
    }
}

/// Reported offsets per member are transient telemetry; kept out of the log.
pub type TaskOffsets = BTreeMap<crate::task::TaskId, i64>;

/// What a member last reported in TaskOffsets and TaskEndOffsets (Kafka's `MemberTaskOffsets`):
/// kept in memory only, dropped with the member, used by the assignor and described.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberTaskOffsets {
    pub offsets: TaskOffsets,
    pub end_offsets: TaskOffsets,
}

impl MemberTaskOffsets {
    /// `MemberTaskOffsets.update`: a null list keeps what was reported before; a list given
    /// replaces it whole. A task reported twice is INVALID_REQUEST.
    pub fn update(
        &self,
        offsets: Option<&[kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset]>,
        end_offsets: Option<&[kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset]>,
    ) -> Result<MemberTaskOffsets, CoordinatorError> {
        fn to_map(
            list: &[kcoord_wire::messages::streams_group_heartbeat_request::TaskOffset],
        ) -> Result<TaskOffsets, CoordinatorError> {
            let mut map = TaskOffsets::new();
            for t in list {
                let task = crate::task::TaskId::new(t.subtopology_id.clone(), t.partition);
                if map.insert(task, t.offset).is_some() {
                    return Err(CoordinatorError::invalid_request(format!(
                        "Task offsets contain a duplicate entry for subtopology {} and partition {}.",
                        t.subtopology_id, t.partition
                    )));
                }
            }
            Ok(map)
        }
        Ok(MemberTaskOffsets {
            offsets: match offsets {
                Some(list) => to_map(list)?,
                None => self.offsets.clone(),
            },
            end_offsets: match end_offsets {
                Some(list) => to_map(list)?,
                None => self.end_offsets.clone(),
            },
        })
    }
}
