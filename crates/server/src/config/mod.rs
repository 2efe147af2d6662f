//! The daemon's configuration: a Java properties file read into a typed [`Config`].
//!
//! Every error names the file, the line and the key (config/README.md lists the keys). Keys
//! the daemon does not know are collected as [`ConfigWarning`]s rather than refused, so a
//! Kafka `server.properties` with extra keys still starts; the caller logs them once logging
//! is set up (which itself depends on `log.level`).

pub mod authorizer;
pub mod classic_groups;
pub mod connections;
pub mod consumer;
pub mod controller;
pub mod coordinator_log;
pub mod gateway;
pub mod http;
pub mod listeners;
pub mod log;
pub mod properties;
pub mod sasl;
pub mod ssl;
pub mod streams;
pub mod transactions;
mod values;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

pub use connections::{ConnectionSettings, ListenerLimits};
pub use controller::ControllerSettings;
pub use listeners::{ListenerConfig, ListenerKind, SecurityProtocol};
pub use log::LogSettings;
pub use streams::GroupCoordinatorConfig;

use properties::{Entry, Properties};
use values::{boolean, int_in, unique_list};

/// Used when `cluster.id` is not set: base64url of the 16 bytes `kcoord-dev-clust`, so it is a
/// well-formed Kafka cluster id that is recognisably ours.
pub const DEFAULT_CLUSTER_ID: &str = "a2Nvb3JkLWRldi1jbHVzdA";
pub const DEFAULT_LISTENERS: &str = "PLAINTEXT://:9092,CONTROLLER://:9093";
pub const DEFAULT_CONTROLLER_LISTENER_NAMES: &str = "CONTROLLER";
pub const DEFAULT_SOCKET_REQUEST_MAX_BYTES: i32 = 104_857_600;
pub const DEFAULT_LOG_LEVEL: &str = "info";
pub const DEFAULT_NUM_PARTITIONS: i32 = 1;
pub const DEFAULT_REPLICATION_FACTOR: i16 = 1;
/// Kafka's default partition count of `__consumer_offsets`, whose partitions are its
/// coordinator shards.
pub const DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS: i32 = 50;
/// More shards than this only costs memory; a typo like 1000000 should not start that many tasks.
pub const MAX_COORDINATOR_SHARDS: i32 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessRoles {
    pub broker: bool,
    pub controller: bool,
}

