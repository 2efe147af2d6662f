//! The daemon over real loopback sockets, in-process.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse, RequestHeader,
    ResponseHeader,
};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{start, Config, ServerHandle};

const TIMEOUT: Duration = Duration::from_secs(10);

async fn server(extra: &str) -> ServerHandle {
    let text =
        format!("node.id=3\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n{extra}");
    let config = Config::parse("test", &text).unwrap_or_else(|e| panic!("{e}"));
    start(config).await.unwrap_or_else(|e| panic!("{e}"))
}

fn frame<R: Encodable>(api: ApiKey, version: i16, correlation_id: i32, body: &R) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id,
        client_id: Some("net-test".to_owned()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut out = (buf.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&buf);
    out
}

fn api_versions(correlation_id: i32) -> Vec<u8> {
    let req = ApiVersionsRequest {
        client_software_name: "net-test".into(),
        client_software_version: "1".into(),
        ..Default::default()
    };
    frame(ApiKey::ApiVersions, 3, correlation_id, &req)
}

/// Reads one response frame; `None` when the server closed the connection.
async fn read_frame(stream: &mut TcpStream) -> Option<Bytes> {
    let mut size = [0u8; 4];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut size))
        .await
        .expect("timed out")
        .ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut body))
        .await
        .expect("timed out")
        .ok()?;
    Some(Bytes::from(body))
}

async fn is_closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(TIMEOUT, stream.read(&mut byte))
            .await
            .expect("timed out"),
        Ok(0) | Err(_)
    )
}

async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.unwrap()
}

async fn api_versions_works(addr: SocketAddr) {
    let mut s = connect(addr).await;
    s.write_all(&api_versions(1)).await.unwrap();
    let mut resp = read_frame(&mut s).await.expect("no response");
    assert_eq!(
        ResponseHeader::decode(&mut resp, 0).unwrap().correlation_id,
        1
    );
    assert_eq!(
        ApiVersionsResponse::decode(&mut resp, 3)
            .unwrap()
            .error_code,
        0
    );
}

#[tokio::test]
async fn binds_free_ports_and_reports_them() {
    let server = server("").await;
    let broker = server.broker_addr().unwrap();
    let controller = server.controller_addr().unwrap();
    assert_ne!(broker.port(), 0);
    assert_eq!(server.local_addr("plaintext"), Some(broker));
    assert_eq!(
        server.startup_line(),
        format!(
            "kcoord started: node.id=3 listeners=PLAINTEXT://{broker},CONTROLLER://{controller}"
        )
    );
    // The advertised port of a port-0 listener is the bound one.
    let mut s = connect(broker).await;
    s.write_all(&frame(ApiKey::Metadata, 12, 9, &MetadataRequest::default()))
        .await
        .unwrap();
    let mut resp = read_frame(&mut s).await.unwrap();
    ResponseHeader::decode(&mut resp, 1).unwrap();
    let metadata = MetadataResponse::decode(&mut resp, 12).unwrap();
    assert_eq!(
        (metadata.brokers[0].host.as_str(), metadata.brokers[0].port),
        ("127.0.0.1", i32::from(broker.port()))
    );
    api_versions_works(controller).await;
    server.shutdown().await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = server("").await;
    let mut s = connect(server.broker_addr().unwrap()).await;
    let mut burst = Vec::new();
    for id in 0..200 {
        if id % 2 == 0 {
            burst.extend(api_versions(id));
        } else {
            burst.extend(frame(
                ApiKey::Metadata,
                1,
                id,
                &MetadataRequest {
                    topics: Some(vec![]),
                    ..Default::default()
                },
            ));
        }
    }
    s.write_all(&burst).await.unwrap();
    for id in 0..200 {
        let mut resp = read_frame(&mut s).await.expect("closed early");
        assert_eq!(
            ResponseHeader::decode(&mut resp, 0).unwrap().correlation_id,
            id
        );
    }
    server.shutdown().await;
}

