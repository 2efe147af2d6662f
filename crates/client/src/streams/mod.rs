//! A simulated Kafka Streams client: members of a streams group (KIP-1071) that join with a
//! topology, reconcile their assignment and leave, as tests and benches need them.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use kcoord_client::streams::{StreamsMember, StreamsMemberConfig, TopologyBuilder};
//! use kcoord_client::{Client, ClientConfig};
//!
//! let client = Client::connect("127.0.0.1:9092", ClientConfig::new("sim")).await?;
//! let topology = TopologyBuilder::stateless(0, ["orders"]).build()?;
//!
//! // On its own task, with timers:
//! let member = StreamsMember::start(&client, StreamsMemberConfig::new("orders-app", topology.clone()));
//! member.wait_for(|s| s.assignment.active_count() > 0, Duration::from_secs(30)).await?;
//! member.leave().await?;
//!
//! // Or stepped by hand, one heartbeat per call:
//! let mut stepped = StreamsMember::new(&client, StreamsMemberConfig::new("orders-app", topology));
//! stepped.heartbeat_once().await?; // joins
//! stepped.heartbeat_once().await?; // reports the tasks it adopted
//! stepped.leave().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Reconciliation rules (Kafka's Java client, with task processing taken as instantaneous):
//! - a response whose task lists are non-null replaces the owned tasks (a null list leaves
//!   that kind unchanged); tasks no longer listed are revoked at once, new ones taken at once;
//! - a change of the owned tasks is reported by the next heartbeat, sent without waiting for
//!   the interval; reporting the reduced set is what acknowledges a revocation;
//! - owned tasks are reported in every heartbeat by default ([`OwnedTasksReporting`]);
//! - FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID drop every task and rejoin at once with epoch 0
//!   (same member id); NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE and broken connections look
//!   the coordinator up again; those and COORDINATOR_LOAD_IN_PROGRESS retry after an
//!   exponential back-off; every other error fails the member.
//!
//! Topology descriptions (KIP-1331): give the member a description with
//! [`StreamsMemberConfig::with_topology_description`] and it pushes it whenever the
//! coordinator asks in a heartbeat response (v2: a TopologyDescriptionId, pushed with key 95;
//! v1: TopologyDescriptionRequired, pushed with key 93), unless
//! `topology.description.push.enabled` is false. A running member pushes beside its heartbeat
//! loop; a stepped one with [`StreamsMember::maybe_push`] / [`StreamsMember::push_once`].

mod assignment;
mod handle;
mod member;
mod member_config;
mod push;
mod status;
mod topology;

pub use assignment::{tasks_from, Assignment, Tasks};
pub use handle::StreamsMemberHandle;
pub use member::{
    HeartbeatOutcome, MemberSnapshot, MemberState, StreamsMember, TopologyDescriptionRequest,
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH,
};
pub use member_config::{Endpoint, OwnedTasksReporting, ResponseHook, StreamsMemberConfig};
pub use push::{
    PushCompletion, PushOutcome, PushReport, PushResponse, PushResult, TopologyPush,
    TOPOLOGY_DESCRIPTION_PUSH_ENABLED_CONFIG,
};
pub use status::{StatusCode, StreamsGroupStatus};
pub use topology::{InternalTopic, SubtopologyBuilder, TopologyBuilder, TopologyError};
