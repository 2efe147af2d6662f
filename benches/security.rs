//! Security bench (issue 14): what TLS and SASL cost next to PLAINTEXT on one daemon that
//! authorizes every request with Kafka's StandardAuthorizer and 1,000 ACLs; one JSON line per
//! run and one summary line per measurement.
//!
//! ```text
//! cargo bench --bench security                          # everything, 4 rounds, 5 s per run
//! cargo bench --bench security -- --measure heartbeats --rounds 6 --covering-acls 0
//! ```
//!
//! One daemon (the `kcoord` binary Cargo built, started as `load` starts it; `KCOORD_BIN` names
//! another build) with four listeners on free loopback ports: PLAINTEXT, SASL_SSL (PLAIN; users
//! `admin`, a super user, and `bench`, not one), SSL (no client certificate asked, so
//! `User:ANONYMOUS`) and the controller's. TLS uses a throwaway CA and an ECDSA P-256 server
//! certificate (`support/secure.rs`); the bench's client is rustls with ring, TLS 1.3 only,
//! without session resumption. `authorizer.class.name` is Kafka's StandardAuthorizer,
//! `super.users=User:admin`.
//!
//! **ACLs.** Before anything else the admin (over SASL_SSL) creates `--acls` (1,000) ACLs with
//! CreateAcls, and DescribeAcls must then list exactly that many. Ten are what the bench needs,
//! each given to both `User:bench` (SASL_SSL) and `User:ANONYMOUS` (PLAINTEXT and SSL), so every
//! listener pays the same authorizer: READ on the bench's groups (PREFIXED), DESCRIBE and CREATE
//! on the source topic, WRITE and CREATE on the produce topic (LITERAL). `--covering-acls`
//! (100) more allow READ on the bench's group prefix to other principals: every heartbeat's
//! READ check walks them and rejects each by its principal. The rest are other principals' on
//! other topics and groups, LITERAL and PREFIXED (prefixes of many lengths, so a lookup probes
//! many), some DENY. Both bench principals must then get CLUSTER_AUTHORIZATION_FAILED from
//! DescribeAcls (neither is a super user).
//!
//! **Heartbeats** (`--measure heartbeats`; goal: SASL_SSL >= 0.8x PLAINTEXT): `--groups`
//! (1,000) streams groups of `--members` (10) members on a source topic of `--partitions` (10),
//! joined and Stable over PLAINTEXT (`support/steady.rs`), then replayed as `load --api
//! heartbeat` does (`support/replay.rs`: each member's steady-state request encoded once, every
//! answer compared with its first byte for byte): `--connections` (64) connections with
//! `--inflight` (16) heartbeats in flight each, over PLAINTEXT and over SASL_SSL in turn (the
//! same members; a SASL_SSL connection makes its handshake and login in the warm-up).
//!
//! **Produce** (`produce`; goal: SSL >= 0.6x PLAINTEXT): `--produce-connections` (4) idempotent
//! producers, one partition each of an in-memory topic with 64 MiB retention per partition
//! (checked every second), `--produce-inflight` (5) Produce v12 requests in flight, acks=-1,
//! batches of about `--batch-bytes` (65,536) of `--record-bytes` (1,024) records, uncompressed
//! (`support/produce.rs`, as `data_plane` sends them; every answer checked), over PLAINTEXT and
//! over SSL in turn. Before each round's pair, `--produce-prime` (5) seconds of the same load,
//! unmeasured: the daemon hands memory freed by idle threads back to the OS, so the first
//! produce run after the other measurements pays for fresh pages (up to twice the CPU per
//! request of the run after it, whichever listener), which no listener should be charged.
//!
//! **Connections** (`connections`; no goal): `--handshake-connections` (4) tasks each connect,
//! do their part, send one ApiVersions v3, read the answer and close, in a loop:
//! `tls_handshake` (SSL: a full TLS 1.3 handshake), `sasl_login` (SASL_SSL: the handshake,
//! SaslHandshake and SaslAuthenticate with PLAIN), `tcp_connect` (PLAINTEXT, for scale).
//! Reported per wall second and per second of the daemon's CPU.
//!
//! Every run has `--warmup` (1 s) then `--seconds` (5) measured; answers in the measured window
//! count; the daemon's CPU is user + system time from `/proc/<pid>/stat` (10 ms ticks) over it,
//! and the bench's own likewise. `--rounds` (4): every round runs each measurement, a
//! comparison's two sides back to back, odd rounds PLAINTEXT first and even rounds the secured
//! listener first, so drift and "who ran first" hit both sides alike; the summary lines sum the
//! rounds and give each round's ratio. `--daemon-config KEY=VALUE` adds a line to the daemon's
//! config; `--client-threads` (2) sizes the bench's runtime. Before each run a line on stderr
//! names it (for a profiler to attach to).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs everything once in a tiny
//! configuration (0.2 s runs, 2 groups of 3 members, one connection each; the ACLs as above)
//! and fails only on an error or a run without an answer, never on a missed goal; unknown
//! arguments (libtest's) are ignored there.

