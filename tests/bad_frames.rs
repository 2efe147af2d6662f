//! Hostile and malformed input on raw sockets, against the real daemon.
//!
//! Every case must get Kafka's answer or a closed connection (never a hang, never a crash),
//! and right after it a fresh connection must be served normally by a daemon that is still
//! running. Frames are built by hand here, independently of the codecs under test.

mod common;

use std::net::{Shutdown, TcpStream};

use common::*;

/// `socket.request.max.bytes` for these tests: small, so oversize cases are cheap.
const MAX_BYTES: usize = 1024;

fn daemon() -> Daemon {
    Daemon::start(&[&format!("socket.request.max.bytes={MAX_BYTES}")])
}

/// What must hold after every case: the daemon runs and serves a fresh connection.
fn still_serving(daemon: &Daemon) {
    assert_served(daemon.broker_addr());
    daemon.assert_alive();
}

/// Sends `bytes` on a fresh connection and expects the server to close it, sending nothing.
/// Returns the client address, for matching the daemon's WARN line. Each connection comes from
/// an address of its own: the daemon logs one line per peer address and kind per minute.
fn expect_close_after(daemon: &Daemon, bytes: &[u8], what: &str) -> std::net::SocketAddr {
    let mut stream = connect_from(daemon.broker_addr(), fresh_loopback_ip());
    let peer = stream.local_addr().expect("local addr");
    // The server may close before it has read everything; a failed write is fine then.
    let _ = send(&mut stream, bytes);
    expect_closed(&mut stream, what);
    peer
}

#[test]
fn garbage_bytes_close_the_connection() {
    let daemon = daemon();
    // An HTTP request: its first four bytes read as a size of ~1.2 GB.
    let peer = expect_close_after(
        &daemon,
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "HTTP request",
    );
    daemon.wait_for_warn_about(peer);
    still_serving(&daemon);

    // A small, well-framed payload of noise: api key 0xdead is no API.
    let noise: Vec<u8> = (0u8..64).map(|i| i.wrapping_mul(97) ^ 0x5a).collect();
    let mut payload = vec![0xde, 0xad];
    payload.extend(&noise);
    expect_close_after(&daemon, &frame(&payload), "framed noise");
    still_serving(&daemon);

    // A frame too short to hold even api key and version.
    expect_close_after(&daemon, &frame(&[0x00]), "1-byte frame");
    expect_close_after(&daemon, &frame(&[]), "empty frame");
    still_serving(&daemon);
    daemon.stop();
}

#[test]
fn truncated_frame_then_half_close() {
    let daemon = daemon();
    let mut stream = connect(daemon.broker_addr());
    let mut bytes = 100i32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&[0, 18, 0, 3, 0, 0, 0, 1, 0, 0]); // 10 of the promised 100 bytes
    send(&mut stream, &bytes).expect("send");
    stream.shutdown(Shutdown::Write).expect("half close");
    expect_closed(&mut stream, "truncated frame");
    still_serving(&daemon);

    // The same without the half close: the server just waits for the rest (a slow client is
    // not an error), and still serves others meanwhile.
    let mut slow = connect(daemon.broker_addr());
    send(&mut slow, &bytes).expect("send");
    still_serving(&daemon);
    // Completing the frame later with garbage: the body does not decode, so it closes.
    send(&mut slow, &[0xff; 90]).expect("send the rest");
    expect_closed(&mut slow, "completed garbage frame");
    daemon.stop();
}

#[test]
fn oversized_length_prefix_closes_without_reading_the_payload() {
    let daemon = daemon();
    for size in [MAX_BYTES as i32 + 1, 1 << 20, i32::MAX] {
        // Only the prefix is sent: a server waiting for the payload would time the read out.
        let mut stream = connect_from(daemon.broker_addr(), fresh_loopback_ip());
        let peer = stream.local_addr().expect("local addr");
        send(&mut stream, &size.to_be_bytes()).expect("send prefix");
        expect_closed(&mut stream, &format!("size prefix {size}"));
        let warn = daemon.wait_for_warn_about(peer);
        assert!(
            warn.contains(&size.to_string()),
            "the WARN should name the size {size}: {warn}"
        );
        still_serving(&daemon);
    }
}