impl ProcessRoles {
    pub fn describe(self) -> &'static str {
        match (self.broker, self.controller) {
            (true, true) => "broker,controller",
            (true, false) => "broker",
            (false, true) => "controller",
            (false, false) => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where the config came from, for messages.
    pub source: String,
    pub node_id: i32,
    pub process_roles: ProcessRoles,
    pub listeners: Vec<ListenerConfig>,
    pub controller_listener_names: Vec<String>,
    pub cluster_id: String,
    pub socket_request_max_bytes: i32,
    /// How many connections, how fast, and how long they may idle or take to send a request.
    pub connections: ConnectionSettings,
    /// A `tracing` filter directive; `RUST_LOG` overrides it.
    pub log_level: String,
    pub auto_create_topics_enable: bool,
    /// Partitions of a topic created with NumPartitions -1 (Kafka's `num.partitions`).
    pub num_partitions: i32,
    /// Replication factor of a topic created with ReplicationFactor -1 (Kafka's
    /// `default.replication.factor`). Recorded only: this node holds the one replica.
    pub default_replication_factor: i16,
    /// Coordinator shards, each owning the groups that hash to it, as the partitions of
    /// Kafka's `__consumer_offsets` do (`offsets.topic.num.partitions`).
    pub coordinator_shards: usize,
    /// The most groups the node holds, streams groups and offsets-only groups alike
    /// (`group.coordinator.max.groups`, kcoord's own); a new group past it is refused.
    pub max_groups: usize,
    pub streams: GroupCoordinatorConfig,
    /// KIP-848 consumer groups (`group.consumer.*`).
    pub consumer: kcoord_coordinator::ConsumerGroupConfig,
    /// The transaction coordinator (`transaction.*`).
    pub transactions: kcoord_coordinator::TransactionConfig,
    /// Classic groups (`group.min.session.timeout.ms` and siblings).
    pub classic_groups: kcoord_coordinator::classic::ClassicGroupConfig,
    /// `transaction.partition.verification.enable` (KIP-890 part 1).
    pub transaction_partition_verification: bool,
    /// The controller role: `metadata.version`, broker sessions, the durable metadata log.
    pub controller: ControllerSettings,
    /// The data plane: where partitions are stored and every topic's default settings.
    pub log: LogSettings,
    /// Where the coordinator shards keep groups and offsets (in memory when nowhere).
    pub coordinator_log: coordinator_log::CoordinatorLogSettings,
    /// `authorizer.class.name`, `super.users`, `allow.everyone.if.no.acl.found`.
    pub authorizer: authorizer::AuthorizerSettings,
    /// SASL on SASL_PLAINTEXT and SASL_SSL listeners.
    pub sasl: sasl::SaslSettings,
    /// The TLS settings of every SSL listener, in the order of `listeners` (`ssl.*`).
    pub ssl: Vec<ssl::SslListener>,
    /// `http.listener`: where `/metrics` and `/health/*` are served; none serves no HTTP.
    pub http_listener: Option<http::HttpListener>,
    /// Gateway mode (`upstream.bootstrap.servers`); none is standalone.
    pub gateway: Option<gateway::GatewaySettings>,
    /// Things worth a WARN once logging is up.
    pub warnings: Vec<ConfigWarning>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    UnknownKey {
        key: String,
        line: usize,
    },
    Overridden {
        key: String,
        first_line: usize,
        line: usize,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the file: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Syntax {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}: {key}: {message}")]
    Invalid {
        path: String,
        line: usize,
        key: String,
        message: String,
    },
    /// A key left at its default that conflicts with another key's default.
    #[error("{path}: {key}: {message}")]
    InvalidDefault {
        path: String,
        key: String,
        message: String,
    },
    #[error("{path}: {key}: required key is missing")]
    Missing { path: String, key: String },
}

impl Config {
    /// Reads and validates a properties file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        Config::parse(&shown, &properties::decode_file_bytes(&bytes))
    }

    /// Validates properties text; `source` names it in messages. Tests use this to build
    /// configs in memory.
    pub fn parse(source: &str, text: &str) -> Result<Config, ConfigError> {
        let props = properties::parse(text).map_err(|e| ConfigError::Syntax {
            path: source.to_owned(),
            line: e.line(),
            message: e.to_string(),
        })?;
        let reader = Reader::new(source, &props);
        let config = read(&reader)?;
        Ok(Config {
            warnings: reader.warnings(),
            ..config
        })
    }

    /// The listeners of one kind, in file order.
    pub fn listeners_of(&self, kind: ListenerKind) -> impl Iterator<Item = &ListenerConfig> {
        self.listeners.iter().filter(move |l| l.kind == kind)
    }
}

fn read(r: &Reader<'_>) -> Result<Config, ConfigError> {
    let node_id = r.required("node.id", |v| int_in(v, 0, i32::MAX))?;
    let process_roles = r.get(
        "process.roles",
        ProcessRoles {
            broker: true,
            controller: true,
        },
        roles,
    )?;
    let controller_listener_names: Vec<String> = r.get(
        "controller.listener.names",
        vec![DEFAULT_CONTROLLER_LISTENER_NAMES.to_owned()],
        listener_names,
    )?;
    let listeners = read_listeners(r, process_roles, &controller_listener_names)?;
    // Kafka's coordinator thread count: validated as Kafka does, so a file written for Kafka
    // is read the same way, but coordinator work runs on the connection tasks here.
    r.get("group.coordinator.threads", 1, |v| int_in(v, 1, i32::MAX))?;
    let log = log::read(r)?;
    let controller = read_controller(r, &log)?;
    let coordinator_log =
        coordinator_log::read(r, &log.log_dirs, controller.metadata_log_dir.as_deref())?;
    let connections = connections::read(r, &listeners)?;
    let upstream_authenticates = gateway::upstream_authenticates(r)?;
    let sasl = sasl::read(r, &listeners, upstream_authenticates)?;
    let ssl = ssl::read(r, &listeners)?;
    let http_listener = http::read(r, &listeners)?;
    let authorizer = authorizer::read(r)?;
    let gateway = gateway::read(r, &listeners, &authorizer)?;

    Ok(Config {
        source: r.path.to_owned(),
        node_id,
        process_roles,
        listeners,
        controller_listener_names,
        cluster_id: r.get("cluster.id", DEFAULT_CLUSTER_ID.to_owned(), cluster_id)?,
        socket_request_max_bytes: r.get(
            "socket.request.max.bytes",
            DEFAULT_SOCKET_REQUEST_MAX_BYTES,
            |v| int_in(v, 1, i32::MAX),
        )?,
        connections,
        log_level: r.get("log.level", DEFAULT_LOG_LEVEL.to_owned(), log_level)?,
        auto_create_topics_enable: r.get("auto.create.topics.enable", false, boolean)?,
        num_partitions: r.get("num.partitions", DEFAULT_NUM_PARTITIONS, |v| {
            int_in(v, 1, i32::MAX)
        })?,
        default_replication_factor: r.get(
            "default.replication.factor",
            DEFAULT_REPLICATION_FACTOR,
            |v| int_in(v, 1, i16::MAX),
        )?,
        coordinator_shards: r.get(
            "offsets.topic.num.partitions",
            DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS as usize,
            |v| int_in(v, 1, MAX_COORDINATOR_SHARDS).map(|n| n as usize),
        )?,
        max_groups: r.get(
            "group.coordinator.max.groups",
            kcoord_coordinator::DEFAULT_MAX_GROUPS,
            |v| int_in(v, 1, i32::MAX).map(|n: i32| n as usize),
        )?,
        streams: streams::read(r)?,
        consumer: consumer::read(r)?,
        transactions: transactions::read(r)?,
        classic_groups: classic_groups::read(r)?,
        transaction_partition_verification: transactions::read_partition_verification(r)?,
        controller,
        log,
        coordinator_log,
        authorizer,
        sasl,
        ssl,
        http_listener,
        gateway,
        warnings: Vec::new(),
    })
}

/// `listeners`, `advertised.listeners` and `listener.security.protocol.map`, resolved with the
/// roles and the controller listener names into the listeners to bind.
fn read_listeners(
    r: &Reader<'_>,
    process_roles: ProcessRoles,
    controller_listener_names: &[String],
) -> Result<Vec<ListenerConfig>, ConfigError> {
    let listener_addresses =
        r.get_str("listeners", DEFAULT_LISTENERS, listeners::parse_addresses)?;
    let advertised = r.get(
        "advertised.listeners",
        Vec::new(),
        listeners::parse_addresses,
    )?;
    let protocol_map_explicit = r.is_set("listener.security.protocol.map");
    let protocol_map = r.get_str(
        "listener.security.protocol.map",
        listeners::DEFAULT_SECURITY_PROTOCOL_MAP,
        listeners::parse_protocol_map,
    )?;
    listeners::resolve(&listeners::ListenerInputs {
        listeners: &listener_addresses,
        advertised: &advertised,
        protocol_map: &protocol_map,
        protocol_map_explicit,
        controller_listener_names,
        broker_role: process_roles.broker,
        controller_role: process_roles.controller,
    })
    .map_err(|e| r.blame(&e.keys, e.message))
}

/// The controller's settings, its metadata log in the first log dir when `metadata.log.dir` is
/// not set.
fn read_controller(r: &Reader<'_>, log: &LogSettings) -> Result<ControllerSettings, ConfigError> {
    let mut controller = controller::read(r)?;
    if controller.metadata_log_dir.is_none() {
        // Kafka keeps the metadata log in the first log dir when metadata.log.dir is unset, so
        // that topics survive a restart together with their partitions.
        controller.metadata_log_dir = log
            .log_dirs
            .first()
            .map(|d| d.join(format!("{}-0", kcoord_storage::dirs::METADATA_TOPIC)));
    }
    Ok(controller)
}

/// `controller.listener.names`: distinct names, upper-cased as in `listeners`.
fn listener_names(raw: &str) -> Result<Vec<String>, String> {
    Ok(unique_list(raw)?
        .into_iter()
        .map(|n| n.to_ascii_uppercase())
        .collect())
}

fn roles(raw: &str) -> Result<ProcessRoles, String> {
    let mut roles = ProcessRoles {
        broker: false,
        controller: false,
    };
    for role in unique_list(raw)? {
        match role.as_str() {
            "broker" => roles.broker = true,
            "controller" => roles.controller = true,
            other => {
                return Err(format!(
                    "unknown role \"{other}\" (expected broker and/or controller)"
                ))
            }
        }
    }
    if !roles.broker && !roles.controller {
        return Err("must contain broker, controller or both".to_owned());
    }
    Ok(roles)
}

/// Kafka cluster ids are base64url-encoded 16-byte UUIDs without padding (22 characters).
fn cluster_id(raw: &str) -> Result<String, String> {
    let id = raw.trim();
    let alphabet_ok = id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if id.len() != 22 || !alphabet_ok {
        return Err(format!(
            "expected a 22-character base64url Kafka cluster id (as printed by kafka-storage.sh random-uuid), got \"{raw}\""
        ));
    }
    Ok(id.to_owned())
}

fn log_level(raw: &str) -> Result<String, String> {
    let directive = tidy_directives(raw);
    log_filter(&directive)
        .map_err(|e| format!("expected a level (error, warn, info, debug, trace) or a tracing filter directive, got \"{raw}\": {e}"))?;
    Ok(directive)
}

/// The tracing filter of `directives`, without span field filters (`target[span{field=value}]`):
/// tracing-subscriber 0.3.23 compiles their values as regular expressions, which a crafted
/// value of a few hundred bytes keeps busy for minutes, and without regexes two of them that
/// name the same field break an ordering invariant it asserts (both found by fuzzing). Neither
/// a configuration nor `RUST_LOG` may hang or crash the daemon's start, and kcoord's own
/// spans carry nothing worth filtering on, so a `{` refuses the directive.
pub(crate) fn log_filter(directives: &str) -> Result<tracing_subscriber::EnvFilter, String> {
    if directives.contains('{') {
        return Err("span field filters ({...}) are not supported".to_owned());
    }
    tracing_subscriber::EnvFilter::builder()
        .with_regex(false)
        .parse(directives)
        .map_err(|e| e.to_string())
}

/// Filter directives with the whitespace around each comma-separated directive removed.
/// tracing-subscriber 0.3 slices a directive at positions found in its trimmed form, so one
/// that starts with whitespace and holds a non-ASCII character panics (found by fuzzing).
pub(crate) fn tidy_directives(raw: &str) -> String {
    raw.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

/// Reads keys off the parsed file, remembering which were used so the rest can be reported as
/// unknown.
pub(crate) struct Reader<'a> {
    path: &'a str,
    props: &'a Properties,
    used: RefCell<BTreeSet<&'a str>>,
}

impl<'a> Reader<'a> {
    fn new(path: &'a str, props: &'a Properties) -> Self {
        Reader {
            path,
            props,
            used: RefCell::new(BTreeSet::new()),
        }
    }

