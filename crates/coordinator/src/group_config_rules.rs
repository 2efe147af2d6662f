//! Per-group configs (resource type GROUP = 32), after Kafka 4.4's `GroupConfig`: the keys, their
//! types, defaults and broker synonyms, the validation IncrementalAlterConfigs runs
//! (`GroupConfig.validate`, called by `ControllerConfigurationValidator` on the group's configs
//! after the change), the evaluation the coordinator runs before using them
//! (`GroupConfig.evaluate`: values outside the broker's bounds are capped) and the list
//! DescribeConfigs shows (`ConfigHelper.createGroupConfigEntry`).
//!
//! kcoord reads the `group.streams.*` broker keys (config/README.md) for these rules; the
//! bounds and defaults of the `consumer.*` and `share.*` group configs are Kafka's defaults of
//! the `group.consumer.*` / `group.share.*` keys. A consumer group runs with its `consumer.*`
//! session timeout, heartbeat and assignment intervals (`consumer/settings.rs`); the `share.*`
//! keys drive nothing (kcoord has no share groups).
//!
//! They live beside the coordinator, as Kafka's `GroupConfig` lives in its group-coordinator
//! module, and read no file: the daemon hands in the broker's settings
//! ([`GroupConfigBrokerSettings`]) and runs the rules for the controller (which asks through its
//! `GroupConfigValidator` trait), for the shards and for DescribeConfigs.

mod broker_settings;
mod values;

use std::collections::BTreeMap;

use crate::StreamsGroupConfig;
pub use broker_settings::GroupConfigBrokerSettings;
use values::{java_trim, parse, split_list, Value};

/// `ConfigDef.Type` as DescribeConfigs numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    List = 7,
}

/// How a value is checked after it is parsed (the key's `ConfigDef.Validator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    None,
    AtLeast(i64),
    /// `ValidString.in(...)`.
    OneOf(&'static [&'static str]),
    /// `ShareGroupAutoOffsetResetStrategy.Validator`.
    AutoOffsetReset,
}

/// One group config of Kafka's `GroupConfig.CONFIG_DEF`.
#[derive(Debug, Clone, Copy)]
struct Def {
    name: &'static str,
    kind: ConfigType,
    check: Check,
    /// `defineInternal`: listed by DescribeConfigs only when set.
    internal: bool,
    /// `GroupConfig.ALL_GROUP_CONFIG_SYNONYMS`.
    broker_synonym: Option<&'static str>,
    /// Kafka's default, as `ConfigDef.convertToString` writes it (None: null).
    default: Option<&'static str>,
}

const fn def(
    name: &'static str,
    kind: ConfigType,
    check: Check,
    broker_synonym: Option<&'static str>,
    default: Option<&'static str>,
) -> Def {
    Def {
        name,
        kind,
        check,
        internal: false,
        broker_synonym,
        default,
    }
}

const fn internal(mut d: Def) -> Def {
    d.internal = true;
    d
}

use Check::{AtLeast, OneOf};
use ConfigType::{Boolean, Int, List, Long};