#[path = "support/args.rs"]
mod args;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/produce.rs"]
mod produce;
#[path = "support/replay.rs"]
mod replay;
#[path = "support/secure.rs"]
mod secure;
#[path = "support/steady.rs"]
mod steady;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use args::{positive, seconds};
use kcoord_client::streams::StreamsMember;
use kcoord_record_batches::Compression;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_acls_request::AclCreation;
use kcoord_wire::messages::{
    ApiVersionsRequest, ApiVersionsResponse, CreateAclsRequest, CreateAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use replay::ClientMode;
use secure::{Dial, Pki};

const GOAL_HEARTBEAT_RATIO: f64 = 0.8;
const GOAL_PRODUCE_RATIO: f64 = 0.6;
const ADMIN: (&str, &str) = ("admin", "admin-secret");
const BENCH: (&str, &str) = ("bench", "bench-secret");
const SOURCE_TOPIC: &str = "sec-source";
const PRODUCE_TOPIC: &str = "sec-produce";
/// 64 MiB kept per partition, in 16 MiB segments: an in-memory daemon stays small.
const PRODUCE_TOPIC_CONFIGS: &[(&str, &str)] = &[
    ("retention.bytes", "67108864"),
    ("segment.bytes", "16777216"),
];
/// CreateAcls entries per request.
const ACLS_PER_REQUEST: usize = 250;
/// Kafka's CLUSTER_AUTHORIZATION_FAILED.
const CAF: i16 = 31;

// Kafka's ACL codes.
const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const ANY: i8 = 1;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
const DESCRIBE: i8 = 8;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

// ---------------------------------------------------------------------------------------------
// Options

/// What `--measure` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Heartbeats,
    Produce,
    Connections,
}

#[derive(Debug, Clone)]
struct Options {
    parts: Vec<Part>,
    rounds: usize,
    seconds: f64,
    warmup: f64,
    groups: usize,
    members: usize,
    partitions: usize,
    connections: usize,
    inflight: usize,
    produce_connections: usize,
    produce_inflight: usize,
    record_bytes: usize,
    batch_bytes: usize,
    /// Seconds of unmeasured produce load before each round's produce runs.
    produce_prime: f64,
    handshake_connections: usize,
    acls: usize,
    /// Of `acls`: other principals' ACLs on the bench's group prefix.
    covering_acls: usize,
    client_threads: usize,
    daemon_config: Vec<String>,
}

