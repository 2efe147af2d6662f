//! When to ask a member to push, per (group, TopologyDescriptionId): the KIP-1331 plugin
//! guidelines as a small state machine any plugin can reuse.
//!
//! - ask once, then not again while that push is in flight (until an in-flight timeout);
//! - after a transient failure (or a push that never arrived), wait an exponentially growing,
//!   jittered back-off before asking again;
//! - after a permanent failure (too large, invalid), never ask again for that id;
//! - once stored, never ask again for that id.

/// Back-off settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base_ms: u64,
    pub max_ms: u64,
    /// Relative jitter, e.g. 0.2 = ±20%.
    pub jitter: f64,
    pub in_flight_timeout_ms: u64,
}

impl Backoff {
    /// The wait after `failures` consecutive transient failures (1 = the first), before jitter.
    pub fn delay_ms(&self, failures: u32) -> u64 {
        let exp = failures.saturating_sub(1).min(40);
        self.base_ms.saturating_mul(1u64 << exp).min(self.max_ms)
    }

    fn jittered(&self, failures: u32, unit: f64) -> u64 {
        let delay = self.delay_ms(failures) as f64;
        let factor = 1.0 + self.jitter * (2.0 * unit.clamp(0.0, 1.0) - 1.0);
        (delay * factor).max(0.0) as u64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushState {
    /// Never asked for.
    Idle,
    /// Asked at `since`; a push may be on its way.
    InFlight { since: u64, failures: u32 },
    /// A transient failure; ask again from `until`.
    BackingOff { until: u64, failures: u32 },
    /// The description is stored.
    Stored,
    /// Permanently refused (too large or invalid).
    Disabled,
}

impl PushState {
    /// Whether to ask for a push now; moves to `InFlight` when it says yes.
    /// `unit` is a uniform random number in [0, 1) for the jitter.
    pub fn should_request(&mut self, now: u64, backoff: &Backoff, unit: f64) -> bool {
        self.should_request_with(now, backoff, || unit)
    }

    /// [`should_request`](Self::should_request) with the jitter's random number drawn only
    /// when a back-off actually starts: this runs on every heartbeat, and almost every call
    /// ends in a state that needs none.
    pub fn should_request_with(
        &mut self,
        now: u64,
        backoff: &Backoff,
        unit: impl FnOnce() -> f64,
    ) -> bool {
        match *self {
            PushState::Stored | PushState::Disabled => false,
            PushState::Idle => {
                *self = PushState::InFlight {
                    since: now,
                    failures: 0,
                };
                true
            }
            PushState::InFlight { since, failures } => {
                if now.saturating_sub(since) < backoff.in_flight_timeout_ms {
                    return false;
                }
                // The push never arrived: that counts as a transient failure.
                let failures = failures + 1;
                *self = PushState::BackingOff {
                    until: now + backoff.jittered(failures, unit()),
                    failures,
                };
                false
            }
            PushState::BackingOff { until, failures } => {
                if now < until {
                    return false;
                }
                *self = PushState::InFlight {
                    since: now,
                    failures,
                };
                true
            }
        }
    }

    pub fn transient_failure(&mut self, now: u64, backoff: &Backoff, unit: f64) {
        let failures = match *self {
            PushState::InFlight { failures, .. } | PushState::BackingOff { failures, .. } => {
                failures + 1
            }
            _ => 1,
        };
        *self = PushState::BackingOff {
            until: now + backoff.jittered(failures, unit),
            failures,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Backoff = Backoff {
        base_ms: 1_000,
        max_ms: 8_000,
        jitter: 0.2,
        in_flight_timeout_ms: 5_000,
    };

    #[test]
    fn asks_once_then_waits_while_in_flight() {
        let mut s = PushState::Idle;
        assert!(s.should_request(0, &B, 0.5));
        assert!(!s.should_request(1, &B, 0.5));
        assert!(!s.should_request(4_999, &B, 0.5));
    }

    #[test]
    fn a_push_that_never_arrives_backs_off_then_asks_again() {
        let mut s = PushState::Idle;
        assert!(s.should_request(0, &B, 0.5));
        assert!(
            !s.should_request(5_000, &B, 0.5),
            "timed out: back off first"
        );
        assert!(matches!(
            s,
            PushState::BackingOff {
                until: 6_000,
                failures: 1
            }
        ));
        assert!(!s.should_request(5_999, &B, 0.5));
        assert!(s.should_request(6_000, &B, 0.5));
    }

    #[test]
    fn back_off_grows_exponentially_up_to_the_maximum() {
        assert_eq!(
            [1, 2, 3, 4, 5, 6].map(|f| B.delay_ms(f)),
            [1_000, 2_000, 4_000, 8_000, 8_000, 8_000]
        );
        let mut s = PushState::Idle;
        s.should_request(0, &B, 0.5);
        s.transient_failure(10, &B, 0.5);
        assert_eq!(
            s,
            PushState::BackingOff {
                until: 1_010,
                failures: 1
            }
        );
        s.transient_failure(20, &B, 0.5);
        assert_eq!(
            s,
            PushState::BackingOff {
                until: 2_020,
                failures: 2
            }
        );
    }

    #[test]
    fn jitter_stays_within_its_bounds() {
        assert_eq!(B.jittered(1, 0.0), 800);
        assert_eq!(B.jittered(1, 0.5), 1_000);
        assert!(B.jittered(1, 0.999_999) <= 1_200);
    }

    #[test]
    fn the_random_number_is_drawn_only_when_a_back_off_starts() {
        let mut draws = 0;
        let mut s = PushState::Idle;
        assert!(s.should_request_with(0, &B, || {
            draws += 1;
            0.5
        }));
        assert!(!s.should_request_with(4_999, &B, || {
            draws += 1;
            0.5
        }));
        assert_eq!(draws, 0, "asking and waiting in flight need no jitter");
        assert!(!s.should_request_with(5_000, &B, || {
            draws += 1;
            0.5
        }));
        assert_eq!(
            (draws, s),
            (
                1,
                PushState::BackingOff {
                    until: 6_000,
                    failures: 1
                }
            )
        );
        assert!(s.should_request_with(6_000, &B, || {
            draws += 1;
            0.5
        }));
        for mut s in [PushState::Stored, PushState::Disabled] {
            assert!(!s.should_request_with(u64::MAX / 2, &B, || {
                draws += 1;
                0.5
            }));
        }
        assert_eq!(draws, 1);
    }

    #[test]
    fn stored_and_disabled_ids_are_never_asked_again() {
        for mut s in [PushState::Stored, PushState::Disabled] {
            assert!(!s.should_request(u64::MAX / 2, &B, 0.5));
        }
    }
}
