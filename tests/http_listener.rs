//! The `kcoord` binary with `http.listener` (crates/server/tests/http_metrics.rs tries the
//! metrics and probes in depth, in-process): the startup line names the HTTP port, the probes
//! and `/metrics` answer, no HTTP without the key, and a bad value is a config error.
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{config_text, run_to_exit, wait_until, Daemon, IO_TIMEOUT};

/// `GET path` on a connection of its own: (status, body).
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

#[test]
fn the_daemon_serves_metrics_and_probes_on_the_port_its_startup_line_names() {
    let daemon = Daemon::start(&["http.listener=127.0.0.1:0"]);
    let http = daemon
        .http_addr()
        .expect("the startup line names the HTTP listener");
    assert_ne!(http.port(), 0);
    assert_eq!(get(http, "/health/live").0, 200);
    let ready = wait_until(IO_TIMEOUT, || {
        let (status, body) = get(http, "/health/ready");
        (status == 200).then_some(body)
    });
    assert!(ready.is_some(), "never ready");
    let (status, metrics) = get(http, "/metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains("# TYPE kcoord_requests_total counter"));
    assert!(metrics.contains("process_resident_memory_bytes "));
    // The daemon's allocator is counted: a running daemon holds some hundreds of kilobytes.
    let live = daemon.metric("kcoord_heap_live_bytes").unwrap();
    assert!(live > 100_000.0, "{live}");
    daemon.stop();
}

#[test]
fn no_http_listener_without_the_key() {
    let daemon = Daemon::start(&[]);
    assert_eq!(daemon.http_addr(), None);
    daemon.stop();
}

#[test]
fn a_bad_http_listener_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.properties");
    std::fs::write(&path, config_text(&["http.listener=localhost"])).unwrap();
    let (status, _stdout, stderr) = run_to_exit(&[path.to_str().unwrap()], Duration::from_secs(30));
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("http.listener: expected host:port (e.g. 127.0.0.1:8080), got \"localhost\""),
        "{stderr}"
    );
}