const USAGE: &str = "usage: security [--measure heartbeats|produce|connections[,..]] [--rounds R] [--seconds S] [--warmup W] [--groups G] \
[--members M] [--partitions N] [--connections C] [--inflight P] [--produce-connections C] \
[--produce-inflight P] [--record-bytes B] [--batch-bytes B] [--produce-prime S] [--handshake-connections C] \
[--acls N] [--covering-acls N] [--client-threads N] [--daemon-config KEY=VALUE]..";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut o = if bench {
        Options {
            parts: vec![Part::Heartbeats, Part::Produce, Part::Connections],
            rounds: 4,
            seconds: 5.0,
            warmup: 1.0,
            groups: 1000,
            members: 10,
            partitions: 10,
            connections: 64,
            inflight: 16,
            produce_connections: 4,
            produce_inflight: 5,
            record_bytes: 1024,
            batch_bytes: 65536,
            produce_prime: 5.0,
            handshake_connections: 4,
            acls: 1000,
            covering_acls: 100,
            client_threads: 2,
            daemon_config: Vec::new(),
        }
    } else {
        // `cargo test --all-targets`: everything once, tiny.
        Options {
            parts: vec![Part::Heartbeats, Part::Produce, Part::Connections],
            rounds: 1,
            seconds: 0.2,
            warmup: 0.0,
            groups: 2,
            members: 3,
            partitions: 4,
            connections: 1,
            inflight: 1,
            produce_connections: 1,
            produce_inflight: 1,
            record_bytes: 1024,
            batch_bytes: 16384,
            produce_prime: 0.0,
            handshake_connections: 1,
            acls: 1000,
            covering_acls: 100,
            client_threads: 1,
            daemon_config: Vec::new(),
        }
    };
    let mut i = 0;
    while i < args.len() {
        let (name, inline) = match args[i].split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (args[i].as_str(), None),
        };
        i += 1;
        if name == "--bench" {
            continue;
        }
        let known = matches!(
            name,
            "--measure"
                | "--rounds"
                | "--seconds"
                | "--warmup"
                | "--groups"
                | "--members"
                | "--partitions"
                | "--connections"
                | "--inflight"
                | "--produce-connections"
                | "--produce-inflight"
                | "--record-bytes"
                | "--batch-bytes"
                | "--produce-prime"
                | "--handshake-connections"
                | "--acls"
                | "--covering-acls"
                | "--client-threads"
                | "--daemon-config"
        );
        if !known {
            if bench {
                return Err(format!("unknown argument {name:?}\n{USAGE}"));
            }
            eprintln!("security: ignoring argument {name:?} (smoke mode)");
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                let v = args
                    .get(i)
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?;
                i += 1;
                v
            }
        };
        match name {
            "--measure" => {
                o.parts = args::list(&value, |p| match p {
                    "heartbeats" | "heartbeat" => Ok(Part::Heartbeats),
                    "produce" => Ok(Part::Produce),
                    "connections" => Ok(Part::Connections),
                    _ => Err(format!(
                        "unknown --measure {p:?} (heartbeats, produce, connections)"
                    )),
                })?
            }
            "--rounds" => o.rounds = positive(&value)?,
            "--seconds" => o.seconds = seconds(&value)?,
            "--warmup" => o.warmup = seconds(&value)?,
            "--groups" => o.groups = positive(&value)?,
            "--members" => o.members = positive(&value)?,
            "--partitions" => o.partitions = positive(&value)?,
            "--connections" => o.connections = positive(&value)?,
            "--inflight" => o.inflight = positive(&value)?,
            "--produce-connections" => o.produce_connections = positive(&value)?,
            "--produce-inflight" => o.produce_inflight = positive(&value)?,
            "--record-bytes" => o.record_bytes = positive(&value)?,
            "--batch-bytes" => o.batch_bytes = positive(&value)?,
            "--produce-prime" => o.produce_prime = seconds(&value)?,
            "--handshake-connections" => o.handshake_connections = positive(&value)?,
            "--acls" => o.acls = positive(&value)?,
            "--covering-acls" => {
                o.covering_acls = value
                    .parse()
                    .map_err(|_| format!("bad --covering-acls {value:?}"))?
            }
            "--client-threads" => o.client_threads = positive(&value)?,
            "--daemon-config" => o.daemon_config.push(value),
            _ => unreachable!("`known` lists exactly these"),
        }
    }
    if o.seconds <= 0.0 {
        return Err("--seconds must be above 0".into());
    }
    if o.acls < RELEVANT_ACLS + o.covering_acls {
        return Err(format!(
            "--acls must be at least {RELEVANT_ACLS} + --covering-acls ({})",
            o.covering_acls
        ));
    }
    if o.groups * o.members < o.connections {
        return Err("fewer members than --connections".into());
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Daemon and ACLs

/// The daemon and how to reach each of its listeners.
struct Secured {
    daemon: common::Daemon,
    pid: Option<u32>,
    plaintext: Dial,
    /// As `User:bench`.
    sasl_ssl: Dial,
    ssl: Dial,
    admin: Dial,
    _pki: Pki,
}

fn start(options: &Options) -> Result<Secured, String> {
    let pki = Pki::new()?;
    let mut config = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0".to_string(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT".into(),
        "ssl.keystore.type=PEM".into(),
        format!("ssl.keystore.location={}", pki.path("server.pem").display()),
        "sasl.enabled.mechanisms=PLAIN".into(),
        format!(
            "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{}=\"{}\" user_{}=\"{}\";",
            ADMIN.0, ADMIN.1, BENCH.0, BENCH.1
        ),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        format!("super.users=User:{}", ADMIN.0),
        // As `load --api heartbeat`: the setup converges at once, idle members stay.
        "group.streams.initial.rebalance.delay.ms=0".into(),
        "group.streams.assignment.interval.ms=0".into(),
        "group.streams.session.timeout.ms=300000".into(),
        "group.streams.max.session.timeout.ms=300000".into(),
        // The produce topic's retention, applied every second.
        "log.retention.check.interval.ms=1000".into(),
    ];
    config.extend(options.daemon_config.iter().cloned());
    let lines: Vec<&str> = config.iter().map(String::as_str).collect();
    let daemon = common::Daemon::try_start_with_config(&common::config_text(&lines))?;
    let addr = |name: &str| {
        daemon
            .listener_addr(name)
            .map(|a| a.to_string())
            .ok_or_else(|| format!("no {name} listener in {:?}", daemon.listeners()))
    };
    let tls = secure::tls_client(&pki.path("ca.pem"))?;
    Ok(Secured {
        plaintext: Dial::plaintext(addr("PLAINTEXT")?),
        sasl_ssl: Dial::sasl_ssl(addr("SASL_SSL")?, Arc::clone(&tls), BENCH.0, BENCH.1),
        ssl: Dial::ssl(addr("SSL")?, Arc::clone(&tls)),
        admin: Dial::sasl_ssl(addr("SASL_SSL")?, tls, ADMIN.0, ADMIN.1),
        pid: daemon.pid(),
        daemon,
        _pki: pki,
    })
}

/// The ACLs the bench needs, per principal.
const RELEVANT_ACLS: usize = 10;

fn acl(
    resource_type: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    operation: i8,
    permission: i8,
) -> AclCreation {
    AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: pattern,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: permission,
        ..Default::default()
    }
}