/// `GroupConfig.CONFIG_DEF` in definition order (the order `ConfigDef.parse` checks values in).
#[rustfmt::skip]
const DEFS: &[Def] = &[
    def("consumer.session.timeout.ms", Int, AtLeast(1), Some("group.consumer.session.timeout.ms"), Some("45000")),
    def("consumer.heartbeat.interval.ms", Int, AtLeast(1), Some("group.consumer.heartbeat.interval.ms"), Some("5000")),
    def("consumer.assignment.interval.ms", Int, AtLeast(0), Some("group.consumer.assignment.interval.ms"), Some("1000")),
    internal(def("consumer.assignor.offload.enable", Boolean, Check::None, Some("group.consumer.assignor.offload.enable"), Some("true"))),
    def("share.session.timeout.ms", Int, AtLeast(1), Some("group.share.session.timeout.ms"), Some("45000")),
    def("share.heartbeat.interval.ms", Int, AtLeast(1), Some("group.share.heartbeat.interval.ms"), Some("5000")),
    def("share.record.lock.duration.ms", Int, AtLeast(1000), Some("group.share.record.lock.duration.ms"), Some("30000")),
    def("share.delivery.count.limit", Int, AtLeast(2), Some("group.share.delivery.count.limit"), Some("5")),
    def("share.partition.max.record.locks", Int, AtLeast(100), Some("group.share.partition.max.record.locks"), Some("2000")),
    def("share.auto.offset.reset", ConfigType::String, Check::AutoOffsetReset, None, Some("latest")),
    def("share.isolation.level", ConfigType::String, OneOf(&["read_committed", "read_uncommitted"]), None, Some("read_uncommitted")),
    def("share.renew.acknowledge.enable", Boolean, Check::None, None, Some("true")),
    def("share.assignment.interval.ms", Int, AtLeast(0), Some("group.share.assignment.interval.ms"), Some("1000")),
    internal(def("share.assignor.offload.enable", Boolean, Check::None, Some("group.share.assignor.offload.enable"), Some("true"))),
    def(STREAMS_SESSION_TIMEOUT_MS, Int, AtLeast(1), Some("group.streams.session.timeout.ms"), Some("45000")),
    def(STREAMS_HEARTBEAT_INTERVAL_MS, Int, AtLeast(1), Some("group.streams.heartbeat.interval.ms"), Some("5000")),
    def(STREAMS_NUM_STANDBY_REPLICAS, Int, AtLeast(0), Some("group.streams.num.standby.replicas"), Some("0")),
    def(STREAMS_INITIAL_REBALANCE_DELAY_MS, Int, AtLeast(0), Some("group.streams.initial.rebalance.delay.ms"), Some("3000")),
    def(STREAMS_ASSIGNMENT_INTERVAL_MS, Int, AtLeast(0), Some("group.streams.assignment.interval.ms"), Some("1000")),
    internal(def("streams.assignor.offload.enable", Boolean, Check::None, Some("group.streams.assignor.offload.enable"), Some("true"))),
    internal(def(STREAMS_TASK_OFFSET_INTERVAL_MS, Int, AtLeast(1), Some("group.streams.task.offset.interval.ms"), Some("60000"))),
    internal(def(STREAMS_NUM_WARMUP_REPLICAS, Int, AtLeast(0), Some("group.streams.num.warmup.replicas"), Some("2"))),
    def(STREAMS_RACK_AWARE_ASSIGNMENT_TAGS, List, Check::None, Some("group.streams.rack.aware.assignment.tags"), Some("")),
    internal(def(STREAMS_ACCEPTABLE_RECOVERY_LAG, Long, AtLeast(0), Some("group.streams.acceptable.recovery.lag"), Some("10000"))),
    def(STREAMS_ASSIGNOR_NAME, ConfigType::String, Check::None, Some("group.streams.assignors"), None),
    def("errors.deadletterqueue.topic.name", ConfigType::String, Check::None, None, Some("")),
    def("errors.deadletterqueue.copy.record.enable", Boolean, Check::None, None, Some("false")),
];

pub const STREAMS_SESSION_TIMEOUT_MS: &str = "streams.session.timeout.ms";
pub const STREAMS_HEARTBEAT_INTERVAL_MS: &str = "streams.heartbeat.interval.ms";
pub const STREAMS_NUM_STANDBY_REPLICAS: &str = "streams.num.standby.replicas";
pub const STREAMS_INITIAL_REBALANCE_DELAY_MS: &str = "streams.initial.rebalance.delay.ms";
pub const STREAMS_ASSIGNMENT_INTERVAL_MS: &str = "streams.assignment.interval.ms";
pub const STREAMS_TASK_OFFSET_INTERVAL_MS: &str = "streams.task.offset.interval.ms";
pub const STREAMS_NUM_WARMUP_REPLICAS: &str = "streams.num.warmup.replicas";
pub const STREAMS_RACK_AWARE_ASSIGNMENT_TAGS: &str = "streams.rack.aware.assignment.tags";
pub const STREAMS_ACCEPTABLE_RECOVERY_LAG: &str = "streams.acceptable.recovery.lag";
pub const STREAMS_ASSIGNOR_NAME: &str = "streams.assignor.name";

