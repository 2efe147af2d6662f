//! `Client` against fake brokers: bootstrap, coordinator lookup and caching, Metadata and
//! DescribeCluster.

mod support;

use kcoord_client::{Client, ClientConfig, ClientError, Coordinator};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_cluster_response::DescribeClusterBroker;
use kcoord_wire::messages::find_coordinator_response::Coordinator as CoordinatorResult;
use kcoord_wire::messages::metadata_response::MetadataResponseBroker;
use kcoord_wire::messages::{
    DescribeClusterResponse, FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest,
    MetadataResponse,
};
use kcoord_wire::ErrorCode;
use support::{api_versions, every_api, every_api_but, response, FakeServer, Received, Reply};

fn config() -> ClientConfig {
    ClientConfig::new("client-test")
}

/// A broker that says `coordinator` coordinates every group (or fails with `error`), lists
/// itself as node 1 in Metadata and DescribeCluster, and advertises `apis`.
fn broker(
    apis: Vec<(ApiKey, i16, i16)>,
    coordinator: (String, i32),
    error: i16,
) -> impl Fn(&Received) -> Reply {
    move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&apis)),
        Some(ApiKey::FindCoordinator) => {
            let find = request.decode::<FindCoordinatorRequest>();
            let (host, port) = coordinator.clone();
            let answer = if request.version() >= 4 {
                let coordinators = find
                    .coordinator_keys
                    .into_iter()
                    .map(|key| CoordinatorResult {
                        key,
                        node_id: 7,
                        host: host.clone(),
                        port,
                        error_code: error,
                        error_message: None,
                        ..Default::default()
                    })
                    .collect();
                FindCoordinatorResponse {
                    coordinators,
                    ..Default::default()
                }
            } else {
                FindCoordinatorResponse {
                    error_code: error,
                    error_message: None,
                    node_id: 7,
                    host,
                    port,
                    ..Default::default()
                }
            };
            response(request, &answer)
        }
        Some(ApiKey::Metadata) => response(
            request,
            &MetadataResponse {
                brokers: vec![MetadataResponseBroker {
                    node_id: 1,
                    host: "127.0.0.1".into(),
                    port: 9092,
                    ..Default::default()
                }],
                controller_id: 1,
                ..Default::default()
            },
        ),
        Some(ApiKey::DescribeCluster) => response(
            request,
            &DescribeClusterResponse {
                error_code: error,
                cluster_id: "fake-cluster".into(),
                brokers: vec![DescribeClusterBroker {
                    broker_id: 1,
                    host: "127.0.0.1".into(),
                    port: 9092,
                    ..Default::default()
                }],
                ..Default::default()
            },
        ),
        _ => Reply::Close,
    }
}

#[tokio::test]
async fn connect_skips_bootstrap_addresses_that_do_not_answer() {
    let server = FakeServer::bind().await;
    let (addr, log, _) = server.serve(broker(every_api(), ("unused".into(), 0), 0));
    let client = Client::connect(&format!(" 127.0.0.1:0 ,{addr}"), config())
        .await
        .unwrap();
    assert_eq!(client.bootstrap().addr(), addr);
    assert!(
        client.bootstrap().supports(ApiKey::StreamsGroupHeartbeat),
        "negotiated while connecting"
    );
    assert_eq!(log.of(ApiKey::ApiVersions).len(), 1);
}

