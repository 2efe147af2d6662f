use super::*;
use crate::config::Config;

const BASE: &str = "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n";

fn parse(extra: &str) -> Result<Config, ConfigError> {
    Config::parse("a.properties", &format!("{BASE}{extra}"))
}

fn error(extra: &str) -> String {
    match parse(extra) {
        Ok(c) => panic!("accepted: {:?}", c.gateway),
        Err(e) => e.to_string(),
    }
}

#[test]
fn standalone_without_upstream_bootstrap_servers() {
    assert_eq!(parse("").unwrap().gateway, None);
}

#[test]
fn upstream_keys_make_a_gateway_with_kafka_client_settings() {
    let c = parse(
        "upstream.bootstrap.servers=k1:9092, k2:9092\ngateway.broker.port.start=19000\n\
         upstream.security.protocol=SASL_PLAINTEXT\nupstream.sasl.mechanism=PLAIN\n\
         upstream.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"secret\";\n\
         upstream.metadata.max.age.ms=5000\n",
    )
    .unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let g = c.gateway.unwrap();
    assert_eq!(g.bootstrap_servers, ["k1:9092", "k2:9092"]);
    assert_eq!(g.broker_port_start, 19000);
    assert_eq!(g.metadata_max_age, Duration::from_secs(5));
    let client = g.client_config().unwrap();
    assert_eq!(
        client.security.protocol,
        kcoord_client::SecurityProtocol::SaslPlaintext
    );
    assert_eq!(client.client_id, UPSTREAM_CLIENT_ID);
    assert!(
        !format!("{g:?}").contains("secret"),
        "no password in the debug form"
    );
}

#[test]
fn the_default_refresh_is_kafkas_metadata_max_age() {
    let c = parse("upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=19000\n").unwrap();
    assert_eq!(
        c.gateway.unwrap().metadata_max_age,
        Duration::from_secs(300)
    );
}

#[test]
fn the_broker_port_start_is_required_and_only_in_gateway_mode() {
    let e = error("upstream.bootstrap.servers=k1:9092\n");
    assert!(
        e.contains("gateway.broker.port.start: required key is missing"),
        "{e}"
    );
    let e = error("gateway.broker.port.start=19000\n");
    assert!(e.contains("only used in gateway mode"), "{e}");
    let e = error("upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=70000\n");
    assert!(e.contains("gateway.broker.port.start"), "{e}");
}

#[test]
fn an_authorizer_with_a_gateway_needs_the_cluster_to_authenticate_the_clients() {
    const STANDARD: &str =
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n";
    let e = error(&format!(
        "upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=19000\n{STANDARD}"
    ));
    assert!(e.contains("authorizer.class.name"), "{e}");
    assert!(e.contains("set gateway.authentication=upstream"), "{e}");
    let c = relay(&format!("gateway.authentication=upstream\n{STANDARD}")).unwrap();
    assert!(c.authorizer.kind.is_some());
}

#[test]
fn bad_bootstrap_servers_and_client_settings_are_refused() {
    for bad in ["k1", "k1:0", "k1:x", ""] {
        let e = error(&format!(
            "upstream.bootstrap.servers={bad}\ngateway.broker.port.start=19000\n"
        ));
        assert!(e.contains("upstream.bootstrap.servers"), "{bad}: {e}");
    }
    let e = error(
        "upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=19000\n\
         upstream.security.protocol=SMOKE_SIGNALS\n",
    );
    assert!(e.contains("upstream client settings"), "{e}");
    assert!(e.contains("security.protocol"), "{e}");
}

#[test]
fn a_broker_port_is_the_start_plus_the_id_while_it_fits() {
    let c = parse("upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=65530\n").unwrap();
    let g = c.gateway.unwrap();
    assert_eq!(g.broker_port(0), Some(65530));
    assert_eq!(g.broker_port(5), Some(65535));
    assert_eq!(g.broker_port(6), None);
    assert_eq!(g.broker_port(-1), None);
}

#[test]
fn the_coordinator_log_topic_has_a_default_and_takes_only_legal_names_and_factors() {
    const GATEWAY: &str = "upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=19000\n";
    let g = parse(GATEWAY).unwrap().gateway.unwrap();
    assert_eq!(g.coordinator_log_topic, "__kcoord_coordinator_log");
    assert_eq!(g.coordinator_log_replication_factor, -1);
    let g = parse(&format!(
        "{GATEWAY}gateway.coordinator.log.topic=team-a.kcoord_log\n\
         gateway.coordinator.log.replication.factor=3\n"
    ))
    .unwrap()
    .gateway
    .unwrap();
    assert_eq!(g.coordinator_log_topic, "team-a.kcoord_log");
    assert_eq!(g.coordinator_log_replication_factor, 3);
    for bad in ["a/b", "..", "a b"] {
        let e = error(&format!("{GATEWAY}gateway.coordinator.log.topic={bad}\n"));
        assert!(e.contains("not a legal topic name"), "{bad}: {e}");
    }
    for bad in ["0", "-2", "40000"] {
        let e = error(&format!(
            "{GATEWAY}gateway.coordinator.log.replication.factor={bad}\n"
        ));
        assert!(
            e.contains("gateway.coordinator.log.replication.factor"),
            "{bad}: {e}"
        );
    }
    let e = error("gateway.coordinator.log.topic=t\n");
    assert!(e.contains("only used in gateway mode"), "{e}");
}

const GATEWAY: &str = "upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=19000\n";