/// The order Kafka 4.4.0's DescribeConfigs lists the non-internal group configs in (the
/// iteration order of `AbstractConfig.nonInternalValues()`, a `HashMap`, read from the
/// released broker).
const DESCRIBE_ORDER: &[&str] = &[
    "consumer.session.timeout.ms",
    "streams.assignor.name",
    "consumer.assignment.interval.ms",
    "errors.deadletterqueue.copy.record.enable",
    "share.auto.offset.reset",
    "streams.rack.aware.assignment.tags",
    "share.renew.acknowledge.enable",
    "streams.initial.rebalance.delay.ms",
    "share.session.timeout.ms",
    "streams.assignment.interval.ms",
    "share.heartbeat.interval.ms",
    "streams.heartbeat.interval.ms",
    "share.delivery.count.limit",
    "errors.deadletterqueue.topic.name",
    "consumer.heartbeat.interval.ms",
    "share.record.lock.duration.ms",
    "share.assignment.interval.ms",
    "share.isolation.level",
    "streams.session.timeout.ms",
    "share.partition.max.record.locks",
    "streams.num.standby.replicas",
];

/// The bounds of the `consumer.*` and `share.*` group configs: Kafka's defaults of the
/// `group.consumer.*` / `group.share.*` broker keys, which kcoord does not read.
mod kafka_bounds {
    pub const CONSUMER_SESSION: (i32, i32) = (45_000, 60_000);
    pub const CONSUMER_HEARTBEAT: (i32, i32) = (5_000, 15_000);
    pub const CONSUMER_ASSIGNMENT_INTERVAL: (i32, i32) = (0, 15_000);
    pub const CONSUMER_SESSION_DEFAULT: i32 = 45_000;
    pub const CONSUMER_HEARTBEAT_DEFAULT: i32 = 5_000;
    pub const SHARE_SESSION: (i32, i32) = (45_000, 60_000);
    pub const SHARE_HEARTBEAT: (i32, i32) = (5_000, 15_000);
    pub const SHARE_RECORD_LOCK_DURATION: (i32, i32) = (15_000, 60_000);
    pub const SHARE_DELIVERY_COUNT_LIMIT: (i32, i32) = (2, 10);
    pub const SHARE_PARTITION_MAX_RECORD_LOCKS: (i32, i32) = (100, 4_000);
    pub const SHARE_ASSIGNMENT_INTERVAL: (i32, i32) = (0, 15_000);
    pub const SHARE_SESSION_DEFAULT: i32 = 45_000;
    pub const SHARE_HEARTBEAT_DEFAULT: i32 = 5_000;
}

/// The rules group configs are checked and evaluated by: the broker's `group.streams.*`
/// settings (values and bounds) plus Kafka's defaults for the consumer and share keys.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupConfigRules {
    broker: GroupConfigBrokerSettings,
}

impl GroupConfigRules {
    pub fn new(broker: GroupConfigBrokerSettings) -> GroupConfigRules {
        GroupConfigRules { broker }
    }

    /// `GroupConfig.validate` on a group's configs as they would be after a change (Kafka
    /// validates all of them, not only the ones changed). The error is the message Kafka
    /// answers with INVALID_CONFIG.
    pub fn validate(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
        // validateNames
        for name in configs.keys() {
            if def_of(name).is_none() {
                return Err(format!("Unknown group config name: {name}"));
            }
        }
        // validateNoDuplicateRackAwareAssignmentTags, on the raw value
        if let Some(raw) = configs.get(STREAMS_RACK_AWARE_ASSIGNMENT_TAGS) {
            let tags = split_list(java_trim(raw));
            let unique: std::collections::BTreeSet<&String> = tags.iter().collect();
            if unique.len() != tags.len() {
                return Err(format!(
                    "{STREAMS_RACK_AWARE_ASSIGNMENT_TAGS} must not contain duplicate tag keys."
                ));
            }
        }
        // CONFIG_DEF.parse, in definition order
        let mut parsed: BTreeMap<&str, Value> = BTreeMap::new();
        for d in DEFS {
            if let Some(raw) = configs.get(d.name) {
                parsed.insert(d.name, parse(d, raw)?);
            }
        }
        self.validate_values(&parsed)
    }

