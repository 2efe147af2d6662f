//! The accept loop of one listener.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};
use tracing::{debug, error, warn};

use super::connection;
use super::limiter::ConnectionLimiter;
use crate::dispatch::Connection;
use crate::state::{ListenerInfo, ServerState};

/// How long shutdown waits for busy connections before cutting them off.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// Pause after a failed accept (e.g. out of file descriptors) so we do not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

pub(crate) async fn run(
    listener: TcpListener,
    server: Arc<ServerState>,
    info: Arc<ListenerInfo>,
    limiter: ConnectionLimiter,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let for_connections = shutdown.clone();
    loop {
        tokio::select! {
            biased;
            _ = super::stopped(&mut shutdown) => break,
            Some(done) = connections.join_next(), if !connections.is_empty() => report(done, &info),
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Some(permit) = limiter.try_acquire() else {
                        warn!(%peer, listener = %info.name, max_connections = limiter.max(), "max.connections reached; closing the new connection");
                        continue;
                    };
                    debug!(%peer, listener = %info.name, "connection accepted");
                    // Small responses must not wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let conn = Connection::new(Arc::clone(&server), Arc::clone(&info), peer);
                    let shutdown = for_connections.clone();
                    connections.spawn(async move {
                        let _permit = permit;
                        connection::serve(stream, conn, shutdown).await;
                    });
                }
                Err(e) => {
                    warn!(listener = %info.name, error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
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

/// A connection task that panicked took only its own connection down; say so loudly.
fn report(done: Result<(), JoinError>, info: &ListenerInfo) {
    if let Err(e) = done {
        if e.is_panic() {
            error!(listener = %info.name, error = %e, "connection task panicked");
        }
    }
}
