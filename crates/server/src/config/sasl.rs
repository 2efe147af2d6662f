//! SASL on SASL_PLAINTEXT and SASL_SSL listeners, configured as Kafka configures its brokers
//! (docs/kafka-security-facts.md §3.5, §4.4, §5; config/README.md, "SASL"):
//!
//! - `sasl.enabled.mechanisms`, or `listener.name.<listener>.sasl.enabled.mechanisms` for one
//!   listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default, GSSAPI, and OAUTHBEARER
//!   are refused: kcoord has no Kerberos and no token validation);
//! - for each enabled mechanism, `listener.name.<listener>.<mechanism>.sasl.jaas.config` with
//!   Kafka's login module for it: PLAIN's users are its `user_<name>="<password>"` options,
//!   SCRAM's come from the metadata log (AlterUserScramCredentials);
//! - `connection.failed.authentication.delay.ms` (default 100): how long a connection whose
//!   authentication failed is kept before it is closed, as Kafka delays it.
//!
//! Listener names in these keys are lower-cased, as Kafka writes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use kcoord_sasl::{JaasConfig, PlainUsers, SaslMechanism, PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE};

use super::listeners::{ListenerConfig, ListenerKind};
use super::{ConfigError, Reader};

pub const ENABLED_MECHANISMS: &str = "sasl.enabled.mechanisms";
pub const FAILED_AUTHENTICATION_DELAY: &str = "connection.failed.authentication.delay.ms";
/// Kafka's default for `sasl.enabled.mechanisms`.
const DEFAULT_MECHANISMS: &str = "GSSAPI";
pub const DEFAULT_FAILED_AUTHENTICATION_DELAY_MS: u64 = 100;

/// SASL for every SASL_PLAINTEXT and SASL_SSL listener.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SaslSettings {
    /// By listener name.
    pub listeners: BTreeMap<String, SaslListener>,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay_ms: u64,
}

impl SaslSettings {
    /// The SASL settings of `listener`, if it authenticates with SASL.
    pub fn listener(&self, listener: &str) -> Option<&SaslListener> {
        self.listeners.get(listener)
    }
}

/// Reads the settings of every listener whose security protocol is SASL_*.
/// With `upstream_authenticates` (gateway mode's `gateway.authentication=upstream`), the broker
/// listeners relay each exchange to the upstream cluster and read no JAAS users.
pub(super) fn read(
    r: &Reader<'_>,
    listeners: &[ListenerConfig],
    upstream_authenticates: bool,
) -> Result<SaslSettings, ConfigError> {
    let mut settings = SaslSettings {
        listeners: BTreeMap::new(),
        failed_authentication_delay_ms: read_failed_authentication_delay(r)?,
    };
    for l in listeners.iter().filter(|l| l.security_protocol.uses_sasl()) {
        let relayed = upstream_authenticates && l.kind == ListenerKind::Broker;
        settings
            .listeners
            .insert(l.name.clone(), read_listener(r, &l.name, relayed)?);
    }
    Ok(settings)
}

/// What one SASL listener accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct SaslListener {
    /// The enabled mechanisms, in the order configured (the SaslHandshake response lists them).
    pub mechanisms: Vec<SaslMechanism>,
    /// PLAIN's users, when PLAIN is enabled.
    pub plain_users: Arc<PlainUsers>,
    /// Whether the upstream cluster checks the credentials (each exchange relayed to it, in
    /// gateway mode) rather than kcoord.
    pub relayed: bool,
}

impl SaslListener {
    /// The enabled mechanism named exactly `name` (Kafka compares case-sensitively).
    pub fn mechanism(&self, name: &str) -> Option<SaslMechanism> {
        self.mechanisms.iter().copied().find(|m| m.name() == name)
    }

    /// The names of the enabled mechanisms, for the SaslHandshake response.
    pub fn mechanism_names(&self) -> Vec<String> {
        self.mechanisms
            .iter()
            .map(|m| m.name().to_owned())
            .collect()
    }
}

