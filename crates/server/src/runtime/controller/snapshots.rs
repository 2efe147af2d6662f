//! When the controller's log is replaced by a snapshot, and the broker sessions kept across it.
//!
//! The controller's records are keyless and its log never compacts, so topics created and
//! deleted in a loop, or brokers fenced and unfenced, would grow it (and the restart that
//! replays it) without bound. The runtime therefore replaces it, in memory and on disk, by a
//! snapshot of the state ([`kcoord_metadata::LogState::snapshot`]) once enough was appended since
//! the last one: Kafka's `metadata.log.max.record.bytes.between.snapshots` bytes of records,
//! or as many bytes as the last snapshot holds when that is more (so that rewriting a large
//! state is always paid for by as many new bytes, and the log never holds more than twice the
//! state plus the threshold), or, with records appended since, once
//! `metadata.log.max.snapshot.interval.ms` has passed since the last one.
//!
//! Rebuilding the controller over the snapshot starts its broker sessions afresh (as after a
//! restart); [`SessionMirror`] follows the sessions through the outcomes' effects so that the
//! rebuilt controller gets exactly the sessions the old one had.

use std::collections::{BTreeMap, BTreeSet};

use kcoord_controller::{Controller, Effect, Outcome};
use kcoord_metadata::file_log::entry_size;
use kcoord_metadata::{LogRecord, MetadataLog, Store};
use tracing::{error, info};

use crate::config::Config;

/// How long a snapshot that failed (the file could not be rewritten) waits before the next try.
pub(crate) const RETRY_AFTER_FAILURE_MS: i64 = 60_000;

/// The two keys of config/README.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPolicy {
    /// `metadata.log.max.record.bytes.between.snapshots`.
    pub max_bytes: u64,
    /// `metadata.log.max.snapshot.interval.ms`; 0: no time trigger.
    pub interval_ms: i64,
}

impl SnapshotPolicy {
    pub fn from_config(config: &Config) -> SnapshotPolicy {
        SnapshotPolicy {
            max_bytes: u64::try_from(config.controller.max_record_bytes_between_snapshots)
                .unwrap_or(u64::MAX),
            interval_ms: config.controller.max_snapshot_interval_ms,
        }
    }
}

/// What the runtime knows about the log's growth since the last snapshot.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotTracker {
    pub(crate) policy: SnapshotPolicy,
    /// Bytes of the entries of the in-memory log (the file holds the same, plus its header).
    pub(crate) log_bytes: u64,
    /// Bytes of the entries of the last snapshot; at startup, of a snapshot of the replayed
    /// state, so that what the log holds beyond it counts as appended since.
    pub(crate) snapshot_bytes: u64,
    /// When the last snapshot was taken (or the runtime was built), ms.
    pub(crate) last_at: i64,
    /// After a failed snapshot: not before this time again.
    pub(crate) retry_at: Option<i64>,
}

impl SnapshotTracker {
    /// For a controller whose log is `log` and whose state snapshots to `snapshot_bytes`.
    pub(crate) fn new(
        policy: SnapshotPolicy,
        log: &MetadataLog,
        snapshot_bytes: u64,
        now: i64,
    ) -> Self {
        SnapshotTracker {
            policy,
            log_bytes: log_bytes(log),
            snapshot_bytes,
            last_at: now,
            retry_at: None,
        }
    }

    /// The log grew by `bytes`.
    pub(crate) fn grew(&mut self, bytes: u64) {
        self.log_bytes = self.log_bytes.saturating_add(bytes);
    }

    /// Bytes appended since the last snapshot.
    pub(crate) fn bytes_since(&self) -> u64 {
        self.log_bytes.saturating_sub(self.snapshot_bytes)
    }

    /// Whether a snapshot is due at `now` (module docs).
    pub(crate) fn due(&self, now: i64) -> bool {
        if self.retry_at.is_some_and(|at| now < at) {
            return false;
        }
        let since = self.bytes_since();
        since > 0
            && (since >= self.policy.max_bytes.max(self.snapshot_bytes)
                || self
                    .interval_deadline()
                    .is_some_and(|deadline| now >= deadline))
    }

