//! Data-plane bench (issue 10): produce throughput against the daemon and against a discard
//! server, consumer catch-up, produce-to-consume latency, and RSS per idle partition, all
//! against the real `kcoord` binary; one JSON line per measurement.
//!
//! ```text
//! cargo bench --bench data_plane                                   # everything, 2 rounds
//! cargo bench --bench data_plane -- --measure produce --record-bytes 1024 --seconds 5
//! cargo bench --bench data_plane -- --measure catchup --preload-mb 256 --storage disk
//! cargo bench --bench data_plane -- --measure rss --rss-topics 100 --rss-partitions 100
//! ```
//!
//! The bench starts one daemon per `--storage` (`memory`: partitions in memory, the default;
//! `disk`: `log.dirs` in a temp dir) with `log.level=warn`, plus `--daemon-config KEY=VALUE`
//! lines, and keeps them for all rounds; `--storage kafka` starts an Apache Kafka 4.4 broker
//! instead (`support/kafka.rs`: interop's `KafkaBrokerMain` in its own JVM, needs a JDK and
//! Maven; its log in a temp dir, Kafka's default flush policy; `--daemon-config` lines go to
//! it), so the same measurements compare kcoord with Kafka within one run; `--rounds R` (2) repeats every measurement but the
//! RSS one, in the same order each round, so each ratio is taken within one round. Sizes: MB
//! = 10^6 bytes, GB = 10^9, MiB = 2^20. Server CPU is user + system time of the server
//! process from `/proc/<pid>/stat` (10 ms ticks) over the measured window.
//!
//! **Produce** (`produce`): for every `--record-bytes` (100, 1024) and `--compression` (none,
//! lz4), each daemon gets a new topic of `--connections` (4) partitions; connection `i` is an
//! idempotent producer (its own InitProducerId) writing to partition `i` with `--inflight` (5)
//! Produce v12 requests in flight, acks=-1, one batch of about `--batch-bytes` (65536) of
//! record values each (null keys, text-like values, so lz4 has something to find). The batch
//! is built once; each request patches its base sequence and recomputes the CRC
//! (`support/produce.rs`), so the client stays cheap; every answer must be error-free at the
//! base offset the stream expects. After `--warmup` (1 s), `--seconds` (5) are measured: the
//! answers received then, the daemon's CPU, the bench's CPU, and the requests' latency (p50,
//! p99 and the slowest: with `--daemon-config log.segment.bytes=...` small enough for the load
//! to roll segments, the slowest shows whether a roll stalls produce). The topic is deleted afterwards.
//! Then the same frames go to the **discard server** for the same time (unless
//! `--no-discard`): this bench binary re-executed with `--discard-server`, a separate process
//! (so its CPU is read the same way) with a thread per connection that reads into a 1 MiB
//! buffer, looks only at each frame's size and correlation id and answers each frame with
//! its correlation id alone. One `produce_vs_discard` line per storage then gives the ratio of
//! the batch bytes per server CPU-second, kcoord / discard; goal >= 0.5 on disk at 1 KiB
//! records. A second discard server (`discard_write`, unless `--no-discard-write`) also
//! writes everything it reads to a file in a temp dir (one per connection, deleted when the
//! connection closes, as the daemon's topic is): the cost of getting the bytes into the page
//! cache, which the daemon on disk cannot avoid; the lines give that ratio too. Odd rounds
//! run the daemons first, even rounds the discard servers first (fresh memory costs much
//! more than reused memory on a VM, so neither side always gets what the other just freed).
//!
//! **Consumer catch-up** (`catchup`): once per daemon, a topic of `--preload-partitions` (8)
//! partitions is filled with `--preload-mb` (768) MB of 1 KiB records, uncompressed, as above.
//! Then `--consumers` (2) connections each read their share of the partitions from offset 0 to
//! the end, one Fetch (`--fetch-version`, 16: topic ids) in flight each, sessionless, max_bytes
//! 50 MiB, every `--partition-max-bytes` (1 MiB and 8 MiB, one run each), max_wait 500 ms,
//! min_bytes 1. Every batch must come in offset order; the next fetch starts after the last
//! whole batch. Reported: GB of whole batches per server CPU-second over the whole catch-up
//! (goal >= 1). On disk the data was just written, so it is read from the page cache.
//!
//! **Latency** (`latency`): a new topic of one partition; one idempotent producer sends one
//! record of `--latency-record-bytes` (100) per request at `--latency-rate` (500) requests/s
//! for `--latency-seconds` (5), acks=-1, the send time (ns on the bench's monotonic clock) in
//! the first 8 bytes of the value; one consumer long-polls (Fetch v16, max_wait 500 ms,
//! min_bytes 1) in an incremental fetch session (`--latency-session incremental`, the default,
//! or `sessionless`), and takes each record's latency when its answer is read. Records sent in
//! the first `--warmup` seconds are not counted. Reported: p50, p99, p99.9, max.
//!
//! **RSS** (`rss`): for each storage and round, a fresh daemon; after one connection and
//! `--settle` (1 s) its VmRSS is the empty figure; then `--rss-topics` (100) topics of
//! `--rss-partitions` (100) partitions are created (CreateTopics, 10 topics per request), and
//! after `--settle` VmRSS is read again: bytes per partition = (RSS - empty) / partitions.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) every measurement runs in a tiny
//! configuration (0.1 s runs, 2 MB of catch-up, 10 partitions for RSS), well under 5 s, and
//! the process fails only on an error, never on a missed goal; unknown arguments (libtest's)
//! are ignored there.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/kafka.rs"]
mod kafka;

use args::{list, positive, seconds};
#[path = "support/produce.rs"]
mod produce;
#[path = "support/secure.rs"]
mod secure;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_client::Client;
use kcoord_record_batches::{BatchBuilder, BatchOptions, BatchSplitter, Compression, RecordBatch};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kcoord_wire::messages::{FetchRequest, FetchResponse};
use produce::{Drive, ProduceStream, StreamStats, Window};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

const GOAL_PRODUCE_RATIO: f64 = 0.5;
const GOAL_CATCHUP_GB_PER_CPU_S: f64 = 1.0;
const FETCH_MAX_BYTES: i32 = 50 << 20;
const MAX_WAIT_MS: i32 = 500;
/// Topics per CreateTopics request in the RSS measurement.
const TOPICS_PER_REQUEST: usize = 10;
const IO_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Options

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    Produce,
    CatchUp,
    Latency,
    Rss,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    Memory,
    Disk,
    /// Not kcoord: an Apache Kafka 4.4 broker (`support/kafka.rs`), its log on disk with its
    /// default flush policy, for the same measurements.
    Kafka,
    /// kcoord in gateway mode in front of such a broker (docs/gateway.md): the same load
    /// forwarded, the server CPU kcoord's.
    Gateway,
}

impl Storage {
    fn name(self) -> &'static str {
        match self {
            Storage::Memory => "memory",
            Storage::Disk => "disk",
            Storage::Kafka => "kafka",
            Storage::Gateway => "gateway",
        }
    }
}

