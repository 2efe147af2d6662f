//! The table of requests waiting for a response, and the two tasks that move bytes.
//!
//! A writer task owns the socket's write half and writes queued frames in batches; a reader
//! task owns the read half and hands every response frame to the request waiting for its
//! correlation id. Responses may come back in any order. When either side fails, the table
//! is closed: every waiting request gets the reason at once instead of hanging, and new
//! requests are refused.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::{Bytes, BytesMut};
use kcoord_wire::frame::FrameDecoder;
use kcoord_wire::messages::ResponseHeader;
use kcoord_wire::Decodable;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use crate::error::{api_name, ClientError};

/// Flush once a batch reaches this size, so one huge backlog does not become one huge buffer.
const MAX_WRITE_BATCH: usize = 256 * 1024;
/// Smallest free space offered to one socket read.
const MIN_READ_SPACE: usize = 16 * 1024;

/// What the reader needs to finish one request.
pub(crate) struct Waiter {
    pub api_key: i16,
    pub version: i16,
    pub response_header_version: i16,
    /// Receives the response body (after the response header) or the reason there is none.
    pub reply: oneshot::Sender<Result<Bytes, ClientError>>,
}

#[derive(Default)]
struct State {
    waiting: HashMap<i32, Waiter>,
    /// Set once, when the connection dies; the reason every later request gets.
    closed: Option<String>,
}

pub(crate) struct InFlight {
    addr: String,
    state: Mutex<State>,
}

impl InFlight {
    pub fn new(addr: String) -> Self {
        InFlight {
            addr,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock, and the table stays consistent either way.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a waiter, unless the connection is already closed. Registering under the same
    /// lock that `close` drains under means no request can slip in after the drain and hang.
    pub fn register(&self, correlation_id: i32, waiter: Waiter) -> Result<(), ClientError> {
        let mut state = self.state();
        if let Some(reason) = &state.closed {
            return Err(self.closed_error(reason));
        }
        state.waiting.insert(correlation_id, waiter);
        Ok(())
    }

    /// Removes a waiter: the reader when its response arrives, or the requester giving up.
    pub fn take(&self, correlation_id: i32) -> Option<Waiter> {
        self.state().waiting.remove(&correlation_id)
    }

    pub fn is_closed(&self) -> bool {
        self.state().closed.is_some()
    }

    /// The error for a request on this connection once it is closed.
    pub fn closed(&self) -> ClientError {
        let reason = self.state().closed.clone();
        self.closed_error(reason.as_deref().unwrap_or("connection task ended"))
    }

    fn closed_error(&self, reason: &str) -> ClientError {
        ClientError::ConnectionClosed {
            addr: self.addr.clone(),
            reason: reason.to_string(),
        }
    }

    /// Marks the connection dead and fails every waiting request with `reason`.
    pub fn close(&self, reason: String) {
        let waiting = {
            let mut state = self.state();
            if state.closed.is_some() {
                return;
            }
            state.closed = Some(reason.clone());
            std::mem::take(&mut state.waiting)
        };
        debug!(addr = %self.addr, reason = %reason, failed_requests = waiting.len(), "connection closed");
        for (_, waiter) in waiting {
            let _ = waiter.reply.send(Err(self.closed_error(&reason)));
        }
    }
}

/// One frame for the writer, and who wants to hear once it is written (a request that gets
/// no response).
pub(crate) struct Outgoing {
    pub frame: Bytes,
    pub written: Option<oneshot::Sender<()>>,
}

/// Writes queued frames until the queue's senders are gone or a write fails. Whatever is
/// queued by the time a write completes goes out in the next single write; the frames that
/// asked are told once their write completed (a failed write drops the notices, which their
/// waiters see as the connection closing).
pub(crate) async fn write_requests<W: AsyncWrite + Unpin>(
    mut write: W,
    mut queue: mpsc::Receiver<Outgoing>,
    inflight: std::sync::Arc<InFlight>,
) {
    let mut batch = BytesMut::new();
    let mut notices = Vec::new();
    while let Some(first) = queue.recv().await {
        let mut next = Some(first);
        while let Some(Outgoing { frame, written }) = next.take() {
            batch.extend_from_slice(&frame);
            notices.extend(written);
            if batch.len() < MAX_WRITE_BATCH {
                next = queue.try_recv().ok();
            }
        }
        // The flush matters for TLS, whose records may wait in the session until flushed.
        if let Err(e) = write.write_all(&batch).await {
            inflight.close(format!("write failed: {e}"));
            return;
        }
        if let Err(e) = write.flush().await {
            inflight.close(format!("write failed: {e}"));
            return;
        }
        batch.clear();
        for notice in notices.drain(..) {
            let _ = notice.send(());
        }
    }
}

/// Reads response frames until the server closes the connection or sends something that
/// cannot be matched to a request, then closes the table.
pub(crate) async fn read_responses<R: AsyncRead + Unpin>(
    mut read: R,
    inflight: std::sync::Arc<InFlight>,
    max_response_size: usize,
) {
    let reason = match read_loop(&mut read, &inflight, max_response_size).await {
        Ok(()) => "closed by the server".to_string(),
        Err(reason) => {
            warn!(addr = %inflight.addr, reason = %reason, "closing connection");
            reason
        }
    };
    inflight.close(reason);
}

async fn read_loop<R: AsyncRead + Unpin>(
    read: &mut R,
    inflight: &InFlight,
    max_response_size: usize,
) -> Result<(), String> {
    let decoder = FrameDecoder::new(max_response_size);
    let mut buf = BytesMut::with_capacity(MIN_READ_SPACE);
    loop {
        while let Some(frame) = decoder.decode(&mut buf).map_err(|e| e.to_string())? {
            deliver(inflight, frame)?;
        }
        if buf.capacity() - buf.len() < MIN_READ_SPACE {
            buf.reserve(MIN_READ_SPACE);
        }
        match read.read_buf(&mut buf).await {
            Ok(0) if buf.is_empty() => return Ok(()),
            Ok(0) => {
                return Err(format!(
                    "server closed the connection in the middle of a frame ({} bytes buffered)",
                    buf.len()
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(format!("read failed: {e}")),
        }
    }
}

/// Hands one response frame to its waiter. A frame without a correlation id is fatal: the
/// request it answers would otherwise wait for its timeout.
fn deliver(inflight: &InFlight, mut frame: Bytes) -> Result<(), String> {
    let Some(id_bytes) = frame.get(..4) else {
        return Err(format!(
            "response frame of {} bytes has no correlation id",
            frame.len()
        ));
    };
    let correlation_id = i32::from_be_bytes([id_bytes[0], id_bytes[1], id_bytes[2], id_bytes[3]]);
    let Some(waiter) = inflight.take(correlation_id) else {
        // A request that timed out or was cancelled; its answer is of no use any more.
        debug!(addr = %inflight.addr, correlation_id, "dropping response that no request waits for");
        return Ok(());
    };
    let body = match ResponseHeader::decode(&mut frame, waiter.response_header_version) {
        Ok(_) => Ok(frame),
        Err(e) => Err(ClientError::Protocol(format!(
            "{} v{} response header (v{}) does not decode: {e:#}",
            api_name(waiter.api_key),
            waiter.version,
            waiter.response_header_version
        ))),
    };
    debug!(
        api = %api_name(waiter.api_key),
        version = waiter.version,
        correlation_id,
        size = body.as_ref().map_or(0, Bytes::len),
        "received response"
    );
    // The requester may have stopped waiting in the meantime; nothing to do then.
    let _ = waiter.reply.send(body);
    Ok(())
}
