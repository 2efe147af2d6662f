//! `Connection` against a scripted fake server: framing, correlation, pipelining, version
//! negotiation, timeouts and broken servers.

mod support;

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kcoord_client::{ClientConfig, ClientError, Connection};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::metadata_response::MetadataResponseTopic;
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, DescribeClusterRequest, MetadataRequest,
    MetadataResponse, StreamsGroupHeartbeatRequest,
};
use kcoord_wire::{Encodable, ErrorCode};
use support::{api_versions, encode_response, every_api, every_api_but, FakeServer, Received};

fn config() -> ClientConfig {
    ClientConfig::new("connection-test")
}

/// A Metadata request naming one topic; the fake answers with that topic, so every caller
/// can tell its own response from the others.
fn metadata_for(topic: &str) -> MetadataRequest {
    MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(topic.to_string()),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn echo_topic(request: &Received) -> MetadataResponse {
    let name = request.decode::<MetadataRequest>().topics.unwrap()[0]
        .name
        .clone();
    MetadataResponse {
        topics: vec![MetadataResponseTopic {
            name,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn echoed(response: &MetadataResponse) -> Option<String> {
    response.topics.first().and_then(|t| t.name.clone())
}

async fn connected(config: ClientConfig) -> (Connection, support::FakeConn) {
    let server = FakeServer::bind().await;
    let (conn, accepted) = tokio::join!(Connection::connect(&server.addr, config), server.accept());
    (conn.unwrap(), accepted)
}

#[tokio::test]
async fn a_typed_request_carries_the_header_and_decodes_the_answer() {
    let (conn, mut server) = connected(config()).await;
    let client = tokio::spawn({
        let conn = conn.clone();
        async move {
            (
                conn.send(metadata_for("flexible"), 12).await,
                conn.send(metadata_for("classic"), 1).await,
            )
        }
    });
    for (expected_version, expected_header_version) in [(12, 2), (1, 1)] {
        let request = server.expect().await;
        assert_eq!(request.api_key(), ApiKey::Metadata.key());
        assert_eq!(request.version(), expected_version);
        assert_eq!(
            ApiKey::Metadata.request_header_version(expected_version),
            expected_header_version
        );
        assert_eq!(request.header.client_id.as_deref(), Some("connection-test"));
        server.reply(&request, &echo_topic(&request)).await;
    }
    let (flexible, classic) = client.await.unwrap();
    assert_eq!(echoed(&flexible.unwrap()).as_deref(), Some("flexible"));
    assert_eq!(echoed(&classic.unwrap()).as_deref(), Some("classic"));
}

#[tokio::test]
async fn responses_are_matched_by_correlation_id_not_order() {
    let (conn, mut server) = connected(config()).await;
    let callers: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|topic| {
            let conn = conn.clone();
            tokio::spawn(async move { (topic, conn.send(metadata_for(topic), 12).await) })
        })
        .collect();
    let mut requests = vec![
        server.expect().await,
        server.expect().await,
        server.expect().await,
    ];
    requests.reverse();
    for request in &requests {
        server.reply(request, &echo_topic(request)).await;
    }
    for caller in callers {
        let (topic, response) = caller.await.unwrap();
        assert_eq!(echoed(&response.unwrap()).as_deref(), Some(topic));
    }
}

#[tokio::test]
async fn a_hundred_requests_are_in_flight_at_once_on_one_connection() {
    let (conn, mut server) = connected(config()).await;
    let callers: Vec<_> = (0..100)
        .map(|i| {
            let conn = conn.clone();
            tokio::spawn(
                async move { (i, conn.send(metadata_for(&format!("topic-{i}")), 12).await) },
            )
        })
        .collect();
    // Read all hundred before answering any: they can only all arrive if they were pipelined.
    let mut requests = Vec::new();
    for _ in 0..100 {
        requests.push(server.expect().await);
    }
    let mut ids: Vec<i32> = requests.iter().map(|r| r.header.correlation_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 100, "correlation ids are unique");
    // Answer in a scrambled order: odd positions backwards, then even ones.
    let (odd, even): (Vec<_>, Vec<_>) = requests.iter().enumerate().partition(|(i, _)| i % 2 == 1);
    let mut batch = BytesMut::new();
    for (_, request) in odd.into_iter().rev().chain(even) {
        let payload = encode_response(request.header.correlation_id, 1, &echo_topic(request), 12);
        batch.put_i32(payload.len() as i32);
        batch.extend_from_slice(&payload);
    }
    // All answers in one write, so the client also has to split a batch of frames.
    server.send_bytes(&batch).await;
    for caller in callers {
        let (i, response) = caller.await.unwrap();
        assert_eq!(echoed(&response.unwrap()), Some(format!("topic-{i}")));
    }
}

#[tokio::test]
async fn negotiation_picks_the_highest_version_both_sides_know() {
    let (conn, mut server) = connected(config()).await;
    assert_eq!(
        conn.version_for::<MetadataRequest>(),
        None,
        "nothing known before negotiation"
    );
    assert!(!conn.supports(ApiKey::Metadata));
    let apis = [
        (ApiKey::ApiVersions, 0, 5),
        (ApiKey::Metadata, 1, 12),
        (ApiKey::FindCoordinator, 0, 9),
    ];
    let negotiate = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate().await }
    });
    let request = server.expect().await;
    assert_eq!(
        (request.api_key(), request.version()),
        (ApiKey::ApiVersions.key(), 5)
    );
    let body = request.decode::<ApiVersionsRequest>();
    assert_eq!(body.client_software_name, "kcoord-client");
    assert!(!body.client_software_version.is_empty());
    server.reply(&request, &api_versions(&apis)).await;
    let versions = negotiate.await.unwrap().unwrap();
    assert_eq!(versions.api_versions_version(), 5);
    assert_eq!(conn.version_for::<MetadataRequest>(), Some(12));
    assert_eq!(
        conn.version_for::<kcoord_wire::messages::FindCoordinatorRequest>(),
        Some(6),
        "capped at the client's 6"
    );
    assert_eq!(conn.version_for::<StreamsGroupHeartbeatRequest>(), None);
    assert!(conn.supports(ApiKey::Metadata));
    assert!(!conn.supports(ApiKey::StreamsGroupHeartbeat));
}

#[tokio::test]
async fn negotiation_steps_down_after_unsupported_version_with_a_v0_body() {
    let (conn, mut server) = connected(config()).await;
    let negotiate = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate().await }
    });
    // An older server: it knows ApiVersions up to v3 and answers v5 as Kafka does, with
    // UNSUPPORTED_VERSION in a v0 body (and a v0 header) listing its ApiVersions range.
    let first = server.expect().await;
    assert_eq!(first.version(), 5);
    let refusal = ApiVersionsResponse {
        error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
        ..api_versions(&[(ApiKey::ApiVersions, 0, 3)])
    };
    server
        .send_frame(&encode_response(
            first.header.correlation_id,
            0,
            &refusal,
            0,
        ))
        .await;
    let second = server.expect().await;
    assert_eq!(second.version(), 3);
    server
        .reply(
            &second,
            &api_versions(&every_api_but(ApiKey::Metadata, Some((0, 9)))),
        )
        .await;

    let versions = negotiate.await.unwrap().unwrap();
    assert_eq!(versions.api_versions_version(), 3);
    assert_eq!(conn.version_for::<MetadataRequest>(), Some(9));
    assert!(conn.supports(ApiKey::StreamsGroupHeartbeat));
}

