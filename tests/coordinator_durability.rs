//! Issue 12 end to end, in process: with a log directory, a restarted daemon has every streams
//! group (epochs, members, target and current assignments, TopologyDescriptionId) and every
//! committed offset it acknowledged, and members that come back keep their tasks without a
//! rebalance.
mod streams_support;

use std::time::Duration;

use kcoord_client::Connection;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::messages::{
    OffsetCommitRequest, OffsetFetchRequest, StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
};
use kcoord_wire::ErrorCode;
use streams_support::{converge, create_topics, simple_topology, start, Member, Node, WAIT};
use uuid::Uuid;

const FAST: &[&str] = &[
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.assignment.interval.ms=0",
    "group.streams.topology.description.class=memory",
];

async fn start_in(dir: &std::path::Path) -> Node {
    let log_dirs = format!("log.dirs={}", dir.display());
    let mut extra: Vec<&str> = FAST.to_vec();
    extra.push(&log_dirs);
    start(&extra).await
}

/// StreamsGroupDescribe, retried while the group's shard is still loading.
async fn describe_loaded(conn: &Connection, group: &str) -> DescribedGroup {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let request = StreamsGroupDescribeRequest {
            group_ids: vec![group.into()],
            ..Default::default()
        };
        let response = conn.send(request, 0).await.expect("StreamsGroupDescribe");
        let group = response.groups.into_iter().next().expect("one group");
        if group.error_code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            assert_eq!(group.error_code, 0, "{:?}", group.error_message);
            return group;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the shard never loaded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The TopologyDescriptionId a v2 heartbeat of `member` is asked to push (the memory plugin
/// asks once for each id it does not hold); adopts the epoch the answer carries.
async fn pushed_id(member: &mut Member, conn: &Connection) -> Option<Uuid> {
    let request: StreamsGroupHeartbeatRequest = member.request();
    let response = conn.send(request, 2).await.expect("heartbeat v2");
    assert_eq!(response.error_code, 0, "{:?}", response.error_message);
    member.epoch = response.member_epoch;
    response.topology_description_id
}

async fn commit(conn: &Connection, group: &str, member: &Member, partition: i32, offset: i64) {
    let request = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: member.epoch,
        member_id: member.id.clone(),
        topics: vec![OffsetCommitRequestTopic {
            name: "in".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: partition,
                committed_offset: offset,
                committed_metadata: Some(format!("p{partition}")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = conn.send(request, 9).await.expect("OffsetCommit");
    let code = response.topics[0].partitions[0].error_code;
    assert_eq!(code, 0, "commit of partition {partition}");
}

async fn committed(conn: &Connection, group: &str) -> Vec<(i32, i64, Option<String>)> {
    let request = OffsetFetchRequest {
        groups: vec![OffsetFetchRequestGroup {
            group_id: group.into(),
            topics: Some(vec![OffsetFetchRequestTopics {
                name: "in".into(),
                partition_indexes: (0..4).collect(),
                ..Default::default()
            }]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = conn.send(request, 9).await.expect("OffsetFetch");
    let group = &response.groups[0];
    assert_eq!(group.error_code, 0);
    group.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset, p.metadata.clone()))
        .collect()
}

/// Members and their assignments as described, ordered by member id.
fn members_of(group: &DescribedGroup) -> Vec<(String, i32, String)> {
    let mut members: Vec<(String, i32, String)> = group
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.clone(),
                m.member_epoch,
                format!("{:?} / {:?}", m.assignment, m.target_assignment),
            )
        })
        .collect();
    members.sort();
    members
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_restores_groups_members_assignments_offsets_and_members_keep_their_tasks() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let node = start_in(dir.path()).await;
    let admin = node.connect().await;
    create_topics(&admin, &[("in", 4)]).await;
    let mut members = vec![
        Member::new(node.connect().await, "app", "m1", simple_topology("in")),
        Member::new(node.connect().await, "app", "m2", simple_topology("in")),
    ];
    converge(&mut members, &admin).await;
    for (i, p) in (0..4).enumerate() {
        let member = &members[i % 2];
        commit(&admin, "app", member, p, 100 + i64::from(p)).await;
    }
    let before = describe_loaded(&admin, "app").await;
    let offsets_before = committed(&admin, "app").await;
    assert_eq!(offsets_before.len(), 4);
    node.stop().await;

    let node = start_in(dir.path()).await;
    let admin = node.connect().await;
    let after = describe_loaded(&admin, "app").await;
    assert_eq!(
        (
            after.group_epoch,
            after.assignment_epoch,
            &after.group_state
        ),
        (
            before.group_epoch,
            before.assignment_epoch,
            &before.group_state
        )
    );
    assert_eq!(after.topology, before.topology);
    assert_eq!(members_of(&after), members_of(&before));
    assert_eq!(committed(&admin, "app").await, offsets_before);

    // The members come back on new connections with their ids and epochs: the coordinator
    // takes their heartbeats as it did before the restart, with no new epoch and no new tasks.
    let epochs: Vec<i32> = members.iter().map(|m| m.epoch).collect();
    let tasks: Vec<usize> = members.iter().map(Member::active_count).collect();
    for member in &mut members {
        member.conn = node.connect().await;
        let response = member.heartbeat().await;
        assert!(
            response.active_tasks.is_none(),
            "a member that kept its assignment is not sent one"
        );
    }
    assert_eq!(members.iter().map(|m| m.epoch).collect::<Vec<_>>(), epochs);
    assert_eq!(
        members.iter().map(Member::active_count).collect::<Vec<_>>(),
        tasks
    );
    let settled = describe_loaded(&admin, "app").await;
    assert_eq!(settled.group_epoch, before.group_epoch, "no rebalance");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_the_topology_description_id_survives_a_real_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let node = start_in(dir.path()).await;
    let admin = node.connect().await;
    create_topics(&admin, &[("in", 2)]).await;
    let mut member = Member::new(node.connect().await, "r3", "m1", simple_topology("in"));
    // The join mints the id; the memory plugin, holding no description for it, asks for it.
    let id = pushed_id(&mut member, &admin).await;
    assert!(id.is_some(), "the memory plugin asks for a push");
    node.stop().await;

    // The memory plugin starts empty again and asks for the group's id, which the shard's log
    // kept: the same one.
    let node = start_in(dir.path()).await;
    let conn = node.connect().await;
    describe_loaded(&conn, "r3").await;
    assert_eq!(pushed_id(&mut member, &conn).await, id);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_log_is_compacted_on_disk_and_replays_to_the_same_offsets() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let node = start_in(dir.path()).await;
    let admin = node.connect().await;
    create_topics(&admin, &[("in", 4)]).await;
    // About 1.5 MB of commits of the same four keys: past the size at which a file is compacted.
    let commits = 2_600;
    for i in 0..commits {
        let simple = OffsetCommitRequest {
            group_id: "busy".into(),
            generation_id_or_member_epoch: -1,
            topics: vec![OffsetCommitRequestTopic {
                name: "in".into(),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: i % 4,
                    committed_offset: i64::from(i),
                    committed_metadata: Some(format!("{i:0>500}")),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        // The group's shard loads its (empty) log right after the start: until it has, a commit
        // is answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let response = admin.send(simple.clone(), 9).await.expect("OffsetCommit");
            let code = response.topics[0].partitions[0].error_code;
            if code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
                assert_eq!(code, 0);
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "never loaded");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let before = committed(&admin, "busy").await;
    let logs: u64 = shard_log_sizes(dir.path()).iter().sum();
    assert!(
        logs < 1 << 20,
        "the shard logs hold {logs} bytes after {commits} commits of four keys"
    );
    node.stop().await;

    let node = start_in(dir.path()).await;
    let admin = node.connect().await;
    describe_or_missing(&admin).await;
    assert_eq!(committed(&admin, "busy").await, before);
    node.stop().await;
}

/// The size of every shard's log file.
fn shard_log_sizes(root: &std::path::Path) -> Vec<u64> {
    let shards = root.join("group-coordinator");
    std::fs::read_dir(&shards)
        .expect("the shards' directory")
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::metadata(e.path().join("metadata.log")).ok())
        .map(|m| m.len())
        .collect()
}

/// Waits until every shard has loaded (a describe of an unknown group is answered
/// GROUP_ID_NOT_FOUND by a loaded shard).
async fn describe_or_missing(conn: &Connection) {
    let deadline = tokio::time::Instant::now() + WAIT;
    for group in ["a", "b", "c", "d", "e", "f"] {
        loop {
            let request = StreamsGroupDescribeRequest {
                group_ids: vec![group.into()],
                ..Default::default()
            };
            let response = conn.send(request, 0).await.expect("describe");
            if response.groups[0].error_code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "never loaded");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A loopback port nothing listens on now, so a restarted node can take the same address.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_member_of_our_client_keeps_its_tasks_across_a_coordinator_restart() {
    use kcoord_client::streams::{StreamsMember, StreamsMemberConfig, TopologyBuilder};
    use kcoord_client::{Client, ClientConfig};

    let dir = tempfile::tempdir().expect("a temp dir");
    let port = free_port();
    let settings = [
        format!("log.dirs={}", dir.path().display()),
        format!("listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:0"),
        "group.streams.initial.rebalance.delay.ms=0".into(),
        "group.streams.assignment.interval.ms=0".into(),
        "group.streams.min.heartbeat.interval.ms=100".into(),
        "group.streams.heartbeat.interval.ms=100".into(),
    ];
    let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
    let node = start(&settings).await;
    let client = Client::connect(&node.broker, ClientConfig::new("restart"))
        .await
        .expect("connects");
    create_topics(&node.connect().await, &[("in", 4)]).await;
    let topology = TopologyBuilder::stateless(1, ["in"])
        .build()
        .expect("a topology");
    let member = StreamsMember::start(
        &client,
        StreamsMemberConfig::new("kept", topology).with_process_id("p1"),
    );
    let settled = |s: &kcoord_client::streams::MemberSnapshot| {
        s.assignment.active.get("0").is_some_and(|p| p.len() == 4) && s.last_error.is_none()
    };
    let before = wait_for(&member, settled).await;
    node.stop().await;

    let node = start(&settings).await;
    let after = wait_for(&member, |s| {
        s.responses >= before.responses + 5 && settled(s)
    })
    .await;
    assert_eq!(after.joins, before.joins, "the member did not rejoin");
    assert_eq!(after.member_epoch, before.member_epoch);
    assert_eq!(after.assignment, before.assignment);
    let group = describe_loaded(&node.connect().await, "kept").await;
    assert_eq!(group.group_epoch, before.member_epoch, "no rebalance");
    member.leave().await.expect("leaves");
    node.stop().await;
}

async fn wait_for(
    member: &kcoord_client::streams::StreamsMemberHandle,
    done: impl Fn(&kcoord_client::streams::MemberSnapshot) -> bool,
) -> kcoord_client::streams::MemberSnapshot {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let snapshot = member.snapshot();
        if done(&snapshot) {
            return snapshot;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the member never got there: {snapshot:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