/// `count` ACLs: the bench's ten (module docs), `covering` more on the bench's group prefix
/// for other principals, then others on other resources.
fn acls(count: usize, covering: usize, group_prefix: &str) -> Vec<AclCreation> {
    let mut all = Vec::with_capacity(count);
    for principal in [format!("User:{}", BENCH.0), "User:ANONYMOUS".to_string()] {
        let p = principal.as_str();
        all.push(acl(GROUP, group_prefix, PREFIXED, p, READ, ALLOW));
        all.push(acl(TOPIC, SOURCE_TOPIC, LITERAL, p, DESCRIBE, ALLOW));
        all.push(acl(TOPIC, SOURCE_TOPIC, LITERAL, p, CREATE, ALLOW));
        all.push(acl(TOPIC, PRODUCE_TOPIC, LITERAL, p, WRITE, ALLOW));
        all.push(acl(TOPIC, PRODUCE_TOPIC, LITERAL, p, CREATE, ALLOW));
    }
    for i in 0..covering {
        let other = format!("User:app-{i}");
        all.push(acl(GROUP, group_prefix, PREFIXED, &other, READ, ALLOW));
    }
    // Prefixes of many lengths: a prefixed lookup probes each length in use.
    const WORDS: &str = "tenant.division.department.team.service.component.";
    for i in covering..covering + count.saturating_sub(all.len()) {
        let other = format!("User:app-{i}");
        let o = other.as_str();
        let prefix = |salt: usize| format!("{}{i}-", &WORDS[..3 + (i * salt) % 40]);
        all.push(match i % 8 {
            0 | 4 => acl(TOPIC, &prefix(7), PREFIXED, o, WRITE, ALLOW),
            1 | 5 => acl(GROUP, &prefix(11), PREFIXED, o, READ, ALLOW),
            2 => acl(TOPIC, &format!("orders-{i}"), LITERAL, o, READ, DENY),
            3 | 6 => acl(TOPIC, &format!("payments-{i}"), LITERAL, o, DESCRIBE, ALLOW),
            _ => acl(GROUP, &format!("consumer-{i}"), LITERAL, o, READ, ALLOW),
        });
    }
    all
}

/// Creates the ACLs as the admin and checks the count, and that neither the bench's SASL user
/// nor ANONYMOUS is a super user.
async fn set_up_acls(
    secured: &Secured,
    options: &Options,
    group_prefix: &str,
) -> Result<(), String> {
    let mut admin = secured.admin.connect().await?;
    eprintln!(
        "security: TLS {}",
        admin.tls_parameters().unwrap_or_default()
    );
    let all = acls(options.acls, options.covering_acls, group_prefix);
    for (n, chunk) in all.chunks(ACLS_PER_REQUEST).enumerate() {
        let request = CreateAclsRequest {
            creations: chunk.to_vec(),
            ..Default::default()
        };
        let answer: CreateAclsResponse = admin
            .call(ApiKey::CreateAcls, 3, n as i32, &request)
            .await?;
        if let Some(r) = answer.results.iter().find(|r| r.error_code != 0) {
            return Err(format!(
                "CreateAcls: error {} {:?}",
                r.error_code, r.error_message
            ));
        }
        if answer.results.len() != chunk.len() {
            return Err(format!(
                "CreateAcls: {} results for {} ACLs",
                answer.results.len(),
                chunk.len()
            ));
        }
    }
    let (code, listed) = describe_acls(&mut admin).await?;
    if code != 0 || listed != options.acls {
        return Err(format!(
            "DescribeAcls as the admin: error {code}, {listed} ACLs listed, {} created",
            options.acls
        ));
    }
    for dial in [&secured.sasl_ssl, &secured.plaintext] {
        let mut conn = dial.connect().await?;
        let (code, _) = describe_acls(&mut conn).await?;
        if code != CAF {
            return Err(format!(
                "DescribeAcls over {}: error {code}, expected {CAF}: the bench's principal must not be a super user",
                dial.protocol()
            ));
        }
    }
    Ok(())
}

/// DescribeAcls of every ACL: the error code and how many were listed.
async fn describe_acls(conn: &mut secure::Stream) -> Result<(i16, usize), String> {
    let request = DescribeAclsRequest {
        resource_type_filter: ANY,
        resource_name_filter: None,
        pattern_type_filter: ANY,
        principal_filter: None,
        host_filter: None,
        operation: ANY,
        permission_type: ANY,
        ..Default::default()
    };
    let answer: DescribeAclsResponse = conn.call(ApiKey::DescribeAcls, 3, 1, &request).await?;
    let listed = answer.resources.iter().map(|r| r.acls.len()).sum();
    Ok((answer.error_code, listed))
}

// ---------------------------------------------------------------------------------------------
// Measurements

/// What one run measured.
#[derive(Debug, Default, Clone)]
struct Outcome {
    /// Answers (heartbeats, produce requests, connections done) in the measured window.
    count: u64,
    /// Produce: batch bytes answered in the window.
    bytes: u64,
    latencies_ns: Vec<u32>,
    daemon_cpu_s: Option<f64>,
    client_cpu_s: Option<f64>,
}

/// CPU seconds of the daemon and of this process, now.
fn cpu_now(pid: Option<u32>) -> (Option<f64>, Option<f64>) {
    (
        pid.and_then(|p| fleet::cpu_seconds(&p.to_string())),
        fleet::cpu_seconds("self"),
    )
}

fn cpu_delta(
    before: (Option<f64>, Option<f64>),
    after: (Option<f64>, Option<f64>),
) -> (Option<f64>, Option<f64>) {
    let d = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
    (d(before.0, after.0), d(before.1, after.1))
}

