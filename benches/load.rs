//! Load bench: C connections with P requests in flight each, for a bounded time, against the
//! real daemon; one JSON line per run.
//!
//! ```text
//! cargo bench --bench load -- --connections 64 --inflight 16 --seconds 5 --api apiversions
//! cargo bench --bench load -- --api apiversions,metadata --connections 1,64 --inflight 1,16
//! cargo bench --bench load -- --addr 127.0.0.1:9092 --api metadata      # a daemon you run
//! ```
//!
//! Flags (lists are comma-separated; every combination of `--api`, `--connections` and
//! `--inflight` is one run, all against the same daemon):
//! - `--api apiversions|metadata` (default `apiversions`)
//! - `--connections C` (default 64), `--inflight P` (default 16)
//! - `--seconds S` measured time (default 5), `--warmup W` seconds before it (default 1)
//! - `--api-version V` overrides the request version (defaults: ApiVersions v3, Metadata v12)
//! - `--addr host:port` a running daemon's broker listener; without it the bench starts the
//!   `kcoord` binary Cargo built alongside it (for `cargo bench`: the optimized one) as a
//!   separate process on free loopback ports, and stops it afterwards
//! - `--client-threads N` worker threads of the load generator's runtime (default 2)
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration
//! (C=1, P=1, 0.2 s, no warm-up, every api) so the code stays exercised; unknown arguments
//! (libtest's) are ignored there. The process exits with status 1 if any run saw an error or
//! completed no request.
//!
//! How it measures: each connection is one task that writes P requests, then for every
//! response read writes one more (responses arrive in request order, so the send time of a
//! response's request is the front of a queue). Requests are frames pre-encoded once with the
//! correlation id patched in, so the generator stays cheap next to the daemon. Latency is
//! send-to-receive per request, recorded for requests sent after the warm-up and answered
//! before the end; `req_per_s` is their count over the measured seconds. Latencies are kept
//! exactly (ns, `u32`; at most `MAX_SAMPLES` per run) and sorted for the percentiles.
//!
//! New workloads (e.g. heartbeats) implement [`Generator`] and get a name in [`Workload`].

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::{write_frame, FrameDecoder};
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse, RequestHeader,
    ResponseHeader,
};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Most latency samples kept per run (400 MB of `u32`s would be 100 M; this is 160 MB).
const MAX_SAMPLES: usize = 40_000_000;
/// A connection that gets no response for this long is counted as failed.
const STALL_TIMEOUT: Duration = Duration::from_secs(10);
const READ_CHUNK: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Workloads

/// Produces the requests of one connection and judges their responses. One instance per
/// connection, so a stateful workload (say, a heartbeating member per in-flight slot) keeps
/// its state here.
pub trait Generator: Send + 'static {
    /// Appends one complete request frame (size prefix included) with this correlation id.
    fn write_request(&mut self, correlation_id: i32, out: &mut BytesMut);
    /// Judges one response frame (without the size prefix; its correlation id already
    /// matched). `Err` counts as an error.
    fn check_response(&mut self, frame: &[u8]) -> Result<(), String>;
}

/// The workloads `--api` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    ApiVersions,
    Metadata,
}

impl Workload {
    const ALL: [Workload; 2] = [Workload::ApiVersions, Workload::Metadata];

    fn parse(name: &str) -> Option<Workload> {
        match name.to_ascii_lowercase().as_str() {
            "apiversions" | "api_versions" | "api-versions" => Some(Workload::ApiVersions),
            "metadata" => Some(Workload::Metadata),
            _ => None,
        }
    }

    fn api(self) -> ApiKey {
        match self {
            Workload::ApiVersions => ApiKey::ApiVersions,
            Workload::Metadata => ApiKey::Metadata,
        }
    }

    fn default_version(self) -> i16 {
        match self {
            // What current Java clients and librdkafka send.
            Workload::ApiVersions => 3,
            Workload::Metadata => 12,
        }
    }

