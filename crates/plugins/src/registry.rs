//! Plugins by name: `group.streams.topology.description.class` names one of these, either by
//! its short name or by a Java-style class name alias.
use std::sync::Arc;

use kcoord_plugin_api::{PluginConfigs, PluginError, StreamsGroupTopologyDescriptionPlugin};

use crate::file::FilePlugin;
use crate::memory::MemoryPlugin;

/// (short name, aliases) of every built-in plugin.
pub const BUILT_IN: &[(&str, &[&str])] = &[
    (
        "memory",
        &[
            "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin",
            "io.kcoord.plugins.MemoryTopologyDescriptionPlugin",
        ],
    ),
    ("file", &["io.kcoord.plugins.FileTopologyDescriptionPlugin"]),
];

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown topology description plugin {name:?}; known plugins: {known}")]
    Unknown { name: String, known: String },
    #[error("plugin {name} rejected its configuration: {source}")]
    Configure { name: String, source: PluginError },
}

/// Whether the built-in plugin `name` (short name or alias) has a `requires_topology_push`
/// known never to block, which the daemon may then call on the heartbeat's own thread instead
/// of handing it to threads of the plugin's own. `memory`'s is: O(1), answered from a
/// lock-free snapshot in the steady state and under one short lock otherwise, no I/O. The
/// hand-over costs more than a whole heartbeat, so a plugin that does not need it is spared.
/// `file`'s is `memory`'s: it decides with one inside and never reads the disk there.
pub fn requires_push_never_blocks(name: &str) -> bool {
    let name = name.trim();
    BUILT_IN
        .iter()
        .find(|(short, aliases)| *short == name || aliases.contains(&name))
        .is_some_and(|(short, _)| matches!(*short, "memory" | "file"))
}

/// The names the registry accepts, for error messages and docs.
pub fn known_names() -> String {
    BUILT_IN
        .iter()
        .map(|(name, aliases)| format!("{name} ({})", aliases.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Builds and configures the plugin `name` (short name or alias).
pub fn create(
    name: &str,
    configs: &PluginConfigs,
) -> Result<Arc<dyn StreamsGroupTopologyDescriptionPlugin>, RegistryError> {
    let name = name.trim();
    let short = BUILT_IN
        .iter()
        .find(|(short, aliases)| *short == name || aliases.contains(&name))
        .map(|(short, _)| *short)
        .ok_or_else(|| RegistryError::Unknown {
            name: name.to_string(),
            known: known_names(),
        })?;
    let configure_error = |source| RegistryError::Configure {
        name: short.to_string(),
        source,
    };
    match short {
        "memory" => {
            let mut plugin = MemoryPlugin::default();
            plugin.configure(configs).map_err(configure_error)?;
            Ok(Arc::new(plugin))
        }
        "file" => {
            let mut plugin = FilePlugin::default();
            plugin.configure(configs).map_err(configure_error)?;
            Ok(Arc::new(plugin))
        }
        _ => Err(RegistryError::Unknown {
            name: name.to_string(),
            known: known_names(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_plugins_by_name_and_alias() {
        assert!(create("memory", &PluginConfigs::new()).is_ok());
        assert!(create(
            "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin",
            &PluginConfigs::new()
        )
        .is_ok());
    }

    #[test]
    fn only_the_memory_plugin_is_called_on_the_heartbeats_thread() {
        assert!(requires_push_never_blocks("memory"));
        assert!(requires_push_never_blocks(
            "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"
        ));
        assert!(requires_push_never_blocks("file"));
        assert!(!requires_push_never_blocks("org.example.Plugin"));
    }

    #[test]
    fn the_file_plugin_needs_a_directory() {
        assert!(matches!(
            create("file", &PluginConfigs::new()),
            Err(RegistryError::Configure { .. })
        ));
        let dir = tempfile::tempdir().unwrap();
        let configs: PluginConfigs = [(
            "group.streams.topology.description.file.dir".to_string(),
            dir.path().display().to_string(),
        )]
        .into();
        assert!(create("io.kcoord.plugins.FileTopologyDescriptionPlugin", &configs).is_ok());
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let err = create("nope", &PluginConfigs::new())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("\"nope\"") && err.contains("memory"), "{err}");
    }

    #[test]
    fn bad_plugin_settings_are_reported() {
        let configs: PluginConfigs = [(
            "group.streams.topology.description.memory.max.bytes".to_string(),
            "lots".to_string(),
        )]
        .into();
        assert!(matches!(
            create("memory", &configs),
            Err(RegistryError::Configure { .. })
        ));
    }
}
