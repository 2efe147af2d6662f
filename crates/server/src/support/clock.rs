//! The wall clock, read only in the server layer: the coordinator and controller logic take
//! `now` as an argument.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as Kafka's `Time.milliseconds()`.
pub fn now_ms() -> i64 {
    Stamp::now().ms()
}

/// One reading of the wall clock: the `now` a job runs with, and the start of a measurement
/// that costs a second reading only when something turns out to be worth timing (a shard job
/// that computed an assignment). A wall clock stepped back meanwhile measures zero.
#[derive(Debug, Clone, Copy)]
pub struct Stamp(SystemTime);

impl Stamp {
    pub fn now() -> Stamp {
        Stamp(SystemTime::now())
    }

    /// Milliseconds since the Unix epoch.
    pub fn ms(self) -> i64 {
        self.0
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// The time since this reading.
    pub fn elapsed(self) -> Duration {
        self.0.elapsed().unwrap_or(Duration::ZERO)
    }
}
