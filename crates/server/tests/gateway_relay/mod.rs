//! `gateway.authentication=upstream`: the cluster checks the credentials of the gateway's
//! clients, and what they send through the gateway reaches the cluster as them, so the
//! cluster's own ACLs decide. A kcoord with SASL (PLAIN and SCRAM) and an authorizer plays the
//! cluster; `kcoord` is a super user there, `alice` and `carol` may describe `orders`, `bob` may
//! not.

use std::time::{Duration, Instant};

use kcoord_client::{ClientConfig, ClientError, Connection};
use kcoord_server::{Config, ServerHandle};
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::create_acls_request::AclCreation;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::{
    AlterUserScramCredentialsRequest, CreateAclsRequest, CreateTopicsRequest, MetadataRequest,
};

use crate::gateway_support::free_port;

const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const SASL_LISTENER: &str = "listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
     controller.listener.names=CONTROLLER\n\
     listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
     sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n\
     offsets.topic.num.partitions=1\n";

/// Kafka client settings for `username` with `mechanism`, under `prefix`.
fn sasl_keys(prefix: &str, mechanism: &str, username: &str, password: &str) -> String {
    let module = if mechanism == "PLAIN" {
        PLAIN_MODULE
    } else {
        SCRAM_MODULE
    };
    format!(
        "{prefix}security.protocol=SASL_PLAINTEXT\n{prefix}sasl.mechanism={mechanism}\n\
         {prefix}sasl.jaas.config={module} required username=\"{username}\" password=\"{password}\";\n"
    )
}

async fn connect(
    node: &ServerHandle,
    mechanism: &str,
    username: &str,
    password: &str,
) -> Result<Connection, ClientError> {
    let keys = sasl_keys("", mechanism, username, password);
    let properties = keys.lines().filter_map(|l| l.split_once('='));
    let config = ClientConfig::from_properties("relay-test", properties).unwrap();
    Connection::connect(&node.broker_addr().unwrap().to_string(), config).await
}

/// The cluster: PLAIN users in its JAAS config, `carol` a SCRAM user, ACLs as above.
async fn cluster() -> ServerHandle {
    let text = format!(
        "node.id=1\n{SASL_LISTENER}group.initial.rebalance.delay.ms=0\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required \
         user_kcoord=\"kcoord-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";\n\
         listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_MODULE} required;\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:kcoord\n"
    );
    let cluster = kcoord_server::start(Config::parse("cluster", &text).unwrap())
        .await
        .unwrap();
    let admin = connect(&cluster, "PLAIN", "kcoord", "kcoord-secret")
        .await
        .unwrap();
    let topic = CreatableTopic {
        name: "orders".into(),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    };
    let create = CreateTopicsRequest {
        topics: vec![topic],
        timeout_ms: 5000,
        ..Default::default()
    };
    let created = admin.send(create, 7).await.unwrap();
    assert_eq!(created.topics[0].error_code, 0, "{created:?}");
    let (topic_type, literal, describe, allow) = (2, 3, 8, 3);
    let may_describe = |principal: &str| AclCreation {
        resource_type: topic_type,
        resource_name: "orders".into(),
        resource_pattern_type: literal,
        principal: principal.into(),
        host: "*".into(),
        operation: describe,
        permission_type: allow,
        ..Default::default()
    };
    let acls = CreateAclsRequest {
        creations: vec![may_describe("User:alice"), may_describe("User:carol")],
        ..Default::default()
    };
    let created = admin.send(acls, 3).await.unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );
    add_scram_user(&admin, "carol", "carol-secret").await;
    cluster
}

const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const READ: i8 = 3;
const DESCRIBE: i8 = 8;

/// An ACL allowing `principal` `operation` on the resource of `resource_type` named `name`.
fn acl(resource_type: i8, name: &str, principal: &str, operation: i8) -> AclCreation {
    let (literal, allow) = (3, 3);
    AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: literal,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission_type: allow,
        ..Default::default()
    }
}

fn may_describe_orders(principal: &str) -> AclCreation {
    acl(TOPIC, "orders", principal, DESCRIBE)
}

/// Creates `acls` through `admin`.
async fn allow(admin: &Connection, acls: &[AclCreation]) {
    let request = CreateAclsRequest {
        creations: acls.to_vec(),
        ..Default::default()
    };
    let created = admin.send(request, 3).await.unwrap();
    assert!(
        created.results.iter().all(|r| r.error_code == 0),
        "{created:?}"
    );
}

