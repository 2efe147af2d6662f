//! One task per connection. It reads ahead, dispatches requests in arrival order and hands
//! each response to a writer running alongside, so responses leave in request order while
//! the next requests are read; responses that are ready together go out in one write. A
//! response still on its way (a request forwarded upstream in gateway mode) is handed over as
//! such, and the writer waits for it in its turn.
//!
//! A client that stops reading holds at most [`MAX_QUEUED_RESPONSES`] responses and, past
//! [`MAX_QUEUED_RESPONSE_BYTES`], no more than one: the reader waits before handling another
//! request (Kafka mutes such a channel likewise), as it waits out a quota's throttle.
//!
//! A watchdog beside them closes the connection when no request is being handled or awaited and no byte
//! went either way for `connections.max.idle.ms` (Kafka's `Selector`), when a request has not
//! arrived in full `socket.request.receive.timeout.ms` after its first bytes, or when the
//! connection quotas ask for room (see `limiter`).
//!
//! On an SSL listener the connection first goes through the TLS handshake (`tls.rs`), which
//! counts as a request arriving: it must complete within `socket.request.receive.timeout.ms` of
//! the accept, under the same watchdog. Then the principal is set, and requests are served over
//! the TLS stream by the same reader and writer (generic over the stream, so the plaintext path
//! keeps its owned socket halves).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::{FrameDecoder, OutFrame};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::debug;

use super::activity::Activity;
use super::limiter::ConnectionPermit;
use super::tls::TlsListener;
use crate::config::ConnectionSettings;
use crate::rpc::bulk::BulkHandle;
use crate::rpc::dispatch::{dispatch, Connection, Later, Reply};
use crate::support::logging::log_per_peer;

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
    /// The writer gave up (an answer from upstream that never came): stop reading.
    writer_stopped: Notify,
}

/// What the reader hands the writer, in request order.
#[derive(Debug)]
enum Outgoing {
    Frame(OutFrame),
    /// An answer the writer waits for in its turn (gateway mode).
    Later(Later),
}

impl Queued {
    /// Waits until the queued responses leave room for another; whether it had to wait.
    async fn wait_for_room(&self) -> bool {
        let mut waited = false;
        loop {
            let drained = self.drained.notified();
            if self.bytes.load(Ordering::Acquire) < MAX_QUEUED_RESPONSE_BYTES {
                return waited;
            }
            drained.await;
            waited = true;
        }
    }

    fn written(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::AcqRel);
        self.drained.notify_waiters();
    }
}

/// `connections.max.idle.ms` and `socket.request.receive.timeout.ms`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) idle: Option<Duration>,
    pub(crate) receive: Duration,
}

impl Timeouts {
    pub(crate) fn from_settings(settings: &ConnectionSettings) -> Self {
        Timeouts {
            idle: settings.connections_max_idle,
            receive: settings.request_receive_timeout,
        }
    }
}

/// Why the watchdog closed a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    Idle,
    Receive,
    Evicted,
}

/// Kafka's `sasl.server.max.receive.size`: until a SASL client has authenticated, no frame may
/// be larger, so that an unauthenticated peer cannot make the server buffer
/// `socket.request.max.bytes`.
const SASL_MAX_RECEIVE_SIZE: usize = 524_288;

/// The frame limit a new connection starts with.
fn first_frame_limit(conn: &Connection, max_frame: usize) -> usize {
    if conn.sasl.is_some() {
        max_frame.min(SASL_MAX_RECEIVE_SIZE)
    } else {
        max_frame
    }
}

/// The decoder to go on with: the full `socket.request.max.bytes` once authenticated.
fn after_authentication(conn: &Connection, decoder: FrameDecoder) -> FrameDecoder {
    let full = usize::try_from(conn.server.config.socket_request_max_bytes).unwrap_or(usize::MAX);
    let authenticated = conn
        .sasl
        .as_deref()
        .is_some_and(|s| s.principal().is_some());
    if authenticated && decoder.max_frame_size() < full {
        FrameDecoder::new(full)
    } else {
        decoder
    }
}

