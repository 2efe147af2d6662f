//! DescribeGroups (key 15), v0-6: the classic groups API, after Kafka's
//! `GroupMetadataManager.describeGroups`. A classic group shows its state, protocol type and
//! members (with their metadata and assignment once Stable); a group known only by its
//! committed offsets is an Empty classic group (protocol type "", no members). A streams
//! group is "not a classic group", and an unknown group is not found: v6 answers
//! GROUP_ID_NOT_FOUND with Kafka's message and state Dead, older versions just state Dead with
//! no error, as Kafka does. A group the principal may not DESCRIBE is
//! GROUP_AUTHORIZATION_FAILED, listed before the others.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_groups_response::DescribedGroup;
use kcoord_wire::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, authorized_operations, AclOperation, ResourceType};
use crate::rpc::groups::{per_group, Distinct, RepeatBudget};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// DescribeGroups as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeGroups, 0, 6)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Group)])
    .by_group_in_gateway();

serve!(async handle);

const DEAD: &str = "Dead";

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeGroupsRequest,
    version: i16,
) -> DescribeGroupsResponse {
    // DESCRIBE on each group; the denied ones come first, in request order (Kafka's
    // `handleDescribeGroupsRequest`).
    let (allowed, denied): (Vec<String>, Vec<String>) = req
        .groups
        .into_iter()
        .partition(|id| authorize(ctx, AclOperation::Describe, ResourceType::Group, id));
    // A repeated id is looked up once; its copies cost what an error entry would.
    let distinct = Distinct::of(&allowed);
    let answers = per_group(&ctx.server.coordinators, &distinct.ids, |shard, _, ids| {
        kcoord_coordinator::Outcome::answer(
            ids.iter()
                .map(|id| {
                    shard
                        .describe_classic_group(id)
                        .map_err(|e| (e.code, e.message))
                })
                .collect::<Vec<_>>(),
        )
    })
    .await;
    let groups = distinct
        .ids
        .iter()
        .zip(answers)
        .map(|(id, answer)| match answer {
            Ok(Ok(described)) => DescribedGroup {
                authorized_operations: if version >= 3 && req.include_authorized_operations {
                    authorized_operations(ctx, ResourceType::Group, id)
                } else {
                    crate::rpc::authorize::AUTHORIZED_OPERATIONS_OMITTED
                },
                ..described
            },
            Ok(Err((code, message))) if code == ErrorCode::GROUP_ID_NOT_FOUND => {
                if version >= 6 {
                    DescribedGroup {
                        group_id: id.clone(),
                        group_state: DEAD.to_owned(),
                        error_code: code.code(),
                        error_message: message,
                        ..Default::default()
                    }
                } else {
                    DescribedGroup {
                        group_id: id.clone(),
                        group_state: DEAD.to_owned(),
                        ..Default::default()
                    }
                }
            }
            Ok(Err((code, _))) => error_group(id, code),
            Err(e) => error_group(id, e.error_code()),
        })
        .collect();
    let groups = distinct.expand(
        groups,
        &mut RepeatBudget::unbounded(),
        |_| 0,
        |id| error_group(id, ErrorCode::INVALID_REQUEST),
    );
    let denied = denied
        .iter()
        .map(|id| error_group(id, ErrorCode::GROUP_AUTHORIZATION_FAILED));
    DescribeGroupsResponse {
        throttle_time_ms: 0,
        groups: denied.chain(groups).collect(),
        ..Default::default()
    }
}