#[test]
fn a_frame_of_exactly_the_maximum_size_is_served() {
    let daemon = daemon();
    // ApiVersions v2 (header v1) padded to exactly MAX_BYTES with a long client id.
    let header_len = 2 + 2 + 4 + 2;
    let client_id = "c".repeat(MAX_BYTES - header_len);
    let payload = request_header_v1(18, 2, 77, &client_id);
    assert_eq!(payload.len(), MAX_BYTES);
    let mut stream = connect(daemon.broker_addr());
    send(&mut stream, &frame(&payload)).expect("send");
    let response = expect_frame(&mut stream, "frame of the maximum size");
    let answer = parse_api_versions_response(&response, 2).expect("ApiVersions v2 response");
    assert_eq!((answer.correlation_id, answer.error_code), (77, 0));

    // One byte more is refused.
    let payload = request_header_v1(18, 2, 78, &format!("{client_id}c"));
    expect_close_after(&daemon, &frame(&payload), "frame one byte over the maximum");
    still_serving(&daemon);
}

#[test]
fn negative_length_prefix_closes() {
    let daemon = daemon();
    for size in [-1i32, -100, i32::MIN] {
        let mut bytes = size.to_be_bytes().to_vec();
        bytes.extend_from_slice(&api_versions_v3_frame(1)); // whatever follows is never read
        let peer = expect_close_after(&daemon, &bytes, &format!("size prefix {size}"));
        daemon.wait_for_warn_about(peer);
        still_serving(&daemon);
    }
}

#[test]
fn unknown_api_key_closes() {
    let daemon = daemon();
    for key in [999i16, -1, i16::MAX] {
        let payload = request_header_v1(key, 0, 5, "probe");
        let peer = expect_close_after(&daemon, &frame(&payload), &format!("api key {key}"));
        daemon.wait_for_warn_about(peer);
    }
    still_serving(&daemon);
}

#[test]
fn unsupported_version_of_a_known_api_closes() {
    let daemon = daemon();
    // Metadata v99 and v-1; FindCoordinator v7 (one past the supported range).
    for (key, version) in [(3i16, 99i16), (3, -1), (10, 7)] {
        let mut payload = request_header_v2(key, version, 9, "probe");
        payload.extend_from_slice(&[0, 0]);
        let peer = expect_close_after(&daemon, &frame(&payload), &format!("api {key} v{version}"));
        daemon.wait_for_warn_about(peer);
    }
    still_serving(&daemon);
}

#[test]
fn api_not_served_on_the_listener_closes() {
    let daemon = daemon();
    // Metadata (key 3) is a broker API; the controller listener closes the connection.
    let mut stream = connect(daemon.controller_addr());
    let mut payload = request_header_v2(3, 12, 1, "probe");
    payload.extend_from_slice(&[1, 0, 0, 0]); // null topics, flags, no tags
    let _ = send(&mut stream, &frame(&payload));
    expect_closed(&mut stream, "Metadata on the controller listener");
    still_serving(&daemon);
    // ... while ApiVersions is served there.
    assert_served(daemon.controller_addr());
}

#[test]
fn too_new_api_versions_gets_unsupported_version_in_a_v0_body() {
    let daemon = daemon();
    let mut stream = connect(daemon.broker_addr());
    for (n, version) in [99i16, 6, i16::MAX].into_iter().enumerate() {
        let correlation_id = 0x0102_0300 + n as i32;
        // A future client sends its newest header (v2) and a body we cannot know.
        let mut payload = request_header_v2(18, version, correlation_id, "future-client");
        payload.extend_from_slice(&[0x07, 0xff, 0xee, 0x00, 0x13, 0x37]);
        send(&mut stream, &frame(&payload)).expect("send");
        let response = expect_frame(&mut stream, &format!("ApiVersions v{version}"));
        // Response header v0 (correlation id only) + ApiVersions v0 body: error code 35
        // (UNSUPPORTED_VERSION), one entry: ApiVersions (18) versions 0..5.
        let mut expected = correlation_id.to_be_bytes().to_vec();
        expected.extend_from_slice(&[0, 35]); // error_code
        expected.extend_from_slice(&[0, 0, 0, 1]); // api_keys: int32 count
        expected.extend_from_slice(&[0, 18, 0, 0, 0, 5]); // key, min, max
        assert_eq!(response, expected, "ApiVersions v{version} answer");
    }
    // The connection stays open: the client retries at a version we support.
    send(&mut stream, &api_versions_v3_frame(11)).expect("send");
    let answer = parse_api_versions_response(&expect_frame(&mut stream, "ApiVersions v3 retry"), 3)
        .expect("v3 response");
    assert_eq!((answer.correlation_id, answer.error_code), (11, 0));
    assert!(answer.apis.contains(&(18, 0, 5)), "{:?}", answer.apis);
    still_serving(&daemon);
}