    fn entry(&self, key: &str) -> Option<&'a Entry> {
        let (k, e) = self.props.entries.get_key_value(key)?;
        self.used.borrow_mut().insert(k.as_str());
        Some(e)
    }

    /// Every key starting with `prefix`, with its value, in key order.
    fn with_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        let mut used = self.used.borrow_mut();
        self.props
            .entries
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, e)| {
                used.insert(k.as_str());
                (k.clone(), e.value.clone())
            })
            .collect()
    }

    fn is_set(&self, key: &str) -> bool {
        self.entry(key).is_some()
    }

    /// The value of `key` parsed by `parse`, or `default` when the key is absent.
    pub(crate) fn get<T>(
        &self,
        key: &str,
        default: T,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        match self.entry(key) {
            Some(e) => parse(&e.value).map_err(|message| self.invalid_at(e.line, key, message)),
            None => Ok(default),
        }
    }

    /// Like [`Reader::get`] with the default given as text, so it goes through the same parser.
    fn get_str<T>(
        &self,
        key: &str,
        default: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        match self.entry(key) {
            Some(e) => parse(&e.value).map_err(|message| self.invalid_at(e.line, key, message)),
            None => parse(default).map_err(|message| self.error(key, message)),
        }
    }

    fn required<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        let e = self.entry(key).ok_or_else(|| ConfigError::Missing {
            path: self.path.to_owned(),
            key: key.to_owned(),
        })?;
        parse(&e.value).map_err(|message| self.invalid_at(e.line, key, message))
    }

    fn invalid_at(&self, line: usize, key: &str, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_owned(),
            line,
            key: key.to_owned(),
            message,
        }
    }

    /// An error about `key`, at its line when the file sets it.
    pub(crate) fn error(&self, key: &str, message: String) -> ConfigError {
        match self.entry(key) {
            Some(e) => self.invalid_at(e.line, key, message),
            None => ConfigError::InvalidDefault {
                path: self.path.to_owned(),
                key: key.to_owned(),
                message,
            },
        }
    }

    /// A rule across `keys`: reported against the first of them the file sets, since that is
    /// the line the user has to change.
    pub(crate) fn require(
        &self,
        ok: bool,
        keys: &[&str],
        message: String,
    ) -> Result<(), ConfigError> {
        if ok {
            Ok(())
        } else {
            Err(self.blame(keys, message))
        }
    }

    fn blame(&self, keys: &[&str], message: String) -> ConfigError {
        let key = keys
            .iter()
            .find(|k| self.is_set(k))
            .or(keys.first())
            .copied()
            .unwrap_or_default();
        self.error(key, message)
    }

    fn warnings(&self) -> Vec<ConfigWarning> {
        let used = self.used.borrow();
        let overridden =
            self.props
                .overridden
                .iter()
                .map(|(key, first_line, line)| ConfigWarning::Overridden {
                    key: key.clone(),
                    first_line: *first_line,
                    line: *line,
                });
        let unknown = self
            .props
            .entries
            .iter()
            .filter(|(k, _)| !used.contains(k.as_str()))
            .map(|(k, e)| ConfigWarning::UnknownKey {
                key: k.clone(),
                line: e.line,
            });
        overridden.chain(unknown).collect()
    }
}

#[cfg(test)]
mod tests;
