//! Load bench: C connections with P requests in flight each, for a bounded time, against the
//! real daemon; one JSON line per run.
//!
//! ```text
//! cargo bench --bench load -- --connections 64 --inflight 16 --seconds 5 --api apiversions
//! cargo bench --bench load -- --api apiversions,metadata --connections 1,64 --inflight 1,16
//! cargo bench --bench load -- --addr 127.0.0.1:9092 --api metadata      # a daemon you run
//! cargo bench --bench load -- --api heartbeat --rounds 3               # issue 3's benchmark 1
//! cargo bench --bench load -- --api heartbeat --compare-plugin memory --rounds 5   # KIP-1331
//! cargo bench --bench load -- --api heartbeat --background-produce 4 --rounds 3  # issue 10
//! cargo bench --bench load -- --api heartbeat --compare-durable --rounds 5       # issue 12
//! cargo bench --bench load -- --api heartbeat --compare-gateway --rounds 3       # issue 25
//! ```
//!
//! Flags (lists are comma-separated; every combination of `--api`, `--connections` and
//! `--inflight` is one run, all against the same daemon):
//! - `--api apiversions|metadata|heartbeat` (default `apiversions`)
//! - `--connections C` (default 64), `--inflight P` (default 16)
//! - `--seconds S` measured time (default 5), `--warmup W` seconds before it (default 1)
//! - `--api-version V` overrides the request version (defaults: ApiVersions v3, Metadata v12,
//!   StreamsGroupHeartbeat: the highest both sides support)
//! - `--addr host:port` a running daemon's broker listener; without it the bench starts the
//!   `kcoord` binary Cargo built alongside it (for `cargo bench`: the optimized one) as a
//!   separate process on free loopback ports, and stops it afterwards (the environment
//!   variable `KCOORD_BIN` names another build to start instead)
//! - `--daemon-pid PID` with `--addr`: the server's process id, so the run lines report its CPU
//!   time (any Kafka-protocol server: `vs_kafka` runs this bench against Apache Kafka with it)
//! - `--daemon-config KEY=VALUE` (repeatable) a line added to the config of the daemons the
//!   bench starts, after its own
//! - `--client-threads N` worker threads of the load generator's runtime (default 2)
//! - `--rounds R` repeats the whole list of runs R times, alternating (default 1)
//! - heartbeats only: `--groups G`, `--members M`, `--partitions N`,
//!   `--owned changed|always[,..]`, `--client replay|member[,..]` (below)
//!
//! Heartbeat workload (`--api heartbeat`): `--groups G` (1000) streams groups of `--members M`
//! (10) members, each group with one stateless subtopology reading a pre-created source topic
//! of `--partitions N` (10) partitions. The daemon gets `group.streams.initial.rebalance.delay.ms=0`
//! and `group.streams.assignment.interval.ms=0` (so the setup converges at once) and a 300 s
//! session timeout (so members idle during the ApiVersions runs are not expired). Before any
//! run, every member joins and the bench heartbeats until every group is Stable (checked on
//! the members and with StreamsGroupDescribe). Then member `i` belongs to connection `i % C`;
//! a connection keeps P of its members' heartbeats in flight (at most one per member), always
//! sending for the member that waited longest, as fast as the answers come. In steady state a
//! member's request and the coordinator's answer never change, so with `--client replay` (the
//! default) each member's request is built by the member (`prepare_heartbeat`) and encoded once
//! per run, then resent with the correlation id patched in; its first answer goes through the
//! member's `handle_response` and later answers must equal it byte for byte, like ApiVersions'
//! `Repeat`. That keeps the bench's CPU per request close to the ApiVersions runs', which the
//! ratio needs on a machine the bench shares with the daemon. `--client member` runs every
//! request and answer through the member instead, which costs the bench two to three times
//! the CPU per request. Either way, anything but an accepted, unchanged heartbeat is an error.
//! `--owned changed,always` (default both): `changed` is what Kafka's Java client sends
//! (owned tasks only when they changed, so null in steady state), `always` lists them in every
//! heartbeat. Unless `--no-compare`, each (C, P) also gets an ApiVersions run right before the
//! heartbeat runs, and after all runs one `"bench":"heartbeat"` line per (C, P, client) sums
//! the rounds up: heartbeats/s, p50/p99, ApiVersions/s and the ratio (goal >= 0.8).
//!
//! `--compare-plugin NAME` (heartbeats only, no `--addr`): the bench starts two daemons with
//! the settings above, the first also with `group.streams.topology.description.class=NAME`,
//! sets up the same members on both, and runs every heartbeat configuration against the plugin
//! daemon, then the other, round after round (A, B, A, B, ...), so the machine's noise hits
//! both alike; run lines carry `"plugin"` (the name or null). With the plugin, the coordinator
//! asks one member per group for its topology description (heartbeat v2's
//! TopologyDescriptionId) during setup; that member pushes a small application's description
//! once (key 95, `fleet::description`: 3 sub-topologies x 10 nodes), as Kafka Streams does,
//! and StreamsGroupDescribe confirms every description is stored before the runs. So the runs
//! measure the steady state after the pushes: every heartbeat still calls the plugin's
//! `requires_topology_push`, which answers false, and a heartbeat response asking for a push
//! counts as an error. After all runs, one `"bench":"kip1331_heartbeat"` line per (C, P,
//! client, owned) sums the rounds: heartbeats/s and daemon CPU per heartbeat with and without
//! the plugin, their ratios (also per round) and the goal (plugin / no plugin >= 0.95).
//!
//! `--compare-durable` (heartbeats only, no `--addr`): the same A/B comparison between a daemon
//! that keeps its groups in a log directory (`log.dirs`, a temp dir; every change fsynced
//! before it is answered) and one that keeps them in memory; one `"bench":"durable_heartbeat"`
//! line per (C, P, client, owned) with both rates, their ratio and the goal (disk / memory >=
//! 0.95, issue 12). Steady heartbeats change nothing, so they should write nothing.
//!
//! `--compare-gateway` (heartbeats only, no `--addr`): the same A/B comparison between a
//! daemon in gateway mode (in front of a third daemon, standalone, playing the upstream
//! cluster: the gateway keeps its groups in the upstream's coordinator log topic and forwards
//! the source topics' creation) and a standalone one; one `"bench":"gateway_heartbeat"` line
//! per (C, P, client, owned) with both rates, the gateway daemon's CPU per heartbeat against
//! the standalone one's (the upstream's CPU is not counted: the goal is about kcoord's cost)
//! and the goal (gateway / standalone >= 0.8, issue 25). Steady heartbeats change nothing, so
//! the gateway should neither write nor forward anything for them.
//!
//! `--background-produce C` (heartbeats only, not with `--compare-plugin`): every heartbeat
//! run is made twice in a row, without and then with C more connections producing to the
//! daemon for the whole run (warm-up included), round after round, so the noise hits both
//! alike. Each background connection is an idempotent producer (InitProducerId) writing one
//! partition of the topic `bench-background` (C partitions, `retention.bytes` 64 MiB and
//! `segment.bytes` 16 MiB per partition; the daemons the bench starts check retention every
//! second, so an in-memory daemon stays small) with `--background-inflight` (1) Produce v12
//! requests in flight, acks=-1, batches of 16 KiB of 1 KiB records, uncompressed
//! (`support/produce.rs`: one batch, its sequence patched per request; every answer checked);
//! `--background-rate MBPS` caps the total at that many MB/s (default 0: as fast as the daemon
//! answers). Run lines then carry `"background"` (true/false) and the produced MB/s, and after
//! all runs one `"bench":"heartbeat_background"` line per (C, P, client, owned) sums the rounds:
//! heartbeats/s and daemon CPU per heartbeat without and with the produce load, their ratio
//! (also per round), and the background's MB/s.
//!
//! Every run line also carries the CPU seconds the daemon (when the bench started it) and the
//! bench process used during the measured window, per request: a ratio the noisy machine
//! disturbs less than throughput.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration
//! (C=1, P=1, 0.2 s, no warm-up, every api, heartbeats with both `--client` modes; 2 groups of
//! 3 members), then the replayed heartbeat runs with `--compare-plugin memory`, then those with
//! `--background-produce 1` (owned tasks when changed), so the code stays exercised; unknown
//! arguments (libtest's) are ignored there. The process exits with
//! status 1 if any run saw an error or completed no request.
//!
//! How it measures: each connection is one task that writes P requests, then for every
//! response read writes one more (responses arrive in request order, so the send time of a
//! response's request is the front of a queue). Requests are frames encoded once with the
//! correlation id patched in (heartbeats: once per member, unless `--client member`) and
//! answers are compared with the first one byte for byte, so the generator stays cheap next
//! to the daemon. Latency is send-to-receive per request, recorded for requests sent after
//! the warm-up and answered before the end; `req_per_s` is their count over the measured
//! seconds. Latencies are kept exactly (ns, `u32`; at most `MAX_SAMPLES` per run) and sorted
//! for the percentiles.
//!
//! New workloads implement [`Generator`] and get a name in [`Workload`].

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
#[path = "support/replay.rs"]
mod replay;
#[path = "support/secure.rs"]
mod secure;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use args::{list, positive, seconds};
use kcoord_client::streams::OwnedTasksReporting;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
};
use kcoord_wire::Decodable;
use replay::{check_version, ClientMode, Generator, Repeat, MAX_SAMPLES};
use secure::Dial;

