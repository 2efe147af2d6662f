//! The TLS step of a connection on an SSL listener: the handshake, then the principal its client
//! certificate gives (docs/kafka-security-facts.md §4.1): no certificate is `User:ANONYMOUS`;
//! one is `User:<name>`, the name `ssl.principal.mapping.rules` makes of the certificate's
//! subject (RFC 2253, as Java's `X500Principal.getName()` writes it). A DN no rule maps fails the
//! connection, as Kafka fails the channel.

use std::sync::Arc;

use kcoord_acl::KafkaPrincipal;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::ssl::SslListener;
use crate::rpc::dispatch::Connection;
use crate::support::logging::log_per_peer;
use crate::tls::{dn, PrincipalMapper};

/// What an SSL listener needs for each connection.
pub(crate) struct TlsListener {
    acceptor: TlsAcceptor,
    mapper: PrincipalMapper,
}

impl TlsListener {
    pub(crate) fn new(settings: &SslListener) -> Arc<TlsListener> {
        Arc::new(TlsListener {
            acceptor: TlsAcceptor::from(Arc::clone(&settings.server.0)),
            mapper: settings.principal_mapper.clone(),
        })
    }
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("mapper", &self.mapper)
            .finish_non_exhaustive()
    }
}

/// Runs the handshake and works out who the client is. `None` when the connection must close:
/// the reason has been logged (once a minute per peer address at most).
pub(crate) async fn accept(
    listener: &TlsListener,
    stream: TcpStream,
    conn: &Connection,
) -> Option<(TlsStream<TcpStream>, KafkaPrincipal)> {
    let stream = match listener.acceptor.accept(stream).await {
        Ok(stream) => stream,
        Err(e) if !is_tls_failure(&e) => {
            // The peer went away mid-handshake (EOF, reset): Kafka's Selector logs this
            // IOException at DEBUG as a disconnection, not as a failed authentication, and it
            // must not use up the once-a-minute line a real failure from this address gets.
            tracing::debug!(
                peer = %conn.peer, listener = %conn.listener.name, error = %e,
                "Connection with {} disconnected during the TLS handshake", conn.client_host
            );
            return None;
        }
        Err(e) => {
            // Kafka's words (Selector), at its level: a client that cannot speak TLS to this
            // listener, or whose certificate is not trusted.
            log_per_peer!(
                info, conn.peer, "TLS handshake failed",
                peer = %conn.peer, listener = %conn.listener.name, error = %e,
                "Failed authentication with {} (SSL handshake failed)", conn.client_host
            );
            return None;
        }
    };
    let principal = principal(listener, &stream, conn)?;
    Some((stream, principal))
}

/// Whether a failed handshake is TLS's verdict (tokio-rustls wraps rustls's error: bytes that
/// are not TLS, an alert, an untrusted certificate), which Kafka reports as a failed
/// authentication, rather than the socket's (EOF, reset), which it reports as a disconnection.
fn is_tls_failure(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
}

fn principal(
    listener: &TlsListener,
    stream: &TlsStream<TcpStream>,
    conn: &Connection,
) -> Option<KafkaPrincipal> {
    let Some(leaf) = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    else {
        return Some(KafkaPrincipal::anonymous());
    };
    let dn = match dn::subject(leaf) {
        Ok(dn) => dn,
        Err(e) => {
            log_per_peer!(
                warn, conn.peer, "unreadable client certificate",
                peer = %conn.peer, listener = %conn.listener.name, error = %e,
                "cannot read the subject of the client certificate; closing connection"
            );
            return None;
        }
    };
    match listener.mapper.name(&dn) {
        Ok(name) => Some(KafkaPrincipal::user(name)),
        Err(e) => {
            log_per_peer!(
                warn, conn.peer, "unmapped client certificate",
                peer = %conn.peer, listener = %conn.listener.name, rules = ?listener.mapper,
                "{e}; closing connection"
            );
            None
        }
    }
}
