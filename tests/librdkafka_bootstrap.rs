//! An independent client: librdkafka (through the `rdkafka` crate, bundled build) bootstraps
//! against the real daemon, and its own logs show no protocol trouble.
//!
//! librdkafka opens every connection with ApiVersions (v3 in 2.12; it falls back to v0 when a
//! broker refuses it, which the tests treat as a failure), then picks each API's version from
//! the answer, so these tests also check that what the daemon advertises is what it serves:
//! Metadata (v13 with librdkafka 2.12) and FindCoordinator (v2).
//!
//! The `rdkafka` crate has no DescribeCluster call, so [`describe_cluster`] drives
//! librdkafka's `rd_kafka_DescribeCluster` through the raw bindings `rdkafka` re-exports.
//! librdkafka (2.12) implements that call with a brokers-only Metadata request, not the
//! DescribeCluster RPC; so the RPC itself, with Metadata and FindCoordinator at every version
//! the daemon advertises, is also checked with a second independent implementation of the
//! protocol: the `kafka-protocol` crate's codecs (the last tests of this file).

mod common;

use std::ffi::CStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use common::{wait_until, Daemon};
use rdkafka::admin::AdminClient;
use rdkafka::client::{Client, ClientContext};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::metadata::Metadata;
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;

/// A cluster id other than the default, so the tests see it travel.
const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qk";
const TIMEOUT: Duration = Duration::from_secs(15);

fn daemon() -> Daemon {
    Daemon::start(&[
        &format!("cluster.id={CLUSTER_ID}"),
        "log.level=info,kcoord_server=debug",
    ])
}

/// One line librdkafka logged (or an error it reported).
#[derive(Debug, Clone)]
struct LogLine {
    level: RDKafkaLogLevel,
    facility: String,
    message: String,
}

impl std::fmt::Display for LogLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {} {}", self.level, self.facility, self.message)
    }
}

/// A client context that keeps every log line and error librdkafka hands it.
#[derive(Clone, Default)]
struct Recorder {
    lines: Arc<Mutex<Vec<LogLine>>>,
}

impl ClientContext for Recorder {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.push(LogLine {
            level,
            facility: fac.to_string(),
            message: log_message.to_string(),
        });
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.push(LogLine {
            level: RDKafkaLogLevel::Error,
            facility: "ERROR_CB".into(),
            message: format!("{error}: {reason}"),
        });
    }
}

impl ProducerContext for Recorder {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &DeliveryResult<'_>, _: ()) {}
}

impl ConsumerContext for Recorder {}

impl Recorder {
    fn push(&self, line: LogLine) {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }

    fn lines(&self) -> Vec<LogLine> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn all_text(&self) -> String {
        self.lines().iter().map(|l| format!("  {l}\n")).collect()
    }

    /// Lines that mean something went wrong between librdkafka and the daemon: anything at
    /// WARNING or worse, and debug lines naming a failure, a protocol or parse error, an
    /// `ERR__` code, an unsupported or refused version, or a lost connection.
    ///
    /// One thing that uses those words is normal: once Metadata names the real broker,
    /// librdkafka retires its bootstrap connection ("Decommissioning this broker ...
    /// (_DESTROY_BROKER)", "failed 0 request(s)"), and a request still in flight on it fails
    /// locally with `_DESTROY_BROKER` ("Broker handle destroyed without termination") and is
    /// retried on the real broker. Those lines are about the client's own bookkeeping, not
    /// about anything the daemon sent, and are left out.
    fn trouble(&self) -> Vec<LogLine> {
        const RETIRED_BOOTSTRAP: &[&str] = &[
            "_destroy_broker",
            "broker handle destroyed without termination",
        ];
        const BENIGN: &[&str] = &["failed 0 request(s)"];
        const BAD: &[&str] = &[
            "err__",
            "error",
            "fail",
            "unsupported",
            "not supported",
            "parse",
            "malformed",
            "invalid",
            "mismatch",
            "incorrect",
            "timed out",
            "disconnect",
            "retrying",
            "rebootstrap",
        ];
        self.lines()
            .into_iter()
            .filter(|l| {
                let mut message = l.message.to_ascii_lowercase();
                if RETIRED_BOOTSTRAP.iter().any(|r| message.contains(r)) {
                    return false;
                }
                for benign in BENIGN {
                    message = message.replace(benign, "");
                }
                (l.level as i32) <= (RDKafkaLogLevel::Warning as i32)
                    || BAD.iter().any(|bad| message.contains(bad))
            })
            .collect()
    }

