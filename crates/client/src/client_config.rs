//! Settings for connections and clients.

use std::time::Duration;

use crate::security::{SecurityConfig, SecurityConfigError};

/// Settings shared by every connection a [`Client`](crate::Client) opens.
///
/// The defaults follow the Java client's defaults where it has one.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Sent in every request header (Kafka's `client.id`).
    pub client_id: String,
    /// How long a request may wait for its response (Kafka's `request.timeout.ms`, 30 s).
    pub request_timeout: Duration,
    /// How long establishing the connection may take: TCP, and the TLS handshake for `SSL`
    /// and `SASL_SSL` (Kafka's `socket.connection.setup.timeout.ms`, 10 s).
    pub connect_timeout: Duration,
    /// Largest response frame accepted. A larger size prefix means the stream is corrupt or
    /// hostile, so the connection is closed before anything is buffered.
    pub max_response_size: usize,
    /// `security.protocol` with its TLS and SASL settings (default `PLAINTEXT`).
    pub security: SecurityConfig,
}

impl ClientConfig {
    pub fn new(client_id: impl Into<String>) -> Self {
        ClientConfig {
            client_id: client_id.into(),
            ..ClientConfig::default()
        }
    }

    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    pub fn with_security(mut self, security: SecurityConfig) -> Self {
        self.security = security;
        self
    }

    /// The settings of Kafka client properties (a tool's `--command-config` file), starting
    /// from the defaults with `client_id`: `client.id`, `request.timeout.ms`,
    /// `socket.connection.setup.timeout.ms`, and `security.protocol` with its `sasl.*` and
    /// `ssl.*` keys ([`SecurityConfig::from_properties`]). Other keys are left to the caller.
    pub fn from_properties<K: AsRef<str>, V: AsRef<str>>(
        client_id: &str,
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Result<ClientConfig, SecurityConfigError> {
        let properties: Vec<(String, String)> = properties
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
            .collect();
        let mut config = ClientConfig::new(client_id);
        for (key, value) in &properties {
            match key.as_str() {
                "client.id" => config.client_id = value.trim().to_string(),
                "request.timeout.ms" => config.request_timeout = millis(key, value)?,
                "socket.connection.setup.timeout.ms" => {
                    config.connect_timeout = millis(key, value)?
                }
                _ => {}
            }
        }
        config.security = SecurityConfig::from_properties(properties)?;
        Ok(config)
    }
}

/// A non-negative number of milliseconds, with Kafka's message for anything else.
pub fn millis(key: &str, value: &str) -> Result<Duration, SecurityConfigError> {
    value
        .trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| SecurityConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: "Not a number of type LONG".to_string(),
        })
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_id: "kcoord-client".to_string(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_size: 100 * 1024 * 1024,
            security: SecurityConfig::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::SecurityProtocol;

    #[test]
    fn properties_set_the_client_id_timeouts_and_security() {
        let config = ClientConfig::from_properties(
            "tool",
            [
                ("client.id", " ops "),
                ("request.timeout.ms", "1500"),
                ("socket.connection.setup.timeout.ms", "250"),
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "PLAIN"),
                ("sasl.username", "u"),
                ("sasl.password", "p"),
                ("retries", "3"),
            ],
        )
        .unwrap();
        assert_eq!(config.client_id, "ops");
        assert_eq!(config.request_timeout, Duration::from_millis(1500));
        assert_eq!(config.connect_timeout, Duration::from_millis(250));
        assert_eq!(config.security.protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(
            ClientConfig::from_properties("tool", Vec::<(String, String)>::new())
                .unwrap()
                .client_id,
            "tool"
        );
        let err = ClientConfig::from_properties("tool", [("request.timeout.ms", "soon")])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "Invalid value soon for configuration request.timeout.ms: Not a number of type LONG"
        );
    }
}
