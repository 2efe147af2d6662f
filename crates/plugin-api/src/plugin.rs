//! The plugin trait: the specification's operations plus its lifecycle.
use std::collections::BTreeMap;

use async_trait::async_trait;
use uuid::Uuid;

use crate::{PluginError, RequestContext, StreamsGroupTopologyDescription};

/// The daemon's configuration as plain key/value pairs (Kafka's `Configurable.configure`).
pub type PluginConfigs = BTreeMap<String, String>;

/// A backend that stores and serves streams groups' topology descriptions.
///
/// Implementations must be thread-safe: `set_topology` may run concurrently for the same
/// `(group_id, topology_description_id)`, and such calls carry identical data, so they must be
/// idempotent.
#[async_trait]
pub trait StreamsGroupTopologyDescriptionPlugin: Send + Sync {
    /// Called once, before any other method, with the daemon's configuration.
    fn configure(&mut self, _configs: &PluginConfigs) -> Result<(), PluginError> {
        Ok(())
    }

    /// Whether the member that just heartbeated should push its description under `id`.
    ///
    /// On the heartbeat path: it must return quickly and must not block; work that needs an
    /// external service belongs in a background task, returning `false` until it is done. It
    /// should not fail or panic; the daemon treats a panic as `false` and logs it at WARN.
    fn requires_topology_push(&self, ctx: &RequestContext, group_id: &str, id: Uuid) -> bool;

    /// Stores (or forwards) a pushed description. `id` is the one the heartbeat asked for,
    /// passed through unchanged.
    async fn set_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError>;

    /// Removes what is stored for a group that was deleted with DeleteGroups.
    async fn delete_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
    ) -> Result<(), PluginError>;

    /// The description stored for `(group_id, id)`, or `None` if nothing is stored under that
    /// id (never pushed, expired, or stored under another id).
    async fn get_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError>;

    /// Called once on shutdown.
    fn close(&self) {}
}