    fn generator(self, version: i16) -> Result<Box<dyn Generator>, String> {
        match self {
            Workload::ApiVersions => {
                let request = ApiVersionsRequest {
                    client_software_name: "kcoord-load".into(),
                    client_software_version: "1.0".into(),
                    ..Default::default()
                };
                Ok(Box::new(Repeat::new(
                    ApiKey::ApiVersions,
                    version,
                    &request,
                    |body, version| {
                        let response = ApiVersionsResponse::decode(body, version)
                            .map_err(|e| e.to_string())?;
                        if response.error_code != 0 {
                            return Err(format!("ApiVersions error code {}", response.error_code));
                        }
                        if response.api_keys.is_empty() {
                            return Err("ApiVersions lists no API".into());
                        }
                        Ok(())
                    },
                )?))
            }
            Workload::Metadata => {
                // All topics (null), as a client's periodic refresh asks.
                let request = MetadataRequest {
                    topics: None,
                    allow_auto_topic_creation: false,
                    ..Default::default()
                };
                Ok(Box::new(Repeat::new(
                    ApiKey::Metadata,
                    version,
                    &request,
                    |body, version| {
                        let response =
                            MetadataResponse::decode(body, version).map_err(|e| e.to_string())?;
                        if response.brokers.is_empty() {
                            return Err("Metadata lists no broker".into());
                        }
                        if response.error_code != 0 {
                            return Err(format!("Metadata error code {}", response.error_code));
                        }
                        Ok(())
                    },
                )?))
            }
        }
    }
}

/// The same request over and over. The frame is encoded once; only the correlation id changes.
/// The first response is decoded and checked in full; every later one must be byte-identical
/// to it apart from the correlation id (the answers of these read-only APIs do not change).
struct Repeat {
    frame: Vec<u8>,
    version: i16,
    response_header_version: i16,
    check_first: fn(&mut Bytes, i16) -> Result<(), String>,
    expected: Option<Vec<u8>>,
}

/// Offset of the correlation id in a request frame: size (4), api key (2), version (2).
const CORRELATION_ID_AT: usize = 8;

impl Repeat {
    fn new<R: Encodable>(
        api: ApiKey,
        version: i16,
        request: &R,
        check_first: fn(&mut Bytes, i16) -> Result<(), String>,
    ) -> Result<Repeat, String> {
        let range = api.valid_versions();
        if version < range.min || version > range.max {
            return Err(format!(
                "{} has versions {}..{}, not {version}",
                api.name(),
                range.min,
                range.max
            ));
        }
        let header = RequestHeader {
            request_api_key: api.key(),
            request_api_version: version,
            correlation_id: 0,
            client_id: Some("kcoord-load".into()),
            ..Default::default()
        };
        let header_version = api.request_header_version(version);
        let mut frame = BytesMut::new();
        write_frame(&mut frame, |buf| {
            header
                .encode(buf, header_version)
                .map_err(|e| e.to_string())?;
            request.encode(buf, version).map_err(|e| e.to_string())
        })
        .map_err(|e| format!("cannot encode the {} v{version} request: {e}", api.name()))?;
        Ok(Repeat {
            frame: frame.to_vec(),
            version,
            response_header_version: api.response_header_version(version),
            check_first,
            expected: None,
        })
    }
}

impl Generator for Repeat {
    fn write_request(&mut self, correlation_id: i32, out: &mut BytesMut) {
        let start = out.len();
        out.extend_from_slice(&self.frame);
        out[start + CORRELATION_ID_AT..start + CORRELATION_ID_AT + 4]
            .copy_from_slice(&correlation_id.to_be_bytes());
    }