/// Kafka's `DescribeGroupsResponse.groupError`: the code and empty state, protocol type and
/// protocol.
fn error_group(group_id: &str, code: ErrorCode) -> DescribedGroup {
    DescribedGroup {
        group_id: group_id.to_owned(),
        error_code: code.code(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of DescribeGroups ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(DescribeGroups 5 on Broker, DescribeGroupsRequest {
                groups: vec![GROUP.into()],
                ..Default::default()
            },
            needs [(Describe, Group, GROUP)],
            DescribeGroupsResponse => |r| code(r.groups[0].error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kcoord_wire::messages::OffsetCommitRequest;

    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{
        create_topic, encodes, heartbeat, running, server, Ctx, FAST_GROUPS,
    };
    use crate::state::ServerState;

    async fn call(
        state: &ServerState,
        ids: &[&str],
        ops: bool,
        version: i16,
    ) -> Vec<(String, i16, Option<String>, String, i32)> {
        let c = Ctx::new(state, ListenerKind::Broker);
        let req = DescribeGroupsRequest {
            groups: ids.iter().map(|s| (*s).to_owned()).collect(),
            include_authorized_operations: ops,
            ..Default::default()
        };
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp.groups
            .into_iter()
            .map(|g| {
                (
                    g.group_id,
                    g.error_code,
                    g.error_message,
                    g.group_state,
                    g.authorized_operations,
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn streams_groups_are_not_classic_groups() {
        let r = running(FAST_GROUPS);
        create_topic(&r.state, "t", 1).await;
        heartbeat(&r.state, "app", "m", 0, "t").await;
        // An admin commit makes "simple" an Empty classic group.
        let c = Ctx::new(&r.state, ListenerKind::Broker);
        let commit = OffsetCommitRequest {
            group_id: "simple".into(),
            generation_id_or_member_epoch: -1,
            topics: vec![OffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        crate::rpc::apis::offset_commit::handle(&c.ctx(&r.state), commit, 9).await;

        let got = call(&r.state, &["app", "nope", "simple"], true, 6).await;
        assert_eq!(
            got,
            vec![
                (
                    "app".into(),
                    69,
                    Some("Group app is not a classic group.".into()),
                    "Dead".into(),
                    i32::MIN
                ),
                (
                    "nope".into(),
                    69,
                    Some("Group nope not found.".into()),
                    "Dead".into(),
                    i32::MIN
                ),
                ("simple".into(), 0, None, "Empty".into(), 0xd48),
            ]
        );
        for version in 0..=5 {
            let got = call(&r.state, &["app", "nope", "simple"], true, version).await;
            let ops = if version >= 3 { 0xd48 } else { i32::MIN };
            assert_eq!(
                got,
                vec![
                    ("app".into(), 0, None, "Dead".into(), i32::MIN),
                    ("nope".into(), 0, None, "Dead".into(), i32::MIN),
                    ("simple".into(), 0, None, "Empty".into(), ops),
                ],
                "v{version}"
            );
        }
    }

    /// Repeated ids are answered at each position, as Kafka answers them, from one look-up
    /// each, and the shard serves the distinct ones in small jobs (before: one job of all
    /// 10,000 occurrences).
    #[tokio::test]
    async fn repeated_ids_are_answered_at_each_position_from_small_jobs() {
        let r = running("offsets.topic.num.partitions=1\n");
        let shard = r.state.coordinators.for_group("g0");
        let before = shard.jobs_run();
        let names: Vec<String> = (0..10_000).map(|i| format!("g{}", i % 40)).collect();
        let ids: Vec<&str> = names.iter().map(String::as_str).collect();
        let got = call(&r.state, &ids, false, 5).await;
        let jobs = shard.jobs_run() - before;
        assert_eq!(
            jobs as usize,
            40usize.div_ceil(crate::rpc::groups::GROUPS_PER_JOB)
        );
        assert_eq!(got.len(), ids.len());
        for (id, answer) in ids.iter().zip(&got) {
            assert_eq!(answer, &((*id).into(), 0, None, "Dead".into(), i32::MIN));
        }
    }

    #[tokio::test]
    async fn unavailable_shards_answer_per_group() {
        let got = call(&server(), &["a"], false, 6).await;
        assert_eq!(
            got,
            vec![(
                "a".into(),
                ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
                None,
                "".into(),
                i32::MIN
            )]
        );
    }
}
