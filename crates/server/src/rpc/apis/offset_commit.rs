//! OffsetCommit (key 8), v2-10, after Kafka's `KafkaApis.handleOffsetCommitRequest` and
//! `OffsetMetadataManager.commitOffset`.
//!
//! Topics are resolved against the published catalog first: by id from v10 (unknown id:
//! UNKNOWN_TOPIC_ID for each of its partitions), by name before (unknown name or partition:
//! UNKNOWN_TOPIC_OR_PARTITION). Authorization as Kafka's: READ on the group, else every
//! partition is GROUP_AUTHORIZATION_FAILED; then, after the topic ids are resolved and before
//! names are looked up, READ on each topic (TOPIC_AUTHORIZATION_FAILED). The rest goes to the group's shard, which applies the streams
//! group rules (docs/kafka-coordinator-facts.md §4: admin commits to an empty or unknown group, v9+ for
//! members, the member-epoch checks) or a classic group's (member, static instance and
//! generation, REBALANCE_IN_PROGRESS before the sync); a group-level refusal is answered on every one of those
//! partitions, as Kafka does. The offsets are kept in the shard's log as OffsetCommit records.
//!
//! A commit whose records would not fit one batch of `message.max.bytes` (Kafka's coordinator
//! writes a commit as one batch, which its log then refuses) answers UNKNOWN_SERVER_ERROR on
//! every partition sent to the shard, as Kafka does; here it is refused before the shard is
//! locked, so it is refused even when the member check would have failed first in Kafka.

use kcoord_coordinator::commits::{offset_commit_batch_bytes, CommitMember, OffsetToCommit};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kcoord_wire::messages::{OffsetCommitRequest, OffsetCommitResponse};
use kcoord_wire::ErrorCode;
use tracing::debug;
use uuid::Uuid;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::catalog::{TopicImage, TopicsImage};
use crate::state::RequestContext;

/// OffsetCommit as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::OffsetCommit, 2, 10)
    .asks(&[
        Check::new(AclOperation::Read, ResourceType::Group),
        Check::new(AclOperation::Read, ResourceType::Topic),
    ])
    .by_group_in_gateway();

serve!(async handle);

