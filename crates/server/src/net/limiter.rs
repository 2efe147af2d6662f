//! Connection quotas across all listeners, as Kafka's `ConnectionQuotas`:
//!
//! - `max.connections` counts every open connection. A listener at it, or at its own
//!   `listener.name.<l>.max.connections`, stops accepting until one closes (new connections wait
//!   in the kernel's backlog, as Kafka's acceptor blocks).
//! - A protected listener (a controller listener on a node with broker listeners; Kafka protects
//!   its inter-broker listener) is held only to its own limit. When its connections push the
//!   total over `max.connections`, the least recently active connection of a broker listener is
//!   closed, so a flood of idle clients cannot keep brokers from registering and heartbeating.
//! - `max.connections.per.ip` (and its overrides) closes a new connection from an address that
//!   already has that many, across listeners, right after accepting it.
//! - `max.connection.creation.rate` delays accepting on a listener whose rate is exceeded.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::info;

use super::activity::Activity;
use crate::config::ConnectionSettings;
use crate::support::logging::{log_per_peer, LogLimiter, LOG_LIMITER_CAPACITY, PEER_LINE_INTERVAL};

/// The longest delay the creation rate imposes on one connection (Kafka bounds a connection
/// throttle by its quota window, `quota.window.size.seconds`, 1 s by default).
const MAX_THROTTLE: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub(crate) struct ConnectionQuotas {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    max_connections: usize,
    per_ip_default: usize,
    per_ip_overrides: HashMap<IpAddr, usize>,
    /// In the order of `listeners`.
    listeners: Vec<ListenerQuota>,
    /// `max.connection.creation.rate` across the listeners that are not protected.
    broker_rate: Option<Mutex<CreationRate>>,
    counts: Mutex<Counts>,
    /// Signalled whenever a connection closes: a listener waiting for room looks again.
    freed: Notify,
    /// Where every connection's activity clock starts, so they compare.
    epoch: Instant,
    next_id: AtomicU64,
    /// Lines about a listener (waiting for room, throttled), per listener index and kind.
    lines: LogLimiter<(usize, &'static str)>,
}

#[derive(Debug)]
struct ListenerQuota {
    name: String,
    max_connections: usize,
    protected: bool,
    rate: Option<Mutex<CreationRate>>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
    per_listener: Vec<usize>,
    open: HashMap<u64, Open>,
    /// Connections asked to close to make room, not gone yet.
    closing: usize,
}

#[derive(Debug)]
struct Open {
    listener: usize,
    peer: IpAddr,
    activity: Arc<Activity>,
}

/// A connection counted, and those asked to close to make room for it.
#[derive(Debug)]
struct Admitted {
    id: u64,
    activity: Arc<Activity>,
    evicted: Vec<(IpAddr, usize)>,
}

/// Why an accepted connection is closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `max.connections.per.ip` (or its override for this address) reached.
    TooManyFromIp { max: usize },
}

/// Which limit keeps a listener from accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    Listener,
    Broker,
}

/// One open connection; dropping it frees its slot.
#[derive(Debug)]
pub(crate) struct ConnectionPermit {
    quotas: Arc<Inner>,
    id: u64,
    activity: Arc<Activity>,
}

fn count(limit: i32) -> usize {
    usize::try_from(limit).unwrap_or(0)
}

impl ConnectionQuotas {
    /// `overrides` are `max.connections.per.ip.overrides` with host names resolved.
    pub(crate) fn new(settings: &ConnectionSettings, overrides: HashMap<IpAddr, usize>) -> Self {
        let epoch = Instant::now();
        let listeners = settings
            .listeners
            .iter()
            .map(|l| ListenerQuota {
                name: l.name.clone(),
                max_connections: count(l.max_connections),
                protected: l.protected,
                rate: CreationRate::new(l.max_connection_creation_rate).map(Mutex::new),
            })
            .collect::<Vec<_>>();
        let counts = Counts {
            per_listener: vec![0; listeners.len()],
            ..Counts::default()
        };
        ConnectionQuotas {
            inner: Arc::new(Inner {
                max_connections: count(settings.max_connections),
                per_ip_default: count(settings.max_connections_per_ip),
                per_ip_overrides: overrides
                    .into_iter()
                    .map(|(ip, max)| (ip.to_canonical(), max))
                    .collect(),
                listeners,
                broker_rate: CreationRate::new(settings.max_connection_creation_rate)
                    .map(Mutex::new),
                counts: Mutex::new(counts),
                freed: Notify::new(),
                epoch,
                next_id: AtomicU64::new(0),
                lines: LogLimiter::new(PEER_LINE_INTERVAL, LOG_LIMITER_CAPACITY),
            }),
        }
    }

