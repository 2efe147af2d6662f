//! `security.protocol` against a kcoord node in-process: SASL PLAIN and SCRAM-SHA-512 on
//! SASL_PLAINTEXT and SASL_SSL listeners, TLS on SSL listeners (certificates made here with
//! rcgen), host name verification on and off, client certificates, and the errors a wrong
//! password, a disabled mechanism or an untrusted server give.

use std::net::SocketAddr;
use std::path::PathBuf;

use kcoord_client::{Client, ClientConfig, ClientError, Connection, SecurityProtocol};
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::{AlterUserScramCredentialsRequest, DescribeAclsRequest};
use kcoord_wire::ErrorCode;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

const PLAIN_JAAS: &str =
    "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";";
const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required;";

/// A CA, a server certificate for `localhost` only (so that `127.0.0.1` is a name it does not
/// hold), and PEM files of both in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
    ca_params: CertificateParams,
    ca_key: KeyPair,
    ca_pem: String,
}

struct Identity {
    cert_pem: String,
    key_pem: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        let ca_pem = params.self_signed(&ca_key).unwrap().pem();
        Pki {
            dir: tempfile::tempdir().unwrap(),
            ca_params: params,
            ca_key,
            ca_pem,
        }
    }

    fn issue(&self, names: &[&str], common_name: &str) -> Identity {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        let cert = params.signed_by(&key, &issuer).unwrap();
        Identity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn ca_file(&self) -> String {
        self.write("ca.pem", &self.ca_pem).display().to_string()
    }
}

struct Node {
    handle: kcoord_server::ServerHandle,
    pki: Pki,
}

impl Node {
    /// A node with SASL_PLAINTEXT, SSL and SASL_SSL listeners (PLAIN and SCRAM-SHA-512 on
    /// both SASL ones), the StandardAuthorizer and alice as the super user.
    async fn start(extra: &str) -> Node {
        let pki = Pki::new("kcoord client test CA");
        let server = pki.issue(&["localhost"], "kcoord");
        let keystore = pki.write(
            "server.pem",
            &format!("{}{}", server.key_pem, server.cert_pem),
        );
        let truststore = pki.ca_file();
        let mut text = format!(
            "node.id=1\n\
             listeners=SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
             listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT\n\
             sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
             authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
             super.users=User:alice;User:ANONYMOUS\n\
             ssl.keystore.type=PEM\nssl.keystore.location={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={truststore}\n",
            keystore.display()
        );
        for listener in ["sasl_plaintext", "sasl_ssl"] {
            text.push_str(&format!(
                "listener.name.{listener}.plain.sasl.jaas.config={PLAIN_JAAS}\n\
                 listener.name.{listener}.scram-sha-512.sasl.jaas.config={SCRAM_JAAS}\n"
            ));
        }
        text.push_str(extra);
        let config = kcoord_server::Config::parse("client-security-test", &text)
            .unwrap_or_else(|e| panic!("{e}"));
        let handle = kcoord_server::start(config)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Node { handle, pki }
    }

    fn addr(&self, listener: &str) -> SocketAddr {
        self.handle.local_addr(listener).unwrap()
    }

    /// `localhost:<port>` of a listener: the name its certificate holds.
    fn localhost(&self, listener: &str) -> String {
        format!("localhost:{}", self.addr(listener).port())
    }
}

fn config(properties: &[(&str, &str)]) -> ClientConfig {
    ClientConfig::from_properties("security-test", properties.iter().copied())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn plain_jaas(user: &str, password: &str) -> String {
    format!("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{user}\" password=\"{password}\";")
}

fn scram_jaas(user: &str, password: &str) -> String {
    format!("org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{password}\";")
}

/// DescribeAcls' error code: NONE for a super user, CLUSTER_AUTHORIZATION_FAILED for others.
async fn describe_acls(conn: &Connection) -> i16 {
    let request = DescribeAclsRequest {
        resource_type_filter: 1,
        pattern_type_filter: 1,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    };
    conn.send_negotiated(request).await.unwrap().error_code
}

/// Creates a SCRAM-SHA-512 credential through alice's connection.
async fn create_scram_user(alice: &Connection, user: &str, password: &str) {
    let mechanism = kcoord_sasl::ScramMechanism::ScramSha512;
    let salt = b"client-test-salt".to_vec();
    let salted = kcoord_sasl::salted_password(mechanism, password, &salt, 4096);
    let request = AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: user.into(),
            mechanism: mechanism.kafka_type(),
            iterations: 4096,
            salt: salt.into(),
            salted_password: salted.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = alice.send_negotiated(request).await.unwrap();
    assert_eq!(response.results[0].error_code, 0, "{:?}", response.results);
}

#[tokio::test]
async fn plain_over_sasl_plaintext_authenticates_and_the_connection_serves_requests() {
    let node = Node::start("").await;
    let jaas = plain_jaas("alice", "alice-secret");
    let config = config(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.jaas.config", &jaas),
    ]);
    assert_eq!(config.security.protocol, SecurityProtocol::SaslPlaintext);
    let client = Client::connect(&node.addr("SASL_PLAINTEXT").to_string(), config)
        .await
        .unwrap();
    assert_eq!(
        describe_acls(&client.bootstrap()).await,
        0,
        "alice is a super user"
    );
    client.metadata(None).await.unwrap();
    node.handle.shutdown().await;
}

#[tokio::test]
async fn scram_sha_512_users_authenticate_as_themselves_and_a_wrong_password_is_an_authentication_error(
) {
    let node = Node::start("").await;
    let addr = node.addr("SASL_PLAINTEXT").to_string();
    let alice_jaas = plain_jaas("alice", "alice-secret");
    let alice = Connection::connect(
        &addr,
        config(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", &alice_jaas),
        ]),
    )
    .await
    .unwrap();
    create_scram_user(&alice, "carol", "carol-secret").await;