#[tokio::test]
async fn negotiation_retries_at_v0_when_the_refusal_names_no_range() {
    let (conn, mut server) = connected(config()).await;
    let negotiate = tokio::spawn({
        let conn = conn.clone();
        async move { conn.negotiate().await }
    });
    let first = server.expect().await;
    let refusal = ApiVersionsResponse {
        error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
        ..Default::default()
    };
    server
        .send_frame(&encode_response(
            first.header.correlation_id,
            0,
            &refusal,
            0,
        ))
        .await;
    let second = server.expect().await;
    assert_eq!(second.version(), 0);
    server.reply(&second, &api_versions(&every_api())).await;
    assert_eq!(negotiate.await.unwrap().unwrap().api_versions_version(), 0);
}

#[tokio::test]
async fn send_negotiated_negotiates_first_and_refuses_what_the_server_lacks() {
    let server = FakeServer::bind().await;
    let (addr, log, _) = server.serve(|request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => support::response(
            request,
            &api_versions(&every_api_but(ApiKey::DescribeCluster, None)),
        ),
        Some(ApiKey::Metadata) => support::response(request, &echo_topic(request)),
        _ => support::Reply::Close,
    });
    let conn = Connection::connect(&addr, config()).await.unwrap();
    let response = conn.send_negotiated(metadata_for("t")).await.unwrap();
    assert_eq!(echoed(&response).as_deref(), Some("t"));
    let err = conn
        .send_negotiated(DescribeClusterRequest::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::UnsupportedVersion { server: None, .. }),
        "{err}"
    );
    let seen: Vec<(i16, i16)> = log
        .all()
        .iter()
        .map(|r| (r.api_key(), r.version()))
        .collect();
    assert_eq!(
        seen,
        [(ApiKey::ApiVersions.key(), 5), (ApiKey::Metadata.key(), 13)],
        "DescribeCluster never went out"
    );
}

