//! Issue 24: classic and KIP-848 consumer groups survive kill -9. A real `kcoord` process with
//! a log directory holds a classic group (its generation, leader, members and the leader's
//! assignment), a consumer group (its member, epoch and partitions) and their committed
//! offsets; it is killed with SIGKILL, restarted on the same directory, and everything it
//! acknowledged is back: the classic member's heartbeat at its generation is accepted, the
//! consumer member's at its epoch too.
mod common;

use std::time::Duration;

use bytes::Bytes;
use common::Daemon;
use kcoord_client::Connection;
use kcoord_wire::messages::join_group_request::JoinGroupRequestProtocol;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::sync_group_request::SyncGroupRequestAssignment;
use kcoord_wire::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest,
    DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest,
    SyncGroupRequest,
};
use kcoord_wire::ErrorCode;

const WAIT: Duration = Duration::from_secs(20);

fn settings(dir: &std::path::Path) -> Vec<String> {
    vec![
        format!("log.dirs={}", dir.display()),
        "group.initial.rebalance.delay.ms=0".into(),
        "offsets.topic.num.partitions=3".into(),
    ]
}

async fn connect(daemon: &Daemon) -> Connection {
    daemon.client_connection("durability-test", WAIT).await
}

/// Creates "in", three partitions.
async fn create_in(conn: &Connection) {
    let topic = CreateTopicsRequest {
        topics: vec![
            kcoord_wire::messages::create_topics_request::CreatableTopic {
                name: "in".into(),
                num_partitions: 3,
                replication_factor: -1,
                ..Default::default()
            },
        ],
        timeout_ms: 10_000,
        ..Default::default()
    };
    assert_eq!(
        conn.send(topic, 7).await.expect("CreateTopics").topics[0].error_code,
        0
    );
}

