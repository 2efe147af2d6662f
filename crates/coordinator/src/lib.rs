//! The streams group coordinator (KIP-1071, extended by KIP-1331), sans-IO. A shard's handlers
//! take its state, a request and `now`, and return an [`Outcome`]: the records to append, the
//! response and the effects (timers, what Kafka keeps in memory). They never change the
//! shard, touch sockets or tasks, or read a clock; `kcoord_runtime::Runtime` commits their
//! outcomes.
pub mod assignor;
pub mod classic;
pub mod commits;
pub mod configured_topology;
pub mod consumer;
pub mod consumer_protocol;
mod core;
pub mod description;
pub mod effects;
pub mod endpoints;
pub mod error;
pub mod group_config_rules;
pub mod groups;
pub mod heartbeat;
pub mod offsets;
pub mod reconcile;
pub mod record_builders;
pub mod shard;
pub mod soft_state;
mod steady;
pub mod streams_group_config;
pub mod target;
pub mod task;
pub mod tick;
pub mod timeline;
pub mod timer_queue;
pub mod transactions;
pub mod txn_offsets;
pub mod validate;

pub use consumer::{ConsumerGroupConfig, ConsumerHeartbeatContext};
pub use core::ReplayedLog;
pub use effects::Effect;
pub use error::CoordinatorError;
pub use group_config_rules::{GroupConfigBrokerSettings, GroupConfigRules};
pub use heartbeat::{HeartbeatContext, HeartbeatResult};
pub use shard::{group_state, CoordinatorShard, GroupState, ShardStats, DEFAULT_MAX_GROUPS};
pub use streams_group_config::StreamsGroupConfig;
pub use tick::{tick, Tick, TickEvent};
pub use transactions::{PreparedTransaction, TransactionConfig};

/// What a coordinator handler returns.
pub type Outcome<R> = kcoord_runtime::Outcome<R, Effect>;

/// Records at the versions a coordinator writes: always the latest (Kafka's coordinator
/// records do not depend on `metadata.version`).
pub(crate) fn at_latest_version(
    records: Vec<kcoord_metadata::Record>,
) -> Vec<kcoord_metadata::RecordAndVersion> {
    records
        .into_iter()
        .map(kcoord_metadata::Record::at_latest_version)
        .collect()
}
