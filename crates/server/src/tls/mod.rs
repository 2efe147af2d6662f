//! TLS for SSL listeners (issue 14): the PEM stores Kafka's `ssl.*` keys name (`pem`), the
//! rustls server they make, and the principal a client certificate gives (`dn`, `mapping`).
//!
//! rustls runs with its `ring` provider (it builds with a C compiler alone). The server speaks
//! TLS 1.3 and 1.2 (`ssl.enabled.protocols`), offers no ALPN, and serves its one certificate
//! chain whatever SNI the client sends (Kafka's Java client sends the broker's host name, or
//! none for an IP address).

pub mod dn;
pub mod mapping;
pub mod pem;

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

pub use mapping::{MapError, PrincipalMapper};

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A client must present a certificate the truststore vouches for.
    Required,
    /// A client may present one; without it, it is `User:ANONYMOUS`.
    Requested,
    None,
}

impl ClientAuth {
    /// The exact strings Kafka's `ConfigDef` validator accepts (after trimming, as `ConfigDef`
    /// trims every string), with its message otherwise.
    pub fn parse(raw: &str) -> Result<ClientAuth, String> {
        match raw.trim() {
            "required" => Ok(ClientAuth::Required),
            "requested" => Ok(ClientAuth::Requested),
            "none" => Ok(ClientAuth::None),
            _ => Err("String must be one of: required, requested, none".to_owned()),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::Required => "required",
            ClientAuth::Requested => "requested",
            ClientAuth::None => "none",
        }
    }
}

/// A TLS version a listener speaks (`ssl.enabled.protocols`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }

    fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        }
    }
}

/// What a listener's stores hold, read and checked.
#[derive(Debug)]
pub struct ServerStores {
    /// The leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivatePkcs8KeyDer<'static>,
    /// The truststore: the CAs whose client certificates are accepted.
    pub trusted: Option<Vec<CertificateDer<'static>>>,
}

/// Why a server could not be built from otherwise readable stores.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("the private key does not match the certificate (the first CERTIFICATE of the chain is the server's)")]
    KeyMismatch,
    #[error("Invalid PEM keystore configs: {0}")]
    Keystore(String),
    #[error("Invalid PEM truststore configs: {0}")]
    Truststore(String),
    #[error("ssl.client.auth={0} needs a truststore (ssl.truststore.location or ssl.truststore.certificates): kcoord has no default truststore")]
    NoTruststore(&'static str),
    #[error("{0}")]
    Other(String),
}

/// The rustls server a listener runs: its certificate and key, the client certificates it asks
/// for and trusts, the TLS versions it speaks.
pub fn server_config(
    stores: ServerStores,
    client_auth: ClientAuth,
    versions: &[TlsVersion],
) -> Result<Arc<ServerConfig>, ServerError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        versions.iter().map(|v| v.rustls()).collect();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| ServerError::Other(e.to_string()))?;
    let builder = match (client_auth, stores.trusted) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (auth, None) => return Err(ServerError::NoTruststore(auth.as_str())),
        (auth, Some(trusted)) => {
            let mut roots = RootCertStore::empty();
            for (i, cert) in trusted.into_iter().enumerate() {
                roots.add(cert).map_err(|e| {
                    ServerError::Truststore(format!(
                        "certificate {} is not a usable CA: {e}",
                        i + 1
                    ))
                })?;
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
            let verifier = match auth {
                ClientAuth::Requested => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| ServerError::Truststore(e.to_string()))?,
            )
        }
    };
    let config = builder
        .with_single_cert(stores.chain, PrivateKeyDer::Pkcs8(stores.key))
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                ServerError::KeyMismatch
            }
            other => ServerError::Keystore(format!("Private key could not be loaded: {other}")),
        })?;
    Ok(Arc::new(config))
}