/// Retries `call` while the group's shard is still loading (after a start or a restart).
async fn loaded<T>(mut call: impl AsyncFnMut() -> (i16, T)) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (code, answer) = call().await;
        if code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            return answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the shard never loaded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A classic group of one member (v3 JoinGroup, then the leader's SyncGroup): its member id
/// and generation.
async fn classic_group(conn: &Connection) -> (String, i32) {
    let join = JoinGroupRequest {
        group_id: "classic".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"subscription"),
            ..Default::default()
        }],
        ..Default::default()
    };
    // The daemon answers before its shards have loaded: the first request may be told so.
    let joined = loaded(async || {
        let joined = conn.send(join.clone(), 3).await.expect("JoinGroup");
        (joined.error_code, joined)
    })
    .await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.error_code, 0);
    let sync = SyncGroupRequest {
        group_id: "classic".into(),
        generation_id: joined.generation_id,
        member_id: joined.member_id.clone(),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: joined.member_id.clone(),
            assignment: Bytes::from_static(b"partitions 0-2"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let synced = conn.send(sync, 3).await.expect("SyncGroup");
    assert_eq!(synced.error_code, 0);
    (joined.member_id, joined.generation_id)
}

/// A consumer group of one member holding every partition of "in": its epoch.
async fn consumer_group(conn: &Connection) -> i32 {
    let join = ConsumerGroupHeartbeatRequest {
        group_id: "consumer".into(),
        member_id: "c1".into(),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["in".into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let joined = loaded(async || {
        let joined = conn
            .send(join.clone(), 1)
            .await
            .expect("ConsumerGroupHeartbeat");
        (joined.error_code, joined)
    })
    .await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    let assigned = joined.assignment.expect("an assignment");
    assert_eq!(assigned.topic_partitions[0].partitions.len(), 3);
    joined.member_epoch
}

fn commit(group: &str, member: &str, generation: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: group.into(),
        member_id: member.into(),
        generation_id_or_member_epoch: generation,
        topics: vec![OffsetCommitRequestTopic {
            name: "in".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_and_consumer_groups_and_their_offsets_survive_kill_9() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let settings = settings(dir.path());
    let extra: Vec<&str> = settings.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&extra);
    let conn = connect(&daemon).await;
    create_in(&conn).await;
    let (member, generation) = classic_group(&conn).await;
    let epoch = consumer_group(&conn).await;
    let committed = conn
        .send(commit("classic", &member, generation, 42), 8)
        .await
        .expect("commit");
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    let committed = conn
        .send(commit("consumer", "c1", epoch, 7), 9)
        .await
        .expect("commit");
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    daemon.kill();

    let daemon = Daemon::start(&extra);
    let conn = connect(&daemon).await;
    let described = loaded(async || {
        let request = DescribeGroupsRequest {
            groups: vec!["classic".into()],
            ..Default::default()
        };
        let g = conn
            .send(request, 5)
            .await
            .expect("DescribeGroups")
            .groups
            .remove(0);
        (g.error_code, g)
    })
    .await;
    assert_eq!(
        (
            described.group_state.as_str(),
            described.protocol_data.as_str()
        ),
        ("Stable", "range")
    );
    assert_eq!(described.members.len(), 1);
    assert_eq!(described.members[0].member_id, member);
    assert_eq!(
        described.members[0].member_assignment,
        Bytes::from_static(b"partitions 0-2")
    );
    let heartbeat = HeartbeatRequest {
        group_id: "classic".into(),
        generation_id: generation,
        member_id: member.clone(),
        ..Default::default()
    };
    assert_eq!(
        conn.send(heartbeat, 4).await.expect("Heartbeat").error_code,
        0
    );

    let consumer = loaded(async || {
        let request = ConsumerGroupDescribeRequest {
            group_ids: vec!["consumer".into()],
            ..Default::default()
        };
        let g = conn
            .send(request, 1)
            .await
            .expect("ConsumerGroupDescribe")
            .groups
            .remove(0);
        (g.error_code, g)
    })
    .await;
    assert_eq!(consumer.members.len(), 1);
    assert_eq!(consumer.members[0].member_epoch, epoch);
    let steady = ConsumerGroupHeartbeatRequest {
        group_id: "consumer".into(),
        member_id: "c1".into(),
        member_epoch: epoch,
        ..Default::default()
    };
    let beat = conn.send(steady, 1).await.expect("ConsumerGroupHeartbeat");
    assert_eq!(
        (beat.error_code, beat.member_epoch),
        (0, epoch),
        "{:?}",
        beat.error_message
    );

    for (group, offset) in [("classic", 42), ("consumer", 7)] {
        let fetched = conn
            .send(
                kcoord_wire::messages::OffsetFetchRequest {
                    group_id: group.into(),
                    topics: Some(vec![
                        kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestTopic {
                            name: "in".into(),
                            partition_indexes: vec![0],
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                },
                7,
            )
            .await
            .expect("OffsetFetch");
        assert_eq!(
            fetched.topics[0].partitions[0].committed_offset, offset,
            "{group}"
        );
    }
    daemon.kill();
}

/// A classic member's `ConsumerProtocolSubscription` (v0) to "in".
fn subscription_to_in() -> Bytes {
    let mut b = vec![0, 0, 0, 0, 0, 1, 0, 2];
    b.extend(b"in");
    b.extend((-1i32).to_be_bytes());
    Bytes::from(b)
}

/// The online upgrade's consumer group (a classic member and a consumer-protocol one) survives
/// kill -9 with its classic member still speaking the classic protocol.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_group_with_a_classic_member_survives_kill_9() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let settings = settings(dir.path());
    let extra: Vec<&str> = settings.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&extra);
    let conn = connect(&daemon).await;
    create_in(&conn).await;
    let join = JoinGroupRequest {
        group_id: "mixed".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: subscription_to_in(),
            ..Default::default()
        }],
        ..Default::default()
    };
    // The daemon answers before its shards have loaded: the first request may be told so.
    let joined = loaded(async || {
        let joined = conn.send(join.clone(), 3).await.expect("JoinGroup");
        (joined.error_code, joined)
    })
    .await;
    assert_eq!(joined.error_code, 0);
    let all = std::collections::BTreeMap::from([("in".to_string(), (0..3).collect())]);
    let sync = SyncGroupRequest {
        group_id: "mixed".into(),
        generation_id: joined.generation_id,
        member_id: joined.member_id.clone(),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: joined.member_id.clone(),
            assignment: kcoord_coordinator::consumer_protocol::write_assignment(&all, 0),
            ..Default::default()
        }],
        ..Default::default()
    };
    assert_eq!(conn.send(sync, 3).await.expect("SyncGroup").error_code, 0);
    let upgrade = ConsumerGroupHeartbeatRequest {
        group_id: "mixed".into(),
        member_id: "c1".into(),
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["in".into()]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let upgraded = conn.send(upgrade, 1).await.expect("ConsumerGroupHeartbeat");
    assert_eq!(upgraded.error_code, 0, "{:?}", upgraded.error_message);
    daemon.kill();

    let daemon = Daemon::start(&extra);
    let conn = connect(&daemon).await;
    let described = loaded(async || {
        let request = ConsumerGroupDescribeRequest {
            group_ids: vec!["mixed".into()],
            ..Default::default()
        };
        let g = conn
            .send(request, 1)
            .await
            .expect("ConsumerGroupDescribe")
            .groups
            .remove(0);
        (g.error_code, g)
    })
    .await;
    let mut types: Vec<(String, i8)> = described
        .members
        .iter()
        .map(|m| (m.member_id.clone(), m.member_type))
        .collect();
    types.sort();
    let mut expected = vec![(joined.member_id.clone(), 0), ("c1".to_string(), 1)];
    expected.sort();
    assert_eq!(types, expected, "the classic member is still one");
    // Behind the target the upgrade computed, the classic member is told to rejoin (an unknown
    // member would hear UNKNOWN_MEMBER_ID).
    let heartbeat = HeartbeatRequest {
        group_id: "mixed".into(),
        generation_id: joined.generation_id,
        member_id: joined.member_id.clone(),
        ..Default::default()
    };
    assert_eq!(
        conn.send(heartbeat, 4).await.expect("Heartbeat").error_code,
        ErrorCode::REBALANCE_IN_PROGRESS.code()
    );
    daemon.kill();
}