    /// `GroupConfig.validateValues`: the broker's bounds, then the cross-key rules.
    fn validate_values(&self, parsed: &BTreeMap<&str, Value>) -> Result<(), String> {
        use kafka_bounds::*;
        let broker_values = &self.broker.group_defaults;
        self.validate_bounds(parsed)?;
        if let Some(Value::Str(name)) = parsed.get(STREAMS_ASSIGNOR_NAME) {
            let registered = self.assignor_names();
            if !registered.iter().any(|r| r == name) {
                return Err(format!(
                    "{STREAMS_ASSIGNOR_NAME} '{name}' is not a registered task assignor. Registered assignors are: [{}].",
                    registered.join(", ")
                ));
            }
        }
        session_above_heartbeat(
            parsed,
            ("consumer.session.timeout.ms", CONSUMER_SESSION_DEFAULT),
            ("consumer.heartbeat.interval.ms", CONSUMER_HEARTBEAT_DEFAULT),
        )?;
        session_above_heartbeat(
            parsed,
            ("share.session.timeout.ms", SHARE_SESSION_DEFAULT),
            ("share.heartbeat.interval.ms", SHARE_HEARTBEAT_DEFAULT),
        )?;
        session_above_heartbeat(
            parsed,
            (STREAMS_SESSION_TIMEOUT_MS, broker_values.session_timeout_ms),
            (
                STREAMS_HEARTBEAT_INTERVAL_MS,
                broker_values.heartbeat_interval_ms,
            ),
        )?;
        if let Some(Value::Str(dlq)) = parsed.get("errors.deadletterqueue.topic.name") {
            if dlq.starts_with("__") {
                return Err(
                    "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
                        .to_owned(),
                );
            }
        }
        Ok(())
    }

    /// Each value within the broker's bounds: Kafka's defaults for the consumer and share keys,
    /// the broker's `group.streams.*` bounds for the streams keys.
    fn validate_bounds(&self, parsed: &BTreeMap<&str, Value>) -> Result<(), String> {
        use kafka_bounds::*;
        let s = &self.broker;
        in_range(parsed, "consumer.heartbeat.interval.ms", CONSUMER_HEARTBEAT)?;
        in_range(parsed, "consumer.session.timeout.ms", CONSUMER_SESSION)?;
        in_range(
            parsed,
            "consumer.assignment.interval.ms",
            CONSUMER_ASSIGNMENT_INTERVAL,
        )?;
        in_range(parsed, "share.heartbeat.interval.ms", SHARE_HEARTBEAT)?;
        in_range(parsed, "share.session.timeout.ms", SHARE_SESSION)?;
        in_range(
            parsed,
            "share.record.lock.duration.ms",
            SHARE_RECORD_LOCK_DURATION,
        )?;
        in_range(
            parsed,
            "share.delivery.count.limit",
            SHARE_DELIVERY_COUNT_LIMIT,
        )?;
        in_range(
            parsed,
            "share.partition.max.record.locks",
            SHARE_PARTITION_MAX_RECORD_LOCKS,
        )?;
        in_range(
            parsed,
            "share.assignment.interval.ms",
            SHARE_ASSIGNMENT_INTERVAL,
        )?;
        in_range(
            parsed,
            STREAMS_HEARTBEAT_INTERVAL_MS,
            (s.min_heartbeat_interval_ms, s.max_heartbeat_interval_ms),
        )?;
        in_range(
            parsed,
            STREAMS_SESSION_TIMEOUT_MS,
            (s.min_session_timeout_ms, s.max_session_timeout_ms),
        )?;
        at_most(parsed, STREAMS_NUM_STANDBY_REPLICAS, s.max_standby_replicas)?;
        in_range(
            parsed,
            STREAMS_ASSIGNMENT_INTERVAL_MS,
            (s.min_assignment_interval_ms, s.max_assignment_interval_ms),
        )?;
        at_least(
            parsed,
            STREAMS_TASK_OFFSET_INTERVAL_MS,
            s.min_task_offset_interval_ms,
        )?;
        at_most(parsed, STREAMS_NUM_WARMUP_REPLICAS, s.max_warmup_replicas)
    }

    /// `GroupCoordinatorConfig.streamsGroupAssignorNames()`.
    fn assignor_names(&self) -> Vec<String> {
        self.broker.assignors.clone()
    }

