//! Connections that hold resources without using them (issue 13, items 4 and 7): a request that
//! never finishes arriving, an idle connection, too many connections from one address or on one
//! listener, a flood of idle clients while brokers need the controller listener, too many new
//! connections per second, and a peer reconnecting in a loop with bad frames, which must not
//! flood the log. Every wait is bounded; no assertion is on a duration.

mod common;
mod streams_support;

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use kcoord_client::broker::{
    register_broker, BrokerProperties, RegisteredBroker, RegistrationOptions,
};
use kcoord_client::ClientConfig;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
use kcoord_wire::messages::{CreateTopicsRequest, FetchRequest};

const WAIT: Duration = Duration::from_secs(20);

/// Served on `stream`: an ApiVersions request gets its answer.
fn served_on(stream: &mut TcpStream, correlation_id: i32) {
    send(stream, &api_versions_v3_frame(correlation_id)).expect("send ApiVersions");
    answered(stream, correlation_id);
}

/// The answer to the ApiVersions request `correlation_id` comes.
fn answered(stream: &mut TcpStream, correlation_id: i32) {
    let answer = parse_api_versions_response(&expect_frame(stream, "ApiVersions"), 3)
        .expect("an ApiVersions v3 response");
    assert_eq!(
        (answer.correlation_id, answer.error_code),
        (correlation_id, 0)
    );
}

/// A connection from `source` that got an answer.
fn served_from(addr: SocketAddr, source: std::net::IpAddr) -> TcpStream {
    let mut stream = connect_from(addr, source);
    served_on(&mut stream, 1);
    stream
}

/// Whether the daemon has closed `stream` (checked without waiting).
fn closed_now(mut stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    let read = stream.read(&mut byte);
    stream.set_nonblocking(false).expect("blocking");
    match read {
        Ok(0) => true,
        Ok(_) => panic!("unexpected bytes from the daemon"),
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// Neither answered nor closed so far (the daemon has not accepted it).
fn assert_pending(stream: &mut TcpStream) {
    stream.set_nonblocking(true).expect("nonblocking");
    let mut byte = [0u8; 1];
    let read = stream.read(&mut byte);
    stream.set_nonblocking(false).expect("blocking");
    assert!(
        matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "expected no answer and no close yet, got {read:?}"
    );
}

#[test]
fn a_request_that_stops_half_way_is_closed_after_the_receive_timeout() {
    let daemon = Daemon::start(&["socket.request.receive.timeout.ms=200"]);
    // Opened first and left idle between requests: no request is arriving on it.
    let mut idle = connect(daemon.broker_addr());
    served_on(&mut idle, 1);
    // 6 of the 50 bytes its size prefix promises, then nothing.
    let mut half = connect(daemon.broker_addr());
    send(&mut half, &[0, 0, 0, 50, 0, 18]).expect("send half a frame");
    expect_closed(&mut half, "half a frame");
    daemon.wait_for_log_line(IO_TIMEOUT, "about the receive timeout", |l| {
        l.contains(" WARN ") && l.contains("socket.request.receive.timeout.ms")
    });
    // The timeout is about requests arriving, not about idling between them.
    served_on(&mut idle, 2);
    // A request sent in pieces, each well within the timeout, is served.
    let mut slow = connect(daemon.broker_addr());
    let request = api_versions_v3_frame(3);
    let (head, tail) = request.split_at(10);
    send(&mut slow, head).expect("send");
    send(&mut slow, tail).expect("send");
    answered(&mut slow, 3);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_after_connections_max_idle_ms() {
    let daemon = Daemon::start(&["connections.max.idle.ms=300"]);
    let addr = daemon.broker_addr();
    let idle = tokio::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        served_on(&mut stream, 1);
        expect_closed(&mut stream, "idle connection");
    });
    // A request in flight is not idleness: a Fetch that waits 3 s for records (more than ten
    // times the idle timeout) is answered on its connection.
    let conn = daemon.client_connection("idle-test", WAIT).await;
    let created = conn
        .send(
            CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: "idle".into(),
                    num_partitions: 1,
                    replication_factor: 1,
                    ..Default::default()
                }],
                timeout_ms: 10_000,
                ..Default::default()
            },
            7,
        )
        .await
        .expect("CreateTopics");
    assert_eq!(created.topics[0].error_code, 0);
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: 3_000,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "idle".into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let fetched = conn
        .send(fetch, 12)
        .await
        .expect("the long poll is answered on its connection");
    assert_eq!(fetched.responses[0].partitions[0].error_code, 0);
    tokio::time::timeout(WAIT, idle)
        .await
        .expect("the idle connection is closed in time")
        .expect("idle connection checks");
    daemon.stop();
}

