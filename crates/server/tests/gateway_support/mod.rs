//! What the gateway tests share: a standalone kcoord playing the upstream cluster, gateways in
//! front of it, and raw requests to either.
#![allow(dead_code)] // each test file uses its own part

pub mod streams;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_server::{Config, ServerHandle};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::{
    ApiVersionsRequest, CreateTopicsRequest, CreateTopicsResponse, MetadataRequest,
    MetadataResponse, RequestHeader, ResponseHeader,
};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const BASE: &str = "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
     controller.listener.names=CONTROLLER\n\
     listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
     offsets.topic.num.partitions=1\n";

pub async fn upstream() -> ServerHandle {
    upstream_with("").await
}

/// [`upstream`] with more config lines.
pub async fn upstream_with(extra: &str) -> ServerHandle {
    // kcoord nodes join a classic group in the cluster: no wait for more members.
    let text = format!("node.id=1\n{BASE}group.initial.rebalance.delay.ms=0\n{extra}");
    kcoord_server::start(Config::parse("upstream", &text).unwrap())
        .await
        .unwrap()
}

/// A gateway in front of `upstream`, with upstream broker 1 on the returned port.
pub async fn gateway(upstream: &ServerHandle) -> (ServerHandle, u16) {
    gateway_with(upstream, "").await.unwrap()
}

/// [`gateway`] with more config lines.
pub async fn gateway_with(
    upstream: &ServerHandle,
    extra: &str,
) -> Result<(ServerHandle, u16), kcoord_server::StartError> {
    // A port the OS just had free for broker 1; the start is the one below it.
    let port = free_port();
    let server = gateway_at(upstream, port - 1, extra).await?;
    Ok((server, port))
}

/// A gateway in front of `upstream` serving upstream broker `b` on `start + b`.
pub async fn gateway_at(
    upstream: &ServerHandle,
    start: u16,
    extra: &str,
) -> Result<ServerHandle, kcoord_server::StartError> {
    let text = format!(
        "node.id=7\n{BASE}upstream.bootstrap.servers={}\ngateway.broker.port.start={start}\n{extra}",
        upstream.broker_addr().unwrap(),
    );
    kcoord_server::start(Config::parse("gateway", &text).unwrap()).await
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn frame<Req: Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &Req,
) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id,
        client_id: Some("gateway-test".to_owned()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .unwrap();
    request.encode(&mut buf, version).unwrap();
    let mut out = (buf.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&buf);
    out
}

/// The next response frame's correlation id and body; `None` when the connection closed.
pub async fn read_response(
    stream: &mut TcpStream,
    api: ApiKey,
    version: i16,
) -> Option<(i32, Bytes)> {
    let mut size = [0u8; 4];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut size))
        .await
        .expect("a response or a close in time")
        .ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).await.ok()?;
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(&mut body, api.response_header_version(version)).unwrap();
    Some((header.correlation_id, body))
}

/// Creates a topic of one partition through `addr`.
pub async fn create_topic(addr: std::net::SocketAddr, name: &str) {
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.to_owned(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 5000,
        ..Default::default()
    };
    let created: CreateTopicsResponse = call(addr, ApiKey::CreateTopics, 7, &create).await;
    assert_eq!(created.topics[0].error_code, 0, "{created:?}");
}

/// Metadata for all topics through `addr`.
pub async fn metadata_of(addr: std::net::SocketAddr) -> MetadataResponse {
    call(addr, ApiKey::Metadata, 12, &MetadataRequest::default()).await
}

pub fn api_versions() -> ApiVersionsRequest {
    ApiVersionsRequest {
        client_software_name: "gateway-test".to_owned(),
        client_software_version: "1".to_owned(),
        ..Default::default()
    }
}

pub async fn call<Req: Encodable, Resp: Decodable>(
    addr: std::net::SocketAddr,
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Resp {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(&frame(api, version, 1, request))
        .await
        .unwrap();
    let (_, mut body) = read_response(&mut stream, api, version)
        .await
        .expect("an answer");
    Resp::decode(&mut body, version).unwrap()
}
