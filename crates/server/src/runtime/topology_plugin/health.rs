//! Whether heartbeats still ask the plugin `requires_topology_push`.
//!
//! A plugin that missed the heartbeat's budget, or had no check thread free, is *failing*:
//! from then on heartbeats answer "no push" without asking it (the specification's backstop for
//! a stuck plugin), and once per [`PROBE_INTERVAL`] a heartbeat hands the plugin a probe: the
//! same question, asked on a check thread while the heartbeat goes on without waiting for it.
//! The first probe answered within the budget makes the plugin healthy again. So a plugin that
//! sleeps in every call delays no heartbeat after the first one, instead of every heartbeat that
//! finds a free check thread. A probe's own answer is not used and pushes are only delayed:
//! members are asked again once the plugin answers. A panic is an answer in time (false, R7):
//! it does not make the plugin failing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracing::info;

use crate::support::logging::LogLimiter;

/// How often a failing plugin is asked again. Short next to a heartbeat interval (5 s by
/// default), so a plugin that recovers is asked by the next heartbeats; long next to the
/// budget, so a slow plugin delays few heartbeats.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// What the next heartbeat should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    /// The plugin is healthy: ask it.
    Ask,
    /// The plugin is failing and this heartbeat hands it the probe, without waiting for it.
    Probe,
    /// The plugin is failing and another heartbeat probes it: do not ask.
    Skip,
}

/// The plugin's health, shared by every heartbeat without a lock.
#[derive(Debug)]
pub(super) struct Health {
    /// The plugin's name, for logs.
    plugin: String,
    /// Lines saying the plugin answers again: at most one a minute, should it flap.
    recoveries: LogLimiter<()>,
    origin: Instant,
    probe_interval: Duration,
    /// Zero while healthy; otherwise one plus the nanoseconds after `origin` from which the
    /// next probe may be sent.
    next_probe: AtomicU64,
}

impl Health {
    pub fn new(plugin: &str, probe_interval: Duration) -> Self {
        Health {
            plugin: plugin.to_owned(),
            recoveries: LogLimiter::new(Duration::from_secs(60), 1),
            origin: Instant::now(),
            probe_interval,
            next_probe: AtomicU64::new(0),
        }
    }

    /// Whether a heartbeat at `now` asks the plugin. Of the heartbeats that find a probe due,
    /// exactly one gets [`Turn::Probe`].
    pub fn turn(&self, now: Instant) -> Turn {
        let due = self.next_probe.load(Ordering::Acquire);
        if due == 0 {
            return Turn::Ask;
        }
        if self.stamp(now) < due {
            return Turn::Skip;
        }
        let next = self.stamp(now + self.probe_interval);
        match self
            .next_probe
            .compare_exchange(due, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Turn::Probe,
            // Another heartbeat took this probe, or the plugin came back meanwhile.
            Err(0) => Turn::Ask,
            Err(_) => Turn::Skip,
        }
    }

    /// The plugin failed a heartbeat at `now`; true when it was healthy until then.
    pub fn failed(&self, now: Instant) -> bool {
        let next = self.stamp(now + self.probe_interval);
        // A failure seen while failing keeps the probe already scheduled.
        self.next_probe
            .compare_exchange(0, next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The plugin answered in time; true when it was failing until then (logged).
    pub fn answered(&self) -> bool {
        let was_failing = self.next_probe.swap(0, Ordering::AcqRel) != 0;
        if was_failing {
            if let Some(suppressed) = self.recoveries.check((), Instant::now()) {
                info!(
                    plugin = %self.plugin, suppressed_since_last_line = suppressed,
                    "topology description plugin answered requires_topology_push in time again; heartbeats ask it again"
                );
            }
        }
        was_failing
    }

    /// Whether heartbeats currently skip the plugin.
    #[cfg(test)]
    fn is_failing(&self) -> bool {
        self.next_probe.load(Ordering::Acquire) != 0
    }

    fn stamp(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(nanos)
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_healthy_plugin_is_always_asked() {
        let health = Health::new("p", 1000 * MS);
        let now = Instant::now();
        assert_eq!(health.turn(now), Turn::Ask);
        assert_eq!(health.turn(now + 5000 * MS), Turn::Ask);
        assert!(!health.is_failing());
    }

    #[test]
    fn a_failing_plugin_is_probed_once_per_interval_until_it_answers() {
        let health = Health::new("p", 1000 * MS);
        let t0 = Instant::now();
        assert!(health.failed(t0));
        assert!(!health.failed(t0 + MS), "already failing");
        assert_eq!(health.turn(t0 + 10 * MS), Turn::Skip);
        assert_eq!(health.turn(t0 + 999 * MS), Turn::Skip);
        // One probe when it is due, however many heartbeats find it due.
        assert_eq!(health.turn(t0 + 1000 * MS), Turn::Probe);
        assert_eq!(health.turn(t0 + 1000 * MS), Turn::Skip);
        assert_eq!(health.turn(t0 + 1500 * MS), Turn::Skip);
        // That probe failed too (the schedule stands): the next one a second later.
        assert!(!health.failed(t0 + 1100 * MS));
        assert_eq!(health.turn(t0 + 2000 * MS), Turn::Probe);
        // It answered in time: every heartbeat asks again.
        assert!(health.answered());
        assert!(!health.answered(), "already healthy");
        assert_eq!(health.turn(t0 + 2001 * MS), Turn::Ask);
        assert!(!health.is_failing());
    }

    #[test]
    fn concurrent_heartbeats_share_one_probe() {
        let health = std::sync::Arc::new(Health::new("p", 1000 * MS));
        let t0 = Instant::now();
        health.failed(t0);
        let at = t0 + 1000 * MS;
        let probes: usize = (0..8)
            .map(|_| {
                let health = std::sync::Arc::clone(&health);
                std::thread::spawn(move || {
                    (0..1000).filter(|_| health.turn(at) == Turn::Probe).count()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap_or(0))
            .sum();
        assert_eq!(probes, 1);
    }
}