    /// Asserts no trouble was logged, and that the ApiVersions exchange was seen at a
    /// flexible version (no fallback to v0).
    fn assert_clean(&self, daemon: &Daemon) {
        let trouble = self.trouble();
        assert!(
            trouble.is_empty(),
            "librdkafka logged trouble:\n{}\n--- all librdkafka lines ---\n{}--- kcoord stderr ---\n{}",
            trouble.iter().map(|l| format!("  {l}\n")).collect::<String>(),
            self.all_text(),
            daemon.stderr_log()
        );
        let lines = self.lines();
        let negotiated = lines.iter().any(|l| {
            l.message.contains("Received ApiVersionResponse (v3")
                || l.message.contains("Received ApiVersionResponse (v4")
        });
        assert!(
            negotiated,
            "no ApiVersions v3/v4 exchange in librdkafka's protocol log:\n{}",
            self.all_text()
        );
    }

    /// The version librdkafka sent `api` at (from `Sent <Api>Request (vN, ...` lines).
    fn sent_versions(&self, request: &str) -> Vec<i32> {
        let prefix = format!("Sent {request} (v");
        self.lines()
            .iter()
            .filter_map(|l| {
                let rest = &l.message[l.message.find(&prefix)? + prefix.len()..];
                rest.split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse()
                    .ok()
            })
            .collect()
    }
}

/// The settings every client here shares: bootstrap, the loopback IPv4 family, and the
/// protocol/broker debug contexts whose lines [`Recorder`] inspects.
fn config(daemon: &Daemon, client_id: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", daemon.bootstrap())
        .set("client.id", client_id)
        .set("broker.address.family", "v4")
        .set("debug", "broker,protocol,metadata,admin")
        .set_log_level(RDKafkaLogLevel::Debug);
    config
}

/// Hands the log and error events waiting on the client's main queue to the [`Recorder`].
///
/// `rdkafka` sets `log.queue=true`, so librdkafka's threads queue their log lines on the main
/// queue; a producer's `poll` serves it, but nothing does for an admin client. Other events
/// (none are expected: nothing is produced) are dropped.
fn pump_logs(client: &Client<Recorder>) {
    use rdkafka::bindings as rd;
    let rk = client.native_ptr();
    // SAFETY: `rk` is a live client borrowed from `client`; the queue handle and each event
    // are destroyed exactly once, and the strings are copied before their event is freed.
    unsafe {
        let queue = rd::rd_kafka_queue_get_main(rk);
        if queue.is_null() {
            return;
        }
        loop {
            let event = rd::rd_kafka_queue_poll(queue, 0);
            if event.is_null() {
                break;
            }
            match rd::rd_kafka_event_type(event) {
                rd::RD_KAFKA_EVENT_LOG => {
                    let (mut fac, mut text, mut level) = (std::ptr::null(), std::ptr::null(), 0);
                    if rd::rd_kafka_event_log(event, &mut fac, &mut text, &mut level) == 0
                        && !fac.is_null()
                        && !text.is_null()
                    {
                        let fac = CStr::from_ptr(fac).to_string_lossy();
                        let text = CStr::from_ptr(text).to_string_lossy();
                        client
                            .context()
                            .log(log_level(level), fac.trim(), text.trim());
                    }
                }
                rd::RD_KAFKA_EVENT_ERROR => {
                    let reason = rd::rd_kafka_event_error_string(event);
                    let reason = if reason.is_null() {
                        String::new()
                    } else {
                        CStr::from_ptr(reason).to_string_lossy().into_owned()
                    };
                    client.context().error(
                        KafkaError::Global(rd::rd_kafka_event_error(event).into()),
                        &reason,
                    );
                }
                _ => {}
            }
            rd::rd_kafka_event_destroy(event);
        }
        rd::rd_kafka_queue_destroy(queue);
    }
}

