//! Sockets: one accept loop per listener, one task per connection.

pub(crate) mod acceptor;
pub(crate) mod bulk;
pub(crate) mod connection;
pub(crate) mod limiter;
pub(crate) mod tls;

use tokio::sync::watch;

/// Resolves once shutdown is signalled (or its sender is gone, which also means stop).
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not Send; drop it here rather than in a select! arm.
    let _ = shutdown.wait_for(|stop| *stop).await;
}
