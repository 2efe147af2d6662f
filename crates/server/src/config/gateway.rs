//! Gateway mode (docs/gateway.md): `upstream.bootstrap.servers` puts kcoord in front of an
//! existing Kafka cluster. The client settings kcoord uses to reach that cluster are Kafka's
//! client keys under the `upstream.` prefix (`upstream.security.protocol`,
//! `upstream.sasl.jaas.config`, ...), read by the client crate as a tool reads its
//! `--command-config`; `gateway.broker.port.start` says where each upstream broker is served.
//! The kcoord nodes reach each other's broker listeners with the client keys under
//! `gateway.node.client.`, and `gateway.node.principals` says which of their clients may pass a
//! request on as another node. `gateway.authentication=upstream` has the cluster check the
//! credentials of kcoord's SASL clients, so forwarded requests reach it as those clients.

use std::time::Duration;

use kcoord_acl::KafkaPrincipal;
use kcoord_client::ClientConfig;

use super::authorizer::AuthorizerSettings;
use super::listeners::{ListenerConfig, ListenerKind};
use super::values::{int_in, list};
use super::{ConfigError, Reader};

pub const UPSTREAM_PREFIX: &str = "upstream.";
pub const BOOTSTRAP_SERVERS: &str = "upstream.bootstrap.servers";
pub const METADATA_MAX_AGE: &str = "upstream.metadata.max.age.ms";
pub const BROKER_PORT_START: &str = "gateway.broker.port.start";
pub const COORDINATOR_LOG_TOPIC: &str = "gateway.coordinator.log.topic";
pub const COORDINATOR_LOG_REPLICATION_FACTOR: &str = "gateway.coordinator.log.replication.factor";
pub const CREDENTIALS_TOPIC: &str = "gateway.credentials.topic";
pub const NODE_SESSION_TIMEOUT: &str = "gateway.node.session.timeout.ms";
pub const NODE_CLIENT_PREFIX: &str = "gateway.node.client.";
pub const NODE_PRINCIPALS: &str = "gateway.node.principals";
/// Who checks the SASL credentials of clients on the broker listeners: `local` (kcoord) or
/// `upstream` (the cluster, each exchange relayed to it).
pub const AUTHENTICATION: &str = "gateway.authentication";
/// The client id of a node's own requests to another node (passed-on ones carry the client's).
pub const NODE_CLIENT_ID: &str = "kcoord-node";
/// The classic consumer's default `session.timeout.ms` before Kafka 3.0 (10 s), within the
/// broker's default bounds (6 s to 30 min).
pub const DEFAULT_NODE_SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The compacted upstream topic holding the coordinator shards' logs, one partition each.
pub const DEFAULT_COORDINATOR_LOG_TOPIC: &str = "__kcoord_coordinator_log";
/// The compacted upstream topic holding kcoord's own SCRAM credentials
/// (`gateway.authentication=local`).
pub const DEFAULT_CREDENTIALS_TOPIC: &str = "__kcoord_credentials";
/// Kafka's client default of `metadata.max.age.ms`: how often the upstream brokers are learnt
/// again.
pub const DEFAULT_METADATA_MAX_AGE: Duration = Duration::from_secs(300);
/// The client id kcoord's own upstream requests carry (forwarded ones carry the client's).
pub const UPSTREAM_CLIENT_ID: &str = "kcoord-gateway";

/// Where the upstream cluster is and how to reach it.
#[derive(Clone, PartialEq)]
pub struct GatewaySettings {
    /// `host:port` of each bootstrap server, in the order given.
    pub bootstrap_servers: Vec<String>,
    /// Upstream broker `b` is served on this port plus `b`.
    pub broker_port_start: u16,
    /// How often the upstream's brokers are fetched again.
    pub metadata_max_age: Duration,
    /// The upstream topic the coordinator shards keep their logs in.
    pub coordinator_log_topic: String,
    /// Its replication factor when kcoord creates it, and the credentials topic's; -1 is the
    /// cluster's default.
    pub coordinator_log_replication_factor: i16,
    /// The upstream topic kcoord's own SCRAM credentials are kept in, with
    /// `gateway.authentication=local`.
    pub credentials_topic: String,
    /// How long the cluster waits for a silent kcoord node before its shards move.
    pub node_session_timeout: Duration,
    /// The `upstream.*` keys without their prefix, checked by the client crate at load.
    client_properties: Vec<(String, String)>,
    /// The `gateway.node.client.*` keys without their prefix, likewise.
    node_client_properties: Vec<(String, String)>,
    /// Who may pass a request on as another kcoord node; empty: any connection.
    pub node_principals: Vec<KafkaPrincipal>,
    /// `gateway.authentication=upstream`: each client's SASL exchange is relayed to the
    /// cluster, and its forwarded requests go upstream as that client.
    pub upstream_authenticates: bool,
}

