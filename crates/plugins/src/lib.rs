//! Built-in implementations of `StreamsGroupTopologyDescriptionPlugin`, selected by name from
//! `group.streams.topology.description.class` (or `...plugin.class`).
pub mod clock;
pub mod file;
pub mod gate;
pub mod memory;
pub mod registry;

pub use file::{FilePlugin, FilePluginConfig};
pub use memory::{MemoryPlugin, MemoryPluginConfig};
pub use registry::{create, RegistryError, BUILT_IN};
