//! Soak bench (issue 13): many streams members heartbeating at their interval for a long time
//! with a produce load beside them, against the real daemon; one JSON line per RSS sample and
//! one summing the run up.
//!
//! ```text
//! cargo bench --bench soak -- --groups 1000 --members 10 --minutes 10     # the issue's run
//! ```
//!
//! Flags:
//! - `--groups G` (1000) groups of `--members M` (10) members, each group on one stateless
//!   subtopology of a `--partitions N` (10) partition source topic;
//! - `--minutes T` (10) of steady heartbeats after the setup; the first `--warmup-s W` (120)
//!   seconds of them are not measured (latencies) and not used for the RSS slope;
//! - `--interval-ms I` (5000, the daemon's default `group.streams.heartbeat.interval.ms`):
//!   each member heartbeats once per interval, the members of a connection spread evenly over
//!   it, over `--connections C` (16) connections with at most `--inflight P` (64) requests
//!   outstanding each;
//! - `--produce K` (2) idempotent producers, one per partition of a topic with 64 MiB
//!   retention per partition (checked every second), sending 16 KiB batches of 1 KiB records
//!   with acks=-1, `--produce-rate MBPS` (4) in all;
//! - `--sample-s S` (10): the daemon's RSS is read this often;
//! - `--producer-quota B` (none): a `producer_byte_rate` of B bytes/s for the bench's client-id
//!   (Kafka's client quotas; heartbeats do not produce, so only the producers are held to it),
//!   set before the load starts. `--produce 0`, a saturating `--produce-rate`, and the same
//!   with a quota compare heartbeat latency quiet, under load, and under a quota'd load;
//! - `--nice-producers`: the producers run on a thread of their own at Linux nice 10 (the
//!   heartbeats keep the bench's two threads at nice 0). A saturating producer on the
//!   same two cores as the heartbeat generator otherwise delays the generator itself; in
//!   production the noisy tenant runs on another machine, so this isolates the daemon's share;
//! - `--pin-server CPUS` / `--pin-load CPUS` (none): `taskset` lists for the daemon and the
//!   bench (e.g. `1` and `0`).
//!
//! The daemon is the optimized `kcoord` Cargo built for the bench (or `KCOORD_BIN`), started
//! with `group.streams.initial.rebalance.delay.ms=0` and `group.streams.assignment.interval.ms=0`
//! so the setup converges at once; sessions keep Kafka's 45 s default, so a member whose
//! heartbeats stall for that long is fenced and its next answer is an error.
//!
//! Every heartbeat answer must be "accepted, nothing changed" and every produce answer the
//! offset the stream expects: anything else is counted in `errors`, and the bench exits with
//! status 1 when there is any. `rss_slope_kib_per_min` is the least-squares slope of the RSS
//! samples after the warm-up; a daemon that keeps nothing per heartbeat stays flat.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration
//! (2 groups of 3, 4 seconds, interval 200 ms, one producer at 1 MB/s) so the code stays
//! exercised; unknown arguments (libtest's) are ignored there.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/produce.rs"]
mod produce;
#[path = "support/secure.rs"]
mod secure;
#[path = "support/steady.rs"]
mod steady;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use steady::{SteadyStats, Window};

const SOURCE_TOPIC: &str = "soak-source";
const PRODUCE_TOPIC: &str = "soak-produce";

#[derive(Debug, Clone)]
struct Options {
    groups: usize,
    members: usize,
    partitions: usize,
    seconds: f64,
    warmup_s: f64,
    interval: Duration,
    connections: usize,
    inflight: usize,
    produce: usize,
    produce_rate_mbps: f64,
    sample: Duration,
    producer_quota: Option<f64>,
    nice_producers: bool,
    pin_server: Option<String>,
    pin_load: Option<String>,
}

