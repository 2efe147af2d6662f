//! In gateway mode, the RPCs whose answer is the cluster's and kcoord's together: ListGroups
//! lists the cluster's groups and the streams groups kcoord coordinates, which the cluster
//! does not know (docs/gateway.md). kcoord's part is worked out before the request goes
//! upstream and merged into the cluster's answer when it comes back.

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::list_groups_response::ListedGroup;
use kcoord_wire::messages::{ListGroupsRequest, ListGroupsResponse};
use kcoord_wire::{Decodable, Encodable};

use crate::gateway::forward::Change;
use crate::rpc::apis::list_groups;
use crate::state::RequestContext;

/// kcoord's part of the answer to this request, as a change to the cluster's; none when the
/// request does not decode (the cluster answers it alone, as Kafka would).
pub(crate) async fn local_part(
    ctx: &RequestContext<'_>,
    api: ApiKey,
    version: i16,
    body: &Bytes,
) -> Option<Change> {
    if api != ApiKey::ListGroups {
        return None;
    }
    let request = ListGroupsRequest::decode(&mut body.clone(), version).ok()?;
    // Every streams group of the kcoord nodes, asked once of each: the filtered part is kcoord's
    // answer, and all of them are hidden from the cluster's. The cluster lists a streams group's
    // offsets as a group of the same id without members (`streams_offsets.rs`): kcoord's answer
    // replaces it, and a filter that leaves out kcoord's streams group
    // (`kafka-consumer-groups --list` asks for classic and consumer groups) hides it, as Kafka
    // lists a streams group under its own type only.
    let every = ListGroupsRequest {
        types_filter: vec!["streams".to_owned()],
        ..Default::default()
    };
    let every = kcoords_groups(ctx, &every, LIST_GROUPS_TYPES).await;
    let hidden: Vec<String> = every.groups.iter().map(|g| g.group_id.clone()).collect();
    let filters = list_groups::Filters::of(&request, version);
    let ours = ListGroupsResponse {
        groups: every
            .groups
            .into_iter()
            .filter(|g| filters.keep(&g.group_state, &g.group_type))
            .collect(),
        ..every
    };
    Some(Change::With(Box::new(move |theirs| {
        merge_list_groups(theirs, ours, &hidden, version)
    })))
}

/// ListGroups' first version with TypesFilter.
const LIST_GROUPS_TYPES: i16 = 5;

/// The streams groups of this node and of the other kcoord nodes that `request` asks for.
async fn kcoords_groups(
    ctx: &RequestContext<'_>,
    request: &ListGroupsRequest,
    version: i16,
) -> ListGroupsResponse {
    let mut ours = list_groups::handle(ctx, request.clone(), version).await;
    ours.groups
        .extend(other_nodes_groups(ctx, request, version).await);
    ours
}

/// The streams groups the other kcoord nodes serve (several nodes in front of one cluster),
/// asked of each with the request passed on, which each answers with its own groups only. A
/// node that does not answer in time is left out, logged.
async fn other_nodes_groups(
    ctx: &RequestContext<'_>,
    request: &ListGroupsRequest,
    version: i16,
) -> Vec<ListedGroup> {
    let Some(gateway) = ctx.server.gateway.as_ref() else {
        return Vec::new();
    };
    let mut body = BytesMut::with_capacity(64);
    if request.encode(&mut body, version).is_err() {
        return Vec::new();
    }
    let body = body.freeze();
    let header = crate::rpc::owner_proxy::passed_on(ctx.header, ctx.client_host, ctx.principal);
    let mut groups = Vec::new();
    for node in gateway.ownership().other_nodes() {
        let asked = async {
            let conn =
                kcoord_client::Connection::connect(node, gateway.node_client().clone()).await?;
            let pending = conn
                .forward(
                    ApiKey::ListGroups,
                    version,
                    header.client_id.as_deref(),
                    body.clone(),
                    true,
                )
                .await?
                .ok_or_else(|| kcoord_client::ClientError::Protocol("no answer".into()))?;
            let mut answer = pending.response().await?;
            ListGroupsResponse::decode(&mut answer, version)
                .map_err(|e| kcoord_client::ClientError::Protocol(e.to_string()))
        };
        match tokio::time::timeout(gateway.node_client().request_timeout, asked).await {
            Ok(Ok(answer)) if answer.error_code == 0 => groups.extend(answer.groups),
            Ok(Ok(answer)) => gateway.log_failure(
                node,
                "a kcoord node could not list its groups; they are left out of ListGroups",
                &answer.error_code,
            ),
            Ok(Err(e)) => gateway.log_failure(
                node,
                "a kcoord node could not be asked for its groups; they are left out of ListGroups",
                &e,
            ),
            Err(_) => gateway.log_failure(
                node,
                "a kcoord node did not list its groups in time; they are left out of ListGroups",
                &"timed out",
            ),
        }
    }
    groups
}

