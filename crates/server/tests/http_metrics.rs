//! The HTTP listener (`http.listener`): `/metrics` parsed as Prometheus' text format and
//! followed as requests are made, `/health/live` and `/health/ready` (ready only once the
//! coordinator shards have loaded: held back by a load gate, no timing), the listener absent
//! without the key, and a slow HTTP client that does not hold up another.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_server::runtime::shards::LoadGate;
use kcoord_server::{Config, Extensions, ServerHandle};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
use kcoord_wire::messages::{
    CreateTopicsRequest, CreateTopicsResponse, FetchRequest, FetchResponse, ProduceRequest,
    ProduceResponse, RequestHeader, ResponseHeader, StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use kcoord_wire::{Decodable, Encodable, ErrorCode};
use prometheus_parse::{Scrape, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TIMEOUT: Duration = Duration::from_secs(10);

fn config(extra: &str) -> Config {
    let text = format!(
        "node.id=1\n\
         listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         offsets.topic.num.partitions=4\n\
         group.streams.initial.rebalance.delay.ms=0\n\
         {extra}"
    );
    Config::parse("http-test", &text).unwrap()
}

async fn start(extra: &str, extensions: Extensions) -> ServerHandle {
    kcoord_server::start_with(config(extra), extensions)
        .await
        .unwrap()
}

async fn start_http(extensions: Extensions) -> (ServerHandle, SocketAddr) {
    let server = start("http.listener=127.0.0.1:0\n", extensions).await;
    let http = server.http_addr().expect("http.listener is set");
    (server, http)
}

/// One HTTP/1.1 GET on its own connection: (status, body).
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        String::from_utf8(raw).unwrap()
    };
    let response = tokio::time::timeout(TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| panic!("GET {path} got no answer within {TIMEOUT:?}"));
    let (head, body) = response.split_once("\r\n\r\n").expect("a whole response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    // `Connection: close` responses here are never chunked: hyper knows their length.
    (status, body.to_owned())
}

/// `/metrics`, parsed; also checks the content type Prometheus expects.
async fn scrape(addr: SocketAddr) -> Metrics {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut raw))
        .await
        .expect("/metrics answered")
        .unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap();
    Metrics { scrape }
}

struct Metrics {
    scrape: Scrape,
}

impl Metrics {
    /// The value of the counter, gauge or untyped sample `name` with exactly `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .find_map(|s| match s.value {
                Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(v),
                _ => None,
            })
    }

    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels)
            .unwrap_or_else(|| panic!("no sample {name}{labels:?}"))
    }

    /// Observations of the histogram `name` with `labels` (its `+Inf` bucket).
    fn observations(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.scrape
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .find_map(|s| match &s.value {
                Value::Histogram(buckets) => buckets
                    .iter()
                    .find(|b| b.less_than.is_infinite())
                    .map(|b| b.count),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no histogram {name}{labels:?}"))
    }

    /// The TYPE each family name was given, from the samples' values.
    fn types(&self) -> HashMap<&str, &'static str> {
        self.scrape
            .samples
            .iter()
            .map(|s| {
                let kind = match s.value {
                    Value::Counter(_) => "counter",
                    Value::Gauge(_) => "gauge",
                    Value::Histogram(_) => "histogram",
                    Value::Summary(_) => "summary",
                    Value::Untyped(_) => "untyped",
                };
                (s.metric.as_str(), kind)
            })
            .collect()
    }
}