pub(crate) async fn serve(
    stream: TcpStream,
    mut conn: Connection,
    mut shutdown: watch::Receiver<bool>,
    permit: ConnectionPermit,
    timeouts: Timeouts,
    tls: Option<Arc<TlsListener>>,
) {
    let (peer, listener) = (conn.peer, Arc::clone(&conn.listener));
    let activity = permit.activity();
    let session = async {
        match tls {
            None => {
                let (reader, writer) = stream.into_split();
                serve_requests(reader, writer, &conn, activity, shutdown).await;
            }
            Some(tls) => {
                activity.receiving(Instant::now());
                let accepted = tokio::select! {
                    biased;
                    _ = crate::support::shutdown::stopped(&mut shutdown) => return,
                    accepted = super::tls::accept(&tls, stream, &conn) => accepted,
                };
                let Some((stream, principal)) = accepted else {
                    return;
                };
                activity.received();
                activity.touch(Instant::now());
                // On SASL_SSL the SASL exchange names the principal instead (`Connection::principal`).
                conn.tls_principal = Some(principal);
                let (reader, writer) = tokio::io::split(stream);
                serve_requests(reader, writer, &conn, activity, shutdown).await;
            }
        }
    };
    // Dropping the reader and writer closes the socket; the watchdog only wins while no request
    // is being handled, so no handler is cut off half-way.
    tokio::select! {
        () = session => {}
        expired = watchdog(activity, timeouts) => report_expiry(peer, &listener.name, expired, timeouts),
    }
    debug!(%peer, listener = %listener.name, "connection closed");
    drop(permit);
}

/// Reads, dispatches and answers requests until either side is done.
async fn serve_requests<R, W>(
    reader: R,
    writer: W,
    conn: &Connection,
    activity: &Activity,
    shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let max_frame =
        usize::try_from(conn.server.config.socket_request_max_bytes).unwrap_or(usize::MAX);
    let (tx, rx) = mpsc::channel(MAX_QUEUED_RESPONSES);
    let queued = Arc::new(Queued::default());
    tokio::join!(
        read_requests(
            reader,
            conn,
            FrameDecoder::new(first_frame_limit(conn, max_frame)),
            tx,
            &queued,
            activity,
            shutdown
        ),
        write_responses(writer, rx, conn.peer, &queued, activity)
    );
}

fn report_expiry(peer: SocketAddr, listener: &str, expired: Expired, timeouts: Timeouts) {
    match expired {
        Expired::Idle => debug!(
            %peer, listener, idle_ms = timeouts.idle.map_or(0, |d| d.as_millis() as u64),
            "closing a connection idle for connections.max.idle.ms"
        ),
        Expired::Receive => log_per_peer!(
            warn, peer, "request receive timeout",
            %peer, listener, timeout_ms = timeouts.receive.as_millis() as u64,
            "a request (or the TLS handshake) did not arrive in full within socket.request.receive.timeout.ms; closing connection"
        ),
        Expired::Evicted => {
            debug!(%peer, listener, "closing a connection to make room for a protected listener")
        }
    }
}

/// Resolves when the connection must be closed; re-reads the clocks whenever it wakes.
async fn watchdog(activity: &Activity, timeouts: Timeouts) -> Expired {
    // While a request is handled, look again this often (its end is not signalled).
    let recheck = timeouts
        .idle
        .map_or(timeouts.receive, |idle| idle.min(timeouts.receive))
        .max(Duration::from_millis(1));
    loop {
        let now = Instant::now();
        let mut deadline = None;
        if activity.in_flight.load(Ordering::Relaxed)
            || activity.awaited.load(Ordering::Relaxed) > 0
        {
            deadline = Some(now + recheck);
        } else {
            if activity.is_evicted() {
                return Expired::Evicted;
            }
            if let Some(idle) = timeouts.idle {
                let at = activity.at(activity.last_active_micros()) + idle;
                if now >= at {
                    return Expired::Idle;
                }
                deadline = Some(at);
            }
            if let Some(since) = activity.receiving_since() {
                let at = since + timeouts.receive;
                if now >= at {
                    return Expired::Receive;
                }
                deadline = Some(deadline.map_or(at, |d: Instant| d.min(at)));
            }
        }
        match deadline {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = activity.wake.notified() => {}
                }
            }
            None => activity.wake.notified().await,
        }
    }
}