    /// Resolves once `listener` may take one more connection (it may be gone again by the time
    /// one is accepted; [`ConnectionQuotas::admit`] waits again then).
    pub(crate) async fn wait_for_room(&self, listener: usize) {
        loop {
            // Created before looking, so a close in between still wakes us.
            let freed = self.inner.freed.notified();
            let room = self.inner.room(&self.inner.lock(), listener);
            match room {
                Ok(()) => return,
                Err(full) => self.inner.say_full(listener, full),
            }
            freed.await;
        }
    }

    /// How long to hold a connection just accepted on `listener` before admitting it, so that
    /// the listener's (and, unless it is protected, the broker-wide) creation rate holds.
    pub(crate) fn creation_delay(&self, listener: usize, now: Instant) -> Duration {
        let inner = &self.inner;
        let Some(quota) = inner.listeners.get(listener) else {
            return Duration::ZERO;
        };
        let since = now.saturating_duration_since(inner.epoch);
        let mut delay = quota.rate.as_ref().map_or(Duration::ZERO, |r| {
            r.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .delay(since)
        });
        if !quota.protected {
            if let Some(rate) = &inner.broker_rate {
                let broker = rate
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .delay(since);
                delay = delay.max(broker);
            }
        }
        if !delay.is_zero()
            && inner
                .lines
                .check((listener, "throttled"), now.into_std())
                .is_some()
        {
            info!(
                listener = %quota.name, delay_ms = delay.as_millis() as u64,
                "max.connection.creation.rate reached; new connections are accepted more slowly"
            );
        }
        delay
    }

