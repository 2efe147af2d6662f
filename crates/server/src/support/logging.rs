//! Logs go to stderr (stdout carries only the startup line), filtered by `RUST_LOG` when set,
//! else by `log.level`; and the helpers that keep what peers can trigger from flooding them
//! ([`LogLimiter`], [`log_per_peer!`], [`Capped`]).
//!
//! Lines are handed to a writer thread through a bounded queue and never written by the thread
//! that logs them: a slow or stalled stderr (a full pipe nobody reads, a paused terminal) must
//! not stall a request that logs while it holds a coordinator shard's lock. When the queue is
//! full, lines are dropped rather than waited for.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::io::IsTerminal;
use std::net::IpAddr;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// Lines queued for the writer thread before new ones are dropped.
const QUEUED_LINES: usize = 64 * 1024;

/// Installs the subscriber. Keep the returned guard until the process ends: dropping it flushes
/// the queued lines and stops the writer thread.
pub fn init(log_level: &str) -> Option<WorkerGuard> {
    let configured =
        || crate::config::log_filter(log_level).unwrap_or_else(|_| EnvFilter::new("info"));
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => crate::config::log_filter(
            &crate::config::tidy_directives(&directives),
        )
        .unwrap_or_else(|e| {
            eprintln!("warning: ignoring RUST_LOG={directives:?}: {e}");
            configured()
        }),
        _ => configured(),
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("kcoord-log-writer")
        .finish(std::io::stderr());
    // Another subscriber may already be installed (tests); keep it.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .ok()
        .map(|()| guard)
}

// ---- Rate-limited lines -------------------------------------------------------------------
//
// Anything a remote peer can trigger at will (a bad frame, a reconnect loop) must not be able to
// write without limit to the log: each such line goes through a [`LogLimiter`], which lets one
// line per key through per interval and counts the rest, reported as `suppressed` on the next
// line of the same key.

/// How often one peer may log one kind of connection-level line (see [`log_per_peer!`]).
pub(crate) const PEER_LINE_INTERVAL: Duration = Duration::from_secs(60);
/// Keys a [`LogLimiter`] remembers; past this, keys it cannot track share one window.
pub(crate) const LOG_LIMITER_CAPACITY: usize = 4096;
/// Characters of a client-supplied string (client id, names) written to a log line.
pub(crate) const MAX_LOGGED_CHARS: usize = 128;

/// Connection-level lines (bad frames, refused or closed connections), per peer IP and kind.
pub(crate) static PEER_LINES: LazyLock<LogLimiter<(IpAddr, &'static str)>> =
    LazyLock::new(|| LogLimiter::new(PEER_LINE_INTERVAL, LOG_LIMITER_CAPACITY));

/// Panics, per place in the code: see [`panic_hook`].
static PANIC_LINES: LazyLock<LogLimiter<String>> =
    LazyLock::new(|| LogLimiter::new(PEER_LINE_INTERVAL, LOG_LIMITER_CAPACITY));

/// The daemon's panic hook. Panics that the daemon contains (in a plugin, in a request
/// handler) are still reported by the hook, and a client or plugin can cause them at will; so
/// instead of the default hook's synchronous write of the message (and backtrace) to stderr,
/// each is an ERROR line through the log writer, at most one a minute per place in the code,
/// with how many were left out.
pub fn panic_hook() -> Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync + 'static> {
    Box::new(|info| {
        let location = info
            .location()
            .map_or_else(|| "unknown".to_owned(), ToString::to_string);
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let thread = std::thread::current();
        if let Some(suppressed) = PANIC_LINES.check(location.clone(), Instant::now()) {
            tracing::error!(
                %location,
                thread = thread.name().unwrap_or("unnamed"),
                message = %Capped(&message),
                suppressed,
                "panic"
            );
        }
    })
}

/// At most one line per key per interval, with the number of lines left out since the last one.
#[derive(Debug)]
pub(crate) struct LogLimiter<K> {
    interval: Duration,
    capacity: usize,
    state: Mutex<Windows<K>>,
}

