//! Several gateways in front of one cluster share the coordinator shards: either serves every
//! group (the other's by passing requests on), both show the upstream brokers spread over
//! them, a node's JSON API shows the other's groups, and a node that leaves hands its shards
//! over. A standalone kcoord plays the upstream cluster.

use std::time::{Duration, Instant};

use kcoord_server::runtime::shards::shard_index;
use kcoord_server::ServerHandle;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::{
    ListGroupsRequest, ListGroupsResponse, StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};

mod gateway_credentials;
mod gateway_support;

use gateway_support::streams::*;
use gateway_support::*;

/// The shards `gateway` serves, once the nodes' group has assigned them (30 s at most).
async fn owned_shards(gateway: &ServerHandle, shards: usize) -> Vec<usize> {
    let view = gateway.state().gateway.clone().expect("gateway mode");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ownership = view.ownership();
        if ownership.owners.is_some() {
            return (0..shards)
                .filter(|s| ownership.owns(*s) == Some(true))
                .collect();
        }
        assert!(Instant::now() < deadline, "no assignment of the shards");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the two gateways split `shards` shards between them, each serving some.
async fn split(a: &ServerHandle, b: &ServerHandle, shards: usize) -> (Vec<usize>, Vec<usize>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (mine, theirs) = (owned_shards(a, shards).await, owned_shards(b, shards).await);
        let mut all: Vec<usize> = mine.iter().chain(&theirs).copied().collect();
        all.sort_unstable();
        if !mine.is_empty() && !theirs.is_empty() && all == (0..shards).collect::<Vec<_>>() {
            return (mine, theirs);
        }
        assert!(
            Instant::now() < deadline,
            "the shards were never split: {mine:?} / {theirs:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `(the node serving the group, the other)` of two nodes (`a` serves `a_shards` of
/// `shards`), once both have the source in their catalog.
async fn owner_first(
    a: ServerHandle,
    b: ServerHandle,
    a_shards: &[usize],
    shards: usize,
) -> (ServerHandle, ServerHandle) {
    let (owner, other) = if a_shards.contains(&shard_index(GROUP, shards)) {
        (a, b)
    } else {
        (b, a)
    };
    for node in [&owner, &other] {
        while node.state().topics.snapshot().get(SOURCE).is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    (owner, other)
}

/// A streams group id whose shard (of `shards`) `node` serves.
async fn group_served_by(node: &ServerHandle, shards: usize) -> String {
    let owned = owned_shards(node, shards).await;
    (0..)
        .map(|i| format!("app-{i}"))
        .find(|g| owned.contains(&shard_index(g, shards)))
        .expect("some id lands on every shard")
}

/// The ports of the brokers in `node`'s Metadata answer.
async fn broker_ports(node: &ServerHandle) -> Vec<u16> {
    let metadata = metadata_of(node.broker_addr().unwrap()).await;
    metadata
        .brokers
        .iter()
        .map(|b| u16::try_from(b.port).unwrap())
        .collect()
}

#[tokio::test]
async fn two_gateways_share_the_shards_and_either_serves_every_group() {
    const SHARDS: usize = 4;
    let shards = format!("{FAST}offsets.topic.num.partitions={SHARDS}\n");
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let (a, a_port) = gateway_with(&upstream, &shards).await.unwrap();
    let (b, b_port) = gateway_with(&upstream, &shards).await.unwrap();
    let (a_shards, _) = split(&a, &b, SHARDS).await;
    // Both nodes show the upstream broker at the same node, so a client of either one learns
    // the other node when the broker is placed there.
    let shown_a = broker_ports(&a).await;
    assert_eq!(shown_a, broker_ports(&b).await);
    assert!(shown_a == [a_port] || shown_a == [b_port], "{shown_a:?}");
    let (owner, other) = owner_first(a, b, &a_shards, SHARDS).await;
    // A client of the node that does not serve the group is served by the one that does.
    let epoch = join(&other, "member-1").await;
    assert_eq!(commit(&other, "member-1", epoch, 5).await, 0);
    assert_eq!(committed(&owner).await, 5);
    assert_eq!(committed(&other).await, 5);
    assert_eq!(members(&other).await, ["member-1"]);
    assert!(holds_the_group(&owner));
    assert!(!holds_the_group(&other));
    // A batch naming groups of both nodes is answered whole by either.
    let second = group_served_by(&other, SHARDS).await;
    let joined = StreamsGroupHeartbeatRequest {
        group_id: second.clone(),
        ..join_request("member-2")
    };
    let joined: StreamsGroupHeartbeatResponse = until_served(
        owner.broker_addr().unwrap(),
        ApiKey::StreamsGroupHeartbeat,
        0,
        &joined,
        |r: &StreamsGroupHeartbeatResponse| r.error_code,
    )
    .await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    for node in [&owner, &other] {
        let request = StreamsGroupDescribeRequest {
            group_ids: vec![second.clone(), GROUP.into()],
            ..Default::default()
        };
        let described: StreamsGroupDescribeResponse = call(
            node.broker_addr().unwrap(),
            ApiKey::StreamsGroupDescribe,
            0,
            &request,
        )
        .await;
        let groups: Vec<(&str, i16, usize)> = described
            .groups
            .iter()
            .map(|g| (g.group_id.as_str(), g.error_code, g.members.len()))
            .collect();
        assert_eq!(groups, [(second.as_str(), 0, 1), (GROUP, 0, 1)]);
    }
    // Either node lists it, with the upstream cluster's groups.
    for node in [&owner, &other] {
        let listed: ListGroupsResponse = call(
            node.broker_addr().unwrap(),
            ApiKey::ListGroups,
            5,
            &ListGroupsRequest::default(),
        )
        .await;
        let streams: Vec<&str> = listed
            .groups
            .iter()
            .filter(|g| g.group_type == "streams")
            .map(|g| g.group_id.as_str())
            .collect();
        assert_eq!(streams.len(), 2, "{listed:?}");
        assert!(streams.contains(&GROUP), "{listed:?}");
    }

    // The owner leaves: the other node takes its shards, and the group with them.
    owner.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while owned_shards(&other, SHARDS).await.len() < SHARDS {
        assert!(Instant::now() < deadline, "the shards never moved");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(committed(&other).await, 5);
    assert_eq!(members(&other).await, ["member-1"]);
    assert!(holds_the_group(&other));
    other.shutdown().await;
    upstream.shutdown().await;
}

/// The JSON API of either node shows every group: the list has the other node's, and a
/// group's pages come from the node serving it.
#[tokio::test]
async fn either_nodes_json_api_shows_the_groups_the_other_serves() {
    const SHARDS: usize = 4;
    let config =
        format!("{FAST}offsets.topic.num.partitions={SHARDS}\nhttp.listener=127.0.0.1:0\n");
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let (a, _) = gateway_with(&upstream, &config).await.unwrap();
    let (b, _) = gateway_with(&upstream, &config).await.unwrap();
    let (a_shards, _) = split(&a, &b, SHARDS).await;
    let (owner, other) = owner_first(a, b, &a_shards, SHARDS).await;
    join(&owner, "member-1").await;
    assert!(!holds_the_group(&other));

    let at_other = other.http_addr().unwrap();
    let list: serde_json::Value =
        serde_json::from_str(&http_get(at_other, "/api/v1/groups").await).unwrap();
    let ids: Vec<&str> = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["groupId"].as_str())
        .collect();
    assert_eq!(ids, [GROUP], "{list}");
    let group: serde_json::Value =
        serde_json::from_str(&http_get(at_other, &format!("/api/v1/groups/{GROUP}")).await)
            .unwrap();
    assert_eq!(group["members"][0]["memberId"], "member-1", "{group}");
    // The timeline is the owner's own record of the group: read there, shown here.
    let timeline = http_get(at_other, &format!("/api/v1/groups/{GROUP}/timeline")).await;
    assert!(timeline.contains("member-1"), "{timeline}");
    owner.shutdown().await;
    other.shutdown().await;
    upstream.shutdown().await;
}

/// Both nodes' broker listeners take SASL_PLAINTEXT with PLAIN: `node` is the nodes' own user,
/// `alice` a client's.
const SASL_NODES: &str = "listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
     controller.listener.names=CONTROLLER\n\
     listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
     sasl.enabled.mechanisms=PLAIN\n\
     listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_node=\"node-secret\" user_alice=\"alice-secret\";\n\
     gateway.node.client.security.protocol=SASL_PLAINTEXT\n\
     gateway.node.client.sasl.mechanism=PLAIN\n\
     gateway.node.client.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"node\" password=\"node-secret\";\n\
     gateway.node.principals=User:node\n";

async fn sasl_gateway(upstream: &ServerHandle, shards: usize) -> ServerHandle {
    let text = format!(
        "node.id=7\n{SASL_NODES}{FAST}offsets.topic.num.partitions={shards}\n\
         upstream.bootstrap.servers={}\ngateway.broker.port.start={}\n",
        upstream.broker_addr().unwrap(),
        free_port() - 1,
    );
    kcoord_server::start(kcoord_server::Config::parse("gateway", &text).unwrap())
        .await
        .unwrap()
}

/// Alice's connection to `node`, with `client_id`.
async fn alice(node: &ServerHandle, client_id: &str) -> kcoord_client::Connection {
    let mut config = kcoord_client::ClientConfig::from_properties(
        client_id,
        [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required \
                 username=\"alice\" password=\"alice-secret\";",
            ),
        ],
    )
    .unwrap();
    config.client_id = client_id.to_owned();
    kcoord_client::Connection::connect(&node.broker_addr().unwrap().to_string(), config)
        .await
        .unwrap()
}

/// `member` joins through `conn`, retrying while the group's coordinator loads or moves.
async fn sasl_join(conn: &kcoord_client::Connection, member: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = conn.send(join_request(member), 0).await.unwrap();
        if answer.error_code == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "never joined: {answer:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Behind SASL listeners the nodes pass requests to each other as their own user
/// (`gateway.node.client.*`), and only that user's requests count as passed on: a client that
/// puts the marker in its client id is served as the client it is, from its own host.
#[tokio::test]
async fn nodes_behind_sasl_listeners_pass_requests_as_their_own_user_and_only_theirs_count() {
    use kcoord_wire::messages::StreamsGroupDescribeRequest;
    const SHARDS: usize = 4;
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let a = sasl_gateway(&upstream, SHARDS).await;
    let b = sasl_gateway(&upstream, SHARDS).await;
    let (a_shards, _) = split(&a, &b, SHARDS).await;
    let (owner, other) = owner_first(a, b, &a_shards, SHARDS).await;
    // Through the node that does not serve the group: passed on over SASL, as `node`.
    sasl_join(&alice(&other, "alice-app").await, "member-1").await;
    assert!(holds_the_group(&owner) && !holds_the_group(&other));
    // Straight to the owner, with the marker a node would put before a client's host and id.
    let spoofed = "\u{1}kcoord-node\u{1}/6.6.6.6\u{1}evil";
    sasl_join(&alice(&owner, spoofed).await, "member-2").await;

    let describe = StreamsGroupDescribeRequest {
        group_ids: vec![GROUP.into()],
        ..Default::default()
    };
    let described = alice(&owner, "alice-admin")
        .await
        .send(describe, 0)
        .await
        .unwrap();
    let mut seen: Vec<(String, String, String)> = described.groups[0]
        .members
        .iter()
        .map(|m| {
            let (id, client, host) = (&m.member_id, &m.client_id, &m.client_host);
            (id.clone(), client.clone(), host.clone())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("member-1".into(), "alice-app".into(), "/127.0.0.1".into()),
            ("member-2".into(), spoofed.into(), "/127.0.0.1".into()),
        ],
    );
    owner.shutdown().await;
    other.shutdown().await;
    upstream.shutdown().await;
}
