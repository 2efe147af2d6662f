//! `authorizer.class.name`: Kafka's StandardAuthorizer named in the config decides every
//! request (here with no ACLs yet: super users and `allow.everyone.if.no.acl.found`); without
//! it everything is allowed.

mod streams_support;

use kcoord_wire::messages::{CreateTopicsRequest, StreamsGroupHeartbeatRequest};
use kcoord_wire::ErrorCode;
use streams_support::{creatable, simple_topology, start, Node};

const STANDARD: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// CreateTopics of one topic: its error code.
async fn create(node: &Node, name: &str) -> i16 {
    let request = CreateTopicsRequest {
        topics: vec![creatable(name, 1, -1)],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let response = node
        .connect()
        .await
        .send(request, 7)
        .await
        .expect("CreateTopics");
    response.topics[0].error_code
}

/// A member joining group `g`: the heartbeat's error code.
async fn join(node: &Node, topic: &str) -> i16 {
    let request = StreamsGroupHeartbeatRequest {
        group_id: "g".into(),
        member_id: "m".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(simple_topology(topic)),
        process_id: Some("p".into()),
        active_tasks: Some(Vec::new()),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        ..Default::default()
    };
    let response = node
        .connect()
        .await
        .send(request, 1)
        .await
        .expect("StreamsGroupHeartbeat");
    response.error_code
}

#[tokio::test]
async fn with_the_standard_authorizer_and_no_acls_an_anonymous_client_is_denied() {
    let node = start(&[STANDARD]).await;
    // READ on the group is the heartbeat's first check. (CreateTopics does not ask the
    // authorizer yet: the authorization of every RPC is the next step of issue 14.)
    assert_eq!(
        join(&node, "t").await,
        ErrorCode::GROUP_AUTHORIZATION_FAILED.code()
    );
    node.stop().await;
}

#[tokio::test]
async fn a_super_user_is_allowed_everything() {
    let node = start(&[STANDARD, "super.users=User:admin;User:ANONYMOUS"]).await;
    assert_eq!(create(&node, "t").await, 0);
    assert_eq!(join(&node, "t").await, 0);
    node.stop().await;
}

#[tokio::test]
async fn allow_everyone_if_no_acl_found_allows_what_no_acl_covers() {
    let node = start(&[STANDARD, "allow.everyone.if.no.acl.found=true"]).await;
    assert_eq!(create(&node, "t").await, 0);
    assert_eq!(join(&node, "t").await, 0);
    node.stop().await;
}

#[tokio::test]
async fn without_an_authorizer_everything_is_allowed() {
    let node = start(&[]).await;
    assert_eq!(create(&node, "t").await, 0);
    assert_eq!(join(&node, "t").await, 0);
    node.stop().await;
}
