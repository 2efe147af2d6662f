use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kcoord_wire::messages::OffsetCommitRequest;

use super::*;
use crate::config::ListenerKind;
use crate::handlers::testing::{
    create_topic, encodes, heartbeat, running, server, Ctx, FAST_GROUPS,
};
use crate::state::ServerState;

async fn call(state: &ServerState, req: OffsetFetchRequest, version: i16) -> OffsetFetchResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, version).await;
    encodes(&resp, version);
    resp
}

async fn commit(
    state: &ServerState,
    group: &str,
    member: &str,
    epoch: i32,
    topic: &str,
    partition: i32,
    offset: i64,
) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = OffsetCommitRequest {
        group_id: group.into(),
        member_id: member.into(),
        generation_id_or_member_epoch: epoch,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: partition,
                committed_offset: offset,
                committed_leader_epoch: 2,
                committed_metadata: Some("m".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = crate::handlers::offset_commit::handle(&c.ctx(state), req, 9).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
}

/// (topic, partition, offset, error) of a v8+ group answer.
fn rows(group: &OffsetFetchResponseGroup) -> Vec<(String, Uuid, i32, i64, i16)> {
    group
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.clone(),
                    t.topic_id,
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                )
            })
        })
        .collect()
}

fn single(topics: Option<&[(&str, &[i32])]>) -> OffsetFetchRequest {
    OffsetFetchRequest {
        group_id: "g".into(),
        topics: topics.map(|ts| {
            ts.iter()
                .map(|(n, ps)| OffsetFetchRequestTopic {
                    name: (*n).into(),
                    partition_indexes: ps.to_vec(),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}

fn group(
    id: &str,
    member: Option<&str>,
    epoch: i32,
    topics: Option<Vec<OffsetFetchRequestTopics>>,
) -> OffsetFetchRequestGroup {
    OffsetFetchRequestGroup {
        group_id: id.into(),
        member_id: member.map(str::to_owned),
        member_epoch: epoch,
        topics,
        ..Default::default()
    }
}

fn by_name(name: &str, parts: &[i32]) -> OffsetFetchRequestTopics {
    OffsetFetchRequestTopics {
        name: name.into(),
        partition_indexes: parts.to_vec(),
        ..Default::default()
    }
}

#[tokio::test]
async fn single_group_versions_answer_offsets_or_minus_one() {
    let r = running("");
    create_topic(&r.state, "t", 3).await;
    commit(&r.state, "g", "", -1, "t", 1, 50).await;
    for version in 1..=7 {
        let resp = call(
            &r.state,
            single(Some(&[("t", &[0, 1]), ("other", &[0])])),
            version,
        )
        .await;
        assert_eq!(resp.error_code, 0);
        let got: Vec<(&str, i32, i64, Option<&str>)> = resp
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        t.name.as_str(),
                        p.partition_index,
                        p.committed_offset,
                        p.metadata.as_deref(),
                    )
                })
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("t", 0, -1, Some("")),
                ("t", 1, 50, Some("m")),
                ("other", 0, -1, Some(""))
            ],
            "v{version}"
        );
        if version >= 5 {
            assert_eq!(resp.topics[0].partitions[1].committed_leader_epoch, 2);
        }
    }
    // A null topic list (v2+) means every committed offset.
    let resp = call(&r.state, single(None), 2).await;
    assert_eq!(resp.topics.len(), 1);
    assert_eq!(
        (
            resp.topics[0].partitions[0].partition_index,
            resp.topics[0].partitions[0].committed_offset
        ),
        (1, 50)
    );
}

#[tokio::test]
async fn groups_in_one_request_with_member_checks() {
    let r = running(FAST_GROUPS);
    let id = create_topic(&r.state, "t", 1).await;
    let epoch = heartbeat(&r.state, "app", "m", 0, "t").await.member_epoch;
    commit(&r.state, "app", "m", epoch, "t", 0, 7).await;
    let t = || Some(vec![by_name("t", &[0])]);
    let req = OffsetFetchRequest {
        groups: vec![
            group("app", Some("m"), epoch, t()),
            group("app", None, -1, t()),
            group("app", Some("m"), epoch + 1, t()),
            group("app", Some("x"), epoch, t()),
            group("nope", None, -1, t()),
        ],
        require_stable: true,
        ..Default::default()
    };
    let resp = call(&r.state, req, 9).await;
    let codes: Vec<i16> = resp.groups.iter().map(|g| g.error_code).collect();
    assert_eq!(
        codes,
        vec![
            0,
            0,
            ErrorCode::STALE_MEMBER_EPOCH.code(),
            ErrorCode::UNKNOWN_MEMBER_ID.code(),
            0
        ]
    );
    assert_eq!(
        rows(&resp.groups[0]),
        vec![("t".into(), Uuid::nil(), 0, 7, 0)]
    );
    assert_eq!(rows(&resp.groups[1]), rows(&resp.groups[0]));
    assert!(resp.groups[2].topics.is_empty());
    assert_eq!(
        rows(&resp.groups[4]),
        vec![("t".into(), Uuid::nil(), 0, -1, 0)]
    );

    // v10 names topics by id, for requests and for "all topics" answers.
    let ghost = Uuid::from_u128(9);
    let by_id = |id: Uuid| OffsetFetchRequestTopics {
        topic_id: id,
        partition_indexes: vec![0],
        ..Default::default()
    };
    let req = OffsetFetchRequest {
        groups: vec![
            group("app", None, -1, Some(vec![by_id(id), by_id(ghost)])),
            group("app", None, -1, None),
        ],
        ..Default::default()
    };
    let resp = call(&r.state, req, 10).await;
    assert_eq!(
        rows(&resp.groups[0]),
        vec![
            ("".into(), id, 0, 7, 0),
            ("".into(), ghost, 0, -1, ErrorCode::UNKNOWN_TOPIC_ID.code())
        ]
    );
    assert_eq!(rows(&resp.groups[1]), vec![("".into(), id, 0, 7, 0)]);
    for version in 8..=10 {
        let req = OffsetFetchRequest {
            groups: vec![group("app", None, -1, None)],
            ..Default::default()
        };
        assert_eq!(call(&r.state, req, version).await.groups[0].topics.len(), 1);
    }
}

#[tokio::test]
async fn group_errors_per_partition_in_v1_and_per_group_later() {
    let state = server();
    let resp = call(&state, single(Some(&[("t", &[0, 1])])), 1).await;
    assert_eq!(resp.error_code, 0);
    assert!(resp.topics[0].partitions.iter().all(|p| p.error_code
        == ErrorCode::COORDINATOR_NOT_AVAILABLE.code()
        && p.committed_offset == -1));
    let resp = call(&state, single(Some(&[("t", &[0, 1])])), 2).await;
    assert_eq!(resp.error_code, ErrorCode::COORDINATOR_NOT_AVAILABLE.code());
    assert!(resp.topics.is_empty());
}