/// The cluster's ListGroups answer with kcoord's groups added; a group the cluster lists
/// under an id of `hidden` (kcoord's streams groups) is left out. An error of the cluster's
/// stays, so a client retries as it would with the cluster alone.
pub(crate) fn merge_list_groups(
    mut theirs: Bytes,
    ours: ListGroupsResponse,
    hidden: &[String],
    version: i16,
) -> Result<Bytes, String> {
    let mut merged = ListGroupsResponse::decode(&mut theirs, version)
        .map_err(|e| format!("the upstream's ListGroups v{version} answer does not decode: {e}"))?;
    if merged.error_code == 0 {
        merged.groups.retain(|g| {
            !hidden.contains(&g.group_id) && !ours.groups.iter().any(|o| o.group_id == g.group_id)
        });
        merged.groups.extend(ours.groups);
    }
    let mut out = BytesMut::with_capacity(256);
    merged
        .encode(&mut out, version)
        .map_err(|e| format!("the merged ListGroups v{version} answer does not encode: {e}"))?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use kcoord_wire::messages::list_groups_response::ListedGroup;

    use super::*;

    fn group(id: &str, kind: &str) -> ListedGroup {
        ListedGroup {
            group_id: id.to_owned(),
            protocol_type: String::new(),
            group_state: "Stable".to_owned(),
            group_type: kind.to_owned(),
            ..Default::default()
        }
    }

    fn encoded(response: &ListGroupsResponse, version: i16) -> Bytes {
        let mut out = BytesMut::new();
        response.encode(&mut out, version).unwrap();
        out.freeze()
    }

    #[test]
    fn the_clusters_groups_and_kcoords_streams_groups_are_listed_together() {
        let theirs = ListGroupsResponse {
            groups: vec![group("classic-app", "classic"), group("app", "classic")],
            ..Default::default()
        };
        let ours = ListGroupsResponse {
            groups: vec![group("app", "streams")],
            ..Default::default()
        };
        let hidden = ["app".to_owned()];
        let merged = merge_list_groups(encoded(&theirs, 5), ours, &hidden, 5).unwrap();
        let merged = ListGroupsResponse::decode(&mut merged.clone(), 5).unwrap();
        let groups: Vec<(&str, &str)> = merged
            .groups
            .iter()
            .map(|g| (g.group_id.as_str(), g.group_type.as_str()))
            .collect();
        assert_eq!(groups, [("classic-app", "classic"), ("app", "streams")]);
    }

    #[test]
    fn a_streams_groups_offsets_are_not_listed_as_a_classic_group_under_a_filter() {
        // `kafka-consumer-groups --list`: classic and consumer groups only; kcoord's part is
        // empty, and the cluster's group of the streams app's offsets is hidden.
        let theirs = ListGroupsResponse {
            groups: vec![group("classic-app", "classic"), group("app", "classic")],
            ..Default::default()
        };
        let hidden = ["app".to_owned()];
        let merged = merge_list_groups(
            encoded(&theirs, 5),
            ListGroupsResponse::default(),
            &hidden,
            5,
        )
        .unwrap();
        let merged = ListGroupsResponse::decode(&mut merged.clone(), 5).unwrap();
        let ids: Vec<&str> = merged.groups.iter().map(|g| g.group_id.as_str()).collect();
        assert_eq!(ids, ["classic-app"]);
    }

    #[test]
    fn an_error_of_the_cluster_stays_and_a_bad_answer_is_an_error() {
        let theirs = ListGroupsResponse {
            error_code: 15,
            ..Default::default()
        };
        let ours = ListGroupsResponse {
            groups: vec![group("app", "streams")],
            ..Default::default()
        };
        let merged = merge_list_groups(encoded(&theirs, 4), ours.clone(), &[], 4).unwrap();
        let merged = ListGroupsResponse::decode(&mut merged.clone(), 4).unwrap();
        assert_eq!((merged.error_code, merged.groups.len()), (15, 0));
        assert!(merge_list_groups(Bytes::from_static(&[0]), ours, &[], 4).is_err());
    }
}
