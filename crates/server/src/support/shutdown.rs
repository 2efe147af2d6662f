//! The daemon's stop signal, as every task waits for it.
use tokio::sync::watch;

/// Resolves once shutdown is signalled (or its sender is gone, which also means stop).
pub async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not Send; drop it here rather than in a select! arm.
    let _ = shutdown.wait_for(|stop| *stop).await;
}