    /// The settings a group with `overrides` runs with (`GroupConfigManager.updateGroupConfig`
    /// evaluates the overrides with `GroupConfig.evaluate`, capping values outside the broker's
    /// bounds, e.g. after the bounds changed; the coordinator then takes each streams key from
    /// them, else from the broker). Unparsable values (only a log written by something else
    /// could hold one) count as unset.
    pub fn effective(&self, overrides: &BTreeMap<String, String>) -> StreamsGroupConfig {
        let s = &self.broker;
        let int = |key: &str| {
            overrides
                .get(key)
                .and_then(|v| java_trim(v).parse::<i32>().ok())
        };
        let clamp = |key: &str, default: i32, min: i32, max: i32| {
            int(key).map_or(default, |v| v.clamp(min, max.max(min)))
        };
        let mut c = s.group_defaults.clone();
        c.session_timeout_ms = clamp(
            STREAMS_SESSION_TIMEOUT_MS,
            c.session_timeout_ms,
            s.min_session_timeout_ms,
            s.max_session_timeout_ms,
        );
        c.heartbeat_interval_ms = clamp(
            STREAMS_HEARTBEAT_INTERVAL_MS,
            c.heartbeat_interval_ms,
            s.min_heartbeat_interval_ms,
            s.max_heartbeat_interval_ms,
        );
        c.num_standby_replicas = clamp(
            STREAMS_NUM_STANDBY_REPLICAS,
            c.num_standby_replicas,
            0,
            s.max_standby_replicas,
        );
        c.initial_rebalance_delay_ms = clamp(
            STREAMS_INITIAL_REBALANCE_DELAY_MS,
            c.initial_rebalance_delay_ms,
            0,
            i32::MAX,
        );
        c.assignment_interval_ms = clamp(
            STREAMS_ASSIGNMENT_INTERVAL_MS,
            c.assignment_interval_ms,
            s.min_assignment_interval_ms,
            s.max_assignment_interval_ms,
        );
        c.task_offset_interval_ms = clamp(
            STREAMS_TASK_OFFSET_INTERVAL_MS,
            c.task_offset_interval_ms,
            s.min_task_offset_interval_ms,
            i32::MAX,
        );
        if let Some(lag) = overrides
            .get(STREAMS_ACCEPTABLE_RECOVERY_LAG)
            .and_then(|v| java_trim(v).parse::<i64>().ok())
        {
            c.acceptable_recovery_lag = lag.max(0);
        }
        if let Some(tags) = overrides.get(STREAMS_RACK_AWARE_ASSIGNMENT_TAGS) {
            c.rack_aware_assignment_tags = split_list(java_trim(tags));
        }
        c
    }

    /// The broker's value of a group config's synonym and whether it differs from Kafka's
    /// default (then DescribeConfigs names it STATIC_BROKER_CONFIG, as for a key set in the
    /// broker's file).
    fn broker_value(&self, d: &Def) -> Option<String> {
        let s = &self.broker;
        let g = &s.group_defaults;
        match d.name {
            STREAMS_SESSION_TIMEOUT_MS => Some(g.session_timeout_ms.to_string()),
            STREAMS_HEARTBEAT_INTERVAL_MS => Some(g.heartbeat_interval_ms.to_string()),
            STREAMS_NUM_STANDBY_REPLICAS => Some(g.num_standby_replicas.to_string()),
            STREAMS_INITIAL_REBALANCE_DELAY_MS => Some(g.initial_rebalance_delay_ms.to_string()),
            STREAMS_ASSIGNMENT_INTERVAL_MS => Some(g.assignment_interval_ms.to_string()),
            "streams.assignor.offload.enable" => Some(s.assignor_offload_enable.to_string()),
            STREAMS_TASK_OFFSET_INTERVAL_MS => Some(g.task_offset_interval_ms.to_string()),
            STREAMS_NUM_WARMUP_REPLICAS => Some(s.num_warmup_replicas.to_string()),
            STREAMS_RACK_AWARE_ASSIGNMENT_TAGS => Some(g.rack_aware_assignment_tags.join(",")),
            STREAMS_ACCEPTABLE_RECOVERY_LAG => Some(g.acceptable_recovery_lag.to_string()),
            // The group config holds one assignor: the first registered is the default
            // (`AbstractKafkaConfig.extractGroupConfigMap`).
            STREAMS_ASSIGNOR_NAME => s.assignors.first().cloned(),
            _ => d.default.map(str::to_owned),
        }
    }

    /// The broker synonym's value as Kafka shows it in the synonym list: the broker key's
    /// own text (the list of assignors for `streams.assignor.name`).
    fn broker_synonym_value(&self, d: &Def) -> Option<String> {
        if d.name == STREAMS_ASSIGNOR_NAME {
            return Some(self.broker.assignors.join(","));
        }
        self.broker_value(d)
    }

    /// Kafka's default of the broker synonym (`group.streams.assignors` is `sticky`).
    fn kafka_default_of_synonym(d: &Def) -> Option<String> {
        if d.name == STREAMS_ASSIGNOR_NAME {
            return Some("sticky".to_owned());
        }
        d.default.map(str::to_owned)
    }