#[test]
fn the_credentials_topic_has_a_default_a_legal_name_and_is_not_the_coordinator_logs() {
    let g = parse(GATEWAY).unwrap().gateway.unwrap();
    assert_eq!(g.credentials_topic, "__kcoord_credentials");
    let g = parse(&format!(
        "{GATEWAY}gateway.credentials.topic=team-a.users\n"
    ))
    .unwrap()
    .gateway
    .unwrap();
    assert_eq!(g.credentials_topic, "team-a.users");
    let e = error(&format!("{GATEWAY}gateway.credentials.topic=a/b\n"));
    assert!(e.contains("not a legal topic name"), "{e}");
    let e = error(&format!(
        "{GATEWAY}gateway.credentials.topic=t\ngateway.coordinator.log.topic=t\n"
    ));
    assert!(e.contains("topics of their own"), "{e}");
    let e = error("gateway.credentials.topic=t\n");
    assert!(e.contains("only used in gateway mode"), "{e}");
}

#[test]
fn nodes_reach_each_other_with_the_node_client_keys_and_trust_the_named_principals() {
    let g = parse(&format!(
        "{GATEWAY}gateway.node.client.security.protocol=PLAINTEXT\n\
         gateway.node.client.request.timeout.ms=7000\n\
         gateway.node.principals=User:kcoord-a, User:kcoord-b\n"
    ))
    .unwrap()
    .gateway
    .unwrap();
    let node_client = g.node_client_config().unwrap();
    assert_eq!(node_client.client_id, NODE_CLIENT_ID);
    assert_eq!(node_client.request_timeout, Duration::from_secs(7));
    let principal = |text: &str| KafkaPrincipal::parse(text).unwrap();
    assert!(g.trusts_as_node(&principal("User:kcoord-b")));
    assert!(!g.trusts_as_node(&principal("User:alice")));
    assert!(!g.trusts_as_node(&KafkaPrincipal::anonymous()));
    // Unset: any connection, as before the setting existed.
    let open = parse(GATEWAY).unwrap().gateway.unwrap();
    assert!(open.node_principals.is_empty());
    assert!(open.trusts_as_node(&principal("User:alice")));
}

#[test]
fn the_node_client_must_speak_the_broker_listeners_protocol() {
    let e = error(&format!(
        "{GATEWAY}gateway.node.client.security.protocol=SASL_PLAINTEXT\n\
         gateway.node.client.sasl.mechanism=PLAIN\n\
         gateway.node.client.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"n\" password=\"p\";\n"
    ));
    assert!(
        e.contains("gateway.node.client.security.protocol") && e.contains("PLAINTEXT"),
        "{e}"
    );
    let e = error(&format!("{GATEWAY}gateway.node.principals=alice\n"));
    assert!(e.contains("gateway.node.principals"), "{e}");
    let e = error("gateway.node.principals=User:a\n");
    assert!(e.contains("only used in gateway mode"), "{e}");
    let e = error("gateway.node.client.security.protocol=SSL\n");
    assert!(
        e.contains("gateway.node.client.security.protocol") && e.contains("only used in gateway"),
        "{e}"
    );
}

/// A relaying gateway: SASL on the broker listener and upstream, no JAAS users of its own.
const RELAY: &str = "listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
     listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
     sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
     upstream.bootstrap.servers=k1:9092\ngateway.broker.port.start=19000\n\
     upstream.security.protocol=SASL_SSL\nupstream.sasl.mechanism=PLAIN\n\
     upstream.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";\n\
     gateway.node.client.security.protocol=SASL_PLAINTEXT\ngateway.node.client.sasl.mechanism=PLAIN\n\
     gateway.node.client.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"n\" password=\"p\";\n";

fn relay(extra: &str) -> Result<Config, ConfigError> {
    Config::parse("a.properties", &format!("node.id=1\n{RELAY}{extra}"))
}

#[test]
fn upstream_authentication_relays_the_broker_listeners_exchanges_and_reads_no_users() {
    let c = relay("gateway.authentication=upstream\n").unwrap();
    assert!(c.gateway.as_ref().unwrap().upstream_authenticates);
    let listener = c.sasl.listener("SASL_PLAINTEXT").unwrap();
    assert!(listener.relayed && listener.plain_users.is_empty());
    assert_eq!(listener.mechanism_names(), ["PLAIN", "SCRAM-SHA-512"]);
    // `local`, the default, reads the users as before.
    let e = relay("gateway.authentication=local\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("plain.sasl.jaas.config"), "{e}");
    // Users configured for kcoord would be ignored: refused rather than kept for nothing.
    let jaas = "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"b\";\n";
    let e = relay(&format!("gateway.authentication=upstream\n{jaas}"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unset listener.name.sasl_plaintext.plain.sasl.jaas.config"),
        "{e}"
    );
}

#[test]
fn upstream_authentication_needs_sasl_upstream_and_on_every_broker_listener() {
    let e = relay("gateway.authentication=upstream\nupstream.security.protocol=SSL\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("must be SASL_PLAINTEXT or SASL_SSL, not SSL"),
        "{e}"
    );
    let e = error(&format!("{GATEWAY}gateway.authentication=upstream\n"));
    assert!(e.contains("upstream.security.protocol"), "{e}");
    let two_listeners = RELAY
        .replace(",CONTROLLER://", ",PLAINTEXT://127.0.0.1:0,CONTROLLER://")
        .replace(
            ",CONTROLLER:PLAINTEXT",
            ",PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        );
    let text = format!("node.id=1\n{two_listeners}gateway.authentication=upstream\n");
    let e = Config::parse("a.properties", &text)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("broker listener PLAINTEXT speaks PLAINTEXT"),
        "{e}"
    );
    let e = error("gateway.authentication=upstream\n");
    assert!(e.contains("only used in gateway mode"), "{e}");
    let e = relay("gateway.authentication=cluster\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected local or upstream"), "{e}");
}