/// The source topic of the heartbeat workload's groups.
const SOURCE_TOPIC: &str = "bench-source";
/// The topic of `--background-produce`.
const BACKGROUND_TOPIC: &str = "bench-background";
const BACKGROUND_BATCH_BYTES: usize = 16 * 1024;
const BACKGROUND_RECORD_BYTES: usize = 1024;
/// Small segments and 64 MiB kept per partition, so an in-memory daemon stays small.
const BACKGROUND_TOPIC_CONFIGS: &[(&str, &str)] = &[
    ("retention.bytes", "67108864"),
    ("segment.bytes", "16777216"),
];

// ---------------------------------------------------------------------------------------------
// Workloads

/// The workloads `--api` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    ApiVersions,
    Metadata,
    Heartbeat,
}

impl Workload {
    const ALL: [Workload; 3] = [
        Workload::ApiVersions,
        Workload::Metadata,
        Workload::Heartbeat,
    ];

    fn parse(name: &str) -> Option<Workload> {
        match name.to_ascii_lowercase().as_str() {
            "apiversions" | "api_versions" | "api-versions" => Some(Workload::ApiVersions),
            "metadata" => Some(Workload::Metadata),
            "heartbeat" | "streamsgroupheartbeat" | "streams-group-heartbeat" => {
                Some(Workload::Heartbeat)
            }
            _ => None,
        }
    }

    fn api(self) -> ApiKey {
        match self {
            Workload::ApiVersions => ApiKey::ApiVersions,
            Workload::Metadata => ApiKey::Metadata,
            Workload::Heartbeat => ApiKey::StreamsGroupHeartbeat,
        }
    }

    /// The version sent unless `--api-version` says otherwise; `None` = negotiated.
    fn default_version(self) -> Option<i16> {
        match self {
            // What current Java clients and librdkafka send.
            Workload::ApiVersions => Some(3),
            Workload::Metadata => Some(12),
            Workload::Heartbeat => None,
        }
    }

    /// A generator of a stateless workload (ApiVersions, Metadata).
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
            Workload::Heartbeat => Err("the heartbeat workload needs its members".into()),
        }
    }
}

/// When the heartbeat workload lists owned tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owned {
    /// Only when changed (null in steady state), as Kafka's Java client.
    Changed,
    /// In every heartbeat.
    Always,
}

impl Owned {
    fn name(self) -> &'static str {
        match self {
            Owned::Changed => "changed",
            Owned::Always => "always",
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
    /// `--daemon-pid PID`: the process behind `--addr`, whose CPU time the runs report.
    daemon_pid: Option<u32>,
    client_threads: usize,
    rounds: usize,
    groups: usize,
    members: usize,
    partitions: usize,
    owned: Vec<Owned>,
    client: Vec<ClientMode>,
    compare: bool,
    /// `--compare-plugin`: the topology description plugin of the first of two daemons.
    compare_plugin: Option<String>,
    /// `--compare-durable`: the first of two daemons keeps groups in a log directory.
    compare_durable: bool,
    /// `--compare-gateway`: the first of two daemons is a gateway in front of a third.
    compare_gateway: bool,
    /// `--daemon-config KEY=VALUE` lines for the daemons the bench starts.
    daemon_config: Vec<String>,
    /// `--background-produce C`: producer connections during half the heartbeat runs.
    background_produce: Option<usize>,
    /// `--background-inflight P` of each background connection.
    background_inflight: usize,
    /// `--background-rate MBPS` in total (0: unpaced).
    background_rate: f64,
    /// `--kafka`: every run also against an Apache Kafka 4.4 broker.
    kafka: bool,
    /// `--pin-servers CPUS` / `--pin-load CPUS`: `taskset` lists for the servers and the bench.
    pin_servers: Option<String>,
    pin_load: Option<String>,
}

const USAGE: &str =
    "usage: load [--api apiversions|metadata|heartbeat[,..]] [--connections C[,..]] \
[--inflight P[,..]] [--seconds S] [--warmup W] [--api-version V] [--addr host:port] \
[--daemon-pid PID] \
[--client-threads N] [--rounds R] [--groups G] [--members M] [--partitions N] \
[--owned changed|always[,..]] [--client replay|member[,..]] [--no-compare] \
[--compare-plugin NAME] [--compare-durable] [--compare-gateway] [--daemon-config KEY=VALUE].. [--background-produce C] \
[--background-inflight P] [--background-rate MBPS] [--kafka] [--pin-servers CPUS] \
[--pin-load CPUS]";

impl Options {
    /// Whether the runs compare two daemons the bench starts (`--compare-*`).
    fn compares_daemons(&self) -> bool {
        self.compare_plugin.is_some() || self.compare_durable || self.compare_gateway
    }
}

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
            daemon_pid: None,
            kafka: false,
            pin_servers: None,
            pin_load: None,
            client_threads: 2,
            rounds: 1,
            groups: 1000,
            members: 10,
            partitions: 10,
            owned: vec![Owned::Changed, Owned::Always],
            client: vec![ClientMode::Replay],
            compare: true,
            compare_plugin: None,
            compare_durable: false,
            compare_gateway: false,
            daemon_config: Vec::new(),
            background_produce: None,
            background_inflight: 1,
            background_rate: 0.0,
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
            daemon_pid: None,
            kafka: false,
            pin_servers: None,
            pin_load: None,
            client_threads: 1,
            rounds: 1,
            groups: 2,
            members: 3,
            partitions: 4,
            owned: vec![Owned::Changed, Owned::Always],
            // Both, so both code paths stay exercised.
            client: vec![ClientMode::Replay, ClientMode::Member],
            compare: true,
            compare_plugin: None,
            compare_durable: false,
            compare_gateway: false,
            daemon_config: Vec::new(),
            background_produce: None,
            background_inflight: 1,
            background_rate: 0.0,
        }
    };
    let mut api_given = false;
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
                | "--daemon-pid"
                | "--client-threads"
                | "--rounds"
                | "--groups"
                | "--members"
                | "--partitions"
                | "--owned"
                | "--client"
                | "--compare-plugin"
                | "--daemon-config"
                | "--background-produce"
                | "--background-inflight"
                | "--background-rate"
                | "--pin-servers"
                | "--pin-load"
        );
        if !takes_value {
            match name {
                "--bench" => {}
                "--no-compare" => options.compare = false,
                "--kafka" => options.kafka = true,
                "--compare-durable" => options.compare_durable = true,
                "--compare-gateway" => options.compare_gateway = true,
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
                api_given = true;
                options.workloads = list(&value, |s| {
                    Workload::parse(s).ok_or_else(|| {
                        format!("unknown api {s:?} (apiversions, metadata, heartbeat)")
                    })
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
            "--daemon-pid" => {
                options.daemon_pid = Some(
                    value
                        .parse()
                        .map_err(|_| format!("bad --daemon-pid {value:?}"))?,
                )
            }
            "--compare-plugin" => options.compare_plugin = Some(value),
            "--daemon-config" => options.daemon_config.push(value),
            "--pin-servers" => options.pin_servers = Some(value),
            "--pin-load" => options.pin_load = Some(value),
            "--background-produce" => options.background_produce = Some(positive(&value)?),
            "--background-inflight" => options.background_inflight = positive(&value)?,
            "--background-rate" => {
                options.background_rate = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=100_000.0).contains(r))
                    .ok_or_else(|| format!("bad --background-rate {value:?} (MB/s, 0 = unpaced)"))?
            }
            "--client-threads" => options.client_threads = positive(&value)?,
            "--rounds" => options.rounds = positive(&value)?,
            "--groups" => options.groups = positive(&value)?,
            "--members" => options.members = positive(&value)?,
            "--partitions" => options.partitions = positive(&value)?,
            "--owned" => {
                options.owned = list(&value, |s| match s {
                    "changed" => Ok(Owned::Changed),
                    "always" => Ok(Owned::Always),
                    _ => Err(format!("unknown --owned {s:?} (changed, always)")),
                })?
            }
            "--client" => {
                options.client = list(&value, |s| match s {
                    "replay" => Ok(ClientMode::Replay),
                    "member" => Ok(ClientMode::Member),
                    _ => Err(format!("unknown --client {s:?} (replay, member)")),
                })?
            }
            _ => unreachable!("takes_value lists exactly these"),
        }
    }
    if options.seconds <= 0.0 {
        return Err("--seconds must be above 0".into());
    }
    if options.partitions > 100_000 {
        return Err("--partitions must be at most 100000".into());
    }
    let comparisons = usize::from(options.compare_plugin.is_some())
        + usize::from(options.compare_durable)
        + usize::from(options.compare_gateway);
    if comparisons > 1 {
        return Err("only one of --compare-plugin, --compare-durable, --compare-gateway".into());
    }
    if options.compares_daemons() {
        if options.addr.is_some() {
            return Err("--compare-plugin starts its own two daemons; drop --addr".into());
        }
        // Heartbeats only (the default then): the comparison is between the daemons.
        if api_given && options.workloads != [Workload::Heartbeat] {
            return Err("--compare-plugin needs --api heartbeat (and no other api)".into());
        }
        options.workloads = vec![Workload::Heartbeat];
        options.compare = false;
    }
    if options.background_produce.is_some() {
        if options.compares_daemons() {
            return Err("--background-produce and --compare-* do not combine".into());
        }
        if !options.workloads.contains(&Workload::Heartbeat) {
            return Err("--background-produce needs --api heartbeat".into());
        }
    }
    if options.kafka
        && (options.addr.is_some()
            || options.compares_daemons()
            || options.background_produce.is_some())
    {
        return Err(
            "--kafka starts kcoord and Kafka itself; drop --addr, --compare-plugin and --background-produce"
                .into(),
        );
    }
    Ok(options)
}

