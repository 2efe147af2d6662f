//! The plugin interface of KIP-1331 (Streams Group Topology Description Plugin).
//!
//! The coordinator mints a `TopologyDescriptionId` per group topology, asks members to push their
//! full processing graph, and hands it to a plugin that stores and serves it. A plugin
//! implements [`StreamsGroupTopologyDescriptionPlugin`]; the daemon holds it as an
//! `Arc<dyn StreamsGroupTopologyDescriptionPlugin>`, calls [`configure`] once before first use
//! and [`close`] on shutdown.
//!
//! This crate depends on nothing of kcoord's own, so a plugin author needs only it.
//!
//! [`configure`]: StreamsGroupTopologyDescriptionPlugin::configure
//! [`close`]: StreamsGroupTopologyDescriptionPlugin::close
mod context;
mod error;
mod model;
mod plugin;

pub use context::RequestContext;
pub use error::PluginError;
pub use model::{GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology};
pub use plugin::{PluginConfigs, StreamsGroupTopologyDescriptionPlugin};
pub use uuid::Uuid;
