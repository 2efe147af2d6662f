//! DeleteGroups (key 42), v0-3, after Kafka's `KafkaApis.handleDeleteGroupsRequest` and
//! `GroupCoordinatorShard.deleteGroups`.
//!
//! Group ids are de-duplicated; a group the principal may not DELETE is
//! GROUP_AUTHORIZATION_FAILED, listed after the others; each other is deleted by its shard, which refuses a streams group
//! with members (NON_EMPTY_GROUP) and an unknown id (GROUP_ID_NOT_FOUND), and otherwise writes
//! the group's tombstones in Kafka's order followed by its offsets' tombstones. As in Kafka,
//! these per-group errors carry no ErrorMessage (v3 has the field for the topology-description
//! plugin's GROUP_DELETION_FAILED, issue 4); before v3 GROUP_DELETION_FAILED, which such clients
//! do not know, is answered as UNKNOWN_SERVER_ERROR.
//!
//! In gateway mode the offsets the cluster keeps for a deleted streams group are deleted there
//! too, and the group answers the cluster's code (`gateway/deletes.rs`).
//!
//! KIP-1331: once a group has been deleted without error, the topology description plugin's
//! `delete_topology` is called for it (for every such group at once, bounded by
//! `group.streams.topology.description.timeout.ms`), and the response waits for those calls so
//! that the plugin has been told when the caller gets its answer. A failure (error, panic or
//! timeout) is logged at WARN and does not change the response. Groups that become empty or
//! expire by themselves never reach the plugin: it forgets them by its own TTL.

use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::delete_groups_response::DeletableGroupResult;
use kcoord_wire::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::groups::per_group;
use crate::rpc::lists::first_occurrences;
use crate::rpc::plugin_context::plugin_context;
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;
use crate::support::logging::{capped, log_per_group};

/// DeleteGroups as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::DeleteGroups, 0, 3)
    .asks(&[Check::new(AclOperation::Delete, ResourceType::Group)])
    .by_group_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: DeleteGroupsRequest,
    version: i16,
) -> DeleteGroupsResponse {
    // DELETE on each group; the denied ones are answered after the others (Kafka's order).
    let (group_ids, denied): (Vec<String>, Vec<String>) = first_occurrences(req.groups_names)
        .into_iter()
        .partition(|id| authorize(ctx, AclOperation::Delete, ResourceType::Group, id));
    let answers = per_group(&ctx.server.coordinators, &group_ids, |shard, _, ids| {
        shard.delete_groups(ids)
    })
    .await;
    let answers: Vec<(ErrorCode, Option<String>)> = group_ids
        .iter()
        .zip(answers)
        .map(|(id, answer)| match answer {
            Ok(Ok(())) => {
                tracing::info!(group = %capped(id), "group deleted");
                (ErrorCode::NONE, None)
            }
            Ok(Err(e)) => (e.code, e.message),
            Err(e) => (e.error_code(), None),
        })
        .collect();
    forget_topology_descriptions(ctx, &group_ids, &answers).await;
    let answers = delete_in_the_cluster(ctx, &group_ids, answers).await;
    let denied = denied
        .into_iter()
        .map(|id| (id, (ErrorCode::GROUP_AUTHORIZATION_FAILED, None)));
    let results = group_ids
        .into_iter()
        .zip(answers)
        .chain(denied)
        .map(|(group_id, (code, message))| result(group_id, code, message, version))
        .collect();
    DeleteGroupsResponse {
        throttle_time_ms: 0,
        results,
        ..Default::default()
    }
}

/// In gateway mode a streams group's offsets are kept in the cluster: each group deleted here
/// is deleted there too, and answers the cluster's code. A cluster that cannot be reached
/// leaves the group deleted here and answers COORDINATOR_NOT_AVAILABLE, so the client tries
/// again; that try finds no streams group here and goes to the cluster whole.
async fn delete_in_the_cluster(
    ctx: &RequestContext<'_>,
    group_ids: &[String],
    answers: Vec<(ErrorCode, Option<String>)>,
) -> Vec<(ErrorCode, Option<String>)> {
    let Some(gateway) = ctx.server.gateway.as_ref() else {
        return answers;
    };
    let deleted: Vec<&str> = group_ids
        .iter()
        .zip(&answers)
        .filter(|(_, (code, _))| *code == ErrorCode::NONE)
        .map(|(id, _)| id.as_str())
        .collect();
    let mut upstream = gateway.delete_groups_upstream(&deleted).await.into_iter();
    group_ids
        .iter()
        .zip(answers)
        .map(|(group_id, (code, message))| {
            if code != ErrorCode::NONE {
                return (code, message);
            }
            match upstream.next() {
                Some(Ok(code)) => (code, None),
                Some(Err(e)) => {
                    log_per_group!(
                        warn, ctx.server.group_lines, "delete groups: upstream", group_id,
                        group = %capped(group_id), error = %e,
                        "the group is deleted here, but its offsets in the upstream cluster are not yet; the client's retry deletes them"
                    );
                    (ErrorCode::COORDINATOR_NOT_AVAILABLE, None)
                }
                None => (ErrorCode::UNKNOWN_SERVER_ERROR, None),
            }
        })
        .collect()
}

