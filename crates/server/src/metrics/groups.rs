//! Streams groups: how many in each state and their members (counted from the shards at
//! scrape time), rebalances and target assignment computations (counted as jobs end).

use std::time::Duration;

use kcoord_coordinator::ShardStats;
use kcoord_wire::GroupState;
use prometheus::{Histogram, IntCounter, IntGauge, IntGaugeVec, Opts, Registry};

use super::{counter, gauge, histogram, register, PREFIX, VALID};

#[derive(Debug)]
pub struct GroupMetrics {
    by_state: Vec<(GroupState, IntGauge)>,
    members: IntGauge,
    rebalances: IntCounter,
    assignments: IntCounter,
    assignment_jobs: Histogram,
}

impl GroupMetrics {
    pub(super) fn new(registry: &Registry) -> GroupMetrics {
        let states = register(
            registry,
            IntGaugeVec::new(
                Opts::new(
                    format!("{PREFIX}_streams_groups"),
                    "Streams groups, by state (computed when scraped).",
                ),
                &["state"],
            )
            .expect(VALID),
        );
        GroupMetrics {
            // Dead is never held: a group is deleted when it dies.
            by_state: GroupState::STREAMS
                .into_iter()
                .filter(|s| *s != GroupState::Dead)
                .map(|s| (s, states.with_label_values(&[s.as_str()])))
                .collect(),
            members: gauge(
                registry,
                "streams_group_members",
                "Members of all streams groups (computed when scraped).",
            ),
            rebalances: counter(
                registry,
                "streams_group_rebalances_total",
                "Group epoch bumps of streams groups: a member joined, left or was fenced, or its subscription or the group's settings changed.",
            ),
            assignments: counter(
                registry,
                "streams_group_assignments_total",
                "Target assignments computed by the streams assignor.",
            ),
            assignment_jobs: histogram(
                registry,
                "streams_group_assignment_job_duration_seconds",
                "Time of each coordinator job (a heartbeat or a timer) that computed a target assignment, the assignment included; the shard's lock is held for all of it.",
            ),
        }
    }

    /// A shard job ran from `before` to `after` in `elapsed`.
    pub fn job_ran(
        &self,
        before: ShardStats,
        after: ShardStats,
        elapsed: impl FnOnce() -> Duration,
    ) {
        let rebalances = after.rebalances.saturating_sub(before.rebalances);
        let assignments = after.assignments.saturating_sub(before.assignments);
        if rebalances > 0 {
            self.rebalances.inc_by(rebalances);
        }
        if assignments > 0 {
            self.assignments.inc_by(assignments);
            self.assignment_jobs.observe(elapsed().as_secs_f64());
        }
    }

    /// Counts the groups and members `census` reports (it calls its argument with the state
    /// and member count of every streams group the node holds).
    pub(super) fn refresh(&self, census: impl FnOnce(&mut dyn FnMut(GroupState, usize))) {
        let mut by_state = [0i64; GroupState::STREAMS.len()];
        let mut members = 0i64;
        census(&mut |state, member_count| {
            if let Some(i) = GroupState::STREAMS.iter().position(|s| *s == state) {
                by_state[i] += 1;
            }
            members += i64::try_from(member_count).unwrap_or(i64::MAX);
        });
        for (state, gauge) in &self.by_state {
            if let Some(i) = GroupState::STREAMS.iter().position(|s| s == state) {
                gauge.set(by_state[i]);
            }
        }
        self.members.set(members);
    }
}
