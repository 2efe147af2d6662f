//! The `transactions` bench's flags (see the bench's documentation for what each does).

use crate::args::{list, positive, seconds};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Produce,
    CatchUp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    Kcoord,
    Kafka,
}

impl ServerKind {
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Kcoord => "kcoord",
            ServerKind::Kafka => "kafka",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub measures: Vec<Measure>,
    pub servers: Vec<ServerKind>,
    pub kcoord_on_disk: bool,
    pub rounds: usize,
    pub seconds: f64,
    pub ramp: f64,
    pub warmup: f64,
    pub partitions: usize,
    pub record_bytes: usize,
    pub commit_ms: u64,
    pub linger_ms: u64,
    pub queue_kbytes: usize,
    pub fill_mb: f64,
    pub txn_records: u64,
    pub abort_every: u64,
    pub consumers: usize,
    pub passes: usize,
    pub partition_max_bytes: usize,
    pub pin_servers: Option<String>,
    pub pin_load: Option<String>,
    pub daemon_config: Vec<String>,
    pub kafka_config: Vec<String>,
}

pub const USAGE: &str = "usage: transactions [--measure produce,catchup] \
[--servers kcoord,kafka] [--kcoord-storage disk|memory] [--rounds R] [--seconds S] [--ramp S] \
[--warmup S] [--partitions N] [--record-bytes B] [--commit-ms M] [--linger-ms M] \
[--queue-kbytes K] [--fill-mb M] [--txn-records N] [--abort-every K] [--consumers C] \
[--passes P] [--partition-max-bytes B] [--pin-servers CPUS] [--pin-load CPUS] \
[--daemon-config KEY=VALUE].. [--kafka-config KEY=VALUE]..";

/// The defaults of a measurement (`--bench` given) or of the smoke run under `cargo test`.
fn defaults(bench: bool) -> Options {
    Options {
        measures: vec![Measure::Produce, Measure::CatchUp],
        servers: if bench {
            vec![ServerKind::Kcoord, ServerKind::Kafka]
        } else {
            vec![ServerKind::Kcoord]
        },
        kcoord_on_disk: true,
        rounds: if bench { 4 } else { 1 },
        seconds: if bench { 8.0 } else { 0.3 },
        ramp: if bench { 1.0 } else { 0.0 },
        warmup: if bench { 20.0 } else { 0.0 },
        partitions: 10,
        record_bytes: 1024,
        commit_ms: 100,
        linger_ms: 5,
        queue_kbytes: 8192,
        fill_mb: if bench { 512.0 } else { 2.0 },
        txn_records: if bench { 1000 } else { 200 },
        abort_every: 5,
        consumers: 2,
        passes: if bench { 12 } else { 1 },
        partition_max_bytes: 1 << 20,
        pin_servers: None,
        pin_load: None,
        daemon_config: Vec::new(),
        kafka_config: Vec::new(),
    }
}

const KNOWN: &[&str] = &[
    "--measure",
    "--servers",
    "--kcoord-storage",
    "--rounds",
    "--seconds",
    "--ramp",
    "--warmup",
    "--partitions",
    "--record-bytes",
    "--commit-ms",
    "--linger-ms",
    "--queue-kbytes",
    "--fill-mb",
    "--txn-records",
    "--abort-every",
    "--consumers",
    "--passes",
    "--partition-max-bytes",
    "--pin-servers",
    "--pin-load",
    "--daemon-config",
    "--kafka-config",
];

pub fn parse(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut o = defaults(bench);
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        i += 1;
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (flag, None),
        };
        if name == "--bench" {
            continue;
        }
        if !KNOWN.contains(&name) {
            if bench {
                return Err(format!("unknown argument {flag:?}\n{USAGE}"));
            }
            eprintln!("transactions: ignoring argument {flag:?} (smoke mode)");
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i - 1)
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))?
            }
        };
        set(&mut o, name, &value)?;
    }
    if o.seconds <= 0.0 {
        return Err("--seconds must be above 0".into());
    }
    Ok(o)
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("bad {name} {value:?}\n{USAGE}"))
}

fn set(o: &mut Options, name: &str, value: &str) -> Result<(), String> {
    match name {
        "--measure" => {
            o.measures = list(value, |s| match s {
                "produce" => Ok(Measure::Produce),
                "catchup" | "catch-up" => Ok(Measure::CatchUp),
                _ => Err(format!("unknown --measure {s:?} (produce, catchup)")),
            })?
        }
        "--servers" => {
            o.servers = list(value, |s| match s {
                "kcoord" => Ok(ServerKind::Kcoord),
                "kafka" => Ok(ServerKind::Kafka),
                _ => Err(format!("unknown --servers {s:?} (kcoord, kafka)")),
            })?
        }
        "--kcoord-storage" => {
            o.kcoord_on_disk = match value {
                "disk" => true,
                "memory" => false,
                _ => return Err(format!("unknown --kcoord-storage {value:?} (disk, memory)")),
            }
        }
        "--rounds" => o.rounds = positive(value)?,
        "--seconds" => o.seconds = seconds(value)?,
        "--ramp" => o.ramp = seconds(value)?,
        "--warmup" => o.warmup = seconds(value)?,
        "--partitions" => o.partitions = positive(value)?,
        "--record-bytes" => o.record_bytes = positive(value)?,
        "--commit-ms" => o.commit_ms = positive(value)? as u64,
        "--linger-ms" => o.linger_ms = number(name, value)?,
        "--queue-kbytes" => o.queue_kbytes = positive(value)?,
        "--fill-mb" => {
            o.fill_mb = number::<f64>(name, value)?;
            if !(o.fill_mb > 0.0 && o.fill_mb <= 100_000.0) {
                return Err(format!("bad --fill-mb {value:?}"));
            }
        }
        "--txn-records" => o.txn_records = positive(value)? as u64,
        "--abort-every" => o.abort_every = positive(value)? as u64,
        "--consumers" => o.consumers = positive(value)?,
        "--passes" => o.passes = positive(value)?,
        "--partition-max-bytes" => o.partition_max_bytes = positive(value)?,
        "--pin-servers" => o.pin_servers = Some(value.to_string()),
        "--pin-load" => o.pin_load = Some(value.to_string()),
        "--daemon-config" => o.daemon_config.push(value.to_string()),
        "--kafka-config" => o.kafka_config.push(value.to_string()),
        _ => unreachable!("KNOWN lists exactly these"),
    }
    Ok(())
}

/// A JSON number with `decimals` decimals, `null` when not finite.
pub fn json_f64(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "null".into()
    }
}
