//! Transactions bench (issue "Transactions and exactly-once"): transactional produce and
//! read_committed catch-up, kcoord against Apache Kafka 4.4 in one run; one JSON line per
//! measurement.
//!
//! ```text
//! cargo bench --bench transactions                                  # both measures, 4 rounds
//! cargo bench --bench transactions -- --measure produce --rounds 6 --seconds 8
//! cargo bench --bench transactions -- --measure catchup --servers kcoord --fill-mb 256
//! ```
//!
//! The bench starts the `kcoord` binary Cargo built (or `KCOORD_BIN`), its partitions on disk
//! (`log.dirs` in a temp dir; `--kcoord-storage memory` keeps them in memory), with
//! `log.level=warn` and the `--daemon-config KEY=VALUE` lines, and an Apache Kafka 4.4 broker
//! (`support/kafka.rs`: interop's `KafkaBrokerMain` in its own JVM, its log on disk, Kafka's
//! flush policy, `transaction.state.log.replication.factor=1` and `min.isr=1`, plus the
//! `--kafka-config KEY=VALUE` lines); `--servers kcoord` leaves Kafka out. Server CPU is user +
//! system time of the server process from `/proc/<pid>/stat` (10 ms ticks) over the measured
//! window. MB = 10^6 bytes, MiB = 2^20. `--pin-servers CPUS` / `--pin-load CPUS` pin them with
//! `taskset` (not by default: both share the two cores, one at a time).
//!
//! **Transactional produce** (`produce`): one librdkafka producer per server (the `rdkafka`
//! crate, `transactional.id`, acks=all, no compression, `linger.ms` `--linger-ms` (5),
//! `queue.buffering.max.kbytes` `--queue-kbytes` (8192), so a commit has little to flush)
//! writes `--record-bytes` (1024) records, null keys, round-robin over the `--partitions` (10)
//! partitions of a topic, as fast as it can, and commits every `--commit-ms` (100) ms:
//! begin, send for 100 ms, commit (which waits for every record), again. Before round 1 each
//! server gets `--warmup` (20) seconds of this load (Kafka's JIT), in windows of 5 s on a
//! topic each (a `warmup` line each). Each round, each server (kcoord first in odd rounds,
//! Kafka first in even ones): `--ramp` (1) s of transactions, then transactions for
//! `--seconds` (8) s measured from before a begin to after a commit. Every round (and the warm-up) writes to a new topic,
//! deleted after it (a round writes gigabytes), then a 2 s pause; Kafka runs with
//! `log.segment.delete.delay.ms=0` so that it too deletes the files then, not a minute later
//! within another measurement. Reported: MB of committed record values per server
//! CPU-second, and a `produce_vs_kafka` line per round with the ratio (goal >= 2). The
//! producer is a `BaseProducer` polled by the bench's thread (see [`TxnProducer`]).
//!
//! **Read committed against read uncommitted** (`catchup`): once per server, a topic of
//! `--partitions` partitions is filled with `--fill-mb` (512) MB of the same records in
//! transactions of `--txn-records` (1000) records, every `--abort-every` (5)th aborted (after a
//! flush, so its records are in the log). Each round, for each isolation level (in alternating
//! order), `--consumers` (2) raw connections read their share of the partitions from offset 0
//! to the log end, `--passes` (12) times, one Fetch v16 in flight each, sessionless,
//! partition_max_bytes `--partition-max-bytes` (1 MiB), max_bytes 50 MiB. The read_committed
//! consumer drops the aborted transactions' batches as Kafka's consumer does (the response's
//! aborted transactions, then the abort markers) and must see exactly the committed records;
//! the read_uncommitted one must see every record. Reported: MB of record batches (all of
//! them, aborted and markers included: the server sends the same bytes either way) per server
//! CPU-second, delivered records per server CPU-second, and a `read_committed_vs_uncommitted`
//! line per server and round with the ratio of the two (goal for kcoord: >= 0.9).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) both measures run against kcoord
//! alone in a tiny configuration (0.3 s windows, 2 MB of fill), and the process fails only on
//! an error, never on a missed goal; unknown arguments (libtest's) are ignored there.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/kafka.rs"]
mod kafka;
#[path = "support/produce.rs"]
mod produce;
#[path = "support/secure.rs"]
mod secure;
#[path = "support/txn_options.rs"]
mod txn_options;
#[path = "support/txn_read.rs"]
mod txn_read;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kcoord_client::Client;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DefaultProducerContext, Producer};
use txn_options::{Measure, Options, ServerKind};

