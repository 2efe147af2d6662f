//! Issue 13, item 2: a request that names one group hundreds of thousands of times must not
//! stall the groups that share its shard, nor start a plugin read per occurrence. The daemon
//! runs in-process with one coordinator shard, so every group below is on the same shard.

mod kip1331_support;
mod streams_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kcoord_wire::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse,
};
use kcoord_wire::ErrorCode;
use kip1331_support::*;
use streams_support::Member;

/// Occurrences of each group in the hostile requests.
const REPEATS: usize = 500_000;
const NONE: i16 = 0;
const AVAILABLE: i8 = 3;
const NOT_STORED: i8 = 1;

/// Members of other groups of the shard, heartbeating on their own connections until `stop`.
struct Beating {
    stop: Arc<AtomicBool>,
    beats: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<Vec<Member>>,
}

async fn start_beating(d: &Daemon, groups: &[&str]) -> Beating {
    let mut members = Vec::new();
    for g in groups {
        let mut m = member(d, g, "m1", "t").await;
        beat(&mut m, 2).await;
        members.push(m);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let beats = Arc::new(AtomicUsize::new(0));
    let (s, b) = (Arc::clone(&stop), Arc::clone(&beats));
    let task = tokio::spawn(async move {
        while !s.load(Ordering::Acquire) {
            for m in &mut members {
                // Panics (failing the test through the join) on any error answer.
                beat(m, 2).await;
                b.fetch_add(1, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        members
    });
    Beating { stop, beats, task }
}

impl Beating {
    /// Stops the heartbeats once a few more were answered, and checks every member is still
    /// in its group with the epoch it was last given (no session expired, nobody was fenced).
    async fn finish(self, d: &Daemon) {
        let seen = self.beats.load(Ordering::Relaxed);
        wait_until(
            || self.beats.load(Ordering::Relaxed) > seen + 3,
            "heartbeats after the request",
        )
        .await;
        self.stop.store(true, Ordering::Release);
        let members = tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the heartbeat task stops")
            .expect("every heartbeat was answered without error");
        let probe = d.connect().await;
        for m in &members {
            let described = describe(&probe, &[m.group.as_str()], false, 0).await;
            let g = &described.groups[0];
            assert_eq!(g.error_code, NONE, "{}", m.group);
            let found: Vec<(&str, i32)> = g
                .members
                .iter()
                .map(|x| (x.member_id.as_str(), x.member_epoch))
                .collect();
            assert_eq!(found, vec![(m.id.as_str(), m.epoch)], "{}", m.group);
        }
    }
}

/// One shard; members of `beat-*` heartbeat while the hostile request runs.
async fn one_shard(plugin: &Arc<TestPlugin>) -> Daemon {
    let d = daemon_with(plugin, &["offsets.topic.num.partitions=1"]).await;
    topics(&d, &["t"]).await;
    d
}

#[tokio::test]
async fn describe_naming_groups_half_a_million_times_reads_each_once_and_stalls_no_one() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = one_shard(&plugin).await;
    // "pushed" has a stored description, "silent" none; both are read from the plugin.
    let mut pushed = member(&d, "pushed", "m1", "t").await;
    let id = beat(&mut pushed, 2)
        .await
        .topology_description_id
        .expect("asked");
    assert_eq!(
        push95(&pushed.conn, "pushed", id, spec_description())
            .await
            .error_code,
        NONE
    );
    let mut silent = member(&d, "silent", "m1", "t").await;
    beat(&mut silent, 2).await;
    let beating = start_beating(&d, &["beat-1", "beat-2", "beat-3"]).await;

    let group_ids: Vec<String> = (0..REPEATS)
        .map(|i| if i % 2 == 0 { "pushed" } else { "silent" }.to_owned())
        .collect();
    let request = StreamsGroupDescribeRequest {
        group_ids,
        include_topology_description: true,
        ..Default::default()
    };
    let conn = d.connect().await;
    let response: StreamsGroupDescribeResponse =
        conn.send(request, 1).await.expect("StreamsGroupDescribe");

    // Kafka's shape: one entry per occurrence, in order.
    assert_eq!(response.groups.len(), REPEATS);
    for (i, g) in response.groups.iter().enumerate() {
        let name = if i % 2 == 0 { "pushed" } else { "silent" };
        assert_eq!(g.group_id, name, "entry {i}");
    }
    let (first, second) = (&response.groups[0], &response.groups[1]);
    assert_eq!(
        (first.error_code, first.topology_description_status),
        (NONE, AVAILABLE)
    );
    assert!(first.topology_description.is_some());
    assert_eq!(
        (second.error_code, second.topology_description_status),
        (NONE, NOT_STORED)
    );
    // Copies while the repeat budget lasts, then INVALID_REQUEST: never 500,000 full answers.
    let full = response
        .groups
        .iter()
        .filter(|g| g.error_code == NONE)
        .count();
    assert!((4..REPEATS / 10).contains(&full), "{full} full answers");
    assert!(response.groups[full..]
        .iter()
        .all(|g| g.error_code == ErrorCode::INVALID_REQUEST.code()));
    assert!(response.groups[..full]
        .iter()
        .all(|g| g == first || g == second));

    // One plugin read per distinct group, not one per occurrence.
    assert_eq!(plugin.gets_for("pushed").len(), 1);
    assert_eq!(plugin.gets_for("silent").len(), 1);
    beating.finish(&d).await;
    d.stop().await;
}

#[tokio::test]
async fn offset_fetch_naming_a_group_half_a_million_times_stalls_no_one() {
    let plugin = TestPlugin::new(Ask::No);
    let d = one_shard(&plugin).await;
    let conn = d.connect().await;
    let commit = OffsetCommitRequest {
        group_id: "fetched".into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 42,
                committed_metadata: Some("m".repeat(4000)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let committed: OffsetCommitResponse = conn.send(commit, 9).await.expect("OffsetCommit");
    assert_eq!(committed.topics[0].partitions[0].error_code, NONE);
    let beating = start_beating(&d, &["beat-1", "beat-2", "beat-3"]).await;

    let entry = OffsetFetchRequestGroup {
        group_id: "fetched".into(),
        member_epoch: -1,
        topics: None,
        ..Default::default()
    };
    let request = OffsetFetchRequest {
        groups: vec![entry; REPEATS],
        ..Default::default()
    };
    let response: OffsetFetchResponse = conn.send(request, 9).await.expect("OffsetFetch");
    assert_eq!(response.groups.len(), REPEATS);
    let first = &response.groups[0];
    assert_eq!(first.error_code, NONE);
    assert_eq!(first.topics[0].partitions[0].committed_offset, 42);
    let full = response
        .groups
        .iter()
        .filter(|g| g.error_code == NONE)
        .count();
    // Each copy carries 4000 bytes of metadata: about 260 fit the budget.
    assert!((2..1000).contains(&full), "{full} full answers");
    assert!(response.groups[..full].iter().all(|g| g == first));
    assert!(response.groups[full..]
        .iter()
        .all(|g| g.error_code == ErrorCode::INVALID_REQUEST.code() && g.topics.is_empty()));
    beating.finish(&d).await;
    d.stop().await;
}