    /// When the time trigger makes a snapshot due, if it will.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        let deadline = self.interval_deadline()?;
        Some(self.retry_at.map_or(deadline, |at| deadline.max(at)))
    }

    fn interval_deadline(&self) -> Option<i64> {
        (self.policy.interval_ms > 0 && self.bytes_since() > 0)
            .then(|| self.last_at.saturating_add(self.policy.interval_ms))
    }

    pub(crate) fn taken(&mut self, snapshot: &MetadataLog, now: i64) {
        self.snapshot_bytes = log_bytes(snapshot);
        self.log_bytes = self.snapshot_bytes;
        self.last_at = now;
        self.retry_at = None;
    }

    pub(crate) fn failed(&mut self, now: i64) {
        self.retry_at = Some(now.saturating_add(RETRY_AFTER_FAILURE_MS));
    }
}

/// Bytes the entries of `log` take in the file.
pub(crate) fn log_bytes(log: &MetadataLog) -> u64 {
    log.iter().map(|r| entry_size(r.key, r.value) as u64).sum()
}

pub(crate) fn records_bytes(records: &[LogRecord]) -> u64 {
    records
        .iter()
        .map(|r| entry_size(r.key.as_deref(), r.value.as_deref()) as u64)
        .sum()
}

/// The controller's broker sessions, as its applied effects left them: Kafka keeps them in
/// memory only (`BrokerHeartbeatManager`), so a controller rebuilt from a store starts them
/// afresh; [`SessionMirror::restore`] puts them back.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionMirror {
    /// (broker id, epoch) -> last contact, ms.
    contacts: BTreeMap<(i32, i64), i64>,
    controlled_shutdown: BTreeSet<i32>,
}

impl SessionMirror {
    /// The sessions of a controller that was just built at `now`: every unfenced broker's,
    /// started at `now` (what `Controller::with_store` does).
    pub(crate) fn activated(controller: &Controller, now: i64) -> Self {
        SessionMirror {
            contacts: controller
                .brokers()
                .unfenced()
                .map(|b| ((b.id, b.epoch), now))
                .collect(),
            controlled_shutdown: BTreeSet::new(),
        }
    }

    /// Follows effects the controller applied, as its `Sessions` does.
    pub(crate) fn applied(&mut self, effects: &[Effect]) {
        for effect in effects {
            match *effect {
                Effect::TouchSession {
                    broker_id,
                    epoch,
                    now,
                } => {
                    self.contacts.insert((broker_id, epoch), now);
                }
                Effect::ForgetBroker { broker_id } => {
                    self.contacts.retain(|(id, _), _| *id != broker_id);
                    self.controlled_shutdown.remove(&broker_id);
                }
                Effect::EndSession { broker_id, epoch } => {
                    self.contacts.remove(&(broker_id, epoch));
                }
                Effect::ControlledShutdown { broker_id, on } => {
                    if on {
                        self.controlled_shutdown.insert(broker_id);
                    } else {
                        self.controlled_shutdown.remove(&broker_id);
                    }
                }
            }
        }
    }

    /// Gives `controller`, just built from a store (so with a session started for every
    /// unfenced broker), the sessions this mirror holds instead.
    pub(crate) fn restore(&self, controller: &mut Controller) {
        let mut effects: Vec<Effect> = controller
            .brokers()
            .unfenced()
            .filter(|b| !self.contacts.contains_key(&(b.id, b.epoch)))
            .map(|b| Effect::EndSession {
                broker_id: b.id,
                epoch: b.epoch,
            })
            .collect();
        effects.extend(self.contacts.iter().map(|(&(broker_id, epoch), &now)| {
            Effect::TouchSession {
                broker_id,
                epoch,
                now,
            }
        }));
        effects.extend(self.controlled_shutdown.iter().map(|&broker_id| {
            Effect::ControlledShutdown {
                broker_id,
                on: true,
            }
        }));
        let restored = controller.apply(Outcome {
            records: Vec::new(),
            response: (),
            effects,
        });
        // Effects alone cannot fail: `apply` only checks records.
        debug_assert!(restored.is_ok(), "{restored:?}");
    }
}

impl super::ControllerRuntime {
    /// Replaces the log by a snapshot when one is due ([`snapshots`]).
    pub(super) fn maybe_snapshot(&mut self, now: i64) {
        if self.snapshots.due(now) {
            self.snapshot(now);
        }
    }

