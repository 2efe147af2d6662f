//! One task per connection. It reads ahead, dispatches requests in arrival order and hands
//! each response to a writer running alongside, so responses leave in request order while
//! the next requests are read; responses that are ready together go out in one write.

use bytes::{Bytes, BytesMut};
use kcoord_wire::frame::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use crate::dispatch::{dispatch, Connection, Outcome};

/// Responses waiting for the socket before we stop reading requests (back-pressure on a
/// client that sends without reading).
const MAX_QUEUED_RESPONSES: usize = 64;
const READ_CHUNK: usize = 16 * 1024;
/// Stop batching once this much is queued for one write.
const MAX_WRITE_BATCH: usize = 256 * 1024;

pub(crate) async fn serve(stream: TcpStream, conn: Connection, shutdown: watch::Receiver<bool>) {
    let peer = conn.peer;
    let max_frame =
        usize::try_from(conn.server.config.socket_request_max_bytes).unwrap_or(usize::MAX);
    let (reader, writer) = stream.into_split();
    let (tx, rx) = mpsc::channel(MAX_QUEUED_RESPONSES);
    tokio::join!(
        read_requests(reader, &conn, FrameDecoder::new(max_frame), tx, shutdown),
        write_responses(writer, rx, &conn)
    );
    debug!(%peer, listener = %conn.listener.name, "connection closed");
}

async fn read_requests(
    mut reader: OwnedReadHalf,
    conn: &Connection,
    decoder: FrameDecoder,
    responses: mpsc::Sender<Bytes>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        // Everything already buffered is handled before reading more or looking at shutdown,
        // so a request that arrived in full is always answered.
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => match dispatch(conn, frame).await {
                    Outcome::Respond(response) => {
                        if responses.send(response).await.is_err() {
                            return; // the writer is gone: the peer stopped reading
                        }
                    }
                    Outcome::Close => return,
                },
                Ok(None) => break,
                Err(e) => {
                    warn!(peer = %conn.peer, listener = %conn.listener.name, error = %e, "invalid request size; closing connection");
                    return;
                }
            }
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        tokio::select! {
            biased;
            _ = super::stopped(&mut shutdown) => return,
            read = reader.read_buf(&mut buf) => match read {
                Ok(0) => {
                    if !buf.is_empty() {
                        debug!(peer = %conn.peer, pending = buf.len(), "peer closed the connection in the middle of a request");
                    }
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    debug!(peer = %conn.peer, error = %e, "read failed; closing connection");
                    return;
                }
            },
        }
    }
}

async fn write_responses(
    mut writer: OwnedWriteHalf,
    mut responses: mpsc::Receiver<Bytes>,
    conn: &Connection,
) {
    let mut batch = BytesMut::new();
    while let Some(first) = responses.recv().await {
        let result = match responses.try_recv() {
            // The common case, one response: write it without copying.
            Err(_) => writer.write_all(&first).await,
            Ok(second) => {
                batch.extend_from_slice(&first);
                batch.extend_from_slice(&second);
                while batch.len() < MAX_WRITE_BATCH {
                    match responses.try_recv() {
                        Ok(next) => batch.extend_from_slice(&next),
                        Err(_) => break,
                    }
                }
                let result = writer.write_all(&batch).await;
                batch.clear();
                result
            }
        };
        if let Err(e) = result {
            debug!(peer = %conn.peer, error = %e, "write failed; closing connection");
            return;
        }
    }
    // The reader is done and every response is out: close our side.
    let _ = writer.shutdown().await;
}
