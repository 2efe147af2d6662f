//! `GET /health/live` and `GET /health/ready`, for orchestrators' probes.
//!
//! Live: 200 whenever the process answers. Ready: 200 once every listener is bound and serving
//! and every coordinator shard has loaded its groups; until then (or when a shard could not
//! load and stays unavailable) 503, with a JSON body saying what is missing.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::AppState;
use crate::state::ServerState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
}

async fn live() -> impl IntoResponse {
    Json(json!({ "status": "live" }))
}

async fn ready(State(state): State<AppState>) -> impl IntoResponse {
    let missing = not_ready(&state);
    if missing.is_empty() {
        (StatusCode::OK, Json(json!({ "status": "ready" })))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "not ready", "not_ready": missing })),
        )
    }
}

/// What keeps the node from being ready, one sentence each; empty once it is.
pub fn not_ready(state: &ServerState) -> Vec<String> {
    let mut missing = Vec::new();
    if !state.readiness.listeners_serving() {
        missing.push("the listeners are not serving yet".to_owned());
    }
    let shards: Vec<usize> = state
        .coordinators
        .all()
        .filter(|s| s.is_loading())
        .map(|s| s.index())
        .collect();
    if !shards.is_empty() {
        missing.push(format!(
            "{} of {} coordinator shards have not loaded: {}",
            shards.len(),
            state.coordinators.len(),
            shown(&shards)
        ));
    }
    missing
}

/// The first few shard indexes, so that the body stays short with 1,000 shards.
fn shown(shards: &[usize]) -> String {
    const SHOWN: usize = 10;
    let mut text: Vec<String> = shards.iter().take(SHOWN).map(usize::to_string).collect();
    if shards.len() > SHOWN {
        text.push("...".to_owned());
    }
    text.join(", ")
}