#[derive(Debug)]
struct Windows<K> {
    by_key: HashMap<K, Window>,
    /// Shared by every key that found the table full of live windows, so a flood of distinct
    /// keys (peers) is bounded too.
    overflow: Option<Window>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    opened: Instant,
    suppressed: u64,
}

impl Window {
    fn open(now: Instant) -> Self {
        Window {
            opened: now,
            suppressed: 0,
        }
    }

    /// `Some(suppressed)` and a new window once the current one is over; else counts the line.
    fn pass(&mut self, now: Instant, interval: Duration) -> Option<u64> {
        if now.saturating_duration_since(self.opened) < interval {
            self.suppressed += 1;
            return None;
        }
        let suppressed = self.suppressed;
        *self = Window::open(now);
        Some(suppressed)
    }
}

impl<K: Hash + Eq> LogLimiter<K> {
    pub(crate) fn new(interval: Duration, capacity: usize) -> Self {
        LogLimiter {
            interval,
            capacity: capacity.max(1),
            state: Mutex::new(Windows {
                by_key: HashMap::new(),
                overflow: None,
            }),
        }
    }

    /// Whether a line for `key` may be written at `now`: `Some(n)` with the `n` lines of that key
    /// suppressed since its last one, `None` to leave this one out (it is counted).
    pub(crate) fn check(&self, key: K, now: Instant) -> Option<u64> {
        // A poisoned table only lost a count; one line too many is harmless.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let interval = self.interval;
        if let Some(window) = state.by_key.get_mut(&key) {
            return window.pass(now, interval);
        }
        if state.by_key.len() >= self.capacity {
            // A window that is over has nothing to hold back; its key starts afresh (a count it
            // had is lost, which only happens once this many keys were heard from).
            state
                .by_key
                .retain(|_, w| now.saturating_duration_since(w.opened) < interval);
        }
        if state.by_key.len() < self.capacity {
            state.by_key.insert(key, Window::open(now));
            return Some(0);
        }
        match &mut state.overflow {
            Some(window) => window.pass(now, interval),
            None => {
                state.overflow = Some(Window::open(now));
                Some(0)
            }
        }
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_key
            .len()
    }
}

/// The peer as [`PEER_LINES`] keys it (a socket address or an IP): an IPv4 client of a
/// dual-stack listener counts as its IPv4 address.
pub(crate) fn peer_ip(peer: impl Into<PeerIp>) -> IpAddr {
    peer.into().0.to_canonical()
}

/// What [`peer_ip`] takes.
pub(crate) struct PeerIp(IpAddr);

impl From<IpAddr> for PeerIp {
    fn from(ip: IpAddr) -> Self {
        PeerIp(ip)
    }
}

impl From<std::net::SocketAddr> for PeerIp {
    fn from(addr: std::net::SocketAddr) -> Self {
        PeerIp(addr.ip())
    }
}

/// Logs at `$level` (a `tracing` macro name) at most once per [`PEER_LINE_INTERVAL`] per peer IP
/// and `$kind`, with a `suppressed` field counting the lines left out since the previous one:
/// `log_per_peer!(warn, peer, "invalid request size", %peer, error = %e, "closing connection")`.
macro_rules! log_per_peer {
    ($level:ident, $peer:expr, $kind:expr, $($rest:tt)+) => {
        if let Some(suppressed) = $crate::support::logging::PEER_LINES.check(
            ($crate::support::logging::peer_ip($peer), $kind),
            std::time::Instant::now(),
        ) {
            tracing::$level!(suppressed, $($rest)+);
        }
    };
}
pub(crate) use log_per_peer;

/// Groups whose lines [`group_lines`] tracks one by one; past this, the rest share one window.
const GROUP_LINES_CAPACITY: usize = 1024;