// ---------------------------------------------------------------------------------------------
// Running

/// One run's settings.
#[derive(Debug, Clone, Copy)]
struct Run {
    workload: Workload,
    /// For the heartbeat workload.
    owned: Option<Owned>,
    client: Option<ClientMode>,
    version: i16,
    connections: usize,
    inflight: usize,
    seconds: f64,
    warmup: f64,
    round: usize,
    /// Which daemon (index into the targets; 0 unless `--compare-plugin`).
    target: usize,
    /// With the `--background-produce` load.
    background: bool,
}

/// The summary of one run.
struct Summary {
    run: Run,
    /// In flight per connection as run (the heartbeat workload caps it at the members).
    inflight: usize,
    requests: u64,
    req_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    max_us: f64,
    errors: u64,
    first_error: Option<String>,
    /// Sorted latencies (ns).
    latencies_ns: Vec<u32>,
    /// CPU seconds in the measured window: the daemon's (if known) and this process's.
    daemon_cpu_s: Option<f64>,
    client_cpu_s: Option<f64>,
    /// Heartbeat workload: members and groups driven.
    members: usize,
    groups: usize,
    /// Extra JSON fields (`,"plugin":...` with `--compare-plugin`).
    labels: String,
    /// `--background-produce`: batch bytes the background producers had answered in the
    /// measured window (`None`: a run without them).
    background_bytes: Option<u64>,
}

fn per_request_us(cpu_s: Option<f64>, requests: u64) -> String {
    match cpu_s {
        Some(s) if requests > 0 => format!("{:.2}", s * 1e6 / requests as f64),
        _ => "null".into(),
    }
}

fn opt_f64(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "null".into(), |x| format!("{x:.decimals$}"))
}

