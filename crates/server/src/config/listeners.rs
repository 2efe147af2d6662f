//! `listeners`, `advertised.listeners`, `listener.security.protocol.map` and
//! `controller.listener.names`, checked together as Kafka's `KafkaConfig` does.

use std::fmt;

/// What a listener serves. Kafka's schemas tag every API with the listener kinds that serve it
/// (`"listeners": ["broker", "controller"]`); [`ListenerKind::as_str`] uses the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListenerKind {
    Broker,
    Controller,
}

impl ListenerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ListenerKind::Broker => "broker",
            ListenerKind::Controller => "controller",
        }
    }
}

impl fmt::Display for ListenerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kafka's `SecurityProtocol`. PLAINTEXT and SSL are served so far; the SASL ones parse so
/// that a config using them gets a clear "not supported" instead of "unknown".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// SASL_PLAINTEXT and SASL_SSL: clients authenticate with SASL before anything else.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    pub fn parse(s: &str) -> Option<SecurityProtocol> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's security protocol id, as sent in BrokerRegistration.
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }
}

/// Kafka's default `listener.security.protocol.map`: every protocol maps to itself.
pub const DEFAULT_SECURITY_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// Host advertised for a listener bound to all interfaces when no advertised listener says
/// otherwise.
pub const WILDCARD_ADVERTISED_HOST: &str = "localhost";

/// One `NAME://host:port` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerAddress {
    /// Upper-cased, as Kafka's `ListenerName.normalised`.
    pub name: String,
    /// Without IPv6 brackets; empty means all interfaces.
    pub host: String,
    pub port: u16,
}

impl fmt::Display for ListenerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}:{}",
            self.name,
            bracket_ipv6(&self.host),
            self.port
        )
    }
}

/// Writes an IPv6 literal in brackets so `host:port` stays unambiguous.
pub fn bracket_ipv6(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// Parses a comma-separated list of `NAME://host:port`.
pub fn parse_addresses(raw: &str) -> Result<Vec<ListenerAddress>, String> {
    let mut out: Vec<ListenerAddress> = Vec::new();
    for item in super::values::list(raw)? {
        let address = parse_address(&item)?;
        if out.iter().any(|a| a.name == address.name) {
            return Err(format!(
                "listener name {} appears more than once",
                address.name
            ));
        }
        out.push(address);
    }
    Ok(out)
}

fn parse_address(item: &str) -> Result<ListenerAddress, String> {
    let bad = || format!("expected NAME://host:port, got \"{item}\"");
    let (name, rest) = item.split_once("://").ok_or_else(bad)?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(bad());
    }
    let (host, port) = rest.rsplit_once(':').ok_or_else(bad)?;
    let host = match host.strip_prefix('[') {
        Some(inner) => inner.strip_suffix(']').ok_or_else(bad)?,
        None if host.contains(':') => {
            return Err(format!("IPv6 address in \"{item}\" must be in brackets"))
        }
        None => host,
    };
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c))
    {
        return Err(bad());
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("port in \"{item}\" must be between 0 and 65535"))?;
    Ok(ListenerAddress {
        name: name.to_ascii_uppercase(),
        host: host.to_owned(),
        port,
    })
}

/// Parses `NAME:PROTOCOL,...`.
pub fn parse_protocol_map(raw: &str) -> Result<Vec<(String, SecurityProtocol)>, String> {
    let mut out: Vec<(String, SecurityProtocol)> = Vec::new();
    for item in super::values::list(raw)? {
        let (name, protocol) = item
            .split_once(':')
            .ok_or_else(|| format!("expected NAME:PROTOCOL, got \"{item}\""))?;
        let name = name.trim().to_ascii_uppercase();
        let protocol = SecurityProtocol::parse(protocol)
            .ok_or_else(|| format!("unknown security protocol \"{}\" (expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", protocol.trim()))?;
        if name.is_empty() {
            return Err(format!("expected NAME:PROTOCOL, got \"{item}\""));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!("listener name {name} appears more than once"));
        }
        out.push((name, protocol));
    }
    Ok(out)
}

/// A listener as the daemon uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerConfig {
    pub name: String,
    pub kind: ListenerKind,
    pub security_protocol: SecurityProtocol,
    /// Empty means all interfaces.
    pub bind_host: String,
    /// 0 asks the OS for a free port.
    pub port: u16,
    pub advertised_host: String,
    /// 0 means "the port actually bound".
    pub advertised_port: u16,
}

/// An inconsistency and the keys it involves, the one to blame first: the error is reported
/// against the first of them that the file sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerError {
    pub keys: Vec<&'static str>,
    pub message: String,
}

impl ListenerError {
    pub fn key(&self) -> &'static str {
        self.keys.first().copied().unwrap_or("listeners")
    }
}

