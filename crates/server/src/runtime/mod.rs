//! The room that runs the cores: each coordinator shard and the controller on its
//! `kcoord_runtime::Runtime` (the shards' locks, timers, durable logs and writer; the
//! controller's task, log and snapshots), the partitions this node leads, the images the
//! controller publishes, and the effects that leave a core (internal topic creation, the topology
//! description plugin's guarded calls, producer id blocks).
pub mod auto_topics;
pub mod catalog;
pub mod cluster;
pub mod controller;
pub mod features;
pub mod fetch_sessions;
pub mod ownership;
pub mod partitions;
pub mod producer_ids;
pub mod quotas;
pub mod shard_log;
pub mod shards;
pub mod topology_plugin;
pub mod transactions;
pub mod upstream_credentials;
pub mod upstream_log;