/// librdkafka's syslog-style level as `rdkafka`'s enum.
fn log_level(level: i32) -> RDKafkaLogLevel {
    match level {
        i32::MIN..=0 => RDKafkaLogLevel::Emerg,
        1 => RDKafkaLogLevel::Alert,
        2 => RDKafkaLogLevel::Critical,
        3 => RDKafkaLogLevel::Error,
        4 => RDKafkaLogLevel::Warning,
        5 => RDKafkaLogLevel::Notice,
        6 => RDKafkaLogLevel::Info,
        _ => RDKafkaLogLevel::Debug,
    }
}

/// Checks librdkafka's view of the cluster: this node as the only broker, on its port.
fn assert_this_node(metadata: &Metadata, daemon: &Daemon) {
    let brokers: Vec<(i32, String, i32)> = metadata
        .brokers()
        .iter()
        .map(|b| (b.id(), b.host().to_string(), b.port()))
        .collect();
    assert_eq!(
        brokers,
        vec![(
            1,
            "127.0.0.1".to_string(),
            i32::from(daemon.broker_addr().port())
        )]
    );
    // librdkafka asked its bootstrap connection (which has no node id yet, so -1).
    let answered_by = metadata.orig_broker_name();
    assert!(
        answered_by.starts_with(&format!("{}/", daemon.broker_addr())),
        "answered by {answered_by}"
    );
    assert!(
        metadata.topics().is_empty(),
        "no topics yet: {:?}",
        metadata
            .topics()
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
    );
}

#[test]
fn admin_client_fetches_metadata() {
    let daemon = daemon();
    let recorder = Recorder::default();
    let admin: AdminClient<Recorder> = config(&daemon, "e2e-admin")
        .create_with_context(recorder.clone())
        .expect("admin client");
    let metadata = admin
        .inner()
        .fetch_metadata(None, TIMEOUT)
        .expect("metadata");
    assert_this_node(&metadata, &daemon);
    assert_eq!(
        admin.inner().fetch_cluster_id(TIMEOUT).as_deref(),
        Some(CLUSTER_ID)
    );
    pump_logs(admin.inner());
    let versions = recorder.sent_versions("MetadataRequest");
    assert!(
        !versions.is_empty() && versions.iter().all(|&v| v >= 9),
        "Metadata sent at flexible versions: {versions:?}\n{}",
        recorder.all_text()
    );
    recorder.assert_clean(&daemon);
    drop(admin);
    daemon.stop();
}

#[test]
fn admin_client_describes_the_cluster() {
    let daemon = daemon();
    let recorder = Recorder::default();
    let admin: AdminClient<Recorder> = config(&daemon, "e2e-describe")
        .create_with_context(recorder.clone())
        .expect("admin client");
    let cluster = describe_cluster(admin.inner(), TIMEOUT)
        .unwrap_or_else(|e| panic!("DescribeCluster: {e}\n{}", recorder.all_text()));
    let port = daemon.broker_addr().port();
    assert_eq!(cluster.cluster_id.as_deref(), Some(CLUSTER_ID));
    assert_eq!(
        cluster.controller,
        Some((1, "127.0.0.1".to_string(), port)),
        "controller as brokers see it"
    );
    assert_eq!(cluster.nodes, vec![(1, "127.0.0.1".to_string(), port)]);
    pump_logs(admin.inner());
    // librdkafka 2.12 answers DescribeCluster from a brokers-only Metadata request; the
    // DescribeCluster RPC itself is checked with kafka-protocol below.
    assert!(
        !recorder.sent_versions("MetadataRequest").is_empty(),
        "no Metadata request seen:\n{}",
        recorder.all_text()
    );
    recorder.assert_clean(&daemon);
    drop(admin);
    daemon.stop();
}

