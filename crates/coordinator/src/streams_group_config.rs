//! The `group.streams.*` settings the coordinator needs (docs/kafka-coordinator-facts.md §11).
use std::collections::BTreeMap;

/// Key of the standby count in `LastAssignmentConfigs` (Kafka's `AssignmentConfigsImpl`).
pub const NUM_STANDBY_REPLICAS_CONFIG: &str = "num.standby.replicas";
/// Key of the rack-aware tags in `LastAssignmentConfigs`.
pub const RACK_AWARE_ASSIGNMENT_TAGS_CONFIG: &str = "rack.aware.assignment.tags";

#[derive(Debug, Clone, PartialEq)]
pub struct StreamsGroupConfig {
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub max_size: i32,
    pub num_standby_replicas: i32,
    pub initial_rebalance_delay_ms: i32,
    pub assignment_interval_ms: i32,
    pub task_offset_interval_ms: i32,
    pub acceptable_recovery_lag: i64,
    pub rack_aware_assignment_tags: Vec<String>,
    /// `offsets.retention.minutes` in ms: how long a committed offset is kept after its commit
    /// once the group no longer consumes its topic.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`: how often expired offsets are looked for.
    pub offsets_retention_check_interval_ms: i64,
}

impl Default for StreamsGroupConfig {
    fn default() -> Self {
        StreamsGroupConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: i32::MAX,
            num_standby_replicas: 0,
            initial_rebalance_delay_ms: 3_000,
            assignment_interval_ms: 1_000,
            task_offset_interval_ms: 60_000,
            acceptable_recovery_lag: 10_000,
            rack_aware_assignment_tags: Vec::new(),
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
        }
    }
}

impl StreamsGroupConfig {
    /// The settings a change of which forces a new target assignment; stored in the group
    /// metadata record as `LastAssignmentConfigs`.
    pub fn assignment_configs(&self) -> BTreeMap<String, String> {
        let mut configs = BTreeMap::new();
        configs.insert(
            NUM_STANDBY_REPLICAS_CONFIG.to_string(),
            self.num_standby_replicas.to_string(),
        );
        if !self.rack_aware_assignment_tags.is_empty() {
            configs.insert(
                RACK_AWARE_ASSIGNMENT_TAGS_CONFIG.to_string(),
                self.rack_aware_assignment_tags.join(","),
            );
        }
        configs
    }
}
