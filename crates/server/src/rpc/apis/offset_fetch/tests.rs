use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kcoord_wire::messages::OffsetCommitRequest;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{create_topic, encodes, heartbeat, running, server, Ctx, FAST_GROUPS};
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
    let resp = crate::rpc::apis::offset_commit::handle(&c.ctx(state), req, 9).await;
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

/// Commits `offset + p` with `metadata` to partitions `parts` of `topic` for the admin of
/// `group` in one request.
async fn commit_many(state: &ServerState, group: &str, topic: &str, parts: &[i32], metadata: &str) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: parts
                .iter()
                .map(|p| OffsetCommitRequestPartition {
                    partition_index: *p,
                    committed_offset: 1000 + i64::from(*p),
                    committed_metadata: Some(metadata.into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = crate::rpc::apis::offset_commit::handle(&c.ctx(state), req, 9).await;
    assert!(resp.topics[0].partitions.iter().all(|p| p.error_code == 0));
}

/// A partition asked for again and again is read once; its copies carry its metadata only
/// while the repeat budget lasts, then answer INVALID_REQUEST (before: every copy carried the
/// 4000 bytes, so a 4-byte repeat in the request cost 4 KB of response).
#[tokio::test]
async fn repeated_partitions_are_copied_within_the_budget() {
    use crate::rpc::groups::MAX_REPEATED_ANSWER_BYTES;
    let r = running("");
    create_topic(&r.state, "t", 2).await;
    let metadata = "x".repeat(4000);
    commit_many(&r.state, "g", "t", &[0], &metadata).await;
    let repeats = 2000;
    let req = OffsetFetchRequest {
        groups: vec![group(
            "g",
            None,
            -1,
            Some(vec![by_name("t", &vec![0; repeats]), by_name("t", &[1, 1])]),
        )],
        ..Default::default()
    };
    let resp = call(&r.state, req, 8).await;
    let partitions = &resp.groups[0].topics[0].partitions;
    assert_eq!(partitions.len(), repeats);
    let copies = 1 + MAX_REPEATED_ANSWER_BYTES / metadata.len();
    for (i, p) in partitions.iter().enumerate() {
        if i < copies {
            assert_eq!(
                (p.committed_offset, p.error_code, p.metadata.as_deref()),
                (1000, 0, Some(metadata.as_str())),
                "copy {i}"
            );
        } else {
            assert_eq!(
                (p.committed_offset, p.error_code),
                (-1, ErrorCode::INVALID_REQUEST.code()),
                "repeat {i}"
            );
        }
    }
    // Partitions without metadata cost nothing to repeat.
    let other = &resp.groups[0].topics[1].partitions;
    assert!(other
        .iter()
        .all(|p| p.error_code == 0 && p.committed_offset == -1));
}

/// A group asking for all its offsets, named again and again: read once, copied while the
/// budget lasts, then the group answers INVALID_REQUEST.
#[tokio::test]
async fn repeated_fetch_all_entries_are_copied_within_the_budget() {
    use crate::rpc::groups::MAX_REPEATED_ANSWER_BYTES;
    let r = running("");
    create_topic(&r.state, "t", 3).await;
    let metadata = "y".repeat(4000);
    commit_many(&r.state, "g", "t", &[0, 1, 2], &metadata).await;
    let entries = 1000;
    let req = OffsetFetchRequest {
        groups: (0..entries).map(|_| group("g", None, -1, None)).collect(),
        ..Default::default()
    };
    let resp = call(&r.state, req, 8).await;
    assert_eq!(resp.groups.len(), entries);
    let full: Vec<usize> = resp
        .groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.error_code == 0)
        .map(|(i, _)| i)
        .collect();
    // Each copy carries three partitions of 4000 bytes of metadata.
    let copies = MAX_REPEATED_ANSWER_BYTES / (3 * 4000);
    assert!(
        (copies..=copies + 1).contains(&full.len()),
        "{}",
        full.len()
    );
    assert_eq!(full, (0..full.len()).collect::<Vec<_>>());
    assert!(resp.groups[full.len()..]
        .iter()
        .all(|g| g.error_code == ErrorCode::INVALID_REQUEST.code() && g.topics.is_empty()));
    assert_eq!(rows(&resp.groups[0]).len(), 3);
    assert_eq!(rows(&resp.groups[full.len() - 1]), rows(&resp.groups[0]));
}

/// A long list never holds the shard for one job: partitions and offsets are read in jobs of
/// [`OFFSETS_PER_JOB`], and the answers are those of one long read (before: one job).
#[tokio::test]
async fn long_lists_are_read_in_small_jobs() {
    let r = running("offsets.topic.num.partitions=1\n");
    let partitions = 3000;
    create_topic(&r.state, "t", partitions).await;
    let all: Vec<i32> = (0..partitions).collect();
    commit_many(&r.state, "g", "t", &all, "m").await;
    let shard = r.state.coordinators.for_group("g");

    let before = shard.jobs_run();
    let req = OffsetFetchRequest {
        groups: vec![group("g", None, -1, Some(vec![by_name("t", &all)]))],
        ..Default::default()
    };
    let resp = call(&r.state, req, 8).await;
    let jobs = shard.jobs_run() - before;
    assert!(jobs >= 3, "{jobs} jobs");
    let got = rows(&resp.groups[0]);
    assert_eq!(got.len(), all.len());
    assert!(got
        .iter()
        .zip(&all)
        .all(|((_, _, p, offset, code), q)| p == q
            && *offset == 1000 + i64::from(*q)
            && *code == 0));

    let before = shard.jobs_run();
    let req = OffsetFetchRequest {
        groups: vec![group("g", None, -1, None)],
        ..Default::default()
    };
    let resp = call(&r.state, req, 8).await;
    let jobs = shard.jobs_run() - before;
    assert!(jobs >= 3, "{jobs} jobs");
    let mut got: Vec<(i32, i64)> = rows(&resp.groups[0])
        .into_iter()
        .map(|(_, _, p, offset, _)| (p, offset))
        .collect();
    got.sort_unstable();
    assert_eq!(
        got,
        all.iter()
            .map(|p| (*p, 1000 + i64::from(*p)))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn require_stable_answers_unstable_offset_commit_while_a_transaction_holds_an_offset() {
    let r = running("");
    create_topic(&r.state, "t", 2).await;
    commit(&r.state, "g", "", -1, "t", 0, 5).await;
    // Producer 9's open transaction holds an offset of t-1 for "g".
    let offsets = [kcoord_coordinator::commits::OffsetToCommit {
        topic: "t".into(),
        topic_id: Uuid::nil(),
        partition: 1,
        offset: 40,
        leader_epoch: -1,
        metadata: None,
    }];
    let pending = kcoord_coordinator::txn_offsets::TxnOffsetCommit {
        group_id: "g",
        producer_id: 9,
        member_id: "",
        group_instance_id: None,
        generation_id_or_member_epoch: -1,
        api_version: 3,
        offsets: &offsets,
    };
    let shard = r.state.coordinators.for_group("g");
    let written = shard
        .call(|s, now| s.commit_transactional_offsets(&pending, now))
        .await;
    assert!(matches!(written, Ok(Ok(_))), "{written:?}");
    let fetch = |stable: bool, topics: Option<Vec<OffsetFetchRequestTopics>>| OffsetFetchRequest {
        groups: vec![group("g", None, -1, topics)],
        require_stable: stable,
        ..Default::default()
    };
    let named = || Some(vec![by_name("t", &[0, 1])]);
    let unstable = ErrorCode::UNSTABLE_OFFSET_COMMIT.code();
    let resp = call(&r.state, fetch(true, named()), 8).await;
    assert_eq!(
        rows(&resp.groups[0]),
        vec![
            ("t".into(), Uuid::nil(), 0, 5, 0),
            ("t".into(), Uuid::nil(), 1, -1, unstable)
        ]
    );
    assert_eq!(resp.groups[0].error_code, 0);
    // Without RequireStable the pending offset is not there yet.
    let resp = call(&r.state, fetch(false, named()), 8).await;
    assert_eq!(
        rows(&resp.groups[0])[1],
        ("t".into(), Uuid::nil(), 1, -1, 0)
    );
    // Once committed by its marker, "all offsets" lists it as stable.
    shard
        .call(|s, _| s.complete_transactional_offsets(9, true))
        .await
        .unwrap();
    let resp = call(&r.state, fetch(true, None), 8).await;
    assert_eq!(
        rows(&resp.groups[0]),
        vec![
            ("t".into(), Uuid::nil(), 0, 5, 0),
            ("t".into(), Uuid::nil(), 1, 40, 0)
        ]
    );
}