/// The replayed heartbeats of every member over `dial`; the members come back.
async fn heartbeats(
    dial: &Dial,
    members: &mut Vec<StreamsMember>,
    version: i16,
    options: &Options,
    pid: Option<u32>,
) -> Result<Outcome, String> {
    let per_connection = members.len() / options.connections;
    let generators = replay::heartbeat_generators(
        std::mem::take(members),
        options.connections,
        version,
        false,
        ClientMode::Replay,
    );
    let (m, back) = replay::measure(
        dial,
        generators,
        options.inflight.min(per_connection),
        options.warmup,
        options.seconds,
        pid,
    )
    .await;
    *members = replay::return_members(back)?;
    if members.len() != options.groups * options.members {
        return Err("members lost in the run (a connection task failed)".into());
    }
    if m.errors > 0 {
        return Err(format!(
            "heartbeats over {}: {} errors, first: {}",
            dial.protocol(),
            m.errors,
            m.first_error.unwrap_or_default()
        ));
    }
    Ok(Outcome {
        count: m.requests,
        bytes: 0,
        latencies_ns: m.latencies_ns,
        daemon_cpu_s: m.daemon_cpu_s,
        client_cpu_s: m.client_cpu_s,
    })
}

/// Every producer stream over its own connection made by `dial`; the streams come back.
async fn produce_run(
    dial: &Dial,
    streams: &mut Vec<produce::ProduceStream>,
    options: &Options,
    (warmup, seconds): (f64, f64),
    pid: Option<u32>,
) -> Result<Outcome, String> {
    let window = produce::Window::starting_now(warmup, seconds);
    let drive = produce::Drive {
        inflight: options.produce_inflight,
        pace: None,
        limit: None,
    };
    let tasks: Vec<_> = std::mem::take(streams)
        .into_iter()
        .map(|s| tokio::spawn(produce::run(dial.clone(), s, drive, window)))
        .collect();
    tokio::time::sleep_until(window.measure_from.into()).await;
    let before = cpu_now(pid);
    tokio::time::sleep_until(window.end.into()).await;
    let (daemon_cpu_s, client_cpu_s) = cpu_delta(before, cpu_now(pid));
    let mut total = produce::StreamStats::default();
    let mut first_error = None;
    for task in tasks {
        let (stream, result) = task.await.map_err(|e| format!("producer task: {e}"))?;
        match result {
            Ok(stats) => total.add(&stats),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
        streams.push(stream);
    }
    if let Some(e) = first_error {
        return Err(format!("produce over {}: {e}", dial.protocol()));
    }
    total.latencies_ns.sort_unstable();
    Ok(Outcome {
        count: total.requests,
        bytes: total.batch_bytes,
        latencies_ns: total.latencies_ns,
        daemon_cpu_s,
        client_cpu_s,
    })
}

/// New connections over `dial`, one ApiVersions each, closed, in a loop on each of
/// `--handshake-connections` tasks.
async fn connection_run(
    dial: &Dial,
    options: &Options,
    pid: Option<u32>,
) -> Result<Outcome, String> {
    let window = produce::Window::starting_now(options.warmup, options.seconds);
    let tasks: Vec<_> = (0..options.handshake_connections)
        .map(|task| tokio::spawn(connect_loop(dial.clone(), task * 50, window)))
        .collect();
    tokio::time::sleep_until(window.measure_from.into()).await;
    let before = cpu_now(pid);
    tokio::time::sleep_until(window.end.into()).await;
    let (daemon_cpu_s, client_cpu_s) = cpu_delta(before, cpu_now(pid));
    let mut outcome = Outcome {
        daemon_cpu_s,
        client_cpu_s,
        ..Outcome::default()
    };
    for task in tasks {
        let (count, latencies) = task
            .await
            .map_err(|e| format!("connection task: {e}"))?
            .map_err(|e| format!("connections over {}: {e}", dial.protocol()))?;
        outcome.count += count;
        outcome.latencies_ns.extend(latencies);
    }
    outcome.latencies_ns.sort_unstable();
    Ok(outcome)
}

/// Local addresses the connection loops rotate through (see [`Dial::connect_from`]).
const SOURCE_ADDRESSES: u8 = 200;

async fn connect_loop(
    dial: Dial,
    task: usize,
    window: produce::Window,
) -> Result<(u64, Vec<u32>), String> {
    let request = ApiVersionsRequest {
        client_software_name: "kcoord-security".into(),
        client_software_version: "1.0".into(),
        ..Default::default()
    };
    let mut count = 0;
    let mut attempts = 0;
    let mut latencies = Vec::new();
    while Instant::now() < window.end {
        let started = Instant::now();
        // 127.0.0.2 to 127.0.0.201, each task starting elsewhere.
        let n = (task + attempts) % usize::from(SOURCE_ADDRESSES);
        attempts += 1;
        let source = std::net::Ipv4Addr::new(127, 0, 0, 2 + n as u8);
        let mut conn = dial.connect_from(Some(source.into())).await?;
        let answer: ApiVersionsResponse = conn.call(ApiKey::ApiVersions, 3, 0, &request).await?;
        if answer.error_code != 0 || answer.api_keys.is_empty() {
            return Err(format!("ApiVersions: error {}", answer.error_code));
        }
        drop(conn);
        let done = Instant::now();
        if started >= window.measure_from && done <= window.end {
            count += 1;
            let ns = done.duration_since(started).as_nanos();
            latencies.push(u32::try_from(ns).unwrap_or(u32::MAX));
        }
    }
    Ok((count, latencies))
}

// ---------------------------------------------------------------------------------------------
// Lines

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    Heartbeat,
    Produce,
    TlsHandshake,
    SaslLogin,
    TcpConnect,
}

