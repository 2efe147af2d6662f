//! Gateway mode keeps no state on kcoord's side: the coordinator shards' logs live in a
//! compacted upstream topic, written in transactions whose fencing keeps a shard to one writer.
//! A standalone kcoord plays the upstream cluster.

use std::time::{Duration, Instant};

use kcoord_server::ServerHandle;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_groups_response::DescribedGroup;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kcoord_wire::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
};
use kcoord_wire::ErrorCode;

mod gateway_support;

use gateway_support::streams::*;
use gateway_support::*;

#[tokio::test]
async fn a_new_gateway_finds_the_groups_and_offsets_an_old_one_wrote_upstream() {
    let (upstream, first, epoch) = a_group_with_a_commit(42).await;
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
    let (upstream, gateway, _) = a_group_with_a_commit(5).await;
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

/// The ids ListGroups v5 with `types` lists at `node`.
async fn listed(node: &ServerHandle, types: &[&str]) -> Vec<String> {
    let request = ListGroupsRequest {
        types_filter: types.iter().map(|t| (*t).to_owned()).collect(),
        ..Default::default()
    };
    let answer: ListGroupsResponse =
        call(node.broker_addr().unwrap(), ApiKey::ListGroups, 5, &request).await;
    answer.groups.into_iter().map(|g| g.group_id).collect()
}

/// The cluster keeps a streams group's offsets under a group without members of the same id;
/// through the gateway that id is the streams group only, as Kafka lists a streams group:
/// `kafka-consumer-groups --list` (classic and consumer groups) does not show it.
#[tokio::test]
async fn a_streams_group_is_not_listed_as_the_clusters_classic_group_through_the_gateway() {
    let (upstream, gateway, _) = a_group_with_a_commit(5).await;
    // (The kcoord nodes' own group is a classic group too, listed either way.)
    let classic = |ids: Vec<String>| ids.contains(&GROUP.to_owned());
    assert!(classic(listed(&upstream, &["classic", "consumer"]).await));
    assert!(!classic(listed(&gateway, &["classic", "consumer"]).await));
    assert_eq!(listed(&gateway, &["streams"]).await, [GROUP]);
    let all = listed(&gateway, &[]).await;
    assert_eq!(all.iter().filter(|g| *g == GROUP).count(), 1, "{all:?}");
    gateway.shutdown().await;
    upstream.shutdown().await;
}

/// DescribeGroups of `groups` (v5) at `node`.
async fn described(node: &ServerHandle, groups: &[&str]) -> Vec<DescribedGroup> {
    let request = DescribeGroupsRequest {
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..Default::default()
    };
    let answer: DescribeGroupsResponse = call(
        node.broker_addr().unwrap(),
        ApiKey::DescribeGroups,
        5,
        &request,
    )
    .await;
    answer.groups
}

/// A batch naming a streams group and a group of the cluster's is answered for each by the
/// place that serves it. Sent to the cluster whole, the streams group (known there only as a
/// group without members that keeps its offsets) would be described as Empty and deleted,
/// its offsets with it, while the app runs.
#[tokio::test]
async fn a_batch_naming_a_streams_group_and_a_clusters_group_is_answered_by_each() {
    const PLAIN: &str = "plain-consumers";
    let (upstream, gateway, _) = a_group_with_a_commit(5).await;
    // A group of the cluster's own, with an offset committed there.
    let commit = OffsetCommitRequest {
        group_id: PLAIN.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: SOURCE.into(),
            partitions: vec![OffsetCommitRequestPartition {
                committed_offset: 3,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let upstream_addr = upstream.broker_addr().unwrap();
    let committed_plain: OffsetCommitResponse =
        call(upstream_addr, ApiKey::OffsetCommit, 8, &commit).await;
    assert_eq!(committed_plain.topics[0].partitions[0].error_code, 0);

    let streams_alone = described(&gateway, &[GROUP]).await;
    let plain_alone = described(&gateway, &[PLAIN]).await;
    assert_ne!(streams_alone, described(&upstream, &[GROUP]).await);
    let both = described(&gateway, &[PLAIN, GROUP]).await;
    assert_eq!(both, [plain_alone[0].clone(), streams_alone[0].clone()]);

    let request = DeleteGroupsRequest {
        groups_names: vec![GROUP.into(), PLAIN.into()],
        ..Default::default()
    };
    let deleted: DeleteGroupsResponse = call(
        gateway.broker_addr().unwrap(),
        ApiKey::DeleteGroups,
        2,
        &request,
    )
    .await;
    let results: Vec<(&str, i16)> = deleted
        .results
        .iter()
        .map(|r| (r.group_id.as_str(), r.error_code))
        .collect();
    let refused = ErrorCode::NON_EMPTY_GROUP.code();
    assert_eq!(results, [(GROUP, refused), (PLAIN, 0)], "{deleted:?}");
    assert_eq!(
        committed(&upstream).await,
        5,
        "the running app's offsets are kept"
    );
    assert!(!listed(&upstream, &[]).await.contains(&PLAIN.to_owned()));
    gateway.shutdown().await;
    upstream.shutdown().await;
}

/// A group config altered through a gateway is forwarded and kept by the cluster (no kcoord
/// node keeps one of its own), and the gateway runs its streams group with it: the heartbeat
/// interval a member joining afterwards is given.
#[tokio::test]
async fn a_group_config_set_through_the_gateway_is_the_clusters_and_the_gateway_applies_it() {
    use kcoord_wire::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kcoord_wire::messages::{
        IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
        StreamsGroupHeartbeatResponse,
    };
    const INTERVAL: &str = "streams.heartbeat.interval.ms";
    let upstream = upstream().await;
    create_topic(upstream.broker_addr().unwrap(), SOURCE).await;
    let gateway = gateway_seeing_the_source(&upstream).await;
    let addr = gateway.broker_addr().unwrap();
    let joined = |member: String| async move {
        let answer: StreamsGroupHeartbeatResponse = until_served(
            addr,
            ApiKey::StreamsGroupHeartbeat,
            0,
            &join_request(&member),
            |r: &StreamsGroupHeartbeatResponse| r.error_code,
        )
        .await;
        assert_eq!(answer.error_code, 0, "{answer:?}");
        answer.heartbeat_interval_ms
    };
    assert_eq!(joined("member-1".into()).await, 5_000, "the default");

    let alter = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 32,
            resource_name: GROUP.into(),
            configs: vec![AlterableConfig {
                name: INTERVAL.into(),
                config_operation: 0,
                value: Some("7000".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let altered: IncrementalAlterConfigsResponse =
        call(addr, ApiKey::IncrementalAlterConfigs, 1, &alter).await;
    assert_eq!(altered.responses[0].error_code, 0, "{altered:?}");
    let kept = upstream
        .state()
        .cluster
        .snapshot()
        .group_configs
        .get(GROUP)
        .cloned();
    assert_eq!(
        kept.and_then(|c| c.get(INTERVAL).cloned()).as_deref(),
        Some("7000")
    );
    assert!(gateway.state().cluster.snapshot().group_configs.is_empty());

    // The gateway reads the cluster's group configs back within about a second.
    let deadline = Instant::now() + Duration::from_secs(30);
    for probe in 2.. {
        if joined(format!("member-{probe}")).await == 7_000 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway never applied the cluster's config"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    gateway.shutdown().await;
    upstream.shutdown().await;
}