// The upstream keys hold passwords (`sasl.jaas.config`): only their names are shown.
impl std::fmt::Debug for GatewaySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self
            .client_properties
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        let node_keys: Vec<&str> = self
            .node_client_properties
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        f.debug_struct("GatewaySettings")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("broker_port_start", &self.broker_port_start)
            .field("metadata_max_age", &self.metadata_max_age)
            .field("coordinator_log_topic", &self.coordinator_log_topic)
            .field(
                "coordinator_log_replication_factor",
                &self.coordinator_log_replication_factor,
            )
            .field("credentials_topic", &self.credentials_topic)
            .field("node_session_timeout", &self.node_session_timeout)
            .field("client_keys", &keys)
            .field("node_client_keys", &node_keys)
            .field("node_principals", &self.node_principals)
            .field("upstream_authenticates", &self.upstream_authenticates)
            .finish()
    }
}

impl GatewaySettings {
    /// The client settings of every upstream connection.
    pub fn client_config(&self) -> Result<ClientConfig, kcoord_client::SecurityConfigError> {
        ClientConfig::from_properties(UPSTREAM_CLIENT_ID, self.client_properties.iter().cloned())
    }

    /// The client settings of connections to the other kcoord nodes' broker listeners.
    pub fn node_client_config(&self) -> Result<ClientConfig, kcoord_client::SecurityConfigError> {
        ClientConfig::from_properties(NODE_CLIENT_ID, self.node_client_properties.iter().cloned())
    }

    /// Whether a connection of `principal` may pass a request on as another kcoord node.
    pub fn trusts_as_node(&self, principal: &KafkaPrincipal) -> bool {
        self.node_principals.is_empty() || self.node_principals.contains(principal)
    }

    /// The port upstream broker `id` is served on, if the id fits below port 65536.
    pub fn broker_port(&self, id: i32) -> Option<u16> {
        let port = i64::from(self.broker_port_start) + i64::from(id);
        if id < 0 {
            return None;
        }
        u16::try_from(port).ok()
    }
}

