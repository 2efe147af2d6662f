//! ListGroups (key 16), v0-5, after Kafka's `GroupMetadataManager.listGroups`, over every shard.
//!
//! Streams groups are listed with ProtocolType and GroupType `streams`; groups that only have
//! committed offsets are Kafka's "simple" classic groups (protocol type "", state Empty).
//! StatesFilter (v4+) is compared case-insensitively, trimmed, with the state's lower-case form,
//! which for NotReady is `not_ready` (Kafka's `StreamsGroupState.toLowerCaseString`).
//! TypesFilter (v5+) is parsed case-insensitively; an unknown type matches no group.
//! Without DESCRIBE on the cluster only the groups the principal may DESCRIBE are listed
//! (the others are left out silently, as in Kafka).

use kcoord_coordinator::groups::ListedGroup;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::list_groups_response::ListedGroup as WireListedGroup;
use kcoord_wire::messages::{ListGroupsRequest, ListGroupsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::rpc::{serve, Check, Rpc};
use crate::state::RequestContext;

/// ListGroups as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::ListGroups, 0, 5)
    .asks(&[
        Check::new(AclOperation::Describe, ResourceType::Cluster),
        Check::new(AclOperation::Describe, ResourceType::Group),
    ])
    .merged_in_gateway();

serve!(async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: ListGroupsRequest,
    version: i16,
) -> ListGroupsResponse {
    let mut listed: Vec<ListedGroup> = Vec::new();
    for shard in ctx.server.coordinators.all() {
        match shard.read(|s| s.list_groups()).await {
            Ok(groups) => listed.extend(groups),
            // Another kcoord node serves this shard and lists its groups itself (gateway mode).
            Err(crate::runtime::shards::ShardError::NotOwned) => {}
            Err(e) => {
                return ListGroupsResponse {
                    error_code: e.error_code().code(),
                    ..Default::default()
                }
            }
        }
    }
    let filters = Filters::of(&req, version);
    // DESCRIBE on the cluster shows every group; without it, those the principal may DESCRIBE.
    let everything = authorize(
        ctx,
        AclOperation::Describe,
        ResourceType::Cluster,
        KAFKA_CLUSTER,
    );
    let mut groups: Vec<WireListedGroup> = listed
        .into_iter()
        .filter(|g| {
            everything
                || authorize(
                    ctx,
                    AclOperation::Describe,
                    ResourceType::Group,
                    &g.group_id,
                )
        })
        .filter(|g| filters.keep(&g.group_state, &g.group_type))
        .map(|g| WireListedGroup {
            group_id: g.group_id,
            protocol_type: g.protocol_type,
            group_state: g.group_state,
            group_type: g.group_type,
            ..Default::default()
        })
        .collect();
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    ListGroupsResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.code(),
        groups,
        ..Default::default()
    }
}

/// A request's StatesFilter and TypesFilter, as Kafka applies them at the request's version.
pub(crate) struct Filters {
    states: Vec<String>,
    types: Vec<String>,
}

impl Filters {
    pub(crate) fn of(req: &ListGroupsRequest, version: i16) -> Filters {
        let states = if version >= 4 {
            req.states_filter
                .iter()
                .map(|s| s.to_lowercase().trim().to_owned())
                .collect()
        } else {
            Vec::new()
        };
        let types = if version >= 5 {
            req.types_filter.iter().map(|t| t.to_lowercase()).collect()
        } else {
            Vec::new()
        };
        Filters { states, types }
    }

    /// Whether a group in `state` of `group_type` is listed.
    pub(crate) fn keep(&self, state: &str, group_type: &str) -> bool {
        (self.states.is_empty() || self.states.contains(&lower_case_state(state)))
            && (self.types.is_empty() || self.types.iter().any(|t| t == group_type))
    }
}

/// The lower-case form Kafka compares the StatesFilter with.
fn lower_case_state(state: &str) -> String {
    match state {
        "NotReady" => "not_ready".to_owned(),
        other => other.to_lowercase(),
    }
}