    /// Replaces the log, in memory and on disk, by a snapshot of the controller's state at its
    /// next offset, and rebuilds the controller over it with the same state and broker
    /// sessions. Anything that fails leaves the log and the controller as they were (an
    /// ERROR says why), and the next attempt waits [`RETRY_AFTER_FAILURE_MS`].
    /// Returns whether the snapshot was taken.
    pub(super) fn snapshot(&mut self, now: i64) -> bool {
        let started = std::time::Instant::now();
        let records_before = self.controller.store().log().len();
        let bytes_before = self.snapshots.log_bytes;
        let next_offset = self.controller.store().log().next_offset();
        let file = self
            .controller
            .log()
            .durable
            .as_ref()
            .map(|d| d.path().display().to_string());
        let file = file.as_deref().unwrap_or("(in memory)");
        let built = match self.build_snapshot(next_offset, now) {
            Ok(built) => built,
            Err(reason) => {
                self.snapshots.failed(now);
                error!(file, next_offset, reason = %reason, retry_in_ms = RETRY_AFTER_FAILURE_MS, "could not build a snapshot of the metadata log; the log is kept as it is");
                return false;
            }
        };
        let (log, mut controller) = built;
        if let Some(durable) = self.controller.log_mut().durable.as_mut() {
            if let Err(e) = durable.rewrite(&log) {
                self.snapshots.failed(now);
                error!(file, next_offset, error = %e, retry_in_ms = RETRY_AFTER_FAILURE_MS, "could not write a snapshot of the metadata log; the old file is kept");
                return false;
            }
        }
        self.sessions.restore(&mut controller);
        self.controller.replace_core(controller);
        self.snapshots.taken(&log, now);
        info!(
            file,
            next_offset,
            records_before,
            records = log.len(),
            bytes_before,
            bytes = self.snapshots.log_bytes,
            took_ms = started.elapsed().as_millis() as u64,
            "replaced the metadata log by a snapshot"
        );
        true
    }

    /// The snapshot log and a controller over it, once the snapshot is known to replay to the
    /// very state the controller has.
    fn build_snapshot(
        &self,
        next_offset: u64,
        now: i64,
    ) -> Result<(kcoord_metadata::MetadataLog, Controller), String> {
        let log = self
            .controller
            .state()
            .snapshot(next_offset)
            .map_err(|e| e.to_string())?;
        let store = Store::replay_log(&log).map_err(|e| format!("it does not replay: {e}"))?;
        if store.state() != self.controller.state() {
            return Err("it does not replay to the controller's state".to_owned());
        }
        let controller = Controller::with_store(self.controller.config().clone(), store, now)
            .map_err(|e| e.to_string())?;
        Ok((log, controller))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(max_bytes: u64, interval_ms: i64) -> SnapshotTracker {
        SnapshotTracker {
            policy: SnapshotPolicy {
                max_bytes,
                interval_ms,
            },
            log_bytes: 100,
            snapshot_bytes: 100,
            last_at: 0,
            retry_at: None,
        }
    }

    #[test]
    fn bytes_trigger_at_the_larger_of_the_threshold_and_the_last_snapshot() {
        let mut t = tracker(50, 0);
        assert!(!t.due(0), "nothing appended");
        t.log_bytes = 190;
        assert!(!t.due(0), "90 bytes since: less than the 100-byte snapshot");
        t.log_bytes = 200;
        assert!(t.due(0));
        t.snapshot_bytes = 10;
        t.log_bytes = 59;
        assert!(!t.due(0));
        t.log_bytes = 60;
        assert!(t.due(0), "50 bytes since a 10-byte snapshot");
        assert_eq!(t.next_deadline(), None, "no time trigger");
        t.failed(1_000);
        assert!(!t.due(1_000 + RETRY_AFTER_FAILURE_MS - 1));
        assert!(t.due(1_000 + RETRY_AFTER_FAILURE_MS));
    }

    #[test]
    fn the_interval_triggers_only_with_records_since_the_last_snapshot() {
        let mut t = tracker(1 << 20, 3_600_000);
        assert_eq!(t.next_deadline(), None);
        assert!(!t.due(10_000_000));
        t.log_bytes += 1;
        assert_eq!(t.next_deadline(), Some(3_600_000));
        assert!(!t.due(3_599_999));
        assert!(t.due(3_600_000));
        t.failed(3_600_000);
        assert_eq!(t.next_deadline(), Some(3_600_000 + RETRY_AFTER_FAILURE_MS));
    }
}
