//! Wall-clock time for plugins, behind a trait so tests can move it by hand.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// On Linux the coarse clock: a few ms behind at most, which a TTL of hours does not
    /// notice, and a fraction of the precise clock's cost on a path every heartbeat takes.
    #[cfg(target_os = "linux")]
    fn now_ms(&self) -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        u64::try_from(t.tv_sec).map_or(0, |s| s * 1000 + t.tv_nsec as u64 / 1_000_000)
    }

    #[cfg(not(target_os = "linux"))]
    fn now_ms(&self) -> u64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(start_ms: u64) -> Self {
        ManualClock(Arc::new(AtomicU64::new(start_ms)))
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn system_clock_reads_wall_clock_milliseconds() {
        let precise = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        let before = precise(SystemTime::now());
        let ours = SystemClock.now_ms();
        let after = precise(SystemTime::now());
        // The coarse clock lags by at most a scheduler tick; a second is far more than that,
        // and far less than a wrong unit (seconds, microseconds) or epoch would be off by.
        assert!(
            ours + 1000 >= before && ours <= after,
            "{before} <= {ours} <= {after}"
        );
    }
}
