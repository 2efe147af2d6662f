//! `kafka-streams-groups`: Apache Kafka's streams-group tool (`kafka-streams-groups.sh`) for
//! kcoord, plus the client-side topology description model it prints.
//!
//! - [`topology`]: Kafka's Admin `StreamsGroupTopologyDescription`, converted from the
//!   StreamsGroupDescribe v1 wire struct, with predecessors rebuilt from successors.
//! - [`format`](mod@format): the topology as Kafka's `--describe --topology` text, JSON, DOT, Mermaid or SVG.
//! - [`tables`]: the `--list`, `--describe` and `--delete` output, as Kafka prints it.
//! - [`admin`]: the admin calls, behind [`admin::StreamsAdmin`] so tests can fake them.
//! - [`command::execute`] runs an action; [`run`] is the whole program.
//!
//! See the crate README for the formats and where they follow Kafka rather than the
//! specification's illustration.

pub mod admin;
mod app;
pub mod command;
pub mod command_config;
pub mod error;
pub mod format;
pub mod java;
pub mod model;
pub mod options;
pub mod properties;
pub mod tables;
pub mod topology;

pub use app::{run, run_with_admin};
pub use error::{AdminError, CliError};
