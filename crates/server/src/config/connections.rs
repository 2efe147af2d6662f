//! Limits on connections: how many (`max.connections`, per IP, per listener), how fast they may
//! be opened, and how long one may sit idle or take to send a request (config/README.md,
//! "Network and logging").

use std::time::Duration;

use super::listeners::{ListenerConfig, ListenerKind};
use super::values::int_in;
use super::{ConfigError, Reader};

/// Kafka's `connections.max.idle.ms` default (10 minutes).
pub const DEFAULT_CONNECTIONS_MAX_IDLE_MS: i64 = 600_000;
/// kcoord's own key: Kafka has no bound on the time one request may take to arrive. 30 s is the
/// default `request.timeout.ms` of Kafka's clients: by then the sender has given the request
/// up, so a frame still arriving is one nobody waits for.
pub const SOCKET_REQUEST_RECEIVE_TIMEOUT_MS: &str = "socket.request.receive.timeout.ms";
pub const DEFAULT_SOCKET_REQUEST_RECEIVE_TIMEOUT_MS: i32 = 30_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// `max.connections`: open connections across all listeners; a controller listener may
    /// exceed it (see [`ListenerLimits::protected`]).
    pub max_connections: i32,
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: i32,
    /// `max.connections.per.ip.overrides`: host or IP as written, and its limit, in file order
    /// (a host written twice keeps its last limit, as Kafka's map does). Host names are resolved
    /// when the daemon starts.
    pub max_connections_per_ip_overrides: Vec<(String, i32)>,
    /// `max.connection.creation.rate`: new connections per second across the broker listeners.
    pub max_connection_creation_rate: i32,
    /// `connections.max.idle.ms`; `None` (a negative value) never closes an idle connection,
    /// as Kafka's `Selector` does.
    pub connections_max_idle: Option<Duration>,
    /// `socket.request.receive.timeout.ms` (kcoord's): how long a request may take to arrive
    /// once its first byte came.
    pub request_receive_timeout: Duration,
    /// One entry per listener, in the order of `listeners`.
    pub listeners: Vec<ListenerLimits>,
    /// `quota.window.num`: the samples client quotas measure rates over.
    pub quota_window_num: i32,
    /// `quota.window.size.seconds`: the length of each sample.
    pub quota_window_size_seconds: i32,
}

/// A listener's own limits: Kafka's `listener.name.<listener>.` prefix on the broker-wide key,
/// which they default to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Upper-case, as in `listeners`.
    pub name: String,
    pub max_connections: i32,
    pub max_connection_creation_rate: i32,
    /// A controller listener on a node that also has broker listeners: brokers reach the
    /// controller there, so, like Kafka's inter-broker listener, it is not held to the
    /// broker-wide `max.connections` nor to the broker-wide creation rate, only to its own
    /// limits; when its connections push the total over `max.connections`, the least recently
    /// active connection of a broker listener is closed.
    pub protected: bool,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            max_connections: i32::MAX,
            max_connections_per_ip: i32::MAX,
            max_connections_per_ip_overrides: Vec::new(),
            max_connection_creation_rate: i32::MAX,
            connections_max_idle: Some(Duration::from_millis(
                DEFAULT_CONNECTIONS_MAX_IDLE_MS.unsigned_abs(),
            )),
            request_receive_timeout: Duration::from_millis(u64::from(
                DEFAULT_SOCKET_REQUEST_RECEIVE_TIMEOUT_MS.unsigned_abs(),
            )),
            listeners: Vec::new(),
            quota_window_num: 11,
            quota_window_size_seconds: 1,
        }
    }
}

