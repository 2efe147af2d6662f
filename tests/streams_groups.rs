//! Streams groups over TCP (KIP-1071): members heartbeating through `kcoord_client`
//! connections to the daemon started in-process, and the group RPCs around them.

mod streams_support;

use std::time::Duration;

use kcoord_client::{Client, ClientConfig};
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, OffsetCommitRequest,
    OffsetFetchRequest, StreamsGroupDescribeRequest,
};
use streams_support::*;
use uuid::Uuid;

/// Assign at once: no initial delay, no assignment interval.
const FAST: &[&str] = &[
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.assignment.interval.ms=0",
];

#[tokio::test]
async fn three_members_share_the_tasks_then_the_group_is_described_listed_and_deleted() {
    let node = start(FAST).await;
    let admin = node.connect().await;
    create_topics(&admin, &[("clicks", 6)]).await;

    // Members find their coordinator as a Streams client would.
    let client = Client::connect(&node.broker, ClientConfig::new("streams-e2e"))
        .await
        .unwrap();
    let coordinator = client.find_coordinator("app").await.unwrap();
    assert_eq!(
        (coordinator.node_id, coordinator.address()),
        (1, node.broker.clone())
    );
    let mut members = Vec::new();
    for id in ["m1", "m2", "m3"] {
        members.push(Member::new(
            connect(&coordinator.address()).await,
            "app",
            id,
            simple_topology("clicks"),
        ));
    }
    converge(&mut members, &admin).await;
    assert_complete_and_disjoint(&members, "0", 6);
    assert!(
        members.iter().all(|m| m.active_count() == 2),
        "an even share each"
    );
    let epoch = members[0].epoch;
    assert!(members.iter().all(|m| m.epoch == epoch));

    // StreamsGroupDescribe.
    let described = admin
        .send(
            StreamsGroupDescribeRequest {
                group_ids: vec!["app".into(), "ghost".into()],
                include_authorized_operations: true,
                include_topology_description: true,
                ..Default::default()
            },
            1,
        )
        .await
        .unwrap();
    let g = &described.groups[0];
    assert_eq!(
        (
            g.error_code,
            g.group_state.as_str(),
            g.group_epoch,
            g.assignment_epoch
        ),
        (0, "Stable", epoch, epoch)
    );
    assert_eq!(g.members.len(), 3);
    assert_eq!(g.authorized_operations, 0xd48);
    assert_eq!(g.topology_description_status, 1);
    let topology = g.topology.as_ref().unwrap();
    assert_eq!(
        topology.subtopologies.as_ref().unwrap()[0].source_topics,
        vec!["clicks".to_string()]
    );
    assert_eq!(described.groups[1].error_code, 69);

    // ListGroups reports it as a streams group.
    let listed = admin.send(ListGroupsRequest::default(), 5).await.unwrap();
    let rows: Vec<(&str, &str, &str, &str)> = listed
        .groups
        .iter()
        .map(|g| {
            (
                g.group_id.as_str(),
                g.protocol_type.as_str(),
                g.group_state.as_str(),
                g.group_type.as_str(),
            )
        })
        .collect();
    assert_eq!(rows, vec![("app", "streams", "Stable", "streams")]);
    let filtered = admin
        .send(
            ListGroupsRequest {
                states_filter: vec!["stable".into()],
                types_filter: vec!["STREAMS".into()],
                ..Default::default()
            },
            5,
        )
        .await
        .unwrap();
    assert_eq!(filtered.groups.len(), 1);

    // DescribeGroups: not a classic group.
    let classic = admin
        .send(
            DescribeGroupsRequest {
                groups: vec!["app".into()],
                ..Default::default()
            },
            6,
        )
        .await
        .unwrap();
    let c = &classic.groups[0];
    assert_eq!(
        (
            c.error_code,
            c.error_message.as_deref(),
            c.group_state.as_str()
        ),
        (69, Some("Group app is not a classic group."), "Dead")
    );
    let classic = admin
        .send(
            DescribeGroupsRequest {
                groups: vec!["app".into()],
                ..Default::default()
            },
            5,
        )
        .await
        .unwrap();
    assert_eq!(
        (
            classic.groups[0].error_code,
            classic.groups[0].group_state.as_str()
        ),
        (0, "Dead")
    );

    // DeleteGroups: refused while members remain, done once they left.
    let delete = || DeleteGroupsRequest {
        groups_names: vec!["app".into()],
        ..Default::default()
    };
    let refused = admin.send(delete(), 3).await.unwrap();
    assert_eq!(
        (
            refused.results[0].error_code,
            refused.results[0].error_message.as_deref()
        ),
        (68, None)
    );
    for m in members.iter_mut() {
        assert_eq!(m.leave().await.member_epoch, -1);
    }
    assert_eq!(describe(&admin, "app").await.groups[0].group_state, "Empty");
    let deleted = admin.send(delete(), 2).await.unwrap();
    assert_eq!(deleted.results[0].error_code, 0);
    assert!(admin
        .send(ListGroupsRequest::default(), 5)
        .await
        .unwrap()
        .groups
        .is_empty());
    let gone = admin.send(delete(), 3).await.unwrap();
    assert_eq!(gone.results[0].error_code, 69);
    node.stop().await;
}