    let carol_jaas = scram_jaas("carol", "carol-secret");
    let carol = Client::connect(
        &addr,
        config(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", &carol_jaas),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(
        describe_acls(&carol.bootstrap()).await,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
        "carol is User:carol, not a super user"
    );

    // librdkafka's property names, a wrong password.
    let err = Client::connect(
        &addr,
        config(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanisms", "SCRAM-SHA-512"),
            ("sasl.username", "carol"),
            ("sasl.password", "not-hers"),
        ]),
    )
    .await
    .unwrap_err();
    assert!(err.is_authentication(), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("SASL authentication with {addr} failed (SCRAM-SHA-512): SASL_AUTHENTICATION_FAILED: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
    );
    node.handle.shutdown().await;
}

#[tokio::test]
async fn a_wrong_plain_password_and_a_disabled_mechanism_are_clear_errors() {
    let node = Node::start("").await;
    let addr = node.addr("SASL_PLAINTEXT").to_string();
    let jaas = plain_jaas("alice", "wrong");
    let err = Client::connect(
        &addr,
        config(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", &jaas),
        ]),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("SASL authentication with {addr} failed (PLAIN): SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password")
    );

    let err = Connection::connect(
        &addr,
        config(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
        ]),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ClientError::Authentication { .. }), "{err:?}");
    assert!(
        err.to_string().ends_with("Client SASL mechanism 'SCRAM-SHA-256' not enabled in the server, enabled mechanisms are [PLAIN, SCRAM-SHA-512]"),
        "{err}"
    );

    // SASL to a listener that does not speak it: its SaslHandshake is refused.
    let err = Connection::connect(
        &node.localhost("SSL"),
        config(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
            ("ssl.truststore.location", &node.pki.ca_file()),
        ]),
    )
    .await
    .unwrap_err();
    assert!(err.is_authentication(), "{err:?}");
    assert!(err.to_string().contains("ILLEGAL_SASL_STATE"), "{err}");
    node.handle.shutdown().await;
}