impl Summary {
    fn json(&self) -> String {
        let r = &self.run;
        let mut line = String::new();
        let _ = write!(
            line,
            r#"{{"bench":"load","api":"{}","connections":{},"inflight":{},"seconds":{:.1},"requests":{},"req_per_s":{:.0},"p50_us":{:.1},"p99_us":{:.1},"p999_us":{:.1},"errors":{},"version":{},"warmup":{:.1},"max_us":{:.1},"round":{},"daemon_cpu_s":{},"daemon_cpu_us_per_req":{},"client_cpu_s":{},"client_cpu_us_per_req":{}"#,
            r.workload.api().name(),
            r.connections,
            self.inflight,
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
            r.round,
            opt_f64(self.daemon_cpu_s, 2),
            per_request_us(self.daemon_cpu_s, self.requests),
            opt_f64(self.client_cpu_s, 2),
            per_request_us(self.client_cpu_s, self.requests),
        );
        if let (Some(owned), Some(client)) = (r.owned, r.client) {
            let _ = write!(
                line,
                r#","owned":"{}","client":"{}","groups":{},"members":{}"#,
                owned.name(),
                client.name(),
                self.groups,
                self.members
            );
        }
        line.push_str(&self.labels);
        line.push('}');
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

/// Runs one configuration with one generator per connection; gives the generators back.
async fn run_one(
    addr: &str,
    run: Run,
    generators: Vec<Box<dyn Generator>>,
    inflight: usize,
    daemon_pid: Option<u32>,
) -> (Summary, Vec<Box<dyn Generator>>) {
    let dial = Dial::plaintext(addr);
    let (m, back) = replay::measure(
        &dial,
        generators,
        inflight,
        run.warmup,
        run.seconds,
        daemon_pid,
    )
    .await;
    let summary = Summary {
        run,
        inflight,
        requests: m.requests,
        req_per_s: m.requests as f64 / run.seconds,
        p50_us: percentile_us(&m.latencies_ns, 50.0),
        p99_us: percentile_us(&m.latencies_ns, 99.0),
        p999_us: percentile_us(&m.latencies_ns, 99.9),
        max_us: m
            .latencies_ns
            .last()
            .map_or(0.0, |&ns| f64::from(ns) / 1000.0),
        errors: m.errors,
        first_error: m.first_error,
        latencies_ns: m.latencies_ns,
        daemon_cpu_s: m.daemon_cpu_s,
        client_cpu_s: m.client_cpu_s,
        members: 0,
        groups: 0,
        labels: String::new(),
        background_bytes: None,
    };
    (summary, back)
}

/// The heartbeat workload's members, joined and Stable.
struct Members {
    fleet: fleet::Fleet,
    /// Topology description pushes made during the setup.
    pushes: usize,
}

/// Joins every member and heartbeats until every group is Stable, then checks that with
/// StreamsGroupDescribe. With `plugin` (the daemon has a topology description plugin), the
/// members the coordinator asks push their description, and StreamsGroupDescribe must then
/// return every group's description.
async fn set_up_members(addr: &str, options: &Options, plugin: bool) -> Result<Members, String> {
    let started = Instant::now();
    let client = fleet::connect_client(addr).await?;
    match fleet::create_topic(&client.bootstrap(), SOURCE_TOPIC, options.partitions as i32).await {
        Ok(()) => {}
        // A daemon given with --addr may have it from an earlier run.
        Err(e) if e.contains("error 36 ") => {}
        Err(e) => return Err(e),
    }
    let version = match options.api_version {
        Some(v) => {
            check_version(ApiKey::StreamsGroupHeartbeat, v)?;
            v
        }
        None => fleet::heartbeat_version(&client).await?,
    };
    // Distinct group ids per bench process, so a daemon given with --addr can be reused.
    let prefix = format!("load-{}", std::process::id());
    let mut fleet = fleet::Fleet::new(options.members, options.partitions, &prefix, version);
    let topology = fleet::topology(SOURCE_TOPIC);
    // Built with "when changed"; the `always` runs add the owned tasks to each request.
    fleet.add_groups(
        &client,
        &topology,
        options.groups,
        OwnedTasksReporting::WhenChanged,
    );
    let ids: Vec<String> = (0..options.groups)
        .map(|g| fleet::group_id(&prefix, g))
        .collect();
    fleet::find_coordinators(&client, &ids).await?;
    let setup_connections = options.connections.iter().copied().max().unwrap_or(1);
    let mut pipes = Vec::new();
    for _ in 0..setup_connections {
        pipes.push(fleet::Pipe::connect(addr).await?);
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    let settled = fleet
        .settle(&mut pipes, 16, 0..options.groups, deadline)
        .await?;
    for group in fleet::describe(&client.bootstrap(), &ids).await? {
        fleet::check_stable(&group, options.members, options.partitions)?;
    }
    let mut pushes = 0;
    if plugin {
        let description = fleet::description(3, 10, SOURCE_TOPIC);
        pushes = fleet
            .push_descriptions(&mut pipes, &client.bootstrap(), &description, deadline)
            .await?;
        for group in fleet::describe_with(&client.bootstrap(), &ids, true).await? {
            if group.topology_description_status != fleet::DESCRIPTION_AVAILABLE {
                return Err(format!(
                    "{}: topology description status {} after the pushes",
                    group.group_id, group.topology_description_status
                ));
            }
        }
    }
    eprintln!(
        "load: {} members in {} groups joined and Stable after {} passes, {} heartbeats, {pushes} description pushes, {:.1} s (heartbeat v{version})",
        fleet.members.len(),
        options.groups,
        settled.passes,
        settled.heartbeats.heartbeats,
        started.elapsed().as_secs_f64()
    );
    Ok(Members { fleet, pushes })
}

/// Splits the members over `connections` generators: member `i` goes to connection `i % C`.
fn heartbeat_generators(
    members: &mut Members,
    connections: usize,
    always_owned: bool,
    client: ClientMode,
) -> Vec<Box<dyn Generator>> {
    let version = members.fleet.version;
    replay::heartbeat_generators(
        std::mem::take(&mut members.fleet.members),
        connections,
        version,
        always_owned,
        client,
    )
}

/// Takes the members back from the generators of a heartbeat run.
fn return_members(
    members: &mut Members,
    generators: Vec<Box<dyn Generator>>,
) -> Result<(), String> {
    members.fleet.members = replay::return_members(generators)?;
    Ok(())
}

/// The runs in order: every round, every (C, P), the workloads; a heartbeat workload brings
/// an ApiVersions run at the same (C, P) first unless one is listed or `--no-compare`.
fn plan(options: &Options, heartbeat_version: i16, targets: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    // `--api-version` applies to the listed workloads, not to an added comparison run.
    let listed = |w: Workload| match (options.api_version, w.default_version()) {
        (Some(v), _) => v,
        (None, Some(v)) => v,
        (None, None) => heartbeat_version,
    };
    let mut workloads: Vec<(Workload, i16)> =
        options.workloads.iter().map(|&w| (w, listed(w))).collect();
    if options.compare
        && options.workloads.contains(&Workload::Heartbeat)
        && !options.workloads.contains(&Workload::ApiVersions)
    {
        let w = Workload::ApiVersions;
        workloads.insert(0, (w, w.default_version().expect("ApiVersions has one")));
    }
    for round in 1..=options.rounds {
        for &connections in &options.connections {
            for &inflight in &options.inflight {
                for &(workload, version) in &workloads {
                    let modes: Vec<(Option<Owned>, Option<ClientMode>)> = match workload {
                        Workload::Heartbeat => options
                            .owned
                            .iter()
                            .flat_map(|&o| options.client.iter().map(move |&c| (Some(o), Some(c))))
                            .collect(),
                        _ => vec![(None, None)],
                    };
                    // With --background-produce: each heartbeat run without, then with it.
                    let backgrounds: &[bool] = if workload == Workload::Heartbeat
                        && options.background_produce.is_some()
                    {
                        &[false, true]
                    } else {
                        &[false]
                    };
                    for (owned, client) in modes {
                        for &background in backgrounds {
                            // With --compare-plugin: the plugin daemon, then the other.
                            for target in 0..targets {
                                runs.push(Run {
                                    workload,
                                    owned,
                                    client,
                                    version,
                                    connections,
                                    inflight,
                                    seconds: options.seconds,
                                    warmup: options.warmup,
                                    round,
                                    target,
                                    background,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    runs
}

/// Per (target, C, P, background): the ApiVersions totals and the heartbeat totals per client
/// and owned-tasks mode.
type PairTotals = (
    (usize, usize, usize, bool),
    Totals,
    Vec<((ClientMode, Owned), Totals)>,
);

/// Sums of the runs of one workload at one (C, P) over the rounds.
#[derive(Default)]
struct Totals {
    runs: usize,
    requests: u64,
    seconds: f64,
    latencies_ns: Vec<u32>,
    daemon_cpu_s: Option<f64>,
    client_cpu_s: Option<f64>,
    inflight: usize,
    /// req/s of each run, in order.
    rates: Vec<f64>,
    /// `--background-produce`: batch bytes produced during the measured windows.
    background_bytes: u64,
}

impl Totals {
    fn add(&mut self, s: &Summary) {
        let first = self.runs == 0;
        self.runs += 1;
        self.rates.push(s.req_per_s);
        self.requests += s.requests;
        self.seconds += s.run.seconds;
        let room = MAX_SAMPLES.saturating_sub(self.latencies_ns.len());
        self.latencies_ns
            .extend(s.latencies_ns.iter().take(room).copied());
        // A reading missing in any run makes the sum unknown.
        let sum = |total: Option<f64>, x: Option<f64>| if first { x } else { Some(total? + x?) };
        self.daemon_cpu_s = sum(self.daemon_cpu_s, s.daemon_cpu_s);
        self.client_cpu_s = sum(self.client_cpu_s, s.client_cpu_s);
        self.inflight = s.inflight;
        self.background_bytes += s.background_bytes.unwrap_or(0);
    }

    fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.requests as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The `"bench":"heartbeat"` line of one (C, P, client).
fn heartbeat_line(
    connections: usize,
    inflight: usize,
    options: &Options,
    version: i16,
    client: ClientMode,
    api_versions: Option<&Totals>,
    heartbeats: &mut [(Owned, &mut Totals)],
) -> String {
    let mut line = String::new();
    let _ = write!(
        line,
        r#"{{"bench":"heartbeat","connections":{connections},"inflight":{inflight},"client":"{}","groups":{},"members":{},"partitions":{},"version":{version},"rounds":{},"seconds_per_run":{:.1}"#,
        client.name(),
        options.groups,
        options.groups * options.members,
        options.partitions,
        options.rounds,
        options.seconds,
    );
    let av_rate = api_versions.map(Totals::rate);
    if let Some(av) = api_versions {
        let _ = write!(
            line,
            r#","apiversions_per_s":{:.0},"apiversions_daemon_cpu_us_per_req":{}"#,
            av.rate(),
            per_request_us(av.daemon_cpu_s, av.requests)
        );
    }
    for (owned, totals) in heartbeats {
        totals.latencies_ns.sort_unstable();
        let name = owned.name();
        let _ = write!(
            line,
            r#","hb_{name}_per_s":{:.0},"hb_{name}_inflight":{},"hb_{name}_p50_us":{:.1},"hb_{name}_p99_us":{:.1},"hb_{name}_daemon_cpu_us_per_req":{},"hb_{name}_client_cpu_us_per_req":{}"#,
            totals.rate(),
            totals.inflight,
            percentile_us(&totals.latencies_ns, 50.0),
            percentile_us(&totals.latencies_ns, 99.0),
            per_request_us(totals.daemon_cpu_s, totals.requests),
            per_request_us(totals.client_cpu_s, totals.requests),
        );
        if let Some(av) = av_rate.filter(|r| *r > 0.0) {
            let ratio = totals.rate() / av;
            let _ = write!(
                line,
                r#","ratio_{name}":{ratio:.3},"goal_met_{name}":{}"#,
                ratio >= 0.8
            );
        }
    }
    line.push_str(r#","goal_ratio":0.8}"#);
    line
}

/// How an A/B comparison of two daemons is labelled in its summary line.
struct AbNames {
    bench: &'static str,
    /// `"plugin":"memory"`-style label of the comparison.
    label: String,
    /// Prefixes of the two daemons' fields.
    with: &'static str,
    without: &'static str,
    /// The least `with / without` heartbeat rate the issue asks for.
    goal: f64,
}

impl AbNames {
    fn plugin(plugin: &str) -> AbNames {
        AbNames {
            bench: "kip1331_heartbeat",
            label: format!(r#""plugin":"{plugin}""#),
            with: "plugin",
            without: "no_plugin",
            goal: 0.95,
        }
    }

    /// `--compare-durable`: groups in a log directory against groups in memory.
    const DURABLE: AbNames = AbNames {
        bench: "durable_heartbeat",
        label: String::new(),
        with: "disk",
        without: "memory",
        goal: 0.95,
    };

    /// `--compare-gateway`: a gateway against a standalone daemon.
    const GATEWAY: AbNames = AbNames {
        bench: "gateway_heartbeat",
        label: String::new(),
        with: "gateway",
        without: "standalone",
        goal: 0.8,
    };
}

/// `Target::plugin` of the durable daemon of `--compare-durable`.
const DURABLE: &str = "durable";

/// `Target::plugin` of the gateway daemon of `--compare-gateway`.
const GATEWAY: &str = "gateway";

/// The summary line of one (C, P, client, owned) of an A/B comparison: `"kip1331_heartbeat"`
/// with `--compare-plugin`, `"durable_heartbeat"` with `--compare-durable`.
#[allow(clippy::too_many_arguments)]
fn ab_line(
    names: &AbNames,
    connections: usize,
    client: ClientMode,
    owned: Owned,
    options: &Options,
    version: i16,
    pushes: usize,
    with: &mut Totals,
    without: &mut Totals,
) -> String {
    with.latencies_ns.sort_unstable();
    without.latencies_ns.sort_unstable();
    let ratio = if without.rate() > 0.0 {
        with.rate() / without.rate()
    } else {
        0.0
    };
    let round_ratios: Vec<String> = with
        .rates
        .iter()
        .zip(&without.rates)
        .map(|(a, b)| format!("{:.3}", if *b > 0.0 { a / b } else { 0.0 }))
        .collect();
    let cpu = |t: &Totals| {
        t.daemon_cpu_s
            .filter(|_| t.requests > 0)
            .map(|s| s * 1e6 / t.requests as f64)
    };
    let cpu_ratio = match (cpu(with), cpu(without)) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let (bench, a, b) = (names.bench, names.with, names.without);
    let label = if names.label.is_empty() {
        String::new()
    } else {
        format!("{},", names.label)
    };
    format!(
        r#"{{"bench":"{bench}",{label}"connections":{connections},"inflight":{},"client":"{}","owned":"{}","groups":{},"members":{},"partitions":{},"version":{version},"rounds":{},"seconds_per_run":{:.1},"pushes":{pushes},"{a}_hb_per_s":{:.0},"{b}_hb_per_s":{:.0},"ratio":{ratio:.3},"round_ratios":[{}],"{a}_p50_us":{:.1},"{b}_p50_us":{:.1},"{a}_p99_us":{:.1},"{b}_p99_us":{:.1},"{a}_daemon_cpu_us_per_hb":{},"{b}_daemon_cpu_us_per_hb":{},"daemon_cpu_ratio":{},"{a}_client_cpu_us_per_hb":{},"{b}_client_cpu_us_per_hb":{},"goal_ratio":{},"goal_met":{}}}"#,
        with.inflight,
        client.name(),
        owned.name(),
        options.groups,
        options.groups * options.members,
        options.partitions,
        options.rounds,
        options.seconds,
        with.rate(),
        without.rate(),
        round_ratios.join(","),
        percentile_us(&with.latencies_ns, 50.0),
        percentile_us(&without.latencies_ns, 50.0),
        percentile_us(&with.latencies_ns, 99.0),
        percentile_us(&without.latencies_ns, 99.0),
        per_request_us(with.daemon_cpu_s, with.requests),
        per_request_us(without.daemon_cpu_s, without.requests),
        opt_f64(cpu_ratio, 3),
        per_request_us(with.client_cpu_s, with.requests),
        per_request_us(without.client_cpu_s, without.requests),
        names.goal,
        ratio >= names.goal,
    )
}

/// `--compare-gateway`: the standalone daemon playing the upstream cluster (the gateway's
/// nodes group is a classic group there: no wait for more members).
fn start_upstream() -> common::Daemon {
    common::Daemon::start(&["group.initial.rebalance.delay.ms=0"])
}

/// The config lines of a gateway in front of `upstream`: its one broker's port just freed by
/// the OS (the start is that port minus the broker's id).
fn gateway_config(upstream: &common::Daemon) -> Vec<String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port");
    let start = i64::from(port) - i64::from(upstream.node_id());
    vec![
        format!("upstream.bootstrap.servers={}", upstream.bootstrap()),
        format!("gateway.broker.port.start={start}"),
    ]
}

/// `--kafka`: a server's memory: kcoord's resident set, or the Kafka broker's Java heap in use
/// after a full collection (`None` when it cannot be read).
fn server_memory(target: &Target, options: &Options) -> Option<u64> {
    if !options.kafka {
        return None;
    }
    match &target.kafka {
        Some(broker) => broker
            .heap_used_after_gc()
            .map_err(|e| eprintln!("load: {e}"))
            .ok(),
        None => fleet::proc_status_kib(target.pid?, "VmRSS").map(|kib| kib * 1024),
    }
}

/// The `"bench":"vs_kafka_memory"` line: bytes per idle member joined, kcoord (RSS) and Kafka
/// (heap after GC), and the goal (kcoord at most a tenth).
fn memory_line(options: &Options, per_member: &[Option<f64>]) -> String {
    let (ours, theirs) = (
        per_member.first().copied().flatten(),
        per_member.get(1).copied().flatten(),
    );
    let ratio = match (ours, theirs) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    format!(
        r#"{{"bench":"vs_kafka_memory","groups":{},"members":{},"partitions":{},"kcoord_rss_bytes_per_member":{},"kafka_heap_bytes_per_member":{},"ratio":{},"goal_ratio":0.1,"goal_met":{}}}"#,
        options.groups,
        options.groups * options.members,
        options.partitions,
        opt_f64(ours, 0),
        opt_f64(theirs, 0),
        opt_f64(ratio, 4),
        ratio.is_some_and(|r| r <= 0.1),
    )
}

/// The `"bench":"vs_kafka_heartbeat"` line of one (C, P, client, owned) with `--kafka`:
/// heartbeats per server CPU-second of each, and the goal (kcoord at least ten times Kafka's).
fn kafka_line(
    connections: usize,
    client: ClientMode,
    owned: Owned,
    options: &Options,
    ours: &Totals,
    theirs: &Totals,
) -> String {
    let per_cpu_s = |t: &Totals| {
        t.daemon_cpu_s
            .filter(|s| *s > 0.0)
            .map(|s| t.requests as f64 / s)
    };
    let ratio = match (per_cpu_s(ours), per_cpu_s(theirs)) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    format!(
        r#"{{"bench":"vs_kafka_heartbeat","connections":{connections},"inflight":{},"client":"{}","owned":"{}","groups":{},"members":{},"partitions":{},"rounds":{},"seconds_per_run":{:.1},"kcoord_hb_per_s":{:.0},"kafka_hb_per_s":{:.0},"kcoord_hb_per_server_cpu_s":{},"kafka_hb_per_server_cpu_s":{},"ratio":{},"goal_ratio":10,"goal_met":{}}}"#,
        ours.inflight,
        client.name(),
        owned.name(),
        options.groups,
        options.groups * options.members,
        options.partitions,
        options.rounds,
        options.seconds,
        ours.rate(),
        theirs.rate(),
        opt_f64(per_cpu_s(ours), 0),
        opt_f64(per_cpu_s(theirs), 0),
        opt_f64(ratio, 2),
        ratio.is_some_and(|r| r >= 10.0),
    )
}

/// `--background-produce`: the topic (one partition per connection) and one idempotent
/// producer's stream per connection.
async fn set_up_background(
    addr: &str,
    connections: usize,
) -> Result<Vec<produce::ProduceStream>, String> {
    let client = fleet::connect_client(addr).await?;
    // Per bench process, so a daemon given with --addr can be reused.
    let topic = format!("{BACKGROUND_TOPIC}-{}", std::process::id());
    let batch = produce::build_batch(
        BACKGROUND_RECORD_BYTES,
        BACKGROUND_BATCH_BYTES,
        kcoord_record_batches::Compression::None,
        1,
    )?;
    produce::streams_on_new_topic(
        &client.bootstrap(),
        &topic,
        connections,
        BACKGROUND_TOPIC_CONFIGS,
        &batch,
    )
    .await
}

/// How each background connection sends: `--background-inflight`, paced to its share of
/// `--background-rate` if one is given.
fn background_drive(options: &Options, streams: &[produce::ProduceStream]) -> produce::Drive {
    let pace = (options.background_rate > 0.0 && !streams.is_empty()).then(|| {
        let per_connection = options.background_rate * 1e6 / streams.len() as f64;
        Duration::from_secs_f64(streams[0].batch_len() as f64 / per_connection)
    });
    produce::Drive {
        inflight: options.background_inflight,
        pace,
        limit: None,
    }
}

/// The `"bench":"heartbeat_background"` line of one (C, P, client, owned) with
/// `--background-produce`: the heartbeat runs without and with the produce load.
fn background_line(
    connections: usize,
    client: ClientMode,
    owned: Owned,
    options: &Options,
    without: &mut Totals,
    with: &mut Totals,
) -> String {
    without.latencies_ns.sort_unstable();
    with.latencies_ns.sort_unstable();
    let ratio = if without.rate() > 0.0 {
        with.rate() / without.rate()
    } else {
        0.0
    };
    let rates = |t: &Totals| {
        t.rates
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let round_ratios: Vec<String> = with
        .rates
        .iter()
        .zip(&without.rates)
        .map(|(a, b)| format!("{:.3}", if *b > 0.0 { a / b } else { 0.0 }))
        .collect();
    let background_mb_per_s = if with.seconds > 0.0 {
        with.background_bytes as f64 / with.seconds / 1e6
    } else {
        0.0
    };
    format!(
        r#"{{"bench":"heartbeat_background","connections":{connections},"inflight":{},"client":"{}","owned":"{}","groups":{},"members":{},"rounds":{},"seconds_per_run":{:.1},"background_connections":{},"background_inflight":{},"background_rate_cap_mb_per_s":{},"background_mb_per_s":{background_mb_per_s:.1},"hb_per_s":{:.0},"hb_per_s_with_background":{:.0},"ratio":{ratio:.3},"round_ratios":[{}],"rounds_hb_per_s":[{}],"rounds_hb_per_s_with_background":[{}],"p50_us":{:.1},"p50_us_with_background":{:.1},"p99_us":{:.1},"p99_us_with_background":{:.1},"daemon_cpu_us_per_hb":{},"daemon_cpu_us_per_hb_with_background":{},"client_cpu_us_per_hb":{},"client_cpu_us_per_hb_with_background":{}}}"#,
        without.inflight,
        client.name(),
        owned.name(),
        options.groups,
        options.groups * options.members,
        options.rounds,
        options.seconds,
        options.background_produce.unwrap_or(0),
        options.background_inflight,
        if options.background_rate > 0.0 {
            format!("{:.1}", options.background_rate)
        } else {
            "null".into()
        },
        without.rate(),
        with.rate(),
        round_ratios.join(","),
        rates(without),
        rates(with),
        percentile_us(&without.latencies_ns, 50.0),
        percentile_us(&with.latencies_ns, 50.0),
        percentile_us(&without.latencies_ns, 99.0),
        percentile_us(&with.latencies_ns, 99.0),
        per_request_us(without.daemon_cpu_s, without.requests),
        per_request_us(with.daemon_cpu_s, with.requests),
        per_request_us(without.client_cpu_s, without.requests),
        per_request_us(with.client_cpu_s, with.requests),
    )
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
    let mut configurations = vec![options.clone()];
    if !args.iter().any(|a| a == "--bench") && !options.compares_daemons() {
        // Smoke mode: the plugin comparison too, with the first client mode (replay) only:
        // the other's code does not depend on the plugin.
        configurations.push(Options {
            workloads: vec![Workload::Heartbeat],
            client: options.client[..1].to_vec(),
            compare: false,
            compare_plugin: Some("memory".into()),
            ..options.clone()
        });
        // And the heartbeats of a daemon keeping groups in a log directory against one in
        // memory.
        configurations.push(Options {
            workloads: vec![Workload::Heartbeat],
            client: options.client[..1].to_vec(),
            compare: false,
            compare_durable: true,
            ..options.clone()
        });
        // And those of a gateway in front of another daemon against a standalone one.
        configurations.push(Options {
            workloads: vec![Workload::Heartbeat],
            client: options.client[..1].to_vec(),
            compare: false,
            compare_gateway: true,
            ..options.clone()
        });
        // And the heartbeats with and without a background produce load, once.
        if options.background_produce.is_none() {
            configurations.push(Options {
                workloads: vec![Workload::Heartbeat],
                client: options.client[..1].to_vec(),
                owned: options.owned[..1].to_vec(),
                compare: false,
                background_produce: Some(1),
                ..options
            });
        }
    }
    for options in &configurations {
        let code = bench(options);
        if code != ExitCode::SUCCESS {
            return code;
        }
    }
    ExitCode::SUCCESS
}

/// A daemon the runs go to.
struct Target {
    /// Its topology description plugin, for `--compare-plugin`, or [`DURABLE`] for the daemon
    /// with a log directory of `--compare-durable` (else `None`).
    plugin: Option<String>,
    /// `--compare-durable`: the durable daemon's log directory (deleted when dropped).
    _log_dir: Option<tempfile::TempDir>,
    /// `--compare-gateway`: the daemon the gateway stands in front of (stopped when dropped).
    _upstream: Option<common::Daemon>,
    /// Ours, unless `--addr` named it.
    daemon: Option<common::Daemon>,
    addr: String,
    pid: Option<u32>,
    members: Option<Members>,
    /// `--background-produce`: one stream per background connection.
    background: Vec<produce::ProduceStream>,
    /// `--kafka`: the Apache Kafka broker this target is (stopped when dropped).
    kafka: Option<kafka::KafkaBroker>,
}

/// Runs one configuration: its daemon(s), the setup, every run, the summary lines.
fn bench(options: &Options) -> ExitCode {
    for &workload in &options.workloads {
        if workload == Workload::Heartbeat {
            continue;
        }
        let version = options
            .api_version
            .or(workload.default_version())
            .expect("stateless workloads have a default version");
        if let Err(e) = workload.generator(version) {
            eprintln!("load: {e}");
            return ExitCode::from(2);
        }
    }
    let heartbeats = options.workloads.contains(&Workload::Heartbeat);
    let compare_plugin = options.compares_daemons();

    // The daemons: one given by --addr, or our own child process for all runs; with
    // --compare-plugin two of ours, the first with the plugin.
    let plugins = match (&options.compare_plugin, options.compare_durable) {
        (Some(name), _) => vec![Some(name.clone()), None],
        (None, true) => vec![Some(DURABLE.to_string()), None],
        (None, false) if options.compare_gateway => vec![Some(GATEWAY.to_string()), None],
        (None, false) => vec![None],
    };
    let mut targets = Vec::new();
    for plugin in plugins {
        // --compare-durable: the first daemon's log directory, removed after the runs.
        let log_dir = (options.compare_durable && plugin.is_some()).then(|| {
            tempfile::Builder::new()
                .prefix("kcoord-bench-log-")
                .tempdir()
                .expect("a temp dir for the durable daemon")
        });
        // --compare-gateway: the upstream of the first daemon.
        let upstream = (plugin.as_deref() == Some(GATEWAY)).then(start_upstream);
        let daemon = options.addr.is_none().then(|| {
            let mut config: Vec<String> = Vec::new();
            if heartbeats {
                config.extend(
                    [
                        "group.streams.initial.rebalance.delay.ms=0",
                        "group.streams.assignment.interval.ms=0",
                        "group.streams.session.timeout.ms=300000",
                        "group.streams.max.session.timeout.ms=300000",
                    ]
                    .map(String::from),
                );
            }
            match (&log_dir, &plugin) {
                (Some(dir), _) => config.push(format!("log.dirs={}", dir.path().display())),
                (None, Some(_)) if upstream.is_some() => {
                    config.extend(upstream.as_ref().map(gateway_config).unwrap_or_default())
                }
                (None, Some(name)) => {
                    config.push(format!("group.streams.topology.description.class={name}"))
                }
                (None, None) => {}
            }
            if options.background_produce.is_some() {
                // The background topic's retention, applied every second.
                config.push("log.retention.check.interval.ms=1000".into());
            }
            config.extend(options.daemon_config.iter().cloned());
            common::Daemon::start(&config.iter().map(String::as_str).collect::<Vec<_>>())
        });
        let addr = match (&options.addr, &daemon) {
            (Some(addr), _) => addr.clone(),
            (None, Some(daemon)) => daemon.bootstrap(),
            (None, None) => unreachable!(),
        };
        targets.push(Target {
            plugin,
            _log_dir: log_dir,
            _upstream: upstream,
            pid: daemon
                .as_ref()
                .and_then(common::Daemon::pid)
                .or(options.daemon_pid),
            daemon,
            addr,
            members: None,
            background: Vec::new(),
            kafka: None,
        });
    }
    if options.kafka {
        let mut settings = vec![
            "group.streams.initial.rebalance.delay.ms=0".to_string(),
            "group.streams.assignment.interval.ms=0".to_string(),
            "group.streams.session.timeout.ms=300000".to_string(),
            "group.streams.max.session.timeout.ms=300000".to_string(),
        ];
        settings.extend(options.daemon_config.iter().cloned());
        let broker = match kafka::KafkaBroker::start(&settings) {
            Ok(broker) => broker,
            Err(e) => {
                eprintln!("load: {e}");
                return ExitCode::FAILURE;
            }
        };
        targets.push(Target {
            plugin: None,
            _log_dir: None,
            _upstream: None,
            daemon: None,
            addr: broker.bootstrap(),
            pid: Some(broker.pid()),
            members: None,
            background: Vec::new(),
            kafka: Some(broker),
        });
    }
    if let Some(cpus) = &options.pin_servers {
        for pid in targets.iter().filter_map(|t| t.pid) {
            if let Err(e) = fleet::pin(pid, cpus) {
                eprintln!("load: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(cpus) = &options.pin_load {
        if let Err(e) = fleet::pin(std::process::id(), cpus) {
            eprintln!("load: {e}");
            return ExitCode::FAILURE;
        }
    }
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

    // --kafka: each server's memory before the members join (kcoord's RSS, Kafka's heap
    // after a full GC), for the memory per idle member.
    let memory_before: Vec<Option<u64>> =
        targets.iter().map(|t| server_memory(t, options)).collect();
    if heartbeats {
        for t in &mut targets {
            let plugin = t.plugin.is_some() && options.compare_plugin.is_some();
            match runtime.block_on(set_up_members(&t.addr, options, plugin)) {
                Ok(m) => t.members = Some(m),
                Err(e) => {
                    eprintln!("load: setting up the heartbeat members failed: {e}");
                    if let Some(daemon) = &t.daemon {
                        eprintln!("{}", daemon.stderr_log());
                    }
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    if options.kafka && heartbeats {
        let members = options.groups * options.members;
        let per_member: Vec<Option<f64>> = targets
            .iter()
            .zip(&memory_before)
            .map(|(t, before)| {
                let after = server_memory(t, options)?;
                Some(after.saturating_sub((*before)?) as f64 / members as f64)
            })
            .collect();
        println!("{}", memory_line(options, &per_member));
    }
    let heartbeat_version = targets[0].members.as_ref().map_or(0, |m| m.fleet.version);
    if let Some(connections) = options.background_produce {
        match runtime.block_on(set_up_background(&targets[0].addr, connections)) {
            Ok(streams) => targets[0].background = streams,
            Err(e) => {
                eprintln!("load: setting up the background producers failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }

    let mut failed = false;
    // (target, C, P) -> ApiVersions totals and heartbeat totals per client and owned mode.
    let mut totals: Vec<PairTotals> = Vec::new();
    for run in plan(options, heartbeat_version, targets.len()) {
        let target = &mut targets[run.target];
        let (generators, inflight) = match run.workload {
            Workload::Heartbeat => {
                let m = target.members.as_mut().expect("set up above");
                let per_connection = m.fleet.members.len() / run.connections;
                if per_connection == 0 {
                    eprintln!(
                        "load: {} members cannot fill {} connections",
                        m.fleet.members.len(),
                        run.connections
                    );
                    return ExitCode::from(2);
                }
                let always = run.owned == Some(Owned::Always);
                let client = run.client.expect("heartbeat runs have a client mode");
                (
                    heartbeat_generators(m, run.connections, always, client),
                    run.inflight.min(per_connection),
                )
            }
            w => (
                (0..run.connections)
                    .map(|_| w.generator(run.version).expect("validated before the run"))
                    .collect(),
                run.inflight,
            ),
        };
        // The background producers run from now to the end of the run's window.
        let background: Vec<_> = if run.background {
            let window = produce::Window::starting_now(run.warmup, run.seconds);
            let drive = background_drive(options, &target.background);
            std::mem::take(&mut target.background)
                .into_iter()
                .map(|s| {
                    runtime.spawn(produce::run(
                        Dial::plaintext(target.addr.as_str()),
                        s,
                        drive,
                        window,
                    ))
                })
                .collect()
        } else {
            Vec::new()
        };
        let (mut summary, back) =
            runtime.block_on(run_one(&target.addr, run, generators, inflight, target.pid));
        if run.background {
            let mut bytes = 0;
            for task in background {
                match runtime.block_on(task) {
                    Ok((stream, Ok(stats))) => {
                        bytes += stats.batch_bytes;
                        target.background.push(stream);
                    }
                    Ok((_, Err(e))) => {
                        eprintln!("load: a background producer failed: {e}");
                        return ExitCode::FAILURE;
                    }
                    Err(e) => {
                        eprintln!("load: a background producer task failed: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            summary.background_bytes = Some(bytes);
        }
        if run.workload == Workload::Heartbeat {
            let m = target.members.as_mut().expect("set up above");
            if let Err(e) = return_members(m, back) {
                eprintln!("load: {e}");
                return ExitCode::FAILURE;
            }
            summary.members = m.fleet.members.len();
            summary.groups = m.fleet.groups();
            // Each server's own version (with --kafka, Kafka's is lower than kcoord's).
            summary.run.version = m.fleet.version;
            if summary.members != options.groups * options.members {
                eprintln!("load: members lost in the run (a connection task failed)");
                return ExitCode::FAILURE;
            }
        }
        if options.kafka {
            summary.labels = if target.kafka.is_some() {
                r#","server":"kafka""#.into()
            } else {
                r#","server":"kcoord""#.into()
            };
        }
        if options.compare_durable {
            summary.labels = match &target.plugin {
                Some(_) => r#","groups_log":"disk""#.into(),
                None => r#","groups_log":"memory""#.into(),
            };
        } else if options.compare_gateway {
            summary.labels = match &target.plugin {
                Some(_) => r#","mode":"gateway""#.into(),
                None => r#","mode":"standalone""#.into(),
            };
        } else if compare_plugin {
            summary.labels = match &target.plugin {
                Some(name) => format!(r#","plugin":"{name}""#),
                None => r#","plugin":null"#.into(),
            };
        }
        if options.background_produce.is_some() && run.workload == Workload::Heartbeat {
            summary.labels = match summary.background_bytes {
                Some(bytes) => format!(
                    r#","background":true,"background_mb_per_s":{:.1}"#,
                    bytes as f64 / run.seconds / 1e6
                ),
                None => r#","background":false"#.into(),
            };
        }
        println!("{}", summary.json());
        if summary.errors > 0 || summary.requests == 0 {
            failed = true;
            eprintln!(
                "load: {} run with C={} P={}{}: {} errors, {} requests; first error: {}",
                run.workload.api().name(),
                run.connections,
                run.inflight,
                summary.labels,
                summary.errors,
                summary.requests,
                summary.first_error.as_deref().unwrap_or("none")
            );
        }
        if heartbeats {
            let key = (run.target, run.connections, run.inflight, run.background);
            let at = match totals.iter().position(|(k, _, _)| *k == key) {
                Some(at) => at,
                None => {
                    totals.push((key, Totals::default(), Vec::new()));
                    totals.len() - 1
                }
            };
            let entry = &mut totals[at];
            match (run.workload, run.client, run.owned) {
                (Workload::ApiVersions, _, _) => entry.1.add(&summary),
                (Workload::Heartbeat, Some(client), Some(owned)) => {
                    let mode = (client, owned);
                    match entry.2.iter_mut().find(|(m, _)| *m == mode) {
                        Some((_, t)) => t.add(&summary),
                        None => {
                            let mut t = Totals::default();
                            t.add(&summary);
                            entry.2.push((mode, t));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if options.kafka {
        let (ours, theirs): (Vec<PairTotals>, Vec<PairTotals>) =
            totals.into_iter().partition(|((t, _, _, _), _, _)| *t == 0);
        for ((_, connections, inflight, _), _, hb) in ours {
            let Some((_, _, other)) = theirs
                .iter()
                .find(|((_, c, p, _), _, _)| (*c, *p) == (connections, inflight))
            else {
                continue;
            };
            for ((client, owned), t) in &hb {
                if let Some((_, k)) = other.iter().find(|(m, _)| *m == (*client, *owned)) {
                    println!(
                        "{}",
                        kafka_line(connections, *client, *owned, options, t, k)
                    );
                }
            }
        }
    } else if compare_plugin {
        let names = match &options.compare_plugin {
            Some(plugin) => AbNames::plugin(plugin),
            None if options.compare_gateway => AbNames::GATEWAY,
            None => AbNames::DURABLE,
        };
        let pushes = targets[0].members.as_ref().map_or(0, |m| m.pushes);
        let (with, mut without): (Vec<PairTotals>, Vec<PairTotals>) =
            totals.into_iter().partition(|((t, _, _, _), _, _)| *t == 0);
        for ((_, connections, inflight, _), _, mut hb) in with {
            let Some((_, _, other)) = without
                .iter_mut()
                .find(|((_, c, p, _), _, _)| (*c, *p) == (connections, inflight))
            else {
                continue;
            };
            for ((client, owned), t) in &mut hb {
                let mode = (*client, *owned);
                let Some((_, o)) = other.iter_mut().find(|(x, _)| *x == mode) else {
                    continue;
                };
                let line = ab_line(
                    &names,
                    connections,
                    *client,
                    *owned,
                    options,
                    heartbeat_version,
                    pushes,
                    t,
                    o,
                );
                println!("{line}");
            }
        }
    } else {
        let (mut loaded, quiet): (Vec<PairTotals>, Vec<PairTotals>) =
            totals.into_iter().partition(|((_, _, _, b), _, _)| *b);
        for ((_, connections, inflight, _), av, mut hb) in quiet {
            // The runs with the background load, at the same (C, P).
            if let Some((_, _, with)) = loaded
                .iter_mut()
                .find(|((_, c, p, _), _, _)| (*c, *p) == (connections, inflight))
            {
                for ((client, owned), without) in &mut hb {
                    let Some((_, with)) = with.iter_mut().find(|(m, _)| *m == (*client, *owned))
                    else {
                        continue;
                    };
                    println!(
                        "{}",
                        background_line(connections, *client, *owned, options, without, with)
                    );
                }
            }
            let av = (av.requests > 0).then_some(&av);
            for &client in &options.client {
                let mut hb: Vec<(Owned, &mut Totals)> = hb
                    .iter_mut()
                    .filter(|((c, _), _)| *c == client)
                    .map(|((_, o), t)| (*o, t))
                    .collect();
                if hb.is_empty() {
                    continue;
                }
                println!(
                    "{}",
                    heartbeat_line(
                        connections,
                        inflight,
                        options,
                        heartbeat_version,
                        client,
                        av,
                        &mut hb
                    )
                );
            }
        }
    }
    // Close every connection (the members' clients too) before stopping the daemons.
    for t in &mut targets {
        t.members = None;
    }
    drop(runtime);
    for t in targets {
        if let Some(daemon) = t.daemon {
            if !daemon.is_alive() {
                eprintln!(
                    "load: the daemon died during the runs\n{}",
                    daemon.stderr_log()
                );
                return ExitCode::FAILURE;
            }
            daemon.stop();
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
