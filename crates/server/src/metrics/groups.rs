//! Groups: how many of each type in each state and their members (counted from the shards at
//! scrape time), and for streams groups rebalances and target assignment computations
//! (counted as jobs end).

use std::time::Duration;

use kcoord_coordinator::ShardStats;
use kcoord_wire::GroupState;
use prometheus::{Histogram, IntCounter, IntGauge, IntGaugeVec, Opts, Registry};

/// One group as `/metrics` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCount {
    /// Kafka's group type: `streams`, `classic` or `consumer`.
    pub group_type: &'static str,
    pub state: &'static str,
    pub members: usize,
}

impl GroupCount {
    pub fn of(group_type: &'static str, state: &'static str, members: usize) -> GroupCount {
        GroupCount {
            group_type,
            state,
            members,
        }
    }
}

use super::{counter, gauge, histogram, register, PREFIX, VALID};

#[derive(Debug)]
pub struct GroupMetrics {
    by_state: Vec<(GroupState, IntGauge)>,
    members: IntGauge,
    /// Every group type, by state (Kafka's `group-count` by protocol and its per-type state
    /// counts).
    groups: IntGaugeVec,
    group_members: IntGaugeVec,
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
            groups: register(
                registry,
                IntGaugeVec::new(
                    Opts::new(
                        format!("{PREFIX}_groups"),
                        "Groups of every type (streams, classic, consumer), by state (computed when scraped).",
                    ),
                    &["type", "state"],
                )
                .expect(VALID),
            ),
            group_members: register(
                registry,
                IntGaugeVec::new(
                    Opts::new(
                        format!("{PREFIX}_group_members"),
                        "Members of the groups of each type (computed when scraped).",
                    ),
                    &["type"],
                )
                .expect(VALID),
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

    /// Counts the groups and members `census` reports (it calls its argument with every group
    /// the node holds).
    pub(super) fn refresh(&self, census: impl FnOnce(&mut dyn FnMut(GroupCount))) {
        let mut by_state = [0i64; GroupState::STREAMS.len()];
        let mut members = 0i64;
        let mut by_type: std::collections::BTreeMap<(&str, &str), i64> = Default::default();
        let mut members_by_type: std::collections::BTreeMap<&str, i64> = Default::default();
        census(&mut |group| {
            let count = i64::try_from(group.members).unwrap_or(i64::MAX);
            *by_type.entry((group.group_type, group.state)).or_default() += 1;
            *members_by_type.entry(group.group_type).or_default() += count;
            if group.group_type != "streams" {
                return;
            }
            if let Some(i) = GroupState::STREAMS
                .iter()
                .position(|s| s.as_str() == group.state)
            {
                by_state[i] += 1;
            }
            members += count;
        });
        // A type and state no group is in any more drops out rather than staying at its last count.
        self.groups.reset();
        for ((group_type, state), n) in by_type {
            self.groups.with_label_values(&[group_type, state]).set(n);
        }
        for group_type in ["streams", "classic", "consumer"] {
            let n = members_by_type.get(group_type).copied().unwrap_or(0);
            self.group_members.with_label_values(&[group_type]).set(n);
        }
        for (state, gauge) in &self.by_state {
            if let Some(i) = GroupState::STREAMS.iter().position(|s| s == state) {
                gauge.set(by_state[i]);
            }
        }
        self.members.set(members);
    }
}
