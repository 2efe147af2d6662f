//! The listeners a broker registers: `advertised.listeners` (else `listeners`) without the
//! controller listeners, each with the security protocol `listener.security.protocol.map`
//! gives it.
use kcoord_wire::messages::broker_registration_request::Listener;

use super::properties::BrokerProperties;
use super::BrokerError;

/// Kafka's default `listener.security.protocol.map`: each protocol's name maps to itself.
const PROTOCOLS: &[(&str, i16)] = &[
    ("PLAINTEXT", 0),
    ("SSL", 1),
    ("SASL_PLAINTEXT", 2),
    ("SASL_SSL", 3),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerListenerConfig {
    /// Upper case, as Kafka normalises listener names.
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Kafka's `SecurityProtocol` id.
    pub security_protocol: i16,
}

impl BrokerListenerConfig {
    pub(crate) fn into_request(self) -> Listener {
        Listener {
            name: self.name,
            host: self.host,
            port: self.port,
            security_protocol: self.security_protocol,
            ..Default::default()
        }
    }
}

/// Parses `NAME://host:port[,...]` (`[::1]` for IPv6) into (name, host, port). An empty host
/// (bound to every interface) is advertised as `localhost`, as kcoord's own listeners are.
pub fn parse_listeners(key: &str, text: &str) -> Result<Vec<(String, String, u16)>, BrokerError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |reason: &str| BrokerError::config(key, format!("{item:?}: {reason}"));
        let (name, address) = item
            .split_once("://")
            .ok_or_else(|| bad("expected NAME://host:port"))?;
        let (host, port) = address.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let port: u16 = port
            .parse()
            .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
        if name.is_empty() {
            return Err(bad("no listener name"));
        }
        let host = if host.is_empty() { "localhost" } else { host };
        out.push((name.to_ascii_uppercase(), host.to_string(), port));
    }
    Ok(out)
}

fn protocol_id(name: &str) -> Option<i16> {
    PROTOCOLS
        .iter()
        .find(|(p, _)| p.eq_ignore_ascii_case(name))
        .map(|(_, id)| *id)
}

pub(crate) fn broker_listeners(
    properties: &BrokerProperties,
) -> Result<Vec<BrokerListenerConfig>, BrokerError> {
    let (key, text) = match properties
        .get("advertised.listeners")
        .filter(|s| !s.trim().is_empty())
    {
        Some(text) => ("advertised.listeners", text),
        None => (
            "listeners",
            properties.get("listeners").unwrap_or("PLAINTEXT://:9092"),
        ),
    };
    let controllers: Vec<String> = properties
        .get("controller.listener.names")
        .unwrap_or("")
        .split(',')
        .map(|n| n.trim().to_ascii_uppercase())
        .collect();
    let protocol_map: Vec<(String, String)> = match properties.get("listener.security.protocol.map")
    {
        Some(map) => map
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|entry| {
                entry
                    .split_once(':')
                    .map(|(l, p)| (l.trim().to_ascii_uppercase(), p.trim().to_string()))
                    .ok_or_else(|| {
                        BrokerError::config(
                            "listener.security.protocol.map",
                            format!("{entry:?} is not LISTENER:PROTOCOL"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        None => PROTOCOLS
            .iter()
            .map(|(p, _)| (p.to_string(), p.to_string()))
            .collect(),
    };
    let mut listeners = Vec::new();
    for (name, host, port) in parse_listeners(key, text)? {
        if controllers.contains(&name) {
            continue;
        }
        let protocol = protocol_map
            .iter()
            .find(|(listener, _)| *listener == name)
            .map(|(_, protocol)| protocol.as_str())
            .ok_or_else(|| {
                BrokerError::config(
                    "listener.security.protocol.map",
                    format!("No security protocol defined for listener {name}"),
                )
            })?;
        let security_protocol = protocol_id(protocol).ok_or_else(|| {
            BrokerError::config(
                "listener.security.protocol.map",
                format!("unknown security protocol {protocol}"),
            )
        })?;
        listeners.push(BrokerListenerConfig {
            name,
            host,
            port,
            security_protocol,
        });
    }
    if listeners.is_empty() {
        return Err(BrokerError::config(
            key,
            "no broker listener (every listener is a controller listener)",
        ));
    }
    Ok(listeners)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(list: &[(&str, &str)]) -> BrokerProperties {
        list.iter().copied().collect()
    }

    #[test]
    fn listeners_default_to_kafkas_and_skip_controller_listeners() {
        let l = broker_listeners(&props(&[])).unwrap();
        assert_eq!(
            l,
            vec![BrokerListenerConfig {
                name: "PLAINTEXT".into(),
                host: "localhost".into(),
                port: 9092,
                security_protocol: 0
            }]
        );
        let l = broker_listeners(&props(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,secure://[::1]:9094",
            ),
            ("controller.listener.names", "CONTROLLER"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_SSL",
            ),
        ]))
        .unwrap();
        let got: Vec<_> = l
            .iter()
            .map(|l| {
                (
                    l.name.as_str(),
                    l.host.as_str(),
                    l.port,
                    l.security_protocol,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("PLAINTEXT", "127.0.0.1", 9092, 0),
                ("SECURE", "::1", 9094, 3)
            ]
        );
    }

    #[test]
    fn advertised_listeners_win_and_mistakes_are_reported() {
        let l = broker_listeners(&props(&[
            ("listeners", "PLAINTEXT://:9092"),
            ("advertised.listeners", "PLAINTEXT://broker1.example:19092"),
        ]))
        .unwrap();
        assert_eq!((l[0].host.as_str(), l[0].port), ("broker1.example", 19092));
        assert!(
            broker_listeners(&props(&[("listeners", "INTERNAL://:9092")])).is_err(),
            "no protocol for INTERNAL"
        );
        assert!(broker_listeners(&props(&[("listeners", "PLAINTEXT://host")])).is_err());
        assert!(broker_listeners(&props(&[("listeners", "PLAINTEXT://host:99999")])).is_err());
        assert!(broker_listeners(&props(&[
            ("listeners", "C://:1"),
            ("controller.listener.names", "C"),
            ("listener.security.protocol.map", "C:PLAINTEXT")
        ]))
        .is_err());
    }
}
