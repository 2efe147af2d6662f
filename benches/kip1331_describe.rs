//! KIP-1331: StreamsGroupDescribe of many groups in one request with their topology
//! descriptions (IncludeTopologyDescription=true) vs without, against the real daemon with the
//! `memory` plugin. One JSON line per mode and one comparing them.
//!
//! ```text
//! cargo bench --bench kip1331_describe                     # 1,000 groups, 3 x 10-node sub-topologies
//! cargo bench --bench kip1331_describe -- --groups 1000 --subtopologies 3 --nodes 10 --reps 30
//! ```
//!
//! Setup: the bench starts the `kcoord` binary Cargo built alongside it (for `cargo bench`: the
//! optimized one) with `group.streams.topology.description.class=memory`, a zero initial
//! rebalance delay and assignment interval and a 300 s session timeout. `--groups` (1000)
//! streams groups of one member each (one stateless sub-topology on a `--partitions` (4)
//! partition source topic) join and heartbeat until Stable; the member the coordinator asks
//! (heartbeat v2's TopologyDescriptionId) pushes its application's description once (key 95):
//! `--subtopologies` (3) sub-topologies of `--nodes` (10) nodes, a source, processors with a
//! store each and a sink, chained through repartition topics (`fleet::description`).
//! StreamsGroupDescribe then confirms every group is Stable with its description AVAILABLE.
//!
//! Measured: `--warmup` (2) untimed, then `--reps` (20) timed requests per mode, alternating
//! (with, without, with, ...): ONE StreamsGroupDescribe v1 request naming every group, with
//! IncludeTopologyDescription true or false, on one raw connection; the time from writing the
//! request to having read the whole response frame. Each response is decoded after its timing
//! and checked: every group, no error, Stable, status AVAILABLE (3) with the pushed number of
//! nodes when asked, NOT_REQUESTED (0) and no description otherwise. The daemon's CPU time
//! (`/proc/<pid>/stat`, 10 ms ticks) around each timed request is summed per mode.
//!
//! `--kafka`: afterwards the same set-up and measurement against an Apache Kafka 4.4 broker
//! (`support/kafka.rs`, with Kafka's `InMemoryTopologyDescriptionPlugin`; its members push
//! with key 93 at heartbeat v1); its lines carry `"server":"kafka"`.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration (5
//! groups, 1 warm-up and 2 reps per mode) and exits with status 1 on any protocol error; there
//! is no goal to miss.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/kafka.rs"]
mod kafka;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use kcoord_client::streams::OwnedTasksReporting;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{StreamsGroupDescribeRequest, StreamsGroupDescribeResponse};

const SOURCE_TOPIC: &str = "bench-source";
/// StreamsGroupDescribe's first version with IncludeTopologyDescription.
const DESCRIBE_VERSION: i16 = 1;