/// Lines that requests can trigger about a group without naming a peer's fault (a plugin
/// failing for it, a heartbeat the shard could not handle), one limiter per server, keyed by
/// kind and group: see [`log_per_group!`]. Requests naming many groups write at most
/// [`GROUP_LINES_CAPACITY`] such lines (and one more for all the others) a minute.
pub(crate) fn group_lines() -> LogLimiter<(&'static str, String)> {
    LogLimiter::new(PEER_LINE_INTERVAL, GROUP_LINES_CAPACITY)
}

/// Logs at `$level` at most once per [`PEER_LINE_INTERVAL`] per `$kind` (a `&'static str`) and
/// group of the [`LogLimiter`] `$lines` (a server's `group_lines`), with a `suppressed` field
/// counting the lines left out since the previous one:
/// `log_per_group!(warn, ctx.server.group_lines, "describe", &group, group = %group, "...")`.
macro_rules! log_per_group {
    ($level:ident, $lines:expr, $kind:expr, $group:expr, $($rest:tt)+) => {
        if let Some(suppressed) = $lines.check(
            ($kind, $crate::support::logging::Capped($group).to_string()),
            std::time::Instant::now(),
        ) {
            tracing::$level!(suppressed, $($rest)+);
        }
    };
}
pub(crate) use log_per_group;

/// A client-supplied string as it may appear in a log line: at most [`MAX_LOGGED_CHARS`]
/// characters, control characters and quotes escaped (so a client id cannot forge a line), and
/// how many bytes were cut.
#[derive(Clone, Copy)]
pub(crate) struct Capped<'a>(pub &'a str);

/// Quoted, as `tracing` shows a `&str` field given with `?`: `client_id = ?Capped(id)` keeps
/// the form log readers (and Kafka's own `client_id="..."`) expect.
impl fmt::Debug for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// [`Capped`], for a field: `topic = %capped(&name)`.
pub(crate) fn capped(s: &str) -> Capped<'_> {
    Capped(s)
}

impl fmt::Display for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, (at, c)) in self.0.char_indices().enumerate() {
            if n == MAX_LOGGED_CHARS {
                return write!(f, "...(+{} bytes)", self.0.len() - at);
            }
            write!(f, "{}", c.escape_debug())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn one_line_per_key_per_interval_with_the_count_of_those_left_out() {
        let limiter = LogLimiter::new(MINUTE, 16);
        let t0 = Instant::now();
        assert_eq!(limiter.check("a", t0), Some(0));
        for s in 1..=5 {
            assert_eq!(limiter.check("a", t0 + Duration::from_secs(s)), None);
        }
        // Another key has its own window.
        assert_eq!(limiter.check("b", t0 + Duration::from_secs(59)), Some(0));
        assert_eq!(limiter.check("a", t0 + Duration::from_secs(59)), None);
        // The next line of "a" after the interval says how many were left out.
        assert_eq!(limiter.check("a", t0 + MINUTE), Some(6));
        assert_eq!(
            limiter.check("a", t0 + MINUTE + Duration::from_secs(1)),
            None
        );
        assert_eq!(limiter.check("a", t0 + 2 * MINUTE), Some(1));
        assert_eq!(limiter.check("b", t0 + 2 * MINUTE), Some(0));
    }

    #[test]
    fn a_flood_of_distinct_keys_stays_bounded_in_memory_and_in_lines() {
        let limiter = LogLimiter::new(MINUTE, 8);
        let t0 = Instant::now();
        let logged = (0..10_000u32)
            .filter(|k| limiter.check(*k, t0).is_some())
            .count();
        // The first 8 keys, then one line for all the others together.
        assert_eq!(logged, 9);
        assert!(limiter.tracked() <= 8);
        // Once their windows are over, old keys make room for new ones.
        assert_eq!(limiter.check(20_000, t0 + MINUTE), Some(0));
        assert_eq!(limiter.tracked(), 1);
        // The shared window reports what it left out.
        assert_eq!(limiter.check(30_000, t0 + MINUTE), Some(0));
    }

