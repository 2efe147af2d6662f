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

// The rooms. Each imports only the rooms below it in `tests/rooms.rs`'s list, lowest first:
// TLS material, the configuration, support (clock, logs, shutdown), metrics and the
// authorizer; the runtime that drives the cores; the way to an upstream cluster in gateway
// mode; the state a request sees; the RPCs; the two
// ways in (the Kafka listeners, the HTTP side); and the daemon's startup, which wires them.
pub mod config;
pub mod daemon;
pub mod gateway;
pub mod http;
pub mod metrics;
mod net;
pub mod rpc;
pub mod runtime;
pub mod security;
pub mod state;
pub mod support;
pub mod tls;

pub use config::{Config, ConfigError};
pub use daemon::command_line::{daemon_main, daemon_main_with};
pub use daemon::{start, start_with, Extensions, ServerHandle, StartError};
pub use support::logging::panic_hook;

#[cfg(test)]
mod tests;
