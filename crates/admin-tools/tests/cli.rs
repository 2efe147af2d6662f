//! The `kafka-topics` and `kcoord-admin` binaries against a kcoord daemon started in this
//! process: their output, byte for byte where it does not depend on ports, and their exit
//! statuses.

use std::process::Output;
use std::time::Duration;

use kcoord_client::admin::NewTopic;
use kcoord_client::{Client, ClientConfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Bound on every wait.
const WAIT: Duration = Duration::from_secs(30);

struct Node {
    handle: kcoord_server::ServerHandle,
    broker: String,
    controller: String,
}

async fn start(extra: &str) -> Node {
    let text = format!("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=1\n{extra}");
    let config =
        kcoord_server::Config::parse("admin-tools-test", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let broker = handle.broker_addr().expect("broker listener").to_string();
    let controller = handle
        .controller_addr()
        .expect("controller listener")
        .to_string();
    Node {
        handle,
        broker,
        controller,
    }
}

async fn create_topics(bootstrap: &str, names: &[&str]) {
    let client = Client::connect(bootstrap, ClientConfig::new("admin-tools-test"))
        .await
        .unwrap();
    let topics: Vec<NewTopic> = names.iter().map(|n| NewTopic::new(*n, 1, 1)).collect();
    for result in client.create_topics(&topics, false).await.unwrap() {
        result
            .result
            .unwrap_or_else(|e| panic!("{}: {e}", result.name));
    }
}

async fn tool(binary: &str, args: &[&str]) -> Output {
    let run = Command::new(binary).args(args).kill_on_drop(true).output();
    tokio::time::timeout(WAIT, run)
        .await
        .unwrap_or_else(|_| panic!("{binary} {args:?} did not finish"))
        .expect("run the binary")
}

async fn kafka_topics(args: &[&str]) -> Output {
    tool(env!("CARGO_BIN_EXE_kafka-topics"), args).await
}

async fn kcoord_admin(args: &[&str]) -> Output {
    tool(env!("CARGO_BIN_EXE_kcoord-admin"), args).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (exit status, stdout, stderr)
fn outcome(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_topics_list_prints_sorted_names_one_per_line() {
    let node = start("").await;
    let b = node.broker.as_str();
    // An empty cluster: Kafka prints the empty join, i.e. one empty line.
    assert_eq!(
        outcome(&kafka_topics(&["--bootstrap-server", b, "--list"]).await),
        (Some(0), "\n".into(), String::new())
    );

    create_topics(
        b,
        &["orders", "__consumer_offsets", "audit", "Zeta", "orders-v2"],
    )
    .await;
    // Java's String order: upper case, then '_', then lower case.
    assert_eq!(
        outcome(&kafka_topics(&["--bootstrap-server", b, "--list"]).await),
        (
            Some(0),
            "Zeta\n__consumer_offsets\naudit\norders\norders-v2\n".into(),
            String::new()
        )
    );
    assert_eq!(
        outcome(&kafka_topics(&["--bootstrap-server", b, "--list", "--exclude-internal"]).await),
        (
            Some(0),
            "Zeta\naudit\norders\norders-v2\n".into(),
            String::new()
        )
    );
    assert_eq!(
        outcome(&kafka_topics(&["--list", "--bootstrap-server", b, "--topic", "orders.*"]).await),
        (Some(0), "orders\norders-v2\n".into(), String::new())
    );
    assert_eq!(
        outcome(&kafka_topics(&["--bootstrap-server", b, "--list", "--topic", "nothing"]).await).1,
        "\n"
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_topics_errors_and_exit_statuses() {
    let (code, out, err) = outcome(&kafka_topics(&[]).await);
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert!(
        err.starts_with("Create, delete, describe, or change a topic.\nUsage: kafka-topics"),
        "{err}"
    );

    let (code, out, err) = outcome(&kafka_topics(&["--list"]).await);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (Some(1), "", "--bootstrap-server must be specified\n")
    );

    let (code, _, err) =
        outcome(&kafka_topics(&["--bootstrap-server", "127.0.0.1:1", "--list", "--delete"]).await);
    assert_eq!(code, Some(1));
    assert!(err.starts_with("Command must include exactly one action: --list, --describe, --create, --alter or --delete\n"), "{err}");

    let (code, out, err) =
        outcome(&kafka_topics(&["--bootstrap-server", "127.0.0.1:1", "--list", "--bogus"]).await);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            Some(1),
            "Error while executing topic command : bogus is not a recognized option\n",
            ""
        )
    );

    // Bind and drop to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let bootstrap = format!("127.0.0.1:{port}");
    let (code, out, _) =
        outcome(&kafka_topics(&["--bootstrap-server", &bootstrap, "--list"]).await);
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with("Error while executing topic command : ")
            && out.contains(&bootstrap)
            && out.lines().count() == 1,
        "{out}"
    );

    let (code, out, _) = outcome(&kafka_topics(&["--help"]).await);
    assert_eq!(code, Some(0));
    assert!(out.contains("--exclude-internal"), "{out}");
}

const BROKER_PROPERTIES: &str = "\
node.id=4
process.roles=broker
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:19092
broker.rack=rack-a
num.io.threads=16
broker.heartbeat.interval.ms=100
ssl.keystore.password=hunter2
my.plugin.secret=hunter3
";

/// The rows of a table whose first column is `broker`, each split on blanks.
fn rows_of(table: &str, broker: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|cells| cells.first().map(String::as_str) == Some(broker))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcoord_admin_registers_a_broker_and_reads_its_static_configs_back() {
    let node = start("").await;
    let dir = tempfile::tempdir().unwrap();
    let properties = dir.path().join("broker.properties");
    std::fs::write(&properties, BROKER_PROPERTIES).unwrap();
    let props = properties.to_str().unwrap();

    let (code, out, err) = outcome(
        &kcoord_admin(&[
            "brokers",
            "--register",
            "--config",
            props,
            "--bootstrap-controller",
            &node.controller,
            "--once",
        ])
        .await,
    );
    assert_eq!(code, Some(0), "stderr: {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("Registered broker 4 with broker epoch ")
            && lines[0].contains("(BrokerRegistration v6, "),
        "{out}"
    );
    assert_eq!(lines[1], "Broker 4 is unfenced.");

    let (code, out, err) = outcome(
        &kcoord_admin(&[
            "brokers",
            "--describe",
            "--static-configs",
            "--bootstrap-server",
            &node.broker,
        ])
        .await,
    );
    assert_eq!((code, err.as_str()), (Some(0), ""));
    let port = node.broker.rsplit(':').next().unwrap();
    let (brokers, configs) = out.split_once("\n\n").expect("two tables");
    assert_eq!(
        brokers
            .lines()
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["BROKER", "HOST", "PORT", "RACK", "ROLE", "FENCED"])
    );
    assert_eq!(
        rows_of(brokers, "1"),
        vec![vec!["1", "127.0.0.1", port, "-", "controller", "false"]]
    );
    assert_eq!(
        rows_of(brokers, "4"),
        vec![vec!["4", "127.0.0.1", "19092", "rack-a", "broker", "false"]]
    );
    let rows = rows_of(configs, "4");
    let value = |name: &str| {
        rows.iter()
            .find(|r| r[1] == name)
            .map(|r| (r[2].clone(), r[3].clone()))
    };
    assert_eq!(
        value("broker.rack"),
        Some(("rack-a".into(), "STATIC_BROKER_CONFIG".into()))
    );
    assert_eq!(
        value("num.io.threads"),
        Some(("16".into(), "STATIC_BROKER_CONFIG".into()))
    );
    // A Kafka default the file leaves out, and one whose default is null.
    assert_eq!(
        value("background.threads"),
        Some(("10".into(), "STATIC_BROKER_CONFIG".into()))
    );
    assert_eq!(
        value("advertised.listeners"),
        Some(("null".into(), "STATIC_BROKER_CONFIG".into()))
    );
    assert!(
        !out.contains("hunter")
            && !out.contains("ssl.keystore.password")
            && !out.contains("my.plugin.secret"),
        "{out}"
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcoord_admin_heartbeats_until_terminated_then_shuts_the_broker_down() {
    let node = start("").await;
    let dir = tempfile::tempdir().unwrap();
    let properties = dir.path().join("broker.properties");
    std::fs::write(&properties, BROKER_PROPERTIES).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kcoord-admin"))
        .args([
            "brokers",
            "--register",
            "--config",
            properties.to_str().unwrap(),
            "--bootstrap-controller",
            &node.controller,
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.ends_with("is unfenced.")) {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("not EOF");
        seen.push(line);
    }
    let pid = child.id().expect("running").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    let last = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.as_deref(), Some("Broker 4 shut down."));
    assert_eq!(status.code(), Some(0));

    // The controlled shutdown fenced it; the registration and its configs stay.
    let (code, out, _) = outcome(
        &kcoord_admin(&["brokers", "--describe", "--bootstrap-server", &node.broker]).await,
    );
    assert_eq!(code, Some(0));
    assert_eq!(
        rows_of(&out, "4"),
        vec![vec!["4", "127.0.0.1", "19092", "rack-a", "broker", "true"]]
    );
    node.handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcoord_admin_failures_are_one_line_and_exit_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let (code, out, err) = outcome(
        &kcoord_admin(&[
            "brokers",
            "--describe",
            "--bootstrap-server",
            &format!("127.0.0.1:{port}"),
        ])
        .await,
    );
    assert_eq!((code, out.as_str()), (Some(1), ""));
    assert!(
        err.starts_with("Error: ") && err.lines().count() == 1,
        "{err}"
    );

    let (code, _, err) = outcome(
        &kcoord_admin(&[
            "brokers",
            "--register",
            "--config",
            "/nonexistent/broker.properties",
            "--bootstrap-controller",
            "127.0.0.1:1",
        ])
        .await,
    );
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("Error: cannot read /nonexistent/broker.properties"),
        "{err}"
    );
}
