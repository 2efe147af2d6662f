//! The `kcoord-streams-demo` binary: argument and file errors are one line and a non-zero exit.

use std::io::Write;
use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kcoord-streams-demo"))
        .args(args)
        .output()
        .expect("run the binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One `Error: ...` line on stderr, nothing on stdout, exit code `code`.
fn assert_one_line_error(output: &Output, code: i32, starts_with: &str) {
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(stdout, "");
    assert!(stderr.starts_with(starts_with), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "stderr: {stderr}");
}

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/orders.json");

#[test]
fn bad_command_lines_exit_2_with_one_line() {
    assert_one_line_error(
        &sim(&[]),
        2,
        "Error: the following required arguments were not provided:",
    );
    let base = [
        "--bootstrap-server",
        "127.0.0.1:9",
        "--group",
        "g",
        "--topology",
        EXAMPLE,
    ];
    let with = |extra: &[&str]| sim(&[&base[..], extra].concat());
    assert_one_line_error(
        &with(&["--members", "0"]),
        2,
        "Error: invalid value '0' for '--members <N>'",
    );
    assert_one_line_error(
        &with(&["--heartbeat-version", "7"]),
        2,
        "Error: invalid value '7' for '--heartbeat-version <VERSION>'",
    );
    assert_one_line_error(
        &with(&["--run-for", "never"]),
        2,
        "Error: invalid value 'never' for '--run-for <SECS>'",
    );
    assert_one_line_error(
        &with(&["--bogus"]),
        2,
        "Error: unexpected argument '--bogus' found",
    );
}

#[test]
fn a_bad_topology_file_exits_2_with_one_line() {
    let output = sim(&[
        "--bootstrap-server",
        "127.0.0.1:9",
        "--group",
        "g",
        "--topology",
        "/nonexistent/orders.json",
    ]);
    assert_one_line_error(
        &output,
        2,
        "Error: cannot read topology file /nonexistent/orders.json",
    );

    let dir = std::env::temp_dir().join(format!("kcoord-streams-demo-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "not-json.json",
            "{ subtopologies",
            "is not a topology description",
        ),
        (
            "typo.json",
            r#"{"subtopologies": [{"id": 0, "nodes": [{"type": "source", "name": "s", "topic": ["x"]}]}]}"#,
            "unknown field `topic`",
        ),
        (
            "dangling.json",
            r#"{"subtopologies": [{"id": 0, "nodes": [{"type": "source", "name": "s", "topics": ["x"], "successors": ["nope"]}]}]}"#,
            "names successor \"nope\"",
        ),
    ];
    for (name, content, says) in cases {
        let path = dir.join(name);
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(content.as_bytes()))
            .unwrap();
        let output = sim(&[
            "--bootstrap-server",
            "127.0.0.1:9",
            "--group",
            "g",
            "--topology",
            path.to_str().unwrap(),
        ]);
        assert_one_line_error(&output, 2, "Error: topology file");
        assert!(
            text(&output.stderr).contains(says),
            "{name}: {}",
            text(&output.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreachable_server_exits_1_with_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let bootstrap = format!("127.0.0.1:{port}");
    let output = sim(&[
        "--bootstrap-server",
        &bootstrap,
        "--group",
        "g",
        "--topology",
        EXAMPLE,
        "--run-for",
        "1",
    ]);
    assert_one_line_error(&output, 1, "Error: no broker in");
}

#[test]
fn help_goes_to_stdout() {
    let output = sim(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("--topology <FILE>"));
}
