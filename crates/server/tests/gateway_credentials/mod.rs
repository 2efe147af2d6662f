//! With `gateway.authentication=local` kcoord checks SCRAM logins itself, against users it
//! keeps in the cluster (`gateway.credentials.topic`), not on the node: a user created through
//! one node logs in through every node, also one started later with nothing of its own, and a
//! deletion through any node reaches them all; a record in the topic that is not a credential
//! is passed over. A standalone kcoord plays the cluster.

use std::time::{Duration, Instant};

use kcoord_client::{ClientConfig, ClientError, Connection};
use kcoord_server::ServerHandle;
use kcoord_wire::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kcoord_wire::messages::{AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse};

use crate::gateway_support::{free_port, upstream};

const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const SHA_256: i8 = 1;

/// A gateway whose SASL listener takes PLAIN (the JAAS user `admin`, and the nodes' own user)
/// and SCRAM-SHA-256 (kcoord's own users), with `extra` config lines.
async fn scram_gateway(upstream: &ServerHandle, extra: &str) -> ServerHandle {
    let text = format!(
        "node.id=7\nlisteners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN} required \
         user_node=\"node-secret\" user_admin=\"admin-secret\";\n\
         listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM} required;\n\
         gateway.node.client.security.protocol=SASL_PLAINTEXT\n\
         gateway.node.client.sasl.mechanism=PLAIN\n\
         gateway.node.client.sasl.jaas.config={PLAIN} required username=\"node\" password=\"node-secret\";\n\
         gateway.node.principals=User:node\noffsets.topic.num.partitions=1\n\
         upstream.bootstrap.servers={}\ngateway.broker.port.start={}\n{extra}",
        upstream.broker_addr().unwrap(),
        free_port() - 1,
    );
    kcoord_server::start(kcoord_server::Config::parse("gateway", &text).unwrap())
        .await
        .unwrap()
}

async fn connect(
    node: &ServerHandle,
    mechanism: &str,
    user: &str,
    password: &str,
) -> Result<Connection, ClientError> {
    let module = if mechanism == "PLAIN" { PLAIN } else { SCRAM };
    let jaas = format!("{module} required username=\"{user}\" password=\"{password}\";");
    let properties = [
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", mechanism),
        ("sasl.jaas.config", jaas.as_str()),
    ];
    let config = ClientConfig::from_properties("credentials-test", properties).unwrap();
    Connection::connect(&node.broker_addr().unwrap().to_string(), config).await
}

async fn alter(
    node: &ServerHandle,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let admin = connect(node, "PLAIN", "admin", "admin-secret")
        .await
        .unwrap();
    admin.send(request, 0).await.unwrap()
}

fn create(user: &str, password: &str) -> AlterUserScramCredentialsRequest {
    let salt = format!("{user}-salt").into_bytes();
    let mechanism = kcoord_sasl::ScramMechanism::ScramSha256;
    let salted = kcoord_sasl::salted_password(mechanism, password, &salt, 4096);
    AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: user.into(),
            mechanism: SHA_256,
            iterations: 4096,
            salt: salt.into(),
            salted_password: salted.into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn delete(user: &str) -> AlterUserScramCredentialsRequest {
    AlterUserScramCredentialsRequest {
        deletions: vec![ScramCredentialDeletion {
            name: user.into(),
            mechanism: SHA_256,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Whether `user` logs in to `node` with SCRAM, once it does (`true`) or no longer does
/// (`false`) within 30 s.
async fn logs_in_eventually(node: &ServerHandle, user: &str, password: &str, wanted: bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let logged_in = connect(node, "SCRAM-SHA-256", user, password).await.is_ok();
        if logged_in == wanted {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{user} still {} after 30 s",
            if wanted { "refused" } else { "logs in" }
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn kcoords_own_scram_users_are_kept_in_the_cluster_and_every_node_knows_them() {
    let upstream = upstream().await;
    let a = scram_gateway(&upstream, "").await;
    let b = scram_gateway(&upstream, "").await;

    let created = alter(&a, create("carol", "carol-secret")).await;
    assert_eq!(created.results[0].error_code, 0, "{created:?}");
    // The node that wrote it answered once it had read it back: no wait.
    connect(&a, "SCRAM-SHA-256", "carol", "carol-secret")
        .await
        .unwrap();
    assert!(connect(&a, "SCRAM-SHA-256", "carol", "wrong")
        .await
        .is_err());
    logs_in_eventually(&b, "carol", "carol-secret", true).await;

    // Something that is not a credential, written to the topic by someone else, is passed over.
    let client = kcoord_client::Client::connect(
        &upstream.broker_addr().unwrap().to_string(),
        ClientConfig::new("not-kcoord"),
    )
    .await
    .unwrap();
    let producer =
        kcoord_client::Producer::new(client, kcoord_client::ProducerConfig::default()).unwrap();
    let foreign = kcoord_client::ProducedRecord {
        key: Some(bytes::Bytes::from_static(b"someone-else")),
        value: Some(bytes::Bytes::from_static(b"not a credential")),
        ..Default::default()
    };
    producer
        .send("__kcoord_credentials", 0, &[foreign])
        .await
        .unwrap();

    // A node started later, with a metadata log dir it is given but does not use, knows carol
    // before its listeners open, and writes nothing of its own.
    let dir = tempfile::tempdir().unwrap();
    let c = scram_gateway(
        &upstream,
        &format!("metadata.log.dir={}\n", dir.path().display()),
    )
    .await;
    connect(&c, "SCRAM-SHA-256", "carol", "carol-secret")
        .await
        .unwrap();
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(written.is_empty(), "the gateway wrote {written:?}");

    let deleted = alter(&b, delete("carol")).await;
    assert_eq!(deleted.results[0].error_code, 0, "{deleted:?}");
    logs_in_eventually(&a, "carol", "carol-secret", false).await;
    logs_in_eventually(&c, "carol", "carol-secret", false).await;
    // Deleting her again is refused as the controller refuses it: she is gone everywhere.
    let again = alter(&a, delete("carol")).await;
    assert_ne!(again.results[0].error_code, 0, "{again:?}");

    for node in [a, b, c] {
        node.shutdown().await;
    }
    upstream.shutdown().await;
}