/// `delete_topology` for each group deleted without error; failures are only logged.
async fn forget_topology_descriptions(
    ctx: &RequestContext<'_>,
    group_ids: &[String],
    answers: &[(ErrorCode, Option<String>)],
) {
    let topology = &ctx.server.topology;
    if !topology.is_enabled() {
        return;
    }
    let calls: Vec<_> = group_ids
        .iter()
        .zip(answers)
        .filter(|(_, (code, _))| *code == ErrorCode::NONE)
        .map(|(group_id, _)| {
            let call = topology.delete(plugin_context(ctx), group_id.clone());
            (group_id, call)
        })
        .collect();
    for (group_id, call) in calls {
        if let Err(e) = call.outcome().await {
            log_per_group!(
                warn, ctx.server.group_lines, "delete groups: plugin delete failed", group_id,
                group = %capped(group_id), error = %e,
                "topology description plugin failed to delete the group's topology description; the group is deleted regardless"
            );
        }
    }
}

fn result(
    group_id: String,
    code: ErrorCode,
    message: Option<String>,
    version: i16,
) -> DeletableGroupResult {
    // Clients before v3 do not know GROUP_DELETION_FAILED.
    let code = if version < 3 && code == ErrorCode::GROUP_DELETION_FAILED {
        ErrorCode::UNKNOWN_SERVER_ERROR
    } else {
        code
    };
    DeletableGroupResult {
        group_id,
        error_code: code.code(),
        // Kafka's shard answers NON_EMPTY_GROUP and GROUP_ID_NOT_FOUND with the code only.
        error_message: (version >= 3 && code == ErrorCode::GROUP_DELETION_FAILED)
            .then_some(message)
            .flatten(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of DeleteGroups ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![row!(DeleteGroups 2 on Broker, DeleteGroupsRequest {
                groups_names: vec![GROUP.into()],
                ..Default::default()
            },
            needs [(Delete, Group, GROUP)],
            DeleteGroupsResponse => |r| code(r.results[0].error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{create_topic, encodes, heartbeat, running, Ctx, FAST_GROUPS};
    use crate::state::ServerState;

    async fn call(
        state: &ServerState,
        ids: &[&str],
        version: i16,
    ) -> Vec<(String, i16, Option<String>)> {
        let c = Ctx::new(state, ListenerKind::Broker);
        let req = DeleteGroupsRequest {
            groups_names: ids.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        };
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        resp.results
            .into_iter()
            .map(|r| (r.group_id, r.error_code, r.error_message))
            .collect()
    }

    #[tokio::test]
    async fn only_empty_groups_are_deleted() {
        let r = running(&format!("{FAST_GROUPS}offsets.topic.num.partitions=3\n"));
        create_topic(&r.state, "input", 1).await;
        let joined = heartbeat(&r.state, "busy", "m", 0, "input").await;
        heartbeat(&r.state, "idle", "m", 0, "input").await;
        let left = heartbeat(&r.state, "idle", "m", -1, "input").await;
        assert_eq!(left.member_epoch, -1);
        for version in 0..=3 {
            let got = call(&r.state, &["busy", "nope"], version).await;
            assert_eq!(
                got,
                vec![
                    ("busy".into(), ErrorCode::NON_EMPTY_GROUP.code(), None),
                    ("nope".into(), ErrorCode::GROUP_ID_NOT_FOUND.code(), None),
                ]
            );
        }
        // Named twice, answered once.
        let got = call(&r.state, &["idle", "idle"], 3).await;
        assert_eq!(got, vec![("idle".into(), 0, None)]);
        assert_eq!(
            call(&r.state, &["idle"], 3).await[0].1,
            ErrorCode::GROUP_ID_NOT_FOUND.code()
        );
        assert!(joined.member_epoch > 0);
    }

    #[tokio::test]
    async fn a_huge_list_of_repeated_group_ids_is_answered_once_each_in_first_seen_order() {
        let r = running(&format!("{FAST_GROUPS}offsets.topic.num.partitions=3\n"));
        create_topic(&r.state, "input", 1).await;
        heartbeat(&r.state, "idle", "m", 0, "input").await;
        let left = heartbeat(&r.state, "idle", "m", -1, "input").await;
        assert_eq!(left.member_epoch, -1);
        let unknown = |i: usize| format!("g-{i}");
        let mut ids: Vec<String> = (0..100_000).map(unknown).collect();
        ids.insert(50_000, "idle".into());
        ids.extend((0..100_000).rev().map(unknown));
        ids.push("idle".into());
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let got = call(&r.state, &refs, 3).await;
        let mut expected: Vec<(String, i16, Option<String>)> = ids[..100_001]
            .iter()
            .map(|id| (id.clone(), ErrorCode::GROUP_ID_NOT_FOUND.code(), None))
            .collect();
        expected[50_000].1 = ErrorCode::NONE.code();
        assert!(got == expected, "answers differ");
    }

    #[test]
    fn group_deletion_failed_is_unknown_before_v3() {
        let failed = |v| {
            result(
                "g".into(),
                ErrorCode::GROUP_DELETION_FAILED,
                Some("plugin".into()),
                v,
            )
        };
        assert_eq!((failed(2).error_code, failed(2).error_message), (-1, None));
        assert_eq!(
            (failed(3).error_code, failed(3).error_message.as_deref()),
            (134, Some("plugin"))
        );
    }
}