async fn read_requests<R: AsyncRead + Unpin>(
    mut reader: R,
    conn: &Connection,
    mut decoder: FrameDecoder,
    responses: mpsc::Sender<Outgoing>,
    queued: &Queued,
    activity: &Activity,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    // When the bytes in `buf` came: a request counts from there (Kafka times a request from
    // when it is read off the socket), and one clock reading serves every frame of a read.
    let mut read_at = Instant::now();
    loop {
        // Everything already buffered is handled before reading more or looking at shutdown,
        // so a request that arrived in full is always answered.
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    let reply = dispatch_frame(conn, frame, read_at, queued, activity).await;
                    decoder = after_authentication(conn, decoder);
                    if !queue_response(reply, &responses, queued).await {
                        return;
                    }
                    if activity.is_evicted() {
                        return; // asked to make room: the request in hand was answered
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    log_per_peer!(
                        warn, conn.peer, "invalid request size",
                        peer = %conn.peer, listener = %conn.listener.name, error = %e,
                        "invalid request size; closing connection"
                    );
                    return;
                }
            }
        }
        if !buf.is_empty() {
            activity.receiving(read_at);
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        tokio::select! {
            biased;
            _ = crate::support::shutdown::stopped(&mut shutdown) => return,
            () = queued.writer_stopped.notified() => return,
            read = reader.read_buf(&mut buf) => match read {
                Ok(0) => {
                    if !buf.is_empty() {
                        debug!(peer = %conn.peer, pending = buf.len(), "peer closed the connection in the middle of a request");
                    }
                    return;
                }
                Ok(_) => {
                    read_at = Instant::now();
                    activity.touch(read_at);
                }
                Err(e) => {
                    debug!(peer = %conn.peer, error = %e, "read failed; closing connection");
                    return;
                }
            },
        }
    }
}

/// Serves one request frame (read at `started`) once the writer has room for its response:
/// dispatched (a big frame on the bulk lane), and counted in the request metrics.
#[inline]
async fn dispatch_frame(
    conn: &Connection,
    frame: Bytes,
    started: Instant,
    queued: &Queued,
    activity: &Activity,
) -> Reply {
    activity.received();
    let api = request_api(conn, &frame);
    let (held, muted) = tokio::join!(queued.wait_for_room(), conn.mute.wait());
    // A request counts from when it was read, unless the connection held it back (a full
    // response queue, or muted by a quota throttle, during which Kafka reads nothing).
    let started = if held || muted {
        Instant::now()
    } else {
        started
    };
    activity.start_request();
    let reply = match &conn.bulk {
        // A gateway forwards most big frames without decoding them: they stay here.
        Some(bulk) if BulkHandle::takes(&frame) && conn.upstream.is_none() => {
            bulk.dispatch(conn, frame).await
        }
        _ => dispatch(conn, frame).await,
    };
    let done = Instant::now();
    activity.end_request(done);
    reply.counted(&conn.server, api, started, done)
}

/// Hands the reply's response, if any, to the writer; false when nothing more is to be read.
#[inline]
async fn queue_response(reply: Reply, responses: &mpsc::Sender<Outgoing>, queued: &Queued) -> bool {
    match reply {
        Reply::Respond(response) => {
            queued.bytes.fetch_add(response.len(), Ordering::AcqRel);
            // An error: the writer is gone, the peer stopped reading.
            responses.send(Outgoing::Frame(response)).await.is_ok()
        }
        // Counted by the writer once it is there.
        Reply::Later(later) => responses.send(Outgoing::Later(later)).await.is_ok(),
        Reply::NoResponse => true,
        Reply::Close => false,
        // Sent by the writer, which then closes: nothing more is read.
        Reply::Last(response) => {
            queued.bytes.fetch_add(response.len(), Ordering::AcqRel);
            let _ = responses.send(Outgoing::Frame(response)).await;
            false
        }
    }
}

/// The API a request frame is for, for the request metrics: its header's first field. A raw
/// SASL token is no request, and a frame dispatch closes the connection for is not counted
/// either (an unknown key among them).
fn request_api(conn: &Connection, frame: &[u8]) -> Option<ApiKey> {
    if conn.sasl.as_deref().is_some_and(|s| s.expects_raw_token()) {
        return None;
    }
    let key = frame.get(..2)?;
    ApiKey::from_i16(i16::from_be_bytes([key[0], key[1]]))
}

async fn write_responses<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut responses: mpsc::Receiver<Outgoing>,
    peer: SocketAddr,
    queued: &Queued,
    activity: &Activity,
) {
    let mut batch = BytesMut::new();
    let mut next = None;
    loop {
        let item = match next.take() {
            Some(f) => f,
            None => match responses.recv().await {
                Some(f) => f,
                None => break,
            },
        };
        let Some(first) = ready(item, queued, activity).await else {
            // An answer that will not come: the connection closes, as a broker's would.
            queued.writer_stopped.notify_one();
            return;
        };
        let written = first.len();
        let result = if written > BATCH_COPY_LIMIT || !matches!(first, OutFrame::One(_)) {
            write_frame(&mut writer, &first).await.map(|()| written)
        } else {
            match responses.try_recv() {
                // The common case, one response: write it without copying.
                Err(_) => write_frame(&mut writer, &first).await.map(|()| written),
                Ok(second) => {
                    let (total, rest) =
                        write_batch(&mut writer, &mut batch, first, second, &mut responses).await;
                    next = rest;
                    total
                }
            }
        };
        // A TLS stream may keep written bytes in its session until flushed; a socket's flush
        // does nothing.
        let result = match result {
            Ok(n) => writer.flush().await.map(|()| n),
            Err(e) => Err(e),
        };
        match result {
            Ok(n) => {
                // The reader marked the connection active when it answered; only a write big
                // enough to take a while marks it again.
                if n > BATCH_COPY_LIMIT {
                    activity.touch(Instant::now());
                }
                queued.written(n);
            }
            Err(e) => {
                debug!(%peer, error = %e, "write failed; closing connection");
                queued.writer_stopped.notify_one();
                return;
            }
        }
    }
    // The reader is done and every response is out: close our side.
    let _ = writer.shutdown().await;
}