    /// Counts a connection accepted on `listener` from `peer`, once there is room for it, or
    /// refuses it when its address has too many already.
    pub(crate) async fn admit(
        &self,
        listener: usize,
        peer: IpAddr,
    ) -> Result<ConnectionPermit, Refusal> {
        let peer = peer.to_canonical();
        loop {
            let freed = self.inner.freed.notified();
            match self.inner.try_admit(listener, peer) {
                Ok(Ok(Admitted {
                    id,
                    activity,
                    evicted,
                })) => {
                    self.inner.say_evicted(&evicted, listener);
                    return Ok(ConnectionPermit {
                        quotas: Arc::clone(&self.inner),
                        id,
                        activity,
                    });
                }
                Ok(Err(refusal)) => return Err(refusal),
                Err(full) => self.inner.say_full(listener, full),
            }
            freed.await;
        }
    }

    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.inner.lock().total
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        // Counts are updated in one step each; a panic cannot leave them half-done.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn room(&self, counts: &Counts, listener: usize) -> Result<(), Full> {
        let Some(quota) = self.listeners.get(listener) else {
            return Err(Full::Listener);
        };
        if counts.per_listener[listener] >= quota.max_connections {
            Err(Full::Listener)
        } else if quota.protected || counts.total < self.max_connections {
            Ok(())
        } else {
            Err(Full::Broker)
        }
    }

    /// Logged after the counts' lock is released, as every line here.
    fn say_full(&self, listener: usize, full: Full) {
        let kind = match full {
            Full::Listener => "listener full",
            Full::Broker => "broker full",
        };
        if self
            .lines
            .check((listener, kind), Instant::now().into_std())
            .is_none()
        {
            return;
        }
        let name = self
            .listeners
            .get(listener)
            .map_or("?", |l| l.name.as_str());
        match full {
            Full::Listener => {
                info!(
                listener = name,
                max_connections = self.listeners.get(listener).map_or(0, |l| l.max_connections),
                "listener.name.{}.max.connections reached; new connections wait for a free slot",
                name.to_ascii_lowercase()
            )
            }
            Full::Broker => info!(
                listener = name,
                max_connections = self.max_connections,
                "max.connections reached; new connections wait for a free slot"
            ),
        }
    }

    fn max_for(&self, peer: IpAddr) -> usize {
        self.per_ip_overrides
            .get(&peer)
            .copied()
            .unwrap_or(self.per_ip_default)
    }

    /// `Err(full)`: no room yet.
    fn try_admit(&self, listener: usize, peer: IpAddr) -> Result<Result<Admitted, Refusal>, Full> {
        let mut counts = self.lock();
        self.room(&counts, listener)?;
        let max = self.max_for(peer);
        let from_peer = counts.per_ip.get(&peer).copied().unwrap_or(0);
        if from_peer >= max {
            return Ok(Err(Refusal::TooManyFromIp { max }));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new(self.epoch, Instant::now()));
        counts.total += 1;
        counts.per_listener[listener] += 1;
        *counts.per_ip.entry(peer).or_insert(0) += 1;
        counts.open.insert(
            id,
            Open {
                listener,
                peer,
                activity: Arc::clone(&activity),
            },
        );
        let evicted = if self.listeners[listener].protected {
            self.make_room(&mut counts)
        } else {
            Vec::new()
        };
        Ok(Ok(Admitted {
            id,
            activity,
            evicted,
        }))
    }

    /// Asks the least recently active connections of unprotected listeners to close until the
    /// total, without those already closing, is back within `max.connections`; returns their
    /// peers and listeners.
    fn make_room(&self, counts: &mut Counts) -> Vec<(IpAddr, usize)> {
        let mut evicted = Vec::new();
        while counts.total.saturating_sub(counts.closing) > self.max_connections {
            let lru = counts
                .open
                .values()
                .filter(|o| !self.listeners[o.listener].protected && !o.activity.is_evicted())
                .min_by_key(|o| o.activity.last_active_micros());
            let Some(victim) = lru else {
                break;
            };
            victim.activity.evict();
            evicted.push((victim.peer, victim.listener));
            counts.closing += 1;
        }
        evicted
    }

    fn say_evicted(&self, evicted: &[(IpAddr, usize)], protected: usize) {
        for &(peer, victim) in evicted {
            log_per_peer!(
                info,
                peer,
                "evicted",
                %peer, listener = %self.listeners[victim].name,
                protected_listener = %self.listeners[protected].name,
                max_connections = self.max_connections,
                "max.connections reached; closing the least recently active connection so the protected listener keeps serving"
            );
        }
    }

    fn release(&self, id: u64) {
        let mut counts = self.lock();
        if let Some(open) = counts.open.remove(&id) {
            counts.total = counts.total.saturating_sub(1);
            if let Some(n) = counts.per_listener.get_mut(open.listener) {
                *n = n.saturating_sub(1);
            }
            if let Some(n) = counts.per_ip.get_mut(&open.peer) {
                *n -= 1;
                if *n == 0 {
                    counts.per_ip.remove(&open.peer);
                }
            }
            if open.activity.is_evicted() {
                counts.closing = counts.closing.saturating_sub(1);
            }
        }
        drop(counts);
        self.freed.notify_waiters();
    }
}

impl ConnectionPermit {
    pub(crate) fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.quotas.release(self.id);
    }
}

/// A creation rate as a token bucket that holds one second's worth of connections (the
/// generic cell rate algorithm: `next` is when the bucket would be empty again). Kafka measures
/// the rate over `quota.window.num` samples of `quota.window.size.seconds` instead; both let a
/// burst of about one second's worth through and then hold the average to the rate.
#[derive(Debug)]
struct CreationRate {
    /// Time between two connections at the rate; `None` for a rate of 0.
    interval: Option<Duration>,
    /// How far ahead of `next` a connection may still go at once (the burst).
    tolerance: Duration,
    next: Duration,
}