    #[test]
    fn a_clock_going_backwards_does_not_panic() {
        let limiter = LogLimiter::new(MINUTE, 4);
        let t0 = Instant::now() + MINUTE;
        assert_eq!(limiter.check(1, t0), Some(0));
        assert_eq!(limiter.check(1, t0 - Duration::from_secs(30)), None);
    }

    /// Collects what a `fmt` subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `f` logs, as a `fmt` subscriber on this thread writes it.
    fn logged(f: impl FnOnce()) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = captured.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn the_macro_logs_a_flood_from_one_peer_once() {
        let peer: std::net::SocketAddr = "192.0.2.7:4000".parse().unwrap();
        let other: std::net::SocketAddr = "[::ffff:192.0.2.8]:4000".parse().unwrap();
        let text = logged(|| {
            // A kind of its own: the table is shared with every other test of this binary.
            for port in 0..1000u16 {
                let peer = std::net::SocketAddr::new(peer.ip(), port);
                log_per_peer!(warn, peer, "logging test flood", %peer, "bad connection");
            }
            log_per_peer!(warn, other, "logging test flood", peer = %other, "bad connection");
        });
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(" WARN ")).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("suppressed=0"), "{text}");
        assert!(lines[1].contains("192.0.2.8"), "{text}");
        assert_eq!(peer_ip(other), "192.0.2.8".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn the_group_macro_logs_once_per_kind_and_group_and_stays_bounded() {
        let lines = group_lines();
        let text = logged(|| {
            for _ in 0..1000 {
                log_per_group!(warn, lines, "read", "g", group = "g", "plugin failed");
            }
            log_per_group!(warn, lines, "read", "h", group = "h", "plugin failed");
            log_per_group!(warn, lines, "delete", "g", group = "g", "something else");
            for g in 0..10_000 {
                let group = format!("many-{g}");
                log_per_group!(warn, lines, "read", &group, %group, "plugin failed");
            }
        });
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(" WARN ")).collect();
        // One per (kind, group) while the table has room, then one for all the others.
        assert_eq!(lines.len(), GROUP_LINES_CAPACITY + 1, "{}", lines.len());
        assert!(
            lines[0].contains("group=\"g\"") && lines[0].contains("suppressed=0"),
            "{text}"
        );
        assert!(lines[1].contains("group=\"h\""), "{text}");
        assert!(lines[2].contains("something else"), "{text}");
    }

    #[test]
    fn panics_are_logged_once_a_minute_per_place_through_the_subscriber() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(panic_hook());
        let text = logged(|| {
            for i in 0..100 {
                let _ = std::panic::catch_unwind(|| panic!("panic number {i}"));
            }
            let _ = std::panic::catch_unwind(|| panic!("{}", "another place".repeat(100)));
        });
        std::panic::set_hook(previous);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(" ERROR ")).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("panic number 0"), "{text}");
        assert!(lines[0].contains("logging.rs"), "{text}");
        assert!(lines[1].contains("another place"), "{text}");
        assert!(
            lines[1].len() < 1_000,
            "the message is capped: {}",
            lines[1].len()
        );
    }

    #[test]
    fn capped_strings_are_cut_and_escaped() {
        assert_eq!(Capped("consumer-1").to_string(), "consumer-1");
        assert_eq!(format!("{:?}", Capped("a\"b")), "\"a\\\"b\"");
        assert_eq!(
            Capped("a\nfake line\u{7}\"").to_string(),
            "a\\nfake line\\u{7}\\\""
        );
        let long = "é".repeat(1000);
        let shown = Capped(&long).to_string();
        assert_eq!(
            shown,
            format!("{}...(+{} bytes)", "é".repeat(MAX_LOGGED_CHARS), 2 * 872)
        );
        assert_eq!(
            Capped(&"x".repeat(MAX_LOGGED_CHARS)).to_string().len(),
            MAX_LOGGED_CHARS
        );
    }
}
