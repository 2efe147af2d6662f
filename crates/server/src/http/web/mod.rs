//! The JSON API for management UIs and the web page that draws every streams group's topology
//! (issue 15), as one axum [`Router`] the HTTP listener serves.
//!
//! - [`api`]: `/api/v1/groups`, `/api/v1/groups/{groupId}`, `.../topology`, `.../topology.svg`
//!   and `/api/openapi.json` (`docs/openapi.json`, which the tests check every answer against);
//! - [`versions`]: `.../topology/versions` and `.../topology/diff`, the group's deployments
//!   (TopologyDescriptionIds the coordinator minted) and what changed between two of them;
//! - [`tasks`], [`lag`] and [`timeline`]: `.../tasks`, `.../lag` and `.../timeline`, the
//!   running application on the graph: who runs which task and holds which store partition,
//!   where the lag is and how fast it moves, and what the group's rebalances did;
//! - [`consumer_groups`]: `/api/v1/consumer-groups` and `/api/v1/consumer-groups/{groupId}`
//!   (classic and consumer groups: members, assignments, lag);
//! - [`page`]: `/`, plain HTML, CSS and JavaScript compiled into the binary, which polls the
//!   API and inlines each group's drawing.
//!
//! Everything is read through the Kafka handlers ([`kafka`]): an HTTP request is a ListGroups or
//! StreamsGroupDescribe of `User:ANONYMOUS`, authorized and served as on a Kafka listener.

pub mod api;
mod consumer_groups;
mod drawings;
mod error;
mod json;
pub mod kafka;
mod lag;
pub mod nodes;
mod offsets;
pub mod page;
mod tasks;
mod timeline;
mod topology;
mod versions;

use std::sync::Arc;

use axum::http::header::{HeaderName, CACHE_CONTROL};
use axum::Router;

pub use error::ApiError;

use crate::state::ServerState;

/// The API's and the page's routes, which the HTTP listener merges (`crate::http::router`).
pub fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .merge(api::routes())
        .merge(consumer_groups::routes())
        .merge(versions::routes())
        .merge(tasks::routes())
        .merge(lag::routes())
        .merge(timeline::routes())
        .merge(page::routes())
}

/// [`routes`] reading `server`, on their own (the module's tests call them in-process).
pub fn router(server: Arc<ServerState>) -> Router {
    routes().with_state(server)
}

/// Answers change from one poll to the next: no cache may keep them.
fn no_store() -> [(HeaderName, &'static str); 1] {
    [(CACHE_CONTROL, "no-store")]
}

#[cfg(test)]
mod tests;
