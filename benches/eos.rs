//! Exactly-once Streams bench (issue "Transactions", its last benchmark): end-to-end records
//! per second of the same Kafka Streams 4.4 `exactly_once_v2` app on kcoord and on Apache Kafka
//! 4.4, in one run on the same cores; one JSON line per measurement.
//!
//! ```text
//! cargo bench --bench eos                                   # 200,000 records, 2 rounds
//! cargo bench --bench eos -- --records 500000 --rounds 3 --groups 1000
//! cargo bench --bench eos -- --servers kcoord
//! ```
//!
//! The app is interop's `EosCountAppMain` (`eos-in` -> groupBy(value) through a repartition
//! topic -> count, its store's changelog -> `eos-out`, the record cache off so every increment
//! is written, commits every 100 ms, the streams rebalance protocol), one instance in its own
//! JVM (`java` on PATH, the interop test classpath Maven resolves, as `support/kafka.rs` builds
//! it; 512 MiB heap). The servers: the `kcoord` binary Cargo built (or `KCOORD_BIN`), its
//! partitions on disk in a temp dir, `log.level=warn`; an Apache Kafka 4.4 broker from
//! `support/kafka.rs` (its own JVM, 1 GiB heap) with `log.segment.delete.delay.ms=0`. Both get
//! the interop tests' fast streams-group settings (no initial rebalance delay, 500 ms
//! heartbeats) and the `--daemon-config` / `--kafka-config KEY=VALUE` lines.
//!
//! A measurement: `eos-in` and `eos-out` (`--partitions`, 4, each) are deleted and created
//! again; `--records` (200,000) keyed records (key `r<i>`, value `g<i*7 % groups>`,
//! `--groups` 1000) are produced into `eos-in` (librdkafka, acks=all) before the app starts;
//! then the app starts (a new application id each time, so new internal topics) and a
//! librdkafka read_committed consumer reads `eos-out` from the beginning until the last count
//! of every group sums to `--records`. Reported: the time from the app's spawn to that moment
//! (`records_per_s`, the figure) and from the first committed output record
//! (`records_per_s_from_first_output`), the server's CPU (user + system, `/proc/<pid>/stat`,
//! 10 ms ticks) from the spawn to the end per input record, and the app's CPU. Each server first
//! gets a warm-up run of `--warmup-records` (50,000; Kafka's JIT), then `--rounds` (2) rounds,
//! kcoord first in odd rounds and Kafka first in even ones, and an `eos_vs_kafka` line per
//! round: kcoord's records/s over Kafka's (goal >= 1.5).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it prints a skip line and exits:
//! it needs Java, Maven and the interop classpath, which the test run does not assume.

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

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kcoord_client::Client;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};

const GOAL_RATIO: f64 = 1.5;
const INPUT: &str = "eos-in";
const OUTPUT: &str = "eos-out";
/// Kafka's key names; kcoord accepts them (interop's `Kcoord.fastStreamsGroups`).
const FAST_STREAMS_GROUPS: &[&str] = &[
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.min.session.timeout.ms=1000",
    "group.streams.session.timeout.ms=6000",
    "group.streams.min.heartbeat.interval.ms=100",
    "group.streams.heartbeat.interval.ms=500",
];
const USAGE: &str = "usage: eos [--records N] [--warmup-records N] [--groups N] \
[--partitions N] [--rounds N] [--timeout SECONDS] [--servers kcoord,kafka] \
[--daemon-config KEY=VALUE]... [--kafka-config KEY=VALUE]...";

// ---------------------------------------------------------------------------------------------
// Options

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Kcoord,
    Kafka,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Kcoord => "kcoord",
            Kind::Kafka => "kafka",
        }
    }
}

