//! What happens when time passes: session and rebalance timeouts fence members, and the end of
//! the initial rebalance delay computes the held-back target assignment. The server calls
//! `tick` with the current time; nothing here reads a clock.
use kcoord_metadata::{MemberState, TopicsImage};

use crate::error::Result;
use crate::records;
use crate::shard::{CoordinatorShard, TimerKind};
use crate::target;

/// Something `tick` did, for logging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickEvent {
    SessionExpired {
        group_id: String,
        member_id: String,
    },
    RebalanceTimedOut {
        group_id: String,
        member_id: String,
    },
    AssignmentComputed {
        group_id: String,
        epoch: i32,
    },
    /// Committed offsets removed because they expired.
    OffsetsExpired {
        group_id: String,
        count: usize,
    },
    /// An empty group without offsets, deleted by the expiry pass.
    GroupExpired {
        group_id: String,
    },
}

impl CoordinatorShard {
    pub fn tick(&mut self, topics: &TopicsImage, now: i64) -> Result<Vec<TickEvent>> {
        let mut events = Vec::new();
        for (group_id, member_id, kind) in self.timers.take_due(now) {
            let Some(group) = self.group(&group_id) else {
                continue;
            };
            let Some(member) = group.members.get(member_id.as_str()) else {
                continue;
            };
            let expired = match kind {
                TimerKind::Session => true,
                TimerKind::Rebalance(epoch) => {
                    member.state == MemberState::UnrevokedTasks && member.member_epoch == epoch
                }
            };
            if !expired {
                continue;
            }
            self.stats.rebalanced();
            let records = records::fence_member(group, &member_id);
            self.timers.cancel_member(&group_id, &member_id);
            self.forget_member_offsets(&group_id, &member_id);
            self.append(records)?;
            self.forget_if_empty(&group_id);
            events.push(match kind {
                TimerKind::Session => TickEvent::SessionExpired {
                    group_id,
                    member_id,
                },
                TimerKind::Rebalance(_) => TickEvent::RebalanceTimedOut {
                    group_id,
                    member_id,
                },
            });
        }
        // Groups are visited only when some initial delay is due.
        let any_due = self.delays.first().is_some_and(|(d, _)| *d <= now);
        let delayed: Vec<String> = if any_due {
            self.soft
                .iter()
                .filter(|(_, s)| s.initial_delay_deadline.is_some_and(|d| d <= now))
                .map(|(g, _)| g.to_string())
                .collect()
        } else {
            Vec::new()
        };
        for group_id in delayed {
            self.clear_initial_delay(&group_id);
            if let Some(epoch) = self.compute_delayed_assignment(&group_id, topics, now)? {
                events.push(TickEvent::AssignmentComputed { group_id, epoch });
            }
        }
        if self.expiry_next.is_some_and(|due| due <= now) {
            let interval = self.base.config.offsets_retention_check_interval_ms.max(1);
            self.expiry_next = Some(now.saturating_add(interval));
            events.extend(self.cleanup_group_metadata(now)?);
        }
        Ok(events)
    }

    /// `computeDelayedTargetAssignment`: the assignment the initial delay held back.
    fn compute_delayed_assignment(
        &mut self,
        group_id: &str,
        topics: &TopicsImage,
        now: i64,
    ) -> Result<Option<i32>> {
        let Some(group) = self.group(group_id) else {
            return Ok(None);
        };
        if group.members.is_empty() || group.target_assignment_epoch >= group.group_epoch {
            return Ok(None);
        }
        let Some(topology) = group.topology.clone() else {
            return Ok(None);
        };
        let (_, configured) = self.configured_topology(group_id, &topology, topics)?;
        let Some(group) = self.group(group_id) else {
            return Ok(None);
        };
        let epoch = group.group_epoch;
        let offsets = self.task_offsets(group_id);
        self.stats.assigned();
        let computed = target::compute(
            &group.members,
            &configured,
            self.group_settings(group_id).config.num_standby_replicas,
            &offsets,
        );
        let records = target::records(group_id, &group.target_assignment, &computed, epoch, now);
        self.append(records)?;
        Ok(Some(epoch))
    }
}