#[tokio::test]
async fn internal_topics_are_created_with_the_computed_partition_counts() {
    let node = start(FAST).await;
    let admin = node.connect().await;
    create_topics(&admin, &[("orders", 4)]).await;
    let topology = repartitioning_topology(
        "orders",
        "app-by-customer-repartition",
        "app-totals-changelog",
    );
    let mut member = Member::new(node.connect().await, "app", "m1", topology);
    member.heartbeat().await;
    assert!(
        member.statuses().iter().any(|(code, detail)| *code == 3 && detail.starts_with("Internal topics are missing: ")),
        "{:?}",
        member.statuses()
    );
    // The coordinator asked for them; heartbeat until they exist and the tasks are assigned.
    let deadline = tokio::time::Instant::now() + WAIT;
    while member.active_count() < 8 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not assigned: {:?}",
            member.statuses()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        member.heartbeat().await;
    }
    assert!(member.statuses().iter().all(|(code, _)| *code != 3));
    // Repartition topic: the partitions of the sub-topology writing it; changelog: its
    // sub-topology's task count.
    let meta = metadata(
        &admin,
        &["app-by-customer-repartition", "app-totals-changelog"],
    )
    .await;
    for t in &meta.topics {
        assert_eq!(
            (t.error_code, t.partitions.len(), t.is_internal),
            (0, 4, false),
            "{:?}",
            t.name
        );
    }
    assert_complete_and_disjoint(std::slice::from_ref(&member), "1", 4);
    node.stop().await;
}

