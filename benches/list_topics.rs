//! KIP-142's motivation, measured: listing the topics of a cluster with ListTopics (key 96)
//! versus an all-topics Metadata request, same daemon, same topics, same run. One JSON line
//! per API (and version):
//!
//! ```text
//! cargo bench --bench list_topics                       # 10,000 topics, 50 requests each
//! cargo bench --bench list_topics -- --topics 100000 --iterations 20
//! ```
//!
//! The daemon runs in-process (`kcoord_server::start`, 127.0.0.1 port 0, in-memory log); the
//! topics (one partition each) are created with CreateTopics in batches of 1,000. Each API is
//! then sent `--iterations` times, one request at a time on one connection, after one warm-up
//! request. `response_bytes` is the response body as it crossed the wire (after the 4-byte
//! size and the response header); the latencies are request-to-last-byte on the client, which
//! does not decode the body while timing (each body is decoded once, outside the timing, to
//! check it lists every topic).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs a smoke configuration (200
//! topics, 3 iterations) so the code stays exercised. The exit status is 1 when a response
//! does not list every topic.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_client::{ClientConfig, Connection};
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::{
    CreateTopicsRequest, ListTopicsRequest, ListTopicsResponse, MetadataRequest, MetadataResponse,
};
use kcoord_wire::{Decodable, Encodable};

const BATCH: usize = 1_000;

struct Settings {
    topics: usize,
    iterations: usize,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut settings = if bench {
        Settings {
            topics: 10_000,
            iterations: 50,
        }
    } else {
        Settings {
            topics: 200,
            iterations: 3,
        }
    };
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| {
            args.get(i + 1)
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|v| *v > 0)
        };
        match args[i].as_str() {
            "--topics" => settings.topics = value(i).ok_or("--topics needs a positive number")?,
            "--iterations" => {
                settings.iterations = value(i).ok_or("--iterations needs a positive number")?
            }
            // libtest's and cargo's own arguments.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Ok(settings)
}

fn encode<R: Encodable>(request: &R, version: i16) -> Bytes {
    let mut body = BytesMut::new();
    request
        .encode(&mut body, version)
        .expect("the request encodes");
    body.freeze()
}

struct Measured {
    api: &'static str,
    version: i16,
    response_bytes: usize,
    listed: usize,
    latencies: Vec<Duration>,
}

impl Measured {
    fn json(&self, topics: usize) -> String {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let pct = |p: f64| ms(sorted[((sorted.len() - 1) as f64 * p).round() as usize]);
        let mean = ms(sorted.iter().sum::<Duration>()) / sorted.len() as f64;
        format!(
            "{{\"bench\":\"list_topics\",\"api\":\"{}\",\"version\":{},\"topics\":{},\"listed\":{},\"response_bytes\":{},\"bytes_per_topic\":{:.1},\"iterations\":{},\"mean_ms\":{:.3},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"min_ms\":{:.3},\"max_ms\":{:.3}}}",
            self.api,
            self.version,
            topics,
            self.listed,
            self.response_bytes,
            self.response_bytes as f64 / topics as f64,
            sorted.len(),
            mean,
            pct(0.5),
            pct(0.99),
            ms(sorted[0]),
            ms(sorted[sorted.len() - 1]),
        )
    }
}

async fn measure(
    conn: &Connection,
    api: &'static str,
    key: i16,
    version: i16,
    body: Bytes,
    iterations: usize,
    count: impl Fn(Bytes) -> usize,
) -> Measured {
    let warm = conn
        .send_raw(key, version, body.clone())
        .await
        .expect("warm-up request");
    let listed = count(warm.clone());
    let mut latencies = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let response = conn
            .send_raw(key, version, body.clone())
            .await
            .expect("request");
        latencies.push(start.elapsed());
        assert_eq!(response.len(), warm.len(), "the same answer every time");
    }
    Measured {
        api,
        version,
        response_bytes: warm.len(),
        listed,
        latencies,
    }
}

async fn run(settings: &Settings) -> Result<Vec<Measured>, String> {
    // `--topics` may ask for more than the default `controller.max.topics`.
    let text = format!(
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\nlog.level=warn\ncontroller.max.topics={}\ncontroller.max.partitions={}\n",
        i32::MAX,
        i32::MAX
    );
    let config =
        kcoord_server::Config::parse("list-topics-bench", &text).map_err(|e| e.to_string())?;
    let node = kcoord_server::start(config)
        .await
        .map_err(|e| e.to_string())?;
    let addr = node.broker_addr().ok_or("no broker listener")?.to_string();
    let client_config =
        ClientConfig::new("list-topics-bench").with_request_timeout(Duration::from_secs(120));
    let conn = Connection::connect(&addr, client_config)
        .await
        .map_err(|e| e.to_string())?;
    conn.negotiate().await.map_err(|e| e.to_string())?;

    let names: Vec<String> = (0..settings.topics)
        .map(|i| format!("bench-topic-{i:06}"))
        .collect();
    for chunk in names.chunks(BATCH) {
        let request = CreateTopicsRequest {
            topics: chunk
                .iter()
                .map(|name| CreatableTopic {
                    name: name.clone(),
                    num_partitions: 1,
                    replication_factor: 1,
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 120_000,
            ..Default::default()
        };
        let response = conn.send(request, 7).await.map_err(|e| e.to_string())?;
        if let Some(failed) = response.topics.iter().find(|t| t.error_code != 0) {
            return Err(format!(
                "creating {} failed with error {}",
                failed.name, failed.error_code
            ));
        }
    }

    let list_topics = |version: i16| {
        encode(
            &ListTopicsRequest {
                list_internal: true,
                ..Default::default()
            },
            version,
        )
    };
    let metadata_version = 13;
    let metadata = encode(
        &MetadataRequest {
            topics: None,
            allow_auto_topic_creation: false,
            ..Default::default()
        },
        metadata_version,
    );
    let mut results = Vec::new();
    for version in [0, 1] {
        let count = move |mut body: Bytes| {
            ListTopicsResponse::decode(&mut body, version).map_or(0, |r| r.topics.len())
        };
        results.push(
            measure(
                &conn,
                "ListTopics",
                96,
                version,
                list_topics(version),
                settings.iterations,
                count,
            )
            .await,
        );
    }
    let count = |mut body: Bytes| {
        MetadataResponse::decode(&mut body, metadata_version).map_or(0, |r| r.topics.len())
    };
    results.push(
        measure(
            &conn,
            "Metadata",
            3,
            metadata_version,
            metadata,
            settings.iterations,
            count,
        )
        .await,
    );
    drop(conn);
    node.shutdown().await;
    Ok(results)
}

fn main() -> ExitCode {
    let settings = match settings() {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&settings)) {
        Ok(results) => {
            let mut complete = true;
            for r in &results {
                println!("{}", r.json(settings.topics));
                complete &= r.listed == settings.topics;
            }
            if complete {
                ExitCode::SUCCESS
            } else {
                eprintln!("error: a response did not list every topic");
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
