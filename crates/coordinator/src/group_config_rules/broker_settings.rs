//! The broker's side of the group config rules: what Kafka's `GroupConfig.validate` and
//! `GroupConfig.evaluate` read from `GroupCoordinatorConfig`.

use crate::assignor::STICKY_ASSIGNOR_NAME;
use crate::StreamsGroupConfig;

/// The broker's `group.streams.*` settings a group's configs are checked against, fall back to
/// and are described with: the values (what a group that sets no group config runs with) and
/// the bounds. The daemon reads them from its config file; the consumer and share keys are not
/// here because kcoord does not read them (the rules use Kafka's defaults for those).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupConfigBrokerSettings {
    /// What a group runs with when it sets no group config: the broker synonyms' values, plus
    /// the coordinator's settings no group config overrides (max size, offsets retention).
    pub group_defaults: StreamsGroupConfig,
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub min_heartbeat_interval_ms: i32,
    pub max_heartbeat_interval_ms: i32,
    pub max_standby_replicas: i32,
    pub min_assignment_interval_ms: i32,
    pub max_assignment_interval_ms: i32,
    pub min_task_offset_interval_ms: i32,
    /// `group.streams.num.warmup.replicas`: checked and described, not run (the coordinator
    /// assigns no warm-up tasks), so it is not part of `group_defaults`.
    pub num_warmup_replicas: i32,
    pub max_warmup_replicas: i32,
    /// `group.streams.assignor.offload.enable`: described only, like the warm-ups.
    pub assignor_offload_enable: bool,
    /// `group.streams.assignors`: the names `streams.assignor.name` may take; the first is the
    /// group config's default.
    pub assignors: Vec<String>,
}

/// Kafka's defaults, which are also the daemon's when its file sets none of the keys.
impl Default for GroupConfigBrokerSettings {
    fn default() -> Self {
        GroupConfigBrokerSettings {
            group_defaults: StreamsGroupConfig::default(),
            min_session_timeout_ms: 45_000,
            max_session_timeout_ms: 60_000,
            min_heartbeat_interval_ms: 5_000,
            max_heartbeat_interval_ms: 15_000,
            max_standby_replicas: 2,
            min_assignment_interval_ms: 0,
            max_assignment_interval_ms: 15_000,
            min_task_offset_interval_ms: 15_000,
            num_warmup_replicas: 2,
            max_warmup_replicas: 20,
            assignor_offload_enable: true,
            assignors: vec![STICKY_ASSIGNOR_NAME.to_owned()],
        }
    }
}
