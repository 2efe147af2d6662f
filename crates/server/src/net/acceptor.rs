//! The accept loop of one listener: waits for room under the connection quotas, accepts,
//! holds the new connection for the creation rate, then admits it or closes it (too many from
//! its address, or over its address's `connection_creation_rate` client quota).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;
use tracing::{debug, error, warn};

use super::connection::{self, Timeouts};
use super::limiter::{ConnectionPermit, ConnectionQuotas, Refusal};
use super::tls::TlsListener;
use crate::rpc::bulk::BulkHandle;
use crate::rpc::dispatch::Connection;
use crate::runtime::cluster::ListenerInfo;
use crate::state::ServerState;
use crate::support::logging::{log_per_peer, LogLimiter};

/// How long shutdown waits for busy connections before cutting them off.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// Pause after a failed accept (e.g. out of file descriptors) so we do not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// What one turn of [`accept_next`] got.
enum Accepted {
    Admitted(TcpStream, SocketAddr, ConnectionPermit),
    Refused(SocketAddr, Refusal),
    /// Over its address's `connection_creation_rate`: closed once the throttle has passed.
    Throttled(SocketAddr, u32),
    Failed,
}

/// What every connection a listener accepts is served with besides the server's state.
pub(crate) struct ConnectionSetup {
    /// The listener's TLS acceptor (SSL and SASL_SSL listeners).
    pub tls: Option<Arc<TlsListener>>,
    /// Where requests in big frames are handled.
    pub bulk: Option<BulkHandle>,
}

pub(crate) async fn run(
    listener: TcpListener,
    server: Arc<ServerState>,
    info: Arc<ListenerInfo>,
    index: usize,
    quotas: ConnectionQuotas,
    setup: ConnectionSetup,
    mut shutdown: watch::Receiver<bool>,
) {
    let ConnectionSetup { tls, bulk } = setup;
    let mut connections = JoinSet::new();
    let for_connections = shutdown.clone();
    let timeouts = Timeouts::from_settings(&server.config.connections);
    let accept_errors = LogLimiter::new(crate::support::logging::PEER_LINE_INTERVAL, 1);
    let counted = server.metrics.connections.for_listener(&info.name);
    // Kept across turns of the loop: a connection finishing must not drop one half accepted.
    let mut accepting = Box::pin(accept_next(
        &listener,
        (&quotas, &server),
        index,
        &info,
        &accept_errors,
    ));
    loop {
        tokio::select! {
            biased;
            _ = crate::support::shutdown::stopped(&mut shutdown) => break,
            Some(done) = connections.join_next(), if !connections.is_empty() => report(done, &info),
            accepted = &mut accepting => {
                match accepted {
                    Accepted::Admitted(stream, peer, permit) => {
                        debug!(%peer, listener = %info.name, "connection accepted");
                        // Small responses must not wait for Nagle.
                        let _ = stream.set_nodelay(true);
                        let mut conn = Connection::new(Arc::clone(&server), Arc::clone(&info), peer);
                        conn.bulk = bulk.clone();
                        let shutdown = for_connections.clone();
                        let tls = tls.clone();
                        let open = counted.opened();
                        connections.spawn(async move {
                            connection::serve(stream, conn, shutdown, permit, timeouts, tls).await;
                            drop(open);
                        });
                    }
                    Accepted::Refused(peer, Refusal::TooManyFromIp { max }) => {
                        // Kafka's words, at its level.
                        log_per_peer!(
                            info, peer, "too many connections from address",
                            %peer, listener = %info.name,
                            "Rejected connection from {}, address already has the configured maximum of {} connections.",
                            peer.ip(), max
                        );
                    }
                    Accepted::Throttled(peer, ms) => say_throttled(&server, &info, peer, ms),
                    Accepted::Failed => {}
                }
                accepting = Box::pin(accept_next(&listener, (&quotas, &server), index, &info, &accept_errors));
            }
        }
    }
    drop(accepting);
    // Stop accepting now; then let the open connections finish what they have read.
    drop(listener);
    let drain = async {
        while let Some(done) = connections.join_next().await {
            report(done, &info);
        }
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        warn!(listener = %info.name, open = connections.len(), "connections still busy after the shutdown grace period; closing them");
        connections.shutdown().await;
    }
}

/// Waits for room, accepts one connection, holds it for the creation rate, and admits it
/// unless its address is over its `connection_creation_rate` quota.
async fn accept_next(
    listener: &TcpListener,
    (quotas, server): (&ConnectionQuotas, &ServerState),
    index: usize,
    info: &ListenerInfo,
    accept_errors: &LogLimiter<()>,
) -> Accepted {
    quotas.wait_for_room(index).await;
    let (stream, peer) = match listener.accept().await {
        Ok(accepted) => accepted,
        Err(e) => {
            // Out of file descriptors, say: that repeats as fast as we retry.
            if let Some(suppressed) = accept_errors.check((), std::time::Instant::now()) {
                warn!(listener = %info.name, error = %e, suppressed, "accept failed");
            }
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            return Accepted::Failed;
        }
    };
    let delay = quotas.creation_delay(index, Instant::now());
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let image = server.cluster.snapshot();
    let now = crate::support::clock::now_ms();
    let throttle = server
        .quotas
        .connection_throttle(&image.client_quotas, peer.ip(), now);
    if throttle > 0 {
        // Kafka closes it only once the throttle has passed, so the client does not reconnect
        // at once; the throttle is at most one quota window.
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(u64::from(throttle))).await;
            drop(stream);
        });
        return Accepted::Throttled(peer, throttle);
    }
    match quotas.admit(index, peer.ip()).await {
        Ok(permit) => Accepted::Admitted(stream, peer, permit),
        // Dropping the stream closes it.
        Err(refusal) => Accepted::Refused(peer, refusal),
    }
}

/// A connection over its address's `connection_creation_rate`: counted, and said at most once
/// a minute per address.
fn say_throttled(server: &ServerState, info: &ListenerInfo, peer: SocketAddr, ms: u32) {
    server.metrics.quotas.connection_throttled();
    log_per_peer!(
        info, peer, "connection creation rate",
        %peer, listener = %info.name, throttle_ms = ms,
        "connection_creation_rate of the address exceeded; closing the connection after its throttle"
    );
}

/// A connection task that panicked took only its own connection down; say so loudly.
fn report(done: Result<(), JoinError>, info: &ListenerInfo) {
    if let Err(e) = done {
        if e.is_panic() {
            error!(listener = %info.name, error = %e, "connection task panicked");
        }
    }
}