#[tokio::test]
async fn a_version_the_client_cannot_encode_is_refused_before_sending() {
    let (conn, _server) = connected(config()).await;
    let err = conn.send(metadata_for("t"), 14).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::UnsupportedVersion {
                requested: Some(14),
                ..
            }
        ),
        "{err}"
    );
    let err = conn
        .send(
            MetadataRequest {
                topics: None,
                ..Default::default()
            },
            0,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Encode { .. }),
        "null topics cannot be sent at v0: {err}"
    );
}

#[tokio::test]
async fn a_timed_out_request_does_not_poison_the_connection() {
    let (conn, mut server) =
        connected(config().with_request_timeout(Duration::from_millis(200))).await;
    let client = tokio::spawn({
        let conn = conn.clone();
        async move {
            let first = conn.send(metadata_for("slow"), 12).await;
            let second = conn
                .send_with_timeout(metadata_for("fast"), 12, Duration::from_secs(30))
                .await;
            (first, second)
        }
    });
    let slow = server.expect().await;
    // The second request is only sent once the first has timed out; then the late answer to
    // the first arrives before the answer to the second, and must be ignored.
    let fast = server.expect().await;
    server.reply(&slow, &echo_topic(&slow)).await;
    server.reply(&fast, &echo_topic(&fast)).await;
    let (first, second) = client.await.unwrap();
    assert!(
        matches!(first, Err(ClientError::Timeout { .. })),
        "{first:?}"
    );
    assert_eq!(echoed(&second.unwrap()).as_deref(), Some("fast"));
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_connection_closed_mid_request_fails_every_waiting_request() {
    let (conn, mut server) = connected(config()).await;
    let callers: Vec<_> = (0..5)
        .map(|i| {
            let conn = conn.clone();
            tokio::spawn(async move { conn.send(metadata_for(&format!("t{i}")), 12).await })
        })
        .collect();
    for _ in 0..5 {
        server.expect().await;
    }
    drop(server);
    for caller in callers {
        let result = caller.await.unwrap();
        assert!(
            matches!(result, Err(ClientError::ConnectionClosed { .. })),
            "{result:?}"
        );
    }
    assert!(conn.is_closed());
    let later = conn.send(metadata_for("later"), 12).await;
    assert!(
        matches!(later, Err(ClientError::ConnectionClosed { .. })),
        "{later:?}"
    );
}

#[tokio::test]
async fn a_body_that_does_not_decode_fails_only_its_own_request() {
    let (conn, mut server) = connected(config()).await;
    let client = tokio::spawn({
        let conn = conn.clone();
        async move {
            let truncated = conn.send(metadata_for("truncated"), 12).await;
            let trailing = conn.send(metadata_for("trailing"), 12).await;
            let fine = conn.send(metadata_for("fine"), 12).await;
            (truncated, trailing, fine)
        }
    });
    let request = server.expect().await;
    let full = encode_response(request.header.correlation_id, 1, &echo_topic(&request), 12);
    server.send_frame(&full[..full.len() - 3]).await;
    let request = server.expect().await;
    let mut padded =
        encode_response(request.header.correlation_id, 1, &echo_topic(&request), 12).to_vec();
    padded.extend_from_slice(b"junk");
    server.send_frame(&padded).await;
    let request = server.expect().await;
    server.reply(&request, &echo_topic(&request)).await;

    let (truncated, trailing, fine) = client.await.unwrap();
    assert!(
        matches!(truncated, Err(ClientError::Protocol(_))),
        "{truncated:?}"
    );
    assert!(
        matches!(&trailing, Err(ClientError::Protocol(m)) if m.contains("4 unread bytes")),
        "{trailing:?}"
    );
    assert_eq!(echoed(&fine.unwrap()).as_deref(), Some("fine"));
}

/// Frames the client cannot attribute to a request end the connection, and every waiting
/// request learns it at once.
#[tokio::test]
async fn frames_that_break_the_stream_close_the_connection() {
    let cases: [(&str, Vec<u8>); 4] = [
        (
            "frame shorter than a correlation id",
            vec![0, 0, 0, 2, 0, 0],
        ),
        ("negative size", (-5i32).to_be_bytes().to_vec()),
        (
            "size above max_response_size",
            (2i32 << 20).to_be_bytes().to_vec(),
        ),
        ("half a frame, then EOF", vec![0, 0, 0, 9, 0, 0]),
    ];
    for (case, bytes) in cases {
        let config = ClientConfig {
            max_response_size: 1 << 20,
            ..config()
        };
        let (conn, mut server) = connected(config).await;
        let client = tokio::spawn({
            let conn = conn.clone();
            async move { conn.send(metadata_for("t"), 12).await }
        });
        server.expect().await;
        server.send_bytes(&bytes).await;
        if case.contains("EOF") {
            drop(server);
        }
        let result = client.await.unwrap();
        assert!(
            matches!(result, Err(ClientError::ConnectionClosed { .. })),
            "{case}: {result:?}"
        );
        assert!(conn.is_closed(), "{case}");
    }
}

#[tokio::test]
async fn send_raw_frames_a_hand_built_body_and_returns_the_response_body() {
    let (conn, mut server) = connected(config()).await;
    let mut body = BytesMut::new();
    ApiVersionsRequest::default().encode(&mut body, 3).unwrap();
    let body = body.freeze();
    let client = tokio::spawn({
        let (conn, body) = (conn.clone(), body.clone());
        async move {
            (
                conn.send_raw(ApiKey::ApiVersions.key(), 3, body).await,
                conn.send_raw(999, 0, Bytes::new()).await,
            )
        }
    });
    let request = server.expect().await;
    assert_eq!(
        (request.api_key(), request.version(), &request.body),
        (18, 3, &body)
    );
    let answer = api_versions(&every_api());
    server.reply(&request, &answer).await;
    // An API key the table does not know goes out with request header v1.
    let unknown = server.expect().await;
    assert_eq!(
        (
            unknown.api_key(),
            unknown.version(),
            unknown.header.client_id.as_deref()
        ),
        (999, 0, Some("connection-test"))
    );
    server
        .send_frame(&encode_response(
            unknown.header.correlation_id,
            0,
            &MetadataResponse::default(),
            0,
        ))
        .await;

    let (known, unknown) = client.await.unwrap();
    let mut expected = BytesMut::new();
    answer.encode(&mut expected, 3).unwrap();
    assert_eq!(
        known.unwrap(),
        expected.freeze(),
        "ApiVersions' response header v0 was stripped"
    );
    let mut expected = BytesMut::new();
    MetadataResponse::default()
        .encode(&mut expected, 0)
        .unwrap();
    assert_eq!(unknown.unwrap(), expected.freeze());
}

#[tokio::test]
async fn dropping_the_last_clone_closes_the_socket() {
    let (conn, mut server) = connected(config()).await;
    let clone = conn.clone();
    drop(conn);
    drop(clone);
    assert!(
        server.recv().await.is_none(),
        "the server sees end of stream"
    );
}

#[tokio::test]
async fn connecting_to_a_closed_port_is_an_io_error() {
    let err = Connection::connect("127.0.0.1:0", config())
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Io { .. }), "{err}");
}

