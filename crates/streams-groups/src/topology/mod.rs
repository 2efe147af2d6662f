//! The client-side topology description: what Kafka's Admin client exposes as
//! `org.apache.kafka.clients.admin.StreamsGroupTopologyDescription`, converted from the
//! StreamsGroupDescribe v1 wire struct with predecessors rebuilt from successors.
//!
//! The model lives in the client library ([`kcoord_client::topology`]), where the admin call
//! that fetches it converts it; it is re-exported here under the names this tool has always
//! used.

pub use kcoord_client::topology::TopologyDescriptionError as TopologyError;
pub use kcoord_client::topology::{
    from_wire, invert, GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology,
    TopologyDescriptionStatus,
};
