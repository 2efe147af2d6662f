//! The `kafka-streams-groups` binary itself: exit codes and the one-line errors.

mod common;

use std::process::{Command, Output};

use common::broker::{described, BrokerSpec, FakeBroker};
use common::*;

fn tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kafka-streams-groups"))
        .args(args)
        .output()
        .expect("run the binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One `Error: ...` line on stderr, nothing on stdout, exit code 1.
fn assert_one_line_error(output: &Output, starts_with: &str) {
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(stdout, "");
    assert!(stderr.starts_with(starts_with), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "stderr: {stderr}");
    assert!(stderr.ends_with('\n'));
}

#[test]
fn unreachable_bootstrap_server() {
    // Bind and drop to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let bootstrap = format!("127.0.0.1:{port}");
    let output = tool(&[
        "--bootstrap-server",
        &bootstrap,
        "--describe",
        "--topology",
        "--group",
        "orders-app",
    ]);
    assert_one_line_error(
        &output,
        "Error: Executing streams group command failed due to no broker in",
    );
    assert!(text(&output.stderr).contains(&bootstrap));
}

#[test]
fn usage_errors() {
    let output = tool(&["--bootstrap-server", "localhost:9092", "--list", "--bogus"]);
    assert_one_line_error(&output, "Error: unexpected argument '--bogus' found");

    let output = tool(&[
        "--bootstrap-server",
        "localhost:9092",
        "--describe",
        "--topology",
    ]);
    assert_one_line_error(
        &output,
        "Error: Option [describe] takes one of these options: [all-groups], [group]",
    );

    let output = tool(&["--list"]);
    assert_one_line_error(
        &output,
        "Error: Missing required argument \"[bootstrap-server]\"",
    );

    let output = tool(&[
        "--bootstrap-server",
        "localhost:9092",
        "--describe",
        "--group",
        "g",
        "--topology",
        "--output",
        "png",
    ]);
    assert_one_line_error(
        &output,
        "Error: invalid value 'png' for '--output <format>'",
    );
    assert!(text(&output.stderr).contains("[possible values: text, json, dot, mermaid, svg]"));

    let output = tool(&[
        "--bootstrap-server",
        "localhost:9092",
        "--describe",
        "--group",
        "a",
        "--group",
        "b",
        "--topology",
        "--output",
        "svg",
    ]);
    assert_one_line_error(
        &output,
        "Error: Option [output] svg draws the topology of one group, but 2 groups were given",
    );

    let output = tool(&[
        "--bootstrap-server",
        "localhost:9092",
        "--list",
        "--command-config",
        "/nonexistent/admin.properties",
    ]);
    assert_one_line_error(
        &output,
        "Error: cannot read command config file /nonexistent/admin.properties",
    );
}

#[test]
fn help_goes_to_stdout() {
    let output = tool(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("--bootstrap-server"));
}

/// The program end to end against a fake broker: describe v1 with the topology, Kafka's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_topology_end_to_end() {
    let mut spec = BrokerSpec::default();
    spec.groups.insert(
        "orders-app".into(),
        described("orders-app", 3, Some(orders_wire())),
    );
    spec.groups
        .insert("waiting".into(), described("waiting", 1, None));
    let broker = FakeBroker::start(spec).await;
    let bootstrap = broker.bootstrap();

    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            tool(&args)
        })
    };
    let args = |group: &str| {
        [
            "--bootstrap-server",
            &bootstrap,
            "--describe",
            "--topology",
            "--group",
            group,
        ]
        .map(String::from)
        .to_vec()
    };

    let ok = run(args("orders-app")).await.expect("join");
    assert_eq!(ok.status.code(), Some(0), "stderr: {}", text(&ok.stderr));
    assert_eq!(
        text(&ok.stdout),
        std::fs::read_to_string(fixture_path("orders.topology.txt")).expect("fixture")
    );

    let missing = run(args("waiting")).await.expect("join");
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        text(&missing.stdout),
        "\nError: No topology description has been recorded for group 'waiting'.\n"
    );

    let not_found = run(args("nope")).await.expect("join");
    assert_one_line_error(&not_found, "Error: Executing streams group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.");
}