#[test]
fn producer_bootstraps() {
    let daemon = daemon();
    let recorder = Recorder::default();
    let producer: BaseProducer<Recorder> = config(&daemon, "e2e-producer")
        .set("acks", "all")
        .set("linger.ms", "5")
        .create_with_context(recorder.clone())
        .expect("producer");
    let metadata = producer
        .client()
        .fetch_metadata(None, TIMEOUT)
        .expect("metadata");
    assert_this_node(&metadata, &daemon);
    // Its broker thread reaches the UP state on the advertised address.
    let up = wait_until(TIMEOUT, || {
        producer.poll(Duration::ZERO); // serves the main queue, where the log lines wait
        recorder
            .lines()
            .into_iter()
            .find(|l| l.facility == "STATE" && l.message.contains("-> UP"))
    });
    assert!(
        up.is_some(),
        "no broker reached the UP state:\n{}",
        recorder.all_text()
    );
    recorder.assert_clean(&daemon);
    drop(producer);
    daemon.stop();
}

#[test]
fn unknown_topic_is_reported_as_such() {
    let daemon = daemon();
    let recorder = Recorder::default();
    let admin: AdminClient<Recorder> = config(&daemon, "e2e-unknown-topic")
        .create_with_context(recorder.clone())
        .expect("admin client");
    let metadata = admin
        .inner()
        .fetch_metadata(Some("no-such-topic"), TIMEOUT)
        .expect("metadata");
    assert_this_node_brokers(&metadata, &daemon);
    let topics: Vec<(String, Option<RDKafkaErrorCode>)> = metadata
        .topics()
        .iter()
        .map(|t| (t.name().to_string(), t.error().map(RDKafkaErrorCode::from)))
        .collect();
    assert_eq!(
        topics,
        vec![(
            "no-such-topic".to_string(),
            Some(RDKafkaErrorCode::UnknownTopicOrPartition)
        )]
    );
    pump_logs(admin.inner());
    // The topic error is the answer, not trouble; nothing else may go wrong.
    let trouble: Vec<LogLine> = recorder
        .trouble()
        .into_iter()
        .filter(|l| !l.message.contains("no-such-topic"))
        .collect();
    assert!(
        trouble.is_empty(),
        "librdkafka logged trouble: {trouble:#?}\n{}",
        recorder.all_text()
    );
    drop(admin);
    daemon.stop();
}

fn assert_this_node_brokers(metadata: &Metadata, daemon: &Daemon) {
    let brokers: Vec<(i32, i32)> = metadata
        .brokers()
        .iter()
        .map(|b| (b.id(), b.port()))
        .collect();
    assert_eq!(brokers, vec![(1, i32::from(daemon.broker_addr().port()))]);
}

#[test]
fn consumer_finds_its_group_coordinator() {
    let daemon = daemon();
    let recorder = Recorder::default();
    // A consumer with a group id looks its coordinator up at once (FindCoordinator), before
    // any subscription: nothing else group-related is sent.
    let consumer: BaseConsumer<Recorder> = config(&daemon, "e2e-consumer")
        .set("group.id", "e2e-group")
        .set("debug", "broker,protocol,cgrp")
        .create_with_context(recorder.clone())
        .expect("consumer");
    let found = wait_until(TIMEOUT, || {
        let _ = consumer.poll(Duration::ZERO);
        recorder.lines().into_iter().find(|l| {
            l.facility == "CGRPCOORD" && l.message.contains("changing coordinator -1 -> 1")
        })
    });
    assert!(
        found.is_some(),
        "librdkafka did not settle on coordinator 1:\n{}",
        recorder.all_text()
    );
    assert!(
        !recorder.sent_versions("FindCoordinatorRequest").is_empty(),
        "no FindCoordinator request seen:\n{}",
        recorder.all_text()
    );
    recorder.assert_clean(&daemon);
    drop(consumer);
    daemon.stop();
}