fn commit_request(
    group: &str,
    member: &str,
    epoch: i32,
    topic: &str,
    partition: i32,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: group.into(),
        member_id: member.into(),
        generation_id_or_member_epoch: epoch,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: partition,
                committed_offset: offset,
                committed_metadata: Some("checkpoint".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test]
async fn offsets_follow_the_streams_member_epoch_rules() {
    let node = start(FAST).await;
    let admin = node.connect().await;
    let created = create_topics(&admin, &[("events", 2)]).await;
    let topic_id = created.topics[0].topic_id;
    let mut members = vec![Member::new(
        node.connect().await,
        "app",
        "m1",
        simple_topology("events"),
    )];
    converge(&mut members, &admin).await;
    let m = &members[0];
    let code =
        |r: kcoord_wire::messages::OffsetCommitResponse| r.topics[0].partitions[0].error_code;

    assert_eq!(
        code(
            admin
                .send(commit_request("app", "m1", m.epoch, "events", 0, 42), 9)
                .await
                .unwrap()
        ),
        0
    );
    // Streams members must use v9+; a newer epoch is stale; strangers are unknown.
    assert_eq!(
        code(
            admin
                .send(commit_request("app", "m1", m.epoch, "events", 0, 43), 8)
                .await
                .unwrap()
        ),
        35
    );
    assert_eq!(
        code(
            admin
                .send(commit_request("app", "m1", m.epoch + 1, "events", 0, 43), 9)
                .await
                .unwrap()
        ),
        113
    );
    assert_eq!(
        code(
            admin
                .send(commit_request("app", "nobody", m.epoch, "events", 0, 43), 9)
                .await
                .unwrap()
        ),
        25
    );
    // Unknown topics and partitions are refused before the group is consulted.
    assert_eq!(
        code(
            admin
                .send(commit_request("app", "m1", m.epoch, "events", 7, 1), 9)
                .await
                .unwrap()
        ),
        3
    );
    assert_eq!(
        code(
            admin
                .send(commit_request("app", "m1", m.epoch, "nope", 0, 1), 9)
                .await
                .unwrap()
        ),
        3
    );

    // OffsetFetch by the member (v9: member id and epoch), by an admin, and by topic id (v10).
    let fetch = |member: Option<&str>, epoch: i32, topics: Vec<OffsetFetchRequestTopics>| {
        OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: "app".into(),
                member_id: member.map(str::to_owned),
                member_epoch: epoch,
                topics: Some(topics),
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    let by_name = || {
        vec![OffsetFetchRequestTopics {
            name: "events".into(),
            partition_indexes: vec![0, 1],
            ..Default::default()
        }]
    };
    let fetched = admin
        .send(fetch(Some("m1"), m.epoch, by_name()), 9)
        .await
        .unwrap();
    let g = &fetched.groups[0];
    assert_eq!(g.error_code, 0);
    let offsets: Vec<(i32, i64, Option<&str>)> = g.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset, p.metadata.as_deref()))
        .collect();
    assert_eq!(
        offsets,
        vec![(0, 42, Some("checkpoint")), (1, -1, Some(""))]
    );
    let stale = admin
        .send(fetch(Some("m1"), m.epoch + 5, by_name()), 9)
        .await
        .unwrap();
    assert_eq!(stale.groups[0].error_code, 113);
    let unknown = admin
        .send(fetch(Some("zz"), m.epoch, by_name()), 9)
        .await
        .unwrap();
    assert_eq!(unknown.groups[0].error_code, 25);
    let as_admin = admin.send(fetch(None, -1, by_name()), 8).await.unwrap();
    assert_eq!(
        as_admin.groups[0].topics[0].partitions[0].committed_offset,
        42
    );
    let by_id = vec![
        OffsetFetchRequestTopics {
            topic_id,
            partition_indexes: vec![0],
            ..Default::default()
        },
        OffsetFetchRequestTopics {
            topic_id: Uuid::from_u128(5),
            partition_indexes: vec![0],
            ..Default::default()
        },
    ];
    let fetched = admin.send(fetch(None, -1, by_id), 10).await.unwrap();
    let t = &fetched.groups[0].topics;
    assert_eq!(
        (t[0].topic_id, t[0].partitions[0].committed_offset),
        (topic_id, 42)
    );
    assert_eq!(t[1].partitions[0].error_code, 100);
    // The single-group layout (v1-7).
    let old = OffsetFetchRequest {
        group_id: "app".into(),
        topics: None,
        ..Default::default()
    };
    let fetched = admin.send(old, 7).await.unwrap();
    assert_eq!(
        (
            fetched.error_code,
            fetched.topics[0].partitions[0].committed_offset
        ),
        (0, 42)
    );
    node.stop().await;
}