/// The frame of one item, waiting for it if it is still on its way (the connection is not idle
/// meanwhile; its bytes are counted as queued once there, which the reader could not do);
/// `None` when the connection is to close.
async fn ready(item: Outgoing, queued: &Queued, activity: &Activity) -> Option<OutFrame> {
    match item {
        Outgoing::Frame(frame) => Some(frame),
        Outgoing::Later(later) => {
            activity.awaited.fetch_add(1, Ordering::Relaxed);
            let frame = later.frame().await;
            // The answer may have taken long (a JoinGroup held upstream for a rebalance).
            activity.touch(Instant::now());
            activity.awaited.fetch_sub(1, Ordering::Relaxed);
            let frame = frame?;
            queued.bytes.fetch_add(frame.len(), Ordering::AcqRel);
            Some(frame)
        }
    }
}

/// Copies `first`, `second` and whatever small frames are ready after them into one write;
/// returns the bytes written and the item that did not fit, if any.
async fn write_batch<W: AsyncWrite + Unpin>(
    writer: &mut W,
    batch: &mut BytesMut,
    first: OutFrame,
    second: Outgoing,
    responses: &mut mpsc::Receiver<Outgoing>,
) -> (std::io::Result<usize>, Option<Outgoing>) {
    let mut total = first.len();
    batch.extend_from_slice(&first.to_bytes());
    let mut pending = Some(second);
    let mut rest = None;
    while let Some(item) = pending.take() {
        let f = match item {
            Outgoing::Frame(f)
                if f.len() <= BATCH_COPY_LIMIT
                    && matches!(f, OutFrame::One(_))
                    && batch.len() < MAX_WRITE_BATCH =>
            {
                f
            }
            other => {
                rest = Some(other);
                break;
            }
        };
        total += f.len();
        batch.extend_from_slice(&f.to_bytes());
        pending = responses.try_recv().ok();
    }
    let result = writer.write_all(batch).await.map(|()| total);
    batch.clear();
    (result, rest)
}

/// Writes one frame, its pieces with vectored writes.
async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    frame: &OutFrame,
) -> std::io::Result<()> {
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

    /// A TLS session keeps what the socket would not take; the writer flushes after each write,
    /// so a response is not left there while the writer waits for the next one. A 1 KiB pipe
    /// stands for a full socket.
    #[tokio::test]
    async fn a_response_is_not_left_in_the_tls_session() {
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert = generated.cert.der().clone();
        let key =
            rustls::pki_types::PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let (server_io, client_io) = tokio::io::duplex(1024);
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let (server_tls, client_tls) = tokio::join!(
            tokio_rustls::TlsAcceptor::from(Arc::new(server)).accept(server_io),
            tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, client_io)
        );
        let (_, writer) = tokio::io::split(server_tls.unwrap());
        let mut client_tls = client_tls.unwrap();

        let (tx, rx) = mpsc::channel(MAX_QUEUED_RESPONSES);
        let queued = Queued::default();
        let activity = Activity::new(Instant::now(), Instant::now());
        let response = vec![7u8; 3 * BATCH_COPY_LIMIT];
        queued.bytes.fetch_add(response.len(), Ordering::AcqRel);
        tx.send(Outgoing::Frame(OutFrame::One(bytes::Bytes::from(
            response.clone(),
        ))))
        .await
        .unwrap();
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        // The channel stays open: the writer waits for the next response once this one is out.
        let writing = write_responses(writer, rx, peer, &queued, &activity);
        let reading = async {
            let mut got = vec![0u8; response.len()];
            tokio::time::timeout(Duration::from_secs(10), client_tls.read_exact(&mut got))
                .await
                .expect("part of the response stayed in the server's TLS session")
                .unwrap();
            got
        };
        tokio::select! {
            () = writing => panic!("the writer stopped"),
            got = reading => assert_eq!(got, response),
        }
        drop(tx);
    }
}