#[tokio::test]
async fn connect_reports_every_failed_address() {
    let err = Client::connect("127.0.0.1:0,127.0.0.1:0", config())
        .await
        .unwrap_err();
    match &err {
        ClientError::NoBrokerAvailable { errors, .. } => assert_eq!(errors.len(), 2, "{err}"),
        other => panic!("unexpected {other}"),
    }
    let err = Client::connect(" , ", config()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::NoBrokerAvailable { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn the_coordinator_is_found_with_a_batched_lookup_and_its_connection_cached() {
    let coordinator = FakeServer::bind().await;
    let coordinator_port = coordinator.port();
    let (_, coordinator_log, coordinator_accepted) =
        coordinator.serve(broker(every_api(), ("unused".into(), 0), 0));
    let bootstrap = FakeServer::bind().await;
    let (addr, log, _) = bootstrap.serve(broker(
        every_api(),
        ("127.0.0.1".into(), coordinator_port),
        0,
    ));
    let client = Client::connect(&addr, config()).await.unwrap();

    let found = client.find_coordinator("orders-app").await.unwrap();
    assert_eq!(
        found,
        Coordinator {
            node_id: 7,
            host: "127.0.0.1".into(),
            port: coordinator_port
        }
    );
    let lookups = log.of(ApiKey::FindCoordinator);
    assert_eq!(lookups[0].version(), 6);
    let request = lookups[0].decode::<FindCoordinatorRequest>();
    assert_eq!(
        (request.key_type, request.coordinator_keys),
        (0, vec!["orders-app".to_string()])
    );

    let first = client.coordinator("orders-app").await.unwrap();
    let second = client.coordinator("orders-app").await.unwrap();
    assert_eq!(first.addr(), format!("127.0.0.1:{coordinator_port}"));
    assert_eq!(second.addr(), first.addr());
    assert_eq!(
        log.of(ApiKey::FindCoordinator).len(),
        1,
        "the answer was cached"
    );
    assert_eq!(
        coordinator_accepted.count(),
        1,
        "one connection to the coordinator, reused"
    );
    assert_eq!(
        coordinator_log.of(ApiKey::ApiVersions).len(),
        1,
        "negotiated once"
    );

    client.forget_coordinator("orders-app");
    client.coordinator("orders-app").await.unwrap();
    assert_eq!(
        log.of(ApiKey::FindCoordinator).len(),
        2,
        "looked up again after forgetting"
    );
    assert_eq!(coordinator_accepted.count(), 1);
}

#[tokio::test]
async fn an_older_server_gets_the_single_key_lookup() {
    let server = FakeServer::bind().await;
    let apis = every_api_but(ApiKey::FindCoordinator, Some((0, 3)));
    let (addr, log, _) = server.serve(broker(apis, ("127.0.0.1".into(), 9092), 0));
    let client = Client::connect(&addr, config()).await.unwrap();
    let found = client.find_coordinator("g").await.unwrap();
    assert_eq!(found.address(), "127.0.0.1:9092");
    let lookup = &log.of(ApiKey::FindCoordinator)[0];
    assert_eq!(lookup.version(), 3);
    let request = lookup.decode::<FindCoordinatorRequest>();
    assert_eq!((request.key.as_str(), request.key_type), ("g", 0));
}

#[tokio::test]
async fn a_coordinator_error_is_a_kafka_error() {
    for find_coordinator_max in [6, 3] {
        let server = FakeServer::bind().await;
        let apis = every_api_but(ApiKey::FindCoordinator, Some((0, find_coordinator_max)));
        let (addr, _, _) = server.serve(broker(
            apis,
            (String::new(), -1),
            ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
        ));
        let client = Client::connect(&addr, config()).await.unwrap();
        let err = client.find_coordinator("g").await.unwrap_err();
        assert_eq!(
            err.error_code(),
            Some(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            "v{find_coordinator_max}: {err}"
        );
        assert!(
            client.coordinator("g").await.is_err(),
            "a failed lookup is not cached"
        );
    }
}

#[tokio::test]
async fn metadata_asks_for_all_or_named_topics_without_creating_any() {
    let server = FakeServer::bind().await;
    let (addr, log, _) = server.serve(broker(every_api(), ("unused".into(), 0), 0));
    let client = Client::connect(&addr, config()).await.unwrap();
    let all = client.metadata(None).await.unwrap();
    assert_eq!(all.brokers[0].node_id, 1);
    client.metadata(Some(vec!["orders".into()])).await.unwrap();

    let requests = log.of(ApiKey::Metadata);
    assert_eq!(requests[0].version(), 13);
    let everything = requests[0].decode::<MetadataRequest>();
    assert_eq!(
        (everything.topics, everything.allow_auto_topic_creation),
        (None, false)
    );
    let named = requests[1].decode::<MetadataRequest>();
    assert_eq!(named.topics.unwrap()[0].name.as_deref(), Some("orders"));
}

#[tokio::test]
async fn metadata_v0_asks_for_all_topics_with_an_empty_list() {
    let server = FakeServer::bind().await;
    let (addr, log, _) = server.serve(broker(
        every_api_but(ApiKey::Metadata, Some((0, 0))),
        ("unused".into(), 0),
        0,
    ));
    let client = Client::connect(&addr, config()).await.unwrap();
    client.metadata(None).await.unwrap();
    let request = log.of(ApiKey::Metadata)[0].decode::<MetadataRequest>();
    assert_eq!(request.topics, Some(vec![]));
}

#[tokio::test]
async fn describe_cluster_returns_the_brokers_and_surfaces_errors() {
    let server = FakeServer::bind().await;
    let (addr, _, _) = server.serve(broker(every_api(), ("unused".into(), 0), 0));
    let client = Client::connect(&addr, config()).await.unwrap();
    let cluster = client.describe_cluster().await.unwrap();
    assert_eq!(
        (cluster.cluster_id.as_str(), cluster.brokers.len()),
        ("fake-cluster", 1)
    );

    let server = FakeServer::bind().await;
    let (addr, _, _) = server.serve(broker(
        every_api(),
        ("unused".into(), 0),
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
    ));
    let client = Client::connect(&addr, config()).await.unwrap();
    let err = client.describe_cluster().await.unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
        "{err}"
    );
}

#[tokio::test]
async fn the_client_is_shared_across_tasks() {
    let server = FakeServer::bind().await;
    let (addr, log, accepted) = server.serve(broker(every_api(), ("unused".into(), 0), 0));
    let client = Client::connect(&addr, config()).await.unwrap();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.metadata(None).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(log.of(ApiKey::Metadata).len(), 20);
    assert_eq!(accepted.count(), 1, "all over the bootstrap connection");
}

#[tokio::test]
async fn a_closed_bootstrap_connection_is_opened_again() {
    let server = FakeServer::bind().await;
    let closes = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let handler = broker(every_api(), ("127.0.0.1".into(), 9092), 0);
    let close_once = closes.clone();
    let (addr, log, accepted) = server.serve(move |request| {
        // The first Metadata request kills the connection.
        if request.api_key() == ApiKey::Metadata.key()
            && close_once.swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return Reply::Close;
        }
        handler(request)
    });
    let client = Client::connect(&addr, config()).await.unwrap();
    let err = client.metadata(None).await.unwrap_err();
    assert!(err.is_transport(), "{err}");
    client.metadata(None).await.unwrap();
    client.find_coordinator("g").await.unwrap();
    assert_eq!(accepted.count(), 2, "one new connection");
    assert_eq!(log.of(ApiKey::ApiVersions).len(), 2, "negotiated again");
    assert!(!client.bootstrap().is_closed());
}