const GOAL_PRODUCE_RATIO: f64 = 2.0;
pub const TXN_TIMEOUT: Duration = Duration::from_secs(60);
/// The pause after deleting a produce topic.
const AFTER_DELETE: Duration = Duration::from_secs(2);

/// A `BaseProducer`, polled by the bench's thread (see [`drain`]).
pub type TxnProducer = BaseProducer<DefaultProducerContext>;
/// Successful sends between two `poll`s of the delivery reports.
const POLL_EVERY: u64 = 256;

// ---------------------------------------------------------------------------------------------
// Servers

/// A server under test: a kcoord daemon or a Kafka broker, with its transactional producer.
pub struct Server {
    pub kind: ServerKind,
    pub addr: String,
    pub pid: u32,
    pub client: Client,
    pub producer: TxnProducer,
    daemon: Option<common::Daemon>,
    _kafka: Option<kafka::KafkaBroker>,
    /// `log.dirs` of a daemon on disk, removed on drop.
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

/// Kafka deletes a deleted topic's files at once rather than a minute later (within another
/// measurement), as kcoord does.
fn start_kafka(options: &Options) -> Result<kafka::KafkaBroker, String> {
    let mut settings = vec!["log.segment.delete.delay.ms=0".to_string()];
    settings.extend(options.kafka_config.iter().cloned());
    kafka::KafkaBroker::start(&settings)
}

fn start_kcoord(options: &Options) -> Result<(common::Daemon, Option<tempfile::TempDir>), String> {
    let dir = if options.kcoord_on_disk {
        Some(
            tempfile::Builder::new()
                .prefix("kcoord-bench-txn-")
                .tempdir()
                .map_err(|e| format!("cannot create a temp dir: {e}"))?,
        )
    } else {
        None
    };
    let mut config = vec!["log.level=warn".to_string()];
    if let Some(dir) = &dir {
        config.push(format!("log.dirs={}", dir.path().display()));
    }
    config.extend(options.daemon_config.iter().cloned());
    let lines: Vec<&str> = config.iter().map(String::as_str).collect();
    let daemon = common::Daemon::try_start_with_config(&common::config_text(&lines))?;
    Ok((daemon, dir))
}

fn start_server(
    kind: ServerKind,
    options: &Options,
    rt: &tokio::runtime::Runtime,
) -> Result<Server, String> {
    let (daemon, broker, dir) = match kind {
        ServerKind::Kcoord => {
            let (daemon, dir) = start_kcoord(options)?;
            (Some(daemon), None, dir)
        }
        ServerKind::Kafka => (None, Some(start_kafka(options)?), None),
    };
    let (addr, pid) = match (&daemon, &broker) {
        (Some(d), _) => (d.bootstrap(), d.pid().ok_or("the daemon has no pid")?),
        (_, Some(b)) => (b.bootstrap(), b.pid()),
        _ => unreachable!("one of the two was started"),
    };
    if let Some(cpus) = &options.pin_servers {
        fleet::pin(pid, cpus)?;
    }
    let client = rt.block_on(fleet::connect_client(&addr))?;
    let producer = transactional_producer(&addr, &format!("bench-{}", kind.name()), options)?;
    Ok(Server {
        kind,
        addr,
        pid,
        client,
        producer,
        daemon,
        _kafka: broker,
        _dir: dir,
    })
}

/// A librdkafka transactional producer, its transactions initialized (Kafka creates
/// `__transaction_state` then, so this may take a few seconds there).
fn transactional_producer(
    addr: &str,
    transactional_id: &str,
    options: &Options,
) -> Result<TxnProducer, String> {
    let producer: TxnProducer = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", "60000")
        .set("linger.ms", options.linger_ms.to_string())
        .set(
            "queue.buffering.max.kbytes",
            options.queue_kbytes.to_string(),
        )
        .set("compression.type", "none")
        .create()
        .map_err(|e| format!("transactional producer: {e}"))?;
    producer
        .init_transactions(TXN_TIMEOUT)
        .map_err(|e| format!("init_transactions against {addr}: {e}"))?;
    Ok(producer)
}

pub fn cpu(pid: u32) -> Result<f64, String> {
    fleet::cpu_seconds(&pid.to_string()).ok_or_else(|| format!("cannot read /proc/{pid}/stat"))
}

/// The system part of [`cpu`] (`stime`): the kernel's work for the process, copies into and
/// out of sockets and the page cache mostly.
pub fn sys_cpu(pid: u32) -> Result<f64, String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    let after = text.rfind(')').map_or("", |i| &text[i + 1..]);
    after
        .split_whitespace()
        .nth(12)
        .and_then(|t| t.parse::<f64>().ok())
        .map(|ticks| ticks / 100.0)
        .ok_or_else(|| format!("no stime in /proc/{pid}/stat"))
}

