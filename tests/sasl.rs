//! SASL on a SASL_PLAINTEXT listener over the wire: PLAIN users from the listener's JAAS
//! config, SCRAM credentials created with AlterUserScramCredentials, Kafka's failures (one text
//! for an unknown user and a wrong password, the connection closed), nothing served before
//! authentication, and the authenticated principal is the one the authorizer sees.

use std::net::SocketAddr;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use hmac::{Hmac, KeyInit, Mac};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::*;
use kcoord_wire::{Decodable, Encodable, ErrorCode};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(20);
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
struct Client {
    stream: TcpStream,
    correlation: i32,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        Client {
            stream: TcpStream::connect(addr).await.unwrap(),
            correlation: 0,
        }
    }

    async fn write_frame(&mut self, payload: &[u8]) {
        let mut out = (payload.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(payload);
        self.stream.write_all(&out).await.unwrap();
    }

    /// One frame; `None` once the server closed the connection.
    async fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        tokio::time::timeout(WAIT, self.stream.read_exact(&mut size))
            .await
            .expect("timed out")
            .ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        tokio::time::timeout(WAIT, self.stream.read_exact(&mut body))
            .await
            .expect("timed out")
            .ok()?;
        Some(Bytes::from(body))
    }

    async fn send<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Option<Resp> {
        self.correlation += 1;
        let header = RequestHeader {
            request_api_key: api.key(),
            request_api_version: version,
            correlation_id: self.correlation,
            client_id: Some("sasl-test".into()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, api.request_header_version(version))
            .unwrap();
        request.encode(&mut buf, version).unwrap();
        self.write_frame(&buf).await;
        let mut body = self.read_frame().await?;
        let header =
            ResponseHeader::decode(&mut body, api.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation);
        Some(Resp::decode(&mut body, version).unwrap())
    }

    async fn handshake(&mut self, mechanism: &str) -> SaslHandshakeResponse {
        let request = SaslHandshakeRequest {
            mechanism: mechanism.into(),
            ..Default::default()
        };
        self.send(ApiKey::SaslHandshake, 1, &request)
            .await
            .expect("a SaslHandshake response")
    }

    async fn authenticate(&mut self, token: &[u8]) -> Option<SaslAuthenticateResponse> {
        let request = SaslAuthenticateRequest {
            auth_bytes: Bytes::copy_from_slice(token),
            ..Default::default()
        };
        self.send(ApiKey::SaslAuthenticate, 2, &request).await
    }

    async fn plain(&mut self, user: &str, password: &str) -> Option<SaslAuthenticateResponse> {
        assert_eq!(self.handshake("PLAIN").await.error_code, 0);
        self.authenticate(format!("\0{user}\0{password}").as_bytes())
            .await
    }

    async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(WAIT, self.stream.read(&mut byte))
                .await
                .expect("timed out"),
            Ok(0) | Err(_)
        )
    }

    /// DescribeAcls: NONE for a principal with DESCRIBE on the cluster, CAF otherwise.
    async fn describe_acls(&mut self) -> i16 {
        let request = DescribeAclsRequest {
            resource_type_filter: 1,
            resource_name_filter: None,
            pattern_type_filter: 1,
            principal_filter: None,
            host_filter: None,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        };
        let response: DescribeAclsResponse = self
            .send(ApiKey::DescribeAcls, 3, &request)
            .await
            .expect("a DescribeAcls response");
        response.error_code
    }
}

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

/// RFC 5802's client, just enough for SCRAM-SHA-256.
fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

async fn scram_sha256(client: &mut Client, user: &str, password: &str) -> SaslAuthenticateResponse {
    assert_eq!(client.handshake("SCRAM-SHA-256").await.error_code, 0);
    let client_nonce = "fyko+d2lbbFgONRv9qkxdawL";
    let first_bare = format!("n={user},r={client_nonce}");
    let server_first = client
        .authenticate(format!("n,,{first_bare}").as_bytes())
        .await
        .unwrap();
    assert_eq!(
        server_first.error_code, 0,
        "{:?}",
        server_first.error_message
    );
    let server_first = String::from_utf8(server_first.auth_bytes.to_vec()).unwrap();
    let field = |name: &str| {
        server_first
            .split(',')
            .find_map(|f| f.strip_prefix(name))
            .unwrap()
            .to_owned()
    };
    let (nonce, salt, iterations) = (field("r="), field("s="), field("i="));
    let salt = BASE64.decode(salt).unwrap();
    let salted = kcoord_sasl::salted_password(
        kcoord_sasl::ScramMechanism::ScramSha256,
        password,
        &salt,
        iterations.parse().unwrap(),
    );
    let client_key = hmac(&salted, b"Client Key");
    let stored_key = Sha256::digest(&client_key);
    let without_proof = format!("c=biws,r={nonce}");
    let auth_message = format!("{first_bare},{server_first},{without_proof}");
    let signature = hmac(&stored_key, auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(signature)
        .map(|(a, b)| a ^ b)
        .collect();
    let client_final = format!("{without_proof},p={}", BASE64.encode(proof));
    client.authenticate(client_final.as_bytes()).await.unwrap()
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
    let done = scram_sha256(&mut carol, "carol", "carol-secret").await;
    assert_eq!(done.error_code, 0, "{:?}", done.error_message);
    assert!(String::from_utf8_lossy(&done.auth_bytes).starts_with("v="));
    assert_eq!(
        carol.describe_acls().await,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
        "carol is User:carol"
    );

    let mut wrong = Client::connect(node.sasl).await;
    let failed = scram_sha256(&mut wrong, "carol", "not-hers").await;
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