/// The first version that names topics by id.
const TOPIC_ID_VERSION: i16 = 10;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: OffsetCommitRequest,
    version: i16,
) -> OffsetCommitResponse {
    let use_ids = version >= TOPIC_ID_VERSION;
    // READ on the group decides the whole request.
    let group_allowed = authorize(ctx, AclOperation::Read, ResourceType::Group, &req.group_id);
    let image = ctx.server.topics.snapshot();
    let Sorted {
        mut topics,
        pending,
        to_commit,
    } = sort_partitions(ctx, &req, &image, group_allowed, use_ids);

    let max_batch = usize::try_from(ctx.server.config.log.defaults.max_message_bytes).unwrap_or(0);
    if !to_commit.is_empty() && offset_commit_batch_bytes(&req.group_id, &to_commit) > max_batch {
        // Kafka's log refuses the coordinator's batch and the coordinator answers
        // UNKNOWN_SERVER_ERROR; refused here before the shard is locked, so that a commit of
        // millions of partitions never holds it.
        debug!(group = %req.group_id, partitions = to_commit.len(), "offset commit larger than message.max.bytes refused");
        for (ti, pi) in &pending {
            topics[*ti].partitions[*pi].error_code = ErrorCode::UNKNOWN_SERVER_ERROR.code();
        }
    } else if !to_commit.is_empty() {
        let codes = commit_on_shard(ctx, &req, version, to_commit, pending.len()).await;
        for ((ti, pi), code) in pending.iter().zip(codes) {
            topics[*ti].partitions[*pi].error_code = code.code();
        }
    }
    OffsetCommitResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

/// The request sorted out before the shard is asked.
struct Sorted {
    /// One answer per requested partition, filled in as it is decided.
    topics: Vec<OffsetCommitResponseTopic>,
    /// Where each partition sent to the shard goes back: (topic index, partition index).
    pending: Vec<(usize, usize)>,
    /// The offsets sent to the shard, in the order of `pending`.
    to_commit: Vec<OffsetToCommit>,
}

/// Answers the partitions refused before the shard (group or topic not authorized, topic or
/// partition unknown) and sets the others aside to commit.
fn sort_partitions(
    ctx: &RequestContext<'_>,
    req: &OffsetCommitRequest,
    image: &TopicsImage,
    group_allowed: bool,
    use_ids: bool,
) -> Sorted {
    let mut sorted = Sorted {
        topics: Vec::with_capacity(req.topics.len()),
        pending: Vec::new(),
        to_commit: Vec::new(),
    };
    let topics = &mut sorted.topics;
    for t in &req.topics {
        let resolved = if use_ids {
            image.get_by_id(&t.topic_id)
        } else {
            image.get(&t.name)
        };
        let topic_error = topic_error(ctx, &t.name, resolved, group_allowed, use_ids);
        let ti = topics.len();
        topics.push(OffsetCommitResponseTopic {
            name: if use_ids {
                String::new()
            } else {
                t.name.clone()
            },
            topic_id: if use_ids { t.topic_id } else { Uuid::nil() },
            partitions: Vec::with_capacity(t.partitions.len()),
            ..Default::default()
        });
        for p in &t.partitions {
            let code = match (topic_error, resolved) {
                (Some(e), _) => Some(e),
                (None, Some(topic)) if !topic.partitions.contains_key(&p.partition_index) => {
                    Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
                }
                _ => None,
            };
            let pi = topics[ti].partitions.len();
            topics[ti].partitions.push(OffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: code.unwrap_or(ErrorCode::NONE).code(),
                ..Default::default()
            });
            if let (None, Some(topic)) = (code, resolved) {
                sorted.pending.push((ti, pi));
                sorted.to_commit.push(OffsetToCommit {
                    topic: topic.name.clone(),
                    topic_id: topic.id,
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.committed_metadata.clone(),
                });
            }
        }
    }
    sorted
}

/// The error of every partition of a requested topic (`name` as sent, `resolved` by name or
/// id), if the whole topic is refused.
fn topic_error(
    ctx: &RequestContext<'_>,
    name: &str,
    resolved: Option<&TopicImage>,
    group_allowed: bool,
    use_ids: bool,
) -> Option<ErrorCode> {
    match resolved {
        _ if !group_allowed => Some(ErrorCode::GROUP_AUTHORIZATION_FAILED),
        None if use_ids => Some(ErrorCode::UNKNOWN_TOPIC_ID),
        // READ on the topic comes before its existence: a denied name reveals nothing.
        _ if !use_ids && !authorize(ctx, AclOperation::Read, ResourceType::Topic, name) => {
            Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
        }
        Some(topic)
            if use_ids && !authorize(ctx, AclOperation::Read, ResourceType::Topic, &topic.name) =>
        {
            Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
        }
        None => Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
        Some(_) => None,
    }
}

/// Commits `to_commit` on the group's shard: one code per pending partition (the group's
/// refusal, or the shard's failure, on each).
async fn commit_on_shard(
    ctx: &RequestContext<'_>,
    req: &OffsetCommitRequest,
    version: i16,
    to_commit: Vec<OffsetToCommit>,
    pending: usize,
) -> Vec<ErrorCode> {
    let member = CommitMember {
        member_id: &req.member_id,
        group_instance_id: req.group_instance_id.as_deref(),
        generation_or_epoch: req.generation_id_or_member_epoch,
    };
    let committed = ctx
        .server
        .coordinators
        .for_group(&req.group_id)
        .call(|shard, now| {
            shard.commit_offsets_of(&member, &req.group_id, version, &to_commit, now)
        })
        .await;
    match committed {
        Ok(Ok(codes)) => codes,
        Ok(Err(e)) => vec![e.code; pending],
        Err(e) => vec![e.error_code(); pending],
    }
}