struct Options {
    records: u64,
    warmup_records: u64,
    groups: u64,
    partitions: i32,
    rounds: usize,
    /// Bound of one measurement, seconds.
    timeout: f64,
    servers: Vec<Kind>,
    daemon_config: Vec<String>,
    kafka_config: Vec<String>,
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{name}: not a number: {value:?}"))
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        records: 200_000,
        warmup_records: 50_000,
        groups: 1000,
        partitions: 4,
        rounds: 2,
        timeout: 300.0,
        servers: vec![Kind::Kcoord, Kind::Kafka],
        daemon_config: Vec::new(),
        kafka_config: Vec::new(),
    };
    let mut it = args.iter().filter(|a| *a != "--bench");
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--records" => o.records = number(flag, value)?,
            "--warmup-records" => o.warmup_records = number(flag, value)?,
            "--groups" => o.groups = number(flag, value)?,
            "--partitions" => o.partitions = number(flag, value)?,
            "--rounds" => o.rounds = number(flag, value)?,
            "--timeout" => o.timeout = number(flag, value)?,
            "--daemon-config" => o.daemon_config.push(value.clone()),
            "--kafka-config" => o.kafka_config.push(value.clone()),
            "--servers" => {
                o.servers = value
                    .split(',')
                    .map(|s| match s {
                        "kcoord" => Ok(Kind::Kcoord),
                        "kafka" => Ok(Kind::Kafka),
                        _ => Err(format!("--servers: unknown server {s:?}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    if o.records == 0 || o.groups == 0 || o.partitions <= 0 || o.servers.is_empty() {
        return Err(format!(
            "--records, --groups, --partitions and --servers must not be empty\n{USAGE}"
        ));
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Servers

struct Server {
    kind: Kind,
    addr: String,
    pid: u32,
    client: Client,
    daemon: Option<common::Daemon>,
    _kafka: Option<kafka::KafkaBroker>,
    _dir: Option<tempfile::TempDir>,
}

fn start_server(kind: Kind, o: &Options, rt: &tokio::runtime::Runtime) -> Result<Server, String> {
    let fast = FAST_STREAMS_GROUPS.iter().map(|s| s.to_string());
    let (daemon, broker, dir) = match kind {
        Kind::Kcoord => {
            let dir = tempfile::Builder::new()
                .prefix("kcoord-bench-eos-")
                .tempdir()
                .map_err(|e| format!("cannot create a temp dir: {e}"))?;
            let mut config = vec![
                "log.level=warn".to_string(),
                format!("log.dirs={}", dir.path().display()),
            ];
            config.extend(fast);
            config.extend(o.daemon_config.iter().cloned());
            let lines: Vec<&str> = config.iter().map(String::as_str).collect();
            let daemon = common::Daemon::try_start_with_config(&common::config_text(&lines))?;
            (Some(daemon), None, Some(dir))
        }
        Kind::Kafka => {
            let mut settings = vec!["log.segment.delete.delay.ms=0".to_string()];
            settings.extend(fast);
            settings.extend(o.kafka_config.iter().cloned());
            (None, Some(kafka::KafkaBroker::start(&settings)?), None)
        }
    };
    let (addr, pid) = match (&daemon, &broker) {
        (Some(d), _) => (d.bootstrap(), d.pid().ok_or("the daemon has no pid")?),
        (_, Some(b)) => (b.bootstrap(), b.pid()),
        _ => return Err("no server was started".into()),
    };
    let client = rt.block_on(fleet::connect_client(&addr))?;
    Ok(Server {
        kind,
        addr,
        pid,
        client,
        daemon,
        _kafka: broker,
        _dir: dir,
    })
}

fn cpu(pid: u32) -> Result<f64, String> {
    fleet::cpu_seconds(&pid.to_string()).ok_or_else(|| format!("cannot read /proc/{pid}/stat"))
}

/// Deletes `eos-in` and `eos-out` (if there) and creates them empty, retrying for a minute
/// while the deletion completes.
fn reset_topics(server: &Server, o: &Options, rt: &tokio::runtime::Runtime) -> Result<(), String> {
    let conn = server.client.bootstrap();
    let names = [INPUT.to_string(), OUTPUT.to_string()];
    for name in &names {
        // UNKNOWN_TOPIC_OR_PARTITION the first time: nothing to delete.
        let _ = rt.block_on(produce::delete_topics(&conn, std::slice::from_ref(name)));
    }
    let topics: Vec<(String, i32)> = names.iter().map(|n| (n.clone(), o.partitions)).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match rt.block_on(produce::create_topics(&conn, &topics, &[])) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => {
                // TOPIC_ALREADY_EXISTS while the deletion completes, or one of the two
                // created already: delete again and retry.
                std::thread::sleep(Duration::from_millis(500));
                for name in &names {
                    let _ = rt.block_on(produce::delete_topics(&conn, std::slice::from_ref(name)));
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

/// `records` keyed records into `eos-in`, every one acknowledged.
fn preload(addr: &str, records: u64, groups: u64) -> Result<(), String> {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("compression.type", "none")
        .create()
        .map_err(|e| format!("producer: {e}"))?;
    let mut i = 0u64;
    while i < records {
        let (key, value) = (format!("r{i}"), format!("g{}", i * 7 % groups));
        match producer.send(BaseRecord::to(INPUT).key(&key).payload(&value)) {
            Ok(()) => i += 1,
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                producer.poll(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(format!("send to {INPUT}: {e}")),
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .map_err(|e| format!("flush of the preload: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The app

struct App {
    child: Child,
    lines: mpsc::Receiver<String>,
    state: tempfile::TempDir,
}

impl App {
    fn spawn(classpath: &str, addr: &str, app_id: &str) -> Result<App, String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let state = tempfile::Builder::new()
            .prefix("kcoord-bench-eos-app-")
            .tempdir()
            .map_err(|e| format!("cannot create a temp dir: {e}"))?;
        let log = std::fs::File::create(state.path().join("app.log"))
            .map_err(|e| format!("app log: {e}"))?;
        let mut child = Command::new("java")
            .args(["-Xms512m", "-Xmx512m", "-XX:+UseG1GC"])
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                root.join("interop/src/test/resources/log4j2-tools.properties")
                    .display()
            ))
            .arg("-cp")
            .arg(classpath)
            .arg("io.kcoord.interop.apps.EosCountAppMain")
            .args([addr, app_id])
            .arg(state.path().join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start java: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Ok(App {
            child,
            lines,
            state,
        })
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.state.path().join("app.log")).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        text.get(start..).unwrap_or_default().to_string()
    }

    /// `close` on stdin (a clean close, up to 40 s), then SIGKILL if it still runs.
    fn close(mut self) {
        if let Some(stdin) = self.child.stdin.as_mut() {
            let _ = stdin.write_all(b"close\n");
            let _ = stdin.flush();
        }
        kafka::wait_or_kill(&mut self.child, Duration::from_secs(40));
    }
}

/// When the output was complete: the first committed output record, the end, records read.
struct Seen {
    first: Instant,
    done: Instant,
    outputs: u64,
    states: Vec<String>,
}

/// Reads `eos-out` read_committed from the beginning until the last counts sum to `records`.
fn await_counts(app: &mut App, addr: &str, o: &Options, records: u64) -> Result<Seen, String> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .set("group.id", "eos-bench-reader")
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "10")
        .create()
        .map_err(|e| format!("consumer: {e}"))?;
    let mut assignment = TopicPartitionList::new();
    for p in 0..o.partitions {
        assignment
            .add_partition_offset(OUTPUT, p, Offset::Beginning)
            .map_err(|e| format!("assignment: {e}"))?;
    }
    consumer
        .assign(&assignment)
        .map_err(|e| format!("assign: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs_f64(o.timeout);
    let (mut last, mut sum, mut outputs) = (HashMap::<Vec<u8>, u64>::new(), 0u64, 0u64);
    let (mut first, mut states) = (None, Vec::new());
    while sum != records {
        states.extend(app.lines.try_iter());
        if Instant::now() > deadline {
            return Err(format!(
                "the counts sum to {sum} of {records} after {} s (app: {states:?}, {:?})\n{}",
                o.timeout,
                app.child.try_wait(),
                app.log_tail()
            ));
        }
        let Some(message) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let message = message.map_err(|e| format!("consume {OUTPUT}: {e}"))?;
        first.get_or_insert_with(Instant::now);
        let key = message.key().unwrap_or_default().to_vec();
        let count = message
            .payload()
            .and_then(|v| <[u8; 8]>::try_from(v).ok())
            .map(u64::from_be_bytes)
            .ok_or("an output value is not a long")?;
        outputs += 1;
        let before = last.insert(key, count).unwrap_or(0);
        sum = (sum + count).saturating_sub(before);
    }
    Ok(Seen {
        first: first.unwrap_or_else(Instant::now),
        done: Instant::now(),
        outputs,
        states,
    })
}

// ---------------------------------------------------------------------------------------------
// Measurements

struct Run {
    records: u64,
    from_spawn_s: f64,
    from_first_s: f64,
    outputs: u64,
    server_cpu_s: f64,
    app_cpu_s: f64,
}

impl Run {
    fn records_per_s(&self) -> f64 {
        self.records as f64 / self.from_spawn_s
    }
}

/// Fresh topics, the preload, then the app from its spawn until the output is complete.
fn measure(
    server: &Server,
    o: &Options,
    rt: &tokio::runtime::Runtime,
    classpath: &str,
    label: &str,
    records: u64,
) -> Result<Run, String> {
    reset_topics(server, o, rt)?;
    preload(&server.addr, records, o.groups)?;
    std::thread::sleep(Duration::from_secs(1));
    let app_id = format!("eos-bench-{}-{label}", server.kind.name());
    let server0 = cpu(server.pid)?;
    let spawned = Instant::now();
    let mut app = App::spawn(classpath, &server.addr, &app_id)?;
    let seen = await_counts(&mut app, &server.addr, o, records);
    let server1 = cpu(server.pid)?;
    let app_cpu_s = cpu(app.child.id()).unwrap_or(f64::NAN);
    let seen = match seen {
        Ok(seen) => seen,
        Err(e) => {
            app.close();
            return Err(e);
        }
    };
    app.close();
    if !seen.states.iter().any(|s| s == "STATE RUNNING") {
        eprintln!("eos: the app printed {:?}", seen.states);
    }
    Ok(Run {
        records,
        from_spawn_s: (seen.done - spawned).as_secs_f64(),
        from_first_s: (seen.done - seen.first).as_secs_f64(),
        outputs: seen.outputs,
        server_cpu_s: server1 - server0,
        app_cpu_s,
    })
}

fn run_line(server: &Server, o: &Options, measure: &str, round: usize, r: &Run) {
    println!(
        r#"{{"bench":"eos","measure":"{measure}","server":"{}","round":{round},"records":{},"groups":{},"partitions":{},"seconds_from_spawn":{:.2},"seconds_from_first_output":{:.2},"records_per_s":{:.0},"records_per_s_from_first_output":{:.0},"output_records_read":{},"server_cpu_s":{:.2},"server_cpu_us_per_record":{:.2},"app_cpu_s":{:.2}}}"#,
        server.kind.name(),
        r.records,
        o.groups,
        o.partitions,
        r.from_spawn_s,
        r.from_first_s,
        r.records_per_s(),
        r.records as f64 / r.from_first_s.max(1e-9),
        r.outputs,
        r.server_cpu_s,
        r.server_cpu_s * 1e6 / r.records as f64,
        r.app_cpu_s,
    );
}

fn rounds(servers: &[Server], o: &Options, rt: &tokio::runtime::Runtime) -> Result<(), String> {
    let classpath = kafka::interop_classpath(Path::new(env!("CARGO_MANIFEST_DIR")))?;
    if o.warmup_records > 0 {
        for server in servers {
            let run = measure(server, o, rt, &classpath, "warmup", o.warmup_records)?;
            run_line(server, o, "warmup", 0, &run);
        }
    }
    for round in 1..=o.rounds {
        let mut order: Vec<&Server> = servers.iter().collect();
        if round % 2 == 0 {
            order.reverse();
        }
        let mut figures = Vec::new();
        for server in order {
            let label = format!("round{round}");
            let run = measure(server, o, rt, &classpath, &label, o.records)?;
            run_line(server, o, "eos", round, &run);
            figures.push((server.kind, run.records_per_s()));
        }
        let of = |kind| figures.iter().find(|(k, _)| *k == kind).map(|f| f.1);
        if let (Some(k), Some(j)) = (of(Kind::Kcoord), of(Kind::Kafka)) {
            let ratio = k / j;
            println!(
                r#"{{"bench":"eos","measure":"eos_vs_kafka","round":{round},"kcoord_records_per_s":{k:.0},"kafka_records_per_s":{j:.0},"ratio":{ratio:.3},"goal_ratio":{GOAL_RATIO},"goal_met":{}}}"#,
                ratio >= GOAL_RATIO
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
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if !args.iter().any(|a| a == "--bench") {
        println!(
            "eos: skipped (needs `cargo bench --bench eos`: Java, Maven, the interop classpath)"
        );
        return ExitCode::SUCCESS;
    }
    let result = parse(&args).and_then(|o| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        bench(&o, &rt)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eos: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(o: &Options, rt: &tokio::runtime::Runtime) -> Result<(), String> {
    let mut servers = Vec::new();
    for &kind in &o.servers {
        let server = start_server(kind, o, rt)?;
        eprintln!(
            "eos: {} serves at {}, pid {}",
            server.kind.name(),
            server.addr,
            server.pid
        );
        servers.push(server);
    }
    let result = rounds(&servers, o, rt);
    for server in servers {
        if let Some(daemon) = server.daemon {
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