/// A request in a frame of 64 KiB or more is handled on the bulk lane (its low-priority
/// threads), answered in order with the small ones around it; small requests are not. Produce
/// goes there from 8 KiB.
#[tokio::test]
async fn big_frames_are_handled_on_the_bulk_lane_in_order() {
    use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
    let server = server("").await;
    let bulk = server.bulk().expect("a bulk lane");
    let mut s = connect(server.broker_addr().unwrap()).await;
    let many_topics = MetadataRequest {
        topics: Some(
            (0..8_000)
                .map(|i| MetadataRequestTopic {
                    name: Some(format!("no-such-topic-{i}")),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    };
    let big = frame(ApiKey::Metadata, 12, 1, &many_topics);
    assert!(big.len() - 4 >= crate::rpc::bulk::BULK_FRAME_BYTES);
    let mut burst = api_versions(0);
    burst.extend(&big);
    burst.extend(api_versions(2));
    s.write_all(&burst).await.unwrap();
    for id in 0..3 {
        let mut resp = read_frame(&mut s).await.expect("closed early");
        let header_version = match id {
            1 => ApiKey::Metadata.response_header_version(12),
            _ => 0,
        };
        assert_eq!(
            ResponseHeader::decode(&mut resp, header_version)
                .unwrap()
                .correlation_id,
            id
        );
        if id == 1 {
            let metadata = MetadataResponse::decode(&mut resp, 12).unwrap();
            assert_eq!(metadata.topics.len(), 8_000);
        }
    }
    assert_eq!(bulk.served(), 1, "only the big frame went to the bulk lane");
    let produce_key = ApiKey::Produce.key().to_be_bytes();
    let mut produce = vec![0u8; crate::rpc::bulk::BULK_PRODUCE_BYTES];
    produce[..2].copy_from_slice(&produce_key);
    assert!(crate::rpc::bulk::BulkHandle::takes(&produce));
    assert!(!crate::rpc::bulk::BulkHandle::takes(
        &produce[..produce.len() - 1]
    ));
    let mut metadata = vec![0u8; crate::rpc::bulk::BULK_PRODUCE_BYTES];
    metadata[..2].copy_from_slice(&ApiKey::Metadata.key().to_be_bytes());
    assert!(!crate::rpc::bulk::BulkHandle::takes(&metadata));
    server.shutdown().await;
}

#[tokio::test]
async fn oversized_and_negative_frames_close_the_connection_only() {
    let server = server("socket.request.max.bytes=1000\n").await;
    let addr = server.broker_addr().unwrap();
    for prefix in [1001i32, i32::MAX, -1, i32::MIN] {
        let mut s = connect(addr).await;
        s.write_all(&prefix.to_be_bytes()).await.unwrap();
        assert!(is_closed(&mut s).await, "size {prefix}");
        api_versions_works(addr).await;
    }
    // A request answered before the bad frame still gets its response.
    let mut s = connect(addr).await;
    let mut bytes = api_versions(5);
    bytes.extend_from_slice(&(-5i32).to_be_bytes());
    s.write_all(&bytes).await.unwrap();
    assert!(read_frame(&mut s).await.is_some());
    assert!(is_closed(&mut s).await);
    server.shutdown().await;
}

#[tokio::test]
async fn garbage_and_unknown_keys_close_the_connection_only() {
    let server = server("").await;
    let addr = server.broker_addr().unwrap();
    let garbage: Vec<Vec<u8>> = vec![
        vec![0, 0, 0, 2, 0xff, 0xff],
        vec![0, 0, 0, 8, 0x03, 0xe8, 0, 0, 0, 0, 0, 1],
        vec![0, 0, 0, 12, 0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0, 0],
        frame(ApiKey::Metadata, 14, 1, &MetadataRequest::default()),
    ];
    for bytes in garbage {
        let mut s = connect(addr).await;
        s.write_all(&bytes).await.unwrap();
        assert!(is_closed(&mut s).await, "{bytes:?}");
        api_versions_works(addr).await;
    }
    // A truncated frame followed by EOF from the client.
    let mut s = connect(addr).await;
    s.write_all(&[0, 0, 0, 50, 0, 18]).await.unwrap();
    s.shutdown().await.unwrap();
    assert!(is_closed(&mut s).await);
    api_versions_works(addr).await;
    server.shutdown().await;
}

/// DescribeUserScramCredentials on a controller listener (Kafka's controller does not serve
/// it) gets what an unknown key gets: the connection closes and the listener goes on serving.
/// SaslHandshake on a listener without SASL is answered ILLEGAL_SASL_STATE.
#[tokio::test]
async fn security_requests_a_listener_does_not_serve_close_and_sasl_without_sasl_is_illegal() {
    use kcoord_wire::messages::{
        DescribeUserScramCredentialsRequest, SaslHandshakeRequest, SaslHandshakeResponse,
    };
    let server = server("").await;
    let (broker, controller) = (
        server.broker_addr().unwrap(),
        server.controller_addr().unwrap(),
    );
    let mut s = connect(controller).await;
    s.write_all(&frame(
        ApiKey::DescribeUserScramCredentials,
        0,
        6,
        &DescribeUserScramCredentialsRequest::default(),
    ))
    .await
    .unwrap();
    assert!(is_closed(&mut s).await);
    api_versions_works(controller).await;

    let mut s = connect(broker).await;
    let handshake = SaslHandshakeRequest {
        mechanism: "PLAIN".into(),
        ..Default::default()
    };
    s.write_all(&frame(ApiKey::SaslHandshake, 1, 1, &handshake))
        .await
        .unwrap();
    let mut body = read_frame(&mut s).await.expect("a response");
    kcoord_wire::messages::ResponseHeader::decode(&mut body, 0).unwrap();
    let response = SaslHandshakeResponse::decode(&mut body, 1).unwrap();
    assert_eq!(
        response.error_code,
        kcoord_wire::ErrorCode::ILLEGAL_SASL_STATE.code()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn max_connections_holds_broker_listeners_and_keeps_the_controller_listener_open() {
    let server = server("max.connections=2\n").await;
    let broker = server.broker_addr().unwrap();
    let controller = server.controller_addr().unwrap();
    let mut a = connect(broker).await;
    a.write_all(&api_versions(1)).await.unwrap();
    assert!(read_frame(&mut a).await.is_some());
    let mut b = connect(controller).await;
    b.write_all(&api_versions(1)).await.unwrap();
    assert!(read_frame(&mut b).await.is_some());
    // At the limit a broker listener stops accepting (as Kafka's acceptor blocks): the third
    // connection is not closed, it is served once a slot frees.
    let mut c = connect(broker).await;
    c.write_all(&api_versions(2)).await.unwrap();
    drop(a);
    assert!(
        read_frame(&mut c).await.is_some(),
        "the waiting connection is served once one closes"
    );
    // At the limit again (b, c): the controller listener still takes a connection, and the
    // least recently active broker connection is closed to make room.
    let mut d = connect(controller).await;
    d.write_all(&api_versions(3)).await.unwrap();
    assert!(read_frame(&mut d).await.is_some());
    assert!(is_closed(&mut c).await, "the broker connection made room");
    b.write_all(&api_versions(4)).await.unwrap();
    assert!(
        read_frame(&mut b).await.is_some(),
        "controller connections stay"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_answers_what_was_read_then_stops_listening() {
    let server = server("").await;
    let addr = server.broker_addr().unwrap();
    let mut s = connect(addr).await;
    s.write_all(&api_versions(1)).await.unwrap();
    assert!(read_frame(&mut s).await.is_some());
    tokio::time::timeout(TIMEOUT, server.shutdown())
        .await
        .expect("shutdown hung");
    assert!(is_closed(&mut s).await);
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn port_conflicts_fail_startup() {
    let first = server("").await;
    let taken = first.broker_addr().unwrap();
    let text = format!(
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:0\n",
        taken.port()
    );
    let err = start(Config::parse("test", &text).unwrap())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("listener PLAINTEXT: cannot bind 127.0.0.1:"),
        "{err}"
    );
    first.shutdown().await;
}