impl CreationRate {
    /// `None` for Kafka's default, `i32::MAX`: no limit.
    fn new(per_second: i32) -> Option<Self> {
        if per_second == i32::MAX {
            return None;
        }
        let per_second = u32::try_from(per_second).unwrap_or(0);
        let interval = (per_second > 0).then(|| Duration::from_secs(1) / per_second);
        Some(CreationRate {
            interval,
            tolerance: interval.map_or(Duration::ZERO, |i| Duration::from_secs(1) - i),
            next: Duration::ZERO,
        })
    }

    /// How long a connection arriving at `now` (since the epoch) waits; books its slot.
    fn delay(&mut self, now: Duration) -> Duration {
        let Some(interval) = self.interval else {
            // A rate of 0: every connection waits as long as a throttle may last.
            return MAX_THROTTLE;
        };
        let next = self.next.max(now);
        let wait = next
            .saturating_sub(self.tolerance)
            .saturating_sub(now)
            .min(MAX_THROTTLE);
        // A capped wait must not leave debt that delays later connections further.
        self.next = next.min(now + wait + self.tolerance) + interval;
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerLimits;

    const BROKER: usize = 0;
    const CONTROLLER: usize = 1;

    fn settings(lines: &str) -> ConnectionSettings {
        crate::Config::parse(
            "test",
            &format!("node.id=1\nlisteners=PLAINTEXT://:0,CONTROLLER://:0\n{lines}"),
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .connections
    }

    fn quotas(lines: &str) -> ConnectionQuotas {
        ConnectionQuotas::new(&settings(lines), HashMap::new())
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// `Some(result)` if `admit` finished without waiting.
    fn admit_now(
        q: &ConnectionQuotas,
        listener: usize,
        peer: &str,
    ) -> Option<Result<ConnectionPermit, Refusal>> {
        use std::future::Future;
        let mut future = std::pin::pin!(q.admit(listener, ip(peer)));
        let waker = std::task::Waker::noop();
        match future
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
        {
            std::task::Poll::Ready(result) => Some(result),
            std::task::Poll::Pending => None,
        }
    }

    fn admitted(q: &ConnectionQuotas, listener: usize, peer: &str) -> ConnectionPermit {
        match admit_now(q, listener, peer) {
            Some(Ok(permit)) => permit,
            other => panic!("expected a permit, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn max_connections_makes_a_broker_listener_wait_until_one_closes() {
        let q = quotas("max.connections=2\n");
        let a = admitted(&q, BROKER, "10.0.0.1");
        let _b = admitted(&q, BROKER, "10.0.0.2");
        assert!(admit_now(&q, BROKER, "10.0.0.3").is_none(), "waits");
        let waiting = tokio::spawn({
            let q = q.clone();
            async move { q.admit(BROKER, ip("10.0.0.3")).await.map(|_| ()) }
        });
        drop(a);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("a close makes room")
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn per_ip_limits_and_overrides_refuse_at_once_across_listeners() {
        let q = ConnectionQuotas::new(
            &settings("max.connections.per.ip=1\nmax.connections.per.ip.overrides=10.0.0.9:2\n"),
            HashMap::from([(ip("10.0.0.9"), 2)]),
        );
        let _a = admitted(&q, BROKER, "10.0.0.1");
        assert!(matches!(
            admit_now(&q, CONTROLLER, "10.0.0.1"),
            Some(Err(Refusal::TooManyFromIp { max: 1 }))
        ));
        let _b = admitted(&q, BROKER, "10.0.0.9");
        // An IPv4 client of a dual-stack listener is the same address.
        let _c = admitted(&q, CONTROLLER, "::ffff:10.0.0.9");
        assert!(matches!(
            admit_now(&q, BROKER, "10.0.0.9"),
            Some(Err(Refusal::TooManyFromIp { max: 2 }))
        ));
        assert_eq!(q.open(), 3, "refused connections are not counted");
    }

    #[tokio::test]
    async fn a_listener_limit_holds_only_that_listener() {
        let q = quotas("listener.name.plaintext.max.connections=1\n");
        let _a = admitted(&q, BROKER, "10.0.0.1");
        assert!(admit_now(&q, BROKER, "10.0.0.2").is_none());
        let _b = admitted(&q, CONTROLLER, "10.0.0.2");
    }

    #[tokio::test]
    async fn the_protected_listener_gets_in_and_the_least_recently_active_broker_connection_goes() {
        let q = quotas("max.connections=3\n");
        // Activity is timed in microseconds: a pause of 2 ms orders the connections.
        let pause = || std::thread::sleep(Duration::from_millis(2));
        let old = admitted(&q, BROKER, "10.0.0.1");
        pause();
        let newer = admitted(&q, BROKER, "10.0.0.2");
        pause();
        let newest = admitted(&q, BROKER, "10.0.0.3");
        pause();
        // The oldest one was active most recently of all.
        old.activity().touch(Instant::now());
        assert!(admit_now(&q, BROKER, "10.0.0.4").is_none());
        let broker = admitted(&q, CONTROLLER, "10.0.0.5");
        assert!(newer.activity().is_evicted(), "least recently active");
        assert!(!old.activity().is_evicted() && !newest.activity().is_evicted());
        assert!(!broker.activity().is_evicted());
        // The evicted one still holds its slot until it is gone; one more broker connection
        // evicts another.
        let _broker2 = admitted(&q, CONTROLLER, "10.0.0.6");
        assert!(old.activity().is_evicted() ^ newest.activity().is_evicted());
        drop(newer);
        assert_eq!(q.open(), 4);
        // Broker listeners still wait: the total is over the limit.
        assert!(admit_now(&q, BROKER, "10.0.0.4").is_none());
    }

    #[test]
    fn a_controller_only_node_protects_nothing() {
        let settings = ConnectionSettings {
            max_connections: 1,
            listeners: vec![ListenerLimits {
                name: "CONTROLLER".to_owned(),
                max_connections: 1,
                max_connection_creation_rate: i32::MAX,
                protected: false,
            }],
            ..ConnectionSettings::default()
        };
        let q = ConnectionQuotas::new(&settings, HashMap::new());
        let _a = admitted(&q, 0, "10.0.0.1");
        assert!(admit_now(&q, 0, "10.0.0.2").is_none());
    }

    #[test]
    fn the_creation_rate_lets_a_second_of_burst_through_then_spaces_connections() {
        let mut rate = CreationRate::new(4).unwrap();
        let t0 = Duration::from_secs(100);
        let delays: Vec<Duration> = (0..6).map(|_| rate.delay(t0)).collect();
        assert_eq!(&delays[..4], &[Duration::ZERO; 4]);
        assert_eq!(delays[4], Duration::from_millis(250));
        assert_eq!(delays[5], Duration::from_millis(500));
        // After a quiet second the burst is back.
        let t1 = t0 + Duration::from_secs(3);
        assert_eq!(rate.delay(t1), Duration::ZERO);
        // Waits never exceed the cap, and a capped wait leaves no debt behind it.
        let mut slow = CreationRate::new(1).unwrap();
        assert_eq!(slow.delay(t0), Duration::ZERO);
        for _ in 0..10 {
            assert!(slow.delay(t0) <= MAX_THROTTLE);
        }
        assert_eq!(slow.delay(t0 + MAX_THROTTLE * 3), Duration::ZERO);
        assert_eq!(CreationRate::new(0).unwrap().delay(t0), MAX_THROTTLE);
        assert!(CreationRate::new(i32::MAX).is_none());
    }

    #[tokio::test]
    async fn the_protected_listener_is_not_held_to_the_broker_wide_rate() {
        let q = quotas("max.connection.creation.rate=1\n");
        let now = Instant::now();
        assert_eq!(q.creation_delay(BROKER, now), Duration::ZERO);
        assert!(q.creation_delay(BROKER, now) > Duration::ZERO);
        // The controller listener's own rate defaults to the broker-wide value, counted apart.
        assert_eq!(q.creation_delay(CONTROLLER, now), Duration::ZERO);
        assert!(q.creation_delay(CONTROLLER, now) > Duration::ZERO);
    }
}