#[tokio::test]
async fn ssl_trusts_the_pem_ca_and_checks_the_host_name_unless_told_not_to() {
    let node = Node::start("").await;
    let ca = node.pki.ca_file();
    for trust_key in ["ssl.truststore.location", "ssl.ca.location"] {
        let client = Client::connect(
            &node.localhost("SSL"),
            config(&[
                ("security.protocol", "SSL"),
                ("ssl.truststore.type", "PEM"),
                (trust_key, &ca),
            ]),
        )
        .await
        .unwrap_or_else(|e| panic!("{trust_key}: {e}"));
        client.metadata(None).await.unwrap();
        assert_eq!(
            describe_acls(&client.bootstrap()).await,
            0,
            "User:ANONYMOUS is a super user here"
        );
    }

    // The certificate names localhost, not 127.0.0.1.
    let by_address = node.addr("SSL").to_string();
    let err = Connection::connect(
        &by_address,
        config(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", &ca),
        ]),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ClientError::Tls { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("certificate not valid for name \"127.0.0.1\""),
        "{err}"
    );

    let conn = Connection::connect(
        &by_address,
        config(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", &ca),
            ("ssl.endpoint.identification.algorithm", ""),
        ]),
    )
    .await
    .unwrap();
    conn.negotiate().await.unwrap();

    // Another CA's certificate is not trusted, host name check or not.
    let other = Pki::new("another CA");
    let err = Connection::connect(
        &node.localhost("SSL"),
        config(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", &other.ca_file()),
            ("ssl.endpoint.identification.algorithm", ""),
        ]),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("UnknownIssuer"), "{err}");
    node.handle.shutdown().await;
}

#[tokio::test]
async fn a_listener_requiring_client_certificates_takes_the_keystore_in_either_form() {
    let node = Node::start("listener.name.ssl.ssl.client.auth=required\n").await;
    let ca = node.pki.ca_file();
    let client_id = node.pki.issue(&[], "tool");
    let keystore = node.pki.write(
        "client.pem",
        &format!("{}{}", client_id.key_pem, client_id.cert_pem),
    );
    let cert = node.pki.write("client-cert.pem", &client_id.cert_pem);
    let key = node.pki.write("client-key.pem", &client_id.key_pem);
    let keystore = keystore.display().to_string();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let forms: [Vec<(&str, &str)>; 3] = [
        vec![
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &keystore),
        ],
        vec![
            ("ssl.certificate.location", &cert),
            ("ssl.key.location", &key),
        ],
        vec![
            ("ssl.keystore.key", &client_id.key_pem),
            ("ssl.keystore.certificate.chain", &client_id.cert_pem),
        ],
    ];
    for form in forms {
        let mut properties = vec![
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", &ca),
        ];
        properties.extend(form.iter().copied());
        let client = Client::connect(&node.localhost("SSL"), config(&properties))
            .await
            .unwrap_or_else(|e| panic!("{form:?}: {e}"));
        client.metadata(None).await.unwrap();
    }

    // Without a certificate the server ends the session: no request gets an answer.
    let result = async {
        let conn = Connection::connect(
            &node.localhost("SSL"),
            config(&[
                ("security.protocol", "SSL"),
                ("ssl.truststore.location", &ca),
            ]),
        )
        .await?;
        conn.negotiate().await
    }
    .await;
    let err = result.unwrap_err();
    // TLS 1.3: the server's refusal arrives as an alert on the first read.
    assert!(
        err.to_string().contains("CertificateRequired"),
        "without a client certificate: {err}"
    );
    node.handle.shutdown().await;
}

#[tokio::test]
async fn sasl_ssl_runs_scram_over_tls() {
    let node = Node::start("").await;
    let ca = node.pki.ca_file();
    let alice_jaas = plain_jaas("alice", "alice-secret");
    let alice = Connection::connect(
        &node.localhost("SASL_SSL"),
        config(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.jaas.config", &alice_jaas),
            ("ssl.truststore.location", &ca),
        ]),
    )
    .await
    .unwrap();
    create_scram_user(&alice, "dave", "dave-secret").await;
    let dave_jaas = scram_jaas("dave", "dave-secret");
    let dave = Client::connect(
        &node.localhost("SASL_SSL"),
        config(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", &dave_jaas),
            ("ssl.truststore.location", &ca),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(
        describe_acls(&dave.bootstrap()).await,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
        "dave is User:dave"
    );
    node.handle.shutdown().await;
}
