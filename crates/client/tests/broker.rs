//! The broker side of KIP-1326 against in-process controllers: a fake that records what arrives
//! (R71, R72), and kcoord's sans-IO controller behind a fake socket (registration, heartbeats
//! until unfenced, shutdown).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kcoord_client::broker::{
    is_sensitive_config, register_broker, BrokerError, BrokerProperties, RegistrationOptions,
    DEFAULT_CONFIGS,
};
use kcoord_client::ClientError;
use kcoord_controller::{
    BrokerHeartbeatReply, BrokerRegistrationReply, Controller, ControllerConfig, MetadataVersion,
};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, DescribeClusterRequest, DescribeClusterResponse,
};
use kcoord_wire::ErrorCode;
use support::{api_versions, every_api_but, response, FakeServer, Log, Received, Reply};

const CLUSTER: &str = "a2Nvb3JkLWRldi1jbHVzdA";

/// A broker's server.properties with every kind of secret next to ordinary settings.
const PROPERTIES: &str = r#"
node.id=4
process.roles=broker
listeners=PLAINTEXT://127.0.0.1:19092,SECURE://127.0.0.1:19093
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL
broker.rack=rack-a
num.io.threads=16
log.dirs=/var/lib/kafka/data
my.custom.setting=yes
ssl.keystore.location=/etc/kafka/broker.jks
ssl.keystore.password=hunter2-a
ssl.key.password=hunter2-b
ssl.truststore.password=hunter2-c
ssl.keystore.key=hunter2-d
ssl.keystore.certificate.chain=hunter2-e
ssl.truststore.certificates=hunter2-f
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password="hunter2-g";
listener.name.secure.ssl.key.password=hunter2-h
listener.name.secure.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password="hunter2-i";
sasl.oauthbearer.client.credentials.client.secret=hunter2-j
sasl.oauthbearer.assertion.private.key.passphrase=hunter2-k
delegation.token.secret.key=hunter2-l
password.encoder.secret=hunter2-m
password.encoder.old.secret=hunter2-n
my.plugin.password=hunter2-o
"#;

fn properties() -> BrokerProperties {
    BrokerProperties::parse(PROPERTIES).unwrap()
}

fn options() -> RegistrationOptions {
    RegistrationOptions {
        cluster_id: Some(CLUSTER.into()),
        heartbeat_interval: Some(Duration::from_millis(20)),
        ..Default::default()
    }
}

/// A controller that accepts every registration with epoch 7 and offers BrokerRegistration up
/// to `max_version`.
fn accepting(max_version: i16) -> impl Fn(&Received) -> Reply {
    move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(
            request,
            &api_versions(&every_api_but(
                ApiKey::BrokerRegistration,
                Some((0, max_version)),
            )),
        ),
        Some(ApiKey::BrokerRegistration) => response(
            request,
            &BrokerRegistrationResponse {
                broker_epoch: 7,
                ..Default::default()
            },
        ),
        Some(ApiKey::DescribeCluster) => response(
            request,
            &DescribeClusterResponse {
                cluster_id: "from-describe".into(),
                ..Default::default()
            },
        ),
        _ => Reply::Close,
    }
}

async fn register_at(
    max_version: i16,
    options: RegistrationOptions,
) -> (BrokerRegistrationRequest, i16, Log) {
    let (addr, log, _) = FakeServer::bind().await.serve(accepting(max_version));
    let broker = register_broker(&properties(), &addr, options)
        .await
        .unwrap();
    assert_eq!(broker.epoch, 7);
    let sent = log.of(ApiKey::BrokerRegistration);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].version(), broker.version);
    (
        sent[0].decode::<BrokerRegistrationRequest>(),
        broker.version,
        log,
    )
}

#[tokio::test]
async fn r71_v6_sends_every_non_sensitive_static_config_and_no_sensitive_one() {
    let (request, version, _) = register_at(6, options()).await;
    assert_eq!(version, 6);
    let sent: BTreeMap<String, Option<String>> = request
        .static_configs
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect();
    // No sensitive key, no secret value, whatever its spelling.
    for (name, value) in &sent {
        assert!(!is_sensitive_config(name), "{name} was sent");
        assert!(
            !value.as_deref().unwrap_or("").contains("hunter2"),
            "{name} carries a secret"
        );
    }
    // Every non-sensitive key of the file, as written.
    for (name, value) in properties().iter() {
        if !is_sensitive_config(name) {
            assert_eq!(sent.get(name), Some(&Some(value.to_string())), "{name}");
        }
    }
    // Kafka's defaults for what the file leaves out, null ones as null.
    assert_eq!(
        sent.get("num.network.threads"),
        Some(&Some("3".to_string()))
    );
    assert_eq!(sent.get("advertised.listeners"), Some(&None));
    assert_eq!(
        sent.get("num.io.threads"),
        Some(&Some("16".to_string())),
        "the file wins over the default"
    );
    for (name, _) in DEFAULT_CONFIGS {
        assert!(sent.contains_key(*name), "default {name}");
    }
    assert_eq!(
        sent.get("ssl.keystore.location"),
        Some(&Some("/etc/kafka/broker.jks".to_string())),
        "locations are not secrets"
    );
    assert!(sent.contains_key("my.custom.setting"));
}

