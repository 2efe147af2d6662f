//! Logging can never stall request handling (issue 13, item 7): lines go through a bounded
//! queue to a writer thread and are dropped when stderr does not keep up.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use std::time::Duration;

use common::{
    api_versions_v3_frame, config_text, connect, expect_frame, kcoord_binary, send, Daemon,
};
use kcoord_client::admin::NewTopic;
use kcoord_client::{Client, ClientConfig};

/// A daemon whose stderr is a pipe that nobody reads, logging a DEBUG line per request: the
/// pipe fills after a few hundred lines. With writes on the requests' own threads, the next
/// line would block the request forever; here every request is still answered.
#[test]
fn a_stderr_nobody_reads_does_not_stall_requests() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config_path = dir.path().join("server.properties");
    std::fs::write(&config_path, config_text(&["log.level=debug"])).expect("write config");
    let mut child = KillOnDrop(
        Command::new(kcoord_binary())
            .arg(&config_path)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kcoord"),
    );
    // Held, never read, until the end of the test.
    let _stderr = child.0.stderr.take();
    let stdout = child.0.stdout.take().expect("stdout is piped");
    let mut first_line = String::new();
    BufReader::new(stdout)
        .read_line(&mut first_line)
        .expect("startup line");
    let (_, listeners) = common::parse_startup_line(first_line.trim()).expect("startup line");
    let broker = listeners
        .iter()
        .find(|(name, _)| name == "PLAINTEXT")
        .map(|(_, addr)| *addr)
        .expect("a PLAINTEXT listener");

    // Each request logs one DEBUG line of well over 64 bytes: 4,000 of them are several times
    // the 64 KiB a Linux pipe holds.
    let mut stream = connect(broker);
    for correlation_id in 0..4_000 {
        send(&mut stream, &api_versions_v3_frame(correlation_id)).expect("send");
        let response = expect_frame(&mut stream, "ApiVersions while stderr is full");
        assert_eq!(
            response[..4],
            correlation_id.to_be_bytes(),
            "answer to request {correlation_id}"
        );
    }
}

/// Kills the daemon however the test ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CreateTopics naming 9,000 invalid topics (one of them 100,000 characters long) logs one
/// summary line for the refusals (10,000 partitions is the most one request may ask for), not one line per name, and no name longer than the cap;
/// a topic it does create still gets its own line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_topics_are_summed_up_in_one_capped_line() {
    let daemon = Daemon::start(&[]);
    let client = Client::connect(
        &daemon.bootstrap(),
        ClientConfig::new("log-flooding").with_request_timeout(Duration::from_secs(60)),
    )
    .await
    .expect("connect");
    let huge = "x".repeat(100_000);
    let mut topics: Vec<NewTopic> = (0..9_000)
        .map(|i| NewTopic::new(format!("bad name {i}"), 1, 1))
        .collect();
    topics.push(NewTopic::new(huge.clone(), 1, 1));
    topics.push(NewTopic::new("created-one", 1, 1));
    let results = client
        .create_topics(&topics, false)
        .await
        .expect("CreateTopics");
    assert_eq!(results.len(), topics.len());
    assert_eq!(results.iter().filter(|r| r.result.is_ok()).count(), 1);

    let log = daemon.wait_for_log("topics not changed", Duration::from_secs(30));
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("CreateTopics")).collect();
    assert_eq!(
        lines.len(),
        2,
        "one line for the created topic, one for the refusals: {:?}",
        lines
            .iter()
            .map(|l| &l[..l.len().min(300)])
            .collect::<Vec<_>>()
    );
    assert!(
        lines.iter().any(|l| l.contains("created-one")),
        "the created topic has its line: {lines:?}"
    );
    let summary = lines
        .iter()
        .find(|l| l.contains("topics not changed"))
        .expect("a summary line");
    assert!(
        summary.contains("topics=9001") && summary.contains("INVALID_TOPIC_EXCEPTION:9001"),
        "{summary}"
    );
    assert!(
        log.lines().all(|l| l.len() < 2_000),
        "a log line carries a name of {} characters",
        huge.len()
    );
    daemon.stop();
}
