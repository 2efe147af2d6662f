//! An Apache Kafka 4.4 broker in its own JVM, for benchmarks that run the same load against
//! kcoord and Kafka: `interop/`'s `KafkaBrokerMain` (a single KRaft node, combined mode, at the
//! production metadata.version) on the classpath Maven resolves for that module. Needs a JDK
//! and Maven; the first start downloads Kafka 4.4.0 from Maven Central.
//!
//! The JVM gets what `kafka-server-start.sh` gives a broker: a 1 GiB heap and its G1 settings.

#![allow(dead_code)] // each bench uses its own part

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `kafka-server-start.sh`'s heap and `kafka-run-class.sh`'s performance options.
const JVM_OPTIONS: &[&str] = &[
    "-Xms1G",
    "-Xmx1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
];

pub struct KafkaBroker {
    child: Child,
    stdin: Option<ChildStdin>,
    addr: String,
}

impl KafkaBroker {
    /// Starts a broker with these `key=value` settings on top of `KafkaBrokerMain`'s own and
    /// waits (up to two minutes) until it serves.
    pub fn start(settings: &[String]) -> Result<KafkaBroker, String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let classpath = interop_classpath(root)?;
        let mut child = Command::new("java")
            .args(JVM_OPTIONS)
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                root.join("interop/src/test/resources/log4j2-tools.properties")
                    .display()
            ))
            .arg("-cp")
            .arg(classpath)
            .arg("io.kcoord.interop.bench.KafkaBrokerMain")
            .args(settings)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start java: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(Result::ok);
            let _ = tx.send(first);
            for _ in lines {} // keep draining
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .ok()
            .flatten()
            .unwrap_or_default();
        let Some(addr) = line.strip_prefix("kafka started: ") else {
            let _ = child.kill();
            return Err(format!("Kafka did not start (it printed {line:?})"));
        };
        let stdin = child.stdin.take();
        Ok(KafkaBroker {
            addr: addr.trim().to_string(),
            child,
            stdin,
        })
    }

    pub fn bootstrap(&self) -> String {
        self.addr.clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Bytes of Java heap in use after a full collection (`jcmd GC.run`, then
    /// `GC.heap_info`'s "used" of the whole heap).
    pub fn heap_used_after_gc(&self) -> Result<u64, String> {
        let pid = self.pid().to_string();
        jcmd(&pid, "GC.run")?;
        let info = jcmd(&pid, "GC.heap_info")?;
        // " garbage-first heap   total 1048576K, used 123456K [0x..."
        let used = info
            .lines()
            .find_map(|l| l.split("used ").nth(1))
            .and_then(|rest| rest.split('K').next())
            .and_then(|k| k.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("no heap use in {info:?}"))?;
        Ok(used * 1024)
    }

    /// Bytes of live Java objects: `jcmd GC.class_histogram`, which runs a full stop-the-world
    /// collection first (unlike `GC.run`, which `-XX:+ExplicitGCInvokesConcurrent` turns into
    /// a concurrent cycle that may leave garbage behind), then its "Total" line's bytes.
    pub fn live_heap_bytes(&self) -> Result<u64, String> {
        let histogram = jcmd(&self.pid().to_string(), "GC.class_histogram")?;
        // "Total        1234567       89012345"
        histogram
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("Total"))
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|bytes| bytes.parse().ok())
            .ok_or_else(|| "no Total line in jcmd GC.class_histogram".to_string())
    }
}

fn jcmd(pid: &str, command: &str) -> Result<String, String> {
    let out = Command::new("jcmd")
        .args([pid, command])
        .output()
        .map_err(|e| format!("jcmd: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "jcmd {command} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Drop for KafkaBroker {
    fn drop(&mut self) {
        // Closing stdin asks KafkaBrokerMain to shut down cleanly.
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        wait_or_kill(&mut self.child, Duration::from_secs(30));
    }
}

/// Waits up to `grace` for `child` to exit, then kills it.
pub fn wait_or_kill(child: &mut std::process::Child, grace: Duration) {
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `interop/target/test-classes` plus the module's dependencies, compiled and resolved by Maven.
pub fn interop_classpath(root: &Path) -> Result<String, String> {
    let pom = root.join("interop/pom.xml");
    let list: PathBuf = root.join("interop/target/bench-classpath.txt");
    let status = Command::new("mvn")
        .args(["-B", "-q", "-ntp", "-f"])
        .arg(&pom)
        .args(["test-compile", "dependency:build-classpath"])
        .arg(format!("-Dmdep.outputFile={}", list.display()))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run mvn: {e}"))?;
    if !status.success() {
        return Err(format!("mvn -f {} test-compile failed", pom.display()));
    }
    let deps = std::fs::read_to_string(&list).map_err(|e| format!("{}: {e}", list.display()))?;
    Ok(format!(
        "{}:{}",
        root.join("interop/target/test-classes").display(),
        deps.trim()
    ))
}
