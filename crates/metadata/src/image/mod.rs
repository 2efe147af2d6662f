//! Images: the state that replaying records builds. Nothing else mutates them.
pub mod broker_configs;
pub mod brokers;
pub mod classic_groups;
pub mod client_quotas;
pub mod consumer_groups;
pub mod features;
pub mod group_configs;
pub mod offsets;
pub mod process_id;
pub mod producer_ids;
pub mod security;
pub mod streams;
pub mod topics;
pub mod transactions;
pub mod txn_offsets;
pub mod vec_map;
