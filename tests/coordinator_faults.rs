//! Issue 12: a coordinator shard whose disk is full. A file size limit (RLIMIT_FSIZE, set on the
//! running daemon with `prlimit`) makes the shard's log refuse appends as a full disk does: the
//! change is refused with NOT_COORDINATOR and undone, reads and heartbeats that change nothing go
//! on, the shard takes changes again by itself once the disk has room, and after a restart every
//! acknowledged commit is there and no refused one is.
mod common;
mod streams_support;

use std::time::Duration;

use common::Daemon;
use kcoord_client::Connection;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::{OffsetCommitRequest, OffsetFetchRequest};
use kcoord_wire::ErrorCode;
use streams_support::{converge, create_topics, simple_topology, Member};

const WAIT: Duration = Duration::from_secs(20);

async fn connect(daemon: &Daemon) -> Connection {
    daemon.client_connection("faults", WAIT).await
}

/// Commits `offset` (with a 500-byte metadata string, so the log grows quickly) for group
/// "plain", partition 0 of "in"; returns the error code.
async fn commit(conn: &Connection, offset: i64) -> i16 {
    let request = OffsetCommitRequest {
        group_id: "plain".into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "in".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_metadata: Some("m".repeat(500)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = conn.send(request, 9).await.expect("OffsetCommit");
    response.topics[0].partitions[0].error_code
}

/// The committed offset of "plain" / in-0, once its shard has loaded.
async fn committed(conn: &Connection) -> i64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let request = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: "plain".into(),
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: "in".into(),
                    partition_indexes: vec![0],
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        };
        let response = conn.send(request, 9).await.expect("OffsetFetch");
        let group = &response.groups[0];
        if group.error_code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() {
            assert_eq!(group.error_code, 0);
            return group.topics[0].partitions[0].committed_offset;
        }
        assert!(tokio::time::Instant::now() < deadline, "never loaded");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn prlimit(daemon: &Daemon, fsize: &str) {
    let pid = daemon.pid().expect("running").to_string();
    let status = std::process::Command::new("prlimit")
        // The soft limit only (`N:`): lowering the hard one could not be undone without
        // CAP_SYS_RESOURCE.
        .args(["--pid", &pid, &format!("--fsize={fsize}:")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_group_changes_keeps_heartbeats_and_reads_and_recovers_by_itself() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = [
        format!("log.dirs={}", dir.path().display()),
        // One shard: the streams group and the committed offsets share its log.
        "offsets.topic.num.partitions=1".to_string(),
        "group.streams.initial.rebalance.delay.ms=0".to_string(),
        "group.streams.assignment.interval.ms=0".to_string(),
    ];
    let config: Vec<&str> = config.iter().map(String::as_str).collect();
    let daemon = Daemon::start(&config);
    let conn = connect(&daemon).await;
    create_topics(&conn, &[("in", 2)]).await;
    let mut members = vec![Member::new(
        connect(&daemon).await,
        "app",
        "m1",
        simple_topology("in"),
    )];
    converge(&mut members, &conn).await;
    let mut acknowledged = 0;
    for offset in 1..=5 {
        assert_eq!(commit(&conn, offset).await, 0);
        acknowledged = offset;
    }

    // The disk is "full" a few commits past what is written.
    let shard_log = dir.path().join("group-coordinator/0/metadata.log");
    let size = std::fs::metadata(&shard_log)
        .expect("the shard's log")
        .len();
    prlimit(&daemon, &(size + 3_000).to_string());
    let mut refused = None;
    for offset in acknowledged + 1..acknowledged + 50 {
        match commit(&conn, offset).await {
            0 => acknowledged = offset,
            code => {
                refused = Some((offset, code));
                break;
            }
        }
    }
    let (refused, code) = refused.expect("the file size limit never refused a commit");
    assert_eq!(code, ErrorCode::NOT_COORDINATOR.code());
    assert_eq!(
        commit(&conn, refused).await,
        ErrorCode::NOT_COORDINATOR.code(),
        "refused again while the disk is full"
    );
    assert_eq!(
        committed(&conn).await,
        acknowledged,
        "reads go on, without the refused commit"
    );
    let epoch = members[0].epoch;
    members[0].heartbeat().await;
    assert_eq!(members[0].epoch, epoch, "a steady heartbeat is answered");
    daemon.assert_alive();

    // Room again: the next change goes through, without a restart.
    prlimit(&daemon, "unlimited");
    assert_eq!(commit(&conn, refused).await, 0);
    acknowledged = refused;
    assert_eq!(committed(&conn).await, acknowledged);
    daemon.stop();

    let again = Daemon::start(&config);
    let conn = connect(&again).await;
    assert_eq!(
        committed(&conn).await,
        acknowledged,
        "every acknowledged commit is there"
    );
    again.stop();
}