#[derive(Debug, Clone)]
struct Options {
    measures: Vec<Measure>,
    storages: Vec<Storage>,
    record_bytes: Vec<usize>,
    compressions: Vec<Compression>,
    connections: usize,
    inflight: usize,
    batch_bytes: usize,
    seconds: f64,
    warmup: f64,
    rounds: usize,
    discard: bool,
    discard_write: bool,
    preload_mb: f64,
    preload_partitions: usize,
    consumers: usize,
    partition_max_bytes: Vec<usize>,
    fetch_version: i16,
    latency_rate: f64,
    latency_seconds: f64,
    latency_record_bytes: usize,
    latency_session: bool,
    rss_topics: usize,
    rss_partitions: usize,
    settle: f64,
    client_threads: usize,
    daemon_config: Vec<String>,
}

const USAGE: &str = "usage: data_plane [--measure produce,catchup,latency,rss] \
[--storage memory,disk] [--record-bytes 100,1024] [--compression none,lz4] [--connections C] \
[--inflight P] [--batch-bytes B] [--seconds S] [--warmup W] [--rounds R] [--no-discard] \
[--no-discard-write] \
[--preload-mb M] [--preload-partitions N] [--consumers K] [--partition-max-bytes B,..] \
[--fetch-version V] [--latency-rate R] [--latency-seconds S] [--latency-record-bytes B] \
[--latency-session incremental|sessionless] [--rss-topics T] [--rss-partitions N] \
[--settle S] [--client-threads N] [--daemon-config KEY=VALUE]..";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let all = vec![
        Measure::Produce,
        Measure::CatchUp,
        Measure::Latency,
        Measure::Rss,
    ];
    let mut o = if bench {
        Options {
            measures: all,
            storages: vec![Storage::Memory, Storage::Disk],
            record_bytes: vec![100, 1024],
            compressions: vec![Compression::None, Compression::Lz4],
            connections: 4,
            inflight: 5,
            batch_bytes: 64 * 1024,
            seconds: 5.0,
            warmup: 1.0,
            rounds: 2,
            discard: true,
            discard_write: true,
            preload_mb: 768.0,
            preload_partitions: 8,
            consumers: 2,
            partition_max_bytes: vec![1 << 20, 8 << 20],
            fetch_version: 16,
            latency_rate: 500.0,
            latency_seconds: 5.0,
            latency_record_bytes: 100,
            latency_session: true,
            rss_topics: 100,
            rss_partitions: 100,
            settle: 1.0,
            client_threads: 2,
            daemon_config: Vec::new(),
        }
    } else {
        // `cargo test --all-targets`: every measurement, tiny.
        Options {
            measures: all,
            storages: vec![Storage::Memory, Storage::Disk],
            record_bytes: vec![1024],
            compressions: vec![Compression::None, Compression::Lz4],
            connections: 1,
            inflight: 2,
            batch_bytes: 16 * 1024,
            seconds: 0.1,
            warmup: 0.0,
            rounds: 1,
            discard: true,
            discard_write: true,
            preload_mb: 2.0,
            preload_partitions: 2,
            consumers: 1,
            partition_max_bytes: vec![1 << 20],
            fetch_version: 16,
            latency_rate: 200.0,
            latency_seconds: 0.2,
            latency_record_bytes: 100,
            latency_session: true,
            rss_topics: 2,
            rss_partitions: 5,
            settle: 0.05,
            client_threads: 1,
            daemon_config: Vec::new(),
        }
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (flag, None),
        };
        match name {
            "--bench" => {
                i += 1;
                continue;
            }
            "--no-discard" => {
                o.discard = false;
                i += 1;
                continue;
            }
            "--no-discard-write" => {
                o.discard_write = false;
                i += 1;
                continue;
            }
            _ => {}
        }
        let known = matches!(
            name,
            "--measure"
                | "--storage"
                | "--record-bytes"
                | "--compression"
                | "--connections"
                | "--inflight"
                | "--batch-bytes"
                | "--seconds"
                | "--warmup"
                | "--rounds"
                | "--preload-mb"
                | "--preload-partitions"
                | "--consumers"
                | "--partition-max-bytes"
                | "--fetch-version"
                | "--latency-rate"
                | "--latency-seconds"
                | "--latency-record-bytes"
                | "--latency-session"
                | "--rss-topics"
                | "--rss-partitions"
                | "--settle"
                | "--client-threads"
                | "--daemon-config"
        );
        if !known {
            if bench {
                return Err(format!("unknown argument {flag:?}\n{USAGE}"));
            }
            eprintln!("data_plane: ignoring argument {flag:?} (smoke mode)");
            i += 1;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?
            }
        };
        i += 1;
        match name {
            "--measure" => {
                o.measures = list(&value, |s| match s {
                    "produce" => Ok(Measure::Produce),
                    "catchup" | "catch-up" => Ok(Measure::CatchUp),
                    "latency" => Ok(Measure::Latency),
                    "rss" => Ok(Measure::Rss),
                    _ => Err(format!(
                        "unknown --measure {s:?} (produce, catchup, latency, rss)"
                    )),
                })?
            }
            "--storage" => {
                o.storages = list(&value, |s| match s {
                    "memory" => Ok(Storage::Memory),
                    "disk" => Ok(Storage::Disk),
                    "kafka" => Ok(Storage::Kafka),
                    "gateway" => Ok(Storage::Gateway),
                    _ => Err(format!(
                        "unknown --storage {s:?} (memory, disk, kafka, gateway)"
                    )),
                })?
            }
            "--record-bytes" => o.record_bytes = list(&value, positive)?,
            "--compression" => {
                o.compressions = list(&value, |s| {
                    Compression::from_name(s).ok_or_else(|| {
                        format!("unknown --compression {s:?} (none, gzip, snappy, lz4, zstd)")
                    })
                })?
            }
            "--connections" => o.connections = positive(&value)?,
            "--inflight" => o.inflight = positive(&value)?,
            "--batch-bytes" => o.batch_bytes = positive(&value)?,
            "--seconds" => o.seconds = seconds(&value)?,
            "--warmup" => o.warmup = seconds(&value)?,
            "--rounds" => o.rounds = positive(&value)?,
            "--preload-mb" => {
                o.preload_mb = value
                    .parse::<f64>()
                    .ok()
                    .filter(|m| *m > 0.0 && *m <= 100_000.0)
                    .ok_or_else(|| format!("bad --preload-mb {value:?}"))?
            }
            "--preload-partitions" => o.preload_partitions = positive(&value)?,
            "--consumers" => o.consumers = positive(&value)?,
            "--partition-max-bytes" => o.partition_max_bytes = list(&value, positive)?,
            "--fetch-version" => {
                o.fetch_version = value
                    .parse()
                    .map_err(|_| format!("bad --fetch-version {value:?}"))?
            }
            "--latency-rate" => {
                o.latency_rate = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| *r > 0.0 && *r <= 1e6)
                    .ok_or_else(|| format!("bad --latency-rate {value:?}"))?
            }
            "--latency-seconds" => o.latency_seconds = seconds(&value)?,
            "--latency-record-bytes" => o.latency_record_bytes = positive(&value)?,
            "--latency-session" => {
                o.latency_session = match value.as_str() {
                    "incremental" => true,
                    "sessionless" => false,
                    _ => {
                        return Err(format!(
                            "unknown --latency-session {value:?} (incremental, sessionless)"
                        ))
                    }
                }
            }
            "--rss-topics" => o.rss_topics = positive(&value)?,
            "--rss-partitions" => o.rss_partitions = positive(&value)?,
            "--settle" => o.settle = seconds(&value)?,
            "--client-threads" => o.client_threads = positive(&value)?,
            "--daemon-config" => o.daemon_config.push(value),
            _ => unreachable!("`known` lists exactly these"),
        }
    }
    if o.seconds <= 0.0 || o.latency_seconds <= 0.0 {
        return Err("--seconds and --latency-seconds must be above 0".into());
    }
    let fetch = ApiKey::Fetch.valid_versions();
    if o.fetch_version < 13 || o.fetch_version > fetch.max {
        return Err(format!(
            "--fetch-version must be 13..{} (topic ids), not {}",
            fetch.max, o.fetch_version
        ));
    }
    if o.latency_record_bytes < 8 {
        return Err("--latency-record-bytes must be at least 8 (the send time)".into());
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Servers

/// A daemon under test, with its temp log dir when on disk.
struct Running {
    storage: Storage,
    /// The server (a Kafka broker stops when dropped).
    server: Server,
    /// Kept for the daemon's life (`log.dirs`); removed on drop.
    _dir: Option<tempfile::TempDir>,
    addr: String,
    pid: u32,
    client: Client,
    /// The catch-up topic, filled on first use.
    preloaded: Option<Preloaded>,
}

enum Server {
    Kcoord(common::Daemon),
    /// Held so that the broker lives as long as the bench needs it.
    Kafka(#[allow(dead_code)] kafka::KafkaBroker),
    /// kcoord in front of a Kafka broker, both held for the bench's life.
    Gateway(common::Daemon, #[allow(dead_code)] kafka::KafkaBroker),
}

async fn start_daemon(storage: Storage, options: &Options) -> Result<Running, String> {
    if storage == Storage::Kafka {
        let broker = kafka::KafkaBroker::start(&options.daemon_config)?;
        let (addr, pid) = (broker.bootstrap(), broker.pid());
        let client = fleet::connect_client(&addr).await?;
        return Ok(Running {
            storage,
            server: Server::Kafka(broker),
            _dir: None,
            addr,
            pid,
            client,
            preloaded: None,
        });
    }
    if storage == Storage::Gateway {
        return start_gateway(options).await;
    }
    let dir = match storage {
        Storage::Memory | Storage::Kafka | Storage::Gateway => None,
        Storage::Disk => Some(
            tempfile::Builder::new()
                .prefix("kcoord-bench-logs-")
                .tempdir()
                .map_err(|e| format!("cannot create a temp dir: {e}"))?,
        ),
    };
    let mut config = vec!["log.level=warn".to_string()];
    if let Some(dir) = &dir {
        config.push(format!("log.dirs={}", dir.path().display()));
    }
    config.extend(options.daemon_config.iter().cloned());
    let daemon = common::Daemon::start(&config.iter().map(String::as_str).collect::<Vec<_>>());
    let addr = daemon.bootstrap();
    let pid = daemon.pid().ok_or("the daemon has no pid")?;
    let client = fleet::connect_client(&addr).await?;
    Ok(Running {
        storage,
        server: Server::Kcoord(daemon),
        _dir: dir,
        addr,
        pid,
        client,
        preloaded: None,
    })
}

/// kcoord in gateway mode in front of a Kafka broker (`--daemon-config` lines go to the broker);
/// the measured server is kcoord.
async fn start_gateway(options: &Options) -> Result<Running, String> {
    let broker = kafka::KafkaBroker::start(&options.daemon_config)?;
    // The broker's id is 0: its port is the start itself.
    let port_start = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let config = [
        "log.level=warn".to_string(),
        format!("upstream.bootstrap.servers={}", broker.bootstrap()),
        format!("gateway.broker.port.start={port_start}"),
    ];
    let daemon = common::Daemon::start(&config.iter().map(String::as_str).collect::<Vec<_>>());
    let addr = daemon.bootstrap();
    let pid = daemon.pid().ok_or("the daemon has no pid")?;
    let client = fleet::connect_client(&addr).await?;
    Ok(Running {
        storage: Storage::Gateway,
        server: Server::Gateway(daemon, broker),
        _dir: None,
        addr,
        pid,
        client,
        preloaded: None,
    })
}

/// The discard server: this binary with `--discard-server`, a child process; with a
/// directory, it also writes what it reads to a file there.
struct Discard {
    child: Child,
    addr: String,
    pid: u32,
    /// `--write-dir`, kept for the server's life.
    _dir: Option<tempfile::TempDir>,
}

impl Discard {
    fn spawn(write: bool) -> Result<Discard, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let dir = if write {
            Some(
                tempfile::Builder::new()
                    .prefix("kcoord-bench-discard-")
                    .tempdir()
                    .map_err(|e| format!("cannot create a temp dir: {e}"))?,
            )
        } else {
            None
        };
        let mut command = Command::new(&exe);
        command.arg("--discard-server");
        if let Some(dir) = &dir {
            command.arg("--write-dir").arg(dir.path());
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {} --discard-server: {e}", exe.display()))?;
        let pid = child.id();
        let stdout = child
            .stdout
            .take()
            .ok_or("the discard server has no stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let addr = match (
            read,
            line.trim().strip_prefix("discard-server listening on "),
        ) {
            (Ok(_), Some(addr)) => addr.to_string(),
            (result, _) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the discard server did not start: {result:?}, first line {line:?}"
                ));
            }
        };
        Ok(Discard {
            child,
            addr,
            pid,
            _dir: dir,
        })
    }

    fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Discard {
    fn drop(&mut self) {
        // Closing its stdin ends it; the kill is for a stuck one.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--discard-server [--write-dir DIR]`: accepts loopback connections, reads every frame and
/// throws it away (with a directory: after writing everything read to a file there, one per
/// connection, deleted when the connection closes), answering each frame with a frame holding
/// only its correlation id. Prints its address, then runs until its stdin closes.
fn discard_server(write_dir: Option<std::path::PathBuf>) -> ExitCode {
    let listener = match std::net::TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("discard-server: bind: {e}");
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => {
            println!("discard-server listening on {addr}");
            let _ = std::io::stdout().flush();
        }
        Err(e) => {
            eprintln!("discard-server: local_addr: {e}");
            return ExitCode::FAILURE;
        }
    }
    std::thread::spawn(|| {
        let mut b = [0u8; 64];
        loop {
            match std::io::stdin().read(&mut b) {
                Ok(0) | Err(_) => std::process::exit(0),
                Ok(_) => {}
            }
        }
    });
    for (n, conn) in listener.incoming().enumerate() {
        match conn {
            Ok(stream) => {
                let path = write_dir
                    .as_ref()
                    .map(|d| d.join(format!("connection-{n}")));
                std::thread::spawn(move || {
                    let file = match &path {
                        Some(p) => match std::fs::File::create(p) {
                            Ok(f) => Some(f),
                            Err(e) => {
                                eprintln!("discard-server: create {}: {e}", p.display());
                                return;
                            }
                        },
                        None => None,
                    };
                    if let Err(e) = discard_connection(stream, file) {
                        eprintln!("discard-server: connection: {e}");
                    }
                    if let Some(p) = &path {
                        let _ = std::fs::remove_file(p);
                    }
                });
            }
            Err(e) => {
                eprintln!("discard-server: accept: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn discard_connection(
    mut stream: std::net::TcpStream,
    mut file: Option<std::fs::File>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = vec![0u8; 1 << 20];
    // Size (4), api key (2), version (2), correlation id (4) of the frame being read.
    let mut head = [0u8; 12];
    let mut head_len = 0;
    let mut skip = 0usize;
    let mut answers = Vec::with_capacity(64 * 8);
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => return Err(e),
        };
        if let Some(f) = &mut file {
            f.write_all(&buf[..n])?;
        }
        let mut i = 0;
        while i < n {
            if skip > 0 {
                let k = skip.min(n - i);
                skip -= k;
                i += k;
                continue;
            }
            let k = (head.len() - head_len).min(n - i);
            head[head_len..head_len + k].copy_from_slice(&buf[i..i + k]);
            head_len += k;
            i += k;
            if head_len == head.len() {
                let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
                let size = usize::try_from(size)
                    .ok()
                    .filter(|s| *s >= 8)
                    .ok_or_else(|| std::io::Error::other(format!("bad frame size {size}")))?;
                skip = size - 8;
                answers.extend_from_slice(&4i32.to_be_bytes());
                answers.extend_from_slice(&head[8..12]);
                head_len = 0;
            }
        }
        if !answers.is_empty() {
            stream.write_all(&answers)?;
            answers.clear();
        }
    }
}

fn cpu(pid: u32) -> Result<f64, String> {
    fleet::cpu_seconds(&pid.to_string()).ok_or_else(|| format!("cannot read /proc/{pid}/stat"))
}

fn self_cpu() -> Result<f64, String> {
    fleet::cpu_seconds("self").ok_or_else(|| "cannot read /proc/self/stat".to_string())
}

// ---------------------------------------------------------------------------------------------
// Produce

/// One produce run's outcome.
struct ProduceRun {
    stats: StreamStats,
    seconds: f64,
    server_cpu_s: f64,
    client_cpu_s: f64,
    records_per_batch: i32,
    batch_len: usize,
}

impl ProduceRun {
    fn wire_per_cpu(&self) -> f64 {
        if self.server_cpu_s > 0.0 {
            self.stats.batch_bytes as f64 / self.server_cpu_s
        } else {
            0.0
        }
    }
}

/// Drives `streams` (one connection each) against `addr` for one window, reading `pid`'s CPU
/// over the measured part. Gives the streams back.
async fn drive_streams(
    addr: &str,
    streams: Vec<ProduceStream>,
    drive: Drive,
    window: Window,
    pid: u32,
) -> Result<(Vec<ProduceStream>, StreamStats, f64, f64), String> {
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|s| {
            tokio::spawn(produce::run(
                secure::Dial::plaintext(addr),
                s,
                drive,
                window,
            ))
        })
        .collect();
    tokio::time::sleep_until(window.measure_from.into()).await;
    let (server0, client0) = (cpu(pid)?, self_cpu()?);
    tokio::time::sleep_until(window.end.into()).await;
    let (server1, client1) = (cpu(pid)?, self_cpu()?);
    let mut total = StreamStats::default();
    let mut back = Vec::new();
    let mut first_error = None;
    for task in tasks {
        let (stream, result) = task.await.map_err(|e| format!("producer task: {e}"))?;
        match result {
            Ok(stats) => total.add(&stats),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
        back.push(stream);
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok((back, total, server1 - server0, client1 - client0))
}

/// Streams to partitions 0..C of `topic`, each its own idempotent producer.
async fn kcoord_streams(
    running: &Running,
    topic: &str,
    partitions: usize,
    batch: &produce::Batch,
) -> Result<Vec<ProduceStream>, String> {
    let mut streams = Vec::with_capacity(partitions);
    for p in 0..partitions {
        let (producer_id, epoch) = produce::init_producer_id(&running.client.bootstrap()).await?;
        streams.push(ProduceStream::new(
            topic,
            p as i32,
            batch,
            producer_id,
            epoch,
            true,
        )?);
    }
    Ok(streams)
}

async fn produce_kcoord(
    running: &Running,
    options: &Options,
    batch: &produce::Batch,
    round: usize,
) -> Result<ProduceRun, String> {
    let topic = format!(
        "produce-{round}-{}-{}",
        batch.value_bytes / batch.records as usize,
        batch.compression.name()
    );
    let conn = running.client.bootstrap();
    produce::create_topics(&conn, &[(topic.clone(), options.connections as i32)], &[]).await?;
    let streams = kcoord_streams(running, &topic, options.connections, batch).await?;
    let batch_len = streams[0].batch_len();
    let window = Window::starting_now(options.warmup, options.seconds);
    let drive = Drive {
        inflight: options.inflight,
        pace: None,
        limit: None,
    };
    let (_, stats, server_cpu_s, client_cpu_s) =
        drive_streams(&running.addr, streams, drive, window, running.pid).await?;
    produce::delete_topics(&conn, &[topic]).await?;
    Ok(ProduceRun {
        stats,
        seconds: options.seconds,
        server_cpu_s,
        client_cpu_s,
        records_per_batch: batch.records,
        batch_len,
    })
}

async fn produce_discard(
    discard: &Discard,
    options: &Options,
    batch: &produce::Batch,
) -> Result<ProduceRun, String> {
    // The same frames as to the daemon (a producer id of the same size).
    let streams = (0..options.connections)
        .map(|p| {
            ProduceStream::new(
                "produce-discard",
                p as i32,
                batch,
                1000 + p as i64,
                0,
                false,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let batch_len = streams[0].batch_len();
    let window = Window::starting_now(options.warmup, options.seconds);
    let drive = Drive {
        inflight: options.inflight,
        pace: None,
        limit: None,
    };
    let (_, stats, server_cpu_s, client_cpu_s) =
        drive_streams(&discard.addr, streams, drive, window, discard.pid).await?;
    Ok(ProduceRun {
        stats,
        seconds: options.seconds,
        server_cpu_s,
        client_cpu_s,
        records_per_batch: batch.records,
        batch_len,
    })
}

fn produce_line(
    target: &str,
    storage: Option<Storage>,
    round: usize,
    record_bytes: usize,
    compression: Compression,
    options: &Options,
    r: &mut ProduceRun,
) -> String {
    r.stats.latencies_ns.sort_unstable();
    let s = &r.stats;
    let per_s = |x: u64| x as f64 / r.seconds;
    let per_cpu = |x: u64| {
        if r.server_cpu_s > 0.0 {
            format!("{:.1}", x as f64 / r.server_cpu_s / 1e6)
        } else {
            "null".into()
        }
    };
    format!(
        r#"{{"bench":"data_plane","measure":"produce","target":"{target}","storage":{},"round":{round},"record_bytes":{record_bytes},"compression":"{}","connections":{},"inflight":{},"records_per_batch":{},"batch_wire_bytes":{},"seconds":{:.1},"requests":{},"records_per_s":{:.0},"mb_per_s":{:.1},"wire_mb_per_s":{:.1},"server_cpu_s":{:.2},"server_cores":{:.2},"wire_mb_per_server_cpu_s":{},"mb_per_server_cpu_s":{},"client_cpu_s":{:.2},"p50_us":{:.0},"p99_us":{:.0},"max_us":{:.0}}}"#,
        storage.map_or_else(|| "null".to_string(), |s| format!("\"{}\"", s.name())),
        compression.name(),
        options.connections,
        options.inflight,
        r.records_per_batch,
        r.batch_len,
        r.seconds,
        s.requests,
        per_s(s.records),
        per_s(s.value_bytes) / 1e6,
        per_s(s.batch_bytes) / 1e6,
        r.server_cpu_s,
        r.server_cpu_s / r.seconds,
        per_cpu(s.batch_bytes),
        per_cpu(s.value_bytes),
        r.client_cpu_s,
        produce::percentile_us(&s.latencies_ns, 50.0),
        produce::percentile_us(&s.latencies_ns, 99.0),
        s.latencies_ns.last().map_or(0.0, |ns| f64::from(*ns) / 1e3),
    )
}

// ---------------------------------------------------------------------------------------------
// Consumer catch-up

struct Preloaded {
    topic: String,
    topic_id: Uuid,
    /// Log end offset per partition.
    ends: Vec<i64>,
    bytes: u64,
    seconds: f64,
}

async fn preload(running: &Running, options: &Options) -> Result<Preloaded, String> {
    let topic = "catchup".to_string();
    let partitions = options.preload_partitions;
    let conn = running.client.bootstrap();
    let ids = produce::create_topics(&conn, &[(topic.clone(), partitions as i32)], &[]).await?;
    let batch = produce::build_batch(1024, options.batch_bytes, Compression::None, 7)?;
    let streams = kcoord_streams(running, &topic, partitions, &batch).await?;
    let per_partition = options.preload_mb * 1e6 / partitions as f64;
    let limit = (per_partition / streams[0].batch_len() as f64)
        .ceil()
        .max(1.0) as u64;
    let started = Instant::now();
    let window = Window {
        measure_from: started,
        end: started + Duration::from_secs(3600),
    };
    let drive = Drive {
        inflight: options.inflight,
        pace: None,
        limit: Some(limit),
    };
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|s| {
            tokio::spawn(produce::run(
                secure::Dial::plaintext(running.addr.as_str()),
                s,
                drive,
                window,
            ))
        })
        .collect();
    let mut ends = Vec::with_capacity(partitions);
    let mut bytes = 0;
    for task in tasks {
        let (stream, result) = task.await.map_err(|e| format!("preload task: {e}"))?;
        let stats = result?;
        if stats.total_requests != limit {
            return Err(format!(
                "preload: {} of {limit} batches answered",
                stats.total_requests
            ));
        }
        bytes += stats.total_requests * stream.batch_len() as u64;
        ends.push(stream.end_offset());
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "data_plane: preloaded {:.0} MB into {partitions} partitions of {topic} ({}) in {seconds:.1} s",
        bytes as f64 / 1e6,
        running.storage.name()
    );
    Ok(Preloaded {
        topic,
        topic_id: ids[0],
        ends,
        bytes,
        seconds,
    })
}

/// What one consumer read.
#[derive(Default)]
struct Consumed {
    bytes: u64,
    records: u64,
    fetches: u64,
}

/// Reads one frame (size prefix, then exactly that many bytes).
async fn read_frame(reader: &mut tokio::net::tcp::OwnedReadHalf) -> Result<Bytes, String> {
    let mut size = [0u8; 4];
    tokio::time::timeout(IO_TIMEOUT, reader.read_exact(&mut size))
        .await
        .map_err(|_| format!("no answer for {IO_TIMEOUT:?}"))?
        .map_err(|e| format!("read: {e}"))?;
    let size =
        usize::try_from(i32::from_be_bytes(size)).map_err(|_| "negative frame size".to_string())?;
    let mut frame = BytesMut::with_capacity(size);
    let mut limited = reader.take(size as u64);
    while frame.len() < size {
        let n = tokio::time::timeout(IO_TIMEOUT, limited.read_buf(&mut frame))
            .await
            .map_err(|_| format!("no answer for {IO_TIMEOUT:?}"))?
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
    }
    Ok(frame.freeze())
}

/// A consumer's Fetch of these partitions at these offsets.
fn fetch_request(
    topic: &str,
    topic_id: Uuid,
    partitions: &[(i32, i64)],
    partition_max_bytes: i32,
    session: (i32, i32),
) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        replica_state: ReplicaState {
            replica_id: -1,
            replica_epoch: -1,
            ..Default::default()
        },
        max_wait_ms: MAX_WAIT_MS,
        min_bytes: 1,
        max_bytes: FETCH_MAX_BYTES,
        isolation_level: 0,
        session_id: session.0,
        session_epoch: session.1,
        topics: if partitions.is_empty() {
            Vec::new()
        } else {
            vec![FetchTopic {
                topic: topic.into(),
                topic_id,
                partitions: partitions
                    .iter()
                    .map(|&(partition, fetch_offset)| FetchPartition {
                        partition,
                        current_leader_epoch: -1,
                        fetch_offset,
                        last_fetched_epoch: -1,
                        log_start_offset: -1,
                        partition_max_bytes,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }]
        },
        ..Default::default()
    }
}

/// Whole batches of one partition's records, which must start at `offset`; calls `each` with
/// every batch; returns the offset after the last whole batch.
fn walk_batches(
    records: Bytes,
    mut offset: i64,
    mut each: impl FnMut(&kcoord_record_batches::BatchHeader, Bytes) -> Result<(), String>,
) -> Result<i64, String> {
    for item in BatchSplitter::new(records) {
        match item {
            Ok((header, batch)) => {
                if header.base_offset != offset {
                    return Err(format!(
                        "a batch at offset {}, expected {offset}",
                        header.base_offset
                    ));
                }
                offset = header.next_offset();
                each(&header, batch)?;
            }
            // A partial batch at the end of a partition's share: fetched again next time.
            Err(kcoord_record_batches::RecordsError::Truncated { .. }) => break,
            Err(e) => return Err(format!("fetched records: {e}")),
        }
    }
    Ok(offset)
}

async fn consume_to_end(
    addr: String,
    topic: String,
    topic_id: Uuid,
    mut parts: Vec<(i32, i64, i64)>, // (partition, next offset, end offset)
    partition_max_bytes: i32,
    version: i16,
) -> Result<Consumed, String> {
    let tcp = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(&addr))
        .await
        .map_err(|_| format!("connect to {addr}: timed out"))?
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (mut reader, mut writer) = tcp.into_split();
    let mut consumed = Consumed::default();
    let mut out = BytesMut::new();
    let mut id = 0;
    loop {
        let pending: Vec<(i32, i64)> = parts
            .iter()
            .filter(|(_, next, end)| next < end)
            .map(|&(p, next, _)| (p, next))
            .collect();
        if pending.is_empty() {
            return Ok(consumed);
        }
        let request = fetch_request(&topic, topic_id, &pending, partition_max_bytes, (0, -1));
        id += 1;
        out.clear();
        fleet::encode_request(ApiKey::Fetch, version, id, &request, &mut out)?;
        writer
            .write_all(&out)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let frame = read_frame(&mut reader).await?;
        let response: FetchResponse = fleet::decode_response(ApiKey::Fetch, version, id, frame)?;
        consumed.fetches += 1;
        if response.error_code != 0 {
            return Err(format!("Fetch: error {}", response.error_code));
        }
        let mut progress = false;
        for t in response.responses {
            if t.topic_id != topic_id {
                return Err(format!("Fetch answer for topic id {}", t.topic_id));
            }
            for p in t.partitions {
                if p.error_code != 0 {
                    return Err(format!(
                        "Fetch {topic}-{}: error {}",
                        p.partition_index, p.error_code
                    ));
                }
                let slot = parts
                    .iter_mut()
                    .find(|(i, _, _)| *i == p.partition_index)
                    .ok_or_else(|| format!("Fetch answer for partition {}", p.partition_index))?;
                let Some(records) = p.records else { continue };
                let (bytes, count) = (&mut consumed.bytes, &mut consumed.records);
                let next = walk_batches(records.to_bytes(), slot.1, |h, b| {
                    *bytes += b.len() as u64;
                    *count += h.record_count as u64;
                    Ok(())
                })?;
                progress |= next > slot.1;
                slot.1 = next;
            }
        }
        if !progress {
            return Err(format!(
                "a Fetch of {pending:?} brought no whole batch (partition_max_bytes {partition_max_bytes})"
            ));
        }
    }
}

async fn catch_up(
    running: &Running,
    options: &Options,
    partition_max_bytes: usize,
    round: usize,
) -> Result<String, String> {
    let pre = running.preloaded.as_ref().ok_or("not preloaded")?;
    let consumers = options.consumers.min(pre.ends.len());
    let mut shares: Vec<Vec<(i32, i64, i64)>> = vec![Vec::new(); consumers];
    for (p, &end) in pre.ends.iter().enumerate() {
        shares[p % consumers].push((p as i32, 0, end));
    }
    let pmb = i32::try_from(partition_max_bytes).map_err(|_| "--partition-max-bytes too big")?;
    let (server0, client0) = (cpu(running.pid)?, self_cpu()?);
    let started = Instant::now();
    let tasks: Vec<_> = shares
        .into_iter()
        .map(|share| {
            tokio::spawn(consume_to_end(
                running.addr.clone(),
                pre.topic.clone(),
                pre.topic_id,
                share,
                pmb,
                options.fetch_version,
            ))
        })
        .collect();
    let mut total = Consumed::default();
    for task in tasks {
        let c = task.await.map_err(|e| format!("consumer task: {e}"))??;
        total.bytes += c.bytes;
        total.records += c.records;
        total.fetches += c.fetches;
    }
    let seconds = started.elapsed().as_secs_f64();
    let (server1, client1) = (cpu(running.pid)?, self_cpu()?);
    let server_cpu_s = server1 - server0;
    if total.bytes != pre.bytes {
        return Err(format!(
            "catch-up read {} bytes, {} were produced",
            total.bytes, pre.bytes
        ));
    }
    let gb = total.bytes as f64 / 1e9;
    let per_cpu = if server_cpu_s > 0.0 {
        gb / server_cpu_s
    } else {
        f64::INFINITY
    };
    Ok(format!(
        r#"{{"bench":"data_plane","measure":"catchup","storage":"{}","round":{round},"partitions":{},"consumers":{consumers},"fetch_version":{},"partition_max_bytes":{partition_max_bytes},"max_bytes":{FETCH_MAX_BYTES},"gb":{gb:.3},"records":{},"fetches":{},"seconds":{seconds:.2},"gb_per_s":{:.2},"server_cpu_s":{server_cpu_s:.2},"gb_per_server_cpu_s":{},"client_cpu_s":{:.2},"goal_gb_per_server_cpu_s":{GOAL_CATCHUP_GB_PER_CPU_S},"goal_met":{},"preload_seconds":{:.1}}}"#,
        running.storage.name(),
        pre.ends.len(),
        options.fetch_version,
        total.records,
        total.fetches,
        gb / seconds,
        if per_cpu.is_finite() {
            format!("{per_cpu:.2}")
        } else {
            "null".into()
        },
        client1 - client0,
        if per_cpu.is_finite() {
            (per_cpu >= GOAL_CATCHUP_GB_PER_CPU_S).to_string()
        } else {
            "null".into()
        },
        pre.seconds,
    ))
}

// ---------------------------------------------------------------------------------------------
// Produce-to-consume latency

/// Nanoseconds on the bench's monotonic clock.
fn clock_ns(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// One record per request at a fixed rate, the send time in the value; returns how many were
/// sent (every one answered without error).
#[allow(clippy::too_many_arguments)]
async fn latency_producer(
    addr: String,
    topic: String,
    producer: (i64, i16),
    record_bytes: usize,
    rate: f64,
    end: Instant,
    epoch: Instant,
    sent_total: Arc<AtomicU64>,
) -> Result<u64, String> {
    let tcp = TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (mut reader, mut writer) = tcp.into_split();
    let (ids_tx, mut ids_rx) = tokio::sync::mpsc::unbounded_channel::<i32>();
    let write = async move {
        let mut interval = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut padding = produce::record_value(record_bytes, 3);
        let mut sequence = 0i32;
        let mut out = BytesMut::new();
        let mut id = 0;
        while Instant::now() < end {
            interval.tick().await;
            let mut builder = BatchBuilder::new(BatchOptions {
                producer_id: producer.0,
                producer_epoch: producer.1,
                base_sequence: sequence,
                ..Default::default()
            });
            padding[..8].copy_from_slice(&clock_ns(epoch).to_be_bytes());
            builder
                .push(produce::now_ms(), None, Some(&padding), &[])
                .map_err(|e| format!("batch: {e}"))?;
            let batch = builder.build().map_err(|e| format!("batch: {e}"))?;
            let request = produce::produce_request(&topic, 0, batch);
            out.clear();
            fleet::encode_request(
                ApiKey::Produce,
                produce::PRODUCE_VERSION,
                id,
                &request,
                &mut out,
            )?;
            writer
                .write_all(&out)
                .await
                .map_err(|e| format!("write: {e}"))?;
            ids_tx.send(id).map_err(|_| "the answer reader is gone")?;
            id += 1;
            sequence += 1;
        }
        Ok::<u64, String>(sequence as u64)
    };
    let read = async move {
        let mut answered = 0u64;
        while let Some(id) = ids_rx.recv().await {
            let frame = read_frame(&mut reader).await?;
            let base_offset = produce::produce_answer(frame, id)?;
            if base_offset != answered as i64 {
                return Err(format!(
                    "Produce answer at offset {base_offset}, expected {answered}"
                ));
            }
            answered += 1;
        }
        Ok::<u64, String>(answered)
    };
    let (sent, answered) = tokio::join!(write, read);
    let (sent, answered) = (sent?, answered?);
    if sent != answered {
        return Err(format!("{answered} of {sent} latency records answered"));
    }
    sent_total.store(sent, Ordering::Release);
    Ok(sent)
}

/// Long-polls the partition until every record the producer sent came back; latencies (ns)
/// of the records sent at or after `count_from` ns.
#[allow(clippy::too_many_arguments)]
async fn latency_consumer(
    addr: String,
    topic: String,
    topic_id: Uuid,
    version: i16,
    incremental: bool,
    epoch: Instant,
    count_from: u64,
    sent_total: Arc<AtomicU64>,
    deadline: Instant,
) -> Result<(Vec<u64>, u64, u64), String> {
    let tcp = TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (mut reader, mut writer) = tcp.into_split();
    let mut latencies = Vec::new();
    let mut offset = 0i64;
    let mut received = 0u64;
    let mut fetches = 0u64;
    // (session id, epoch): a new session, then incremental fetches naming the partition
    // only when its offset moved.
    let mut session = if incremental { (0, 0) } else { (0, -1) };
    let mut requested_offset: Option<i64> = None;
    let mut out = BytesMut::new();
    let mut id = 0;
    loop {
        let done = sent_total.load(Ordering::Acquire);
        if done != u64::MAX && received >= done {
            return Ok((latencies, received, fetches));
        }
        if Instant::now() > deadline {
            return Err(format!("latency: only {received} records came back"));
        }
        let name_partition = !incremental || session.0 == 0 || requested_offset != Some(offset);
        let partitions: Vec<(i32, i64)> = if name_partition {
            vec![(0, offset)]
        } else {
            Vec::new()
        };
        let request = fetch_request(&topic, topic_id, &partitions, 1 << 20, session);
        id += 1;
        out.clear();
        fleet::encode_request(ApiKey::Fetch, version, id, &request, &mut out)?;
        writer
            .write_all(&out)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let frame = read_frame(&mut reader).await?;
        let now = clock_ns(epoch);
        let response: FetchResponse = fleet::decode_response(ApiKey::Fetch, version, id, frame)?;
        fetches += 1;
        if response.error_code != 0 {
            return Err(format!(
                "Fetch: error {} (session {session:?})",
                response.error_code
            ));
        }
        requested_offset = Some(offset);
        if incremental {
            if session.0 == 0 && response.session_id == 0 && session.1 == 0 {
                return Err("the daemon gave no fetch session".into());
            }
            session = (response.session_id, session.1 + 1);
        }
        for t in response.responses {
            for p in t.partitions {
                if p.error_code != 0 {
                    return Err(format!(
                        "Fetch {topic}-{}: error {}",
                        p.partition_index, p.error_code
                    ));
                }
                let Some(records) = p.records else { continue };
                offset = walk_batches(records.to_bytes(), offset, |_, batch| {
                    let batch = RecordBatch::parse(batch).map_err(|e| format!("batch: {e}"))?;
                    for r in batch
                        .decode_records(1 << 24)
                        .map_err(|e| format!("records: {e}"))?
                    {
                        let value = r.value.ok_or("a latency record without a value")?;
                        let sent = value
                            .get(..8)
                            .map(|b| {
                                u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                            })
                            .ok_or("a latency record shorter than 8 bytes")?;
                        received += 1;
                        if sent >= count_from {
                            latencies.push(now.saturating_sub(sent));
                        }
                    }
                    Ok(())
                })?;
            }
        }
    }
}

async fn latency(running: &Running, options: &Options, round: usize) -> Result<String, String> {
    let topic = format!("latency-{round}");
    let conn = running.client.bootstrap();
    let ids = produce::create_topics(&conn, &[(topic.clone(), 1)], &[]).await?;
    let producer = produce::init_producer_id(&conn).await?;
    let epoch = Instant::now();
    let count_from = clock_ns(epoch) + (options.warmup * 1e9) as u64;
    let end = Instant::now() + Duration::from_secs_f64(options.warmup + options.latency_seconds);
    let sent_total = Arc::new(AtomicU64::new(u64::MAX));
    let (server0, client0) = (cpu(running.pid)?, self_cpu()?);
    let consumer = tokio::spawn(latency_consumer(
        running.addr.clone(),
        topic.clone(),
        ids[0],
        options.fetch_version,
        options.latency_session,
        epoch,
        count_from,
        Arc::clone(&sent_total),
        end + Duration::from_secs(30),
    ));
    let sent = latency_producer(
        running.addr.clone(),
        topic.clone(),
        producer,
        options.latency_record_bytes,
        options.latency_rate,
        end,
        epoch,
        Arc::clone(&sent_total),
    )
    .await;
    if sent.is_err() {
        // Let the consumer stop at once.
        sent_total.store(0, Ordering::Release);
    }
    let consumed = consumer.await.map_err(|e| format!("consumer task: {e}"))?;
    let sent = sent?;
    let (mut latencies, received, fetches) = consumed?;
    let (server1, client1) = (cpu(running.pid)?, self_cpu()?);
    produce::delete_topics(&conn, &[topic]).await?;
    if received != sent {
        return Err(format!(
            "latency: {received} records came back, {sent} were sent"
        ));
    }
    latencies.sort_unstable();
    let pct = |p: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * latencies.len() as f64).ceil() as usize;
        latencies[rank.clamp(1, latencies.len()) - 1] as f64 / 1000.0
    };
    Ok(format!(
        r#"{{"bench":"data_plane","measure":"latency","storage":"{}","round":{round},"session":"{}","rate_per_s":{},"record_bytes":{},"seconds":{:.1},"records":{sent},"measured":{},"fetches":{fetches},"p50_us":{:.0},"p99_us":{:.0},"p999_us":{:.0},"max_us":{:.0},"server_cpu_s":{:.2},"client_cpu_s":{:.2}}}"#,
        running.storage.name(),
        if options.latency_session {
            "incremental"
        } else {
            "sessionless"
        },
        options.latency_rate,
        options.latency_record_bytes,
        options.latency_seconds,
        latencies.len(),
        pct(50.0),
        pct(99.0),
        pct(99.9),
        latencies.last().map_or(0.0, |&ns| ns as f64 / 1000.0),
        server1 - server0,
        client1 - client0,
    ))
}

// ---------------------------------------------------------------------------------------------
// RSS per idle partition

async fn rss(storage: Storage, options: &Options, round: usize) -> Result<String, String> {
    let running = start_daemon(storage, options).await?;
    let result = rss_of(&running, options, round).await;
    let Running { server, client, .. } = running;
    drop(client);
    if let Server::Kcoord(daemon) = server {
        if !daemon.is_alive() {
            return Err(format!("the daemon died\n{}", daemon.stderr_log()));
        }
        daemon.stop();
    }
    result
}

async fn rss_of(running: &Running, options: &Options, round: usize) -> Result<String, String> {
    let pid = running.pid;
    let kib = |field: &str| {
        fleet::proc_status_kib(pid, field).ok_or_else(|| format!("cannot read {field} of {pid}"))
    };
    let settle = Duration::from_secs_f64(options.settle);
    tokio::time::sleep(settle).await;
    let (empty, empty_anon) = (kib("VmRSS")?, kib("RssAnon")?);
    let started = Instant::now();
    let names: Vec<(String, i32)> = (0..options.rss_topics)
        .map(|t| (format!("rss-{t}"), options.rss_partitions as i32))
        .collect();
    for chunk in names.chunks(TOPICS_PER_REQUEST) {
        produce::create_topics(&running.client.bootstrap(), chunk, &[]).await?;
    }
    let create_seconds = started.elapsed().as_secs_f64();
    tokio::time::sleep(settle).await;
    let (rss, anon) = (kib("VmRSS")?, kib("RssAnon")?);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let partitions = options.rss_topics * options.rss_partitions;
    let per =
        |now: u64, before: u64| now.saturating_sub(before) as f64 * 1024.0 / partitions as f64;
    Ok(format!(
        r#"{{"bench":"data_plane","measure":"rss","storage":"{}","round":{round},"topics":{},"partitions_per_topic":{},"partitions":{partitions},"empty_rss_kib":{empty},"rss_kib":{rss},"bytes_per_partition":{:.0},"empty_rss_anon_kib":{empty_anon},"rss_anon_kib":{anon},"anon_bytes_per_partition":{:.0},"open_fds":{fds},"create_seconds":{create_seconds:.2}}}"#,
        running.storage.name(),
        options.rss_topics,
        options.rss_partitions,
        per(rss, empty),
        per(anon, empty_anon),
    ))
}

// ---------------------------------------------------------------------------------------------
// Main

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--discard-server") {
        let dir = args
            .iter()
            .position(|a| a == "--write-dir")
            .and_then(|i| args.get(i + 1))
            .map(std::path::PathBuf::from);
        return discard_server(dir);
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("data_plane: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("data_plane: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(bench(&options));
    drop(runtime);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("data_plane: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn bench(options: &Options) -> Result<(), String> {
    let has = |m: Measure| options.measures.contains(&m);
    let mut daemons = Vec::new();
    if has(Measure::Produce) || has(Measure::CatchUp) || has(Measure::Latency) {
        for &storage in &options.storages {
            daemons.push(start_daemon(storage, options).await?);
        }
    }
    let mut discards = Vec::new();
    if has(Measure::Produce) && options.discard {
        discards.push(Discard::spawn(false)?);
        if options.discard_write {
            discards.push(Discard::spawn(true)?);
        }
    }
    let result = rounds(options, &mut daemons, &discards).await;
    for d in &mut discards {
        if !d.is_alive() {
            return Err("a discard server died".into());
        }
    }
    drop(discards);
    for running in daemons {
        let Running { server, client, .. } = running;
        drop(client);
        let daemon = match server {
            Server::Kcoord(daemon) | Server::Gateway(daemon, _) => daemon,
            Server::Kafka(_) => continue,
        };
        if !daemon.is_alive() {
            return Err(format!(
                "the daemon died during the runs\n{}",
                daemon.stderr_log()
            ));
        }
        if let Err(e) = &result {
            eprintln!("--- daemon stderr ---\n{}\n({e})", daemon.stderr_log());
        }
        daemon.stop();
    }
    result?;
    if has(Measure::Rss) {
        for round in 1..=options.rounds {
            // A JVM's resident set says nothing of its partitions.
            let kcoords_own = |s: &&Storage| !matches!(**s, Storage::Kafka | Storage::Gateway);
            for &storage in options.storages.iter().filter(kcoords_own) {
                println!("{}", rss(storage, options, round).await?);
            }
        }
    }
    Ok(())
}

/// One produce configuration against every daemon and discard server: kcoord first in odd
/// rounds, the discard servers first in even ones (so that neither side always gets the
/// memory the other just freed), then the comparison lines.
#[allow(clippy::too_many_arguments)]
async fn produce_round(
    options: &Options,
    daemons: &[Running],
    discards: &[Discard],
    batch: &produce::Batch,
    round: usize,
    record_bytes: usize,
    compression: Compression,
) -> Result<(), String> {
    // (index, is a discard server)
    let mut order: Vec<(usize, bool)> = (0..daemons.len())
        .map(|i| (i, false))
        .chain((0..discards.len()).map(|i| (i, true)))
        .collect();
    if round % 2 == 0 {
        order.reverse();
    }
    let mut results: Vec<(Storage, f64)> = Vec::new();
    let mut limits = vec![0.0; discards.len()];
    for (i, is_discard) in order {
        if is_discard {
            let mut run = produce_discard(&discards[i], options, batch).await?;
            let name = if i == 0 { "discard" } else { "discard_write" };
            println!(
                "{}",
                produce_line(
                    name,
                    None,
                    round,
                    record_bytes,
                    compression,
                    options,
                    &mut run
                )
            );
            limits[i] = run.wire_per_cpu();
        } else {
            let running = &daemons[i];
            let mut run = produce_kcoord(running, options, batch, round).await?;
            println!(
                "{}",
                produce_line(
                    "kcoord",
                    Some(running.storage),
                    round,
                    record_bytes,
                    compression,
                    options,
                    &mut run
                )
            );
            results.push((running.storage, run.wire_per_cpu()));
        }
    }
    let Some(&limit) = limits.first() else {
        return Ok(());
    };
    for (storage, per_cpu) in results {
        let ratio = if limit > 0.0 { per_cpu / limit } else { 0.0 };
        let goal = storage == Storage::Disk && record_bytes == 1024;
        let mut line = String::new();
        let _ = write!(
            line,
            r#"{{"bench":"data_plane","measure":"produce_vs_discard","storage":"{}","round":{round},"record_bytes":{record_bytes},"compression":"{}","kcoord_wire_mb_per_server_cpu_s":{:.1},"discard_wire_mb_per_server_cpu_s":{:.1},"ratio":{ratio:.3},"goal_ratio":{GOAL_PRODUCE_RATIO},"goal_met":{}"#,
            storage.name(),
            compression.name(),
            per_cpu / 1e6,
            limit / 1e6,
            if goal {
                (ratio >= GOAL_PRODUCE_RATIO).to_string()
            } else {
                "null".into()
            },
        );
        if let Some(&write_limit) = limits.get(1) {
            let _ = write!(
                line,
                r#","discard_write_wire_mb_per_server_cpu_s":{:.1},"ratio_to_discard_write":{:.3}"#,
                write_limit / 1e6,
                if write_limit > 0.0 {
                    per_cpu / write_limit
                } else {
                    0.0
                },
            );
        }
        line.push('}');
        println!("{line}");
    }
    Ok(())
}

async fn rounds(
    options: &Options,
    daemons: &mut [Running],
    discards: &[Discard],
) -> Result<(), String> {
    let has = |m: Measure| options.measures.contains(&m);
    for round in 1..=options.rounds {
        if has(Measure::Produce) {
            for &record_bytes in &options.record_bytes {
                for &compression in &options.compressions {
                    let batch = produce::build_batch(
                        record_bytes,
                        options.batch_bytes,
                        compression,
                        round as u64,
                    )?;
                    produce_round(
                        options,
                        daemons,
                        discards,
                        &batch,
                        round,
                        record_bytes,
                        compression,
                    )
                    .await?;
                }
            }
        }
        if has(Measure::CatchUp) {
            for running in daemons.iter_mut() {
                if running.preloaded.is_none() {
                    running.preloaded = Some(preload(running, options).await?);
                }
                for &pmb in &options.partition_max_bytes {
                    println!("{}", catch_up(running, options, pmb, round).await?);
                }
            }
        }
        if has(Measure::Latency) {
            for running in daemons.iter() {
                println!("{}", latency(running, options, round).await?);
            }
        }
    }
    Ok(())
}