/// Gives `name` a SCRAM-SHA-256 credential for `password` through `admin`.
async fn add_scram_user(admin: &Connection, name: &str, password: &str) {
    let salt = format!("{name}-salt").into_bytes();
    let salted = kcoord_sasl::salted_password(
        kcoord_sasl::ScramMechanism::ScramSha256,
        password,
        &salt,
        4096,
    );
    let upsertion = ScramCredentialUpsertion {
        name: name.into(),
        mechanism: 1,
        iterations: 4096,
        salt: salt.into(),
        salted_password: salted.into(),
        ..Default::default()
    };
    let upsert = AlterUserScramCredentialsRequest {
        upsertions: vec![upsertion],
        ..Default::default()
    };
    let altered = admin.send(upsert, 0).await.unwrap();
    assert_eq!(altered.results[0].error_code, 0, "{altered:?}");
}

/// A gateway whose SASL listener relays every exchange to `cluster`; it reaches the cluster
/// as `kcoord` for its own needs.
async fn relaying_gateway(cluster: &ServerHandle) -> ServerHandle {
    relaying_gateway_with(cluster, "").await
}

/// [`relaying_gateway`] with more config lines.
async fn relaying_gateway_with(cluster: &ServerHandle, extra: &str) -> ServerHandle {
    let text = format!(
        "node.id=7\n{SASL_LISTENER}gateway.authentication=upstream\n\
         upstream.bootstrap.servers={}\ngateway.broker.port.start={}\n{}{}{extra}",
        cluster.broker_addr().unwrap(),
        free_port() - 1,
        sasl_keys("upstream.", "PLAIN", "kcoord", "kcoord-secret"),
        sasl_keys("gateway.node.client.", "PLAIN", "kcoord", "kcoord-secret"),
    );
    kcoord_server::start(Config::parse("gateway", &text).unwrap())
        .await
        .unwrap()
}