    /// Whether the broker's file changed the synonym from Kafka's default.
    fn broker_changed(&self, d: &Def) -> bool {
        d.broker_synonym.is_some()
            && self.broker_synonym_value(d) != Self::kafka_default_of_synonym(d)
    }

    /// What DescribeConfigs lists for a group with `overrides` (none: no overrides): every
    /// non-internal config, plus the internal ones the group or the broker sets, each with its
    /// effective value, source and synonyms (`ConfigHelper.createGroupConfigEntry`).
    pub fn describe(&self, overrides: Option<&BTreeMap<String, String>>) -> Vec<GroupConfigEntry> {
        let set = |name: &str| overrides.and_then(|o| o.get(name));
        let internal_listed = DEFS
            .iter()
            .filter(|d| d.internal && (set(d.name).is_some() || self.broker_changed(d)));
        let listed = DESCRIBE_ORDER.iter().filter_map(|name| def_of(name));
        internal_listed
            .chain(listed)
            .map(|d| {
                let mut synonyms = Vec::new();
                let own = set(d.name)
                    .map(|raw| parse(d, raw).map_or_else(|_| raw.clone(), |v| v.to_kafka_string()));
                if let Some(v) = &own {
                    synonyms.push((d.name.to_owned(), Some(v.clone()), GROUP_CONFIG));
                }
                match d.broker_synonym {
                    Some(broker_key) => {
                        if self.broker_changed(d) {
                            synonyms.push((
                                broker_key.to_owned(),
                                self.broker_synonym_value(d),
                                STATIC_BROKER_CONFIG,
                            ));
                        }
                        synonyms.push((
                            broker_key.to_owned(),
                            Self::kafka_default_of_synonym(d),
                            DEFAULT_CONFIG,
                        ));
                    }
                    None => synonyms.push((
                        d.name.to_owned(),
                        d.default.map(str::to_owned),
                        DEFAULT_CONFIG,
                    )),
                }
                let (value, source) = match own {
                    Some(v) => (Some(v), GROUP_CONFIG),
                    None if self.broker_changed(d) => (self.broker_value(d), STATIC_BROKER_CONFIG),
                    None => (self.broker_value(d), DEFAULT_CONFIG),
                };
                GroupConfigEntry {
                    name: d.name.to_owned(),
                    value,
                    source,
                    config_type: d.kind as i8,
                    synonyms,
                }
            })
            .collect()
    }
}

/// `ConfigEntry.ConfigSource` ids used here.
pub const STATIC_BROKER_CONFIG: i8 = 4;
pub const DEFAULT_CONFIG: i8 = 5;
pub const GROUP_CONFIG: i8 = 8;

/// One group config as DescribeConfigs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
    pub config_type: i8,
    /// (name, value, source), the group's own first.
    pub synonyms: Vec<(String, Option<String>, i8)>,
}

/// The parsed INT value of `key`, if the configs set it.
fn int_value(parsed: &BTreeMap<&str, Value>, key: &str) -> Option<i32> {
    match parsed.get(key) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    }
}

fn in_range(
    parsed: &BTreeMap<&str, Value>,
    key: &str,
    (min, max): (i32, i32),
) -> Result<(), String> {
    match int_value(parsed, key) {
        Some(v) if v < min || v > max => Err(format!(
            "{key} must be in the range {min} to {max} inclusive."
        )),
        _ => Ok(()),
    }
}

fn at_most(parsed: &BTreeMap<&str, Value>, key: &str, max: i32) -> Result<(), String> {
    match int_value(parsed, key) {
        Some(v) if v > max => Err(format!("{key} must be less than or equal to {max}")),
        _ => Ok(()),
    }
}

fn at_least(parsed: &BTreeMap<&str, Value>, key: &str, min: i32) -> Result<(), String> {
    match int_value(parsed, key) {
        Some(v) if v < min => Err(format!("{key} must be greater than or equal to {min}")),
        _ => Ok(()),
    }
}

/// A session timeout greater than the heartbeat interval, when the configs set either; the one
/// not set is the broker's (`key`, `default`).
fn session_above_heartbeat(
    parsed: &BTreeMap<&str, Value>,
    (session_key, session): (&str, i32),
    (heartbeat_key, heartbeat): (&str, i32),
) -> Result<(), String> {
    let set_session = int_value(parsed, session_key);
    let set_heartbeat = int_value(parsed, heartbeat_key);
    if set_session.is_none() && set_heartbeat.is_none() {
        return Ok(());
    }
    if set_session.unwrap_or(session) <= set_heartbeat.unwrap_or(heartbeat) {
        return Err(format!(
            "{session_key} must be greater than {heartbeat_key}"
        ));
    }
    Ok(())
}