#[tokio::test]
async fn r72_below_v6_no_static_configs_are_sent() {
    for max in [5, 4, 2, 0] {
        let (request, version, _) = register_at(max, options()).await;
        assert_eq!(version, max);
        assert!(request.static_configs.is_empty(), "v{max}");
    }
    // The same, when the broker itself caps the version.
    let capped = RegistrationOptions {
        max_registration_version: Some(5),
        ..options()
    };
    let (request, version, _) = register_at(6, capped).await;
    assert_eq!(version, 5);
    assert!(request.static_configs.is_empty());
}

#[tokio::test]
async fn the_registration_describes_the_broker() {
    let (request, _, _) = register_at(6, options()).await;
    assert_eq!(request.broker_id, 4);
    assert_eq!(request.cluster_id, CLUSTER);
    assert_eq!(request.rack.as_deref(), Some("rack-a"));
    let listeners: Vec<_> = request
        .listeners
        .iter()
        .map(|l| {
            (
                l.name.as_str(),
                l.host.as_str(),
                l.port,
                l.security_protocol,
            )
        })
        .collect();
    assert_eq!(
        listeners,
        vec![
            ("PLAINTEXT", "127.0.0.1", 19092, 0),
            ("SECURE", "127.0.0.1", 19093, 3)
        ]
    );
    let features: Vec<_> = request
        .features
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                f.min_supported_version,
                f.max_supported_version,
            )
        })
        .collect();
    assert_eq!(features, vec![("metadata.version", 7, 34)]);
    assert_eq!(request.log_dirs.len(), 1);
    assert!(!kcoord_controller::is_reserved_directory(
        &request.log_dirs[0]
    ));
    assert!(!request.incarnation_id.is_nil());
    // Each registration is a new incarnation with a fresh directory.
    let (again, _, _) = register_at(6, options()).await;
    assert_ne!(again.incarnation_id, request.incarnation_id);
    assert_ne!(again.log_dirs, request.log_dirs);
}

#[tokio::test]
async fn before_v4_features_with_minimum_0_are_left_out() {
    let with_zero = RegistrationOptions {
        metadata_version_range: (0, 34),
        ..options()
    };
    let (request, _, _) = register_at(3, with_zero.clone()).await;
    assert!(request.features.is_empty());
    let (request, _, _) = register_at(4, with_zero).await;
    assert_eq!(request.features.len(), 1);
}

#[tokio::test]
async fn the_cluster_id_comes_from_the_properties_or_the_controller() {
    let no_id = RegistrationOptions {
        cluster_id: None,
        ..options()
    };
    let (request, _, log) = register_at(6, no_id.clone()).await;
    assert_eq!(request.cluster_id, "from-describe");
    let describe = log.of(ApiKey::DescribeCluster);
    assert_eq!(
        describe[0].decode::<DescribeClusterRequest>().endpoint_type,
        2,
        "asks for controller endpoints"
    );

    let (addr, _, _) = FakeServer::bind().await.serve(accepting(6));
    let mut props = properties();
    props.set("cluster.id", "from-file");
    let broker = register_broker(&props, &addr, no_id).await.unwrap();
    assert_eq!(broker.cluster_id, "from-file");
}

#[tokio::test]
async fn a_rejected_registration_is_a_kafka_error() {
    let (addr, _, _) =
        FakeServer::bind().await.serve(|request: &Received| {
            match ApiKey::from_i16(request.api_key()) {
                Some(ApiKey::ApiVersions) => response(
                    request,
                    &api_versions(&[(ApiKey::BrokerRegistration, 0, 6)]),
                ),
                _ => response(
                    request,
                    &BrokerRegistrationResponse {
                        error_code: ErrorCode::DUPLICATE_BROKER_REGISTRATION.code(),
                        broker_epoch: -1,
                        ..Default::default()
                    },
                ),
            }
        });
    let e = register_broker(&properties(), &addr, options())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, BrokerError::Client(c) if c.error_code() == Some(ErrorCode::DUPLICATE_BROKER_REGISTRATION)),
        "{e}"
    );
    // A server without BrokerRegistration is not a controller.
    let (addr, _, _) = FakeServer::bind().await.serve(|request: &Received| {
        response(
            request,
            &api_versions(&every_api_but(ApiKey::BrokerRegistration, None)),
        )
    });
    let e = register_broker(&properties(), &addr, options())
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            BrokerError::Client(ClientError::UnsupportedVersion { api: 62, .. })
        ),
        "{e}"
    );
    // Configuration mistakes are reported before anything is sent.
    let e = register_broker(
        &BrokerProperties::parse("listeners=PLAINTEXT://:9092").unwrap(),
        &addr,
        options(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, BrokerError::Config { key, .. } if key == "node.id"),
        "{e}"
    );
}