/// The gateway's settings, or none (standalone) when `upstream.bootstrap.servers` is unset.
pub(super) fn read(
    r: &Reader<'_>,
    listeners: &[ListenerConfig],
    authorizer: &AuthorizerSettings,
) -> Result<Option<GatewaySettings>, ConfigError> {
    let client_properties = prefixed(r, UPSTREAM_PREFIX, &[BOOTSTRAP_SERVERS, METADATA_MAX_AGE]);
    let node_client_properties = prefixed(r, NODE_CLIENT_PREFIX, &[]);
    let Some(bootstrap_servers) = r.get(BOOTSTRAP_SERVERS, None, |v| servers(v).map(Some))? else {
        refuse_gateway_keys(r, &node_client_properties)?;
        return Ok(None);
    };
    let upstream_authenticates = upstream_authenticates(r)?;
    r.require(
        authorizer.kind.is_none() || upstream_authenticates,
        &["authorizer.class.name", AUTHENTICATION],
        format!(
            "in gateway mode kcoord authorizes only what it serves itself, with the cluster's \
             ACLs, and the cluster authorizes what is forwarded only when clients reach it as \
             themselves: set {AUTHENTICATION}=upstream, or unset authorizer.class.name \
             (docs/gateway.md)"
        ),
    )?;
    r.require(
        listeners.iter().any(|l| l.kind == ListenerKind::Broker),
        &[BOOTSTRAP_SERVERS, "listeners"],
        "gateway mode needs a broker listener: it is where clients bootstrap".to_owned(),
    )?;
    let broker_port_start = r.required(BROKER_PORT_START, |v| {
        int_in(v, 1, i32::from(u16::MAX)).map(|p: i32| p as u16)
    })?;
    let metadata_max_age = r.get(METADATA_MAX_AGE, DEFAULT_METADATA_MAX_AGE, |v| {
        int_in(v, 1000, i32::MAX).map(|ms: i32| Duration::from_millis(ms as u64))
    })?;
    let topics = read_topics(r)?;
    let node_session_timeout = r.get(NODE_SESSION_TIMEOUT, DEFAULT_NODE_SESSION_TIMEOUT, |v| {
        int_in(v, 1000, i32::MAX).map(|ms: i32| Duration::from_millis(ms as u64))
    })?;
    let node_principals = r.get(NODE_PRINCIPALS, Vec::new(), principals)?;
    let settings = GatewaySettings {
        bootstrap_servers,
        broker_port_start,
        metadata_max_age,
        coordinator_log_topic: topics.coordinator_log,
        coordinator_log_replication_factor: topics.replication_factor,
        credentials_topic: topics.credentials,
        node_session_timeout,
        client_properties,
        node_client_properties,
        node_principals,
        upstream_authenticates,
    };
    let client = settings
        .client_config()
        .map_err(|e| r.error(BOOTSTRAP_SERVERS, format!("upstream client settings: {e}")))?;
    check_node_client(r, &settings, listeners)?;
    if settings.upstream_authenticates {
        check_relay(r, &client, listeners)?;
    }
    Ok(Some(settings))
}

/// The upstream topics kcoord keeps its state in.
struct StateTopics {
    coordinator_log: String,
    replication_factor: i16,
    credentials: String,
}

fn read_topics(r: &Reader<'_>) -> Result<StateTopics, ConfigError> {
    let coordinator_log = r.get(
        COORDINATOR_LOG_TOPIC,
        DEFAULT_COORDINATOR_LOG_TOPIC.to_owned(),
        topic_name,
    )?;
    let replication_factor = r.get(COORDINATOR_LOG_REPLICATION_FACTOR, -1, |v| {
        let factor: i32 = int_in(v, -1, i32::from(i16::MAX))?;
        if factor == 0 {
            return Err("expected -1 (the cluster's default) or a factor of at least 1".into());
        }
        Ok(factor as i16)
    })?;
    let credentials = r.get(
        CREDENTIALS_TOPIC,
        DEFAULT_CREDENTIALS_TOPIC.to_owned(),
        topic_name,
    )?;
    r.require(
        credentials != coordinator_log,
        &[CREDENTIALS_TOPIC, COORDINATOR_LOG_TOPIC],
        "the credentials and the coordinator logs need topics of their own".to_owned(),
    )?;
    Ok(StateTopics {
        coordinator_log,
        replication_factor,
        credentials,
    })
}

/// Standalone: a gateway key set is a mistake worth stopping for.
fn refuse_gateway_keys(
    r: &Reader<'_>,
    node_client_properties: &[(String, String)],
) -> Result<(), ConfigError> {
    let node_client_key = node_client_properties
        .first()
        .map(|(k, _)| format!("{NODE_CLIENT_PREFIX}{k}"));
    let keys = [
        BROKER_PORT_START,
        COORDINATOR_LOG_TOPIC,
        COORDINATOR_LOG_REPLICATION_FACTOR,
        CREDENTIALS_TOPIC,
        NODE_SESSION_TIMEOUT,
        NODE_PRINCIPALS,
        AUTHENTICATION,
    ];
    for key in keys.into_iter().chain(node_client_key.as_deref()) {
        r.require(
            !r.is_set(key),
            &[key],
            format!("only used in gateway mode, which {BOOTSTRAP_SERVERS} turns on"),
        )?;
    }
    Ok(())
}

