//! The kcoord daemon: configuration, listeners, connections, dispatch and RPC handlers.
//!
//! Run it with [`daemon_main`] (the `kcoord` binary) or in-process with [`start`]:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = kcoord_server::Config::parse(
//!     "inline",
//!     "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n",
//! )?;
//! let server = kcoord_server::start(config).await?;
//! let bootstrap = server.broker_addr();
//! // ... talk to it ...
//! server.shutdown().await;
//! # Ok(()) }
//! ```

pub mod authentication;
pub mod authz;
pub mod auto_topics;
mod blocking;
pub mod catalog;
pub mod clock;
pub mod cluster;
mod command_line;
pub mod config;
pub mod controller_runtime;
pub mod dispatch;
pub mod features;
pub mod fetch_sessions;
pub mod group_configs;
pub mod handlers;
pub mod http;
mod logging;
pub mod metrics;
mod net;
pub mod partitions;
pub mod producer_ids;
pub mod server;
pub mod shard_log;
pub mod shards;
pub mod state;
pub mod supported_versions;
pub mod tls;
pub mod topology_plugin;
pub mod web;

pub use command_line::{daemon_main, daemon_main_with};
pub use config::{Config, ConfigError};
pub use logging::panic_hook;
pub use server::{start, start_with, Extensions, ServerHandle, StartError};

#[cfg(test)]
mod tests;