    fn check_response(&mut self, frame: &[u8]) -> Result<(), String> {
        let rest = frame
            .get(4..)
            .ok_or("response shorter than its correlation id")?;
        match &self.expected {
            Some(expected) if expected.as_slice() == rest => Ok(()),
            Some(_) => Err("response differs from the first one".into()),
            None => {
                let mut bytes = Bytes::copy_from_slice(frame);
                ResponseHeader::decode(&mut bytes, self.response_header_version)
                    .map_err(|e| format!("response header: {e}"))?;
                (self.check_first)(&mut bytes, self.version)?;
                if bytes.has_remaining() {
                    return Err(format!(
                        "{} bytes left after the response body",
                        bytes.remaining()
                    ));
                }
                self.expected = Some(rest.to_vec());
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Options

#[derive(Debug, Clone)]
struct Options {
    workloads: Vec<Workload>,
    api_version: Option<i16>,
    connections: Vec<usize>,
    inflight: Vec<usize>,
    seconds: f64,
    warmup: f64,
    addr: Option<String>,
    client_threads: usize,
}

const USAGE: &str =
    "usage: load [--api apiversions|metadata[,..]] [--connections C[,..]] [--inflight P[,..]] \
[--seconds S] [--warmup W] [--api-version V] [--addr host:port] [--client-threads N]";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut options = if bench {
        Options {
            workloads: vec![Workload::ApiVersions],
            api_version: None,
            connections: vec![64],
            inflight: vec![16],
            seconds: 5.0,
            warmup: 1.0,
            addr: None,
            client_threads: 2,
        }
    } else {
        // `cargo test --all-targets`: a quick smoke run of every workload.
        Options {
            workloads: Workload::ALL.to_vec(),
            api_version: None,
            connections: vec![1],
            inflight: vec![1],
            seconds: 0.2,
            warmup: 0.0,
            addr: None,
            client_threads: 1,
        }
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (flag, None),
        };
        let takes_value = matches!(
            name,
            "--api"
                | "--connections"
                | "--inflight"
                | "--seconds"
                | "--warmup"
                | "--api-version"
                | "--addr"
                | "--client-threads"
        );
        if !takes_value {
            match name {
                "--bench" => {}
                _ if bench => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
                _ => eprintln!("load: ignoring argument {flag:?} (smoke mode)"),
            }
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
            "--api" => {
                options.workloads = list(&value, |s| {
                    Workload::parse(s)
                        .ok_or_else(|| format!("unknown api {s:?} (apiversions, metadata)"))
                })?
            }
            "--connections" => options.connections = list(&value, positive)?,
            "--inflight" => options.inflight = list(&value, positive)?,
            "--seconds" => options.seconds = seconds(&value)?,
            "--warmup" => options.warmup = seconds(&value)?,
            "--api-version" => {
                options.api_version = Some(
                    value
                        .parse()
                        .map_err(|_| format!("bad --api-version {value:?}"))?,
                )
            }
            "--addr" => options.addr = Some(value),
            "--client-threads" => options.client_threads = positive(&value)?,
            _ => unreachable!("takes_value lists exactly these"),
        }
    }
    if options.seconds <= 0.0 {
        return Err("--seconds must be above 0".into());
    }
    Ok(options)
}

fn list<T>(value: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let items = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse)
        .collect::<Result<Vec<_>, _>>()?;
    if items.is_empty() {
        return Err(format!("empty list {value:?}"));
    }
    Ok(items)
}

fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a positive integer, got {s:?}")),
    }
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=3600.0).contains(&x) => Ok(x),
        _ => Err(format!("expected seconds between 0 and 3600, got {s:?}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Running

/// One run's settings.
#[derive(Debug, Clone, Copy)]
struct Run {
    workload: Workload,
    version: i16,
    connections: usize,
    inflight: usize,
    seconds: f64,
    warmup: f64,
}

/// What one connection measured.
#[derive(Default)]
struct ConnResult {
    /// Requests sent after the warm-up and answered before the end.
    requests: u64,
    /// Their latencies in ns (at most the connection's share of `MAX_SAMPLES`).
    latencies_ns: Vec<u32>,
    errors: u64,
    first_error: Option<String>,
}

impl ConnResult {
    fn error(&mut self, count: u64, reason: String) {
        self.errors += count;
        self.first_error.get_or_insert(reason);
    }
}

/// Timeline of a run, shared by its connections.
struct Window {
    measure_from: Instant,
    end: Instant,
}

async fn run_connection(
    addr: String,
    mut generator: Box<dyn Generator>,
    inflight: usize,
    window: Arc<Window>,
    max_samples: usize,
) -> ConnResult {
    let mut result = ConnResult::default();
    let stream = match TcpStream::connect(&addr).await {
        Ok(stream) => stream,
        Err(e) => {
            result.error(1, format!("connect to {addr}: {e}"));
            return result;
        }
    };
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let decoder = FrameDecoder::new(64 * 1024 * 1024);
    let mut sent: VecDeque<(i32, Instant)> = VecDeque::with_capacity(inflight);
    let mut out = BytesMut::with_capacity(inflight * 64);
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut next_id: i32 = 0;

    let now = Instant::now();
    for _ in 0..inflight {
        generator.write_request(next_id, &mut out);
        sent.push_back((next_id, now));
        next_id = next_id.wrapping_add(1);
    }
    if let Err(e) = writer.write_all(&out).await {
        result.error(sent.len() as u64, format!("write: {e}"));
        return result;
    }
    out.clear();

    while !sent.is_empty() {
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        match tokio::time::timeout(STALL_TIMEOUT, reader.read_buf(&mut buf)).await {
            Ok(Ok(0)) => {
                result.error(sent.len() as u64, "the server closed the connection".into());
                return result;
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                result.error(sent.len() as u64, format!("read: {e}"));
                return result;
            }
            Err(_) => {
                result.error(
                    sent.len() as u64,
                    format!("no response for {STALL_TIMEOUT:?}"),
                );
                return result;
            }
        }
        let now = Instant::now();
        let sending = now < window.end;
        loop {
            let frame = match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    result.error(sent.len() as u64, format!("response framing: {e}"));
                    return result;
                }
            };
            let Some((correlation_id, sent_at)) = sent.pop_front() else {
                result.error(1, "a response nobody asked for".into());
                return result;
            };
            let got = frame
                .get(..4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            if got != Some(correlation_id) {
                result.error(
                    sent.len() as u64 + 1,
                    format!("expected correlation id {correlation_id}, got {got:?}"),
                );
                return result;
            }
            match generator.check_response(&frame) {
                Ok(()) => {
                    if sent_at >= window.measure_from && now <= window.end {
                        result.requests += 1;
                        if result.latencies_ns.len() < max_samples {
                            let ns = now.duration_since(sent_at).as_nanos();
                            result
                                .latencies_ns
                                .push(u32::try_from(ns).unwrap_or(u32::MAX));
                        }
                    }
                }
                Err(e) => result.error(1, e),
            }
            if sending {
                generator.write_request(next_id, &mut out);
                sent.push_back((next_id, now));
                next_id = next_id.wrapping_add(1);
            }
        }
        if !out.is_empty() {
            if let Err(e) = writer.write_all(&out).await {
                result.error(sent.len() as u64, format!("write: {e}"));
                return result;
            }
            out.clear();
        }
    }
    result
}

/// The summary of one run.
struct Summary {
    run: Run,
    requests: u64,
    req_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    max_us: f64,
    errors: u64,
    first_error: Option<String>,
}

impl Summary {
    fn json(&self) -> String {
        let r = &self.run;
        let mut line = String::new();
        let _ = write!(
            line,
            r#"{{"bench":"load","api":"{}","connections":{},"inflight":{},"seconds":{:.1},"requests":{},"req_per_s":{:.0},"p50_us":{:.1},"p99_us":{:.1},"p999_us":{:.1},"errors":{},"version":{},"warmup":{:.1},"max_us":{:.1}}}"#,
            r.workload.api().name(),
            r.connections,
            r.inflight,
            r.seconds,
            self.requests,
            self.req_per_s,
            self.p50_us,
            self.p99_us,
            self.p999_us,
            self.errors,
            r.version,
            r.warmup,
            self.max_us,
        );
        line
    }
}

/// Nearest-rank percentile of sorted samples, in µs.
fn percentile_us(sorted_ns: &[u32], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_ns.len() as f64).ceil() as usize;
    f64::from(sorted_ns[rank.clamp(1, sorted_ns.len()) - 1]) / 1000.0
}

