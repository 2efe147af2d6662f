//! TLS with rustls (the ring provider, TLS 1.3 and 1.2): the client configuration from PEM
//! stores, the verifier that skips only the host name check when asked to, and the handshake.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::properties::SecurityConfigError;
use crate::error::ClientError;

/// Where the CA certificates come from.
pub(crate) enum TrustSource {
    File {
        key: &'static str,
        path: String,
    },
    Inline {
        key: &'static str,
        pem: String,
    },
    /// The operating system's store (rustls-native-certs).
    System,
}

/// Where the client's key and certificate chain come from.
pub(crate) enum KeySource {
    /// One PEM file with the key and the chain (Kafka's `ssl.keystore.location`).
    File { key: &'static str, path: String },
    /// Kafka's `ssl.keystore.key` and `ssl.keystore.certificate.chain`.
    Inline { key_pem: String, chain_pem: String },
    /// librdkafka's `ssl.certificate.location` and `ssl.key.location`.
    Split {
        chain_path: String,
        key_path: String,
    },
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(key: &'static str, path: &str) -> Result<Vec<u8>, SecurityConfigError> {
    std::fs::read(path).map_err(|source| SecurityConfigError::Read {
        key,
        path: path.to_string(),
        source,
    })
}

fn pem_error(key: &'static str, reason: impl Into<String>) -> SecurityConfigError {
    SecurityConfigError::Pem {
        key,
        reason: reason.into(),
    }
}

/// Every CERTIFICATE block of a PEM text; at least one.
fn certificates(
    key: &'static str,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, SecurityConfigError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(key, format!("the PEM does not parse: {e}")))?;
    if certs.is_empty() {
        return Err(pem_error(key, "no CERTIFICATE entries in the PEM"));
    }
    Ok(certs)
}

/// The one private key of a PEM text (PKCS#8, PKCS#1 or SEC1). Encrypted keys are refused by
/// name, since this client cannot decrypt them.
fn private_key(
    key: &'static str,
    pem: &[u8],
) -> Result<PrivateKeyDer<'static>, SecurityConfigError> {
    if pem
        .windows(b"ENCRYPTED PRIVATE KEY".len())
        .any(|w| w == b"ENCRYPTED PRIVATE KEY")
    {
        return Err(pem_error(
            key,
            "the private key is encrypted, which kcoord's client does not read (ssl.key.password is not supported): decrypt it with `openssl pkcs8 -topk8 -nocrypt`",
        ));
    }
    PrivateKeyDer::from_pem_slice(pem)
        .map_err(|e| pem_error(key, format!("no usable PRIVATE KEY entry in the PEM ({e})")))
}

fn root_store(trust: TrustSource) -> Result<RootCertStore, SecurityConfigError> {
    let mut roots = RootCertStore::empty();
    let (key, certs) = match trust {
        TrustSource::File { key, path } => (key, certificates(key, &read(key, &path)?)?),
        TrustSource::Inline { key, pem } => (key, certificates(key, pem.as_bytes())?),
        TrustSource::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(SecurityConfigError::Invalid(
                    "no trust store: set ssl.truststore.location (or ssl.truststore.certificates) to the PEM of the CA that signed the server's certificate; the system has no CA certificates to fall back on".into(),
                ));
            }
            return Ok(roots);
        }
    };
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| pem_error(key, format!("a certificate cannot be trusted: {e}")))?;
    }
    Ok(roots)
}

type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn identity(source: KeySource) -> Result<Identity, SecurityConfigError> {
    match source {
        KeySource::File { key, path } => {
            let pem = read(key, &path)?;
            Ok((certificates(key, &pem)?, private_key(key, &pem)?))
        }
        KeySource::Inline { key_pem, chain_pem } => Ok((
            certificates("ssl.keystore.certificate.chain", chain_pem.as_bytes())?,
            private_key("ssl.keystore.key", key_pem.as_bytes())?,
        )),
        KeySource::Split {
            chain_path,
            key_path,
        } => {
            let chain = read("ssl.certificate.location", &chain_path)?;
            let key = read("ssl.key.location", &key_path)?;
            Ok((
                certificates("ssl.certificate.location", &chain)?,
                private_key("ssl.key.location", &key)?,
            ))
        }
    }
}

/// The rustls configuration for these stores.
pub(crate) fn client_config(
    trust: TrustSource,
    key: Option<KeySource>,
    verify_hostname: bool,
) -> Result<Arc<rustls::ClientConfig>, SecurityConfigError> {
    let roots = Arc::new(root_store(trust)?);
    let provider = provider();
    let tls_error = |e: rustls::Error| SecurityConfigError::Invalid(format!("TLS: {e}"));
    let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| SecurityConfigError::Invalid(format!("TLS: {e}")))?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?;
    let builder = if verify_hostname {
        builder.with_webpki_verifier(verifier)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyHostName { inner: verifier }))
    };
    let config = match key.map(identity).transpose()? {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
            SecurityConfigError::Invalid(format!(
                "TLS: the client key and certificate do not go together: {e}"
            ))
        })?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// `ssl.endpoint.identification.algorithm=` (empty): the certificate chain is checked as
/// always (trusted CA, validity dates, usage); only a certificate that names another host is
/// let through. The WebPKI verifier checks the name after the chain, so its name error means
/// the chain was fine.
#[derive(Debug)]
struct AnyHostName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The host of `host:port` or `[v6]:port`.
pub(crate) fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        if let Some((host, _)) = rest.split_once(']') {
            return host;
        }
    }
    addr.rsplit_once(':').map_or(addr, |(host, _)| host)
}

/// The TLS handshake over a connected socket, checking the certificate against the host of
/// `addr` (as SNI too, unless the host is an address).
pub(crate) async fn handshake(
    addr: &str,
    config: Arc<rustls::ClientConfig>,
    tcp: TcpStream,
) -> Result<TlsStream<TcpStream>, ClientError> {
    let host = host_of(addr);
    let name = ServerName::try_from(host.to_string()).map_err(|e| ClientError::Tls {
        addr: addr.to_string(),
        reason: format!("{host:?} is not a host name or address TLS can check: {e}"),
    })?;
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| ClientError::Tls {
            addr: addr.to_string(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_come_out_of_addresses() {
        assert_eq!(host_of("broker-1.example:9093"), "broker-1.example");
        assert_eq!(host_of("127.0.0.1:9093"), "127.0.0.1");
        assert_eq!(host_of("[::1]:9093"), "::1");
        assert_eq!(host_of("nohost"), "nohost");
    }

    #[test]
    fn an_encrypted_key_is_refused_by_name() {
        let pem =
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let err = private_key("ssl.keystore.location", pem)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("ssl.keystore.location: the private key is encrypted"),
            "{err}"
        );
    }

    #[test]
    fn a_store_without_certificates_or_keys_is_refused() {
        let err = certificates("ssl.truststore.location", b"nothing here")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "ssl.truststore.location: no CERTIFICATE entries in the PEM"
        );
        let err = private_key("ssl.key.location", b"nothing")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("ssl.key.location: no usable PRIVATE KEY entry in the PEM"),
            "{err}"
        );
    }
}