/// The authorization matrix's rows of ListGroups ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(ListGroups ("cluster") 5 on Broker, ListGroupsRequest::default(),
            needs [(Describe, Cluster, CLUSTER)],
            ListGroupsResponse => |r| listed(r.error_code, r.groups.iter().map(|g| g.group_id.as_str()), GROUP),
            allowed "g listed", denied "g left out"),
        row!(ListGroups ("group") 5 on Broker, ListGroupsRequest::default(),
            needs [(Describe, Group, GROUP)],
            ListGroupsResponse => |r| listed(r.error_code, r.groups.iter().map(|g| g.group_id.as_str()), GROUP),
            allowed "g listed", denied "g left out"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::testing::{
        create_topic, encodes, heartbeat, running, server, Ctx, FAST_GROUPS,
    };
    use crate::state::ServerState;

    async fn call(
        state: &ServerState,
        states: &[&str],
        types: &[&str],
        version: i16,
    ) -> Vec<(String, String, String, String)> {
        let c = Ctx::new(state, ListenerKind::Broker);
        let req = ListGroupsRequest {
            states_filter: states.iter().map(|s| (*s).to_owned()).collect(),
            types_filter: types.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        };
        let resp = handle(&c.ctx(state), req, version).await;
        encodes(&resp, version);
        assert_eq!(resp.error_code, 0);
        resp.groups
            .into_iter()
            .map(|g| (g.group_id, g.protocol_type, g.group_state, g.group_type))
            .collect()
    }

    fn row(id: &str, protocol: &str, state: &str, kind: &str) -> (String, String, String, String) {
        (id.into(), protocol.into(), state.into(), kind.into())
    }

    #[tokio::test]
    async fn lists_every_shard_with_filters() {
        let r = running(&format!("{FAST_GROUPS}offsets.topic.num.partitions=3\n"));
        create_topic(&r.state, "input", 2).await;
        for g in ["a", "b", "c", "d"] {
            heartbeat(&r.state, g, "m", 0, "input").await;
        }
        // A group whose topology reads a missing topic is NotReady.
        heartbeat(&r.state, "waiting", "m", 0, "missing").await;
        let all = call(&r.state, &[], &[], 5).await;
        assert_eq!(
            all,
            vec![
                row("a", "streams", "Stable", "streams"),
                row("b", "streams", "Stable", "streams"),
                row("c", "streams", "Stable", "streams"),
                row("d", "streams", "Stable", "streams"),
                row("waiting", "streams", "NotReady", "streams"),
            ]
        );
        let ids = |rows: Vec<(String, String, String, String)>| -> Vec<String> {
            rows.into_iter().map(|r| r.0).collect()
        };
        assert_eq!(
            ids(call(&r.state, &[" STABLE "], &[], 4).await),
            vec!["a", "b", "c", "d"]
        );
        // Kafka compares with "not_ready", so "NotReady" matches nothing.
        assert_eq!(
            ids(call(&r.state, &["not_ready"], &[], 4).await),
            vec!["waiting"]
        );
        assert!(call(&r.state, &["NotReady"], &[], 4).await.is_empty());
        assert_eq!(call(&r.state, &[], &["Streams"], 5).await.len(), 5);
        assert!(call(&r.state, &[], &["consumer"], 5).await.is_empty());
        assert!(call(&r.state, &[], &["bogus"], 5).await.is_empty());
        // Filters do not exist before v4 / v5.
        assert_eq!(call(&r.state, &["empty"], &["classic"], 3).await.len(), 5);
        assert_eq!(call(&r.state, &[], &["classic"], 4).await.len(), 5);
        for version in 0..=5 {
            assert_eq!(call(&r.state, &[], &[], version).await.len(), 5);
        }
    }

    #[tokio::test]
    async fn unavailable_shards_fail_the_request() {
        let state = server();
        let c = Ctx::new(&state, ListenerKind::Broker);
        let resp = handle(&c.ctx(&state), ListGroupsRequest::default(), 5).await;
        assert_eq!(resp.error_code, ErrorCode::COORDINATOR_NOT_AVAILABLE.code());
    }

    #[test]
    fn lower_case_states_are_kafkas() {
        assert_eq!(lower_case_state("NotReady"), "not_ready");
        assert_eq!(lower_case_state("Stable"), "stable");
        assert_eq!(lower_case_state("Empty"), "empty");
    }
}
