//! Certificates made in the test (rcgen): a CA, a server certificate for 127.0.0.1 and
//! localhost, client certificates with chosen subjects; PEM files in a temporary directory; and a
//! rustls client speaking Kafka frames.
#![allow(dead_code)] // each test binary uses its own part

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::RequestHeader;
use kcoord_wire::Encodable;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A certificate and its private key.
pub struct Identity {
    pub cert_pem: String,
    pub key_pem: String,
    pub cert: CertificateDer<'static>,
    pub key_der: Vec<u8>,
}

impl Identity {
    /// One PEM text with the key and the certificate, as `ssl.keystore.location` wants it.
    pub fn keystore_pem(&self) -> String {
        format!("{}{}", self.key_pem, self.cert_pem)
    }
}

/// A CA and a directory to write stores into.
pub struct Pki {
    pub dir: tempfile::TempDir,
    ca_params: CertificateParams,
    ca_key: KeyPair,
    pub ca: Identity,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&ca_key).unwrap();
        let ca = Identity {
            cert_pem: cert.pem(),
            key_pem: ca_key.serialize_pem(),
            cert: cert.der().clone(),
            key_der: ca_key.serialize_der(),
        };
        Pki {
            dir: tempfile::tempdir().unwrap(),
            ca_params: params,
            ca_key,
            ca,
        }
    }

    fn issue(&self, params: CertificateParams) -> Identity {
        let key = KeyPair::generate().unwrap();
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        let cert = params.signed_by(&key, &issuer).unwrap();
        Identity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }

    /// A server certificate for localhost and 127.0.0.1.
    pub fn server(&self) -> Identity {
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, "kcoord");
        self.issue(params)
    }

    /// A client certificate whose subject has these RDNs, least specific first (the encoded
    /// order; Java writes them most specific first).
    pub fn client(&self, rdns: &[(DnType, &str)]) -> Identity {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in rdns {
            params.distinguished_name.push(ty.clone(), *value);
        }
        self.issue(params)
    }

    /// A client certificate (CN=`name`) that expired a day ago.
    pub fn expired_client(&self, name: &str) -> Identity {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(30);
        params.not_after = now - time::Duration::days(1);
        self.issue(params)
    }

    /// Writes a file in the directory; returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// The PKCS#8 key encrypted with PBES2 (PBKDF2-SHA256, AES-256-CBC), as
/// `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes it.
pub fn encrypted_key_pem(key_der: &[u8], password: &str) -> String {
    use pkcs8::der::Decode;
    let params = pkcs5::pbes2::Parameters::generate_pbkdf2_sha256_aes256cbc(
        2048,
        b"kcoord-test-salt",
        [7; 16],
    )
    .unwrap();
    let encrypted = pkcs8::PrivateKeyInfoRef::from_der(key_der)
        .unwrap()
        .encrypt_with_params(params, password)
        .unwrap();
    pem_block("ENCRYPTED PRIVATE KEY", encrypted.as_bytes())
}

pub fn pem_block(label: &str, der: &[u8]) -> String {
    use base64ct::Encoding;
    let body = base64ct::Base64::encode_string(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A rustls client trusting `ca`, with a client certificate when given.
pub fn client_config(
    ca: &Identity,
    client: Option<&Identity>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert.clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(versions)
    .unwrap()
    .with_root_certificates(roots);
    let config = match client {
        Some(id) => builder
            .with_client_auth_cert(
                vec![id.cert.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(id.key_der.clone())),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// Connects with TLS as Kafka's Java client does: SNI `localhost` (or none for an address).
pub async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    server_name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_owned()).unwrap();
    tokio::time::timeout(
        TIMEOUT,
        tokio_rustls::TlsConnector::from(config).connect(name, tcp),
    )
    .await
    .expect("handshake timed out")
}

pub fn frame<R: Encodable>(api: ApiKey, version: i16, correlation_id: i32, body: &R) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id,
        client_id: Some("tls-test".to_owned()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut out = (buf.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&buf);
    out
}

/// Sends one request and reads one response frame; `None` when the server closed the
/// connection (or the TLS session failed) instead.
pub async fn exchange<S>(stream: &mut S, request: &[u8]) -> Option<Bytes>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    stream.write_all(request).await.ok()?;
    stream.flush().await.ok()?;
    let mut size = [0u8; 4];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut size))
        .await
        .expect("timed out waiting for a response")
        .ok()?;
    let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).ok()?];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut body))
        .await
        .expect("timed out reading a response")
        .ok()?;
    Some(Bytes::from(body))
}
