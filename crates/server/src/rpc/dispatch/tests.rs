use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, DescribeClusterRequest, DescribeClusterResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse,
};
use proptest::prelude::*;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing;

/// Runs one request to completion on a throwaway runtime. The test state's controller and
/// shards are not running, so handlers that need them answer "not available" at once.
fn dispatch_now(conn: &Connection, frame: Bytes) -> Reply {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(dispatch(conn, frame))
}

fn conn(kind: ListenerKind) -> Connection {
    let server = Arc::new(testing::server());
    let listener = testing::listener(&server, kind);
    Connection::new(server, listener, SocketAddr::from(([127, 0, 0, 1], 50000)))
}

/// A request frame body (no size prefix) with the header version Kafka uses.
fn request<R: Encodable>(api: ApiKey, version: i16, correlation_id: i32, body: &R) -> Bytes {
    let valid = api.valid_versions();
    let header = RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id,
        client_id: Some("dispatch-test".to_owned()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    header
        .encode(
            &mut buf,
            api.request_header_version(version.clamp(valid.min, valid.max)),
        )
        .unwrap();
    body.encode(&mut buf, version.clamp(valid.min, valid.max))
        .unwrap();
    buf.freeze()
}

/// Runs the request and decodes the response, checking the size prefix, the correlation id
/// and that the body is consumed exactly.
fn exchange<Req: Encodable, Resp: Decodable>(
    kind: ListenerKind,
    api: ApiKey,
    version: i16,
    req: &Req,
    header_version: i16,
    body_version: i16,
) -> Resp {
    let reply = dispatch_now(&conn(kind), request(api, version, 4242, req));
    let Reply::Respond(frame) = reply else {
        panic!("{} v{version}: connection closed", api.name())
    };
    let mut frame = frame.to_bytes();
    let size = frame.get_i32();
    assert_eq!(size as usize, frame.len());
    let header = ResponseHeader::decode(&mut frame, header_version).unwrap();
    assert_eq!(header.correlation_id, 4242);
    let resp = Resp::decode(&mut frame, body_version).unwrap();
    assert_eq!(
        frame.remaining(),
        0,
        "{} v{version}: trailing bytes",
        api.name()
    );
    resp
}

fn closes(kind: ListenerKind, frame: Bytes) -> bool {
    matches!(dispatch_now(&conn(kind), frame), Reply::Close)
}

#[test]
fn api_versions_every_version_with_header_v0() {
    for version in 0..=5 {
        let req = ApiVersionsRequest {
            client_software_name: "t".into(),
            client_software_version: "1".into(),
            ..Default::default()
        };
        let resp: ApiVersionsResponse = exchange(
            ListenerKind::Broker,
            ApiKey::ApiVersions,
            version,
            &req,
            0,
            version,
        );
        assert_eq!(resp.error_code, 0);
        assert_eq!(resp.api_keys.len(), 51);
    }
    let req = ApiVersionsRequest {
        client_software_name: "t".into(),
        client_software_version: "1".into(),
        ..Default::default()
    };
    let resp: ApiVersionsResponse =
        exchange(ListenerKind::Controller, ApiKey::ApiVersions, 3, &req, 0, 3);
    assert_eq!(
        resp.api_keys.iter().map(|k| k.api_key).collect::<Vec<_>>(),
        vec![17, 18, 19, 29, 30, 31, 36, 37, 49, 51, 60, 62, 63]
    );
}

#[test]
fn too_new_api_versions_gets_a_v0_unsupported_version_answer() {
    for version in [6, 100, i16::MAX] {
        // A v6 client writes a flexible header and a body we cannot read; only the header matters.
        let mut frame = BytesMut::from(
            &request(
                ApiKey::ApiVersions,
                version,
                4242,
                &ApiVersionsRequest::default(),
            )[..],
        );
        frame.extend_from_slice(&[0xff, 0xfe, 0x01]);
        let Reply::Respond(out) = dispatch_now(&conn(ListenerKind::Broker), frame.freeze()) else {
            panic!("closed")
        };
        let mut out = out.to_bytes();
        out.advance(4);
        let header = ResponseHeader::decode(&mut out, 0).unwrap();
        assert_eq!(header.correlation_id, 4242);
        let resp = ApiVersionsResponse::decode(&mut out, 0).unwrap();
        assert_eq!(out.remaining(), 0);
        assert_eq!(resp.error_code, 35);
        assert_eq!(
            resp.api_keys
                .iter()
                .map(|k| (k.api_key, k.min_version, k.max_version))
                .collect::<Vec<_>>(),
            vec![(18, 0, 5)]
        );
    }
    // Exact bytes: size, correlation id, error 35, one api key 18 0..5.
    let Reply::Respond(out) = dispatch_now(
        &conn(ListenerKind::Broker),
        request(ApiKey::ApiVersions, 9, 7, &ApiVersionsRequest::default()),
    ) else {
        panic!("closed")
    };
    assert_eq!(
        &out.to_bytes()[..],
        &[0, 0, 0, 16, 0, 0, 0, 7, 0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 5]
    );
}

#[test]
fn metadata_find_coordinator_describe_cluster_round_trip() {
    for version in 0..=13 {
        let header_version = if version >= 9 { 1 } else { 0 };
        let resp: MetadataResponse = exchange(
            ListenerKind::Broker,
            ApiKey::Metadata,
            version,
            &MetadataRequest::default(),
            header_version,
            version,
        );
        assert_eq!(resp.brokers[0].node_id, testing::NODE_ID);
    }
    for version in 0..=6 {
        let header_version = if version >= 3 { 1 } else { 0 };
        let req = if version >= 4 {
            FindCoordinatorRequest {
                coordinator_keys: vec!["g".into()],
                ..Default::default()
            }
        } else {
            FindCoordinatorRequest {
                key: "g".into(),
                ..Default::default()
            }
        };
        let resp: FindCoordinatorResponse = exchange(
            ListenerKind::Broker,
            ApiKey::FindCoordinator,
            version,
            &req,
            header_version,
            version,
        );
        let port = if version >= 4 {
            resp.coordinators[0].port
        } else {
            resp.port
        };
        assert_eq!(port, 9092);
    }
    for version in 0..=2 {
        let resp: DescribeClusterResponse = exchange(
            ListenerKind::Broker,
            ApiKey::DescribeCluster,
            version,
            &DescribeClusterRequest::default(),
            1,
            version,
        );
        assert_eq!(resp.error_code, 0);
    }
    let req = DescribeClusterRequest {
        endpoint_type: 2,
        ..Default::default()
    };
    let resp: DescribeClusterResponse = exchange(
        ListenerKind::Controller,
        ApiKey::DescribeCluster,
        1,
        &req,
        1,
        1,
    );
    assert_eq!((resp.error_code, resp.brokers[0].port), (0, 9093));
}

#[test]
fn unsupported_versions_of_other_apis_close_the_connection() {
    assert!(closes(
        ListenerKind::Broker,
        request(ApiKey::Metadata, 14, 1, &MetadataRequest::default())
    ));
    assert!(closes(
        ListenerKind::Broker,
        request(ApiKey::Metadata, -1, 1, &MetadataRequest::default())
    ));
    assert!(closes(
        ListenerKind::Broker,
        request(
            ApiKey::DescribeCluster,
            3,
            1,
            &DescribeClusterRequest::default()
        )
    ));
}

#[test]
fn apis_not_served_on_the_listener_close_the_connection() {
    assert!(closes(
        ListenerKind::Controller,
        request(ApiKey::Metadata, 12, 1, &MetadataRequest::default())
    ));
    assert!(closes(
        ListenerKind::Controller,
        request(
            ApiKey::FindCoordinator,
            4,
            1,
            &FindCoordinatorRequest::default()
        )
    ));
    assert!(closes(
        ListenerKind::Controller,
        request(
            ApiKey::StreamsGroupHeartbeat,
            0,
            1,
            &kcoord_wire::messages::StreamsGroupHeartbeatRequest::default()
        )
    ));
    // Known to the schemas but not implemented yet.
    let mut frame = BytesMut::new();
    RequestHeader {
        request_api_key: ApiKey::DescribeConfigs.key(),
        request_api_version: 0,
        ..Default::default()
    }
    .encode(&mut frame, 2)
    .unwrap();
    assert!(closes(ListenerKind::Broker, frame.freeze()));
    // Declared, but not on this listener (every API with a schema has an RPC file, so none is
    // left that only the schema knows: both are refused by the same lookup).
    assert!(closes(
        ListenerKind::Broker,
        request(
            ApiKey::BrokerHeartbeat,
            0,
            1,
            &kcoord_wire::messages::BrokerHeartbeatRequest::default()
        )
    ));
}

#[test]
fn unknown_api_keys_close_the_connection() {
    for key in [-1i16, 4, 94, 1000, i16::MAX] {
        let mut frame = BytesMut::new();
        RequestHeader {
            request_api_key: key,
            request_api_version: 0,
            ..Default::default()
        }
        .encode(&mut frame, 1)
        .unwrap();
        assert!(closes(ListenerKind::Broker, frame.freeze()), "key {key}");
    }
}

#[test]
fn malformed_requests_close_the_connection() {
    assert!(closes(ListenerKind::Broker, Bytes::new()));
    assert!(closes(
        ListenerKind::Broker,
        Bytes::from_static(&[0, 18, 0])
    ));
    // Header cut inside the correlation id.
    assert!(closes(
        ListenerKind::Broker,
        Bytes::from_static(&[0, 18, 0, 3, 0, 0])
    ));
    // Client id length larger than the frame.
    assert!(closes(
        ListenerKind::Broker,
        Bytes::from_static(&[0, 18, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, b'a'])
    ));
    // Metadata v1 body cut short: array of 2 topics, one present.
    let mut frame = BytesMut::from(
        &request(
            ApiKey::Metadata,
            1,
            1,
            &MetadataRequest {
                topics: Some(vec![]),
                ..Default::default()
            },
        )[..],
    );
    frame.truncate(frame.len() - 4);
    frame.extend_from_slice(&[0, 0, 0, 2, 0, 1, b'a']);
    assert!(closes(ListenerKind::Broker, frame.freeze()));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = dispatch_now(&conn(ListenerKind::Broker), Bytes::from(bytes));
    }

    #[test]
    fn arbitrary_bodies_of_served_apis_never_panic(
        api in prop::sample::select(crate::rpc::versions::served_apis(ListenerKind::Broker).map(|(api, _)| api).chain([ApiKey::CreateTopics, ApiKey::DeleteTopics]).collect::<Vec<_>>()),
        version in 0i16..16,
        body in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let valid = api.valid_versions();
        let mut frame = BytesMut::new();
        RequestHeader { request_api_key: api.key(), request_api_version: version, ..Default::default() }
            .encode(&mut frame, api.request_header_version(version.clamp(valid.min, valid.max)))
            .unwrap();
        frame.extend_from_slice(&body);
        for kind in [ListenerKind::Broker, ListenerKind::Controller] {
            let _ = dispatch_now(&conn(kind), frame.clone().freeze());
        }
    }
}
