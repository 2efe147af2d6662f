//! Issue 13, item 8: the catalog and the groups cannot grow without bound. Past
//! `controller.max.topics` / `controller.max.partitions` a creation is refused with
//! POLICY_VIOLATION, past `group.coordinator.max.groups` a new group with
//! GROUP_MAX_SIZE_REACHED (config/README.md says why those errors).

mod streams_support;

use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DeleteGroupsRequest, DeleteGroupsResponse,
    OffsetCommitRequest, OffsetCommitResponse, StreamsGroupHeartbeatResponse,
};
use kcoord_wire::ErrorCode;
use streams_support::{creatable, create_topics, simple_topology, start, Member};

async fn create(conn: &kcoord_client::Connection, topics: &[(&str, i32)]) -> Vec<(String, i16)> {
    let request = CreateTopicsRequest {
        topics: topics.iter().map(|(n, p)| creatable(n, *p, -1)).collect(),
        timeout_ms: 10_000,
        ..Default::default()
    };
    let response: CreateTopicsResponse = conn.send(request, 7).await.expect("CreateTopics");
    response
        .topics
        .into_iter()
        .map(|t| (t.name, t.error_code))
        .collect()
}

#[tokio::test]
async fn topics_and_partitions_past_the_limits_are_refused_with_policy_violation() {
    let node = start(&["controller.max.topics=3", "controller.max.partitions=8"]).await;
    let conn = node.connect().await;
    let policy = ErrorCode::POLICY_VIOLATION.code();
    create_topics(&conn, &[("a", 4), ("b", 3)]).await;
    // 1 partition is left: a 2-partition topic is refused, a 1-partition one is not.
    assert_eq!(
        create(&conn, &[("c", 2), ("d", 1)]).await,
        vec![("c".into(), policy), ("d".into(), 0)]
    );
    // Three topics and eight partitions: nothing more.
    assert_eq!(create(&conn, &[("e", 1)]).await, vec![("e".into(), policy)]);
    node.stop().await;
}

async fn join(conn: kcoord_client::Connection, group: &str) -> StreamsGroupHeartbeatResponse {
    let m = Member::new(conn, group, "m1", simple_topology("t"));
    m.conn
        .send(m.request(), 1)
        .await
        .expect("StreamsGroupHeartbeat")
}

async fn commit(conn: &kcoord_client::Connection, group: &str) -> i16 {
    let request = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let response: OffsetCommitResponse = conn.send(request, 9).await.expect("OffsetCommit");
    response.topics[0].partitions[0].error_code
}

/// Groups on different shards count together: with a limit of 2, a streams group and an
/// offsets-only group leave no room for a third, wherever it hashes; deleting one makes room.
#[tokio::test]
async fn new_groups_past_the_limit_are_refused_across_shards() {
    // Three shards (the harness's default); the groups below hash to different ones.
    let node = start(&[
        "group.coordinator.max.groups=2",
        "group.streams.initial.rebalance.delay.ms=0",
    ])
    .await;
    let conn = node.connect().await;
    create_topics(&conn, &[("t", 1)]).await;
    let shard = |g: &str| kcoord_server::runtime::shards::shard_index(g, 3);
    assert_ne!(shard("app"), shard("offsets-only"));

    assert_eq!(join(node.connect().await, "app").await.error_code, 0);
    assert_eq!(commit(&conn, "offsets-only").await, 0);
    for g in ["third", "fourth", "fifth"] {
        let refused = join(node.connect().await, g).await;
        assert_eq!(
            refused.error_code,
            ErrorCode::GROUP_MAX_SIZE_REACHED.code(),
            "{g}"
        );
        assert!(refused
            .error_message
            .as_deref()
            .is_some_and(|m| m.contains("group.coordinator.max.groups")));
        assert_eq!(
            commit(&conn, g).await,
            ErrorCode::GROUP_MAX_SIZE_REACHED.code(),
            "{g}"
        );
    }
    // The existing groups are served as before.
    assert_eq!(commit(&conn, "offsets-only").await, 0);
    let mut second = Member::new(node.connect().await, "app", "m2", simple_topology("t"));
    assert_eq!(second.heartbeat().await.error_code, 0);

    let deleted: DeleteGroupsResponse = conn
        .send(
            DeleteGroupsRequest {
                groups_names: vec!["offsets-only".into()],
                ..Default::default()
            },
            2,
        )
        .await
        .expect("DeleteGroups");
    assert_eq!(deleted.results[0].error_code, 0);
    assert_eq!(join(node.connect().await, "third").await.error_code, 0);
    node.stop().await;
}