fn err(key: &'static str, message: impl Into<String>) -> ListenerError {
    ListenerError {
        keys: vec![key],
        message: message.into(),
    }
}

fn err_any(keys: &[&'static str], message: impl Into<String>) -> ListenerError {
    ListenerError {
        keys: keys.to_vec(),
        message: message.into(),
    }
}

/// The parsed inputs of [`resolve`].
pub struct ListenerInputs<'a> {
    pub listeners: &'a [ListenerAddress],
    pub advertised: &'a [ListenerAddress],
    pub protocol_map: &'a [(String, SecurityProtocol)],
    /// Whether `listener.security.protocol.map` was written in the file.
    pub protocol_map_explicit: bool,
    pub controller_listener_names: &'a [String],
    pub broker_role: bool,
    pub controller_role: bool,
}

/// Combines the listener keys into the listeners to bind, with Kafka's consistency rules.
pub fn resolve(input: &ListenerInputs<'_>) -> Result<Vec<ListenerConfig>, ListenerError> {
    if input.listeners.is_empty() {
        return Err(err(LISTENERS, "at least one listener is required"));
    }
    check_roles(input)?;
    check_ports_and_advertised_names(input)?;
    input
        .listeners
        .iter()
        .map(|l| listener_config(input, l))
        .collect()
}

const LISTENERS: &str = "listeners";
const ADVERTISED: &str = "advertised.listeners";
const CONTROLLER_NAMES: &str = "controller.listener.names";
const MAP: &str = "listener.security.protocol.map";
const ROLES: &str = "process.roles";

impl ListenerInputs<'_> {
    fn is_controller(&self, name: &str) -> bool {
        self.controller_listener_names.iter().any(|n| n == name)
    }
}

/// The controller listeners listed when the node is a controller and only then; a broker
/// listener when the node is a broker and only then.
fn check_roles(input: &ListenerInputs<'_>) -> Result<(), ListenerError> {
    if input.controller_listener_names.is_empty() {
        return Err(err(CONTROLLER_NAMES, "must name at least one listener"));
    }
    if input.controller_role {
        if let Some(missing) = input
            .controller_listener_names
            .iter()
            .find(|n| !input.listeners.iter().any(|l| l.name == **n))
        {
            return Err(err_any(
                &[CONTROLLER_NAMES, LISTENERS, ROLES],
                format!("{missing} does not appear in listeners; every controller listener must be listed there when process.roles contains controller"),
            ));
        }
    } else if let Some(l) = input
        .listeners
        .iter()
        .find(|l| input.is_controller(&l.name))
    {
        return Err(err_any(
            &[LISTENERS, ROLES, CONTROLLER_NAMES],
            format!("{} is a controller listener (controller.listener.names) but process.roles does not contain controller", l.name),
        ));
    }
    if input.broker_role {
        if !input
            .listeners
            .iter()
            .any(|l| !input.is_controller(&l.name))
        {
            return Err(err_any(
                &[LISTENERS, ROLES, CONTROLLER_NAMES],
                "there must be at least one broker listener when process.roles contains broker; perhaps all listeners appear in controller.listener.names?",
            ));
        }
    } else if let Some(l) = input
        .listeners
        .iter()
        .find(|l| !input.is_controller(&l.name))
    {
        return Err(err_any(
            &[LISTENERS, ROLES, CONTROLLER_NAMES],
            format!("{} is not in controller.listener.names; with process.roles=controller every listener must be a controller listener", l.name),
        ));
    }
    Ok(())
}

/// Every port different (0 excepted), every advertised listener a listener.
fn check_ports_and_advertised_names(input: &ListenerInputs<'_>) -> Result<(), ListenerError> {
    for (i, l) in input.listeners.iter().enumerate() {
        if l.port != 0 && input.listeners[..i].iter().any(|o| o.port == l.port) {
            return Err(err(
                LISTENERS,
                format!(
                    "each listener must have a different port; {} repeats port {}",
                    l.name, l.port
                ),
            ));
        }
    }
    if let Some(a) = input
        .advertised
        .iter()
        .find(|a| !input.listeners.iter().any(|l| l.name == a.name))
    {
        return Err(err(
            ADVERTISED,
            format!("{} is not a listener name defined in listeners", a.name),
        ));
    }
    Ok(())
}

/// One listener of `listeners`, with its kind, security protocol and advertised address.
fn listener_config(
    input: &ListenerInputs<'_>,
    l: &ListenerAddress,
) -> Result<ListenerConfig, ListenerError> {
    let kind = if input.is_controller(&l.name) {
        ListenerKind::Controller
    } else {
        ListenerKind::Broker
    };
    let protocol = security_protocol(input, l, kind)?;
    let (advertised_host, advertised_port) = advertised_address(input, l, kind)?;
    Ok(ListenerConfig {
        name: l.name.clone(),
        kind,
        security_protocol: protocol,
        bind_host: l.host.clone(),
        port: l.port,
        advertised_host,
        advertised_port,
    })
}

