//! Issue 12: kill -9 under load. A real `kcoord` process with a log directory takes offset
//! commits from several connections and a streams member's heartbeats, and is killed at random
//! moments (a seeded generator: the same moments every run, relative to the load). After each
//! restart every commit it acknowledged is there and the streams group is back with its member
//! and at least the epoch it acknowledged.
mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Daemon;
use kcoord_client::Connection;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::{
    CreateTopicsRequest, OffsetCommitRequest, OffsetFetchRequest, StreamsGroupDescribeRequest,
};
use kcoord_wire::ErrorCode;
use rand::{Rng, SeedableRng};

const CYCLES: usize = 20;
const COMMITTERS: i32 = 4;
const PARTITIONS: i32 = 4;
const WAIT: Duration = Duration::from_secs(20);

/// (group, partition) -> the highest offset whose commit was acknowledged.
type Acked = Arc<Mutex<BTreeMap<(String, i32), i64>>>;

async fn connect(daemon: &Daemon) -> Connection {
    daemon.client_connection("crash-test", WAIT).await
}

fn commit_request(group: &str, partition: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "in".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: partition,
                committed_offset: offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Commits ever higher offsets to its own group, round-robin over the partitions, until the
/// connection dies; records every acknowledged one.
async fn commit_until_killed(conn: Connection, group: String, first: i64, acked: Acked) {
    let mut offset = first;
    loop {
        offset += 1;
        let partition = (offset % i64::from(PARTITIONS)) as i32;
        let Ok(response) = conn
            .send(commit_request(&group, partition, offset), 9)
            .await
        else {
            return;
        };
        let code = response.topics[0].partitions[0].error_code;
        if code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        assert_eq!(code, 0, "commit {offset} to {group}");
        let mut acked = acked.lock().unwrap_or_else(|p| p.into_inner());
        let best = acked.entry((group.clone(), partition)).or_insert(offset);
        *best = (*best).max(offset);
    }
}

/// What the daemon has committed for `group`, retried while its shard loads.
async fn fetch(conn: &Connection, group: &str) -> BTreeMap<i32, i64> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let request = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.into(),
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: "in".into(),
                    partition_indexes: (0..PARTITIONS).collect(),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        };
        let response = conn.send(request, 9).await.expect("OffsetFetch");
        let g = &response.groups[0];
        if g.error_code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            assert!(tokio::time::Instant::now() < deadline, "never loaded");
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        assert_eq!(g.error_code, 0);
        return g.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.committed_offset))
            .collect();
    }
}

async fn create_topic(conn: &Connection) {
    let request = CreateTopicsRequest {
        topics: vec![
            kcoord_wire::messages::create_topics_request::CreatableTopic {
                name: "in".into(),
                num_partitions: PARTITIONS,
                replication_factor: -1,
                ..Default::default()
            },
        ],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let response = conn.send(request, 7).await.expect("CreateTopics");
    assert_eq!(response.topics[0].error_code, 0);
}

/// The streams group's epoch and members, retried while its shard loads; `None` if unknown.
async fn streams_group(conn: &Connection, group: &str) -> Option<(i32, Vec<String>)> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let request = StreamsGroupDescribeRequest {
            group_ids: vec![group.into()],
            ..Default::default()
        };
        let response = conn.send(request, 0).await.expect("describe");
        let g = &response.groups[0];
        if g.error_code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            assert!(tokio::time::Instant::now() < deadline, "never loaded");
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        if g.error_code == ErrorCode::GROUP_ID_NOT_FOUND.code() {
            return None;
        }
        assert_eq!(g.error_code, 0, "{:?}", g.error_message);
        return Some((
            g.group_epoch,
            g.members.iter().map(|m| m.member_id.clone()).collect(),
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_commits_and_groups_survive_kill_9_at_random_moments() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let log_dirs = format!("log.dirs={}", dir.path().display());
    let extra = [
        log_dirs.as_str(),
        "offsets.topic.num.partitions=4",
        "group.streams.initial.rebalance.delay.ms=0",
        "group.streams.assignment.interval.ms=0",
    ];
    let acked: Acked = Arc::default();
    let mut moments = rand::rngs::StdRng::seed_from_u64(0x6b636f6f7264);
    // The streams member's id and its highest acknowledged epoch.
    let mut streams_epoch = 0;
    for cycle in 0..CYCLES {
        let daemon = Daemon::start(&extra);
        let admin = connect(&daemon).await;
        if cycle == 0 {
            create_topic(&admin).await;
        }
        let expected = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for ((group, partition), offset) in &expected {
            let committed = fetch(&admin, group).await;
            assert!(
                committed.get(partition).is_some_and(|c| c >= offset),
                "cycle {cycle}: {group}/{partition} acknowledged {offset}, the daemon has {:?}",
                committed.get(partition)
            );
        }
        if streams_epoch > 0 {
            let (epoch, members) = streams_group(&admin, "streams")
                .await
                .unwrap_or_else(|| panic!("cycle {cycle}: the streams group was lost"));
            assert!(
                epoch >= streams_epoch,
                "cycle {cycle}: epoch {epoch} < {streams_epoch}"
            );
            assert_eq!(members, vec!["m1".to_string()], "cycle {cycle}");
        }

        let mut load = Vec::new();
        for c in 0..COMMITTERS {
            let conn = connect(&daemon).await;
            let first = (cycle as i64) * 1_000_000;
            load.push(tokio::spawn(commit_until_killed(
                conn,
                format!("committer-{c}"),
                first,
                Arc::clone(&acked),
            )));
        }
        let member_conn = connect(&daemon).await;
        let member = tokio::spawn(heartbeat_until_killed(member_conn, streams_epoch));
        let delay = moments.random_range(20..250);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        daemon.kill();
        for task in load {
            task.await.expect("a committer panicked");
        }
        streams_epoch = member.await.expect("the member panicked");
    }
}

/// Joins (or rejoins with its epoch) as member m1 of group "streams" and heartbeats until the
/// connection dies; returns the highest epoch acknowledged.
async fn heartbeat_until_killed(conn: Connection, mut epoch: i32) -> i32 {
    use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
    use kcoord_wire::messages::StreamsGroupHeartbeatRequest;
    let topology = Topology {
        epoch: 0,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec!["in".into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    loop {
        let joining = epoch == 0;
        let request = StreamsGroupHeartbeatRequest {
            group_id: "streams".into(),
            member_id: "m1".into(),
            member_epoch: epoch,
            rebalance_timeout_ms: if joining { 30_000 } else { -1 },
            topology: joining.then(|| topology.clone()),
            process_id: joining.then(|| "p1".to_string()),
            active_tasks: joining.then(Vec::new),
            standby_tasks: joining.then(Vec::new),
            warmup_tasks: joining.then(Vec::new),
            ..Default::default()
        };
        let Ok(response) = conn.send(request, 1).await else {
            return epoch;
        };
        if response.error_code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        assert_eq!(response.error_code, 0, "{:?}", response.error_message);
        epoch = epoch.max(response.member_epoch);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
