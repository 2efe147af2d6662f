//! How to write a topology description plugin (KIP-1331) and run kcoord with it.
//!
//! A plugin depends only on `kcoord-plugin-api` (and `async-trait`). This one keeps the latest
//! description of each group in a map and prints every push. It follows the specification's
//! Plugin Implementation Guidelines in their simplest form: `requires_topology_push` is a
//! short map lookup; it asks once per id and not again while that push may be on its way;
//! never again once stored or refused as too large. (The built-in `memory` plugin adds expiry,
//! back-off and in-flight timeouts.)
//!
//! Built-in plugins are chosen by name with `group.streams.topology.description.class`; a
//! plugin of your own reaches the daemon by embedding it, as here, with
//! `kcoord_server::start_with`:
//!
//! ```sh
//! cargo run --example topology_plugin                            # 127.0.0.1:9092 / :9093
//! cargo run --example topology_plugin -- config/server.properties
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kcoord_plugin_api::{
    PluginConfigs, PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};

/// Where a group's current id stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Asked for; the push may be on its way.
    Asked,
    Stored,
    /// Permanently refused: never ask again for this id.
    Refused,
}

/// A group's current id, where it stands, and what is stored.
type Entry = (Uuid, State, Option<StreamsGroupTopologyDescription>);

#[derive(Default)]
struct PrintingPlugin {
    groups: Mutex<HashMap<String, Entry>>,
    max_nodes: usize,
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for PrintingPlugin {
    /// A built-in plugin gets every key of the daemon's configuration here; an embedded one
    /// like this gets what its program passes (see `main`). This one reads one key.
    fn configure(&mut self, configs: &PluginConfigs) -> Result<(), PluginError> {
        let key = "group.streams.topology.description.printing.max.nodes";
        self.max_nodes = match configs.get(key) {
            Some(v) => v
                .parse()
                .map_err(|_| PluginError::InvalidRequest(format!("{key}: not a number: {v}")))?,
            None => 10_000,
        };
        Ok(())
    }

    /// On every heartbeat: must be quick and must not block (no I/O here).
    fn requires_topology_push(&self, _ctx: &RequestContext, group_id: &str, id: Uuid) -> bool {
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        match groups.get(group_id) {
            Some((current, _, _)) if *current == id => false,
            // A new group, or a new id (the topology changed): ask once.
            _ => {
                groups.insert(group_id.to_owned(), (id, State::Asked, None));
                true
            }
        }
    }

    /// May be called concurrently for the same (group, id) with identical data: idempotent.
    async fn set_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        let nodes = description.nodes().count();
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        let entry = groups
            .entry(group_id.to_owned())
            .or_insert((id, State::Asked, None));
        if entry.0 != id {
            // A push for a superseded topology: nothing worth keeping.
            return Ok(());
        }
        if nodes > self.max_nodes {
            entry.1 = State::Refused;
            // TOPOLOGY_DESCRIPTION_TOO_LARGE for the client; this text goes to the daemon's log.
            return Err(PluginError::TooLarge(format!(
                "{nodes} nodes, more than {}",
                self.max_nodes
            )));
        }
        println!(
            "{group_id} ({id}) pushed by {} from {}: {} sub-topologies, {nodes} nodes, {} global stores",
            ctx.client_id,
            ctx.client_address,
            description.subtopologies.len(),
            description.global_stores.len()
        );
        *entry = (id, State::Stored, Some(description));
        Ok(())
    }

    /// Only for groups deleted with DeleteGroups; groups that just go idle are not reported.
    async fn delete_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
    ) -> Result<(), PluginError> {
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(group_id);
        Ok(())
    }

    /// For StreamsGroupDescribe with IncludeTopologyDescription: `None` unless the stored
    /// description is for this very id.
    async fn get_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        let groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        Ok(groups
            .get(group_id)
            .filter(|(current, state, _)| *current == id && *state == State::Stored)
            .and_then(|(_, _, d)| d.clone()))
    }

    fn close(&self) {
        println!(
            "closing: {} groups known",
            self.groups.lock().unwrap_or_else(|p| p.into_inner()).len()
        );
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = match std::env::args().nth(1) {
        Some(path) => kcoord_server::Config::load(std::path::Path::new(&path))?,
        None => kcoord_server::Config::parse(
            "inline",
            "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n",
        )?,
    };
    // An embedded plugin is configured by its program, before it is handed over.
    let mut plugin = PrintingPlugin::default();
    let mut configs = PluginConfigs::new();
    configs.insert(
        "group.streams.topology.description.printing.max.nodes".into(),
        "5000".into(),
    );
    plugin.configure(&configs)?;
    let extensions = kcoord_server::Extensions {
        plugin: Some(Arc::new(plugin)),
        ..Default::default()
    };
    let server = kcoord_server::start_with(config, extensions).await?;
    println!("{}", server.startup_line());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