/// kcoord's controller behind a fake socket, on a real clock (ms since the test started).
fn controller_server(
    controller: Arc<Mutex<Controller>>,
    registration_max: i16,
) -> impl Fn(&Received) -> Reply {
    let started = Instant::now();
    move |request| {
        let now = started.elapsed().as_millis() as i64;
        let mut controller = controller.lock().unwrap();
        let tick = controller.tick(now);
        controller.apply(tick).unwrap();
        match ApiKey::from_i16(request.api_key()) {
            Some(ApiKey::ApiVersions) => response(
                request,
                &api_versions(&[
                    (ApiKey::ApiVersions, 0, 4),
                    (ApiKey::BrokerRegistration, 0, registration_max),
                    (ApiKey::BrokerHeartbeat, 0, 2),
                ]),
            ),
            Some(ApiKey::BrokerRegistration) => {
                let registration = request.decode::<BrokerRegistrationRequest>();
                let result = controller
                    .register_broker(&registration, request.version(), now)
                    .and_then(|outcome| controller.apply(outcome));
                response(request, &BrokerRegistrationReply::response(&result))
            }
            Some(ApiKey::BrokerHeartbeat) => {
                let heartbeat = request.decode::<BrokerHeartbeatRequest>();
                let result = controller
                    .broker_heartbeat(&heartbeat, now)
                    .and_then(|outcome| controller.apply(outcome));
                response(request, &BrokerHeartbeatReply::response(&result))
            }
            _ => Reply::Close,
        }
    }
}

#[tokio::test]
async fn a_broker_registers_with_kcoords_controller_heartbeats_until_unfenced_and_shuts_down() {
    let controller = Arc::new(Mutex::new(
        Controller::new(ControllerConfig::new(CLUSTER)).unwrap(),
    ));
    let (addr, log, _) = FakeServer::bind()
        .await
        .serve(controller_server(controller.clone(), 6));
    let broker = register_broker(&properties(), &addr, options())
        .await
        .unwrap();
    assert_eq!(broker.version, 6);
    {
        let controller = controller.lock().unwrap();
        let registration = controller.broker(4).unwrap();
        assert!(registration.fenced);
        assert_eq!(registration.epoch, broker.epoch);
        let stored = controller.static_configs(4).unwrap();
        assert_eq!(stored.get("num.io.threads"), Some(&Some("16".to_string())));
        assert!(stored.keys().all(|k| !is_sensitive_config(k)));
    }
    let handle = broker.start_heartbeats();
    let status = handle.wait_unfenced(Duration::from_secs(10)).await.unwrap();
    assert!(status.caught_up);
    assert!(!controller.lock().unwrap().broker(4).unwrap().fenced);
    // Heartbeats keep coming on the interval.
    let before = handle.status().heartbeats;
    handle
        .wait_for(|s| s.heartbeats >= before + 3, Duration::from_secs(10))
        .await
        .unwrap();

    let status = handle.shut_down(Duration::from_secs(10)).await.unwrap();
    assert!(status.shut_down && status.fenced && status.stopped);
    assert!(controller.lock().unwrap().broker(4).unwrap().fenced);
    let last = log
        .of(ApiKey::BrokerHeartbeat)
        .pop()
        .unwrap()
        .decode::<BrokerHeartbeatRequest>();
    assert!(last.want_shut_down);
}

#[tokio::test]
async fn at_4_4_iv2_a_v6_registration_keeps_no_static_configs() {
    let config = ControllerConfig::new(CLUSTER).with_metadata_version(MetadataVersion::IBP_4_4_IV2);
    let controller = Arc::new(Mutex::new(Controller::new(config).unwrap()));
    let (addr, _, _) = FakeServer::bind()
        .await
        .serve(controller_server(controller.clone(), 6));
    let broker = register_broker(&properties(), &addr, options())
        .await
        .unwrap();
    assert!(
        !broker.static_configs_sent().is_empty(),
        "the broker sent them"
    );
    assert!(
        controller
            .lock()
            .unwrap()
            .static_configs(4)
            .unwrap()
            .is_empty(),
        "the controller could not keep them"
    );
}

#[tokio::test]
async fn a_stale_epoch_stops_the_heartbeats() {
    let (addr, _, _) =
        FakeServer::bind().await.serve(|request: &Received| {
            match ApiKey::from_i16(request.api_key()) {
                Some(ApiKey::ApiVersions) => response(
                    request,
                    &api_versions(&[
                        (ApiKey::BrokerRegistration, 0, 6),
                        (ApiKey::BrokerHeartbeat, 0, 2),
                    ]),
                ),
                Some(ApiKey::BrokerRegistration) => response(
                    request,
                    &BrokerRegistrationResponse {
                        broker_epoch: 3,
                        ..Default::default()
                    },
                ),
                _ => response(
                    request,
                    &BrokerHeartbeatResponse {
                        error_code: ErrorCode::STALE_BROKER_EPOCH.code(),
                        ..Default::default()
                    },
                ),
            }
        });
    let handle = register_broker(&properties(), &addr, options())
        .await
        .unwrap()
        .start_heartbeats();
    let status = handle
        .wait_for(|s| s.stopped, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(status.fenced && status.last_error.unwrap().contains("STALE_BROKER_EPOCH"));
    assert!(handle
        .wait_unfenced(Duration::from_millis(100))
        .await
        .is_err());
}