#[test]
fn truncated_or_garbage_bodies_close() {
    let daemon = daemon();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // ApiVersions v3: the software name's compact length promises 100 bytes, 2 follow.
        ("ApiVersions v3 with a truncated name", {
            let mut p = request_header_v2(18, 3, 1, "probe");
            p.extend_from_slice(&[101, b'a', b'b']);
            p
        }),
        // ApiVersions v3 with an unterminated varint.
        ("ApiVersions v3 with a bad varint", {
            let mut p = request_header_v2(18, 3, 2, "probe");
            p.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
            p
        }),
        // Metadata v12: topics array claims 2^31 entries.
        ("Metadata v12 with a huge topic count", {
            let mut p = request_header_v2(3, 12, 3, "probe");
            p.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]);
            p
        }),
        // Metadata v4 (non-flexible): int32 topic count 1000, no topics.
        ("Metadata v4 with missing topics", {
            let mut p = request_header_v1(3, 4, 4, "probe");
            p.extend_from_slice(&1000i32.to_be_bytes());
            p
        }),
        // FindCoordinator v6 cut after the key type.
        ("FindCoordinator v6 cut short", {
            let mut p = request_header_v2(10, 6, 5, "probe");
            p.push(0);
            p
        }),
        // A flexible header whose tagged-field section is cut off.
        (
            "header v2 without its tag section",
            request_header_v1(18, 3, 6, "probe"),
        ),
    ];
    for (what, payload) in cases {
        let peer = expect_close_after(&daemon, &frame(&payload), what);
        daemon.wait_for_warn_about(peer);
        still_serving(&daemon);
    }
}

#[test]
fn hostile_client_id_lengths_close() {
    let daemon = daemon();
    for (what, len) in [
        ("client id length 32767 with 5 bytes", i16::MAX),
        ("client id length -2", -2),
        ("client id length i16::MIN", i16::MIN),
    ] {
        let mut payload = Vec::new();
        payload.extend_from_slice(&18i16.to_be_bytes());
        payload.extend_from_slice(&2i16.to_be_bytes());
        payload.extend_from_slice(&1i32.to_be_bytes());
        payload.extend_from_slice(&len.to_be_bytes());
        payload.extend_from_slice(b"short");
        let peer = expect_close_after(&daemon, &frame(&payload), what);
        daemon.wait_for_warn_about(peer);
        still_serving(&daemon);
    }
}

/// A StreamsGroupHeartbeat v0 whose topology lists `n` subtopologies, each an id and six empty
/// arrays: 9 bytes on the wire, about 190 when decoded.
fn heartbeat_with_subtopologies(correlation_id: i32, n: u32) -> Vec<u8> {
    let mut p = request_header_v2(88, 0, correlation_id, "probe");
    p.extend(compact_string("g"));
    p.extend(compact_string("m"));
    p.extend_from_slice(&0i32.to_be_bytes()); // member epoch
    p.extend_from_slice(&0i32.to_be_bytes()); // endpoint information epoch
    p.extend_from_slice(&[0, 0]); // null instance and rack ids
    p.extend_from_slice(&(-1i32).to_be_bytes()); // rebalance timeout
    p.push(1); // topology present
    p.extend_from_slice(&1i32.to_be_bytes()); // topology epoch
    let mut count = n + 1;
    while count >= 0x80 {
        p.push(count as u8 | 0x80);
        count >>= 7;
    }
    p.push(count as u8);
    for _ in 0..n {
        p.extend(compact_string("s"));
        p.extend_from_slice(&[1, 1, 1, 1, 1, 1, 0]); // six empty arrays, no tags
    }
    p.push(0); // topology tags
    p.extend_from_slice(&[0, 0, 0, 0]); // null task lists and process id
    p.push(0xff); // null user endpoint
    p.extend_from_slice(&[0, 0, 0]); // null client tags and task offsets
    p.push(0); // shutdown application
    p.push(0); // tags
    p
}