/// The authorization matrix's rows of OffsetCommit ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(OffsetCommit ("group") 9 on Broker, offset_commit(),
            needs [(Read, Group, GROUP), (Read, Topic, TOPIC)],
            OffsetCommitResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetCommit ("topic") 9 on Broker, offset_commit(),
            also [(Read, Group, GROUP)],
            needs [(Read, Topic, TOPIC)],
            OffsetCommitResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{create_topic, encodes, heartbeat, running, Ctx, FAST_GROUPS};
    use crate::state::ServerState;

    fn commit(
        group: &str,
        member: &str,
        epoch: i32,
        topics: &[(&str, Uuid, &[i32])],
    ) -> OffsetCommitRequest {
        OffsetCommitRequest {
            group_id: group.into(),
            member_id: member.into(),
            generation_id_or_member_epoch: epoch,
            topics: topics
                .iter()
                .map(|(name, id, parts)| OffsetCommitRequestTopic {
                    name: (*name).into(),
                    topic_id: *id,
                    partitions: parts
                        .iter()
                        .map(|p| OffsetCommitRequestPartition {
                            partition_index: *p,
                            committed_offset: 100 + i64::from(*p),
                            committed_leader_epoch: 3,
                            committed_metadata: Some("meta".into()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    async fn call(
        state: &ServerState,
        req: OffsetCommitRequest,
        version: i16,
    ) -> Vec<(String, Uuid, i32, i16)> {
        let c = Ctx::new(state, ListenerKind::Broker);
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp.topics
            .into_iter()
            .flat_map(|t| {
                let (name, id) = (t.name, t.topic_id);
                t.partitions
                    .into_iter()
                    .map(move |p| (name.clone(), id, p.partition_index, p.error_code))
            })
            .collect()
    }

    #[tokio::test]
    async fn topics_and_partitions_must_exist() {
        let r = running("");
        let id = create_topic(&r.state, "input", 2).await;
        let nil = Uuid::nil();
        let got = call(
            &r.state,
            commit(
                "admin",
                "",
                -1,
                &[("input", nil, &[0, 5]), ("nope", nil, &[0])],
            ),
            9,
        )
        .await;
        assert_eq!(
            got,
            vec![
                ("input".into(), nil, 0, 0),
                (
                    "input".into(),
                    nil,
                    5,
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
                ),
                (
                    "nope".into(),
                    nil,
                    0,
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
                ),
            ]
        );
        let ghost = Uuid::from_u128(42);
        let got = call(
            &r.state,
            commit("admin", "", -1, &[("", id, &[1]), ("", ghost, &[0])]),
            10,
        )
        .await;
        assert_eq!(
            got,
            vec![
                ("".into(), id, 1, 0),
                ("".into(), ghost, 0, ErrorCode::UNKNOWN_TOPIC_ID.code())
            ]
        );
        // The admin commits made "admin" a group known by its offsets only.
        let offsets = r
            .state
            .coordinators
            .for_group("admin")
            .read(|s| s.committed_offsets("admin"))
            .await
            .unwrap();
        let got: Vec<(String, i32, i64, i32, String)> = offsets
            .into_iter()
            .map(|(t, p, o)| (t, p, o.offset, o.leader_epoch, o.metadata))
            .collect();
        assert_eq!(
            got,
            vec![
                ("input".into(), 0, 100, 3, "meta".into()),
                ("input".into(), 1, 101, 3, "meta".into())
            ]
        );
    }

    #[tokio::test]
    async fn streams_members_follow_the_epoch_rules() {
        let r = running(FAST_GROUPS);
        create_topic(&r.state, "input", 1).await;
        let joined = heartbeat(&r.state, "app", "m", 0, "input").await;
        let epoch = joined.member_epoch;
        let nil = Uuid::nil();
        let input: &[(&str, Uuid, &[i32])] = &[("input", nil, &[0])];
        let code = |got: Vec<(String, Uuid, i32, i16)>| got[0].3;
        assert_eq!(
            code(call(&r.state, commit("app", "m", epoch, input), 9).await),
            0
        );
        assert_eq!(
            code(call(&r.state, commit("app", "m", epoch, input), 8).await),
            ErrorCode::UNSUPPORTED_VERSION.code()
        );
        assert_eq!(
            code(call(&r.state, commit("app", "m", epoch + 1, input), 9).await),
            ErrorCode::STALE_MEMBER_EPOCH.code()
        );
        assert_eq!(
            code(call(&r.state, commit("app", "who", epoch, input), 9).await),
            ErrorCode::UNKNOWN_MEMBER_ID.code()
        );
        // A non-empty group refuses admin commits too: they are not members.
        assert_eq!(
            code(call(&r.state, commit("app", "", -1, input), 9).await),
            ErrorCode::UNKNOWN_MEMBER_ID.code()
        );
        assert_eq!(
            code(call(&r.state, commit("ghost", "m", 4, input), 9).await),
            ErrorCode::GROUP_ID_NOT_FOUND.code()
        );
        assert_eq!(
            code(call(&r.state, commit("ghost", "m", 4, input), 2).await),
            ErrorCode::ILLEGAL_GENERATION.code()
        );
        for version in 2..=10 {
            let id = r
                .state
                .topics
                .snapshot()
                .get("input")
                .map(|t| t.id)
                .unwrap_or_default();
            let topic: &[(&str, Uuid, &[i32])] = &[(
                if version < 10 { "input" } else { "" },
                if version < 10 { nil } else { id },
                &[0],
            )];
            call(&r.state, commit("admin", "", -1, topic), version).await;
        }
    }

    /// A commit whose batch would exceed `message.max.bytes` is refused with Kafka's
    /// UNKNOWN_SERVER_ERROR without running on the shard (before: its records were applied
    /// under the shard's lock, however many the request held).
    #[tokio::test]
    async fn a_commit_larger_than_one_batch_is_refused_before_the_shard() {
        let r = running("");
        create_topic(&r.state, "input", 2).await;
        let nil = Uuid::nil();
        let shard = r.state.coordinators.for_group("admin");
        let before = shard.jobs_run();
        // 0 repeated: each repeat is one more record of the batch.
        let repeated = vec![0; 30_000];
        let got = call(
            &r.state,
            commit(
                "admin",
                "",
                -1,
                &[("input", nil, &repeated), ("nope", nil, &[0])],
            ),
            9,
        )
        .await;
        assert_eq!(shard.jobs_run(), before, "the shard was not asked");
        assert_eq!(got.len(), repeated.len() + 1);
        assert!(got[..repeated.len()]
            .iter()
            .all(|(_, _, _, code)| *code == ErrorCode::UNKNOWN_SERVER_ERROR.code()));
        assert_eq!(
            got[repeated.len()].3,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
        );
        let offsets = shard
            .read(|s| s.committed_offsets("admin").len())
            .await
            .unwrap();
        assert_eq!(offsets, 0);
        // Within the limit, the same partitions commit.
        let got = call(
            &r.state,
            commit("admin", "", -1, &[("input", nil, &[0, 1, 0])]),
            9,
        )
        .await;
        assert!(got.iter().all(|(_, _, _, code)| *code == 0));

        // The limit is message.max.bytes.
        let r = running("message.max.bytes=200\n");
        create_topic(&r.state, "input", 2).await;
        let got = call(
            &r.state,
            commit("admin", "", -1, &[("input", nil, &[0])]),
            9,
        )
        .await;
        assert_eq!(got[0].3, 0);
        let got = call(
            &r.state,
            commit("admin", "", -1, &[("input", nil, &[0, 1])]),
            9,
        )
        .await;
        assert!(got
            .iter()
            .all(|(_, _, _, code)| *code == ErrorCode::UNKNOWN_SERVER_ERROR.code()));
    }
}