pub(super) fn read(
    r: &Reader<'_>,
    listeners: &[ListenerConfig],
) -> Result<ConnectionSettings, ConfigError> {
    let max_connections = r.get("max.connections", i32::MAX, non_negative)?;
    let max_connection_creation_rate =
        r.get("max.connection.creation.rate", i32::MAX, non_negative)?;
    let max_connections_per_ip = r.get("max.connections.per.ip", i32::MAX, non_negative)?;
    let max_connections_per_ip_overrides = r.get(
        "max.connections.per.ip.overrides",
        Vec::new(),
        per_ip_overrides,
    )?;
    r.require(
        max_connections_per_ip != 0 || !max_connections_per_ip_overrides.is_empty(),
        &["max.connections.per.ip", "max.connections.per.ip.overrides"],
        "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.".to_owned(),
    )?;
    let idle_ms = r.get(
        "connections.max.idle.ms",
        DEFAULT_CONNECTIONS_MAX_IDLE_MS,
        |v| int_in(v, i64::MIN, i64::MAX),
    )?;
    let receive_ms = r.get(
        SOCKET_REQUEST_RECEIVE_TIMEOUT_MS,
        DEFAULT_SOCKET_REQUEST_RECEIVE_TIMEOUT_MS,
        |v| int_in(v, 1, i32::MAX),
    )?;
    // Kafka's `atLeast(1)` on both.
    let quota_window_num = r.get("quota.window.num", 11, |v| int_in(v, 1, i32::MAX))?;
    let quota_window_size_seconds =
        r.get("quota.window.size.seconds", 1, |v| int_in(v, 1, i32::MAX))?;
    let has_broker_listener = listeners.iter().any(|l| l.kind == ListenerKind::Broker);
    let listeners = listeners
        .iter()
        .map(|l| {
            let prefix = format!("listener.name.{}.", l.name.to_ascii_lowercase());
            Ok(ListenerLimits {
                name: l.name.clone(),
                max_connections: r.get(
                    &format!("{prefix}max.connections"),
                    max_connections,
                    non_negative,
                )?,
                max_connection_creation_rate: r.get(
                    &format!("{prefix}max.connection.creation.rate"),
                    max_connection_creation_rate,
                    non_negative,
                )?,
                protected: l.kind == ListenerKind::Controller && has_broker_listener,
            })
        })
        .collect::<Result<_, ConfigError>>()?;
    Ok(ConnectionSettings {
        max_connections,
        max_connections_per_ip,
        max_connections_per_ip_overrides,
        max_connection_creation_rate,
        connections_max_idle: u64::try_from(idle_ms).ok().map(Duration::from_millis),
        request_receive_timeout: Duration::from_millis(u64::from(receive_ms.unsigned_abs())),
        listeners,
        quota_window_num,
        quota_window_size_seconds,
    })
}

fn non_negative(raw: &str) -> Result<i32, String> {
    int_in(raw, 0, i32::MAX)
}

/// Kafka's `host:count,...` (its `Csv.parseCsvMap`: items split at commas, each at its last
/// colon, so an IPv6 address is written without brackets: `::1:5`), hosts checked against
/// Kafka's `Utils.validHostPattern`. An empty host (which Kafka would resolve to the loopback
/// address) and a negative count are refused.
fn per_ip_overrides(raw: &str) -> Result<Vec<(String, i32)>, String> {
    let error = |message: String| message;
    let mut out: Vec<(String, i32)> = Vec::new();
    if raw.trim().is_empty() {
        return Ok(out);
    }
    // Java's split drops trailing empty items: "a:1," is one item.
    let items: Vec<&str> = raw.split(',').map(str::trim).collect();
    let last = items.iter().rposition(|i| !i.is_empty()).unwrap_or(0);
    let mut invalid = Vec::new();
    for item in &items[..=last] {
        let (host, count) = item
            .rsplit_once(':')
            .ok_or_else(|| error(format!("expected host:count, got \"{item}\"")))?;
        let host = host.trim();
        let count = int_in(count, 0, i32::MAX).map_err(error)?;
        if host.is_empty() {
            return Err(error(format!("no host in \"{item}\"")));
        }
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c))
        {
            invalid.push(host.to_owned());
            continue;
        }
        out.retain(|(h, _)| h != host);
        out.push((host.to_owned(), count));
    }
    if !invalid.is_empty() {
        return Err(format!(
            "max.connections.per.ip.overrides contains invalid addresses : {}",
            invalid.join(",")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_as_kafka_reads_them() {
        assert_eq!(per_ip_overrides(""), Ok(vec![]));
        assert_eq!(
            per_ip_overrides(" hostName:100 , 127.0.0.1:200,::1:3,"),
            Ok(vec![
                ("hostName".to_owned(), 100),
                ("127.0.0.1".to_owned(), 200),
                ("::1".to_owned(), 3)
            ])
        );
        // The last count of a host wins.
        assert_eq!(
            per_ip_overrides("a:1,b:2,a:3"),
            Ok(vec![("b".to_owned(), 2), ("a".to_owned(), 3)])
        );
    }

    #[test]
    fn bad_overrides_are_refused() {
        assert!(per_ip_overrides("host").unwrap_err().contains("host:count"));
        assert!(per_ip_overrides("a:1,,b:2")
            .unwrap_err()
            .contains("host:count"));
        assert!(per_ip_overrides("a:x").unwrap_err().contains("\"x\""));
        assert!(per_ip_overrides("a:-1")
            .unwrap_err()
            .contains("non-negative"));
        assert!(per_ip_overrides(":5").unwrap_err().contains("no host"));
        assert_eq!(
            per_ip_overrides("[::1]:5,ok:1,a/b:2"),
            Err(
                "max.connections.per.ip.overrides contains invalid addresses : [::1],a/b"
                    .to_owned()
            )
        );
    }
}