/// Requests that would decode to far more memory than their bytes: an array count of 2^31-1
/// behind a megabyte of zeros, and a valid 9 MB heartbeat that decodes to about 190 MB. Both
/// close the connection (Kafka's answer to a request it cannot parse) while another client
/// is served, before and after.
#[test]
fn requests_that_would_decode_too_big_close_and_others_are_served() {
    let daemon = Daemon::start(&["socket.request.max.bytes=16777216"]);
    let mut other = connect(daemon.broker_addr());
    send(&mut other, &api_versions_v3_frame(1)).expect("send");
    expect_frame(&mut other, "another client before");

    // The small version of the heartbeat is well formed: it gets an answer.
    let mut probe = connect(daemon.broker_addr());
    send(&mut probe, &frame(&heartbeat_with_subtopologies(2, 3))).expect("send");
    expect_frame(&mut probe, "a heartbeat with three subtopologies");

    // OffsetCommit v9: group, epoch, member, null instance id, then 2^31-1 topics.
    let mut commit = request_header_v2(8, 9, 3, "probe");
    commit.extend(compact_string("g"));
    commit.extend_from_slice(&1i32.to_be_bytes());
    commit.extend(compact_string("m"));
    commit.push(0);
    commit.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]);
    commit.resize(commit.len() + (1 << 20), 0);
    let amplifying = heartbeat_with_subtopologies(4, 1_000_000);
    assert!(amplifying.len() > 9_000_000);
    for (what, payload) in [
        ("OffsetCommit with 2^31-1 topics", commit),
        ("a heartbeat of a million subtopologies", amplifying),
    ] {
        let peer = expect_close_after(&daemon, &frame(&payload), what);
        daemon.wait_for_warn_about(peer);
        send(&mut other, &api_versions_v3_frame(5)).expect("send");
        expect_frame(&mut other, "another client meanwhile");
        still_serving(&daemon);
    }
    daemon.wait_for_log("bytes of memory allowed", IO_TIMEOUT);
}

#[test]
fn a_null_client_id_is_fine() {
    let daemon = daemon();
    // Request header v1's client id is nullable (length -1), as the Java client may send.
    let mut payload = Vec::new();
    payload.extend_from_slice(&18i16.to_be_bytes());
    payload.extend_from_slice(&2i16.to_be_bytes());
    payload.extend_from_slice(&21i32.to_be_bytes());
    payload.extend_from_slice(&(-1i16).to_be_bytes());
    let mut stream = connect(daemon.broker_addr());
    send(&mut stream, &frame(&payload)).expect("send");
    let answer = parse_api_versions_response(&expect_frame(&mut stream, "null client id"), 2)
        .expect("v2 response");
    assert_eq!((answer.correlation_id, answer.error_code), (21, 0));
    daemon.stop();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let daemon = daemon();
    let mut stream = connect(daemon.broker_addr());
    let mut bytes = Vec::new();
    for correlation_id in 0..50 {
        // Mix versions so header and body sizes differ from one response to the next.
        if correlation_id % 3 == 0 {
            let payload = request_header_v1(18, 0, correlation_id, "pipeline");
            bytes.extend(frame(&payload));
        } else {
            bytes.extend(api_versions_v3_frame(correlation_id));
        }
    }
    send(&mut stream, &bytes).expect("one write of 50 requests");
    for correlation_id in 0..50 {
        let response = expect_frame(&mut stream, &format!("response {correlation_id}"));
        let version = if correlation_id % 3 == 0 { 0 } else { 3 };
        let answer = parse_api_versions_response(&response, version).expect("ApiVersions response");
        assert_eq!(
            answer.correlation_id, correlation_id,
            "responses must come back in request order"
        );
        assert_eq!(answer.error_code, 0);
    }
    still_serving(&daemon);
    daemon.stop();
}

#[test]
fn pipelined_requests_before_a_bad_frame_are_answered() {
    let daemon = daemon();
    let mut stream = connect(daemon.broker_addr());
    let mut bytes = Vec::new();
    for correlation_id in 0..5 {
        bytes.extend(api_versions_v3_frame(correlation_id));
    }
    bytes.extend(frame(&request_header_v1(999, 0, 5, "probe")));
    bytes.extend(api_versions_v3_frame(6)); // after the bad one: never answered
    send(&mut stream, &bytes).expect("send");
    for correlation_id in 0..5 {
        let answer = parse_api_versions_response(
            &expect_frame(&mut stream, "answer before the bad frame"),
            3,
        )
        .expect("response");
        assert_eq!(answer.correlation_id, correlation_id);
    }
    expect_closed(&mut stream, "after the unknown api key");
    still_serving(&daemon);
}