/// `gateway.authentication`: whether the upstream cluster checks the clients' credentials.
pub(super) fn upstream_authenticates(r: &Reader<'_>) -> Result<bool, ConfigError> {
    r.get(AUTHENTICATION, false, |v| match v.trim() {
        "local" => Ok(false),
        "upstream" => Ok(true),
        other => Err(format!("expected local or upstream, got {other:?}")),
    })
}

/// A relayed exchange needs SASL on both sides: on every broker listener, where clients
/// authenticate, and upstream, where their exchange is relayed.
fn check_relay(
    r: &Reader<'_>,
    client: &ClientConfig,
    listeners: &[ListenerConfig],
) -> Result<(), ConfigError> {
    let upstream = client.security.protocol;
    r.require(
        upstream.uses_sasl(),
        &[AUTHENTICATION, "upstream.security.protocol"],
        format!(
            "{AUTHENTICATION}=upstream relays each client's SASL exchange to the cluster, so \
             upstream.security.protocol must be SASL_PLAINTEXT or SASL_SSL, not {upstream}"
        ),
    )?;
    for l in listeners.iter().filter(|l| l.kind == ListenerKind::Broker) {
        r.require(
            l.security_protocol.uses_sasl(),
            &[AUTHENTICATION, "listeners"],
            format!(
                "{AUTHENTICATION}=upstream: broker listener {} speaks {}, so its clients \
                 would reach the cluster as nobody; give it SASL_PLAINTEXT or SASL_SSL",
                l.name,
                l.security_protocol.name()
            ),
        )?;
    }
    Ok(())
}

/// The keys under `prefix` but `skip`, without the prefix: a Kafka client's settings.
fn prefixed(r: &Reader<'_>, prefix: &str, skip: &[&str]) -> Vec<(String, String)> {
    r.with_prefix(prefix)
        .into_iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.to_owned(), v)))
        .collect()
}

/// The nodes pass requests to each other's broker listener, so they must speak its security
/// protocol: a mismatch would only show when the first request is passed on.
fn check_node_client(
    r: &Reader<'_>,
    settings: &GatewaySettings,
    listeners: &[ListenerConfig],
) -> Result<(), ConfigError> {
    let node_client = settings.node_client_config().map_err(|e| {
        r.error(
            BOOTSTRAP_SERVERS,
            format!("{NODE_CLIENT_PREFIX}* client settings: {e}"),
        )
    })?;
    let Some(broker) = listeners.iter().find(|l| l.kind == ListenerKind::Broker) else {
        return Ok(());
    };
    let (spoken, served) = (
        node_client.security.protocol.name(),
        broker.security_protocol.name(),
    );
    r.require(
        spoken == served,
        &[
            &format!("{NODE_CLIENT_PREFIX}security.protocol"),
            "listeners",
        ],
        format!(
            "the kcoord nodes pass requests to each other's broker listener {}, which speaks \
             {served}: set {NODE_CLIENT_PREFIX}security.protocol={served} (and its sasl.*/ssl.* \
             keys under {NODE_CLIENT_PREFIX}) rather than {spoken}",
            broker.name
        ),
    )
}

/// `gateway.node.principals`: a comma-separated list of `Type:name` principals.
fn principals(raw: &str) -> Result<Vec<KafkaPrincipal>, String> {
    list(raw)?
        .iter()
        .map(|p| KafkaPrincipal::parse(p).map_err(|e| format!("{p:?}: {e}")))
        .collect()
}

/// A name Kafka takes for a topic: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
fn topic_name(raw: &str) -> Result<String, String> {
    let legal = raw
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if raw.is_empty() || raw.len() > 249 || !legal || raw == "." || raw == ".." {
        return Err(format!("\"{raw}\" is not a legal topic name"));
    }
    Ok(raw.to_owned())
}

/// `host:port[,host:port...]`, as Kafka's `bootstrap.servers`.
fn servers(raw: &str) -> Result<Vec<String>, String> {
    let servers = list(raw)?;
    if servers.is_empty() {
        return Err("expected host:port[,host:port...]".to_owned());
    }
    for server in &servers {
        let port = server.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
        if !matches!(port, Some(Ok(p)) if p > 0) {
            return Err(format!("expected host:port, got \"{server}\""));
        }
    }
    Ok(servers)
}

#[cfg(test)]
mod tests;