fn def_of(name: &str) -> Option<&'static Def> {
    DEFS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> GroupConfigRules {
        GroupConfigRules::new(GroupConfigBrokerSettings::default())
    }

    fn check(pairs: &[(&str, &str)]) -> Result<(), String> {
        let map = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        rules().validate(&map)
    }

    /// The messages Kafka 4.4.0's `GroupConfig.validate` (and `ConfigDef.parse`) gives, read
    /// from the released jar with a broker at its defaults.
    #[test]
    #[rustfmt::skip]
    fn validation_messages_are_kafkas() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("streams.session.timeout.ms", "abc", Some("Invalid value abc for configuration streams.session.timeout.ms: Not a number of type INT")),
            ("streams.session.timeout.ms", "0", Some("Invalid value 0 for configuration streams.session.timeout.ms: Value must be at least 1")),
            ("streams.session.timeout.ms", "1000", Some("streams.session.timeout.ms must be in the range 45000 to 60000 inclusive.")),
            ("streams.session.timeout.ms", "70000", Some("streams.session.timeout.ms must be in the range 45000 to 60000 inclusive.")),
            ("streams.session.timeout.ms", "45000", None),
            ("streams.session.timeout.ms", " 50000 ", None),
            ("streams.heartbeat.interval.ms", "4000", Some("streams.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.")),
            ("streams.heartbeat.interval.ms", "15000", None),
            ("streams.num.standby.replicas", "3", Some("streams.num.standby.replicas must be less than or equal to 2")),
            ("streams.num.standby.replicas", "-1", Some("Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0")),
            ("streams.initial.rebalance.delay.ms", "-1", Some("Invalid value -1 for configuration streams.initial.rebalance.delay.ms: Value must be at least 0")),
            ("streams.num.warmup.replicas", "21", Some("streams.num.warmup.replicas must be less than or equal to 20")),
            ("streams.task.offset.interval.ms", "100", Some("streams.task.offset.interval.ms must be greater than or equal to 15000")),
            ("streams.acceptable.recovery.lag", "-1", Some("Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0")),
            ("streams.assignment.interval.ms", "20000", Some("streams.assignment.interval.ms must be in the range 0 to 15000 inclusive.")),
            ("streams.rack.aware.assignment.tags", "a,a", Some("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")),
            ("streams.rack.aware.assignment.tags", "a, b", None),
            ("streams.assignor.name", "foo", Some("streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky].")),
            ("streams.assignor.name", "sticky", None),
            ("streams.assignor.offload.enable", "maybe", Some("Invalid value maybe for configuration streams.assignor.offload.enable: Expected value to be either true or false")),
            ("unknown.key", "1", Some("Unknown group config name: unknown.key")),
            ("consumer.session.timeout.ms", "1000", Some("consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")),
            ("share.record.lock.duration.ms", "10", Some("Invalid value 10 for configuration share.record.lock.duration.ms: Value must be at least 1000")),
            ("errors.deadletterqueue.topic.name", "__x", Some("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")),
            ("share.auto.offset.reset", "bogus", Some("Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")),
            ("share.auto.offset.reset", "by_duration:PT1H30M", None),
            ("share.auto.offset.reset", "by_duration:-PT1H", Some("Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")),
            ("share.isolation.level", "x", Some("Invalid value x for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted")),
        ];
        for (key, value, expected) in cases {
            assert_eq!(
                check(&[(key, value)]).err().as_deref(),
                *expected,
                "{key}={value}"
            );
        }
    }

    #[test]
    fn the_session_must_stay_above_the_heartbeat_with_the_brokers_value_for_the_other() {
        assert_eq!(
            check(&[
                ("streams.session.timeout.ms", "45000"),
                ("streams.heartbeat.interval.ms", "15000")
            ]),
            Ok(())
        );
        let mut broker = GroupConfigBrokerSettings {
            min_heartbeat_interval_ms: 1_000,
            max_heartbeat_interval_ms: 60_000,
            ..Default::default()
        };
        broker.group_defaults.session_timeout_ms = 45_000;
        let rules = GroupConfigRules::new(broker);
        let map = BTreeMap::from([(
            "streams.heartbeat.interval.ms".to_owned(),
            "45000".to_owned(),
        )]);
        assert_eq!(
            rules.validate(&map).err().as_deref(),
            Some("streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms")
        );
    }

    #[test]
    fn effective_settings_take_the_groups_values_and_cap_them_to_the_brokers_bounds() {
        let rules = rules();
        let overrides = BTreeMap::from([
            ("streams.session.timeout.ms".to_owned(), "50000".to_owned()),
            ("streams.num.standby.replicas".to_owned(), "9".to_owned()),
            (
                "streams.rack.aware.assignment.tags".to_owned(),
                "zone, rack".to_owned(),
            ),
            ("consumer.session.timeout.ms".to_owned(), "50000".to_owned()),
        ]);
        let c = rules.effective(&overrides);
        assert_eq!(c.session_timeout_ms, 50_000);
        assert_eq!(
            c.num_standby_replicas, 2,
            "capped to group.streams.max.standby.replicas"
        );
        assert_eq!(c.rack_aware_assignment_tags, vec!["zone", "rack"]);
        assert_eq!(c.heartbeat_interval_ms, 5_000, "the broker's");
        assert_eq!(
            rules.effective(&BTreeMap::new()),
            StreamsGroupConfig::default()
        );
    }

    /// What Kafka 4.4.0's DescribeConfigs answers for a group (read from the released broker
    /// at its defaults): the 21 non-internal configs in its order; a set value is GROUP_CONFIG
    /// with itself then the broker key as synonyms.
    #[test]
    fn describe_lists_kafkas_configs_with_sources_and_synonyms() {
        let rules = rules();
        let none = rules.describe(None);
        let names: Vec<&str> = none.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, DESCRIBE_ORDER);
        let assignor = &none[1];
        assert_eq!(
            (
                assignor.value.as_deref(),
                assignor.source,
                assignor.config_type
            ),
            (Some("sticky"), DEFAULT_CONFIG, 2)
        );
        assert_eq!(
            assignor.synonyms,
            vec![(
                "group.streams.assignors".to_owned(),
                Some("sticky".to_owned()),
                DEFAULT_CONFIG
            )]
        );
        let tags = none
            .iter()
            .find(|e| e.name == STREAMS_RACK_AWARE_ASSIGNMENT_TAGS)
            .unwrap();
        assert_eq!((tags.value.as_deref(), tags.config_type), (Some(""), 7));
        let reset = none
            .iter()
            .find(|e| e.name == "share.auto.offset.reset")
            .unwrap();
        assert_eq!(
            reset.synonyms,
            vec![(
                "share.auto.offset.reset".to_owned(),
                Some("latest".to_owned()),
                DEFAULT_CONFIG
            )]
        );
        let overrides = BTreeMap::from([
            ("streams.session.timeout.ms".to_owned(), " 50000".to_owned()),
            ("streams.num.warmup.replicas".to_owned(), "3".to_owned()),
        ]);
        let set = rules.describe(Some(&overrides));
        assert_eq!(set.len(), 22);
        assert_eq!(
            set[0].name, "streams.num.warmup.replicas",
            "set internal configs come first"
        );
        let session = set
            .iter()
            .find(|e| e.name == STREAMS_SESSION_TIMEOUT_MS)
            .unwrap();
        assert_eq!(
            (session.value.as_deref(), session.source),
            (Some("50000"), GROUP_CONFIG)
        );
        assert_eq!(
            session.synonyms,
            vec![
                (
                    "streams.session.timeout.ms".to_owned(),
                    Some("50000".to_owned()),
                    GROUP_CONFIG
                ),
                (
                    "group.streams.session.timeout.ms".to_owned(),
                    Some("45000".to_owned()),
                    DEFAULT_CONFIG
                ),
            ]
        );
        // A broker value other than Kafka's default is STATIC_BROKER_CONFIG, before the default.
        let mut settings = GroupConfigBrokerSettings::default();
        settings.group_defaults.num_standby_replicas = 1;
        let broker = GroupConfigRules::new(settings);
        let standby = broker
            .describe(None)
            .into_iter()
            .find(|e| e.name == STREAMS_NUM_STANDBY_REPLICAS)
            .unwrap();
        assert_eq!(
            (
                standby.value.as_deref(),
                standby.source,
                standby.synonyms.len()
            ),
            (Some("1"), STATIC_BROKER_CONFIG, 2)
        );
    }
}
