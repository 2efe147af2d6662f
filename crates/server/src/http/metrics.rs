//! `GET /metrics`: every metric of the daemon in the Prometheus text format 0.0.4.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use super::AppState;

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub fn routes() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let census = |each: &mut dyn FnMut(crate::metrics::GroupCount)| {
        for shard in state.coordinators.all() {
            shard.census(&mut *each);
        }
    };
    state.metrics.refresh(census, state.partitions.len());
    let open: usize = state
        .coordinators
        .all()
        .map(|s| s.open_transactions())
        .sum();
    state
        .metrics
        .transactions
        .open
        .set(i64::try_from(open).unwrap_or(i64::MAX));
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        state.metrics.encode(),
    )
}
