//! `/api/v1/...`: the streams groups, one group with its members, its topology description and
//! its drawing, read with ListGroups and StreamsGroupDescribe ([`super::kafka`]); and
//! `/api/openapi.json`, the document that describes them (`docs/openapi.json`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::ErrorCode;

use super::drawings::Drawings;
use super::error::ApiError;
use super::json::{GroupDescription, GroupList, GroupListing, GroupSummary};
use super::{kafka, no_store, nodes, topology};
use crate::state::ServerState;
use crate::support::logging::log_per_group;

/// The OpenAPI 3.1 document of this API.
pub const OPENAPI: &str = include_str!("../../../../../docs/openapi.json");

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route("/api/openapi.json", get(openapi))
        .route("/api/v1/groups", get(list_groups))
        .route("/api/v1/groups/{group_id}", get(describe_group))
        .route(
            "/api/v1/groups/{group_id}/topology",
            get(topology::description),
        )
        .route(
            "/api/v1/groups/{group_id}/topology.svg",
            get(topology::drawing),
        )
        // One per listener: the drawings its clients asked for.
        .layer(Extension(Arc::new(Drawings::default())))
}

/// The HTTP client's address, when the listener recorded it (the ACLs' host).
pub struct Peer(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0);
        Ok(Peer(peer))
    }
}

async fn openapi() -> Response {
    ([(CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// ListGroups, then one StreamsGroupDescribe of every listed group for its epochs and members;
/// in gateway mode with several nodes, with the other nodes' groups ([`nodes`]).
async fn list_groups(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let listed = kafka::list_streams_groups(&server, peer).await;
    if listed.error_code != ErrorCode::NONE.code() {
        return Err(ApiError::kafka(listed.error_code, None));
    }
    let ids = listed.groups.iter().map(|g| g.group_id.clone()).collect();
    let described = kafka::describe_streams_groups(&server, peer, ids, false).await;
    let groups = listed
        .groups
        .into_iter()
        .zip(described)
        .filter_map(|(listed, described)| {
            match ErrorCode::from_code(described.error_code) {
                Some(ErrorCode::NONE) => {
                    Some(GroupListing::Described(GroupSummary::from(&described)))
                }
                // Deleted between the two requests.
                Some(ErrorCode::GROUP_ID_NOT_FOUND) => None,
                _ => Some(GroupListing::Failed {
                    group_id: listed.group_id,
                    group_state: listed.group_state,
                    error: ApiError::kafka(
                        described.error_code,
                        described.error_message.as_deref(),
                    )
                    .into(),
                }),
            }
        })
        .collect();
    let others = nodes::other_nodes(&server, &headers);
    if others.is_empty() {
        return Ok((no_store(), Json(GroupList { groups })).into_response());
    }
    let mut groups: Vec<serde_json::Value> = groups
        .into_iter()
        .filter_map(|g| serde_json::to_value(g).ok())
        .collect();
    for node in others {
        groups.extend(groups_of_node(&server, &node).await);
    }
    groups.sort_by(|a, b| a["groupId"].as_str().cmp(&b["groupId"].as_str()));
    let list = serde_json::json!({ "groups": groups });
    Ok((no_store(), Json(list)).into_response())
}

/// The groups another node lists as its own; none (logged) when it does not answer, so the
/// list shows the groups that can be read, as Kafka's Admin lists the groups of the brokers
/// that answer.
async fn groups_of_node(server: &ServerState, node: &str) -> Vec<serde_json::Value> {
    let answer = match nodes::fetch(node, "/api/v1/groups").await {
        Ok((status, _, body)) if status.is_success() => {
            serde_json::from_slice::<serde_json::Value>(&body).map_err(|e| e.to_string())
        }
        Ok((status, _, _)) => Err(format!("HTTP status {status}")),
        Err(reason) => Err(reason),
    };
    match answer {
        Ok(mut list) => match list["groups"].take() {
            serde_json::Value::Array(groups) => groups,
            _ => Vec::new(),
        },
        Err(reason) => {
            log_per_group!(
                warn, server.group_lines, "http: node", node,
                node = %node, error = %reason,
                "a kcoord node did not list its groups; the JSON API lists the others'"
            );
            Vec::new()
        }
    }
}

async fn describe_group(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let group = describe_one(&server, peer, group_id, false).await?;
    Ok((no_store(), Json(GroupDescription::from(group))).into_response())
}

/// StreamsGroupDescribe of one group; its error, if any, as the API's.
pub async fn describe_one(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_id: String,
    include_topology_description: bool,
) -> Result<DescribedGroup, ApiError> {
    let group =
        kafka::describe_streams_groups(server, peer, vec![group_id], include_topology_description)
            .await
            .pop()
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ErrorCode::UNKNOWN_SERVER_ERROR.name(),
                    "StreamsGroupDescribe answered no group",
                )
            })?;
    if group.error_code != ErrorCode::NONE.code() {
        return Err(ApiError::kafka(
            group.error_code,
            group.error_message.as_deref(),
        ));
    }
    Ok(group)
}