/// The listener's protocol in `listener.security.protocol.map`.
fn security_protocol(
    input: &ListenerInputs<'_>,
    l: &ListenerAddress,
    kind: ListenerKind,
) -> Result<SecurityProtocol, ListenerError> {
    match input.protocol_map.iter().find(|(n, _)| *n == l.name) {
        Some((_, p)) => Ok(*p),
        // Kafka maps controller listeners to PLAINTEXT when the map is left at its default.
        None if kind == ListenerKind::Controller && !input.protocol_map_explicit => {
            Ok(SecurityProtocol::Plaintext)
        }
        None => {
            let key = if input.protocol_map_explicit {
                MAP
            } else {
                LISTENERS
            };
            Err(err(
                key,
                format!(
                    "listener name {} is not in listener.security.protocol.map",
                    l.name
                ),
            ))
        }
    }
}

/// The host and port the listener is advertised at.
fn advertised_address(
    input: &ListenerInputs<'_>,
    l: &ListenerAddress,
    kind: ListenerKind,
) -> Result<(String, u16), ListenerError> {
    match input.advertised.iter().find(|a| a.name == l.name) {
        Some(a) if is_wildcard(&a.host) && !a.host.is_empty() => {
            Err(err(
                ADVERTISED,
                format!(
                    "{} cannot use the nonroutable meta-address {}; use a routable address",
                    a.name, a.host
                ),
            ))
        }
        Some(a) if a.host.is_empty() => Ok((WILDCARD_ADVERTISED_HOST.to_owned(), a.port)),
        Some(a) => Ok((a.host.clone(), a.port)),
        None if l.host.is_empty() => Ok((WILDCARD_ADVERTISED_HOST.to_owned(), l.port)),
        // Kafka refuses to advertise a broker listener bound to 0.0.0.0; for a controller
        // listener it falls back to the host name, as an empty host does.
        None if is_wildcard(&l.host) && kind == ListenerKind::Broker => {
            Err(err(
                LISTENERS,
                format!("{} binds the nonroutable meta-address {}; set advertised.listeners to a routable address", l.name, l.host),
            ))
        }
        None if is_wildcard(&l.host) => Ok((WILDCARD_ADVERTISED_HOST.to_owned(), l.port)),
        None => Ok((l.host.clone(), l.port)),
    }
}

