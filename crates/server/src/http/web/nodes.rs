//! Gateway mode with several kcoord nodes: each node holds the groups of the shards it serves
//! (`docs/gateway.md`), so a node's JSON API asks the others for the rest. A request about one
//! streams group (`/api/v1/groups/{groupId}` and everything under it) is passed to the HTTP
//! listener of the node serving the group, and its answer returned as that node gave it;
//! `/api/v1/groups` adds the other nodes' groups to this node's. The page reads only the API,
//! so any node's page shows every group.
//!
//! A request a node passes on carries [`PASSED_ON`]: the node that gets it answers from its
//! own groups only, so two nodes that disagree for a moment about a shard never pass a
//! request back and forth.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawPathParams, Request, State};
use axum::http::header::{CONTENT_TYPE, HOST};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;

use super::error::ApiError;
use crate::runtime::shards::shard_index;
use crate::state::ServerState;
use crate::support::logging::log_per_group;

/// The header of a request one node passes to another.
pub const PASSED_ON: &str = "x-kcoord-passed-on";
/// How long a node waits for another's answer, connecting included.
const NODE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer taken from another node (a topology drawing of thousands of nodes fits).
const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// Passes a request about one streams group to the node serving it, when that is another
/// node with an HTTP listener; otherwise this node answers.
pub async fn pass_to_owner(
    State(server): State<Arc<ServerState>>,
    params: RawPathParams,
    request: Request,
    next: Next,
) -> Response {
    let group = params
        .iter()
        .find(|(name, _)| *name == "group_id")
        .map(|(_, value)| value.to_owned());
    let owner = match group {
        Some(group) if is_streams_group_path(request.uri().path()) => {
            owner_http(&server, &group, request.headers())
        }
        _ => None,
    };
    let Some(owner) = owner else {
        return next.run(request).await;
    };
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    match get_from_node(&owner, &path).await {
        Ok(response) => response,
        Err(reason) => {
            log_per_group!(
                warn, server.group_lines, "http: node", &owner,
                node = %owner, error = %reason,
                "the kcoord node serving the group did not answer a JSON API request"
            );
            unreachable_node(&owner, &reason)
        }
    }
}

fn is_streams_group_path(path: &str) -> bool {
    path.starts_with("/api/v1/groups/")
}

/// The HTTP listener of the node serving `group`, when that is another node and the request
/// was not passed on already.
fn owner_http(server: &ServerState, group: &str, headers: &HeaderMap) -> Option<String> {
    if headers.contains_key(PASSED_ON) {
        return None;
    }
    let gateway = server.gateway.as_ref()?;
    if !gateway.has_other_nodes() {
        return None;
    }
    let shard = shard_index(group, server.coordinators.len());
    gateway.ownership().elsewhere(shard)?.http.clone()
}

/// The HTTP listeners of the other nodes, for a request that was not passed on already.
pub fn other_nodes(server: &ServerState, headers: &HeaderMap) -> Vec<String> {
    let Some(gateway) = server.gateway.as_ref() else {
        return Vec::new();
    };
    if headers.contains_key(PASSED_ON) || !gateway.has_other_nodes() {
        return Vec::new();
    }
    let ownership = gateway.ownership();
    ownership
        .other_http_listeners()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// GET `path` from the node whose HTTP listener is `node`: its answer, status, content type
/// and body.
pub async fn get_from_node(node: &str, path: &str) -> Result<Response, String> {
    let (status, content_type, body) = fetch(node, path).await?;
    let mut response = (status, body).into_response();
    if let Some(content_type) = content_type {
        response.headers_mut().insert(CONTENT_TYPE, content_type);
    }
    Ok(response)
}

/// GET `path` from `node`: the status, the content type and the body.
pub async fn fetch(
    node: &str,
    path: &str,
) -> Result<(StatusCode, Option<HeaderValue>, Bytes), String> {
    tokio::time::timeout(NODE_TIMEOUT, fetch_unbounded(node, path))
        .await
        .map_err(|_| format!("no answer within {} s", NODE_TIMEOUT.as_secs()))?
}

async fn fetch_unbounded(
    node: &str,
    path: &str,
) -> Result<(StatusCode, Option<HeaderValue>, Bytes), String> {
    let stream = tokio::net::TcpStream::connect(node)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    // Drives the connection until the answer is read; it ends with the sender.
    tokio::spawn(connection);
    let request = axum::http::Request::get(path)
        .header(HOST, node)
        .header(PASSED_ON, "1")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, content_type, body))
}

/// 503 with the API's error document: the node serving the group did not answer.
fn unreachable_node(node: &str, reason: &str) -> Response {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "COORDINATOR_NOT_AVAILABLE",
        format!("the kcoord node serving this group ({node}) did not answer: {reason}"),
    )
    .into_response()
}