impl Measure {
    fn name(self) -> &'static str {
        match self {
            Measure::Heartbeat => "heartbeat",
            Measure::Produce => "produce",
            Measure::TlsHandshake => "tls_handshake",
            Measure::SaslLogin => "sasl_login",
            Measure::TcpConnect => "tcp_connect",
        }
    }
}

/// The runs of one measurement over one listener, summed over the rounds.
#[derive(Default)]
struct Totals {
    count: u64,
    bytes: u64,
    seconds: f64,
    latencies_ns: Vec<u32>,
    daemon_cpu_s: Option<f64>,
    client_cpu_s: Option<f64>,
    /// Per round: count per second.
    rates: Vec<f64>,
}

impl Totals {
    fn add(&mut self, o: &Outcome, seconds: f64) {
        let first = self.rates.is_empty();
        let sum = |t: Option<f64>, x: Option<f64>| if first { x } else { Some(t? + x?) };
        self.daemon_cpu_s = sum(self.daemon_cpu_s, o.daemon_cpu_s);
        self.client_cpu_s = sum(self.client_cpu_s, o.client_cpu_s);
        self.count += o.count;
        self.bytes += o.bytes;
        self.seconds += seconds;
        self.latencies_ns.extend_from_slice(&o.latencies_ns);
        self.rates.push(o.count as f64 / seconds);
    }

    fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.count as f64 / self.seconds
        } else {
            0.0
        }
    }

    fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e6
        } else {
            0.0
        }
    }

    /// CPU µs per counted item.
    fn cpu_us(&self, cpu_s: Option<f64>) -> Option<f64> {
        cpu_s
            .filter(|_| self.count > 0)
            .map(|s| s * 1e6 / self.count as f64)
    }

    /// Counted items per second of the daemon's CPU.
    fn per_daemon_cpu_s(&self) -> Option<f64> {
        self.daemon_cpu_s
            .filter(|s| *s > 0.0)
            .map(|s| self.count as f64 / s)
    }

    fn percentile_us(&mut self, p: f64) -> f64 {
        self.latencies_ns.sort_unstable();
        produce::percentile_us(&self.latencies_ns, p)
    }
}

fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "null".into(), |x| format!("{x:.decimals$}"))
}

fn run_line(measure: Measure, dial: &Dial, round: usize, seconds: f64, o: &Outcome) -> String {
    let per = |cpu: Option<f64>| {
        opt(
            cpu.filter(|_| o.count > 0)
                .map(|s| s * 1e6 / o.count as f64),
            2,
        )
    };
    let mut sorted = o.latencies_ns.clone();
    sorted.sort_unstable();
    format!(
        r#"{{"bench":"security_run","measure":"{}","listener":"{}","round":{round},"seconds":{seconds:.1},"count":{},"per_s":{:.0},"mb_per_s":{:.1},"p50_us":{:.1},"p99_us":{:.1},"daemon_cpu_s":{},"daemon_cpu_us_per_item":{},"client_cpu_us_per_item":{}}}"#,
        measure.name(),
        dial.protocol(),
        o.count,
        o.count as f64 / seconds,
        o.bytes as f64 / seconds / 1e6,
        produce::percentile_us(&sorted, 50.0),
        produce::percentile_us(&sorted, 99.0),
        opt(o.daemon_cpu_s, 2),
        per(o.daemon_cpu_s),
        per(o.client_cpu_s),
    )
}

/// Secure over plain, overall and per round.
fn ratios(plain: &Totals, secure: &Totals, of: impl Fn(&Totals) -> f64) -> (f64, String) {
    let ratio = if of(plain) > 0.0 {
        of(secure) / of(plain)
    } else {
        0.0
    };
    let rounds: Vec<String> = plain
        .rates
        .iter()
        .zip(&secure.rates)
        .map(|(p, s)| format!("{:.3}", if *p > 0.0 { s / p } else { 0.0 }))
        .collect();
    (ratio, rounds.join(","))
}

