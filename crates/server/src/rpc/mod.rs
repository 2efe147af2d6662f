//! The RPCs: one file per RPC in `apis/`, the one `ApiKey` dispatch, version negotiation,
//! authorization as Kafka's `KafkaApis` asks it, and SASL before a connection is
//! authenticated.
pub mod apis;
pub mod authentication;
pub mod authorize;
pub mod bulk;
pub mod dispatch;
pub mod plugin_context;
pub mod versions;