async fn run_one(addr: &str, run: Run) -> Summary {
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(run.warmup);
    let window = Arc::new(Window {
        measure_from,
        end: measure_from + Duration::from_secs_f64(run.seconds),
    });
    let max_samples = (MAX_SAMPLES / run.connections).max(1);
    let mut tasks = Vec::with_capacity(run.connections);
    for _ in 0..run.connections {
        let generator = run
            .workload
            .generator(run.version)
            .expect("validated before the run");
        tasks.push(tokio::spawn(run_connection(
            addr.to_string(),
            generator,
            run.inflight,
            Arc::clone(&window),
            max_samples,
        )));
    }
    let mut requests = 0;
    let mut errors = 0;
    let mut first_error = None;
    let mut latencies = Vec::new();
    for task in tasks {
        match task.await {
            Ok(r) => {
                requests += r.requests;
                errors += r.errors;
                first_error = first_error.or(r.first_error);
                latencies.extend(r.latencies_ns);
            }
            Err(e) => {
                errors += run.inflight as u64;
                first_error = first_error.or(Some(format!("connection task failed: {e}")));
            }
        }
    }
    latencies.sort_unstable();
    Summary {
        run,
        requests,
        req_per_s: requests as f64 / run.seconds,
        p50_us: percentile_us(&latencies, 50.0),
        p99_us: percentile_us(&latencies, 99.0),
        p999_us: percentile_us(&latencies, 99.9),
        max_us: latencies.last().map_or(0.0, |&ns| f64::from(ns) / 1000.0),
        errors,
        first_error,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse_args(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut runs = Vec::new();
    for &workload in &options.workloads {
        let version = options.api_version.unwrap_or(workload.default_version());
        if let Err(e) = workload.generator(version) {
            eprintln!("load: {e}");
            return ExitCode::from(2);
        }
        for &connections in &options.connections {
            for &inflight in &options.inflight {
                runs.push(Run {
                    workload,
                    version,
                    connections,
                    inflight,
                    seconds: options.seconds,
                    warmup: options.warmup,
                });
            }
        }
    }

    // The daemon: one given by --addr, or our own child process for all runs.
    let daemon = match &options.addr {
        Some(_) => None,
        None => Some(common::Daemon::start(&[])),
    };
    let addr = match (&options.addr, &daemon) {
        (Some(addr), _) => addr.clone(),
        (None, Some(daemon)) => daemon.bootstrap(),
        (None, None) => unreachable!(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("load: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };

    let mut failed = false;
    for run in runs {
        let summary = runtime.block_on(run_one(&addr, run));
        println!("{}", summary.json());
        if summary.errors > 0 || summary.requests == 0 {
            failed = true;
            eprintln!(
                "load: {} run with C={} P={}: {} errors, {} requests; first error: {}",
                run.workload.api().name(),
                run.connections,
                run.inflight,
                summary.errors,
                summary.requests,
                summary.first_error.as_deref().unwrap_or("none")
            );
        }
    }
    if let Some(daemon) = daemon {
        if !daemon.is_alive() {
            eprintln!(
                "load: the daemon died during the runs\n{}",
                daemon.stderr_log()
            );
            return ExitCode::FAILURE;
        }
        daemon.stop();
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
