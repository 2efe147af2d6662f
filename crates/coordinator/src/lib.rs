//! The streams group coordinator (KIP-1071, extended by KIP-1331), sans-IO: handlers take the
//! current state, a request and `now`, and return records to append plus a response. They never
//! touch sockets, tasks or clocks.
pub mod assignor;
pub mod config;
pub mod description;
pub mod endpoints;
pub mod error;
pub mod groups;
pub mod heartbeat;
pub mod offsets;
pub mod reconcile;
pub mod records;
pub mod runtime;
pub mod shard;
mod steady;
pub mod target;
pub mod task;
pub mod timers;
pub mod topology;
pub mod validate;

pub use config::StreamsGroupConfig;
pub use error::CoordinatorError;
pub use heartbeat::{HeartbeatContext, HeartbeatResult};
pub use shard::{group_state, CoordinatorShard, GroupState, ShardStats, DEFAULT_MAX_GROUPS};
