//! Kafka's `Rate` over a `WindowedSum`, the measure its client quotas check: the values
//! recorded in the last `quota.window.num` samples of `quota.window.size.seconds` each, divided
//! by the time they cover, which is never taken as less than `num - 1` whole windows (so a
//! fresh sensor does not read a burst as an enormous rate). Sans-IO: times are ms passed in.

/// `quota.window.num` and `quota.window.size.seconds`, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub samples: u32,
    pub size_ms: i64,
}

impl Default for Window {
    /// Kafka's defaults: 11 samples of 1 s.
    fn default() -> Self {
        Window {
            samples: 11,
            size_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(now: i64) -> Sample {
        Sample {
            value: 0.0,
            start_ms: now,
            last_event_ms: now,
        }
    }
}

/// One sensor's samples, as Kafka's `SampledStat` keeps them: a ring of `samples + 1`.
#[derive(Debug, Clone)]
pub struct Rate {
    window: Window,
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    pub fn new(window: Window) -> Rate {
        Rate {
            window,
            samples: Vec::new(),
            current: 0,
        }
    }

    /// Adds `value` at `now` (negative to take a recorded value back, as Kafka's
    /// `unrecordQuotaSensor`).
    pub fn record(&mut self, value: f64, now: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now));
        }
        let complete = self
            .samples
            .get(self.current)
            .is_none_or(|s| now - s.start_ms >= self.window.size_ms);
        if complete {
            self.advance(now);
        }
        if let Some(sample) = self.samples.get_mut(self.current) {
            sample.value += value;
            sample.last_event_ms = now;
        }
    }

    fn advance(&mut self, now: i64) {
        let ring = self.window.samples as usize + 1;
        self.current = (self.current + 1) % ring;
        match self.samples.get_mut(self.current) {
            Some(sample) => *sample = Sample::new(now),
            None => self.samples.push(Sample::new(now)),
        }
    }

    /// Kafka's `purgeObsoleteSamples`: a sample with no event for the whole window restarts.
    fn purge(&mut self, now: i64) {
        let expire = i64::from(self.window.samples) * self.window.size_ms;
        for sample in &mut self.samples {
            if now - sample.last_event_ms >= expire {
                *sample = Sample::new(now);
            }
        }
    }

    /// Kafka's `Rate.windowSize`: the time the samples cover, at least `samples - 1` windows.
    pub fn window_size_ms(&mut self, now: i64) -> i64 {
        self.purge(now);
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now);
        let mut elapsed = now - oldest;
        let full = elapsed / self.window.size_ms;
        let min_full = i64::from(self.window.samples) - 1;
        if full < min_full {
            elapsed += (min_full - full) * self.window.size_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now`.
    pub fn measure(&mut self, now: i64) -> f64 {
        self.purge(now);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (self.window_size_ms(now) as f64 / 1000.0)
    }

    /// Records `value` and checks it against `bound` per second, as Kafka's sensor does: the
    /// throttle in ms (`QuotaUtils.throttleTime`: how long until the rate is back at the bound),
    /// 0 within it.
    pub fn record_and_throttle(&mut self, value: f64, bound: f64, now: i64) -> i64 {
        self.record(value, now);
        let rate = self.measure(now);
        if rate <= bound {
            return 0;
        }
        let window = self.window_size_ms(now) as f64;
        ((rate - bound) / bound * window).round() as i64
    }

    /// When the sensor last recorded anything.
    pub fn last_event_ms(&self) -> Option<i64> {
        self.samples.iter().map(|s| s.last_event_ms).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_sensor_spreads_a_burst_over_ten_windows() {
        let mut rate = Rate::new(Window::default());
        // 1,100 bytes at once against 100 B/s: read as 110 B/s over 10 s, 1 s of throttle.
        assert_eq!(rate.record_and_throttle(1100.0, 100.0, 0), 1000);
        assert_eq!(rate.window_size_ms(0), 10_000);
    }

    #[test]
    fn a_throttle_within_the_padded_window_is_paid_again_until_the_burst_expires() {
        let mut rate = Rate::new(Window::default());
        assert_eq!(rate.record_and_throttle(2000.0, 100.0, 0), 10_000);
        // Ten seconds later the burst still fills the ten windows the rate is read over.
        assert_eq!(rate.record_and_throttle(0.0, 100.0, 10_000), 10_000);
        // Its sample expires after eleven: within the quota again.
        assert_eq!(rate.record_and_throttle(100.0, 100.0, 11_000), 0);
    }

    #[test]
    fn samples_older_than_the_window_are_forgotten() {
        let mut rate = Rate::new(Window::default());
        rate.record(5000.0, 0);
        assert!(rate.measure(11_000) == 0.0);
        assert_eq!(rate.record_and_throttle(50.0, 100.0, 11_000), 0);
    }

    #[test]
    fn a_steady_rate_is_read_over_the_last_ten_windows_with_the_current_one_whole() {
        let mut rate = Rate::new(Window::default());
        for second in 0..30 {
            rate.record(100.0, second * 1000);
        }
        // The sample of 18 s has expired; 19 s to 29 s hold 1,100 over 10 s.
        assert!((rate.measure(29_000) - 110.0).abs() < 1e-9);
    }
}