fn heartbeat_line(options: &Options, plain: &mut Totals, sasl: &mut Totals) -> String {
    let (ratio, rounds) = ratios(plain, sasl, Totals::rate);
    let cpu_ratio = match (
        plain.cpu_us(plain.daemon_cpu_s),
        sasl.cpu_us(sasl.daemon_cpu_s),
    ) {
        (Some(p), Some(s)) if s > 0.0 => Some(p / s),
        _ => None,
    };
    format!(
        r#"{{"bench":"security_heartbeat","connections":{},"inflight":{},"groups":{},"members":{},"acls":{},"covering_acls":{},"rounds":{},"seconds_per_run":{:.1},"plaintext_hb_per_s":{:.0},"sasl_ssl_hb_per_s":{:.0},"ratio":{ratio:.3},"round_ratios":[{rounds}],"plaintext_p50_us":{:.1},"sasl_ssl_p50_us":{:.1},"plaintext_p99_us":{:.1},"sasl_ssl_p99_us":{:.1},"plaintext_daemon_cpu_us_per_hb":{},"sasl_ssl_daemon_cpu_us_per_hb":{},"daemon_cpu_ratio":{},"plaintext_client_cpu_us_per_hb":{},"sasl_ssl_client_cpu_us_per_hb":{},"goal_ratio":{GOAL_HEARTBEAT_RATIO},"goal_met":{}}}"#,
        options.connections,
        options.inflight,
        options.groups,
        options.groups * options.members,
        options.acls,
        options.covering_acls,
        options.rounds,
        options.seconds,
        plain.rate(),
        sasl.rate(),
        plain.percentile_us(50.0),
        sasl.percentile_us(50.0),
        plain.percentile_us(99.0),
        sasl.percentile_us(99.0),
        opt(plain.cpu_us(plain.daemon_cpu_s), 2),
        opt(sasl.cpu_us(sasl.daemon_cpu_s), 2),
        opt(cpu_ratio, 3),
        opt(plain.cpu_us(plain.client_cpu_s), 2),
        opt(sasl.cpu_us(sasl.client_cpu_s), 2),
        ratio >= GOAL_HEARTBEAT_RATIO,
    )
}

fn produce_line(options: &Options, plain: &mut Totals, ssl: &mut Totals) -> String {
    let (ratio, rounds) = ratios(plain, ssl, Totals::mb_per_s);
    // Daemon CPU seconds per GB of batches.
    let per_gb = |t: &Totals| {
        t.daemon_cpu_s
            .filter(|_| t.bytes > 0)
            .map(|s| s * 1e9 / t.bytes as f64)
    };
    let cpu_ratio = match (per_gb(plain), per_gb(ssl)) {
        (Some(p), Some(s)) if s > 0.0 => Some(p / s),
        _ => None,
    };
    format!(
        r#"{{"bench":"security_produce","connections":{},"inflight":{},"record_bytes":{},"batch_bytes":{},"prime_seconds":{:.1},"acls":{},"rounds":{},"seconds_per_run":{:.1},"plaintext_mb_per_s":{:.1},"ssl_mb_per_s":{:.1},"ratio":{ratio:.3},"round_ratios":[{rounds}],"plaintext_p50_us":{:.1},"ssl_p50_us":{:.1},"plaintext_p99_us":{:.1},"ssl_p99_us":{:.1},"plaintext_daemon_cpu_s_per_gb":{},"ssl_daemon_cpu_s_per_gb":{},"daemon_cpu_ratio":{},"goal_ratio":{GOAL_PRODUCE_RATIO},"goal_met":{}}}"#,
        options.produce_connections,
        options.produce_inflight,
        options.record_bytes,
        options.batch_bytes,
        options.produce_prime,
        options.acls,
        options.rounds,
        options.seconds,
        plain.mb_per_s(),
        ssl.mb_per_s(),
        plain.percentile_us(50.0),
        ssl.percentile_us(50.0),
        plain.percentile_us(99.0),
        ssl.percentile_us(99.0),
        opt(per_gb(plain), 3),
        opt(per_gb(ssl), 3),
        opt(cpu_ratio, 3),
        ratio >= GOAL_PRODUCE_RATIO,
    )
}

fn connections_line(options: &Options, kinds: &mut [(Measure, Totals)]) -> String {
    let mut line = format!(
        r#"{{"bench":"security_connections","concurrency":{},"rounds":{},"seconds_per_run":{:.1}"#,
        options.handshake_connections, options.rounds, options.seconds
    );
    for (measure, t) in kinds {
        let n = measure.name();
        line.push_str(&format!(
            r#","{n}_per_s":{:.0},"{n}_per_daemon_cpu_s":{},"{n}_daemon_cpu_us":{},"{n}_client_cpu_us":{},"{n}_p50_us":{:.1},"{n}_p99_us":{:.1},"{n}_round_rates":[{}]"#,
            t.rate(),
            opt(t.per_daemon_cpu_s(), 0),
            opt(t.cpu_us(t.daemon_cpu_s), 1),
            opt(t.cpu_us(t.client_cpu_s), 1),
            t.percentile_us(50.0),
            t.percentile_us(99.0),
            t.rates.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join(","),
        ));
    }
    line.push('}');
    line
}

// ---------------------------------------------------------------------------------------------
// Main

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
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
            eprintln!("security: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let secured = match start(&options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("security: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(bench(&secured, &options));
    drop(runtime);
    let alive = secured.daemon.is_alive();
    if let Err(e) = result {
        eprintln!("security: {e}\n{}", secured.daemon.stderr_log());
        return ExitCode::FAILURE;
    }
    if !alive {
        eprintln!(
            "security: the daemon died during the runs\n{}",
            secured.daemon.stderr_log()
        );
        return ExitCode::FAILURE;
    }
    secured.daemon.stop();
    ExitCode::SUCCESS
}

