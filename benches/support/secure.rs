//! How the benches connect: a [`Dial`] names a listener and its security protocol (PLAINTEXT,
//! SSL, or SASL_SSL with PLAIN) and makes the connection, TLS handshake and SASL login
//! included; the [`Stream`] it gives reads and writes Kafka frames either way. The client side
//! of TLS is rustls with its ring provider, as in the tests (`tests/secured_config.rs`), TLS 1.3
//! only and without session resumption, so every connection makes a full handshake. [`Pki`]
//! makes a throwaway CA and a server certificate (rcgen) in the PEM files the daemon's
//! `ssl.keystore.*` keys read.
#![allow(dead_code)] // each bench uses its own part

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kcoord_wire::{Decodable, Encodable};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;

use crate::fleet;

/// Connecting, the handshake, the login and each answer read by [`Stream::call`] must each
/// complete within this long.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer [`Stream::call`] reads.
const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Where and how to connect.
#[derive(Clone)]
pub struct Dial {
    addr: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// SASL PLAIN user and password, sent after the TLS handshake.
    plain: Option<Arc<(String, String)>>,
}

impl Dial {
    pub fn plaintext(addr: impl Into<String>) -> Dial {
        Dial {
            addr: addr.into(),
            tls: None,
            plain: None,
        }
    }

    pub fn ssl(addr: impl Into<String>, tls: Arc<rustls::ClientConfig>) -> Dial {
        Dial {
            addr: addr.into(),
            tls: Some(tls),
            plain: None,
        }
    }

    pub fn sasl_ssl(
        addr: impl Into<String>,
        tls: Arc<rustls::ClientConfig>,
        user: &str,
        password: &str,
    ) -> Dial {
        Dial {
            addr: addr.into(),
            tls: Some(tls),
            plain: Some(Arc::new((user.into(), password.into()))),
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The security protocol, as Kafka names it.
    pub fn protocol(&self) -> &'static str {
        match (&self.tls, &self.plain) {
            (None, None) => "PLAINTEXT",
            (None, Some(_)) => "SASL_PLAINTEXT",
            (Some(_), None) => "SSL",
            (Some(_), Some(_)) => "SASL_SSL",
        }
    }

    /// A new connection: TCP (no Nagle), then the TLS handshake, then the SASL login, as
    /// configured.
    pub async fn connect(&self) -> Result<Stream, String> {
        self.connect_from(None).await
    }

    /// [`Dial::connect`] from this local address (any port). A client that opens and closes
    /// connections in a loop needs several: each closed connection holds its port in
    /// TIME_WAIT, and Linux reuses such a port for the same destination only a second later
    /// (`tcp_tw_reuse`), which caps one address at about 14,000 connections a second (connect
    /// takes the even half of the ephemeral range).
    pub async fn connect_from(&self, source: Option<IpAddr>) -> Result<Stream, String> {
        let addr = &self.addr;
        let connecting = async {
            match source {
                None => TcpStream::connect(addr).await,
                Some(ip) => {
                    let remote: SocketAddr = addr
                        .parse()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                    let socket = match remote {
                        SocketAddr::V4(_) => TcpSocket::new_v4()?,
                        SocketAddr::V6(_) => TcpSocket::new_v6()?,
                    };
                    socket.bind(SocketAddr::new(ip, 0))?;
                    socket.connect(remote).await
                }
            }
        };
        let tcp = tokio::time::timeout(IO_TIMEOUT, connecting)
            .await
            .map_err(|_| format!("connect to {addr}: timed out"))?
            .map_err(|e| format!("connect to {addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let mut stream = match &self.tls {
            None => Stream::Tcp(tcp),
            Some(config) => {
                // The host the client dials, as Kafka's clients check it.
                let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
                let name = ServerName::try_from(host.to_owned())
                    .map_err(|e| format!("server name {host:?}: {e}"))?;
                let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
                let tls = tokio::time::timeout(IO_TIMEOUT, connector.connect(name, tcp))
                    .await
                    .map_err(|_| format!("TLS handshake with {addr}: timed out"))?
                    .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
                Stream::Tls(Box::new(tls))
            }
        };
        if let Some(credentials) = &self.plain {
            let (user, password) = &**credentials;
            sasl_plain(&mut stream, user, password)
                .await
                .map_err(|e| format!("SASL PLAIN login as {user} at {addr}: {e}"))?;
        }
        Ok(stream)
    }
}

/// SaslHandshake v1 (PLAIN) and SaslAuthenticate v2, as Kafka's clients log in.
async fn sasl_plain(stream: &mut Stream, user: &str, password: &str) -> Result<(), String> {
    let handshake = SaslHandshakeRequest {
        mechanism: "PLAIN".into(),
        ..Default::default()
    };
    let answer: SaslHandshakeResponse = stream
        .call(ApiKey::SaslHandshake, 1, i32::MAX - 1, &handshake)
        .await?;
    if answer.error_code != 0 {
        return Err(format!(
            "SaslHandshake error {} (mechanisms {:?})",
            answer.error_code, answer.mechanisms
        ));
    }
    let token = format!("\0{user}\0{password}");
    let authenticate = SaslAuthenticateRequest {
        auth_bytes: Bytes::from(token.into_bytes()),
        ..Default::default()
    };
    let answer: SaslAuthenticateResponse = stream
        .call(ApiKey::SaslAuthenticate, 2, i32::MAX, &authenticate)
        .await?;
    if answer.error_code != 0 {
        return Err(format!(
            "SaslAuthenticate error {} {:?}",
            answer.error_code, answer.error_message
        ));
    }
    Ok(())
}

/// A connection, plain or TLS.
pub enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Writes `bytes` and flushes them: over TLS the last record may otherwise stay in the
    /// session's buffer when the socket would block.
    pub async fn write_flushed(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes).await?;
        self.flush().await
    }

