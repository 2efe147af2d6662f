//! A third independent client's classic consumer group: kafka-python, a pure-Python client,
//! runs `tests/kafka_python/classic_group.py` against the real daemon (two members share the
//! partitions, consume everything once and commit; one leaves with LeaveGroup and the other
//! takes over at the committed offsets; DescribeGroups as the client decodes it).
//!
//! The client is pinned ([`KAFKA_PYTHON`]) and installed from PyPI by this test into a
//! virtualenv under Cargo's target directory (`CARGO_TARGET_TMPDIR`), once: a few seconds on a
//! clean checkout, nothing after. It needs `python3` with its `venv` module.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{wait_until, Daemon};

/// The kafka-python release the test installs.
const KAFKA_PYTHON: &str = "3.0.12";

/// Runs `program args` to completion; panics with its output unless it exits 0.
fn run(program: &Path, args: &[&str], timeout: Duration) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let file = std::fs::File::create(&out).expect("out file");
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("out file"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("{} could not start: {e}", program.display()));
    let status = wait_until(timeout, || child.try_wait().ok().flatten());
    let output = || std::fs::read_to_string(&out).unwrap_or_default();
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "{} {args:?} ran past {timeout:?}:\n{}",
            program.display(),
            output()
        );
    };
    assert!(
        status.success(),
        "{} {args:?}: {status}\n{}",
        program.display(),
        output()
    );
    output()
}

/// The virtualenv's python with kafka-python [`KAFKA_PYTHON`], installed if it is not yet.
fn kafka_python() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("kafka-python-{KAFKA_PYTHON}"));
    let python = venv.join("bin").join("python");
    let check = format!("import kafka; assert kafka.__version__ == '{KAFKA_PYTHON}'");
    let installed = Command::new(&python)
        .args(["-c", &check])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        let minute = Duration::from_secs(60);
        let venv_arg = venv.to_str().expect("utf-8 path");
        run(
            Path::new("python3"),
            &["-m", "venv", "--clear", venv_arg],
            minute,
        );
        let pinned = format!("kafka-python=={KAFKA_PYTHON}");
        let pip = [
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &pinned,
        ];
        run(&python, &pip, minute);
    }
    python
}

#[test]
fn two_members_share_the_partitions_and_one_takes_over_when_the_other_leaves() {
    let python = kafka_python();
    let daemon = Daemon::start(&["group.initial.rebalance.delay.ms=0"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kafka_python/classic_group.py");
    let script = script.to_str().expect("utf-8 path");
    let output = run(
        &python,
        &[script, &daemon.bootstrap()],
        Duration::from_secs(90),
    );
    println!("{output}");
    for check in [
        "ok: every record consumed once",
        "ok: committed 25 on every partition",
        "ok: b read the new records once",
        "ok: DescribeGroups: ('Stable', 'consumer', 'range', {'py-b': [0, 1, 2, 3]})",
    ] {
        assert!(output.contains(check), "{check:?} not in:\n{output}");
    }
}