pub fn self_cpu() -> Result<f64, String> {
    fleet::cpu_seconds("self").ok_or_else(|| "cannot read /proc/self/stat".to_string())
}

// ---------------------------------------------------------------------------------------------
// Transactional produce

/// What a run of transactions did.
#[derive(Debug, Default, Clone)]
pub struct TxnStats {
    pub transactions: u64,
    pub aborted: u64,
    /// Records of committed transactions, and of aborted ones.
    pub committed_records: u64,
    pub aborted_records: u64,
    /// Time spent flushing before the commit, then in `commit_transaction`.
    pub flush_s: f64,
    pub commit_s: f64,
}

/// Sends `value` round-robin over `partitions` partitions of `topic` until `count` records
/// were accepted or `until` has passed (checked every 64 records); how many were sent.
pub fn send_records(
    producer: &TxnProducer,
    topic: &str,
    partitions: usize,
    value: &[u8],
    count: Option<u64>,
    until: Option<Instant>,
) -> Result<u64, String> {
    let mut sent = 0u64;
    loop {
        if count.is_some_and(|c| sent >= c) {
            return Ok(sent);
        }
        if sent % 64 == 0 && until.is_some_and(|u| Instant::now() >= u) {
            return Ok(sent);
        }
        let record = BaseRecord::<(), [u8]>::to(topic)
            .partition((sent % partitions as u64) as i32)
            .payload(value);
        match producer.send(record) {
            Ok(()) => {
                sent += 1;
                if sent % POLL_EVERY == 0 {
                    producer.poll(Duration::ZERO);
                }
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                producer.poll(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(format!("send to {topic}: {e}")),
        }
    }
}

/// Waits until every record sent was answered, serving the delivery reports. The `rdkafka`
/// crate's `flush` (which its `commit_transaction` calls first) polls 100 ms at a time and
/// its `poll` returns only at the end of the time given, so every commit would wait 100 ms;
/// after this, that flush finds nothing to wait for.
pub fn drain(producer: &TxnProducer) -> Result<(), String> {
    let deadline = Instant::now() + TXN_TIMEOUT;
    while producer.in_flight_count() > 0 {
        if Instant::now() > deadline {
            return Err(format!("{} records unanswered", producer.in_flight_count()));
        }
        producer.poll(Duration::from_micros(200));
    }
    Ok(())
}

/// Transactions of `commit_every` each (begin, send, commit) until `until`; the last one
/// ends after `until`.
fn transactions_until(
    producer: &TxnProducer,
    topic: &str,
    options: &Options,
    value: &[u8],
    until: Instant,
) -> Result<TxnStats, String> {
    let mut stats = TxnStats::default();
    let every = Duration::from_millis(options.commit_ms);
    while Instant::now() < until {
        producer
            .begin_transaction()
            .map_err(|e| format!("begin_transaction: {e}"))?;
        let end = Instant::now() + every;
        let sent = send_records(producer, topic, options.partitions, value, None, Some(end))?;
        let flush = Instant::now();
        drain(producer)?;
        let commit = Instant::now();
        stats.flush_s += (commit - flush).as_secs_f64();
        producer
            .commit_transaction(TXN_TIMEOUT)
            .map_err(|e| format!("commit_transaction: {e}"))?;
        stats.commit_s += commit.elapsed().as_secs_f64();
        stats.transactions += 1;
        stats.committed_records += sent;
    }
    Ok(stats)
}

/// One measured window of transactions against one server.
struct ProduceRun {
    stats: TxnStats,
    seconds: f64,
    server_cpu_s: f64,
    /// The system part of `server_cpu_s`.
    server_sys_s: f64,
    client_cpu_s: f64,
}

impl ProduceRun {
    fn mb(&self, record_bytes: usize) -> f64 {
        (self.stats.committed_records * record_bytes as u64) as f64 / 1e6
    }

    fn mb_per_server_cpu_s(&self, record_bytes: usize) -> f64 {
        if self.server_cpu_s > 0.0 {
            self.mb(record_bytes) / self.server_cpu_s
        } else {
            f64::INFINITY
        }
    }
}

/// On `topic`: `ramp` seconds of transactions, then `seconds` measured.
fn produce_window(
    server: &Server,
    options: &Options,
    topic: &str,
    ramp: f64,
    seconds: f64,
) -> Result<ProduceRun, String> {
    let value = produce::record_value(options.record_bytes, 11);
    let ramp_end = Instant::now() + Duration::from_secs_f64(ramp);
    transactions_until(&server.producer, topic, options, &value, ramp_end)?;
    let (server0, sys0) = (cpu(server.pid)?, sys_cpu(server.pid)?);
    let (client0, started) = (self_cpu()?, Instant::now());
    let until = started + Duration::from_secs_f64(seconds);
    let stats = transactions_until(&server.producer, topic, options, &value, until)?;
    let (server1, sys1, client1) = (cpu(server.pid)?, sys_cpu(server.pid)?, self_cpu()?);
    Ok(ProduceRun {
        stats,
        seconds: started.elapsed().as_secs_f64(),
        server_cpu_s: server1 - server0,
        server_sys_s: sys1 - sys0,
        client_cpu_s: client1 - client0,
    })
}

/// [`produce_window`] on a new topic, deleted afterwards (the disk would fill up otherwise:
/// a round writes gigabytes); then a pause of [`AFTER_DELETE`], so that the deletion's cost
/// (Kafka's too: the bench sets its `log.segment.delete.delay.ms` to 0) falls outside the
/// measured windows.
fn on_new_topic(
    server: &Server,
    options: &Options,
    rt: &tokio::runtime::Runtime,
    topic: &str,
    ramp: f64,
    seconds: f64,
) -> Result<ProduceRun, String> {
    let conn = server.client.bootstrap();
    let partitions = options.partitions as i32;
    rt.block_on(produce::create_topics(
        &conn,
        &[(topic.to_string(), partitions)],
        &[],
    ))?;
    let run = produce_window(server, options, topic, ramp, seconds)?;
    rt.block_on(produce::delete_topics(&conn, &[topic.to_string()]))?;
    std::thread::sleep(AFTER_DELETE);
    Ok(run)
}

fn produce_line(server: &Server, measure: &str, round: usize, options: &Options, r: &ProduceRun) {
    let s = &r.stats;
    let per_cpu = r.mb_per_server_cpu_s(options.record_bytes);
    println!(
        r#"{{"bench":"transactions","measure":"{measure}","server":"{}","round":{round},"partitions":{},"record_bytes":{},"commit_ms":{},"seconds":{:.2},"transactions":{},"records":{},"mb":{:.1},"mb_per_s":{:.1},"server_cpu_s":{:.2},"server_sys_s":{:.2},"server_cores":{:.2},"mb_per_server_cpu_s":{},"client_cpu_s":{:.2},"mean_txn_ms":{:.1},"mean_flush_ms":{:.1},"mean_commit_ms":{:.1}}}"#,
        server.name(),
        options.partitions,
        options.record_bytes,
        options.commit_ms,
        r.seconds,
        s.transactions,
        s.committed_records,
        r.mb(options.record_bytes),
        r.mb(options.record_bytes) / r.seconds,
        r.server_cpu_s,
        r.server_sys_s,
        r.server_cpu_s / r.seconds,
        txn_options::json_f64(per_cpu, 1),
        r.client_cpu_s,
        r.seconds * 1e3 / s.transactions.max(1) as f64,
        s.flush_s * 1e3 / s.transactions.max(1) as f64,
        s.commit_s * 1e3 / s.transactions.max(1) as f64,
    );
}

/// The warm-up of every server, then the rounds; a ratio line per round when Kafka ran.
fn produce_rounds(
    servers: &[Server],
    options: &Options,
    rt: &tokio::runtime::Runtime,
) -> Result<(), String> {
    // The warm-up in windows of at most 5 s, each on its own topic (a line each: Kafka's JIT
    // warming shows), so that the disk holds one window's data at a time.
    for server in servers {
        let (mut left, mut window) = (options.warmup, 0);
        while left > 0.0 {
            let seconds = left.min(5.0);
            let topic = format!("txn-warmup-{window}");
            let run = on_new_topic(server, options, rt, &topic, 0.0, seconds)?;
            produce_line(server, "warmup", 0, options, &run);
            (left, window) = (left - seconds, window + 1);
        }
    }
    for round in 1..=options.rounds {
        let mut order: Vec<&Server> = servers.iter().collect();
        if round % 2 == 0 {
            order.reverse();
        }
        let mut figures = Vec::new();
        for server in order {
            let topic = format!("txn-produce-{round}");
            let run = on_new_topic(server, options, rt, &topic, options.ramp, options.seconds)?;
            produce_line(server, "produce", round, options, &run);
            figures.push((server.kind, run.mb_per_server_cpu_s(options.record_bytes)));
        }
        let of = |kind| figures.iter().find(|(k, _)| *k == kind).map(|f| f.1);
        if let (Some(k), Some(j)) = (of(ServerKind::Kcoord), of(ServerKind::Kafka)) {
            let ratio = k / j;
            println!(
                r#"{{"bench":"transactions","measure":"produce_vs_kafka","round":{round},"kcoord_mb_per_server_cpu_s":{},"kafka_mb_per_server_cpu_s":{},"ratio":{},"goal_ratio":{GOAL_PRODUCE_RATIO},"goal_met":{}}}"#,
                txn_options::json_f64(k, 1),
                txn_options::json_f64(j, 1),
                txn_options::json_f64(ratio, 3),
                if ratio.is_finite() {
                    (ratio >= GOAL_PRODUCE_RATIO).to_string()
                } else {
                    "null".into()
                },
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Main

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{}", txn_options::USAGE);
        return ExitCode::SUCCESS;
    }
    let options = match txn_options::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("transactions: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("transactions: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match bench(&options, &rt) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("transactions: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(options: &Options, rt: &tokio::runtime::Runtime) -> Result<(), String> {
    if let Some(cpus) = &options.pin_load {
        fleet::pin(std::process::id(), cpus)?;
    }
    let mut servers = Vec::new();
    for &kind in &options.servers {
        let server = start_server(kind, options, rt)?;
        eprintln!(
            "transactions: {} serves at {}, pid {}",
            server.name(),
            server.addr,
            server.pid
        );
        servers.push(server);
    }
    let result = (|| {
        if options.measures.contains(&Measure::Produce) {
            produce_rounds(&servers, options, rt)?;
        }
        if options.measures.contains(&Measure::CatchUp) {
            txn_read::catchup_rounds(&servers, options, rt)?;
        }
        Ok::<(), String>(())
    })();
    for server in servers {
        let Server {
            daemon, producer, ..
        } = server;
        drop(producer);
        if let Some(daemon) = daemon {
            if !daemon.is_alive() {
                return Err(format!("the daemon died\n{}", daemon.stderr_log()));
            }
            if let Err(e) = &result {
                eprintln!("--- daemon stderr ---\n{}\n({e})", daemon.stderr_log());
            }
            daemon.stop();
        }
    }
    result
}
