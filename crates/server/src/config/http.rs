//! `http.listener`: where the HTTP listener (`/metrics`, `/health/*`) listens, if anywhere.

use super::listeners::ListenerConfig;
use super::ConfigError;
use super::Reader;

pub const KEY: &str = "http.listener";

/// The HTTP listener's address: `host:port`, IPv6 in brackets, an empty host for every
/// interface, port 0 for a free port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpListener {
    pub host: String,
    pub port: u16,
}

impl HttpListener {
    /// The host to bind: an empty one means every interface, as for the Kafka listeners.
    pub fn bind_host(&self) -> &str {
        if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        }
    }
}

/// `http.listener`, unset (no HTTP listener) or an address whose port no Kafka listener uses.
pub(super) fn read(
    r: &Reader<'_>,
    listeners: &[ListenerConfig],
) -> Result<Option<HttpListener>, ConfigError> {
    let Some(http) = r.get(KEY, None, |v| parse(v).map(Some))? else {
        return Ok(None);
    };
    let clash = listeners
        .iter()
        .find(|l| http.port != 0 && l.port == http.port);
    match clash {
        Some(l) => Err(r.error(
            KEY,
            format!("port {} is already used by listener {}", http.port, l.name),
        )),
        None => Ok(Some(http)),
    }
}

fn parse(raw: &str) -> Result<HttpListener, String> {
    let raw = raw.trim();
    let bad = || format!("expected host:port (e.g. 127.0.0.1:8080), got \"{raw}\"");
    let (host, port) = raw.rsplit_once(':').ok_or_else(bad)?;
    let host = match host.strip_prefix('[') {
        Some(inner) => inner.strip_suffix(']').ok_or_else(bad)?,
        None if host.contains(':') => {
            return Err(format!(
                "an IPv6 address must be in brackets, got \"{raw}\""
            ))
        }
        None => host,
    };
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c))
    {
        return Err(bad());
    }
    let port = port
        .parse()
        .map_err(|_| format!("the port must be between 0 and 65535, got \"{raw}\""))?;
    Ok(HttpListener {
        host: host.to_owned(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let at = |host: &str, port| HttpListener {
            host: host.to_owned(),
            port,
        };
        assert_eq!(parse("127.0.0.1:8080"), Ok(at("127.0.0.1", 8080)));
        assert_eq!(parse(" localhost:0 "), Ok(at("localhost", 0)));
        assert_eq!(parse("[::1]:9100"), Ok(at("::1", 9100)));
        assert_eq!(parse(":8080"), Ok(at("", 8080)));
        assert_eq!(parse(":8080").unwrap().bind_host(), "0.0.0.0");
        for bad in [
            "8080", "host", "::1:8080", "a b:1", "h:65536", "h:-1", "h:", "[::1:80",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
