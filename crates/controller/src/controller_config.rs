//! What the controller is configured with.
use std::collections::BTreeMap;

use kcoord_metadata::MetadataVersion;

use crate::topics::{TopicDefaults, TopicLimits};

/// Kafka's `broker.session.timeout.ms` default.
pub const DEFAULT_SESSION_TIMEOUT_MS: i64 = 9_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// The cluster id brokers must register with.
    pub cluster_id: String,
    /// `broker.session.timeout.ms`: a broker that has not heartbeaten for longer is fenced.
    pub session_timeout_ms: i64,
    /// The `metadata.version` a new log is bootstrapped with (a FeatureLevelRecord). A log that
    /// already finalized one keeps its own, as a formatted Kafka cluster keeps the version it
    /// was formatted with.
    pub metadata_version: MetadataVersion,
    /// Other features finalized at bootstrap, e.g. `group.version` = 1. A registering broker
    /// must support each of them (one it does not list is checked as the range [0, 0]).
    pub bootstrap_features: BTreeMap<String, i16>,
    /// What CreateTopics gives a topic that leaves a setting at -1, and the node that leads
    /// every partition.
    pub topic_defaults: TopicDefaults,
    /// How many topics and partitions the catalog may hold.
    pub topic_limits: TopicLimits,
}

impl ControllerConfig {
    pub fn new(cluster_id: impl Into<String>) -> Self {
        ControllerConfig {
            cluster_id: cluster_id.into(),
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
            metadata_version: MetadataVersion::LATEST,
            bootstrap_features: BTreeMap::new(),
            topic_defaults: TopicDefaults::default(),
            topic_limits: TopicLimits::default(),
        }
    }

    pub fn with_metadata_version(mut self, metadata_version: MetadataVersion) -> Self {
        self.metadata_version = metadata_version;
        self
    }

    pub fn with_session_timeout_ms(mut self, session_timeout_ms: i64) -> Self {
        self.session_timeout_ms = session_timeout_ms;
        self
    }

    pub fn with_topic_defaults(mut self, topic_defaults: TopicDefaults) -> Self {
        self.topic_defaults = topic_defaults;
        self
    }

    pub fn with_topic_limits(mut self, topic_limits: TopicLimits) -> Self {
        self.topic_limits = topic_limits;
        self
    }

    pub fn with_feature(mut self, name: impl Into<String>, level: i16) -> Self {
        self.bootstrap_features.insert(name.into(), level);
        self
    }
}
