//! Gateway mode keeps no state on kcoord's side: the coordinator shards' logs live in a
//! compacted upstream topic, written in transactions whose fencing keeps a shard to one writer.
//! A standalone kcoord plays the upstream cluster.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kcoord_server::runtime::shards::shard_index;
use kcoord_server::ServerHandle;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
use kcoord_wire::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, OffsetDeleteRequest, OffsetDeleteResponse,
};
use kcoord_wire::messages::{
    DescribeConfigsRequest, DescribeConfigsResponse, ListGroupsRequest, ListGroupsResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
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
    // kcoord checks a commit against the streams group before the cluster keeps it: a member
    // with an epoch the group does not know is refused, and nothing reaches the cluster.
    assert_eq!(
        commit(&first, "member-1", epoch + 5, 43).await,
        ErrorCode::STALE_MEMBER_EPOCH.code()
    );
    assert_eq!(
        commit(&first, "not-a-member", epoch, 44).await,
        ErrorCode::UNKNOWN_MEMBER_ID.code()
    );
    first.shutdown().await;

    // The offsets are the cluster's, where Kafka's tools look for them.
    assert_eq!(committed(&upstream).await, 42);
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

/// The shards `gateway` serves, once the nodes' group has assigned them (30 s at most).
async fn owned_shards(gateway: &ServerHandle, shards: usize) -> Vec<usize> {
    let view = gateway.state().gateway.clone().expect("gateway mode");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ownership = view.ownership();
        if ownership.owners.is_some() {
            return (0..shards)
                .filter(|s| ownership.owns(*s) == Some(true))
                .collect();
        }
        assert!(Instant::now() < deadline, "no assignment of the shards");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the two gateways split `shards` shards between them, each serving some.
async fn split(a: &ServerHandle, b: &ServerHandle, shards: usize) -> (Vec<usize>, Vec<usize>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (mine, theirs) = (owned_shards(a, shards).await, owned_shards(b, shards).await);
        let mut all: Vec<usize> = mine.iter().chain(&theirs).copied().collect();
        all.sort_unstable();
        if !mine.is_empty() && !theirs.is_empty() && all == (0..shards).collect::<Vec<_>>() {
            return (mine, theirs);
        }
        assert!(
            Instant::now() < deadline,
            "the shards were never split: {mine:?} / {theirs:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The ports of the brokers in `node`'s Metadata answer.
async fn broker_ports(node: &ServerHandle) -> Vec<u16> {
    let metadata = metadata_of(node.broker_addr().unwrap()).await;
    metadata
        .brokers
        .iter()
        .map(|b| u16::try_from(b.port).unwrap())
        .collect()
}

/// Whether `node` holds the group in its own shard (a node holds only the shards it serves).
fn holds_the_group(node: &ServerHandle) -> bool {
    node.state()
        .coordinators
        .for_group(GROUP)
        .peek(|shard| shard.group(GROUP).is_some())
        == Ok(true)
}

#[tokio::test]
async fn two_gateways_share_the_shards_and_either_serves_every_group() {
    const SHARDS: usize = 4;
    let shards = format!("{FAST}offsets.topic.num.partitions={SHARDS}\n");
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let (a, a_port) = gateway_with(&upstream, &shards).await.unwrap();
    let (b, b_port) = gateway_with(&upstream, &shards).await.unwrap();
    let (a_shards, _) = split(&a, &b, SHARDS).await;
    // Both nodes show the upstream broker at the same node, so a client of either one learns
    // the other node when the broker is placed there.
    let shown_a = broker_ports(&a).await;
    assert_eq!(shown_a, broker_ports(&b).await);
    assert!(shown_a == [a_port] || shown_a == [b_port], "{shown_a:?}");
    let (owner, other) = if a_shards.contains(&shard_index(GROUP, SHARDS)) {
        (a, b)
    } else {
        (b, a)
    };
    for node in [&owner, &other] {
        while node.state().topics.snapshot().get(SOURCE).is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // A client of the node that does not serve the group is served by the one that does.
    let epoch = join(&other, "member-1").await;
    assert_eq!(commit(&other, "member-1", epoch, 5).await, 0);
    assert_eq!(committed(&owner).await, 5);
    assert_eq!(committed(&other).await, 5);
    assert_eq!(members(&other).await, ["member-1"]);
    assert!(holds_the_group(&owner));
    assert!(!holds_the_group(&other));
    // Either node lists it, with the upstream cluster's groups.
    for node in [&owner, &other] {
        let listed: ListGroupsResponse = call(
            node.broker_addr().unwrap(),
            ApiKey::ListGroups,
            5,
            &ListGroupsRequest::default(),
        )
        .await;
        let streams: Vec<&str> = listed
            .groups
            .iter()
            .filter(|g| g.group_type == "streams")
            .map(|g| g.group_id.as_str())
            .collect();
        assert_eq!(streams, [GROUP], "{listed:?}");
    }

    // The owner leaves: the other node takes its shards, and the group with them.
    owner.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while owned_shards(&other, SHARDS).await.len() < SHARDS {
        assert!(Instant::now() < deadline, "the shards never moved");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(committed(&other).await, 5);
    assert_eq!(members(&other).await, ["member-1"]);
    assert!(holds_the_group(&other));
    other.shutdown().await;
    upstream.shutdown().await;
}

/// Two writers of one shard's log: the second claim fences the first, whose later writes are
/// refused as fenced and never reach the log.
#[tokio::test]
async fn a_claim_fences_the_shards_earlier_writer() {
    use bytes::Bytes;
    use kcoord_metadata::LogRecord;
    use kcoord_server::runtime::upstream_log::{is_fenced, CoordinatorLogs};

    let upstream = upstream().await;
    let open = || async {
        let client = kcoord_client::Client::connect(
            &upstream.broker_addr().unwrap().to_string(),
            kcoord_client::ClientConfig::new("fencing-test"),
        )
        .await
        .unwrap();
        CoordinatorLogs::open(client, "fencing-log", 2, -1)
            .await
            .unwrap()
    };
    let record = |key: &str, value: &str| LogRecord {
        offset: 0,
        record_type: 1,
        version: 0,
        key: Some(Bytes::from(key.to_owned())),
        value: Some(Bytes::from(value.to_owned())),
    };
    let (first, _) = open().await.claim(1).await.unwrap();
    first.append(&[record("k", "one")]).await.unwrap();
    let (second, seen) = open().await.claim(1).await.unwrap();
    assert_eq!(
        seen.len(),
        1,
        "the second writer reads what the first committed"
    );
    let refused = first.append(&[record("k", "two")]).await.unwrap_err();
    assert!(is_fenced(&refused), "{refused}");
    second.append(&[record("j", "three")]).await.unwrap();
    let (_, log) = open().await.claim(1).await.unwrap();
    let values: Vec<Option<Bytes>> = log.records().into_iter().map(|r| r.value).collect();
    assert_eq!(
        values,
        [
            Some(Bytes::from_static(b"one")),
            Some(Bytes::from_static(b"three"))
        ]
    );
    // The other shard's partition holds none of it.
    assert!(open().await.claim(0).await.unwrap().1.is_empty());
    upstream.shutdown().await;
}

/// One HTTP/1.1 GET: the body of a 200 answer.
async fn http_get(addr: SocketAddr, path: &str) -> String {
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

/// In gateway mode a streams group's committed offsets and its partitions' ends are the
/// cluster's, and the JSON API's lag is read there.
#[tokio::test]
async fn the_lag_of_a_streams_group_behind_a_gateway_is_the_clusters() {
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let client = kcoord_client::Client::connect(
        &upstream.broker_addr().unwrap().to_string(),
        kcoord_client::ClientConfig::new("lag-test"),
    )
    .await
    .unwrap();
    let producer =
        kcoord_client::Producer::new(client, kcoord_client::ProducerConfig::default()).unwrap();
    let records: Vec<_> = (0..5)
        .map(|i| kcoord_client::ProducedRecord::value(format!("r{i}")))
        .collect();
    producer.send(SOURCE, 0, &records).await.unwrap();

    let (gateway, _) = gateway_with(&upstream, &format!("{FAST}http.listener=127.0.0.1:0\n"))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while gateway.state().topics.snapshot().get(SOURCE).is_none() {
        assert!(
            Instant::now() < deadline,
            "the source never reached the catalog"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let epoch = join(&gateway, "member-1").await;
    assert_eq!(commit(&gateway, "member-1", epoch, 2).await, 0);
    let body = http_get(
        gateway.http_addr().unwrap(),
        &format!("/api/v1/groups/{GROUP}/lag"),
    )
    .await;
    let lag: serde_json::Value = serde_json::from_str(&body).unwrap();
    let partition = lag["partitions"][0].clone();
    let fields = ["committedOffset", "logEndOffset", "lag"].map(|f| partition[f].as_i64());
    assert_eq!(fields, [Some(2), Some(5), Some(3)], "{body}");
    gateway.shutdown().await;
    upstream.shutdown().await;
}

/// `member` leaves the group (member epoch -1).
async fn leave(gateway: &ServerHandle, member: &str) {
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

/// OffsetDelete of partition 0 of the source through `gateway`: the request's code, else the
/// partition's.
async fn delete_offset(gateway: &ServerHandle) -> ErrorCode {
    let request = OffsetDeleteRequest {
        group_id: GROUP.into(),
        topics: vec![OffsetDeleteRequestTopic {
            name: SOURCE.into(),
            partitions: vec![OffsetDeleteRequestPartition {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer: OffsetDeleteResponse = until_served(
        gateway.broker_addr().unwrap(),
        ApiKey::OffsetDelete,
        0,
        &request,
        |r: &OffsetDeleteResponse| r.error_code,
    )
    .await;
    let code = match answer.error_code {
        0 => answer.topics[0].partitions[0].error_code,
        code => code,
    };
    ErrorCode::from_code(code).unwrap()
}

#[tokio::test]
async fn deleting_a_streams_group_or_its_offsets_through_the_gateway_deletes_them_in_the_cluster() {
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let gateway = gateway_seeing_the_source(&upstream).await;
    let epoch = join(&gateway, "member-1").await;
    assert_eq!(commit(&gateway, "member-1", epoch, 5).await, 0);
    assert_eq!(committed(&upstream).await, 5);

    // A group with members consumes its source: Kafka refuses, and the cluster keeps the offset.
    assert_eq!(
        delete_offset(&gateway).await,
        ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC
    );
    assert_eq!(committed(&upstream).await, 5);
    leave(&gateway, "member-1").await;
    assert_eq!(delete_offset(&gateway).await, ErrorCode::NONE);
    assert_eq!(committed(&upstream).await, -1, "the cluster's copy is gone");

    let epoch = join(&gateway, "member-2").await;
    assert_eq!(commit(&gateway, "member-2", epoch, 7).await, 0);
    assert_eq!(committed(&upstream).await, 7);
    leave(&gateway, "member-2").await;
    let deleted: DeleteGroupsResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::DeleteGroups,
        2,
        &DeleteGroupsRequest {
            groups_names: vec![GROUP.into()],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(deleted.results[0].error_code, 0, "{deleted:?}");
    assert_eq!(committed(&upstream).await, -1, "the cluster's copy is gone");
    assert!(!holds_the_group(&gateway));
    gateway.shutdown().await;
    upstream.shutdown().await;
}