/// What librdkafka's DescribeCluster returned: (id, host, port) per node.
#[derive(Debug)]
struct ClusterDescription {
    cluster_id: Option<String>,
    controller: Option<(i32, String, u16)>,
    nodes: Vec<(i32, String, u16)>,
}

/// `rd_kafka_DescribeCluster` on its own result queue, waiting up to `timeout`.
fn describe_cluster<C: ClientContext>(
    client: &Client<C>,
    timeout: Duration,
) -> Result<ClusterDescription, String> {
    use rdkafka::bindings as rd;

    /// Frees what it holds however the function returns.
    struct Owned {
        queue: *mut rd::rd_kafka_queue_t,
        options: *mut rd::rd_kafka_AdminOptions_t,
        event: *mut rd::rd_kafka_event_t,
    }
    impl Drop for Owned {
        fn drop(&mut self) {
            // SAFETY: each pointer is null or was returned by its librdkafka constructor and
            // is destroyed exactly once, here.
            unsafe {
                if !self.event.is_null() {
                    rd::rd_kafka_event_destroy(self.event);
                }
                if !self.options.is_null() {
                    rd::rd_kafka_AdminOptions_destroy(self.options);
                }
                if !self.queue.is_null() {
                    rd::rd_kafka_queue_destroy(self.queue);
                }
            }
        }
    }

    /// SAFETY: `node` must be a valid `rd_kafka_Node_t` pointer.
    unsafe fn node(node: *const rd::rd_kafka_Node_t) -> (i32, String, u16) {
        let host = rd::rd_kafka_Node_host(node);
        let host = if host.is_null() {
            String::new()
        } else {
            CStr::from_ptr(host).to_string_lossy().into_owned()
        };
        (
            rd::rd_kafka_Node_id(node),
            host,
            rd::rd_kafka_Node_port(node),
        )
    }

    let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    let rk = client.native_ptr();
    // SAFETY: `rk` is a live client for the whole call (borrowed from `client`); every pointer
    // below is checked for null before use and the result is read before the event is freed.
    unsafe {
        let mut owned = Owned {
            queue: rd::rd_kafka_queue_new(rk),
            options: std::ptr::null_mut(),
            event: std::ptr::null_mut(),
        };
        owned.options = rd::rd_kafka_AdminOptions_new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_DESCRIBECLUSTER,
        );
        if owned.queue.is_null() || owned.options.is_null() {
            return Err("cannot create the queue or the admin options".into());
        }
        let mut errstr = [0 as std::ffi::c_char; 512];
        let err = rd::rd_kafka_AdminOptions_set_request_timeout(
            owned.options,
            timeout_ms,
            errstr.as_mut_ptr(),
            errstr.len(),
        );
        if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return Err(format!(
                "request timeout: {}",
                CStr::from_ptr(errstr.as_ptr()).to_string_lossy()
            ));
        }
        rd::rd_kafka_DescribeCluster(rk, owned.options, owned.queue);
        owned.event = rd::rd_kafka_queue_poll(owned.queue, timeout_ms.saturating_add(5000));
        if owned.event.is_null() {
            return Err(format!("no DescribeCluster result within {timeout:?}"));
        }
        let kind = rd::rd_kafka_event_type(owned.event);
        if kind != rd::RD_KAFKA_EVENT_DESCRIBECLUSTER_RESULT {
            return Err(format!("unexpected event type {kind}"));
        }
        let err = rd::rd_kafka_event_error(owned.event);
        if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            let message = rd::rd_kafka_event_error_string(owned.event);
            let message = if message.is_null() {
                String::new()
            } else {
                CStr::from_ptr(message).to_string_lossy().into_owned()
            };
            return Err(format!("{err:?}: {message}"));
        }
        let result = rd::rd_kafka_event_DescribeCluster_result(owned.event);
        if result.is_null() {
            return Err("the event carries no DescribeCluster result".into());
        }
        let cluster_id = rd::rd_kafka_DescribeCluster_result_cluster_id(result);
        let cluster_id = (!cluster_id.is_null())
            .then(|| CStr::from_ptr(cluster_id).to_string_lossy().into_owned());
        let controller = rd::rd_kafka_DescribeCluster_result_controller(result);
        let controller = (!controller.is_null()).then(|| node(controller));
        let mut count = 0usize;
        let nodes_ptr = rd::rd_kafka_DescribeCluster_result_nodes(result, &mut count);
        let nodes = if nodes_ptr.is_null() {
            vec![]
        } else {
            (0..count).map(|i| node(*nodes_ptr.add(i))).collect()
        };
        Ok(ClusterDescription {
            cluster_id,
            controller,
            nodes,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The `kafka-protocol` crate: every advertised version of the broker APIs, encoded and decoded
// by a codec that shares nothing with the daemon's generated one.

mod kafka_protocol_codec {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::{
        ApiVersionsRequest, DescribeClusterRequest, FindCoordinatorRequest, MetadataRequest,
        RequestHeader, ResponseHeader,
    };
    use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

    use super::common::{connect, expect_frame, frame, send, Daemon};
    use super::CLUSTER_ID;

    /// One request on a blocking socket; the response must decode completely.
    fn call<R: Request>(
        stream: &mut std::net::TcpStream,
        request: &R,
        version: i16,
        correlation_id: i32,
    ) -> R::Response {
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("kafka-protocol-e2e")));
        let mut payload = BytesMut::new();
        header
            .encode(&mut payload, R::header_version(version))
            .expect("request header");
        request.encode(&mut payload, version).expect("request body");
        send(stream, &frame(&payload)).expect("send");
        let what = format!("api {} v{version}", R::KEY);
        let mut response = Bytes::from(expect_frame(stream, &what));
        let response_header = ResponseHeader::decode(
            &mut response,
            <R::Response as HeaderVersion>::header_version(version),
        )
        .unwrap_or_else(|e| panic!("{what}: response header: {e:#}"));
        assert_eq!(response_header.correlation_id, correlation_id, "{what}");
        let body = R::Response::decode(&mut response, version)
            .unwrap_or_else(|e| panic!("{what}: response body: {e:#}"));
        assert!(
            response.is_empty(),
            "{what}: {} bytes after the response body",
            response.len()
        );
        body
    }

    /// The daemon's advertised range of `key` (by ApiVersions v3, decoded by kafka-protocol).
    fn advertised(stream: &mut std::net::TcpStream, key: i16) -> std::ops::RangeInclusive<i16> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("kafka-protocol-e2e"))
            .with_client_software_version(StrBytes::from_static_str("1.0"));
        let response = call(stream, &request, 3, 0);
        assert_eq!(response.error_code, 0);
        let api = response
            .api_keys
            .iter()
            .find(|a| a.api_key == key)
            .unwrap_or_else(|| panic!("api {key} not advertised"));
        api.min_version..=api.max_version
    }

    #[test]
    fn describe_cluster_at_every_version() {
        let daemon = Daemon::start(&[&format!("cluster.id={CLUSTER_ID}")]);
        let port = i32::from(daemon.broker_addr().port());
        let mut stream = connect(daemon.broker_addr());
        let versions = advertised(&mut stream, DescribeClusterRequest::KEY);
        assert_eq!(versions, 0..=2);
        for version in versions {
            let mut request = DescribeClusterRequest::default();
            if version >= 1 {
                request.endpoint_type = 1; // brokers
            }
            let response = call(&mut stream, &request, version, 100 + i32::from(version));
            assert_eq!(
                response.error_code, 0,
                "v{version}: {:?}",
                response.error_message
            );
            assert_eq!(response.cluster_id.as_str(), CLUSTER_ID, "v{version}");
            assert_eq!(response.controller_id.0, 1, "v{version}");
            let brokers: Vec<(i32, &str, i32)> = response
                .brokers
                .iter()
                .map(|b| (b.broker_id.0, b.host.as_str(), b.port))
                .collect();
            assert_eq!(brokers, vec![(1, "127.0.0.1", port)], "v{version}");
            if version >= 1 {
                assert_eq!(response.endpoint_type, 1, "v{version}");
            }
        }
        daemon.stop();
    }

    #[test]
    fn metadata_at_every_version() {
        let daemon = Daemon::start(&[&format!("cluster.id={CLUSTER_ID}")]);
        let port = i32::from(daemon.broker_addr().port());
        let mut stream = connect(daemon.broker_addr());
        let versions = advertised(&mut stream, MetadataRequest::KEY);
        assert_eq!(versions, 0..=13);
        for version in versions {
            // All topics: an empty array at v0, null from v1.
            let request = MetadataRequest::default().with_topics(if version == 0 {
                Some(vec![])
            } else {
                None
            });
            let response = call(&mut stream, &request, version, 200 + i32::from(version));
            let brokers: Vec<(i32, &str, i32)> = response
                .brokers
                .iter()
                .map(|b| (b.node_id.0, b.host.as_str(), b.port))
                .collect();
            assert_eq!(brokers, vec![(1, "127.0.0.1", port)], "v{version}");
            if version >= 1 {
                assert_eq!(response.controller_id.0, 1, "v{version}");
            }
            if version >= 2 {
                assert_eq!(
                    response.cluster_id.as_ref().map(|c| c.as_str()),
                    Some(CLUSTER_ID),
                    "v{version}"
                );
            }
            if version >= 13 {
                assert_eq!(response.error_code, 0, "v{version}");
            }
            assert!(response.topics.is_empty(), "v{version}: no topics yet");
        }
        daemon.stop();
    }

    #[test]
    fn find_coordinator_at_every_version() {
        let daemon = Daemon::start(&[]);
        let port = i32::from(daemon.broker_addr().port());
        let mut stream = connect(daemon.broker_addr());
        let versions = advertised(&mut stream, FindCoordinatorRequest::KEY);
        assert_eq!(versions, 0..=6);
        for version in versions {
            let correlation_id = 300 + i32::from(version);
            if version < 4 {
                let request = FindCoordinatorRequest::default()
                    .with_key(StrBytes::from_static_str("orders-app"));
                let response = call(&mut stream, &request, version, correlation_id);
                assert_eq!(
                    response.error_code, 0,
                    "v{version}: {:?}",
                    response.error_message
                );
                assert_eq!(
                    (response.node_id.0, response.host.as_str(), response.port),
                    (1, "127.0.0.1", port),
                    "v{version}"
                );
            } else {
                let keys = vec![
                    StrBytes::from_static_str("orders-app"),
                    StrBytes::from_static_str("payments-app"),
                ];
                let request = FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(keys);
                let response = call(&mut stream, &request, version, correlation_id);
                let coordinators: Vec<(&str, i16, i32, &str, i32)> = response
                    .coordinators
                    .iter()
                    .map(|c| {
                        (
                            c.key.as_str(),
                            c.error_code,
                            c.node_id.0,
                            c.host.as_str(),
                            c.port,
                        )
                    })
                    .collect();
                assert_eq!(
                    coordinators,
                    vec![
                        ("orders-app", 0, 1, "127.0.0.1", port),
                        ("payments-app", 0, 1, "127.0.0.1", port)
                    ],
                    "v{version}"
                );
            }
        }
        daemon.stop();
    }
}