/// The error code of `orders` in a Metadata answer through `conn`.
async fn orders_code(conn: &Connection) -> i16 {
    let request = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("orders".into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let answer = conn.send(request, 12).await.unwrap();
    answer.topics[0].error_code
}

#[tokio::test]
async fn the_cluster_checks_each_clients_credentials_and_authorizes_its_requests_as_that_client() {
    const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
    let cluster = cluster().await;
    let gateway = relaying_gateway(&cluster).await;

    let alice = connect(&gateway, "PLAIN", "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(orders_code(&alice).await, 0, "alice may describe orders");
    let bob = connect(&gateway, "PLAIN", "bob", "bob-secret")
        .await
        .unwrap();
    assert_eq!(
        orders_code(&bob).await,
        TOPIC_AUTHORIZATION_FAILED,
        "bob is bob in the cluster"
    );
    let carol = connect(&gateway, "SCRAM-SHA-256", "carol", "carol-secret")
        .await
        .unwrap();
    assert_eq!(orders_code(&carol).await, 0, "SCRAM is relayed too");

    // The cluster's refusals reach the client as the cluster words them.
    let wrong = connect(&gateway, "PLAIN", "alice", "guess")
        .await
        .unwrap_err();
    assert!(
        wrong.to_string().contains("Invalid username or password"),
        "{wrong}"
    );
    let wrong = connect(&gateway, "SCRAM-SHA-256", "carol", "guess")
        .await
        .unwrap_err();
    assert!(
        wrong
            .to_string()
            .contains("invalid credentials with SASL mechanism SCRAM-SHA-256"),
        "{wrong}"
    );
    // kcoord has no users of its own: a user the cluster does not know is not let in.
    let stranger = connect(&gateway, "PLAIN", "mallory", "x")
        .await
        .unwrap_err();
    assert!(
        stranger
            .to_string()
            .contains("Invalid username or password"),
        "{stranger}"
    );
    gateway.shutdown().await;
    cluster.shutdown().await;
}

/// A mechanism this listener enables but the cluster does not is refused at the handshake,
/// naming only what both enable.
#[tokio::test]
async fn a_mechanism_the_cluster_does_not_enable_is_refused_with_the_ones_both_enable() {
    let text = format!(
        "node.id=1\n{}group.initial.rebalance.delay.ms=0\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required \
         user_kcoord=\"kcoord-secret\";\n",
        SASL_LISTENER.replace("PLAIN,SCRAM-SHA-256", "PLAIN"),
    );
    let cluster = kcoord_server::start(Config::parse("plain-cluster", &text).unwrap())
        .await
        .unwrap();
    let gateway = relaying_gateway(&cluster).await;
    let refused = connect(&gateway, "SCRAM-SHA-256", "carol", "carol-secret")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("not enabled in the server, enabled mechanisms are [PLAIN]"),
        "{refused}"
    );
    gateway.shutdown().await;
    cluster.shutdown().await;
}

/// The error code of `member`'s joining heartbeat to the streams group `app` (source `orders`)
/// through `conn`, once its coordinator is ready.
async fn join_code(conn: &Connection, member: &str) -> i16 {
    let mut request = crate::gateway_support::streams::join_request(member);
    request.group_id = "app".into();
    if let Some(topology) = request.topology.as_mut() {
        topology.subtopologies[0].source_topics = vec!["orders".into()];
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let code = conn.send(request.clone(), 0).await.unwrap().error_code;
        let loading = [14, 15, 16].contains(&code);
        if !loading || Instant::now() > deadline {
            return code;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const GROUP_AUTHORIZATION_FAILED: i16 = 30;

/// A gateway that authorizes with the cluster's ACLs; `kcoord` is a super user and the nodes'
/// own user.
const AUTHORIZING: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
     super.users=User:kcoord\ngateway.node.principals=User:kcoord\n\
     group.streams.initial.rebalance.delay.ms=0\n";

/// [`cluster`], where alice may also READ the group `app`.
async fn cluster_where_alice_reads_app() -> ServerHandle {
    let cluster = cluster().await;
    let admin = connect(&cluster, "PLAIN", "kcoord", "kcoord-secret")
        .await
        .unwrap();
    allow(&admin, &[acl(GROUP, "app", "User:alice", READ)]).await;
    cluster
}

/// With an authorizer, what the gateway serves itself is authorized with the cluster's ACLs,
/// read back from the cluster: a streams group heartbeat needs READ on the group and DESCRIBE
/// on its topics, as from Kafka, and an ACL created through the gateway (as `kafka-acls` would)
/// applies within seconds.
#[tokio::test]
async fn what_the_gateway_serves_itself_is_authorized_with_the_clusters_acls() {
    let cluster = cluster_where_alice_reads_app().await;
    let gateway = relaying_gateway_with(&cluster, AUTHORIZING).await;
    let alice = connect(&gateway, "PLAIN", "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(join_code(&alice, "alice-1").await, 0);
    let bob = connect(&gateway, "PLAIN", "bob", "bob-secret")
        .await
        .unwrap();
    assert_eq!(join_code(&bob, "bob-1").await, GROUP_AUTHORIZATION_FAILED);

    let admin = connect(&gateway, "PLAIN", "kcoord", "kcoord-secret")
        .await
        .unwrap();
    allow(
        &admin,
        &[
            acl(GROUP, "app", "User:bob", READ),
            may_describe_orders("User:bob"),
        ],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while join_code(&bob, "bob-1").await != 0 {
        assert!(Instant::now() < deadline, "bob's new ACLs never applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    gateway.shutdown().await;
    cluster.shutdown().await;
}

/// The gateway does not start when it cannot read the cluster's ACLs: its authorizer would
/// decide without them.
#[tokio::test]
async fn an_authorizing_gateway_does_not_start_without_the_clusters_acls() {
    let cluster = cluster().await;
    let text = format!(
        "node.id=7\n{SASL_LISTENER}gateway.authentication=upstream\n\
         upstream.bootstrap.servers={}\ngateway.broker.port.start={}\n{}{}\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n",
        cluster.broker_addr().unwrap(),
        free_port() - 1,
        // alice may not DESCRIBE the cluster, so she may not list its ACLs.
        sasl_keys("upstream.", "PLAIN", "alice", "alice-secret"),
        sasl_keys("gateway.node.client.", "PLAIN", "alice", "alice-secret"),
    );
    let Err(refused) = kcoord_server::start(Config::parse("gateway", &text).unwrap()).await else {
        panic!("started without the cluster's ACLs");
    };
    let refused = refused.to_string();
    assert!(
        refused.contains("cannot read the cluster's ACLs"),
        "{refused}"
    );
    assert!(
        refused.contains("CLUSTER_AUTHORIZATION_FAILED"),
        "{refused}"
    );
    cluster.shutdown().await;
}

/// Which of two nodes does not serve the coordinator shard (one shard: one owner), once the
/// nodes have shared the shards.
async fn the_one_not_serving<'a>(a: &'a ServerHandle, b: &'a ServerHandle) -> &'a ServerHandle {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let owns = |node: &ServerHandle| node.state().gateway.as_ref()?.ownership().owns(0);
        match (owns(a), owns(b)) {
            (Some(true), Some(false)) => return b,
            (Some(false), Some(true)) => return a,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the shard was never given to one node"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A heartbeat through the node that does not serve the group is passed on to the one that
/// does, and authorized there as the client who sent it, not as the node that passed it on.
#[tokio::test]
async fn a_request_passed_to_another_node_is_authorized_as_its_client() {
    let cluster = cluster_where_alice_reads_app().await;
    let a = relaying_gateway_with(&cluster, AUTHORIZING).await;
    let b = relaying_gateway_with(&cluster, AUTHORIZING).await;
    let other = the_one_not_serving(&a, &b).await;
    let alice = connect(other, "PLAIN", "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(join_code(&alice, "alice-1").await, 0);
    // Passed on as `kcoord`, a super user: decided as bob all the same.
    let bob = connect(other, "PLAIN", "bob", "bob-secret").await.unwrap();
    assert_eq!(join_code(&bob, "bob-1").await, GROUP_AUTHORIZATION_FAILED);
    a.shutdown().await;
    b.shutdown().await;
    cluster.shutdown().await;
}

/// Once the cluster checks the credentials, SCRAM users are the cluster's: `kafka-configs
/// --entity-type users` through the gateway lists and creates them there.
#[tokio::test]
async fn scram_users_through_a_relaying_gateway_are_the_clusters() {
    use kcoord_wire::messages::DescribeUserScramCredentialsRequest;
    let cluster = cluster().await;
    let gateway = relaying_gateway(&cluster).await;
    let admin = connect(&gateway, "PLAIN", "kcoord", "kcoord-secret")
        .await
        .unwrap();
    add_scram_user(&admin, "dave", "dave-secret").await;
    let dave = connect(&gateway, "SCRAM-SHA-256", "dave", "dave-secret").await;
    assert!(dave.is_ok(), "the cluster knows dave: {dave:?}");
    let every = DescribeUserScramCredentialsRequest {
        users: None,
        ..Default::default()
    };
    let described = admin.send(every, 0).await.unwrap();
    let mut users: Vec<&str> = described.results.iter().map(|r| r.user.as_str()).collect();
    users.sort_unstable();
    assert_eq!(users, ["carol", "dave"], "{described:?}");
    gateway.shutdown().await;
    cluster.shutdown().await;
}

/// Writes `token` as a raw frame (a SaslHandshake v0 exchange's) and reads the raw answer;
/// `None` when the connection closed instead.
async fn raw_exchange(stream: &mut tokio::net::TcpStream, token: &[u8]) -> Option<Vec<u8>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut frame = (token.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(token);
    stream.write_all(&frame).await.unwrap();
    let mut size = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut size));
    read.await.expect("an answer or a close in time").ok()?;
    let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut answer).await.ok()?;
    Some(answer)
}

/// A client that starts with SaslHandshake v0 (tokens as raw frames, no SaslAuthenticate) is
/// relayed too: the cluster sees SaslAuthenticate requests, the client raw frames, and a refusal
/// closes the connection without an answer, as Kafka ends a failed v0 exchange.
#[tokio::test]
async fn a_v0_handshake_is_relayed_with_raw_tokens() {
    use crate::gateway_support::{frame, read_response};
    use kcoord_wire::api::ApiKey;
    use kcoord_wire::messages::{MetadataResponse, SaslHandshakeRequest, SaslHandshakeResponse};
    use kcoord_wire::Decodable;
    use tokio::io::AsyncWriteExt;
    let cluster = cluster().await;
    let gateway = relaying_gateway(&cluster).await;
    let handshake = SaslHandshakeRequest {
        mechanism: "PLAIN".into(),
        ..Default::default()
    };
    let start = || async {
        let addr = gateway.broker_addr().unwrap();
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = frame(ApiKey::SaslHandshake, 0, 1, &handshake);
        stream.write_all(&request).await.unwrap();
        let (_, mut body) = read_response(&mut stream, ApiKey::SaslHandshake, 0)
            .await
            .unwrap();
        let answer = SaslHandshakeResponse::decode(&mut body, 0).unwrap();
        assert_eq!(answer.error_code, 0, "{answer:?}");
        stream
    };
    let mut alice = start().await;
    let final_token = raw_exchange(&mut alice, b"\0alice\0alice-secret").await;
    assert_eq!(final_token, Some(Vec::new()), "PLAIN's empty final token");
    let metadata = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("orders".into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    alice
        .write_all(&frame(ApiKey::Metadata, 12, 2, &metadata))
        .await
        .unwrap();
    let (_, mut body) = read_response(&mut alice, ApiKey::Metadata, 12)
        .await
        .unwrap();
    let answer = MetadataResponse::decode(&mut body, 12).unwrap();
    assert_eq!(answer.topics[0].error_code, 0, "alice may describe orders");

    let mut wrong = start().await;
    assert_eq!(raw_exchange(&mut wrong, b"\0alice\0guess").await, None);
    gateway.shutdown().await;
    cluster.shutdown().await;
}
