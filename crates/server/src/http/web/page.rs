//! `/`: the page listing the streams groups and drawing each one's topology, then the
//! consumer groups with their members, assignments and lag, and its six assets. All of them
//! are compiled in (no file to deploy, nothing fetched at run time); the
//! script polls the JSON API and inlines each group's SVG so that its nodes can be clicked.

use std::sync::Arc;

use axum::http::header::{HeaderName, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::routing::get;
use axum::Router;

use crate::state::ServerState;

const INDEX_HTML: &str = include_str!("assets/index.html");
const COMMON_JS: &str = include_str!("assets/common.js");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const CONSUMERS_JS: &str = include_str!("assets/consumers.js");
const VERSIONS_JS: &str = include_str!("assets/versions.js");
const RUNNING_JS: &str = include_str!("assets/running.js");

/// The page runs its own script and style only, and talks to this server only.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                      img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
                      form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/assets/common.js",
            get(|| async { asset("text/javascript; charset=utf-8", COMMON_JS) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/assets/consumers.js",
            get(|| async { asset("text/javascript; charset=utf-8", CONSUMERS_JS) }),
        )
        .route(
            "/assets/versions.js",
            get(|| async { asset("text/javascript; charset=utf-8", VERSIONS_JS) }),
        )
        .route(
            "/assets/running.js",
            get(|| async { asset("text/javascript; charset=utf-8", RUNNING_JS) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
}

/// A compiled-in file. `no-cache`: a browser revalidates, so a new daemon's page is never
/// mixed with an old one's script.
fn asset(
    content_type: &'static str,
    body: &'static str,
) -> ([(HeaderName, &'static str); 3], &'static str) {
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "no-cache"),
            (CONTENT_SECURITY_POLICY, POLICY),
        ],
        body,
    )
}
