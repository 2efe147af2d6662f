//! What one connection did last: when it was last active, whether a request is in hand or an
//! answer awaited, since when a request has been arriving. Its reader and writer note it; the
//! watchdog closes an idle connection or one whose request takes too long to arrive by it, and
//! the connection quotas pick whom to evict by it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// What one connection did last, shared by its reader, writer, watchdog and the quotas.
#[derive(Debug)]
pub(crate) struct Activity {
    /// The quotas' epoch, so that connections compare.
    epoch: Instant,
    /// The last byte read or written, or the last request handled.
    last_active: AtomicU64,
    /// A request is being handled: the connection is not idle, whatever the clock says.
    pub(crate) in_flight: AtomicBool,
    /// Answers the writer is waiting for (forwarded upstream in gateway mode): not idle either.
    pub(crate) awaited: AtomicUsize,
    /// When the first bytes of the request still arriving came; [`NOT_RECEIVING`] when none.
    receiving_since: AtomicU64,
    /// The quotas want this connection closed to make room.
    evicted: AtomicBool,
    /// Wakes the watchdog: a request started arriving, or the connection was evicted.
    pub(crate) wake: Notify,
}

const NOT_RECEIVING: u64 = u64::MAX;

impl Activity {
    pub(crate) fn new(epoch: Instant, now: Instant) -> Self {
        let activity = Activity {
            epoch,
            last_active: AtomicU64::new(0),
            in_flight: AtomicBool::new(false),
            awaited: AtomicUsize::new(0),
            receiving_since: AtomicU64::new(NOT_RECEIVING),
            evicted: AtomicBool::new(false),
            wake: Notify::new(),
        };
        activity.touch(now);
        activity
    }

    fn micros(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX - 1)
    }

    pub(crate) fn at(&self, micros: u64) -> Instant {
        self.epoch + Duration::from_micros(micros)
    }

    pub(crate) fn touch(&self, now: Instant) {
        self.last_active.store(self.micros(now), Ordering::Relaxed);
    }

    pub(crate) fn last_active_micros(&self) -> u64 {
        self.last_active.load(Ordering::Relaxed)
    }

    pub(crate) fn evict(&self) {
        self.evicted.store(true, Ordering::Relaxed);
        self.wake.notify_one();
    }

    pub(crate) fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Relaxed)
    }

    /// A whole request is in: its arrival clock stops.
    pub(crate) fn received(&self) {
        self.receiving_since.store(NOT_RECEIVING, Ordering::Relaxed);
    }

    pub(crate) fn start_request(&self) {
        self.in_flight.store(true, Ordering::Relaxed);
    }

    pub(crate) fn end_request(&self, now: Instant) {
        self.touch(now);
        self.in_flight.store(false, Ordering::Relaxed);
    }

    /// Part of a request is buffered: its clock starts now, unless it already runs.
    pub(crate) fn receiving(&self, now: Instant) {
        let since = self.micros(now);
        let started = self
            .receiving_since
            .compare_exchange(NOT_RECEIVING, since, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if started {
            self.wake.notify_one();
        }
    }

    pub(crate) fn receiving_since(&self) -> Option<Instant> {
        match self.receiving_since.load(Ordering::Relaxed) {
            NOT_RECEIVING => None,
            since => Some(self.at(since)),
        }
    }
}
