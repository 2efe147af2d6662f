//! The controller role of kcoord, sans-IO: broker registration (BrokerRegistration v0-v6 with
//! KIP-1326's StaticConfigs), broker heartbeats, session fencing and `metadata.version`.
//!
//! A [`Controller`] owns a [`kcoord_metadata::Store`]: every decision is a batch of records
//! appended to its log and applied by replay, so a controller rebuilt from the same log
//! ([`Controller::from_log`]) has the same registrations, static configs included. It never
//! touches sockets, tasks or clocks; time comes in as `now` (ms) and expired sessions are fenced
//! by [`Controller::tick`].
//!
//! The rules, their order and their messages are Kafka's (`ClusterControlManager`,
//! `BrokerHeartbeatManager`, `ReplicationControlManager`); see this crate's README.md for the
//! list.
//!
//! ```
//! use kcoord_controller::{Controller, ControllerConfig};
//! use kcoord_metadata::MetadataVersion;
//! use kcoord_wire::messages::broker_registration_request::{Feature, StaticConfig};
//! use kcoord_wire::messages::BrokerRegistrationRequest;
//!
//! let mut controller = Controller::new(ControllerConfig::new("a2Nvb3JkLWRldi1jbHVzdA")).unwrap();
//! let request = BrokerRegistrationRequest {
//!     broker_id: 1,
//!     cluster_id: "a2Nvb3JkLWRldi1jbHVzdA".into(),
//!     incarnation_id: uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0),
//!     features: vec![Feature { name: "metadata.version".into(), min_supported_version: 7, max_supported_version: 34, ..Default::default() }],
//!     log_dirs: vec![uuid::Uuid::from_u128(0x42 << 64)],
//!     static_configs: vec![StaticConfig { name: "num.io.threads".into(), value: Some("8".into()), ..Default::default() }],
//!     ..Default::default()
//! };
//! let reply = controller.try_register_broker(&request, 6, 0).unwrap();
//! assert_eq!(controller.broker(1).unwrap().epoch, reply.epoch);
//! assert_eq!(controller.static_configs(1).unwrap()["num.io.threads"].as_deref(), Some("8"));
//! assert_eq!(controller.metadata_version(), MetadataVersion::LATEST);
//! ```
pub mod config;
pub mod controller;
pub mod error;
pub mod group_configs;
pub mod heartbeat;
pub mod registration;
mod sessions;
pub mod topics;

pub use config::{ControllerConfig, DEFAULT_SESSION_TIMEOUT_MS};
pub use controller::{Controller, ProducerIdBlock, TickEvent, PRODUCER_ID_BLOCK_SIZE};
pub use error::{kafka_uuid, ControllerError};
pub use group_configs::{GroupConfigChange, GroupConfigValidator, ResourceError};
pub use heartbeat::{BrokerControlState, BrokerHeartbeatReply};
pub use kcoord_metadata::{
    BrokerRegistration, BrokersImage, MetadataVersion, MetadataVersionError,
};
pub use registration::{is_reserved_directory, BrokerRegistrationReply};
pub use topics::{random_topic_id, Decision, TopicDefaults};
