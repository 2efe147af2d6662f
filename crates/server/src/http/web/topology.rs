//! `/api/v1/groups/{groupId}/topology` and `.../topology.svg`: the group's topology description
//! as StreamsGroupDescribe v1 returns it (the topology description plugin's, read under the
//! same authorization), in Kafka's Admin model with predecessors rebuilt, and drawn.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use kcoord_topology::{from_wire, StreamsGroupTopologyDescription, TopologyDescriptionStatus};
use kcoord_wire::ErrorCode;
use serde::Serialize;

use super::api::{describe_one, Peer};
use super::drawings::Drawings;
use super::error::{ApiError, TOPOLOGY_DESCRIPTION_ERROR, TOPOLOGY_DESCRIPTION_NOT_STORED};
use super::no_store;
use crate::state::ServerState;

/// `GET /api/v1/groups/{groupId}/topology`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyDocument {
    pub group_id: String,
    /// `AVAILABLE`, or why not: `NOT_STORED`, `ERROR`.
    pub topology_description_status: &'static str,
    pub topology_description: Option<StreamsGroupTopologyDescription>,
}

pub async fn description(
    State(server): State<Arc<ServerState>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let (status, description) = read(&server, peer, group_id.clone()).await?;
    let document = TopologyDocument {
        group_id,
        topology_description_status: status.name(),
        topology_description: description,
    };
    Ok((no_store(), Json(document)).into_response())
}

pub async fn drawing(
    State(server): State<Arc<ServerState>>,
    Extension(drawings): Extension<Arc<Drawings>>,
    Peer(peer): Peer,
    Path(group_id): Path<String>,
) -> Result<Response, ApiError> {
    let description = match read(&server, peer, group_id.clone()).await? {
        (_, Some(description)) => description,
        (TopologyDescriptionStatus::Error, None) => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                TOPOLOGY_DESCRIPTION_ERROR,
                format!(
                    "The topology description of group '{group_id}' could not be read; the coordinator's log says why."
                ),
            ))
        }
        (_, None) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                TOPOLOGY_DESCRIPTION_NOT_STORED,
                format!("No topology description has been recorded for group '{group_id}'."),
            ))
        }
    };
    let svg = drawings
        .draw(&group_id, description)
        .await
        .map_err(|e| internal(e.to_string()))?;
    Ok((
        no_store(),
        [(CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        svg,
    )
        .into_response())
}

/// The group's topology description status and description, as Kafka's Admin reads them.
async fn read(
    server: &ServerState,
    peer: Option<std::net::SocketAddr>,
    group_id: String,
) -> Result<
    (
        TopologyDescriptionStatus,
        Option<StreamsGroupTopologyDescription>,
    ),
    ApiError,
> {
    let group = describe_one(server, peer, group_id, true).await?;
    from_wire(
        group.topology_description_status,
        group.topology_description.as_ref(),
    )
    .map_err(|e| internal(format!("unreadable topology description: {e}")))
}

fn internal(message: String) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::UNKNOWN_SERVER_ERROR.name(),
        message,
    )
}
