//! One pipelined connection to a Kafka-protocol server.

use std::convert::Infallible;
use std::fmt::Display;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::write_frame;
use kcoord_wire::messages::{ApiVersionsRequest, RequestHeader};
use kcoord_wire::{Encodable, HeaderVersion, Message, Request, VersionRange};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tracing::debug;

use crate::client_config::ClientConfig;
use crate::error::{api_name, ClientError};
use crate::inflight::{read_responses, write_requests, InFlight, Outgoing, Waiter};
use crate::security::{sasl, tls};
use crate::versions::{decode_api_versions, decode_exact, next_step, Negotiation, ServerVersions};

/// Sent in ApiVersions v3+ (KIP-511); Kafka requires `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
const SOFTWARE_NAME: &str = "kcoord-client";
const SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Frames queued for the writer before senders wait; enough for deep pipelines.
const WRITE_QUEUE: usize = 1024;

/// A TCP (or TLS) connection on which any number of requests may be in flight at once, from any
/// number of tasks. Cloning is cheap and shares the connection; it closes when the last
/// clone is dropped.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    addr: String,
    config: ClientConfig,
    inflight: Arc<InFlight>,
    queue: mpsc::Sender<Outgoing>,
    next_correlation_id: AtomicI32,
    server_versions: RwLock<Option<Arc<ServerVersions>>>,
    tasks: [AbortHandle; 2],
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The reader would otherwise live until the server hangs up.
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.inner.addr)
            .field("client_id", &self.inner.config.client_id)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Connection {
    /// Opens a connection to `addr` (`host:port`), secured as `config.security` says: TLS
    /// for `SSL` and `SASL_SSL` (within the connect timeout), then for `SASL_PLAINTEXT` and
    /// `SASL_SSL` Kafka's SASL exchange (ApiVersions, SaslHandshake, SaslAuthenticate), so that
    /// what is returned is ready for any request. Without SASL, versions are not negotiated
    /// yet; call [`Connection::negotiate`] or let [`Connection::send_negotiated`] do it.
    pub async fn connect(addr: &str, config: ClientConfig) -> Result<Connection, ClientError> {
        let security = config.security.clone();
        let conn = Self::connect_unauthenticated(addr, config).await?;
        if security.protocol.uses_sasl() {
            let Some(credentials) = security.sasl_credentials() else {
                return Err(ClientError::InvalidArgument(format!(
                    "security.protocol={} needs SASL credentials",
                    security.protocol
                )));
            };
            sasl::authenticate(&conn, credentials).await?;
        }
        Ok(conn)
    }

    /// Opens a connection as [`Connection::connect`] does, TLS included, but leaves the SASL
    /// exchange to the caller, who sends its SaslHandshake and SaslAuthenticate requests
    /// itself (a gateway relaying its own client's exchange).
    pub async fn connect_unauthenticated(
        addr: &str,
        config: ClientConfig,
    ) -> Result<Connection, ClientError> {
        let security = config.security.clone();
        let protocol = security.protocol;
        let tcp = Self::connect_tcp(addr, &config).await?;
        if protocol.uses_tls() {
            let Some(tls) = security.tls_settings() else {
                return Err(ClientError::InvalidArgument(format!(
                    "security.protocol={protocol} needs TLS settings"
                )));
            };
            let handshake = tls::handshake(addr, tls.config.clone(), tcp);
            let stream = match tokio::time::timeout(config.connect_timeout, handshake).await {
                Ok(result) => result?,
                Err(_) => {
                    return Err(ClientError::Timeout {
                        addr: addr.to_string(),
                        operation: "the TLS handshake".to_string(),
                        after: config.connect_timeout,
                    })
                }
            };
            let (read, write) = tokio::io::split(stream);
            Ok(Self::start(addr, config, read, write))
        } else {
            let (read, write) = tcp.into_split();
            Ok(Self::start(addr, config, read, write))
        }
    }

    async fn connect_tcp(addr: &str, config: &ClientConfig) -> Result<TcpStream, ClientError> {
        let stream =
            match tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(source)) => {
                    return Err(ClientError::Io {
                        addr: addr.to_string(),
                        source,
                    })
                }
                Err(_) => {
                    return Err(ClientError::Timeout {
                        addr: addr.to_string(),
                        operation: "the TCP connection".to_string(),
                        after: config.connect_timeout,
                    })
                }
            };
        // Requests are small and latency matters more than packet count.
        stream.set_nodelay(true).map_err(|source| ClientError::Io {
            addr: addr.to_string(),
            source,
        })?;
        Ok(stream)
    }

    /// Starts the reader and writer tasks over the two halves of a connected stream.
    fn start<R, W>(addr: &str, config: ClientConfig, read: R, write: W) -> Connection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let inflight = Arc::new(InFlight::new(addr.to_string()));
        let (queue, queued) = mpsc::channel(WRITE_QUEUE);
        let reader = tokio::spawn(read_responses(
            read,
            inflight.clone(),
            config.max_response_size,
        ));
        let writer = tokio::spawn(write_requests(write, queued, inflight.clone()));
        debug!(addr, client_id = %config.client_id, security_protocol = %config.security.protocol, "connected");
        Connection {
            inner: Arc::new(Inner {
                addr: addr.to_string(),
                config,
                inflight,
                queue,
                next_correlation_id: AtomicI32::new(0),
                server_versions: RwLock::new(None),
                tasks: [reader.abort_handle(), writer.abort_handle()],
            }),
        }
    }

    /// The address this connection was opened with.
    pub fn addr(&self) -> &str {
        &self.inner.addr
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// True once the server closed the connection or it failed; every request then fails.
    pub fn is_closed(&self) -> bool {
        self.inner.inflight.is_closed()
    }

    /// Sends `req` at `version` and waits for its response, up to the configured request timeout.
    pub async fn send<R: Request>(&self, req: R, version: i16) -> Result<R::Response, ClientError> {
        self.send_with_timeout(req, version, self.inner.config.request_timeout)
            .await
    }

    /// [`Connection::send`] with a timeout for this one request.
    pub async fn send_with_timeout<R: Request>(
        &self,
        req: R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, ClientError> {
        let body = self.send_for_body(req, version, timeout).await?;
        decode_exact(R::KEY, version, body)
    }

    /// Sends `req` at the highest version both sides support, negotiating first if needed.
    pub async fn send_negotiated<R: Request>(&self, req: R) -> Result<R::Response, ClientError> {
        let version = self.negotiated_version::<R>().await?;
        self.send(req, version).await
    }

    /// Sends a hand-built request body and returns the response body (after the response
    /// header). Header versions come from the ApiKey table; for a key it does not know, request
    /// header v1 and response header v0 are used, so tests can probe unknown keys.
    pub async fn send_raw(
        &self,
        api_key: i16,
        version: i16,
        body: Bytes,
    ) -> Result<Bytes, ClientError> {
        let (request_header, response_header) = match ApiKey::from_i16(api_key) {
            Some(api) => (
                api.request_header_version(version),
                api.response_header_version(version),
            ),
            None => (1, 0),
        };
        let append = |buf: &mut BytesMut| {
            buf.extend_from_slice(&body);
            Ok::<(), Infallible>(())
        };
        self.round_trip(
            api_key,
            version,
            (request_header, response_header),
            (None, append),
            self.inner.config.request_timeout,
        )
        .await
    }

    /// Queues a request body encoded elsewhere, as a proxy forwards a client's request: the
    /// header carries this connection's correlation id and the client's own `client_id`, the
    /// body goes out untouched. Requests queued one after the other are written in that order.
    /// Returns once the request is queued: with `expect_response`, the receiver of its response
    /// body (after the response header), which has no timeout of its own; without (Produce with
    /// acks=0), nothing.
    pub async fn forward(
        &self,
        api: ApiKey,
        version: i16,
        client_id: Option<&str>,
        body: Bytes,
        expect_response: bool,
    ) -> Result<Option<PendingResponse>, ClientError> {
        let inner = &*self.inner;
        let append = |buf: &mut BytesMut| {
            buf.extend_from_slice(&body);
            Ok::<(), Infallible>(())
        };
        let request_header = api.request_header_version(version);
        let (correlation_id, frame) =
            self.frame(api.key(), version, request_header, client_id, append)?;
        let pending = if expect_response {
            let (reply, response) = oneshot::channel();
            inner.inflight.register(
                correlation_id,
                Waiter {
                    api_key: api.key(),
                    version,
                    response_header_version: api.response_header_version(version),
                    reply,
                },
            )?;
            Some(PendingResponse {
                response,
                inflight: Arc::clone(&inner.inflight),
            })
        } else if inner.inflight.is_closed() {
            return Err(inner.inflight.closed());
        } else {
            None
        };
        let outgoing = Outgoing {
            frame,
            written: None,
        };
        if inner.queue.send(outgoing).await.is_err() {
            inner.inflight.take(correlation_id);
            return Err(inner.inflight.closed());
        }
        Ok(pending)
    }

    /// Asks the server for its API versions with ApiVersions, starting at the newest version
    /// the client knows and stepping down as Kafka clients do when the server answers
    /// UNSUPPORTED_VERSION. The result is kept for [`Connection::version_for`].
    pub async fn negotiate(&self) -> Result<Arc<ServerVersions>, ClientError> {
        let mut version = ApiVersionsRequest::VERSIONS.max;
        loop {
            let request = ApiVersionsRequest {
                client_software_name: SOFTWARE_NAME.to_string(),
                client_software_version: SOFTWARE_VERSION.to_string(),
                ..Default::default()
            };
            let body = self
                .send_for_body(request, version, self.inner.config.request_timeout)
                .await?;
            let (response, decoded_at) = decode_api_versions(body, version)?;
            match next_step(&response, version)? {
                Negotiation::RetryAt(lower) => {
                    debug!(addr = %self.inner.addr, tried = version, retry = lower, "server does not support this ApiVersions version");
                    version = lower;
                }
                Negotiation::Done => {
                    let versions = Arc::new(ServerVersions::new(response, decoded_at));
                    debug!(addr = %self.inner.addr, api_versions_version = decoded_at, apis = versions.ranges().count(), "negotiated versions");
                    *self
                        .inner
                        .server_versions
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = Some(versions.clone());
                    return Ok(versions);
                }
            }
        }
    }

    /// The last ApiVersions answer, if versions were negotiated.
    pub fn server_versions(&self) -> Option<Arc<ServerVersions>> {
        self.inner
            .server_versions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The highest version of `R` both client and server support; `None` before negotiation
    /// or when there is none.
    pub fn version_for<R: Request>(&self) -> Option<i16> {
        self.server_versions()?.common_version(R::KEY, R::VERSIONS)
    }

    /// Whether client and server share a version of `api`; false before negotiation.
    pub fn supports(&self, api: ApiKey) -> bool {
        self.server_versions()
            .and_then(|v| v.common_version(api.key(), api.valid_versions()))
            .is_some()
    }

    /// Like [`Connection::version_for`], but negotiates first if needed and explains a miss.
    pub async fn negotiated_version<R: Request>(&self) -> Result<i16, ClientError> {
        let versions = match self.server_versions() {
            Some(versions) => versions,
            None => self.negotiate().await?,
        };
        versions
            .common_version(R::KEY, R::VERSIONS)
            .ok_or(ClientError::UnsupportedVersion {
                api: R::KEY,
                requested: None,
                client: R::VERSIONS,
                server: versions.range(R::KEY),
            })
    }

    async fn send_for_body<R: Request>(
        &self,
        req: R,
        version: i16,
        timeout: Duration,
    ) -> Result<Bytes, ClientError> {
        self.check_version::<R>(version)?;
        let headers = (
            R::header_version(version),
            <R::Response as HeaderVersion>::header_version(version),
        );
        self.round_trip(
            R::KEY,
            version,
            headers,
            (None, |buf: &mut BytesMut| req.encode(buf, version)),
            timeout,
        )
        .await
    }

    /// Sends `req` at `version` without waiting for a response, for the one request Kafka
    /// servers never answer: Produce with acks=0. Returns once the frame has been written to
    /// the socket (Kafka's clients likewise complete such a send once it is written), within
    /// the request timeout; nothing is registered for its correlation id, so an answer, should
    /// one come, is dropped.
    /// A server that refuses such a request closes the connection, which fails later requests
    /// on it with [`ClientError::ConnectionClosed`].
    pub async fn send_no_response<R: Request>(
        &self,
        req: R,
        version: i16,
    ) -> Result<(), ClientError> {
        self.check_version::<R>(version)?;
        let (correlation_id, frame) =
            self.frame(R::KEY, version, R::header_version(version), None, |buf| {
                req.encode(buf, version)
            })?;
        self.write_only(
            R::KEY,
            version,
            correlation_id,
            frame,
            self.inner.config.request_timeout,
        )
        .await
    }

    /// Queues a frame no response is expected for and waits until it is written.
    async fn write_only(
        &self,
        api_key: i16,
        version: i16,
        correlation_id: i32,
        frame: Bytes,
        timeout: Duration,
    ) -> Result<(), ClientError> {
        let inner = &*self.inner;
        if inner.inflight.is_closed() {
            return Err(inner.inflight.closed());
        }
        debug!(addr = %inner.addr, api = %api_name(api_key), version, correlation_id, size = frame.len(), "sending request without a response");
        let (notice, written) = oneshot::channel();
        let exchange = async {
            inner
                .queue
                .send(Outgoing {
                    frame,
                    written: Some(notice),
                })
                .await
                .map_err(|_| inner.inflight.closed())?;
            written.await.map_err(|_| inner.inflight.closed())
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    addr: inner.addr.clone(),
                    operation: format!(
                        "writing the {} v{version} request (correlation id {correlation_id})",
                        api_name(api_key)
                    ),
                    after: timeout,
                })
            })
    }

    fn check_version<R: Request>(&self, version: i16) -> Result<(), ClientError> {
        if contains(R::VERSIONS, version) {
            return Ok(());
        }
        Err(ClientError::UnsupportedVersion {
            api: R::KEY,
            requested: Some(version),
            client: R::VERSIONS,
            server: self.server_versions().and_then(|v| v.range(R::KEY)),
        })
    }

    /// One request frame (size prefix, header, body) with the next correlation id, naming
    /// `client_id` or, without one, the configured client id.
    fn frame<E: Display>(
        &self,
        api_key: i16,
        version: i16,
        request_header_version: i16,
        client_id: Option<&str>,
        encode_body: impl FnOnce(&mut BytesMut) -> Result<(), E>,
    ) -> Result<(i32, Bytes), ClientError> {
        let inner = &*self.inner;
        let correlation_id = inner.next_correlation_id.fetch_add(1, Ordering::Relaxed);
        let header = RequestHeader {
            request_api_key: api_key,
            request_api_version: version,
            correlation_id,
            // Request header v0 has no client id field.
            client_id: Some(if request_header_version == 0 {
                String::new()
            } else {
                client_id.unwrap_or(&inner.config.client_id).to_owned()
            }),
            ..Default::default()
        };
        let mut frame = BytesMut::new();
        write_frame(&mut frame, |buf| {
            header
                .encode(buf, request_header_version)
                .map_err(|e| format!("request header: {e:#}"))?;
            encode_body(buf).map_err(|e| e.to_string())
        })
        .map_err(|e| ClientError::Encode {
            api: api_key,
            version,
            reason: e.to_string(),
        })?;
        Ok((correlation_id, frame.freeze()))
    }

    /// Frames and queues one request, then waits for the body of its response.
    ///
    /// On timeout the request is forgotten and the connection kept: a late response is
    /// recognised by its correlation id and dropped.
    async fn round_trip<E: Display>(
        &self,
        api_key: i16,
        version: i16,
        (request_header_version, response_header_version): (i16, i16),
        (client_id, encode_body): (Option<&str>, impl FnOnce(&mut BytesMut) -> Result<(), E>),
        timeout: Duration,
    ) -> Result<Bytes, ClientError> {
        let inner = &*self.inner;
        let (correlation_id, frame) = self.frame(
            api_key,
            version,
            request_header_version,
            client_id,
            encode_body,
        )?;
        let (reply, response) = oneshot::channel();
        inner.inflight.register(
            correlation_id,
            Waiter {
                api_key,
                version,
                response_header_version,
                reply,
            },
        )?;
        // Forgets the request however this future ends: answered, timed out or dropped.
        let _forget = Forget {
            inflight: &inner.inflight,
            correlation_id,
        };
        debug!(addr = %inner.addr, api = %api_name(api_key), version, correlation_id, size = frame.len(), "sending request");
        let exchange = async {
            inner
                .queue
                .send(Outgoing {
                    frame,
                    written: None,
                })
                .await
                .map_err(|_| inner.inflight.closed())?;
            response.await.map_err(|_| inner.inflight.closed())?
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => {
                debug!(addr = %inner.addr, api = %api_name(api_key), version, correlation_id, "request timed out");
                Err(ClientError::Timeout {
                    addr: inner.addr.clone(),
                    operation: format!(
                        "the {} v{version} response (correlation id {correlation_id})",
                        api_name(api_key)
                    ),
                    after: timeout,
                })
            }
        }
    }
}

/// The response to a request queued by [`Connection::forward`].
pub struct PendingResponse {
    response: oneshot::Receiver<Result<Bytes, ClientError>>,
    inflight: Arc<InFlight>,
}

impl std::fmt::Debug for PendingResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingResponse").finish_non_exhaustive()
    }
}

impl PendingResponse {
    /// The response body, or why there is none (the connection closed first).
    pub async fn response(self) -> Result<Bytes, ClientError> {
        match self.response.await {
            Ok(result) => result,
            Err(_) => Err(self.inflight.closed()),
        }
    }
}

fn contains(range: VersionRange, version: i16) -> bool {
    range.min <= version && version <= range.max
}

struct Forget<'a> {
    inflight: &'a InFlight,
    correlation_id: i32,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.inflight.take(self.correlation_id);
    }
}
