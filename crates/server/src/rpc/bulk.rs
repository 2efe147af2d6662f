//! The bulk lane: requests that arrive in big frames are decoded, handled and answered on a
//! small runtime of their own whose threads run at a lower OS priority.
//!
//! A request's cost grows with its size (names to decode, de-duplicate and look up, entries to
//! encode), and a few clients sending big ones back to back could otherwise keep the runtime
//! workers busy for hundreds of milliseconds at a time while heartbeats wait behind them. On
//! the bulk lane they compete for CPU at a lower weight (`nice` [`BACKGROUND_NICE`]), so when the
//! machine is busy the small requests (heartbeats, commits, fetches) win, and when it is idle
//! the big ones run at full speed. Produce goes there from a smaller size
//! ([`BULK_PRODUCE_BYTES`]): a producer sending as fast as it can would otherwise take the
//! workers from every group's heartbeats, while a few records keep the workers' latency.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime};
use tracing::warn;

use crate::rpc::dispatch::{dispatch, Connection, Reply};
use crate::support::priority;
#[cfg(doc)]
use crate::support::priority::BACKGROUND_NICE;

/// Frames at least this big go to the bulk lane (Produce from [`BULK_PRODUCE_BYTES`]).
pub const BULK_FRAME_BYTES: usize = 64 * 1024;
/// Produce frames at least this big go to the bulk lane: half of a Java producer's default
/// `batch.size`, so a producer under load is there and a lone record is not.
pub const BULK_PRODUCE_BYTES: usize = 8 * 1024;
/// Threads of the bulk lane.
const BULK_THREADS: usize = 2;
/// Produce's API key.
const PRODUCE: i16 = 0;

/// The bulk lane's runtime. Dropping it stops the lane without waiting for its threads.
pub struct BulkLane {
    runtime: Option<Runtime>,
    served: Arc<AtomicU64>,
}

/// What connections use to send a request to the bulk lane.
#[derive(Debug, Clone)]
pub struct BulkHandle {
    handle: Handle,
    served: Arc<AtomicU64>,
}

impl std::fmt::Debug for BulkLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkLane")
            .field("served", &self.served.load(Ordering::Relaxed))
            .finish()
    }
}

impl BulkLane {
    pub fn start() -> io::Result<BulkLane> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(BULK_THREADS)
            .thread_name("kcoord-bulk")
            .on_thread_start(|| {
                if let Err(e) = priority::lower_this_thread() {
                    warn!(error = %e, "the bulk lane's threads keep the workers' priority");
                }
            })
            .enable_all()
            .build()?;
        Ok(BulkLane {
            runtime: Some(runtime),
            served: Arc::default(),
        })
    }

    pub fn handle(&self) -> Option<BulkHandle> {
        self.runtime.as_ref().map(|r| BulkHandle {
            handle: r.handle().clone(),
            served: Arc::clone(&self.served),
        })
    }
}

impl Drop for BulkLane {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl BulkHandle {
    /// Requests the bulk lane has handled.
    #[cfg(test)]
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Whether `frame` goes to the bulk lane.
    pub fn takes(frame: &[u8]) -> bool {
        let produce = frame.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]])) == Some(PRODUCE);
        frame.len()
            >= if produce {
                BULK_PRODUCE_BYTES
            } else {
                BULK_FRAME_BYTES
            }
    }

    /// [`dispatch`] on the bulk lane. A request whose handling panicked or was cut short by
    /// shutdown closes the connection.
    pub async fn dispatch(&self, conn: &Connection, frame: Bytes) -> Reply {
        let conn = conn.clone();
        let served = Arc::clone(&self.served);
        let task = self.handle.spawn(async move {
            let outcome = dispatch(&conn, frame).await;
            served.fetch_add(1, Ordering::Relaxed);
            outcome
        });
        task.await.unwrap_or(Reply::Close)
    }
}