async fn bench(secured: &Secured, options: &Options) -> Result<(), String> {
    let started = Instant::now();
    let prefix = format!("sec-{}", std::process::id());
    set_up_acls(secured, options, &format!("{prefix}-")).await?;
    let plain_addr = secured.plaintext.addr();
    let (version, mut members) = if options.parts.contains(&Part::Heartbeats) {
        let (fleet, _pipes) = steady::settled_fleet(
            plain_addr,
            &prefix,
            SOURCE_TOPIC,
            options.groups,
            options.members,
            options.partitions,
            options.connections.min(16),
        )
        .await?;
        (fleet.version, fleet.members)
    } else {
        (0, Vec::new())
    };
    let mut streams = if options.parts.contains(&Part::Produce) {
        let client = fleet::connect_client(plain_addr).await?;
        let batch = produce::build_batch(
            options.record_bytes,
            options.batch_bytes,
            Compression::None,
            1,
        )?;
        produce::streams_on_new_topic(
            &client.bootstrap(),
            PRODUCE_TOPIC,
            options.produce_connections,
            PRODUCE_TOPIC_CONFIGS,
            &batch,
        )
        .await?
    } else {
        Vec::new()
    };
    eprintln!(
        "security: {} ACLs, {} members Stable, {} producers ready after {:.1} s",
        options.acls,
        members.len(),
        streams.len(),
        started.elapsed().as_secs_f64()
    );

    let pid = secured.pid;
    let s = options.seconds;
    let mut hb = (Totals::default(), Totals::default());
    let mut pr = (Totals::default(), Totals::default());
    let mut conns = [
        (Measure::TlsHandshake, Totals::default()),
        (Measure::SaslLogin, Totals::default()),
        (Measure::TcpConnect, Totals::default()),
    ];
    // Says what starts (for a profiler watching), and afterwards prints the run's line.
    let starting = |measure: Measure, dial: &Dial, round: usize| {
        eprintln!(
            "security: round {round}: {} over {}",
            measure.name(),
            dial.protocol()
        );
    };
    let done = |measure: Measure, dial: &Dial, round: usize, o: &Outcome| {
        println!("{}", run_line(measure, dial, round, s, o));
        if o.count == 0 {
            return Err(format!(
                "{} over {}: nothing answered in round {round}",
                measure.name(),
                dial.protocol()
            ));
        }
        Ok(())
    };
    for round in 1..=options.rounds {
        // Odd rounds PLAINTEXT first, even rounds the secured listener first.
        let plain_first = round % 2 == 1;
        let order = [!plain_first, plain_first];
        if options.parts.contains(&Part::Heartbeats) {
            for secured_side in order {
                let (dial, totals) = if secured_side {
                    (&secured.sasl_ssl, &mut hb.1)
                } else {
                    (&secured.plaintext, &mut hb.0)
                };
                starting(Measure::Heartbeat, dial, round);
                let o = heartbeats(dial, &mut members, version, options, pid).await?;
                done(Measure::Heartbeat, dial, round, &o)?;
                totals.add(&o, s);
            }
        }
        if options.parts.contains(&Part::Produce) {
            if options.produce_prime > 0.0 {
                // Unmeasured: the daemon's memory as a produce load leaves it (see the docs).
                eprintln!("security: round {round}: produce priming over PLAINTEXT");
                let timing = (0.0, options.produce_prime);
                produce_run(&secured.plaintext, &mut streams, options, timing, pid).await?;
            }
            for secured_side in order {
                let (dial, totals) = if secured_side {
                    (&secured.ssl, &mut pr.1)
                } else {
                    (&secured.plaintext, &mut pr.0)
                };
                starting(Measure::Produce, dial, round);
                let timing = (options.warmup, options.seconds);
                let o = produce_run(dial, &mut streams, options, timing, pid).await?;
                done(Measure::Produce, dial, round, &o)?;
                totals.add(&o, s);
            }
        }
        if options.parts.contains(&Part::Connections) {
            for (measure, totals) in &mut conns {
                let dial = match measure {
                    Measure::TlsHandshake => &secured.ssl,
                    Measure::SaslLogin => &secured.sasl_ssl,
                    _ => &secured.plaintext,
                };
                starting(*measure, dial, round);
                let o = connection_run(dial, options, pid).await?;
                done(*measure, dial, round, &o)?;
                totals.add(&o, s);
            }
        }
    }
    if options.parts.contains(&Part::Heartbeats) {
        println!("{}", heartbeat_line(options, &mut hb.0, &mut hb.1));
    }
    if options.parts.contains(&Part::Produce) {
        println!("{}", produce_line(options, &mut pr.0, &mut pr.1));
    }
    if options.parts.contains(&Part::Connections) {
        println!("{}", connections_line(options, &mut conns));
    }
    Ok(())
}
