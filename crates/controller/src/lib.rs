//! The controller role of kcoord, sans-IO: every decision the controller makes. Topics
//! (CreateTopics, DeleteTopics: [`topics`]), group configs (IncrementalAlterConfigs of GROUP
//! resources: [`group_configs`]), broker registration (BrokerRegistration v0-v6 with KIP-1326's
//! StaticConfigs), broker heartbeats, session fencing, producer id blocks, `metadata.version`,
//! ACLs (CreateAcls, DeleteAcls: [`acls`]), SCRAM credentials (AlterUserScramCredentials:
//! [`scram`]) and client quotas (AlterClientQuotas: [`client_quotas`]).
//!
//! A [`Controller`] owns a [`kcoord_metadata::Store`]. Each handler is a function of
//! (`&self`, request, `now`) that returns an [`Outcome`]: the records to append as one batch,
//! the answer, and the [`Effect`]s on the in-memory broker sessions. No handler appends: the
//! caller (the daemon's controller runtime, `crates/server/src/runtime/controller/`) checks the
//! batch with [`Controller::prepare`], writes it to its durable log, and only then
//! [`Controller::apply`]s it, so a batch that cannot be written changes nothing. A controller
//! rebuilt from the same log ([`Controller::from_log`]) has the same topics and registrations,
//! static configs included. It never touches sockets, tasks or clocks; time comes in as `now`
//! (ms) and expired sessions are fenced by what [`Controller::tick`] returns.
//!
//! The rules, their order and their messages are Kafka's (`ClusterControlManager`,
//! `BrokerHeartbeatManager`, `ReplicationControlManager`, `ConfigurationControlManager`); see
//! this crate's README.md for the list.
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
//! let outcome = controller.register_broker(&request, 6, 0).unwrap();
//! assert!(controller.broker(1).is_none(), "nothing changes until the outcome is applied");
//! let reply = controller.apply(outcome).unwrap();
//! assert_eq!(controller.broker(1).unwrap().epoch, reply.epoch);
//! assert_eq!(controller.static_configs(1).unwrap()["num.io.threads"].as_deref(), Some("8"));
//! assert_eq!(controller.metadata_version(), MetadataVersion::LATEST);
//! ```
pub mod acls;
pub mod client_quotas;
pub mod configs;
pub mod controller;
pub mod controller_config;
pub mod error;
pub mod group_configs;
pub mod heartbeat;
pub mod registration;
pub mod scram;
mod sessions;
pub mod topics;

pub use acls::{AclChange, CreateAclResult, DeleteAclsResult};
pub use controller::{
    Controller, Effect, Outcome, ProducerIdBlock, TickEvent, PRODUCER_ID_BLOCK_SIZE,
};
pub use controller_config::{ControllerConfig, DEFAULT_SESSION_TIMEOUT_MS};
pub use error::ControllerError;
pub use group_configs::{GroupConfigChange, GroupConfigValidator, ResourceError};
pub use heartbeat::{BrokerControlState, BrokerHeartbeatReply};
pub use kcoord_metadata::{
    BrokerRegistration, BrokersImage, MetadataVersion, MetadataVersionError,
};
/// Kafka's text form of a `Uuid`; defined in kcoord-wire, re-exported for the controller's runtime.
pub use kcoord_wire::kafka_uuid;
pub use registration::{is_reserved_directory, BrokerRegistrationReply};
pub use topics::{
    random_topic_id, Decision, TopicAccess, TopicDefaults, TopicLimits, DEFAULT_MAX_PARTITIONS,
    DEFAULT_MAX_TOPICS,
};
