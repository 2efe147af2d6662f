//! One task per connection. It reads ahead, dispatches requests in arrival order and hands
//! each response to a writer running alongside, so responses leave in request order while
//! the next requests are read; responses that are ready together go out in one write.
//!
//! A client that stops reading holds at most [`MAX_QUEUED_RESPONSES`] responses and, past
//! [`MAX_QUEUED_RESPONSE_BYTES`], no more than one: the reader waits before handling another
//! request (Kafka mutes such a channel likewise).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use kcoord_wire::frame::{FrameDecoder, OutFrame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use crate::dispatch::{dispatch, Connection, Outcome};

/// Responses waiting for the socket before we stop reading requests (back-pressure on a
/// client that sends without reading).
const MAX_QUEUED_RESPONSES: usize = 64;
const READ_CHUNK: usize = 16 * 1024;
/// Stop batching once this much is queued for one write.
const MAX_WRITE_BATCH: usize = 256 * 1024;
/// Bytes of responses queued for a slow reader before no further request is handled.
const MAX_QUEUED_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// Responses smaller than this are copied into a batch; larger ones are written as they are.
const BATCH_COPY_LIMIT: usize = 64 * 1024;

/// Bytes handed to the writer and not yet written.
#[derive(Debug, Default)]
struct Queued {
    bytes: AtomicUsize,
    drained: Notify,
}

impl Queued {
    async fn wait_for_room(&self) {
        loop {
            let drained = self.drained.notified();
            if self.bytes.load(Ordering::Acquire) < MAX_QUEUED_RESPONSE_BYTES {
                return;
            }
            drained.await;
        }
    }

    fn written(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::AcqRel);
        self.drained.notify_waiters();
    }
}

pub(crate) async fn serve(stream: TcpStream, conn: Connection, shutdown: watch::Receiver<bool>) {
    let peer = conn.peer;
    let max_frame =
        usize::try_from(conn.server.config.socket_request_max_bytes).unwrap_or(usize::MAX);
    let (reader, writer) = stream.into_split();
    let (tx, rx) = mpsc::channel(MAX_QUEUED_RESPONSES);
    let queued = Arc::new(Queued::default());
    tokio::join!(
        read_requests(
            reader,
            &conn,
            FrameDecoder::new(max_frame),
            tx,
            &queued,
            shutdown
        ),
        write_responses(writer, rx, &conn, &queued)
    );
    debug!(%peer, listener = %conn.listener.name, "connection closed");
}

async fn read_requests(
    mut reader: OwnedReadHalf,
    conn: &Connection,
    decoder: FrameDecoder,
    responses: mpsc::Sender<OutFrame>,
    queued: &Queued,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        // Everything already buffered is handled before reading more or looking at shutdown,
        // so a request that arrived in full is always answered.
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    queued.wait_for_room().await;
                    match dispatch(conn, frame).await {
                        Outcome::Respond(response) => {
                            queued.bytes.fetch_add(response.len(), Ordering::AcqRel);
                            if responses.send(response).await.is_err() {
                                return; // the writer is gone: the peer stopped reading
                            }
                        }
                        Outcome::NoResponse => {}
                        Outcome::Close => return,
                    }
                }
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
    mut responses: mpsc::Receiver<OutFrame>,
    conn: &Connection,
    queued: &Queued,
) {
    let mut batch = BytesMut::new();
    let mut next = None;
    loop {
        let first = match next.take() {
            Some(f) => f,
            None => match responses.recv().await {
                Some(f) => f,
                None => break,
            },
        };
        let written = first.len();
        let result = if written > BATCH_COPY_LIMIT || !matches!(first, OutFrame::One(_)) {
            write_frame(&mut writer, &first).await.map(|()| written)
        } else {
            match responses.try_recv() {
                // The common case, one response: write it without copying.
                Err(_) => write_frame(&mut writer, &first).await.map(|()| written),
                Ok(second) => {
                    let mut total = written;
                    batch.extend_from_slice(&first.to_bytes());
                    let mut pending = Some(second);
                    while let Some(f) = pending.take() {
                        if f.len() > BATCH_COPY_LIMIT
                            || !matches!(f, OutFrame::One(_))
                            || batch.len() >= MAX_WRITE_BATCH
                        {
                            next = Some(f);
                            break;
                        }
                        total += f.len();
                        batch.extend_from_slice(&f.to_bytes());
                        pending = responses.try_recv().ok();
                    }
                    let result = writer.write_all(&batch).await.map(|()| total);
                    batch.clear();
                    result
                }
            }
        };
        match result {
            Ok(n) => queued.written(n),
            Err(e) => {
                debug!(peer = %conn.peer, error = %e, "write failed; closing connection");
                return;
            }
        }
    }
    // The reader is done and every response is out: close our side.
    let _ = writer.shutdown().await;
}

/// Writes one frame, its pieces with vectored writes.
async fn write_frame(writer: &mut OwnedWriteHalf, frame: &OutFrame) -> std::io::Result<()> {
    let parts = frame.parts();
    if let [one] = parts {
        return writer.write_all(one).await;
    }
    // Up to IOV_MAX pieces per call; a partial write resumes inside the piece it stopped in.
    let (mut index, mut offset) = (0usize, 0usize);
    while index < parts.len() {
        let slices: Vec<std::io::IoSlice<'_>> = std::iter::once(&parts[index][offset..])
            .chain(parts[index + 1..].iter().map(|p| &p[..]))
            .take(1024)
            .map(std::io::IoSlice::new)
            .collect();
        let mut n = writer.write_vectored(&slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while index < parts.len() && n >= parts[index].len() - offset {
            n -= parts[index].len() - offset;
            index += 1;
            offset = 0;
        }
        offset += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reader_waits_while_too_many_response_bytes_are_unwritten() {
        let queued = Arc::new(Queued::default());
        queued
            .bytes
            .fetch_add(MAX_QUEUED_RESPONSE_BYTES, Ordering::AcqRel);
        let waiting = tokio::spawn({
            let queued = Arc::clone(&queued);
            async move { queued.wait_for_room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "no room: the next request waits");
        queued.written(1);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("a write makes room")
            .expect("the waiter ran");
    }

    #[tokio::test]
    async fn pieces_are_written_whole_in_order() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut all = Vec::new();
            s.read_to_end(&mut all).await.unwrap();
            all
        });
        let (stream, _) = listener.accept().await.unwrap();
        let (_, mut writer) = stream.into_split();
        // More pieces than one writev takes, of several sizes.
        let parts: Vec<bytes::Bytes> = (0..3000u32)
            .map(|i| bytes::Bytes::from(vec![(i % 251) as u8; (i % 7) as usize * 100]))
            .collect();
        let expected: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        write_frame(&mut writer, &OutFrame::Parts(parts))
            .await
            .unwrap();
        writer.shutdown().await.unwrap();
        drop(writer);
        assert_eq!(client.await.unwrap(), expected);
    }
}
