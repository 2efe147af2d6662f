//! Kafka's client quotas, enforced: `producer_byte_rate` on Produce, `consumer_byte_rate` on
//! Fetch and `request_percentage` on the time handlers spend, each resolved per connection's
//! (user principal, client-id) with Kafka's precedence of quota entities (`DefaultQuotaCallback`):
//!
//! 1. user and client-id, 2. user and the default client-id, 3. user, 4. the default user and
//!    client-id, 5. the default user and the default client-id, 6. the default user,
//!    7. client-id, 8. the default client-id.
//!
//! The first level with a quota of the key decides both the limit and whom the usage is
//! counted for: a user-level quota is shared by every client-id of that user, a client-id-level
//! one by every user of that client-id (Kafka's metric tags). Usage is a [`Rate`] over
//! `quota.window.num` windows of `quota.window.size.seconds`; a request that takes it over the
//! limit gets the throttle Kafka computes, which the handler puts in the response's
//! `throttle_time_ms` and the connection honours by reading nothing more for that long (Kafka
//! mutes the channel). `connection_creation_rate` counts each address's new connections the
//! same way; one over it is closed once its throttle has passed (Kafka's `ConnectionQuotas`).
//! No quota, no bookkeeping.

pub mod rate;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kcoord_controller::client_quotas::{
    CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};
use kcoord_metadata::image::client_quotas::{CLIENT_ID, IP, USER};
use kcoord_metadata::ClientQuotasImage;

pub use rate::{Rate, Window};

/// The quota types a request can be throttled under, indexed as
/// [`crate::metrics::QUOTA_TYPES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaType {
    Produce = 0,
    Fetch = 1,
    Request = 2,
}

impl QuotaType {
    /// The quota key that limits this type.
    pub fn key(self) -> &'static str {
        match self {
            QuotaType::Produce => PRODUCER_BYTE_RATE,
            QuotaType::Fetch => CONSUMER_BYTE_RATE,
            QuotaType::Request => REQUEST_PERCENTAGE,
        }
    }
}

/// Kafka's `request_percentage` is a percentage of one handler thread: a second of handler
/// time is 100.
pub const NANOS_TO_PERCENTAGE: f64 = 100.0 / 1e9;

/// Sensors unused this long are dropped (Kafka's `INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS`).
const SENSOR_EXPIRY_MS: i64 = 3_600_000;

/// Whom usage is counted for: Kafka's (user, client-id) metric tags, "" where the deciding
/// quota does not name that part.
type Tags = (String, String);

/// The sensors of every (quota type, tags) that has recorded usage.
#[derive(Debug)]
pub struct ClientQuotas {
    window: Window,
    sensors: Mutex<Sensors>,
}

#[derive(Debug, Default)]
struct Sensors {
    by_tags: HashMap<(QuotaType, Tags), Rate>,
    /// New connections per address with a `connection_creation_rate` (Kafka's
    /// `ConnectionQuotas` IP sensors).
    by_ip: HashMap<std::net::IpAddr, Rate>,
    /// When sensors were last swept for expiry.
    swept_ms: i64,
}

impl ClientQuotas {
    pub fn new(window: Window) -> ClientQuotas {
        ClientQuotas {
            window,
            sensors: Mutex::new(Sensors::default()),
        }
    }

    /// Records `value` (bytes, or a percentage for [`QuotaType::Request`]) for `user` and
    /// `client_id` at `now_ms` and returns the throttle in ms, 0 when within the quota or when
    /// no quota applies. A request quota's throttle is at most one window, as Kafka's
    /// `ClientRequestQuotaManager` bounds it.
    pub fn record(
        &self,
        image: &ClientQuotasImage,
        quota: QuotaType,
        (user, client_id): (&str, &str),
        value: f64,
        now_ms: i64,
    ) -> u32 {
        let throttle = self
            .with_sensor(image, quota, (user, client_id), now_ms, |rate, bound| {
                rate.record_and_throttle(value, bound, now_ms)
            })
            .unwrap_or(0);
        let throttle = if quota == QuotaType::Request {
            throttle.min(self.window.size_ms)
        } else {
            throttle
        };
        u32::try_from(throttle.max(0)).unwrap_or(u32::MAX)
    }

