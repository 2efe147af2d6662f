//! A fake Kafka-protocol server for the client's tests: it binds 127.0.0.1 on a free port,
//! decodes request frames with the wire crate, and answers with canned responses built from
//! the generated types. Either a test scripts one connection step by step (`accept`), or a
//! handler answers every request on every connection (`serve`). Its tasks end with the test's
//! runtime.
#![allow(dead_code)]

pub mod push;
pub mod streams;

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::{write_frame, FrameDecoder};
use kcoord_wire::messages::api_versions_response::ApiVersion;
use kcoord_wire::messages::{ApiVersionsResponse, RequestHeader, ResponseHeader};
use kcoord_wire::{Decodable, Encodable, HeaderVersion};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct FakeServer {
    listener: TcpListener,
    pub addr: String,
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub header: RequestHeader,
    pub body: Bytes,
}

impl Received {
    pub fn api_key(&self) -> i16 {
        self.header.request_api_key
    }

    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }

    pub fn decode<T: Decodable>(&self) -> T {
        let mut body = self.body.clone();
        let value = T::decode(&mut body, self.version()).expect("request body decodes");
        assert!(body.is_empty(), "request body has trailing bytes");
        value
    }
}

/// What a `serve` handler does with a request.
pub enum Reply {
    /// A response frame payload (response header and body), see [`response`].
    Frame(Bytes),
    /// No answer; the connection stays open.
    Nothing,
    /// Close the connection.
    Close,
}

/// Encodes `body` at the request's version with the response header that version needs.
pub fn response<M: Encodable + HeaderVersion>(to: &Received, body: &M) -> Reply {
    Reply::Frame(encode_response(
        to.header.correlation_id,
        M::header_version(to.version()),
        body,
        to.version(),
    ))
}

pub fn encode_response<M: Encodable>(
    correlation_id: i32,
    header_version: i16,
    body: &M,
    version: i16,
) -> Bytes {
    let mut payload = BytesMut::new();
    ResponseHeader {
        correlation_id,
        ..Default::default()
    }
    .encode(&mut payload, header_version)
    .unwrap();
    body.encode(&mut payload, version).unwrap();
    payload.freeze()
}

/// Requests seen by a `serve`d server, over all its connections, in arrival order.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Received>>>);

impl Log {
    pub fn all(&self) -> Vec<Received> {
        self.0.lock().unwrap().clone()
    }

    pub fn of(&self, api: ApiKey) -> Vec<Received> {
        self.all()
            .into_iter()
            .filter(|r| r.api_key() == api.key())
            .collect()
    }

    fn push(&self, r: Received) {
        self.0.lock().unwrap().push(r)
    }
}

/// Served connections accepted so far.
#[derive(Clone, Default)]
pub struct Accepted(Arc<Mutex<usize>>);

impl Accepted {
    pub fn count(&self) -> usize {
        *self.0.lock().unwrap()
    }
}

impl FakeServer {
    pub async fn bind() -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        FakeServer { listener, addr }
    }

    pub fn port(&self) -> i32 {
        self.addr.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub async fn accept(&self) -> FakeConn {
        let (stream, _) = self.listener.accept().await.unwrap();
        FakeConn {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// Answers every request on every connection with `handler`, in request order.
    pub fn serve(
        self,
        handler: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> (String, Log, Accepted) {
        let handler = Arc::new(handler);
        let (log, accepted) = (Log::default(), Accepted::default());
        let addr = self.addr.clone();
        let (task_log, task_accepted) = (log.clone(), accepted.clone());
        tokio::spawn(async move {
            loop {
                let mut conn = self.accept().await;
                *task_accepted.0.lock().unwrap() += 1;
                let (handler, log) = (handler.clone(), task_log.clone());
                tokio::spawn(async move {
                    while let Some(request) = conn.next_request().await {
                        log.push(request.clone());
                        match handler(&request) {
                            Reply::Frame(payload) => conn.send_frame(&payload).await,
                            Reply::Nothing => {}
                            Reply::Close => return,
                        }
                    }
                });
            }
        });
        (addr, log, accepted)
    }
}

/// The server side of one connection, driven by the test.
pub struct FakeConn {
    stream: TcpStream,
    buf: BytesMut,
}

impl FakeConn {
    /// The next request, or `None` once the client has closed the connection. Panics when
    /// nothing happens for 10 s, so that a client that failed to send fails the test instead
    /// of hanging it.
    pub async fn recv(&mut self) -> Option<Received> {
        match tokio::time::timeout(std::time::Duration::from_secs(10), self.next_request()).await {
            Ok(request) => request,
            Err(_) => panic!("the client sent nothing for 10 s"),
        }
    }

    async fn next_request(&mut self) -> Option<Received> {
        let decoder = FrameDecoder::new(1 << 20);
        loop {
            if let Some(mut frame) = decoder.decode(&mut self.buf).unwrap() {
                let key = i16::from_be_bytes([frame[0], frame[1]]);
                let version = i16::from_be_bytes([frame[2], frame[3]]);
                let header_version =
                    ApiKey::from_i16(key).map_or(1, |k| k.request_header_version(version));
                let header = RequestHeader::decode(&mut frame, header_version).unwrap();
                return Some(Received {
                    header,
                    body: frame,
                });
            }
            if self.stream.read_buf(&mut self.buf).await.unwrap_or(0) == 0 {
                return None;
            }
        }
    }

    /// `recv` for a request that must come.
    pub async fn expect(&mut self) -> Received {
        self.recv().await.expect("a request")
    }

    /// Answers `to` at its own version.
    pub async fn reply<M: Encodable + HeaderVersion>(&mut self, to: &Received, body: &M) {
        match response(to, body) {
            Reply::Frame(payload) => self.send_frame(&payload).await,
            _ => unreachable!(),
        }
    }

    /// Writes one frame around `payload`.
    pub async fn send_frame(&mut self, payload: &[u8]) {
        let mut out = BytesMut::new();
        write_frame::<()>(&mut out, |b| {
            b.extend_from_slice(payload);
            Ok(())
        })
        .unwrap();
        self.send_bytes(&out).await;
    }

    /// Writes bytes as they are, framed or not. A client that already hung up is not an error.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }
}

/// An ApiVersions response advertising `apis` as `(key, min, max)`.
pub fn api_versions(apis: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    let api_keys = apis
        .iter()
        .map(|(api, min_version, max_version)| ApiVersion {
            api_key: api.key(),
            min_version: *min_version,
            max_version: *max_version,
            ..Default::default()
        })
        .collect();
    ApiVersionsResponse {
        api_keys,
        ..Default::default()
    }
}

/// Every API the wire crate knows, at every version it knows.
pub fn every_api() -> Vec<(ApiKey, i16, i16)> {
    ApiKey::ALL
        .iter()
        .map(|api| (*api, api.valid_versions().min, api.valid_versions().max))
        .collect()
}

/// [`every_api`] with the range of `api` replaced (or `api` left out for `None`).
pub fn every_api_but(api: ApiKey, range: Option<(i16, i16)>) -> Vec<(ApiKey, i16, i16)> {
    every_api()
        .into_iter()
        .filter_map(|(k, min, max)| match (k == api, range) {
            (false, _) => Some((k, min, max)),
            (true, Some((min, max))) => Some((k, min, max)),
            (true, None) => None,
        })
        .collect()
}
