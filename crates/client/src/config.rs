//! Settings for connections and clients.

use std::time::Duration;

/// Settings shared by every connection a [`Client`](crate::Client) opens.
///
/// The defaults follow the Java client's defaults where it has one.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Sent in every request header (Kafka's `client.id`).
    pub client_id: String,
    /// How long a request may wait for its response (Kafka's `request.timeout.ms`, 30 s).
    pub request_timeout: Duration,
    /// How long establishing the TCP connection may take
    /// (Kafka's `socket.connection.setup.timeout.ms`, 10 s).
    pub connect_timeout: Duration,
    /// Largest response frame accepted. A larger size prefix means the stream is corrupt or
    /// hostile, so the connection is closed before anything is buffered.
    pub max_response_size: usize,
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
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_id: "kcoord-client".to_string(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_size: 100 * 1024 * 1024,
        }
    }
}