/// Polls `/metrics` until `check` holds, within [`TIMEOUT`].
async fn scrape_until(addr: SocketAddr, what: &str, check: impl Fn(&Metrics) -> bool) -> Metrics {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let metrics = scrape(addr).await;
        if check(&metrics) {
            return metrics;
        }
        assert!(Instant::now() < deadline, "/metrics never showed {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `/health/ready` until it answers 200, within [`TIMEOUT`]; returns its body.
async fn wait_ready(addr: SocketAddr) -> String {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let (status, body) = get(addr, "/health/ready").await;
        if status == 200 {
            return body;
        }
        assert!(Instant::now() < deadline, "never ready: {body}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A Kafka client connection sending hand-built frames.
struct Kafka {
    stream: TcpStream,
    correlation_id: i32,
}

impl Kafka {
    async fn connect(server: &ServerHandle) -> Kafka {
        let stream = TcpStream::connect(server.broker_addr().unwrap())
            .await
            .unwrap();
        Kafka {
            stream,
            correlation_id: 0,
        }
    }

    async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation_id += 1;
        let header = RequestHeader {
            request_api_key: api.key(),
            request_api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("http-metrics-test".to_owned()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, api.request_header_version(version))
            .unwrap();
        request.encode(&mut buf, version).unwrap();
        let mut frame = (buf.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&buf);
        self.stream.write_all(&frame).await.unwrap();
        let mut size = [0u8; 4];
        tokio::time::timeout(TIMEOUT, self.stream.read_exact(&mut size))
            .await
            .expect("a response")
            .unwrap();
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body).await.unwrap();
        let mut body = Bytes::from(body);
        ResponseHeader::decode(&mut body, api.response_header_version(version)).unwrap();
        Resp::decode(&mut body, version).unwrap()
    }

    async fn create_topic(&mut self, name: &str, partitions: i32) {
        let request = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: -1,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        };
        let response: CreateTopicsResponse = self.call(ApiKey::CreateTopics, 7, &request).await;
        assert_eq!(response.topics[0].error_code, 0, "{response:?}");
    }

    async fn heartbeat(
        &mut self,
        request: &StreamsGroupHeartbeatRequest,
    ) -> StreamsGroupHeartbeatResponse {
        self.call(ApiKey::StreamsGroupHeartbeat, 0, request).await
    }
}

fn join(group: &str, member: &str, source: &str) -> StreamsGroupHeartbeatRequest {
    StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![source.into()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        process_id: Some("process-1".into()),
        active_tasks: Some(vec![]),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![]),
        ..Default::default()
    }
}

#[tokio::test]
async fn metrics_are_prometheus_text_with_the_documented_families() {
    let (server, http) = start_http(Extensions::default()).await;
    let metrics = scrape(http).await;
    let types = metrics.types();
    for (name, kind) in [
        ("kcoord_requests_total", "counter"),
        ("kcoord_request_duration_seconds", "histogram"),
        ("kcoord_connections", "gauge"),
        ("kcoord_connections_accepted_total", "counter"),
        ("kcoord_connections_closed_total", "counter"),
        ("kcoord_streams_groups", "gauge"),
        ("kcoord_streams_group_members", "gauge"),
        ("kcoord_group_members", "gauge"),
        ("kcoord_streams_group_rebalances_total", "counter"),
        ("kcoord_streams_group_assignments_total", "counter"),
        (
            "kcoord_streams_group_assignment_job_duration_seconds",
            "histogram",
        ),
        ("kcoord_topology_plugin_calls_total", "counter"),
        ("kcoord_topology_plugin_call_duration_seconds", "histogram"),
        ("kcoord_log_appended_records_total", "counter"),
        ("kcoord_log_appended_batches_total", "counter"),
        ("kcoord_log_written_bytes_total", "counter"),
        ("kcoord_log_fsync_duration_seconds", "histogram"),
        ("kcoord_partitions", "gauge"),
        ("kcoord_produce_bytes_total", "counter"),
        ("kcoord_produce_records_total", "counter"),
        ("kcoord_fetch_bytes_total", "counter"),
        ("kcoord_fetch_records_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_threads", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_cpu_seconds_total", "counter"),
    ] {
        assert_eq!(types.get(name).copied(), Some(kind), "{name}");
        assert!(
            metrics.scrape.docs.contains_key(name),
            "{name} has a HELP line"
        );
    }
    assert!(metrics.get("process_resident_memory_bytes", &[]) > 0.0);
    assert_eq!(
        metrics.get("kcoord_streams_groups", &[("state", "Stable")]),
        0.0
    );
    assert_eq!(
        metrics.get("kcoord_connections", &[("listener", "CONTROLLER")]),
        0.0
    );
    server.shutdown().await;
}

#[tokio::test]
async fn request_group_and_data_plane_metrics_follow_the_requests() {
    let (server, http) = start_http(Extensions::default()).await;
    let before = scrape(http).await;
    let heartbeats =
        |m: &Metrics| m.get("kcoord_requests_total", &[("api", "StreamsGroupHeartbeat")]);
    let latencies = |m: &Metrics| {
        m.observations(
            "kcoord_request_duration_seconds",
            &[("api", "StreamsGroupHeartbeat")],
        )
    };
    let errors = |m: &Metrics, error: &str| {
        m.value(
            "kcoord_request_errors_total",
            &[("api", "StreamsGroupHeartbeat"), ("error", error)],
        )
        .unwrap_or(0.0)
    };

    // A connection opening shows on its listener.
    let mut kafka = Kafka::connect(&server).await;
    let open = |m: &Metrics| m.get("kcoord_connections", &[("listener", "PLAINTEXT")]);
    scrape_until(http, "the open connection", |m| open(m) == 1.0).await;

    kafka.create_topic("input", 3).await;
    let joined = kafka.heartbeat(&join("app", "m1", "input")).await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    let mut steady = join("app", "m1", "input");
    steady.member_epoch = joined.member_epoch;
    steady.topology = None;
    for _ in 0..3 {
        let answered = kafka.heartbeat(&steady).await;
        assert_eq!(answered.error_code, 0, "{:?}", answered.error_message);
    }
    let mut unknown = join("no-such-group", "m9", "input");
    unknown.member_epoch = 3;
    unknown.topology = None;
    let refused = kafka.heartbeat(&unknown).await;
    assert_eq!(refused.error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());

    let after = scrape(http).await;
    assert_eq!(heartbeats(&after) - heartbeats(&before), 5.0);
    assert_eq!(latencies(&after) - latencies(&before), 5.0);
    assert_eq!(errors(&after, "NONE") - errors(&before, "NONE"), 4.0);
    assert_eq!(
        errors(&after, "GROUP_ID_NOT_FOUND") - errors(&before, "GROUP_ID_NOT_FOUND"),
        1.0
    );
    assert_eq!(
        after.get("kcoord_requests_total", &[("api", "CreateTopics")]),
        1.0
    );
    // The group: one member, an epoch bump for its join, an assignment computed.
    let groups: f64 = ["Empty", "NotReady", "Assigning", "Reconciling", "Stable"]
        .iter()
        .map(|s| after.get("kcoord_streams_groups", &[("state", s)]))
        .sum();
    assert_eq!(groups, 1.0);
    assert_eq!(after.get("kcoord_streams_group_members", &[]), 1.0);
    assert!(after.get("kcoord_streams_group_rebalances_total", &[]) >= 1.0);
    assert!(after.get("kcoord_streams_group_assignments_total", &[]) >= 1.0);
    assert_eq!(
        after.observations("kcoord_streams_group_assignment_job_duration_seconds", &[]),
        after.get("kcoord_streams_group_assignments_total", &[])
    );
    assert_eq!(after.get("kcoord_partitions", &[]), 3.0);

    // Produce and fetch: bytes and records.
    let mut batch = BatchBuilder::new(BatchOptions::default());
    for value in ["a", "bb", "ccc"] {
        batch.push(1, None, Some(value.as_bytes()), &[]).unwrap();
    }
    let batch = batch.build().unwrap();
    let produce = ProduceRequest {
        acks: 1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: "input".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.clone().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let produced: ProduceResponse = kafka.call(ApiKey::Produce, 9, &produce).await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    let fetch = FetchRequest {
        replica_id: -1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "input".into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let fetched: FetchResponse = kafka.call(ApiKey::Fetch, 12, &fetch).await;
    assert_eq!(fetched.responses[0].partitions[0].error_code, 0);
    let data = scrape(http).await;
    let len = batch.len() as f64;
    assert_eq!(data.get("kcoord_produce_bytes_total", &[]), len);
    assert_eq!(data.get("kcoord_produce_records_total", &[]), 3.0);
    assert_eq!(data.get("kcoord_fetch_bytes_total", &[]), len);
    assert_eq!(data.get("kcoord_fetch_records_total", &[]), 3.0);
    assert_eq!(
        data.get("kcoord_requests_total", &[("api", "Produce")]),
        1.0
    );

    // The connection closing shows too.
    let closed_before = data.get(
        "kcoord_connections_closed_total",
        &[("listener", "PLAINTEXT")],
    );
    drop(kafka);
    let closed_total = |m: &Metrics| {
        m.get(
            "kcoord_connections_closed_total",
            &[("listener", "PLAINTEXT")],
        )
    };
    // Both the gauge and the counter, in one scrape (a loaded CI run once saw the gauge at 0
    // with the counter not yet counted, unexplained: the drop counts closed first).
    let closed = scrape_until(http, "the connection closed", |m| {
        open(m) == 0.0 && closed_total(m) == closed_before + 1.0
    })
    .await;
    assert_eq!(
        closed.get(
            "kcoord_connections_closed_total",
            &[("listener", "PLAINTEXT")]
        ),
        closed_before + 1.0
    );
    assert_eq!(
        closed.get(
            "kcoord_connections_accepted_total",
            &[("listener", "PLAINTEXT")]
        ),
        1.0
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_coordinator_logs_appends_and_fsyncs_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "http.listener=127.0.0.1:0\nlog.dirs={}\nlog.flush.interval.messages=1\n",
        dir.path().display()
    );
    let server = start(&extra, Extensions::default()).await;
    let http = server.http_addr().unwrap();
    // The shards replay their (empty) logs first: a join before that is answered
    // COORDINATOR_LOAD_IN_PROGRESS.
    wait_ready(http).await;
    let mut kafka = Kafka::connect(&server).await;
    kafka.create_topic("input", 1).await;
    let joined = kafka.heartbeat(&join("app", "m1", "input")).await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    let metrics = scrape(http).await;
    for log in ["coordinator", "controller"] {
        let labels = [("log", log)];
        assert!(
            metrics.get("kcoord_log_appended_records_total", &labels) >= 1.0,
            "{log}"
        );
        assert!(
            metrics.get("kcoord_log_appended_batches_total", &labels) >= 1.0,
            "{log}"
        );
        assert!(
            metrics.get("kcoord_log_written_bytes_total", &labels) > 0.0,
            "{log}"
        );
        assert!(
            metrics.observations("kcoord_log_fsync_duration_seconds", &labels) >= 1.0,
            "{log}"
        );
    }
    drop(kafka);
    server.shutdown().await;
}

#[tokio::test]
async fn plugin_calls_are_counted_by_method_and_outcome() {
    let extra = "http.listener=127.0.0.1:0\ngroup.streams.topology.description.class=memory\n";
    let server = start(extra, Extensions::default()).await;
    let http = server.http_addr().unwrap();
    let mut kafka = Kafka::connect(&server).await;
    kafka.create_topic("input", 1).await;
    let joined: StreamsGroupHeartbeatResponse = kafka
        .call(
            ApiKey::StreamsGroupHeartbeat,
            2,
            &join("app", "m1", "input"),
        )
        .await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    assert!(joined.topology_description_id.is_some(), "asked to push");
    let describe = StreamsGroupDescribeRequest {
        group_ids: vec!["app".into()],
        include_topology_description: true,
        ..Default::default()
    };
    let described: StreamsGroupDescribeResponse =
        kafka.call(ApiKey::StreamsGroupDescribe, 1, &describe).await;
    assert_eq!(described.groups[0].error_code, 0);
    let metrics = scrape(http).await;
    let calls = |method: &str, outcome: &str| {
        metrics.get(
            "kcoord_topology_plugin_calls_total",
            &[("method", method), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("requires_topology_push", "ok"), 1.0);
    assert_eq!(calls("get_topology", "ok"), 1.0);
    assert_eq!(calls("set_topology", "ok"), 0.0);
    assert_eq!(
        metrics.observations(
            "kcoord_topology_plugin_call_duration_seconds",
            &[("method", "get_topology")]
        ),
        1.0
    );
    drop(kafka);
    server.shutdown().await;
}

#[tokio::test]
async fn ready_only_once_every_shard_has_loaded() {
    let gate = LoadGate::new();
    let (server, http) = start_http(Extensions {
        load_gate: Some(gate.clone()),
        ..Default::default()
    })
    .await;
    assert_eq!(get(http, "/health/live").await.0, 200);
    let (status, body) = get(http, "/health/ready").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("4 of 4 coordinator shards have not loaded"),
        "{body}"
    );
    gate.open();
    let body = wait_ready(http).await;
    assert!(body.contains("\"ready\""), "{body}");
    assert_eq!(get(http, "/no-such-page").await.0, 404);
    server.shutdown().await;
}

#[tokio::test]
async fn no_http_listener_without_the_key() {
    let server = start("", Extensions::default()).await;
    assert_eq!(server.http_addr(), None);
    assert!(!server.startup_line().contains("http="));
    server.shutdown().await;
}

#[tokio::test]
async fn the_startup_line_reports_the_bound_http_port() {
    let (server, http) = start_http(Extensions::default()).await;
    assert_ne!(http.port(), 0);
    assert!(
        server.startup_line().ends_with(&format!(" http={http}")),
        "{}",
        server.startup_line()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_slow_http_client_does_not_hold_up_another() {
    let (server, http) = start_http(Extensions::default()).await;
    // Half a request, then nothing: its connection waits for the rest of the headers.
    let mut slow = TcpStream::connect(http).await.unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Half: ")
        .await
        .unwrap();
    // Answered while the slow one still waits (`get` fails the test past its timeout, which
    // is the header read timeout's length: the slow client cannot have been dropped first).
    let started = Instant::now();
    let (status, body) = get(http, "/metrics").await;
    assert_eq!(status, 200);
    assert!(body.contains("kcoord_requests_total"));
    assert!(started.elapsed() < kcoord_server::http::HEADER_READ_TIMEOUT);
    let mut probe = [0u8; 1];
    let still_open = tokio::time::timeout(Duration::from_millis(1), slow.read(&mut probe)).await;
    assert!(
        still_open.is_err(),
        "the slow client is still being waited for"
    );
    drop(slow);
    server.shutdown().await;
}

/// Groups of every type are counted by type and state: a classic group whose member joined (a
/// v3 JoinGroup, admitted at once) and a KIP-848 consumer group with one member.
#[tokio::test]
async fn groups_of_every_type_are_counted_by_type_and_state() {
    let (server, http) = start_http(Extensions::default()).await;
    let mut kafka = Kafka::connect(&server).await;
    kafka.create_topic("typed", 2).await;
    let join = kcoord_wire::messages::JoinGroupRequest {
        group_id: "classic-g".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![
            kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol {
                name: "range".into(),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let joined: kcoord_wire::messages::JoinGroupResponse =
        kafka.call(ApiKey::JoinGroup, 3, &join).await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let heartbeat = kcoord_wire::messages::ConsumerGroupHeartbeatRequest {
        group_id: "consumer-g".into(),
        member_id: "m".into(),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["typed".into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let beat: kcoord_wire::messages::ConsumerGroupHeartbeatResponse = kafka
        .call(ApiKey::ConsumerGroupHeartbeat, 1, &heartbeat)
        .await;
    assert_eq!(beat.error_code, 0, "{beat:?}");
    let metrics = scrape_until(http, "one classic and one consumer group", |m| {
        m.value(
            "kcoord_groups",
            &[("type", "classic"), ("state", "CompletingRebalance")],
        ) == Some(1.0)
            && m.value("kcoord_group_members", &[("type", "consumer")]) == Some(1.0)
    })
    .await;
    assert_eq!(
        metrics.get("kcoord_group_members", &[("type", "classic")]),
        1.0
    );
    assert_eq!(
        metrics.get("kcoord_group_members", &[("type", "streams")]),
        0.0
    );
    let consumer_groups: f64 = ["Empty", "Assigning", "Reconciling", "Stable"]
        .iter()
        .filter_map(|s| metrics.value("kcoord_groups", &[("type", "consumer"), ("state", s)]))
        .sum();
    assert_eq!(consumer_groups, 1.0);
    server.shutdown().await;
}