#[test]
fn max_connections_per_ip_and_its_override() {
    let daemon = Daemon::start(&[
        "max.connections.per.ip=1",
        "max.connections.per.ip.overrides=127.0.0.1:3",
    ]);
    let (broker, controller) = (daemon.broker_addr(), daemon.controller_addr());
    // 127.0.0.1 may have 3, counted across listeners.
    let local: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let kept = [
        served_from(broker, local),
        served_from(controller, local),
        served_from(broker, local),
    ];
    let mut fourth = connect_from(broker, local);
    let _ = send(&mut fourth, &api_versions_v3_frame(4));
    expect_closed(&mut fourth, "a fourth connection from 127.0.0.1");
    daemon.wait_for_log(
        "Rejected connection from 127.0.0.1, address already has the configured maximum of 3 connections.",
        IO_TIMEOUT,
    );
    // Any other address has the default, 1.
    let other = fresh_loopback_ip();
    let _one = served_from(broker, other);
    let mut second = connect_from(controller, other);
    let _ = send(&mut second, &api_versions_v3_frame(2));
    expect_closed(&mut second, "a second connection from another address");
    // A closed connection gives its address a slot back (once the daemon has noticed).
    drop(kept);
    let again = wait_until(IO_TIMEOUT, || {
        let mut stream = connect_from(broker, local);
        let _ = send(&mut stream, &api_versions_v3_frame(5));
        matches!(read_frame(&mut stream), ReadOutcome::Frame(_)).then_some(stream)
    });
    assert!(again.is_some(), "127.0.0.1 got no slot back");
    daemon.stop();
}

#[test]
fn a_listener_limit_holds_that_listener_only() {
    let daemon = Daemon::start(&["listener.name.plaintext.max.connections=1"]);
    let mut first = connect(daemon.broker_addr());
    served_on(&mut first, 1);
    let mut second = connect(daemon.broker_addr());
    send(&mut second, &api_versions_v3_frame(2)).expect("send");
    daemon.wait_for_log(
        "listener.name.plaintext.max.connections reached; new connections wait",
        IO_TIMEOUT,
    );
    assert_pending(&mut second);
    // The controller listener has no such limit.
    assert_served(daemon.controller_addr());
    drop(first);
    answered(&mut second, 2);
    daemon.stop();
}

#[test]
fn the_creation_rate_slows_new_connections_down_without_refusing_them() {
    let daemon = Daemon::start(&["listener.name.plaintext.max.connection.creation.rate=2"]);
    // More than a second's worth at once: all are served, the later ones after a delay.
    let streams: Vec<TcpStream> = (0..5).map(|_| connect(daemon.broker_addr())).collect();
    for (n, mut stream) in streams.into_iter().enumerate() {
        served_on(&mut stream, n as i32);
    }
    daemon.wait_for_log("max.connection.creation.rate reached", IO_TIMEOUT);
    daemon.stop();
}

