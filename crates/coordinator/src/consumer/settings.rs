//! A consumer group's settings: the broker's `group.consumer.*`, or where the group has them,
//! its `consumer.*` group configs (Kafka's `GroupConfigManager`: `consumerGroupSessionTimeoutMs`
//! and siblings read the group's config first). The values were validated when they were set.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::ConsumerGroupConfig;
use crate::shard::{CoordinatorShard, FastMap, Id};

/// The group configs that change a consumer group's settings.
const SESSION_TIMEOUT: &str = "consumer.session.timeout.ms";
const HEARTBEAT_INTERVAL: &str = "consumer.heartbeat.interval.ms";
const ASSIGNMENT_INTERVAL: &str = "consumer.assignment.interval.ms";

impl CoordinatorShard {
    /// The settings `group_id` runs with.
    pub(crate) fn consumer_settings(&self, group_id: &str) -> &ConsumerGroupConfig {
        self.consumer_overrides
            .get(group_id)
            .map_or(&*self.consumer, |c| &**c)
    }

    /// Replaces the overrides with those of `overrides` (every group's stored group configs).
    pub(crate) fn set_consumer_overrides(
        &mut self,
        overrides: &BTreeMap<String, BTreeMap<String, String>>,
    ) {
        let base = &self.consumer;
        let mut applied = FastMap::default();
        for (group, configs) in overrides {
            let read = |key: &str| configs.get(key).and_then(|v| v.parse::<i32>().ok());
            let (session, heartbeat, interval) = (
                read(SESSION_TIMEOUT),
                read(HEARTBEAT_INTERVAL),
                read(ASSIGNMENT_INTERVAL),
            );
            if session.is_none() && heartbeat.is_none() && interval.is_none() {
                continue;
            }
            let settings = ConsumerGroupConfig {
                session_timeout_ms: session.unwrap_or(base.session_timeout_ms),
                heartbeat_interval_ms: heartbeat.unwrap_or(base.heartbeat_interval_ms),
                assignment_interval_ms: interval.unwrap_or(base.assignment_interval_ms),
                ..(**base).clone()
            };
            applied.insert(Id::from(group.as_str()), Arc::new(settings));
        }
        self.consumer_overrides = applied;
    }
}
