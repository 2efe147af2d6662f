//! Gateway mode against an upstream that speaks Kafka's protocol: a standalone kcoord plays the
//! cluster (one broker, id 1), a second kcoord stands in front of it. What Kafka's own clients
//! see through a gateway in front of a real Kafka 4.4 cluster is `interop/`'s GatewayTest.

use std::time::Duration;

use kcoord_client::broker::{register_broker, BrokerProperties, RegistrationOptions};
use kcoord_client::ClientConfig;
use kcoord_record_batches::{BatchBuilder, BatchOptions};
use kcoord_server::Config;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::{
    ApiVersionsResponse, ListOffsetsRequest, ListOffsetsResponse, ListTopicsRequest,
    ListTopicsResponse, MetadataRequest, ProduceRequest,
};
use kcoord_wire::Decodable;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

mod gateway_relay;
mod gateway_support;

use gateway_support::*;

#[tokio::test]
async fn metadata_through_the_gateway_shows_the_upstream_broker_at_its_gateway_port() {
    let upstream = upstream().await;
    let (gateway, port) = gateway(&upstream).await;
    let metadata = metadata_of(gateway.broker_addr().unwrap()).await;
    let brokers: Vec<_> = metadata
        .brokers
        .iter()
        .map(|b| (b.node_id, b.host.as_str(), b.port))
        .collect();
    assert_eq!(brokers, [(1, "127.0.0.1", i32::from(port))]);
    // Kafka's cluster id is the upstream's, not the gateway's own.
    assert_eq!(
        metadata.cluster_id.as_deref(),
        Some(upstream.state().cluster_id())
    );
    // The broker port answers too, and forwards to broker 1.
    let via_port = metadata_of(([127, 0, 0, 1], port).into()).await;
    assert_eq!(via_port.brokers.len(), 1);
    gateway.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn pipelined_answers_come_back_in_request_order_local_and_forwarded_alike() {
    let upstream = upstream().await;
    let (gateway, _) = gateway(&upstream).await;
    let mut stream = TcpStream::connect(gateway.broker_addr().unwrap())
        .await
        .unwrap();
    // Forwarded Metadata and local ApiVersions in turns: a local answer is ready at once, a
    // forwarded one a round trip later, so any reordering would show.
    let mut frames = Vec::new();
    for id in 1..=8 {
        if id % 2 == 1 {
            frames.extend(frame(ApiKey::Metadata, 12, id, &MetadataRequest::default()));
        } else {
            frames.extend(frame(ApiKey::ApiVersions, 3, id, &api_versions()));
        }
    }
    stream.write_all(&frames).await.unwrap();
    for id in 1..=8 {
        let api = if id % 2 == 1 {
            ApiKey::Metadata
        } else {
            ApiKey::ApiVersions
        };
        let version = if id % 2 == 1 { 12 } else { 3 };
        let (got, _) = read_response(&mut stream, api, version)
            .await
            .expect("an answer");
        assert_eq!(got, id, "answers in request order");
    }
    gateway.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn a_produce_with_acks_0_gets_no_answer_and_the_next_request_does() {
    let upstream = upstream().await;
    let (gateway, _) = gateway(&upstream).await;
    create_topic(gateway.broker_addr().unwrap(), "t").await;
    let mut builder = BatchBuilder::new(BatchOptions::default());
    builder
        .push(1_700_000_000_000, Some(b"k"), Some(b"v"), &[])
        .unwrap();
    let batch = builder.build().unwrap();
    let produce = ProduceRequest {
        acks: 0,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: "t".to_owned(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut stream = TcpStream::connect(gateway.broker_addr().unwrap())
        .await
        .unwrap();
    let mut frames = frame(ApiKey::Produce, 9, 1, &produce);
    let latest = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: "t".to_owned(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    frames.extend(frame(ApiKey::ListOffsets, 7, 2, &latest));
    stream.write_all(&frames).await.unwrap();
    let (got, mut body) = read_response(&mut stream, ApiKey::ListOffsets, 7)
        .await
        .expect("an answer");
    let offsets = ListOffsetsResponse::decode(&mut body, 7).unwrap();
    // Forwarded on the same upstream connection after the Produce, so it sees the record.
    assert_eq!(
        offsets.topics[0].partitions[0].offset, 1,
        "the record arrived"
    );
    assert_eq!(got, 2, "the acks=0 Produce is not answered");
    gateway.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn list_topics_lists_the_upstream_topics() {
    let upstream = upstream().await;
    let (gateway, _) = gateway(&upstream).await;
    create_topic(upstream.broker_addr().unwrap(), "upstream-only").await;
    let listed: ListTopicsResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::ListTopics,
        1,
        &ListTopicsRequest::default(),
    )
    .await;
    let mut names: Vec<&str> = listed.topics.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    // The gateway's own topics, where its coordinator shards keep their logs and where its own
    // SCRAM users are kept, are among them.
    assert_eq!(
        names,
        [
            "__kcoord_coordinator_log",
            "__kcoord_credentials",
            "upstream-only"
        ]
    );
    gateway.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn a_dead_upstream_closes_forwarding_connections_and_local_answers_go_on() {
    let upstream = upstream().await;
    let (gateway, _) = gateway(&upstream).await;
    upstream.shutdown().await;
    let mut stream = TcpStream::connect(gateway.broker_addr().unwrap())
        .await
        .unwrap();
    stream
        .write_all(&frame(ApiKey::Metadata, 12, 1, &MetadataRequest::default()))
        .await
        .unwrap();
    assert!(
        read_response(&mut stream, ApiKey::Metadata, 12)
            .await
            .is_none(),
        "the client's connection is closed"
    );
    let versions: ApiVersionsResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::ApiVersions,
        3,
        &api_versions(),
    )
    .await;
    assert_eq!(versions.error_code, 0);
    let streams = versions
        .api_keys
        .iter()
        .any(|k| k.api_key == ApiKey::StreamsGroupHeartbeat.key());
    assert!(streams, "kcoord's own APIs are still served");
    gateway.shutdown().await;
}

#[tokio::test]
async fn a_gateway_does_not_start_when_no_upstream_answers() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let text = format!(
        "node.id=7\n{BASE}upstream.bootstrap.servers={addr}\ngateway.broker.port.start=30000\n\
         upstream.socket.connection.setup.timeout.ms=2000\n"
    );
    let err = kcoord_server::start(Config::parse("gateway", &text).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("upstream.bootstrap.servers"), "{err}");
    assert!(err.contains(&addr.to_string()), "{err}");
}

#[tokio::test]
async fn the_upstream_connections_authenticate_with_the_upstream_sasl_settings() {
    let text = "node.id=1\nlisteners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         sasl.enabled.mechanisms=PLAIN\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";\n";
    let upstream = kcoord_server::start(Config::parse("sasl-upstream", text).unwrap())
        .await
        .unwrap();
    let settings = |password: &str| {
        format!(
            "upstream.security.protocol=SASL_PLAINTEXT\nupstream.sasl.mechanism=PLAIN\n\
             upstream.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"{password}\";\n"
        )
    };
    let wrong = gateway_with(&upstream, &settings("guess")).await;
    let err = wrong
        .expect_err("a wrong password stops the start")
        .to_string();
    assert!(err.contains("upstream.bootstrap.servers"), "{err}");
    let (gateway, port) = gateway_with(&upstream, &settings("alice-secret"))
        .await
        .unwrap();
    // The gateway's own listener is PLAINTEXT; its upstream connections authenticate.
    let metadata = metadata_of(gateway.broker_addr().unwrap()).await;
    let brokers: Vec<_> = metadata
        .brokers
        .iter()
        .map(|b| (b.node_id, b.port))
        .collect();
    assert_eq!(brokers, [(1, i32::from(port))]);
    gateway.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn the_coordinator_sees_the_upstream_topics() {
    let upstream = upstream().await;
    let (gateway, _) = gateway(&upstream).await;
    create_topic(upstream.broker_addr().unwrap(), "source").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let image = gateway.state().topics.snapshot();
        if let Some(topic) = image.get("source") {
            let theirs = upstream.state().topics.snapshot();
            assert_eq!(
                topic.id,
                theirs.get("source").unwrap().id,
                "the upstream's topic id"
            );
            assert_eq!(topic.partition_count(), 1);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway's catalog never showed the upstream topic"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gateway.shutdown().await;
    upstream.shutdown().await;
}

/// A broker that joins the cluster is learnt as soon as a forwarded answer names it (a client's
/// Metadata), not only at the next periodic refresh (ten minutes away here).
#[tokio::test]
async fn a_broker_that_joins_the_upstream_gets_its_port_once_an_answer_names_it() {
    let upstream = upstream().await;
    // Two free ports, the second above the first (and not next to it): broker 1 on the first,
    // the newcomer on the second. Drawn as a pair, so a first port near the top of the range
    // does not leave nothing above it.
    let (first, second) = (0..100)
        .map(|_| {
            let (a, b) = (free_port(), free_port());
            (a.min(b), a.max(b))
        })
        .find(|(low, high)| *high > *low + 1)
        .expect("two free ports apart");
    let start = first - 1;
    let newcomer = i32::from(second - start);
    let gateway = gateway_at(&upstream, start, "upstream.metadata.max.age.ms=600000\n")
        .await
        .unwrap();
    let properties = BrokerProperties::parse(&format!(
        "node.id={newcomer}\nprocess.roles=broker\ncontroller.listener.names=CONTROLLER\n\
         listeners=PLAINTEXT://127.0.0.1:1\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         broker.heartbeat.interval.ms=100\n"
    ))
    .unwrap();
    let options = RegistrationOptions {
        client: ClientConfig::new("gateway-test").with_request_timeout(TIMEOUT),
        ..Default::default()
    };
    let controller = upstream.controller_addr().unwrap().to_string();
    let broker = register_broker(&properties, &controller, options)
        .await
        .unwrap()
        .start_heartbeats();
    broker.wait_unfenced(TIMEOUT).await.unwrap();

    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let ports: Vec<(i32, i32)> = metadata_of(gateway.broker_addr().unwrap())
            .await
            .brokers
            .iter()
            .map(|b| (b.node_id, b.port))
            .collect();
        let served = TcpStream::connect(("127.0.0.1", second)).await.is_ok();
        if ports.contains(&(newcomer, i32::from(second))) && served {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "broker {newcomer} never got port {second}: {ports:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    broker.kill();
    gateway.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn client_quotas_altered_through_the_gateway_are_the_upstreams() {
    use kcoord_wire::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kcoord_wire::messages::{
        AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
    };
    let upstream = upstream().await;
    let (gateway, _) = gateway(&upstream).await;
    let alter = AlterClientQuotasRequest {
        entries: vec![EntryData {
            entity: vec![EntityData {
                entity_type: "user".into(),
                entity_name: Some("alice".into()),
                ..Default::default()
            }],
            ops: vec![OpData {
                key: "producer_byte_rate".into(),
                value: 1024.0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let gateway_addr = gateway.broker_addr().unwrap();
    let altered: AlterClientQuotasResponse =
        call(gateway_addr, ApiKey::AlterClientQuotas, 1, &alter).await;
    assert_eq!(altered.entries[0].error_code, 0);
    // The quota is the upstream's: the gateway keeps none of its own.
    let describe = DescribeClientQuotasRequest::default();
    let at_upstream: DescribeClientQuotasResponse = call(
        upstream.broker_addr().unwrap(),
        ApiKey::DescribeClientQuotas,
        1,
        &describe,
    )
    .await;
    assert_eq!(at_upstream.entries.map(|e| e.len()), Some(1));
    assert!(gateway.state().cluster.snapshot().client_quotas.is_empty());
    let through: DescribeClientQuotasResponse =
        call(gateway_addr, ApiKey::DescribeClientQuotas, 1, &describe).await;
    assert_eq!(through.entries.map(|e| e.len()), Some(1));
    gateway.shutdown().await;
    upstream.shutdown().await;
}

/// A forwarded request is timed until the cluster answers: a Fetch the cluster holds for its
/// whole wait shows that wait in the gateway's request metrics, as a broker's would.
#[tokio::test]
async fn a_forwarded_requests_duration_includes_the_clusters_time() {
    use kcoord_wire::messages::fetch_request::{FetchPartition, FetchTopic};
    use kcoord_wire::messages::{FetchRequest, FetchResponse};
    const WAIT_MS: i32 = 400;
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), "quiet").await;
    let (gateway, port) = gateway_with(&upstream, "http.listener=127.0.0.1:0\n")
        .await
        .unwrap();
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: WAIT_MS,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "quiet".into(),
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
    let to_broker: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let started = std::time::Instant::now();
    let fetched: FetchResponse = call(to_broker, ApiKey::Fetch, 12, &fetch).await;
    let waited = started.elapsed();
    assert_eq!(
        fetched.responses[0].partitions[0].error_code, 0,
        "{fetched:?}"
    );
    assert!(
        waited >= Duration::from_millis(WAIT_MS as u64),
        "{waited:?}"
    );

    let metrics =
        gateway_support::streams::http_get(gateway.http_addr().unwrap(), "/metrics").await;
    let line = metrics
        .lines()
        .find(|l| l.starts_with("kcoord_request_duration_seconds_sum{api=\"Fetch\"}"))
        .unwrap_or_else(|| panic!("no Fetch duration in\n{metrics}"));
    let seconds: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(seconds >= f64::from(WAIT_MS) / 1000.0, "{line}");
    gateway.shutdown().await;
    upstream.shutdown().await;
}

/// kcoord applies no ACLs of its own in gateway mode, so `kafka-acls` through a gateway manages
/// the cluster's: an ACL created through the gateway is the cluster's, and listed alike either
/// way.
#[tokio::test]
async fn acls_created_through_the_gateway_are_the_clusters() {
    use kcoord_wire::messages::create_acls_request::AclCreation;
    use kcoord_wire::messages::{
        CreateAclsRequest, CreateAclsResponse, DescribeAclsRequest, DescribeAclsResponse,
    };
    // The gateway reaches the cluster as User:ANONYMOUS (PLAINTEXT), a super user there.
    let upstream = upstream_with(
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:ANONYMOUS\n",
    )
    .await;
    let (gateway, _) = gateway(&upstream).await;
    let (topic, literal, read, allow, any) = (2, 3, 3, 3, 1);
    let create = CreateAclsRequest {
        creations: vec![AclCreation {
            resource_type: topic,
            resource_name: "orders".into(),
            resource_pattern_type: literal,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: read,
            permission_type: allow,
            ..Default::default()
        }],
        ..Default::default()
    };
    let created: CreateAclsResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::CreateAcls,
        3,
        &create,
    )
    .await;
    assert_eq!(created.results[0].error_code, 0, "{created:?}");
    let every = DescribeAclsRequest {
        resource_type_filter: any,
        pattern_type_filter: any,
        operation: any,
        permission_type: any,
        // Null filters match anything (the generated default is Kafka's "").
        resource_name_filter: None,
        principal_filter: None,
        host_filter: None,
        ..Default::default()
    };
    let direct: DescribeAclsResponse = call(
        upstream.broker_addr().unwrap(),
        ApiKey::DescribeAcls,
        3,
        &every,
    )
    .await;
    let through: DescribeAclsResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::DescribeAcls,
        3,
        &every,
    )
    .await;
    let listed: Vec<(&str, &str)> = direct
        .resources
        .iter()
        .flat_map(|r| {
            r.acls
                .iter()
                .map(|a| (r.resource_name.as_str(), a.principal.as_str()))
        })
        .collect();
    assert_eq!(listed, [("orders", "User:alice")], "{direct:?}");
    assert_eq!(through, direct);
    gateway.shutdown().await;
    upstream.shutdown().await;
}
