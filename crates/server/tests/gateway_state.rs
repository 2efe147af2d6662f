//! Gateway mode keeps no state on kcoord's side: the coordinator shards' logs live in a
//! compacted upstream topic, written in transactions whose fencing keeps a shard to one writer.
//! A standalone kcoord plays the upstream cluster.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kcoord_server::ServerHandle;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
use kcoord_wire::messages::{
    DescribeConfigsRequest, DescribeConfigsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};
use kcoord_wire::ErrorCode;

mod gateway_support;

use gateway_support::*;

const GROUP: &str = "stateless-app";
const SOURCE: &str = "clicks";
/// No wait before a streams group's first assignment.
const FAST: &str = "group.streams.initial.rebalance.delay.ms=0\n";

/// Sends `request` until the answer's error (read by `error`) is not a "try again" one
/// (loading, moving or unavailable coordinator); bounded by 30 s.
async fn until_served<Req, Resp>(
    addr: SocketAddr,
    api: ApiKey,
    version: i16,
    request: &Req,
    error: impl Fn(&Resp) -> i16,
) -> Resp
where
    Req: kcoord_wire::Encodable,
    Resp: kcoord_wire::Decodable + std::fmt::Debug,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer: Resp = call(addr, api, version, request).await;
        let code = error(&answer);
        let again = [
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode::NOT_COORDINATOR,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ]
        .iter()
        .any(|c| c.code() == code);
        if !again {
            return answer;
        }
        assert!(Instant::now() < deadline, "never served: {answer:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Joins `member` to the streams group; its member epoch.
async fn join(gateway: &ServerHandle, member: &str) -> i32 {
    let request = StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![SOURCE.into()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        process_id: Some("process-1".into()),
        active_tasks: Some(vec![]),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![]),
        ..Default::default()
    };
    let joined: StreamsGroupHeartbeatResponse = until_served(
        gateway.broker_addr().unwrap(),
        ApiKey::StreamsGroupHeartbeat,
        0,
        &request,
        |r: &StreamsGroupHeartbeatResponse| r.error_code,
    )
    .await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    joined.member_epoch
}

/// Commits `offset` for partition 0 of the source as `member`; the partition's error code.
async fn commit(gateway: &ServerHandle, member: &str, epoch: i32, offset: i64) -> i16 {
    let request = OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id_or_member_epoch: epoch,
        member_id: member.into(),
        topics: vec![OffsetCommitRequestTopic {
            name: SOURCE.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer: OffsetCommitResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::OffsetCommit,
        9,
        &request,
    )
    .await;
    answer.topics[0].partitions[0].error_code
}

/// The group's committed offset of partition 0 of the source, asked through `gateway`.
async fn committed(gateway: &ServerHandle) -> i64 {
    let request = OffsetFetchRequest {
        groups: vec![OffsetFetchRequestGroup {
            group_id: GROUP.into(),
            topics: Some(vec![OffsetFetchRequestTopics {
                name: SOURCE.into(),
                partition_indexes: vec![0],
                ..Default::default()
            }]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer: OffsetFetchResponse = until_served(
        gateway.broker_addr().unwrap(),
        ApiKey::OffsetFetch,
        8,
        &request,
        |r: &OffsetFetchResponse| r.groups[0].error_code,
    )
    .await;
    answer.groups[0].topics[0].partitions[0].committed_offset
}

/// The member ids of the group, described through `gateway`.
async fn members(gateway: &ServerHandle) -> Vec<String> {
    let request = StreamsGroupDescribeRequest {
        group_ids: vec![GROUP.into()],
        ..Default::default()
    };
    let answer: StreamsGroupDescribeResponse = until_served(
        gateway.broker_addr().unwrap(),
        ApiKey::StreamsGroupDescribe,
        0,
        &request,
        |r: &StreamsGroupDescribeResponse| r.groups[0].error_code,
    )
    .await;
    assert_eq!(answer.groups[0].error_code, 0, "{answer:?}");
    answer.groups[0]
        .members
        .iter()
        .map(|m| m.member_id.clone())
        .collect()
}

/// A gateway whose source topic exists upstream and is in its catalog.
async fn gateway_seeing_the_source(upstream: &ServerHandle) -> ServerHandle {
    let (gateway, _) = gateway_with(upstream, FAST).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while gateway.state().topics.snapshot().get(SOURCE).is_none() {
        assert!(
            Instant::now() < deadline,
            "the source never reached the gateway's catalog"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gateway
}

#[tokio::test]
async fn a_new_gateway_finds_the_groups_and_offsets_an_old_one_wrote_upstream() {
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let first = gateway_seeing_the_source(&upstream).await;
    let epoch = join(&first, "member-1").await;
    assert_eq!(commit(&first, "member-1", epoch, 42).await, 0);
    first.shutdown().await;

    // The second gateway has no directory of its own: everything comes from the cluster.
    let second = gateway_seeing_the_source(&upstream).await;
    assert_eq!(committed(&second).await, 42);
    assert_eq!(members(&second).await, ["member-1"]);

    // The log is a compacted topic of the cluster, one partition per shard.
    let configs: DescribeConfigsResponse = call(
        upstream.broker_addr().unwrap(),
        ApiKey::DescribeConfigs,
        4,
        &DescribeConfigsRequest {
            resources: vec![
                kcoord_wire::messages::describe_configs_request::DescribeConfigsResource {
                    resource_type: 2,
                    resource_name: "__kcoord_coordinator_log".into(),
                    configuration_keys: Some(vec!["cleanup.policy".into()]),
                    ..Default::default()
                },
            ],
            ..Default::default()
        },
    )
    .await;
    let policy = &configs.results[0].configs[0];
    assert_eq!(policy.value.as_deref(), Some("compact"), "{configs:?}");
    second.shutdown().await;
    upstream.shutdown().await;
}

#[tokio::test]
async fn a_gateway_that_claims_the_shards_fences_the_one_that_had_them() {
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let first = gateway_seeing_the_source(&upstream).await;
    let epoch = join(&first, "member-1").await;
    assert_eq!(commit(&first, "member-1", epoch, 7).await, 0);

    // A second node claims the (one) shard: the first one's producer is fenced.
    let second = gateway_seeing_the_source(&upstream).await;
    assert_eq!(committed(&second).await, 7);

    // The first node's next write is refused and it stops serving the shard; nothing it
    // tried reaches the log.
    let refused = commit(&first, "member-1", epoch, 8).await;
    assert!(
        [
            ErrorCode::NOT_COORDINATOR.code(),
            ErrorCode::COORDINATOR_NOT_AVAILABLE.code()
        ]
        .contains(&refused),
        "the fenced node's commit: {refused}"
    );
    // It has stopped: later commits are not written either, whoever answers them.
    commit(&first, "member-1", epoch, 9).await;
    assert_eq!(committed(&second).await, 7);
    first.shutdown().await;
    let third = gateway_seeing_the_source(&upstream).await;
    assert_eq!(committed(&third).await, 7);
    third.shutdown().await;
    second.shutdown().await;
    upstream.shutdown().await;
}