#[tokio::test]
async fn a_request_without_a_response_is_written_and_waits_for_nothing() {
    use kcoord_wire::messages::ProduceRequest;
    let (conn, mut server) = connected(config()).await;
    let produce = ProduceRequest {
        acks: 0,
        timeout_ms: 1000,
        ..Default::default()
    };
    tokio::time::timeout(Duration::from_secs(5), conn.send_no_response(produce, 9))
        .await
        .expect("returns once written")
        .unwrap();
    let request = server.expect().await;
    assert_eq!(
        (request.api_key(), request.version()),
        (ApiKey::Produce.key(), 9)
    );
    assert_eq!(request.decode::<ProduceRequest>().acks, 0);
    // An answer nobody waits for is dropped, and the next request is answered as usual.
    server.reply(&request, &MetadataResponse::default()).await;
    let client = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(metadata_for("after"), 12).await }
    });
    let next = server.expect().await;
    assert_eq!(
        next.header.correlation_id,
        request.header.correlation_id + 1
    );
    server.reply(&next, &echo_topic(&next)).await;
    assert_eq!(
        echoed(&client.await.unwrap().unwrap()).as_deref(),
        Some("after")
    );
    assert!(!conn.is_closed());
    // A version the client cannot encode is refused before anything is written.
    let e = conn
        .send_no_response(ProduceRequest::default(), 2)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::UnsupportedVersion {
                requested: Some(2),
                ..
            }
        ),
        "{e}"
    );
}