fn is_wildcard(host: &str) -> bool {
    host.is_empty() || host == "0.0.0.0" || host == "::"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(name: &str, host: &str, port: u16) -> ListenerAddress {
        ListenerAddress {
            name: name.to_owned(),
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn parses_addresses() {
        assert_eq!(
            parse_addresses("PLAINTEXT://127.0.0.1:9092, controller://:9093,IPV6://[::1]:0")
                .unwrap(),
            vec![
                addr("PLAINTEXT", "127.0.0.1", 9092),
                addr("CONTROLLER", "", 9093),
                addr("IPV6", "::1", 0)
            ]
        );
        assert_eq!(parse_addresses("").unwrap(), vec![]);
        assert_eq!(addr("IPV6", "::1", 9).to_string(), "IPV6://[::1]:9");
    }

    #[test]
    fn refuses_bad_addresses() {
        for bad in [
            "PLAINTEXT:9092",
            "://host:1",
            "PLAINTEXT://host",
            "PLAINTEXT://host:99999",
            "PLAINTEXT://host:-1",
            "PLAINTEXT://host:abc",
            "PLAINTEXT://::1:9092",
            "PLAINTEXT://[::1:9092",
            "PLAIN TEXT://h:1",
            "PLAINTEXT://h h:1",
            "A://h:1,A://h:2",
            "A://h:1,,B://h:2",
        ] {
            assert!(parse_addresses(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_protocol_maps() {
        let m = parse_protocol_map(DEFAULT_SECURITY_PROTOCOL_MAP).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(
            parse_protocol_map("internal:plaintext").unwrap(),
            vec![("INTERNAL".to_owned(), SecurityProtocol::Plaintext)]
        );
        assert!(parse_protocol_map("A:TLS").is_err());
        assert!(parse_protocol_map("A").is_err());
        assert!(parse_protocol_map("A:SSL,a:SSL").is_err());
    }

    struct Case {
        listeners: Vec<ListenerAddress>,
        advertised: Vec<ListenerAddress>,
        map: Option<Vec<(String, SecurityProtocol)>>,
        controller_names: Vec<String>,
        broker: bool,
        controller: bool,
    }

    impl Case {
        fn new(listeners: &str) -> Case {
            Case {
                listeners: parse_addresses(listeners).unwrap(),
                advertised: vec![],
                map: None,
                controller_names: vec!["CONTROLLER".to_owned()],
                broker: true,
                controller: true,
            }
        }

        fn resolve(&self) -> Result<Vec<ListenerConfig>, ListenerError> {
            let default_map = parse_protocol_map(DEFAULT_SECURITY_PROTOCOL_MAP).unwrap();
            resolve(&ListenerInputs {
                listeners: &self.listeners,
                advertised: &self.advertised,
                protocol_map: self.map.as_deref().unwrap_or(&default_map),
                protocol_map_explicit: self.map.is_some(),
                controller_listener_names: &self.controller_names,
                broker_role: self.broker,
                controller_role: self.controller,
            })
        }
    }

    #[test]
    fn combined_default() {
        let ls = Case::new("PLAINTEXT://127.0.0.1:9092,CONTROLLER://:9093")
            .resolve()
            .unwrap();
        assert_eq!(ls[0].kind, ListenerKind::Broker);
        assert_eq!(
            (ls[0].advertised_host.as_str(), ls[0].advertised_port),
            ("127.0.0.1", 9092)
        );
        assert_eq!(ls[1].kind, ListenerKind::Controller);
        assert_eq!(ls[1].security_protocol, SecurityProtocol::Plaintext);
        assert_eq!(
            (ls[1].bind_host.as_str(), ls[1].advertised_host.as_str()),
            ("", "localhost")
        );
    }

    #[test]
    fn controller_name_must_be_mapped_when_map_is_explicit() {
        let mut c = Case::new("PLAINTEXT://:9092,CONTROLLER://:9093");
        c.map = Some(parse_protocol_map("PLAINTEXT:PLAINTEXT").unwrap());
        assert_eq!(
            c.resolve().unwrap_err().key(),
            "listener.security.protocol.map"
        );
    }

    #[test]
    fn role_rules() {
        let mut c = Case::new("PLAINTEXT://:9092");
        assert_eq!(c.resolve().unwrap_err().key(), "controller.listener.names");
        c.controller = false;
        assert!(c.resolve().is_ok());
        let mut c = Case::new("PLAINTEXT://:9092,CONTROLLER://:9093");
        c.controller = false;
        assert_eq!(c.resolve().unwrap_err().key(), "listeners");
        let mut c = Case::new("CONTROLLER://:9093");
        assert_eq!(c.resolve().unwrap_err().key(), "listeners");
        c.broker = false;
        assert!(c.resolve().is_ok());
        let mut c = Case::new("PLAINTEXT://:9092,CONTROLLER://:9093");
        c.broker = false;
        assert_eq!(c.resolve().unwrap_err().key(), "listeners");
        let mut c = Case::new("PLAINTEXT://:9092,CONTROLLER://:9093");
        c.controller_names.clear();
        assert_eq!(c.resolve().unwrap_err().key(), "controller.listener.names");
    }

    #[test]
    fn ports_and_names() {
        assert_eq!(
            Case::new("PLAINTEXT://:9092,CONTROLLER://:9092")
                .resolve()
                .unwrap_err()
                .key(),
            "listeners"
        );
        assert!(Case::new("PLAINTEXT://:0,CONTROLLER://:0")
            .resolve()
            .is_ok());
        assert_eq!(
            Case::new("FOO://:1,CONTROLLER://:2")
                .resolve()
                .unwrap_err()
                .key(),
            "listeners"
        );
        assert_eq!(
            Case::new("SSL://:1,CONTROLLER://:2").resolve().unwrap()[0].security_protocol,
            SecurityProtocol::Ssl
        );
        for (sasl, protocol) in [
            ("SASL_SSL", SecurityProtocol::SaslSsl),
            ("SASL_PLAINTEXT", SecurityProtocol::SaslPlaintext),
        ] {
            let resolved = Case::new(&format!("{sasl}://:1,CONTROLLER://:2"))
                .resolve()
                .unwrap();
            assert_eq!(resolved[0].security_protocol, protocol);
        }
    }

    #[test]
    fn advertised_listeners() {
        let mut c = Case::new("PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093");
        assert_eq!(c.resolve().unwrap_err().key(), "listeners");
        c.advertised = parse_addresses("PLAINTEXT://kcoord.example:19092").unwrap();
        let ls = c.resolve().unwrap();
        assert_eq!(
            (ls[0].advertised_host.as_str(), ls[0].advertised_port),
            ("kcoord.example", 19092)
        );
        assert_eq!(ls[1].advertised_host, "localhost");
        c.advertised = parse_addresses("PLAINTEXT://0.0.0.0:9092").unwrap();
        assert_eq!(c.resolve().unwrap_err().key(), "advertised.listeners");
        c.advertised = parse_addresses("OTHER://h:1").unwrap();
        assert_eq!(c.resolve().unwrap_err().key(), "advertised.listeners");
    }
}