struct Settings {
    groups: usize,
    partitions: usize,
    subtopologies: usize,
    nodes: usize,
    reps: usize,
    warmup: usize,
    /// `--kafka`: the same measurement against an Apache Kafka 4.4 broker afterwards.
    kafka: bool,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut s = if bench {
        Settings {
            groups: 1000,
            partitions: 4,
            subtopologies: 3,
            nodes: 10,
            reps: 20,
            warmup: 2,
            kafka: false,
        }
    } else {
        Settings {
            groups: 5,
            partitions: 2,
            subtopologies: 3,
            nodes: 10,
            reps: 2,
            warmup: 1,
            kafka: false,
        }
    };
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        let value = args.get(i + 1).map(String::as_str);
        let number = |min: usize| -> Result<usize, String> {
            value
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|v| *v >= min)
                .ok_or_else(|| format!("{name} needs a number of at least {min}"))
        };
        match name {
            "--groups" => s.groups = number(1)?,
            "--partitions" => s.partitions = number(1)?,
            "--subtopologies" => s.subtopologies = number(1)?,
            "--nodes" => s.nodes = number(2)?,
            "--reps" => s.reps = number(1)?,
            "--warmup" => s.warmup = number(0)?,
            "--kafka" => {
                s.kafka = true;
                i += 1;
                continue;
            }
            // libtest's and cargo's own arguments.
            _ => {
                if bench && name != "--bench" {
                    return Err(format!(
                        "unknown argument {name:?} (--groups, --partitions, --subtopologies, --nodes, --reps, --warmup, --kafka)"
                    ));
                }
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Ok(s)
}

/// The timed requests of one mode.
#[derive(Default)]
struct Mode {
    times_ms: Vec<f64>,
    bytes: Vec<usize>,
    daemon_cpu_s: Option<f64>,
}

impl Mode {
    fn sorted(&self) -> Vec<f64> {
        let mut sorted = self.times_ms.clone();
        sorted.sort_by(f64::total_cmp);
        sorted
    }

    /// The median (nearest rank).
    fn p50(&self) -> f64 {
        let sorted = self.sorted();
        sorted[sorted.len().div_ceil(2) - 1]
    }

    fn min(&self) -> f64 {
        self.sorted()[0]
    }

    fn line(&self, include: bool, s: &Settings, server: &str) -> String {
        let sorted = self.sorted();
        let n = sorted.len() as f64;
        let bytes = self.bytes.iter().copied().max().unwrap_or(0);
        let times: Vec<String> = self.times_ms.iter().map(|t| format!("{t:.2}")).collect();
        let cpu = self
            .daemon_cpu_s
            .map_or_else(|| "null".into(), |c| format!("{:.2}", c * 1e3 / n));
        format!(
            r#"{{"bench":"kip1331_describe","server":"{server}","include_topology_description":{include},"groups":{},"subtopologies":{},"nodes_per_subtopology":{},"reps":{},"p50_ms":{:.2},"min_ms":{:.2},"mean_ms":{:.2},"max_ms":{:.2},"response_bytes":{bytes},"bytes_per_group":{:.0},"daemon_cpu_ms_per_req":{cpu},"times_ms":[{}]}}"#,
            s.groups,
            s.subtopologies,
            s.nodes,
            sorted.len(),
            self.p50(),
            sorted[0],
            sorted.iter().sum::<f64>() / n,
            sorted[sorted.len() - 1],
            bytes as f64 / s.groups as f64,
            times.join(","),
        )
    }
}

/// Joins the groups, pushes their descriptions and checks them; returns the group ids.
async fn set_up(s: &Settings, addr: &str) -> Result<Vec<String>, String> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(300);
    let client = fleet::connect_client(addr).await?;
    let conn = client.bootstrap();
    fleet::create_topic(&conn, SOURCE_TOPIC, s.partitions as i32).await?;
    // v2 pushes under the TopologyDescriptionId (key 95), v1 (Kafka 4.4) with key 93.
    let version = fleet::heartbeat_version(&client).await?;
    let mut fleet = fleet::Fleet::new(1, s.partitions, "describe", version);
    fleet.add_groups(
        &client,
        &fleet::topology(SOURCE_TOPIC),
        s.groups,
        OwnedTasksReporting::WhenChanged,
    );
    let ids: Vec<String> = (0..s.groups)
        .map(|g| fleet::group_id("describe", g))
        .collect();
    fleet::find_coordinators(&client, &ids).await?;
    let mut pipes = Vec::new();
    for _ in 0..8 {
        pipes.push(fleet::Pipe::connect(addr).await?);
    }
    fleet.settle(&mut pipes, 16, 0..s.groups, deadline).await?;
    let description = fleet::description(s.subtopologies, s.nodes, SOURCE_TOPIC);
    let pushes = fleet
        .push_descriptions(&mut pipes, &conn, &description, deadline)
        .await?;
    for group in fleet::describe_with(&conn, &ids, true).await? {
        fleet::check_stable(&group, 1, s.partitions)?;
        if group.topology_description_status != fleet::DESCRIPTION_AVAILABLE {
            return Err(format!(
                "{}: topology description status {}",
                group.group_id, group.topology_description_status
            ));
        }
    }
    eprintln!(
        "kip1331_describe: {} groups Stable, {pushes} descriptions pushed ({} nodes each), {:.1} s",
        s.groups,
        s.subtopologies * s.nodes,
        started.elapsed().as_secs_f64()
    );
    Ok(ids)
}

/// One StreamsGroupDescribe of every group; its time, its size and the daemon's CPU time.
async fn describe_once(
    pipe: &mut fleet::Pipe,
    request: &StreamsGroupDescribeRequest,
    pid: Option<u32>,
) -> Result<(f64, usize, Option<f64>, StreamsGroupDescribeResponse), String> {
    let id = pipe.next_id();
    let mut out = BytesMut::new();
    fleet::encode_request(
        ApiKey::StreamsGroupDescribe,
        DESCRIBE_VERSION,
        id,
        request,
        &mut out,
    )?;
    pipe.out = out;
    let pid = pid.map(|p| p.to_string());
    let cpu = || pid.as_deref().and_then(fleet::cpu_seconds);
    let cpu_before = cpu();
    let start = Instant::now();
    pipe.flush().await?;
    let mut frames = Vec::new();
    pipe.read_frames(&mut frames).await?;
    let elapsed = start.elapsed();
    let cpu_after = cpu();
    if frames.len() != 1 {
        return Err(format!("{} response frames to one request", frames.len()));
    }
    let frame = frames.pop().expect("one frame");
    let bytes = frame.len() + 4;
    let response =
        fleet::decode_response(ApiKey::StreamsGroupDescribe, DESCRIBE_VERSION, id, frame)?;
    let cpu = match (cpu_before, cpu_after) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    Ok((elapsed.as_secs_f64() * 1e3, bytes, cpu, response))
}