/// True if a fresh connection gets an ApiVersions answer; false if it is closed.
fn try_served(addr: std::net::SocketAddr) -> Option<TcpStream> {
    let mut stream = connect(addr);
    send(&mut stream, &api_versions_v3_frame(1)).ok()?;
    match read_frame(&mut stream) {
        ReadOutcome::Frame(f) => {
            assert_eq!(
                parse_api_versions_response(&f, 3)
                    .expect("response")
                    .error_code,
                0
            );
            Some(stream)
        }
        ReadOutcome::Closed(_) => None,
    }
}

#[test]
fn max_connections_holds_broker_listeners_but_not_the_controller_listener() {
    let daemon = Daemon::start(&["max.connections=2"]);
    let broker = daemon.broker_addr();
    // Two connections, each proven accepted by an answer.
    let mut first = try_served(broker).expect("first connection served");
    let mut second =
        try_served(daemon.controller_addr()).expect("second connection (other listener) served");
    // The third, on the broker listener, waits: not answered, not closed (Kafka's acceptor
    // blocks likewise).
    let mut third = connect(broker);
    send(&mut third, &api_versions_v3_frame(3)).expect("send");
    daemon.wait_for_log("max.connections reached; new connections wait", IO_TIMEOUT);
    third.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    assert!(
        matches!(std::io::Read::read(&mut third, &mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the connection over the limit was neither to be answered nor closed yet"
    );
    third.set_nonblocking(false).expect("blocking");
    // The controller listener is protected: a fourth connection there is served, and the least
    // recently active broker connection is closed to make room.
    let fourth = try_served(daemon.controller_addr()).expect("controller listener served");
    expect_closed(&mut first, "least recently active broker connection");
    send(&mut second, &api_versions_v3_frame(5)).expect("send");
    assert_eq!(
        parse_api_versions_response(&expect_frame(&mut second, "kept connection"), 3)
            .unwrap()
            .correlation_id,
        5
    );
    // Closing a connection frees a slot: the waiting one is served.
    drop(fourth);
    let answer = parse_api_versions_response(&expect_frame(&mut third, "third connection"), 3)
        .expect("response");
    assert_eq!(answer.correlation_id, 3);
    daemon.assert_alive();
    drop((second, third));
    daemon.stop();
}

/// The harness's own parsing (tests/common/mod.rs), tested once, here.
mod harness_self_tests {
    use super::common::{config_text, parse_http_addr, parse_startup_line};

    #[test]
    fn extra_lines_replace_base_lines_of_the_same_key() {
        let text = config_text(&["node.id = 7", "# a comment", "max.connections=2"]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(!lines.contains(&"node.id=1"), "{text}");
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("node.id")).count(),
            1,
            "{text}"
        );
        assert!(lines.contains(&"node.id = 7") && lines.contains(&"max.connections=2"));
        assert!(lines.contains(&"controller.listener.names=CONTROLLER"));
    }

    #[test]
    fn startup_line_parses() {
        let (node, listeners) = parse_startup_line(
            "kcoord started: node.id=3 listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://[::1]:9093",
        )
        .unwrap();
        assert_eq!(node, 3);
        assert_eq!(
            listeners,
            vec![
                ("PLAINTEXT".to_string(), "127.0.0.1:9092".parse().unwrap()),
                ("CONTROLLER".to_string(), "[::1]:9093".parse().unwrap()),
            ]
        );
        assert!(parse_startup_line("kcoord started: node.id=x listeners=A://1.2.3.4:5").is_err());
        let with_http = "kcoord started: node.id=1 listeners=A://1.2.3.4:5 http=127.0.0.1:8080";
        let (_, listeners) = parse_startup_line(with_http).unwrap();
        assert_eq!(
            listeners,
            vec![("A".to_string(), "1.2.3.4:5".parse().unwrap())]
        );
        assert_eq!(
            parse_http_addr(with_http).unwrap(),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            parse_http_addr("kcoord started: node.id=1 listeners=A://1.2.3.4:5").unwrap(),
            None
        );
        assert!(parse_startup_line("hello").is_err());
    }
}
