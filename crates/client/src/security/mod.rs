//! How a connection protects and authenticates itself: Kafka's `security.protocol` with TLS
//! (rustls) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
//!
//! [`SecurityConfig::from_properties`] reads Kafka's client properties (and librdkafka's names
//! for the same settings); [`crate::Connection::connect`] applies the result: a TLS handshake
//! for `SSL` and `SASL_SSL`, then for `SASL_*` ApiVersions, SaslHandshake v1 and
//! SaslAuthenticate tokens until the mechanism completes, all before the connection is handed
//! out.

mod properties;
pub(crate) mod sasl;
pub(crate) mod tls;

use std::fmt;
use std::sync::Arc;

pub use kcoord_sasl::{SaslMechanism, ScramMechanism};
pub use properties::SecurityConfigError;

/// Kafka's `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    SaslPlaintext,
    Ssl,
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name, e.g. `SASL_SSL`.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol of a name, in any case (Kafka's `security.protocol` is case-insensitive).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        [
            SecurityProtocol::Plaintext,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The SASL mechanism and the credentials to prove with it.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslCredentials {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
    /// SCRAM with a delegation token (`tokenauth="true"` in a `ScramLoginModule` JAAS
    /// config): the user name is the token id, the password its HMAC.
    pub token_authentication: bool,
}

impl SaslCredentials {
    pub fn new(mechanism: SaslMechanism, username: &str, password: &str) -> SaslCredentials {
        SaslCredentials {
            mechanism,
            username: username.to_string(),
            password: password.to_string(),
            token_authentication: false,
        }
    }
}

/// The password stays out of logs.
impl fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("token_authentication", &self.token_authentication)
            .finish_non_exhaustive()
    }
}

/// The TLS side: a rustls client configuration built from the trust store, the optional key
/// store, and whether the server's name is checked.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub(crate) config: Arc<rustls::ClientConfig>,
}

impl TlsSettings {
    /// Settings over a ready rustls configuration (its verifier decides about host names).
    pub fn from_rustls(config: Arc<rustls::ClientConfig>) -> TlsSettings {
        TlsSettings { config }
    }

    pub fn rustls_config(&self) -> &Arc<rustls::ClientConfig> {
        &self.config
    }
}

/// Everything a connection needs to secure itself. The default is `PLAINTEXT`.
#[derive(Clone, Debug, Default)]
pub struct SecurityConfig {
    pub protocol: SecurityProtocol,
    /// Required with `SASL_PLAINTEXT` and `SASL_SSL`, ignored otherwise.
    pub sasl: Option<SaslCredentials>,
    /// Required with `SSL` and `SASL_SSL`, ignored otherwise.
    pub tls: Option<TlsSettings>,
}

impl SecurityConfig {
    pub fn plaintext() -> SecurityConfig {
        SecurityConfig::default()
    }

    /// `SASL_PLAINTEXT` with these credentials.
    pub fn sasl_plaintext(credentials: SaslCredentials) -> SecurityConfig {
        SecurityConfig {
            protocol: SecurityProtocol::SaslPlaintext,
            sasl: Some(credentials),
            tls: None,
        }
    }

    /// The SASL credentials when the protocol uses SASL.
    pub(crate) fn sasl_credentials(&self) -> Option<&SaslCredentials> {
        self.protocol
            .uses_sasl()
            .then_some(self.sasl.as_ref())
            .flatten()
    }

    /// The TLS settings when the protocol uses TLS.
    pub(crate) fn tls_settings(&self) -> Option<&TlsSettings> {
        self.protocol
            .uses_tls()
            .then_some(self.tls.as_ref())
            .flatten()
    }
}