/// The SASL settings of the listener named `listener`.
fn read_listener(
    r: &Reader<'_>,
    listener: &str,
    relayed: bool,
) -> Result<SaslListener, ConfigError> {
    let prefix = format!("listener.name.{}.", listener.to_lowercase());
    let prefixed = format!("{prefix}{ENABLED_MECHANISMS}");
    let raw = match r.get(&prefixed, None, |v| Ok(Some(v.to_owned())))? {
        Some(raw) => raw,
        None => r.get(ENABLED_MECHANISMS, DEFAULT_MECHANISMS.to_owned(), |v| {
            Ok(v.to_owned())
        })?,
    };
    let key = if r.is_set(&prefixed) {
        prefixed.as_str()
    } else {
        ENABLED_MECHANISMS
    };
    let mechanisms = parse_mechanisms(&raw).map_err(|message| r.error(key, message))?;
    let mut plain_users = PlainUsers::new();
    for mechanism in &mechanisms {
        let jaas_key = format!(
            "{prefix}{}.sasl.jaas.config",
            mechanism.name().to_lowercase()
        );
        if relayed {
            r.require(
                !r.is_set(&jaas_key),
                &[&jaas_key, super::gateway::AUTHENTICATION],
                format!(
                    "with {}=upstream the upstream cluster checks the credentials of listener \
                     {listener}'s clients, so kcoord reads no users here: unset {jaas_key}",
                    super::gateway::AUTHENTICATION
                ),
            )?;
            continue;
        }
        let Some(text) = r.get(&jaas_key, None, |v| Ok(Some(v.to_owned())))? else {
            return Err(r.error(
                &jaas_key,
                format!(
                    "listener {listener} enables {mechanism} but {jaas_key} is not set (Kafka: \
                     \"Could not find a 'KafkaServer' or '{}.KafkaServer' entry in the JAAS \
                     configuration\"); kcoord reads no JAAS file",
                    listener.to_lowercase()
                ),
            ));
        };
        let jaas = JaasConfig::parse(&text).map_err(|e| r.error(&jaas_key, e.to_string()))?;
        let expected = match mechanism {
            SaslMechanism::Plain => PLAIN_LOGIN_MODULE,
            SaslMechanism::Scram(_) => SCRAM_LOGIN_MODULE,
        };
        let module = jaas.entries().first().map(|e| e.login_module.as_str());
        if module != Some(expected) {
            return Err(r.error(
                &jaas_key,
                format!(
                    "{mechanism} needs the login module {expected}, not {}",
                    module.unwrap_or("none")
                ),
            ));
        }
        if *mechanism == SaslMechanism::Plain {
            plain_users = PlainUsers::from_jaas(&jaas);
        }
    }
    Ok(SaslListener {
        mechanisms,
        plain_users: Arc::new(plain_users),
        relayed,
    })
}

/// The comma-separated mechanism list, each once, in order.
fn parse_mechanisms(raw: &str) -> Result<Vec<SaslMechanism>, String> {
    let mut mechanisms = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let mechanism = SaslMechanism::from_name(name).map_err(|_| match name {
            "GSSAPI" => "GSSAPI (Kerberos), Kafka's default, is not supported: enable PLAIN, \
                         SCRAM-SHA-256 or SCRAM-SHA-512"
                .to_owned(),
            other => format!(
                "unsupported SASL mechanism {other}: kcoord supports PLAIN, SCRAM-SHA-256 and \
                 SCRAM-SHA-512"
            ),
        })?;
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    if mechanisms.is_empty() {
        return Err("No SASL mechanisms are enabled".to_owned());
    }
    Ok(mechanisms)
}

/// `connection.failed.authentication.delay.ms`.
fn read_failed_authentication_delay(r: &Reader<'_>) -> Result<u64, ConfigError> {
    r.get(
        FAILED_AUTHENTICATION_DELAY,
        DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
        |v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("expected a number of milliseconds >= 0, got {v:?}"))
        },
    )
}