#[tokio::test]
async fn a_member_that_stops_heartbeating_is_expired_and_its_tasks_move() {
    let node = start(&[
        "group.streams.initial.rebalance.delay.ms=0",
        "group.streams.assignment.interval.ms=0",
        "group.streams.min.session.timeout.ms=600",
        "group.streams.session.timeout.ms=600",
        "group.streams.min.heartbeat.interval.ms=100",
        "group.streams.heartbeat.interval.ms=100",
    ])
    .await;
    let admin = node.connect().await;
    create_topics(&admin, &[("input", 4)]).await;
    let mut members = vec![
        Member::new(
            node.connect().await,
            "app",
            "stays",
            simple_topology("input"),
        ),
        Member::new(
            node.connect().await,
            "app",
            "dies",
            simple_topology("input"),
        ),
    ];
    converge(&mut members, &admin).await;
    assert_eq!(
        (members[0].active_count(), members[1].active_count()),
        (2, 2)
    );
    assert_eq!(members[0].last.as_ref().unwrap().heartbeat_interval_ms, 100);
    let dead = members.pop().unwrap();
    drop(dead);

    // The survivor keeps heartbeating; the session timer fences the other and its tasks move.
    let deadline = tokio::time::Instant::now() + WAIT;
    let survivor = &mut members[0];
    while survivor.active_count() < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tasks did not move"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        survivor.heartbeat().await;
    }
    assert_complete_and_disjoint(std::slice::from_ref(&*survivor), "0", 4);
    let g = &describe(&admin, "app").await.groups[0];
    assert_eq!(
        g.members
            .iter()
            .map(|m| m.member_id.as_str())
            .collect::<Vec<_>>(),
        vec!["stays"]
    );
    node.stop().await;
}

#[tokio::test]
async fn heartbeat_errors_arrive_in_the_response() {
    let node = start(FAST).await;
    let conn = node.connect().await;
    let member = Member::new(
        conn.clone(),
        "app",
        "m1",
        simple_topology("__consumer_offsets"),
    );
    for version in 0..=2 {
        let response = conn.send(member.request(), version).await.unwrap();
        assert_eq!(response.error_code, 130);
        assert_eq!(
            response.error_message.as_deref(),
            Some("Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited.")
        );
    }
    // A heartbeat for a group that does not exist.
    let mut lost = Member::new(conn.clone(), "nope", "m1", simple_topology("t"));
    lost.epoch = 5;
    let response = conn.send(lost.request(), 1).await.unwrap();
    assert_eq!(response.error_code, 69);
    // Missing source topics: the member joins and is told, with no tasks.
    let mut waiting = Member::new(conn.clone(), "app", "m1", simple_topology("later"));
    waiting.heartbeat().await;
    assert!(waiting
        .statuses()
        .iter()
        .any(|(code, detail)| *code == 1 && detail == "Source topics later are missing."));
    assert_eq!(waiting.active_count(), 0);
    // Once the topic exists, the next heartbeat gets the tasks.
    create_topics(&conn, &[("later", 2)]).await;
    waiting.heartbeat().await;
    assert_eq!(waiting.active_count(), 2);
    node.stop().await;
}

#[tokio::test]
async fn the_initial_rebalance_delay_is_ended_by_the_shard_timer() {
    let node = start(&[
        "group.streams.initial.rebalance.delay.ms=300",
        "group.streams.assignment.interval.ms=0",
    ])
    .await;
    let admin = node.connect().await;
    create_topics(&admin, &[("input", 3)]).await;
    let mut member = Member::new(node.connect().await, "app", "m1", simple_topology("input"));
    let joined = member.heartbeat().await;
    assert!(
        member.statuses().iter().any(|(code, _)| *code == 5),
        "{:?}",
        member.statuses()
    );
    assert_eq!(member.active_count(), 0);
    assert_eq!(
        describe(&admin, "app").await.groups[0].group_state,
        "Assigning"
    );
    // No heartbeat in between: the shard's own timer computes the assignment when the delay
    // ends, and the next heartbeat picks it up.
    // The join left the member at the initial assignment epoch 1 with the group at epoch 2
    // (Kafka 4.4); the timer brings the assignment up to the group epoch.
    assert_eq!(joined.member_epoch, 1);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let group = describe(&admin, "app").await.groups.remove(0);
        if group.assignment_epoch >= group.group_epoch {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the delayed assignment was never computed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    member.heartbeat().await;
    assert_eq!(member.active_count(), 3);
    assert!(member.statuses().iter().all(|(code, _)| *code != 5));
    node.stop().await;
}