/// Every group answered, Stable, with the description (of `nodes` nodes) exactly when asked.
fn check(
    response: &StreamsGroupDescribeResponse,
    ids: &[String],
    include: bool,
    nodes: usize,
) -> Result<(), String> {
    if response.groups.len() != ids.len() {
        return Err(format!(
            "{} groups described, {} asked",
            response.groups.len(),
            ids.len()
        ));
    }
    // Kafka answers the groups in its own order; kcoord in the request's.
    let mut groups: Vec<_> = response.groups.iter().collect();
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    let mut ids: Vec<&String> = ids.iter().collect();
    ids.sort();
    for (group, id) in groups.into_iter().zip(ids) {
        if &group.group_id != id || group.error_code != 0 || group.group_state != "Stable" {
            return Err(format!(
                "{id}: got group {} error {} state {}",
                group.group_id, group.error_code, group.group_state
            ));
        }
        let described: Option<usize> = group
            .topology_description
            .as_ref()
            .map(|d| d.subtopologies.iter().map(|s| s.nodes.len()).sum());
        let (status, ok) = (group.topology_description_status, described);
        let fine = if include {
            status == fleet::DESCRIPTION_AVAILABLE && ok == Some(nodes)
        } else {
            status == 0 && ok.is_none()
        };
        if !fine {
            return Err(format!(
                "{id}: include={include}: status {status}, description of {ok:?} nodes"
            ));
        }
    }
    Ok(())
}

async fn run(s: &Settings, addr: &str, pid: Option<u32>, server: &str) -> Result<(), String> {
    let ids = set_up(s, addr).await?;
    let mut pipe = fleet::Pipe::connect(addr).await?;
    let request = |include: bool| StreamsGroupDescribeRequest {
        group_ids: ids.clone(),
        include_topology_description: include,
        ..Default::default()
    };
    let requests = [request(true), request(false)];
    let mut modes = [Mode::default(), Mode::default()];
    for rep in 0..s.warmup + s.reps {
        for (at, include) in [true, false].into_iter().enumerate() {
            let (ms, bytes, cpu, response) = describe_once(&mut pipe, &requests[at], pid).await?;
            check(&response, &ids, include, s.subtopologies * s.nodes)?;
            if rep >= s.warmup {
                let mode = &mut modes[at];
                mode.times_ms.push(ms);
                mode.bytes.push(bytes);
                mode.daemon_cpu_s = match (rep == s.warmup, mode.daemon_cpu_s, cpu) {
                    (true, _, c) => c,
                    (false, Some(total), Some(c)) => Some(total + c),
                    _ => None,
                };
            }
        }
    }
    let [with, without] = &modes;
    println!("{}", with.line(true, s, server));
    println!("{}", without.line(false, s, server));
    let (wb, ob) = (with.bytes[0] as f64, without.bytes[0] as f64);
    println!(
        r#"{{"bench":"kip1331_describe_compare","server":"{server}","groups":{},"subtopologies":{},"nodes_per_subtopology":{},"reps":{},"p50_ms_with":{:.2},"p50_ms_without":{:.2},"p50_ratio":{:.2},"min_ratio":{:.2},"bytes_with":{wb},"bytes_without":{ob},"bytes_ratio":{:.2},"description_bytes_per_group":{:.0}}}"#,
        s.groups,
        s.subtopologies,
        s.nodes,
        s.reps,
        with.p50(),
        without.p50(),
        with.p50() / without.p50(),
        with.min() / without.min(),
        wb / ob,
        (wb - ob) / s.groups as f64,
    );
    Ok(())
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kip1331_describe: {e}");
            return ExitCode::from(2);
        }
    };
    let daemon = common::Daemon::start(&[
        "group.streams.topology.description.class=memory",
        "group.streams.initial.rebalance.delay.ms=0",
        "group.streams.assignment.interval.ms=0",
        "group.streams.session.timeout.ms=300000",
        "group.streams.max.session.timeout.ms=300000",
    ]);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kip1331_describe: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(&s, &daemon.bootstrap(), daemon.pid(), "kcoord"));
    if let Err(e) = result {
        eprintln!("kip1331_describe: {e}\n{}", daemon.stderr_log());
        return ExitCode::FAILURE;
    }
    if s.kafka {
        let settings = [
            "group.streams.topology.description.plugin.class=org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin",
            "group.streams.initial.rebalance.delay.ms=0",
            "group.streams.assignment.interval.ms=0",
            "group.streams.session.timeout.ms=300000",
            "group.streams.max.session.timeout.ms=300000",
        ]
        .map(String::from);
        let result = kafka::KafkaBroker::start(&settings).and_then(|broker| {
            runtime.block_on(run(&s, &broker.bootstrap(), Some(broker.pid()), "kafka"))
        });
        if let Err(e) = result {
            eprintln!("kip1331_describe (Kafka): {e}");
            return ExitCode::FAILURE;
        }
    }
    drop(runtime);
    if !daemon.is_alive() {
        eprintln!("kip1331_describe: the daemon died\n{}", daemon.stderr_log());
        return ExitCode::FAILURE;
    }
    daemon.stop();
    ExitCode::SUCCESS
}
