//! SASL on a SASL_PLAINTEXT listener over the wire: PLAIN users from the listener's JAAS
//! config, SCRAM credentials created with AlterUserScramCredentials, Kafka's failures (one text
//! for an unknown user and a wrong password, the connection closed), nothing served before
//! authentication, and the authenticated principal is the one the authorizer sees.

mod security_support;

use std::net::SocketAddr;

use kcoord_sasl::ScramMechanism;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::*;
use kcoord_wire::ErrorCode;
use security_support::{scram, Client};
use tokio::io::AsyncWriteExt;

const PLAIN_JAAS: &str = "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\" user_bob=\"bob-secret\";";
const SCRAM_JAAS: &str = "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;";

struct Node {
    handle: kcoord_server::ServerHandle,
    sasl: SocketAddr,
}

async fn start(extra: &[&str]) -> Node {
    let mut text = String::from(
        "node.id=1\nlisteners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:alice;User:ANONYMOUS\n",
    );
    for line in [PLAIN_JAAS, SCRAM_JAAS].iter().chain(extra) {
        text.push_str(line);
        text.push('\n');
    }
    let config = kcoord_server::Config::parse("sasl-test", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sasl = handle.broker_addr().expect("the SASL listener");
    Node { handle, sasl }
}

/// A connection speaking Kafka frames by hand.
#[tokio::test]
async fn plain_users_of_the_jaas_config_authenticate_and_act_as_themselves() {
    let node = start(&[]).await;
    let mut alice = Client::connect(node.sasl).await;
    let versions: ApiVersionsResponse = alice
        .send(
            ApiKey::ApiVersions,
            3,
            &ApiVersionsRequest {
                client_software_name: "sasl-test".into(),
                client_software_version: "1".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(versions.error_code, 0);
    let handshake = alice.handshake("PLAIN").await;
    assert_eq!(handshake.error_code, 0);
    assert_eq!(handshake.mechanisms, vec!["PLAIN", "SCRAM-SHA-256"]);
    let done = alice.authenticate(b"\0alice\0alice-secret").await.unwrap();
    assert_eq!((done.error_code, done.error_message), (0, None));
    assert_eq!(alice.describe_acls().await, 0, "alice is a super user");

    let mut bob = Client::connect(node.sasl).await;
    assert_eq!(bob.plain("bob", "bob-secret").await.unwrap().error_code, 0);
    assert_eq!(
        bob.describe_acls().await,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
        "bob is User:bob, not a super user"
    );
    // Authenticated: the SASL RPCs are out of place now.
    let again = bob.authenticate(b"\0bob\0bob-secret").await.unwrap();
    assert_eq!(again.error_code, ErrorCode::ILLEGAL_SASL_STATE.code());
    node.handle.shutdown().await;
}

#[tokio::test]
async fn a_wrong_password_and_an_unknown_user_fail_alike_and_close_the_connection() {
    let node = start(&[]).await;
    let mut texts = Vec::new();
    for (user, password) in [("alice", "wrong"), ("mallory", "alice-secret")] {
        let mut client = Client::connect(node.sasl).await;
        let failed = client.plain(user, password).await.unwrap();
        assert_eq!(
            failed.error_code,
            ErrorCode::SASL_AUTHENTICATION_FAILED.code()
        );
        texts.push(failed.error_message);
        assert!(
            client.is_closed().await,
            "{user}: the connection stays open"
        );
    }
    assert_eq!(
        texts[0].as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert_eq!(texts[0], texts[1]);
    node.handle.shutdown().await;
}

#[tokio::test]
async fn nothing_but_the_handshake_is_served_before_authentication() {
    let node = start(&[]).await;
    let mut client = Client::connect(node.sasl).await;
    let metadata: Option<MetadataResponse> = client
        .send(ApiKey::Metadata, 12, &MetadataRequest::default())
        .await;
    assert!(
        metadata.is_none(),
        "Metadata answered before authentication"
    );

    let mut client = Client::connect(node.sasl).await;
    let refused = client.handshake("GSSAPI").await;
    assert_eq!(
        refused.error_code,
        ErrorCode::UNSUPPORTED_SASL_MECHANISM.code()
    );
    assert_eq!(refused.mechanisms, vec!["PLAIN", "SCRAM-SHA-256"]);
    assert!(client.is_closed().await);
    node.handle.shutdown().await;
}

#[tokio::test]
async fn a_v0_handshake_exchanges_raw_tokens() {
    let node = start(&[]).await;
    let mut client = Client::connect(node.sasl).await;
    let request = SaslHandshakeRequest {
        mechanism: "PLAIN".into(),
        ..Default::default()
    };
    let response: SaslHandshakeResponse = client
        .send(ApiKey::SaslHandshake, 0, &request)
        .await
        .unwrap();
    assert_eq!(response.error_code, 0);
    client.write_frame(b"\0alice\0alice-secret").await;
    let reply = client
        .read_frame()
        .await
        .expect("PLAIN's empty final token");
    assert!(reply.is_empty());
    assert_eq!(client.describe_acls().await, 0);
    node.handle.shutdown().await;
}

#[tokio::test]
async fn scram_credentials_from_alter_user_scram_credentials_authenticate() {
    let node = start(&[]).await;
    let mut alice = Client::connect(node.sasl).await;
    assert_eq!(
        alice
            .plain("alice", "alice-secret")
            .await
            .unwrap()
            .error_code,
        0
    );
    let salt = b"a-salt-of-the-client".to_vec();
    let salted = kcoord_sasl::salted_password(
        kcoord_sasl::ScramMechanism::ScramSha256,
        "carol-secret",
        &salt,
        4096,
    );
    let upsert = AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: "carol".into(),
            mechanism: 1,
            iterations: 4096,
            salt: salt.into(),
            salted_password: salted.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let altered: AlterUserScramCredentialsResponse = alice
        .send(ApiKey::AlterUserScramCredentials, 0, &upsert)
        .await
        .unwrap();
    assert_eq!(altered.results[0].error_code, 0);

    let mut carol = Client::connect(node.sasl).await;
    let done = scram(
        &mut carol,
        ScramMechanism::ScramSha256,
        "carol",
        "carol-secret",
    )
    .await;
    assert_eq!(done.error_code, 0, "{:?}", done.error_message);
    assert!(String::from_utf8_lossy(&done.auth_bytes).starts_with("v="));
    assert_eq!(
        carol.describe_acls().await,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
        "carol is User:carol"
    );

    let mut wrong = Client::connect(node.sasl).await;
    let failed = scram(&mut wrong, ScramMechanism::ScramSha256, "carol", "not-hers").await;
    assert_eq!(
        failed.error_code,
        ErrorCode::SASL_AUTHENTICATION_FAILED.code()
    );
    assert_eq!(
        failed.error_message.as_deref(),
        Some("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    );
    assert!(wrong.is_closed().await);
    node.handle.shutdown().await;
}

#[test]
fn a_sasl_listener_needs_a_jaas_config_for_each_mechanism_and_refuses_gssapi() {
    let base = "node.id=1\nlisteners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
                listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n";
    let missing =
        kcoord_server::Config::parse("t", &format!("{base}sasl.enabled.mechanisms=PLAIN\n"))
            .unwrap_err()
            .to_string();
    assert!(
        missing.contains("listener.name.sasl_plaintext.plain.sasl.jaas.config"),
        "{missing}"
    );
    let gssapi = kcoord_server::Config::parse("t", base)
        .unwrap_err()
        .to_string();
    assert!(gssapi.contains("GSSAPI"), "{gssapi}");
    let ok = kcoord_server::Config::parse(
        "t",
        &format!("{base}sasl.enabled.mechanisms=PLAIN\n{PLAIN_JAAS}\n"),
    );
    assert!(ok.is_ok(), "{ok:?}");
}

#[tokio::test]
async fn an_unauthenticated_client_may_not_send_a_large_frame() {
    let node = start(&[]).await;
    let mut client = Client::connect(node.sasl).await;
    // A frame header announcing 1 MiB, more than sasl.server.max.receive.size (512 KiB).
    client
        .stream
        .write_all(&(1024 * 1024i32).to_be_bytes())
        .await
        .unwrap();
    assert!(client.is_closed().await);
    // Authenticated, the same size is only a request to read.
    let mut alice = Client::connect(node.sasl).await;
    assert_eq!(
        alice
            .plain("alice", "alice-secret")
            .await
            .unwrap()
            .error_code,
        0
    );
    let big = MetadataRequest {
        topics: Some(
            (0..40_000)
                .map(
                    |i| kcoord_wire::messages::metadata_request::MetadataRequestTopic {
                        name: Some(format!("topic-{i:08}")),
                        ..Default::default()
                    },
                )
                .collect(),
        ),
        ..Default::default()
    };
    let answered: Option<MetadataResponse> = alice.send(ApiKey::Metadata, 12, &big).await;
    assert!(
        answered.is_some(),
        "a large request after authentication is served"
    );
    node.handle.shutdown().await;
}

#[tokio::test]
async fn out_of_order_sasl_requests_close_the_connection_and_others_are_still_served() {
    let node = start(&[]).await;
    // SaslAuthenticate before any handshake.
    let mut early = Client::connect(node.sasl).await;
    assert!(early.authenticate(b"\0alice\0alice-secret").await.is_none());
    // A second handshake while the exchange runs.
    let mut twice = Client::connect(node.sasl).await;
    assert_eq!(twice.handshake("PLAIN").await.error_code, 0);
    let again: Option<SaslHandshakeResponse> = twice
        .send(
            ApiKey::SaslHandshake,
            1,
            &SaslHandshakeRequest {
                mechanism: "PLAIN".into(),
                ..Default::default()
            },
        )
        .await;
    assert!(again.is_none());
    // Two ApiVersions before the handshake.
    let mut versions = Client::connect(node.sasl).await;
    let request = ApiVersionsRequest {
        client_software_name: "sasl-test".into(),
        client_software_version: "1".into(),
        ..Default::default()
    };
    let first: Option<ApiVersionsResponse> = versions.send(ApiKey::ApiVersions, 3, &request).await;
    assert_eq!(first.map(|r| r.error_code), Some(0));
    let second: Option<ApiVersionsResponse> = versions.send(ApiKey::ApiVersions, 3, &request).await;
    assert!(second.is_none());
    // Meanwhile a well-behaved client gets in.
    let mut alice = Client::connect(node.sasl).await;
    assert_eq!(
        alice
            .plain("alice", "alice-secret")
            .await
            .unwrap()
            .error_code,
        0
    );
    assert_eq!(alice.describe_acls().await, 0);
    node.handle.shutdown().await;
}
