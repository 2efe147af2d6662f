//! librdkafka (the `rdkafka` crate, bundled build with OpenSSL) against kcoord's secured
//! listeners: SASL_SSL with SCRAM-SHA-512 (a user created with AlterUserScramCredentials), and
//! SSL with client certificates (`ssl.client.auth=required`). Each produces a record and reads
//! it back; a wrong password and a missing certificate fail, and the daemon keeps serving.
//! Certificates are made in the test with rcgen: a CA, the daemon's for localhost/127.0.0.1, a
//! client's.

mod security_support;

use std::time::Duration;

use kcoord_sasl::ScramMechanism;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::{AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::TopicPartitionList;
use security_support::Client;

const WAIT: Duration = Duration::from_secs(20);

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// ca.pem; server.pem (key + certificate, for localhost and 127.0.0.1); client.crt and
    /// client.key (CN=rdkafka).
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name
            .push(DnType::CommonName, "kcoord test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::from_params(&ca, &ca_key);
        let server_key = KeyPair::generate().unwrap();
        let mut server = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        server
            .subject_alt_names
            .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
        let server_cert = server.signed_by(&server_key, &issuer).unwrap();
        let client_key = KeyPair::generate().unwrap();
        let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
        client
            .distinguished_name
            .push(DnType::CommonName, "rdkafka");
        let client_cert = client.signed_by(&client_key, &issuer).unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        write("ca.pem", ca_cert.pem());
        write(
            "server.pem",
            format!("{}{}", server_key.serialize_pem(), server_cert.pem()),
        );
        write("client.crt", client_cert.pem());
        write("client.key", client_key.serialize_pem());
        Pki { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// A node with a SASL_SSL listener (SCRAM-SHA-512), an SSL listener requiring client
/// certificates, and a PLAINTEXT one for the test's own setup.
async fn start(pki: &Pki) -> kcoord_server::ServerHandle {
    let text = format!(
        "node.id=1\n\
         listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT\n\
         auto.create.topics.enable=true\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}\n\
         ssl.truststore.type=PEM\nssl.truststore.location={}\n\
         listener.name.ssl.ssl.client.auth=required\n\
         sasl.enabled.mechanisms=SCRAM-SHA-512\n\
         listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
        pki.path("server.pem"),
        pki.path("ca.pem"),
    );
    let config =
        kcoord_server::Config::parse("rdkafka-security", &text).unwrap_or_else(|e| panic!("{e}"));
    kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn create_user(server: &kcoord_server::ServerHandle, user: &str, password: &str) {
    let mut admin = Client::connect(server.local_addr("PLAINTEXT").unwrap()).await;
    let salt = b"rdkafka-test-salt".to_vec();
    let salted = kcoord_sasl::salted_password(ScramMechanism::ScramSha512, password, &salt, 4096);
    let request = AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: user.into(),
            mechanism: 2,
            iterations: 4096,
            salt: salt.into(),
            salted_password: salted.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response: AlterUserScramCredentialsResponse = admin
        .send(ApiKey::AlterUserScramCredentials, 0, &request)
        .await
        .unwrap();
    assert_eq!(response.results[0].error_code, 0);
}

fn client_config(bootstrap: std::net::SocketAddr, settings: &[(&str, String)]) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set(
            "bootstrap.servers",
            format!("localhost:{}", bootstrap.port()),
        )
        .set("broker.address.family", "v4")
        .set("message.timeout.ms", "10000")
        .set("socket.timeout.ms", "10000");
    for (key, value) in settings {
        config.set(*key, value);
    }
    config
}

/// Produces one record to `topic` and reads it back from partition 0.
async fn round_trip(config: &ClientConfig, topic: &str) -> Result<Vec<u8>, String> {
    let producer: FutureProducer = config.create().map_err(|e| e.to_string())?;
    producer
        .send(
            FutureRecord::to(topic)
                .key("k")
                .payload("secured")
                .partition(0),
            WAIT,
        )
        .await
        .map_err(|(e, _)| e.to_string())?;
    let mut consumer_config = config.clone();
    consumer_config
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false");
    let consumer: BaseConsumer = consumer_config.create().map_err(|e| e.to_string())?;
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .map_err(|e| e.to_string())?;
    consumer.assign(&assignment).map_err(|e| e.to_string())?;
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            let message = message.map_err(|e| e.to_string())?;
            return Ok(message.payload().unwrap_or_default().to_vec());
        }
    }
    Err("no record read back".to_owned())
}

fn pem_settings(pki: &Pki) -> Vec<(&'static str, String)> {
    vec![("ssl.ca.location", pki.path("ca.pem"))]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_produces_and_consumes_over_sasl_ssl_with_scram_sha_512() {
    let pki = Pki::new();
    let server = start(&pki).await;
    create_user(&server, "alice", "alice-secret").await;
    let mut settings = pem_settings(&pki);
    settings.extend([
        ("security.protocol", "SASL_SSL".to_owned()),
        ("sasl.mechanisms", "SCRAM-SHA-512".to_owned()),
        ("sasl.username", "alice".to_owned()),
        ("sasl.password", "alice-secret".to_owned()),
    ]);
    let sasl_ssl = server.local_addr("SASL_SSL").unwrap();
    let config = client_config(sasl_ssl, &settings);
    assert_eq!(
        round_trip(&config, "scram-topic").await,
        Ok(b"secured".to_vec())
    );

    // A wrong password: librdkafka reports an authentication failure; nothing is delivered.
    settings.retain(|(k, _)| *k != "sasl.password");
    settings.push(("sasl.password", "wrong".to_owned()));
    let wrong = client_config(sasl_ssl, &settings);
    let failed = round_trip(&wrong, "scram-topic").await.unwrap_err();
    assert!(!failed.is_empty());
    // The listener still serves the right password.
    assert_eq!(
        round_trip(&config, "scram-topic-2").await,
        Ok(b"secured".to_vec())
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_produces_and_consumes_over_ssl_with_a_client_certificate() {
    let pki = Pki::new();
    let server = start(&pki).await;
    let ssl = server.local_addr("SSL").unwrap();
    let mut settings = pem_settings(&pki);
    settings.extend([
        ("security.protocol", "SSL".to_owned()),
        ("ssl.certificate.location", pki.path("client.crt")),
        ("ssl.key.location", pki.path("client.key")),
    ]);
    let config = client_config(ssl, &settings);
    assert_eq!(
        round_trip(&config, "mtls-topic").await,
        Ok(b"secured".to_vec())
    );

    // Without a certificate the handshake fails.
    let without = client_config(
        ssl,
        &[
            ("security.protocol", "SSL".to_owned()),
            ("ssl.ca.location", pki.path("ca.pem")),
        ],
    );
    assert!(round_trip(&without, "mtls-topic").await.is_err());
    assert_eq!(
        round_trip(&config, "mtls-topic-2").await,
        Ok(b"secured".to_vec())
    );
    server.shutdown().await;
}