    /// Takes back `value` recorded at `now_ms`: a throttled Fetch answers without its records,
    /// so Kafka's `unrecordQuotaSensor` counts them as not sent.
    pub fn unrecord(
        &self,
        image: &ClientQuotasImage,
        quota: QuotaType,
        (user, client_id): (&str, &str),
        value: f64,
        now_ms: i64,
    ) {
        self.with_sensor(image, quota, (user, client_id), now_ms, |rate, _| {
            rate.record(-value, now_ms)
        });
    }

    /// Runs `f` on the sensor the quota of `quota` for the client counts in, with the quota's
    /// limit; `None` when no quota applies.
    fn with_sensor<R>(
        &self,
        image: &ClientQuotasImage,
        quota: QuotaType,
        (user, client_id): (&str, &str),
        now_ms: i64,
        f: impl FnOnce(&mut Rate, f64) -> R,
    ) -> Option<R> {
        if image.is_empty() {
            return None;
        }
        let (tags, bound) = resolve(image, quota.key(), user, client_id)?;
        let mut sensors = self.sensors.lock().unwrap_or_else(PoisonError::into_inner);
        sensors.sweep(now_ms);
        let rate = sensors
            .by_tags
            .entry((quota, tags))
            .or_insert_with(|| Rate::new(self.window));
        Some(f(rate, bound))
    }
}

impl ClientQuotas {
    /// Counts a connection from `ip` at `now_ms` against its `connection_creation_rate` (the
    /// address's own, else the default ip's) and returns how long Kafka's `ConnectionQuotas`
    /// would throttle it, at most one window; 0 when within the rate or without a quota. A
    /// throttled connection is still counted, as in Kafka.
    pub fn connection_throttle(
        &self,
        image: &ClientQuotasImage,
        ip: std::net::IpAddr,
        now_ms: i64,
    ) -> u32 {
        if image.is_empty() {
            return 0;
        }
        let ip = ip.to_canonical();
        let name = ip.to_string();
        let limit = image
            .value(&[(IP, Some(&name))], CONNECTION_CREATION_RATE)
            .or_else(|| image.value(&[(IP, None)], CONNECTION_CREATION_RATE));
        let Some(limit) = limit else {
            return 0;
        };
        let mut sensors = self.sensors.lock().unwrap_or_else(PoisonError::into_inner);
        sensors.sweep(now_ms);
        let rate = sensors
            .by_ip
            .entry(ip)
            .or_insert_with(|| Rate::new(self.window));
        let throttle = rate
            .record_and_throttle(1.0, limit, now_ms)
            .clamp(0, self.window.size_ms);
        u32::try_from(throttle).unwrap_or(u32::MAX)
    }
}

impl Sensors {
    /// Drops sensors idle for an hour, at most once a minute.
    fn sweep(&mut self, now_ms: i64) {
        if now_ms - self.swept_ms < 60_000 {
            return;
        }
        self.swept_ms = now_ms;
        self.by_tags.retain(|_, rate| {
            rate.last_event_ms()
                .is_some_and(|t| now_ms - t < SENSOR_EXPIRY_MS)
        });
    }
}

/// Kafka's precedence: the tags usage is counted under and the limit of `key` for a client
/// `(user, client_id)`, or `None` when no quota of `key` applies to it.
pub fn resolve(
    image: &ClientQuotasImage,
    key: &str,
    user: &str,
    client_id: &str,
) -> Option<(Tags, f64)> {
    let (u, c) = (Some(user), Some(client_id));
    let both =
        |user_name, client_name| image.value(&[(CLIENT_ID, client_name), (USER, user_name)], key);
    let tagged = |user_tag: &str, client_tag: &str| (user_tag.to_owned(), client_tag.to_owned());
    let levels = [
        (both(u, c), tagged(user, client_id)),
        (both(u, None), tagged(user, client_id)),
        (image.value(&[(USER, u)], key), tagged(user, "")),
        (both(None, c), tagged(user, client_id)),
        (both(None, None), tagged(user, client_id)),
        (image.value(&[(USER, None)], key), tagged(user, "")),
        (image.value(&[(CLIENT_ID, c)], key), tagged("", client_id)),
        (
            image.value(&[(CLIENT_ID, None)], key),
            tagged("", client_id),
        ),
    ];
    levels
        .into_iter()
        .find_map(|(limit, tags)| limit.map(|limit| (tags, limit)))
}

#[cfg(test)]
mod tests;
