//! Topology descriptions (KIP-1331): the full processing graph of a Kafka Streams application,
//! as its members push it and as admin tools read it back.
//!
//! Two models, as in Kafka:
//! - [`streams::TopologyDescription`], the writer's side, mirrors Kafka Streams'
//!   `org.apache.kafka.streams.TopologyDescription` (sub-topologies with numeric ids, source /
//!   processor / sink nodes with their successors, global stores). A streams member converts
//!   it once, at start, into a [`WireTopology`] sorted as Kafka Streams'
//!   `TopologyDescriptionConverter` sorts it, and pushes that.
//! - [`StreamsGroupTopologyDescription`], the reader's side, mirrors Kafka's Admin
//!   `org.apache.kafka.clients.admin.StreamsGroupTopologyDescription`: converted from the
//!   StreamsGroupDescribe v1 wire struct, with predecessors rebuilt by inverting the
//!   successors (the wire carries successors only; the specification's "Topology
//!   Translation").
//!
//! [`TopologyDescriptionStatus`] says why a described group has no description.
//!
//! Drawings of the reader's model:
//! - [`graph`]: the processing graph (a box per sub-topology and global store, topics and
//!   stores as nodes of their own), behind `kafka-streams-groups --output dot|mermaid|svg`.
//! - [`layout`]: that graph laid out (boxes and routes) by the `dagre` crate.
//! - [`svg`]: the laid-out graph drawn as a standalone SVG document; [`svg::render_svg`] does
//!   all three steps.
//!
//! [`synthetic`] generates large topologies for tests and benchmarks.
//!
//! Everything here is pure: no I/O, no async, so the client library, the tools and the daemon
//! share it.

mod convert;
pub mod graph;
pub mod java;
pub mod layout;
mod model;
mod status;
pub mod streams;
pub mod svg;
pub mod synthetic;
mod wire;

pub use convert::{from_wire, invert, TopologyDescriptionError};
pub use model::{GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology};
pub use status::TopologyDescriptionStatus;
pub use wire::{
    WireGlobalStore, WireNode, WireSubtopology, WireTopology, NODE_TYPE_PROCESSOR, NODE_TYPE_SINK,
    NODE_TYPE_SOURCE,
};