impl Options {
    fn full() -> Options {
        Options {
            groups: 1000,
            members: 10,
            partitions: 10,
            seconds: 600.0,
            warmup_s: 120.0,
            interval: Duration::from_millis(5000),
            connections: 16,
            inflight: 64,
            produce: 2,
            produce_rate_mbps: 4.0,
            sample: Duration::from_secs(10),
            producer_quota: None,
            nice_producers: false,
            pin_server: None,
            pin_load: None,
        }
    }

    fn smoke() -> Options {
        Options {
            groups: 2,
            members: 3,
            partitions: 4,
            seconds: 4.0,
            warmup_s: 1.0,
            interval: Duration::from_millis(200),
            connections: 2,
            inflight: 4,
            produce: 1,
            produce_rate_mbps: 1.0,
            sample: Duration::from_millis(500),
            producer_quota: Some(500_000.0),
            nice_producers: true,
            pin_server: None,
            pin_load: None,
        }
    }
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut o = if bench {
        Options::full()
    } else {
        Options::smoke()
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--groups" => o.groups = args::positive(value()?)?,
            "--members" => o.members = args::positive(value()?)?,
            "--partitions" => o.partitions = args::positive(value()?)?,
            "--minutes" => o.seconds = args::seconds(value()?)? * 60.0,
            "--warmup-s" => o.warmup_s = args::seconds(value()?)?,
            "--interval-ms" => o.interval = Duration::from_millis(args::positive(value()?)? as u64),
            "--connections" => o.connections = args::positive(value()?)?,
            "--inflight" => o.inflight = args::positive(value()?)?,
            "--produce" => o.produce = value()?.parse().map_err(|_| "--produce: a count")?,
            "--produce-rate" => {
                o.produce_rate_mbps = value()?.parse().map_err(|_| "--produce-rate: MB/s")?
            }
            "--sample-s" => o.sample = Duration::from_secs_f64(args::seconds(value()?)?),
            "--producer-quota" => {
                o.producer_quota = Some(value()?.parse().map_err(|_| "--producer-quota: bytes/s")?)
            }
            "--nice-producers" => o.nice_producers = true,
            "--pin-server" => o.pin_server = Some(value()?.clone()),
            "--pin-load" => o.pin_load = Some(value()?.clone()),
            "--bench" => {}
            other if bench && other.starts_with("--") => {
                return Err(format!("unknown flag {other}"))
            }
            _ => {} // libtest's arguments in smoke mode
        }
    }
    if o.warmup_s >= o.seconds {
        return Err("--warmup-s must be shorter than the run".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    let daemon = common::Daemon::start(&[
        "group.streams.initial.rebalance.delay.ms=0",
        "group.streams.assignment.interval.ms=0",
        "log.retention.check.interval.ms=1000",
    ]);
    let result = runtimes(&options).and_then(|(runtime, producers)| {
        pin(&daemon, &options)?;
        let producers = producers.as_ref().map(|r| r.handle().clone());
        runtime.block_on(soak(&daemon, &options, producers))
    });
    daemon.stop();
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The bench's runtime (two threads) and, with `--nice-producers`, the producers' own.
fn runtimes(
    o: &Options,
) -> Result<(tokio::runtime::Runtime, Option<tokio::runtime::Runtime>), String> {
    let main = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    if !o.nice_producers {
        return Ok((main, None));
    }
    let producers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("soak-producers")
        .on_thread_start(|| {
            if let Err(e) = kcoord_server::support::priority::lower_this_thread() {
                eprintln!("soak: the producers' thread keeps its priority: {e}");
            }
        })
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the producers' runtime: {e}"))?;
    Ok((main, Some(producers)))
}

fn pin(daemon: &common::Daemon, o: &Options) -> Result<(), String> {
    if let Some(cpus) = &o.pin_server {
        fleet::pin(daemon.pid().ok_or("the daemon has no pid")?, cpus)?;
    }
    if let Some(cpus) = &o.pin_load {
        fleet::pin(std::process::id(), cpus)?;
    }
    Ok(())
}

/// Sets up, runs, prints; whether the run was clean.
async fn soak(
    daemon: &common::Daemon,
    o: &Options,
    producer_runtime: Option<tokio::runtime::Handle>,
) -> Result<bool, String> {
    let addr = daemon.bootstrap();
    let pid = daemon.pid().ok_or("the daemon has no pid")?;
    let setup = Instant::now();
    let (mut fleet, mut pipes) = steady::settled_fleet(
        &addr,
        "soak",
        SOURCE_TOPIC,
        o.groups,
        o.members,
        o.partitions,
        o.connections,
    )
    .await?;
    eprintln!(
        "soak: {} members in {} groups Stable after {:.1} s",
        fleet.members.len(),
        o.groups,
        setup.elapsed().as_secs_f64()
    );
    if let Some(rate) = o.producer_quota {
        set_producer_quota(&addr, rate).await?;
    }
    let producers = producers(&addr, o).await?;

    let start = Instant::now();
    let stop_at = start + Duration::from_secs_f64(o.seconds);
    let window = Window {
        from: start + Duration::from_secs_f64(o.warmup_s),
        end: stop_at,
    };
    let produce_window = produce::Window {
        measure_from: window.from,
        end: stop_at,
    };
    let drive = produce_drive(o, &producers);
    let spawner = producer_runtime.unwrap_or_else(tokio::runtime::Handle::current);
    let produce_tasks: Vec<_> = producers
        .into_iter()
        .map(|s| {
            spawner.spawn(produce::run(
                secure::Dial::plaintext(addr.as_str()),
                s,
                drive,
                produce_window,
            ))
        })
        .collect();
    let sampler = tokio::spawn(sample_rss(pid, start, o.sample, stop_at));
    let mut heartbeats = steady::heartbeat_all(
        &addr,
        &mut pipes,
        &mut fleet.members,
        fleet.version,
        o.interval,
        o.inflight,
        window,
        stop_at,
    )
    .await?;
    let mut produced = produce::StreamStats::default();
    let mut produce_errors = Vec::new();
    for task in produce_tasks {
        match task.await.map_err(|e| format!("produce task: {e}"))? {
            (_, Ok(stats)) => produced.add(&stats),
            (_, Err(e)) => produce_errors.push(e),
        }
    }
    let samples = sampler.await.map_err(|e| format!("sampler: {e}"))?;
    print_samples(&samples);
    let clean = heartbeats.errors == 0 && produce_errors.is_empty() && heartbeats.heartbeats > 0;
    print_summary(
        o,
        &mut heartbeats,
        &produced,
        &produce_errors,
        &samples,
        window,
        start,
    );
    Ok(clean)
}

async fn producers(addr: &str, o: &Options) -> Result<Vec<produce::ProduceStream>, String> {
    if o.produce == 0 {
        return Ok(Vec::new());
    }
    let client = fleet::connect_client(addr).await?;
    let batch = produce::build_batch(1024, 16 * 1024, kcoord_record_batches::Compression::None, 1)?;
    produce::streams_on_new_topic(
        &client.bootstrap(),
        PRODUCE_TOPIC,
        o.produce,
        &[
            ("retention.bytes", "67108864"),
            ("segment.bytes", "16777216"),
        ],
        &batch,
    )
    .await
}

/// `producer_byte_rate` for the bench's client-id (AlterClientQuotas).
async fn set_producer_quota(addr: &str, rate: f64) -> Result<(), String> {
    use kcoord_wire::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    let config = kcoord_client::ClientConfig::new(fleet::CLIENT_ID);
    let conn = kcoord_client::Connection::connect(addr, config)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let request = kcoord_wire::messages::AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![EntityData {
                entity_type: "client-id".into(),
                entity_name: Some(fleet::CLIENT_ID.into()),
                ..Default::default()
            }],
            ops: vec![OpData {
                key: "producer_byte_rate".into(),
                value: rate,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer = conn
        .send(request, 1)
        .await
        .map_err(|e| format!("AlterClientQuotas: {e}"))?;
    match answer.entries.first() {
        Some(e) if e.error_code == 0 => Ok(()),
        other => Err(format!("AlterClientQuotas refused: {other:?}")),
    }
}

/// Each producer paced to its share of `--produce-rate`.
fn produce_drive(o: &Options, streams: &[produce::ProduceStream]) -> produce::Drive {
    let pace = streams.first().map(|s| {
        let per_stream = o.produce_rate_mbps * 1e6 / streams.len() as f64;
        Duration::from_secs_f64(s.batch_len() as f64 / per_stream)
    });
    produce::Drive {
        inflight: 1,
        pace,
        limit: None,
    }
}

/// (seconds since `start`, RSS KiB) every `every` until `stop_at`.
async fn sample_rss(
    pid: u32,
    start: Instant,
    every: Duration,
    stop_at: Instant,
) -> Vec<(f64, f64)> {
    let mut samples = Vec::new();
    let mut next = start;
    while next <= stop_at {
        tokio::time::sleep_until(next.into()).await;
        if let Some(kib) = fleet::proc_status_kib(pid, "VmRSS") {
            samples.push((start.elapsed().as_secs_f64(), kib as f64));
        }
        next += every;
    }
    samples
}

fn print_samples(samples: &[(f64, f64)]) {
    for (t, kib) in samples {
        println!(r#"{{"bench":"soak_rss","t_s":{t:.1},"rss_kib":{kib:.0}}}"#);
    }
}

fn print_summary(
    o: &Options,
    heartbeats: &mut SteadyStats,
    produced: &produce::StreamStats,
    produce_errors: &[String],
    samples: &[(f64, f64)],
    window: Window,
    start: Instant,
) {
    let warm = window.from.duration_since(start).as_secs_f64();
    let measured: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= warm)
        .collect();
    let slope = steady::slope_per_minute(&measured);
    let rss_first = measured.first().map_or(0.0, |s| s.1);
    let rss_last = measured.last().map_or(0.0, |s| s.1);
    let seconds = window.end.duration_since(window.from).as_secs_f64();
    let p50 = heartbeats.percentile_ms(50.0);
    let p99 = heartbeats.percentile_ms(99.0);
    let p999 = heartbeats.percentile_ms(99.9);
    let max = heartbeats.percentile_ms(100.0);
    println!(
        r#"{{"bench":"soak","members":{},"groups":{},"producer_quota":{},"minutes":{:.1},"warmup_s":{:.0},"interval_ms":{},"heartbeats":{},"heartbeats_per_s":{:.0},"errors":{},"first_error":{},"p50_ms":{p50:.3},"p99_ms":{p99:.3},"p999_ms":{p999:.3},"max_ms":{max:.3},"produce_mb_per_s":{:.2},"produce_errors":{},"rss_after_warmup_kib":{rss_first:.0},"rss_end_kib":{rss_last:.0},"rss_slope_kib_per_min":{}}}"#,
        o.groups * o.members,
        o.groups,
        o.producer_quota
            .map_or("null".into(), |q| format!("{q:.0}")),
        o.seconds / 60.0,
        o.warmup_s,
        o.interval.as_millis(),
        heartbeats.heartbeats,
        heartbeats.heartbeats as f64 / seconds,
        heartbeats.errors,
        json_string(heartbeats.first_error.as_deref()),
        produced.batch_bytes as f64 / seconds / 1e6,
        produce_errors.len(),
        slope.map_or("null".into(), |s| format!("{s:.1}")),
    );
    for e in produce_errors.iter().take(3) {
        eprintln!("soak: produce error: {e}");
    }
}

fn json_string(s: Option<&str>) -> String {
    s.map_or("null".into(), |s| serde_json::Value::from(s).to_string())
}