    /// One request and its answer (nothing else may be in flight).
    pub async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        correlation_id: i32,
        request: &Req,
    ) -> Result<Resp, String> {
        let mut out = bytes::BytesMut::new();
        fleet::encode_request(api, version, correlation_id, request, &mut out)?;
        self.write_flushed(&out)
            .await
            .map_err(|e| format!("{} write: {e}", api.name()))?;
        let frame = tokio::time::timeout(IO_TIMEOUT, self.read_frame())
            .await
            .map_err(|_| format!("no {} answer for {IO_TIMEOUT:?}", api.name()))?
            .map_err(|e| format!("{} answer: {e}", api.name()))?;
        fleet::decode_response(api, version, correlation_id, frame)
    }

    /// What TLS negotiated (`None` over plain TCP): version, cipher suite, key exchange.
    pub fn tls_parameters(&self) -> Option<String> {
        let Stream::Tls(tls) = self else {
            return None;
        };
        let conn = tls.get_ref().1;
        Some(format!(
            "{:?} {:?} {:?}",
            conn.protocol_version()?,
            conn.negotiated_cipher_suite()?.suite(),
            conn.negotiated_key_exchange_group()?.name()
        ))
    }

    async fn read_frame(&mut self) -> io::Result<Bytes> {
        let mut size = [0u8; 4];
        self.read_exact(&mut size).await?;
        let size = usize::try_from(i32::from_be_bytes(size))
            .ok()
            .filter(|&n| n <= MAX_FRAME)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad frame size"))?;
        let mut body = vec![0u8; size];
        self.read_exact(&mut body).await?;
        Ok(Bytes::from(body))
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A TLS client trusting the CA in `ca_pem`: TLS 1.3 only, no session resumption (each
/// connection makes a full handshake).
pub fn tls_client(ca_pem: &Path) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in
        CertificateDer::pem_file_iter(ca_pem).map_err(|e| format!("{}: {e}", ca_pem.display()))?
    {
        let ca = ca.map_err(|e| format!("{}: {e}", ca_pem.display()))?;
        roots
            .add(ca)
            .map_err(|e| format!("{}: {e}", ca_pem.display()))?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .map_err(|e| format!("TLS client: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(config))
}

/// A CA and a server certificate for `localhost` and `127.0.0.1` signed by it, ECDSA P-256
/// (rcgen's default), in a temp dir deleted on drop: `ca.pem`, and `server.pem` with the
/// PKCS#8 key and the certificate, as `ssl.keystore.type=PEM` wants them.
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Result<Pki, String> {
        let fail = |e: rcgen::Error| format!("certificates: {e}");
        let dir = tempfile::Builder::new()
            .prefix("kcoord-bench-pki-")
            .tempdir()
            .map_err(|e| format!("a temp dir: {e}"))?;
        let ca_key = KeyPair::generate().map_err(fail)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        ca.distinguished_name
            .push(DnType::CommonName, "kcoord bench CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;
        let issuer = rcgen::Issuer::from_params(&ca, &ca_key);
        let server_key = KeyPair::generate().map_err(fail)?;
        let mut server = CertificateParams::new(vec!["localhost".to_owned()]).map_err(fail)?;
        server
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let server_cert = server.signed_by(&server_key, &issuer).map_err(fail)?;
        let write = |name: &str, text: String| {
            std::fs::write(dir.path().join(name), text).map_err(|e| format!("{name}: {e}"))
        };
        write("ca.pem", ca_cert.pem())?;
        write(
            "server.pem",
            format!("{}{}", server_key.serialize_pem(), server_cert.pem()),
        )?;
        Ok(Pki { dir })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}
