//! OffsetDelete without sockets: the checks in Kafka's order and the shard's answers.
use std::sync::Arc;

use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kcoord_wire::messages::{OffsetCommitRequest, OffsetFetchRequest};

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{create_topic, encodes, heartbeat, running, Ctx, FAST_GROUPS};
use crate::security::DenyAll;
use crate::state::ServerState;

fn request(group: &str, topics: &[(&str, &[i32])]) -> OffsetDeleteRequest {
    OffsetDeleteRequest {
        group_id: group.into(),
        topics: topics
            .iter()
            .map(|(name, parts)| OffsetDeleteRequestTopic {
                name: (*name).into(),
                partitions: parts
                    .iter()
                    .map(|p| OffsetDeleteRequestPartition {
                        partition_index: *p,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// (top-level error, [(topic, partition, error)]).
async fn call(state: &ServerState, req: OffsetDeleteRequest) -> (i16, Vec<(String, i32, i16)>) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, 0).await;
    encodes(&resp, 0);
    let parts = resp
        .topics
        .into_iter()
        .flat_map(|t| {
            let name = t.name;
            t.partitions
                .into_iter()
                .map(move |p| (name.clone(), p.partition_index, p.error_code))
        })
        .collect();
    (resp.error_code, parts)
}

async fn commit(state: &ServerState, group: &str, member: &str, epoch: i32, topic: &str, p: i32) {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = OffsetCommitRequest {
        group_id: group.into(),
        member_id: member.into(),
        generation_id_or_member_epoch: epoch,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: p,
                committed_offset: 42,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = crate::rpc::apis::offset_commit::handle(&c.ctx(state), req, 9).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
}

/// The committed partitions of `group`, as OffsetFetch (all topics) lists them.
async fn committed(state: &ServerState, group: &str) -> Vec<(String, i32)> {
    let c = Ctx::new(state, ListenerKind::Broker);
    let req = OffsetFetchRequest {
        group_id: group.into(),
        topics: None,
        ..Default::default()
    };
    let resp = crate::rpc::apis::offset_fetch::handle(&c.ctx(state), req, 7).await;
    let mut out: Vec<(String, i32)> = resp
        .topics
        .into_iter()
        .flat_map(|t| {
            let name = t.name;
            t.partitions
                .into_iter()
                .map(move |p| (name.clone(), p.partition_index))
        })
        .collect();
    out.sort();
    out
}

const NONE: i16 = 0;

#[tokio::test]
async fn an_offsets_only_group_loses_the_offsets_named_and_unknown_topics_are_refused_first() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 2).await;
    create_topic(&r.state, "other", 1).await;
    commit(&r.state, "simple", "", -1, "input", 0).await;
    commit(&r.state, "simple", "", -1, "input", 1).await;
    commit(&r.state, "simple", "", -1, "other", 0).await;
    let got = call(
        &r.state,
        request(
            "simple",
            &[("input", &[0, 7]), ("nope", &[0]), ("other", &[0])],
        ),
    )
    .await;
    let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code();
    assert_eq!(
        got,
        (
            NONE,
            vec![
                ("input".into(), 7, unknown),
                ("input".into(), 0, NONE),
                ("nope".into(), 0, unknown),
                ("other".into(), 0, NONE),
            ]
        )
    );
    assert_eq!(
        committed(&r.state, "simple").await,
        vec![("input".into(), 1)]
    );
}

#[tokio::test]
async fn a_streams_group_keeps_the_offsets_of_topics_it_consumes() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 1).await;
    create_topic(&r.state, "other", 1).await;
    let joined = heartbeat(&r.state, "app", "m", 0, "input").await;
    commit(&r.state, "app", "m", joined.member_epoch, "input", 0).await;
    // "other" is not in the topology, so the member cannot commit it; an admin commit needs
    // an empty group: delete what is not there, which is still NONE.
    let got = call(
        &r.state,
        request("app", &[("input", &[0]), ("other", &[0])]),
    )
    .await;
    assert_eq!(
        got,
        (
            NONE,
            vec![
                (
                    "input".into(),
                    0,
                    ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC.code()
                ),
                ("other".into(), 0, NONE),
            ]
        )
    );
    assert_eq!(committed(&r.state, "app").await, vec![("input".into(), 0)]);
}

#[tokio::test]
async fn group_level_refusals_answer_the_request() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 1).await;
    assert_eq!(
        call(
            &r.state,
            request("ghost", &[("input", &[0]), ("nope", &[0])])
        )
        .await,
        (ErrorCode::GROUP_ID_NOT_FOUND.code(), vec![])
    );
    assert_eq!(
        call(&r.state, request("", &[("input", &[0])])).await,
        (ErrorCode::INVALID_GROUP_ID.code(), vec![])
    );
    let mut denied = crate::rpc::testing::server();
    denied.authorizer = Some(Arc::new(DenyAll));
    assert_eq!(
        call(&denied, request("g", &[("input", &[0])])).await,
        (ErrorCode::GROUP_AUTHORIZATION_FAILED.code(), vec![])
    );
}

#[tokio::test]
async fn a_huge_list_of_repeated_topics_is_answered_under_one_entry_per_topic_in_order() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 2).await;
    commit(&r.state, "simple", "", -1, "input", 0).await;
    commit(&r.state, "simple", "", -1, "input", 1).await;
    let names: Vec<String> = (0..100_000).map(|i| format!("nope-{i}")).collect();
    let mut topics: Vec<(&str, &[i32])> = names.iter().map(|n| (n.as_str(), &[0][..])).collect();
    topics.insert(50_000, ("input", &[0]));
    topics.extend(names.iter().rev().map(|n| (n.as_str(), &[1][..])));
    topics.push(("input", &[1]));
    let got = call(&r.state, request("simple", &topics)).await;
    let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code();
    let mut expected: Vec<(String, i32, i16)> = names
        .iter()
        .flat_map(|n| [(n.clone(), 0, unknown), (n.clone(), 1, unknown)])
        .collect();
    expected.push(("input".into(), 0, NONE));
    expected.push(("input".into(), 1, NONE));
    assert!(got == (NONE, expected), "answers differ");
    assert!(committed(&r.state, "simple").await.is_empty());
}

/// A partition named again and again is deleted once: one tombstone, however long the list
/// (before: one tombstone per occurrence, all written under the shard's lock), and every
/// occurrence is answered.
#[tokio::test]
async fn repeated_partitions_are_deleted_once() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 2).await;
    commit(&r.state, "simple", "", -1, "input", 0).await;
    let shard = r.state.coordinators.for_group("simple");
    let next_offset = || shard.read(|s| s.store().log().next_offset());
    let before = next_offset().await.unwrap();
    let repeated = vec![0; 100_000];
    let got = call(
        &r.state,
        request("simple", &[("input", &repeated), ("input", &[1, 0])]),
    )
    .await;
    assert_eq!(got.0, NONE);
    assert_eq!(got.1.len(), repeated.len() + 2);
    assert!(got
        .1
        .iter()
        .all(|(t, _, code)| t == "input" && *code == NONE));
    assert_eq!(next_offset().await.unwrap() - before, 1, "one tombstone");
    assert!(committed(&r.state, "simple").await.is_empty());
}
