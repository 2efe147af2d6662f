//! The streams group the gateway tests drive through a gateway: one member's joins, commits
//! and leaves, read back through the gateway or the upstream, and the JSON API.

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
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
};
use kcoord_wire::ErrorCode;

use super::{call, gateway_with};

pub const GROUP: &str = "stateless-app";
pub const SOURCE: &str = "clicks";
/// No wait before a streams group's first assignment.
pub const FAST: &str = "group.streams.initial.rebalance.delay.ms=0\n";

/// Sends `request` until the answer's error (read by `error`) is not a "try again" one
/// (loading, moving or unavailable coordinator); bounded by 30 s.
pub async fn until_served<Req, Resp>(
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

/// A standalone kcoord playing the cluster, with the source topic, and a gateway in front of it
/// where `member-1` joined the streams group and committed `offset`: (upstream, gateway,
/// member epoch).
pub async fn a_group_with_a_commit(offset: i64) -> (ServerHandle, ServerHandle, i32) {
    let upstream = super::upstream().await;
    super::create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let gateway = gateway_seeing_the_source(&upstream).await;
    let epoch = join(&gateway, "member-1").await;
    assert_eq!(commit(&gateway, "member-1", epoch, offset).await, 0);
    (upstream, gateway, epoch)
}

/// Joins `member` to the streams group; its member epoch.
pub async fn join(gateway: &ServerHandle, member: &str) -> i32 {
    let joined: StreamsGroupHeartbeatResponse = until_served(
        gateway.broker_addr().unwrap(),
        ApiKey::StreamsGroupHeartbeat,
        0,
        &join_request(member),
        |r: &StreamsGroupHeartbeatResponse| r.error_code,
    )
    .await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    joined.member_epoch
}

/// The heartbeat (v0) by which `member` joins the streams group.
pub fn join_request(member: &str) -> StreamsGroupHeartbeatRequest {
    StreamsGroupHeartbeatRequest {
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
    }
}

/// Commits `offset` for partition 0 of the source as `member`; the partition's error code.
pub async fn commit(gateway: &ServerHandle, member: &str, epoch: i32, offset: i64) -> i16 {
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
pub async fn committed(gateway: &ServerHandle) -> i64 {
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
pub async fn members(gateway: &ServerHandle) -> Vec<String> {
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
pub async fn gateway_seeing_the_source(upstream: &ServerHandle) -> ServerHandle {
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

/// One HTTP/1.1 GET: the body of a 200 answer.
pub async fn http_get(addr: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("an answer in time")
        .unwrap();
    let response = String::from_utf8(raw).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a whole response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    body.to_owned()
}

/// `member` leaves the group (member epoch -1).
pub async fn leave(gateway: &ServerHandle, member: &str) {
    let request = StreamsGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: -1,
        ..Default::default()
    };
    let left: StreamsGroupHeartbeatResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::StreamsGroupHeartbeat,
        0,
        &request,
    )
    .await;
    assert_eq!(left.error_code, 0, "{left:?}");
}

/// Whether `node` holds the group in its own shard (a node holds only the shards it serves).
pub fn holds_the_group(node: &ServerHandle) -> bool {
    node.state()
        .coordinators
        .for_group(GROUP)
        .peek(|shard| shard.group(GROUP).is_some())
        == Ok(true)
}