#[test]
fn a_reconnect_loop_of_bad_frames_logs_a_bounded_number_of_lines() {
    let daemon = Daemon::start(&[]);
    let started = Instant::now();
    const FLOOD: usize = 1000;
    for _ in 0..FLOOD {
        // A negative size prefix: closed at once, one WARN each before the fix.
        let mut stream = connect(daemon.broker_addr());
        let _ = send(&mut stream, &(-1i32).to_be_bytes());
        expect_closed(&mut stream, "negative size prefix");
    }
    // Another peer's line is not held back by the first one's flood.
    let other = fresh_loopback_ip();
    let mut stream = connect_from(daemon.broker_addr(), other);
    let _ = send(&mut stream, &(-1i32).to_be_bytes());
    expect_closed(&mut stream, "negative size prefix from another address");
    daemon.wait_for_log_line(IO_TIMEOUT, "about the other address", |l| {
        l.contains(" WARN ") && l.contains(&format!("peer={other}:"))
    });
    // One line per peer and kind per minute: the flood's, plus one per further minute it took.
    let allowed = 1 + started.elapsed().as_secs() as usize / 60;
    let log = daemon.stderr_log();
    let flood_lines = log
        .lines()
        .filter(|l| l.contains("invalid request size") && l.contains("peer=127.0.0.1:"))
        .count();
    assert!(
        (1..=allowed).contains(&flood_lines),
        "{flood_lines} WARN lines for {FLOOD} bad connections from one address (allowed {allowed})\n{log}"
    );
    assert!(log.contains("suppressed=0"), "{log}");

    // A client id of any length is logged cut short (an unsupported version logs it).
    let long_id = "x".repeat(5000);
    let mut payload = request_header_v2(3, 99, 7, &long_id);
    payload.extend_from_slice(&[0, 0]);
    let mut stream = connect_from(daemon.broker_addr(), fresh_loopback_ip());
    let _ = send(&mut stream, &frame(&payload));
    expect_closed(&mut stream, "unsupported version with a long client id");
    let line = daemon.wait_for_log_line(IO_TIMEOUT, "about the unsupported version", |l| {
        l.contains("unsupported version")
    });
    assert!(line.contains("...(+"), "{line}");
    assert!(
        line.len() < 1000,
        "a {}-character line for a 5000-byte client id",
        line.len()
    );
    daemon.stop();
}

// ---- Brokers reach the controller listener while clients fill the broker listener ----------

fn broker_properties(id: i32) -> BrokerProperties {
    BrokerProperties::parse(&format!(
        "node.id={id}
process.roles=broker
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:{port}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
",
        port = 19_500 + id
    ))
    .unwrap()
}

async fn register(controller: &str, id: i32) -> RegisteredBroker {
    let options = RegistrationOptions {
        client: ClientConfig::new("connection-limits").with_request_timeout(WAIT),
        ..Default::default()
    };
    tokio::time::timeout(
        WAIT,
        register_broker(&broker_properties(id), controller, options),
    )
    .await
    .unwrap_or_else(|_| panic!("broker {id} did not register within {WAIT:?}"))
    .unwrap_or_else(|e| panic!("broker {id}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_register_and_heartbeat_while_idle_clients_fill_max_connections() {
    const MAX: usize = 20;
    let node = streams_support::start(&[&format!("max.connections={MAX}")]).await;
    let broker_addr: SocketAddr = node.broker.parse().unwrap();
    // Idle clients take every connection the node allows, each proven accepted.
    let flood = tokio::task::spawn_blocking(move || {
        (0..MAX)
            .map(|_| {
                let mut stream = connect(broker_addr);
                served_on(&mut stream, 1);
                stream
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    // Brokers still register and heartbeat on the controller listener.
    let brokers = [
        register(&node.controller, 1).await,
        register(&node.controller, 2).await,
    ];
    for broker in &brokers {
        let heartbeat = tokio::time::timeout(
            WAIT,
            broker.heartbeat_once(broker.metadata_offset(), false, false),
        )
        .await
        .expect("heartbeat in time")
        .unwrap_or_else(|e| panic!("heartbeat of broker {}: {e}", broker.broker_id));
        assert_eq!(heartbeat.error_code, 0);
    }
    // Room was made by closing client connections (the least recently active ones; which two
    // those are depends on when each connection's last write is timed, so any two will do).
    let closed = tokio::task::spawn_blocking(move || {
        wait_until(IO_TIMEOUT, || {
            let closed = flood.iter().filter(|s| closed_now(s)).count();
            (closed >= 2).then_some(closed)
        })
    })
    .await
    .unwrap();
    assert_eq!(closed, Some(2), "one client connection closed per broker");
    node.stop().await;
}
