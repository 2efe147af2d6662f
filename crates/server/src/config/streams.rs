//! The `group.streams.*` keys of Kafka's `GroupCoordinatorConfig`, with its defaults, its
//! per-key bounds and its cross-key rules (`verifyStreamsGroupConfigs`).

use std::collections::BTreeMap;

use super::values::{boolean, int_in, optional_string, unique_list};
use super::{ConfigError, Reader};

/// Assignors built into the coordinator; the first is the default.
pub const BUILTIN_ASSIGNORS: &[&str] = &["sticky"];

/// The broker's `group.streams.*` settings (Kafka's `GroupCoordinatorConfig`, its streams
/// part) and the topology description plugin's keys; what one group runs with is the
/// coordinator's `StreamsGroupConfig`, made from these by [`Self::coordinator_config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCoordinatorConfig {
    pub session_timeout_ms: i32,
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub min_heartbeat_interval_ms: i32,
    pub max_heartbeat_interval_ms: i32,
    pub max_size: i32,
    pub num_standby_replicas: i32,
    pub max_standby_replicas: i32,
    pub initial_rebalance_delay_ms: i32,
    pub assignment_interval_ms: i32,
    pub min_assignment_interval_ms: i32,
    pub max_assignment_interval_ms: i32,
    pub assignors: Vec<String>,
    pub rack_aware_assignment_tags: Vec<String>,
    pub assignor_offload_enable: bool,
    pub task_offset_interval_ms: i32,
    pub min_task_offset_interval_ms: i32,
    pub num_warmup_replicas: i32,
    pub max_warmup_replicas: i32,
    pub acceptable_recovery_lag: i64,
    /// Kafka 4.4's plugin key (KIP-1331); used when `topology_description_class` is unset.
    pub topology_description_plugin_class: Option<String>,
    /// The specification's plugin key (KIP-1331); wins over Kafka 4.4's when both are set.
    pub topology_description_class: Option<String>,
    /// Bound on each set/get/delete call of the topology description plugin, and on its close.
    pub topology_description_timeout_ms: i32,
    /// set/get/delete calls of the topology description plugin running at once.
    pub topology_description_max_concurrent_calls: i32,
    /// Every key of the configuration file, handed to the plugin's `configure` (as Kafka hands
    /// a plugin all broker configs); empty when no plugin is configured.
    pub topology_description_configs: BTreeMap<String, String>,
    /// `offsets.retention.minutes` (not a `group.streams.*` key, but the coordinator's).
    pub offsets_retention_minutes: i32,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
}

impl Default for GroupCoordinatorConfig {
    fn default() -> Self {
        GroupCoordinatorConfig {
            session_timeout_ms: 45_000,
            min_session_timeout_ms: 45_000,
            max_session_timeout_ms: 60_000,
            heartbeat_interval_ms: 5_000,
            min_heartbeat_interval_ms: 5_000,
            max_heartbeat_interval_ms: 15_000,
            max_size: i32::MAX,
            num_standby_replicas: 0,
            max_standby_replicas: 2,
            initial_rebalance_delay_ms: 3_000,
            assignment_interval_ms: 1_000,
            min_assignment_interval_ms: 0,
            max_assignment_interval_ms: 15_000,
            assignors: BUILTIN_ASSIGNORS.iter().map(|s| (*s).to_owned()).collect(),
            rack_aware_assignment_tags: Vec::new(),
            assignor_offload_enable: true,
            task_offset_interval_ms: 60_000,
            min_task_offset_interval_ms: 15_000,
            num_warmup_replicas: 2,
            max_warmup_replicas: 20,
            acceptable_recovery_lag: 10_000,
            topology_description_plugin_class: None,
            topology_description_class: None,
            topology_description_timeout_ms: TOPOLOGY_DESCRIPTION_TIMEOUT_MS,
            topology_description_max_concurrent_calls: TOPOLOGY_DESCRIPTION_MAX_CONCURRENT_CALLS,
            topology_description_configs: BTreeMap::new(),
            offsets_retention_minutes: 7 * 24 * 60,
            offsets_retention_check_interval_ms: 600_000,
        }
    }
}

/// Default of `group.streams.topology.description.timeout.ms`.
pub const TOPOLOGY_DESCRIPTION_TIMEOUT_MS: i32 = 30_000;
/// Default of `group.streams.topology.description.max.concurrent.calls`.
pub const TOPOLOGY_DESCRIPTION_MAX_CONCURRENT_CALLS: i32 = 64;

const POSITIVE: (i32, i32) = (1, i32::MAX);
const NON_NEGATIVE: (i32, i32) = (0, i32::MAX);
/// Upper bound of `group.streams.topology.description.max.concurrent.calls`: each slot may
/// hold a call's data while the plugin does not answer, so "unbounded" is not on offer.
const MAX_CONCURRENT_CALLS: i32 = 1 << 20;

pub(super) fn read(r: &Reader<'_>) -> Result<GroupCoordinatorConfig, ConfigError> {
    let mut c = GroupCoordinatorConfig::default();
    read_liveness(r, &mut c)?;
    read_assignment(r, &mut c)?;
    read_warmup(r, &mut c)?;
    read_topology_description(r, &mut c)?;
    read_offsets_retention(r, &mut c)?;
    verify(r, &c)?;
    c.topology_description_configs = topology_description_plugin(r, &c)?;
    Ok(c)
}

/// An `i32` key within `min..=max`; `default` when it is not set.
fn int(
    r: &Reader<'_>,
    key: &'static str,
    default: i32,
    (min, max): (i32, i32),
) -> Result<i32, ConfigError> {
    r.get(key, default, |v| int_in(v, min, max))
}

/// How long a member may stay silent: the session timeout and heartbeat interval, with their
/// bounds.
fn read_liveness(r: &Reader<'_>, c: &mut GroupCoordinatorConfig) -> Result<(), ConfigError> {
    c.session_timeout_ms = int(
        r,
        "group.streams.session.timeout.ms",
        c.session_timeout_ms,
        POSITIVE,
    )?;
    c.min_session_timeout_ms = int(
        r,
        "group.streams.min.session.timeout.ms",
        c.min_session_timeout_ms,
        POSITIVE,
    )?;
    c.max_session_timeout_ms = int(
        r,
        "group.streams.max.session.timeout.ms",
        c.max_session_timeout_ms,
        POSITIVE,
    )?;
    c.heartbeat_interval_ms = int(
        r,
        "group.streams.heartbeat.interval.ms",
        c.heartbeat_interval_ms,
        POSITIVE,
    )?;
    c.min_heartbeat_interval_ms = int(
        r,
        "group.streams.min.heartbeat.interval.ms",
        c.min_heartbeat_interval_ms,
        POSITIVE,
    )?;
    c.max_heartbeat_interval_ms = int(
        r,
        "group.streams.max.heartbeat.interval.ms",
        c.max_heartbeat_interval_ms,
        POSITIVE,
    )?;
    Ok(())
}

/// How the group is assigned: its size, standby replicas, the rebalance delay, the assignment
/// interval with its bounds, the assignors and the rack-aware assignment tags.
fn read_assignment(r: &Reader<'_>, c: &mut GroupCoordinatorConfig) -> Result<(), ConfigError> {
    c.max_size = int(r, "group.streams.max.size", c.max_size, POSITIVE)?;
    c.num_standby_replicas = int(
        r,
        "group.streams.num.standby.replicas",
        c.num_standby_replicas,
        NON_NEGATIVE,
    )?;
    c.max_standby_replicas = int(
        r,
        "group.streams.max.standby.replicas",
        c.max_standby_replicas,
        NON_NEGATIVE,
    )?;
    c.initial_rebalance_delay_ms = int(
        r,
        "group.streams.initial.rebalance.delay.ms",
        c.initial_rebalance_delay_ms,
        NON_NEGATIVE,
    )?;
    c.assignment_interval_ms = int(
        r,
        "group.streams.assignment.interval.ms",
        c.assignment_interval_ms,
        NON_NEGATIVE,
    )?;
    c.min_assignment_interval_ms = int(
        r,
        "group.streams.min.assignment.interval.ms",
        c.min_assignment_interval_ms,
        NON_NEGATIVE,
    )?;
    c.max_assignment_interval_ms = int(
        r,
        "group.streams.max.assignment.interval.ms",
        c.max_assignment_interval_ms,
        NON_NEGATIVE,
    )?;
    c.assignors = r.get(
        "group.streams.assignors",
        std::mem::take(&mut c.assignors),
        assignors,
    )?;
    c.rack_aware_assignment_tags = r.get(
        "group.streams.rack.aware.assignment.tags",
        std::mem::take(&mut c.rack_aware_assignment_tags),
        unique_list,
    )?;
    c.assignor_offload_enable = r.get(
        "group.streams.assignor.offload.enable",
        c.assignor_offload_enable,
        boolean,
    )?;
    Ok(())
}

/// How tasks catch up: the task offset interval, warm-up replicas and the acceptable
/// recovery lag.
fn read_warmup(r: &Reader<'_>, c: &mut GroupCoordinatorConfig) -> Result<(), ConfigError> {
    c.task_offset_interval_ms = int(
        r,
        "group.streams.task.offset.interval.ms",
        c.task_offset_interval_ms,
        POSITIVE,
    )?;
    c.min_task_offset_interval_ms = int(
        r,
        "group.streams.min.task.offset.interval.ms",
        c.min_task_offset_interval_ms,
        POSITIVE,
    )?;
    c.num_warmup_replicas = int(
        r,
        "group.streams.num.warmup.replicas",
        c.num_warmup_replicas,
        NON_NEGATIVE,
    )?;
    c.max_warmup_replicas = int(
        r,
        "group.streams.max.warmup.replicas",
        c.max_warmup_replicas,
        NON_NEGATIVE,
    )?;
    c.acceptable_recovery_lag = r.get(
        "group.streams.acceptable.recovery.lag",
        c.acceptable_recovery_lag,
        |v| int_in(v, 0, i64::MAX),
    )?;
    Ok(())
}

/// The topology description plugin (KIP-1331) and the bounds on its calls.
fn read_topology_description(
    r: &Reader<'_>,
    c: &mut GroupCoordinatorConfig,
) -> Result<(), ConfigError> {
    c.topology_description_plugin_class = r.get(
        "group.streams.topology.description.plugin.class",
        None,
        |v| Ok(optional_string(v)),
    )?;
    c.topology_description_class =
        r.get(TOPOLOGY_DESCRIPTION_CLASS, None, |v| Ok(optional_string(v)))?;
    c.topology_description_timeout_ms = int(
        r,
        "group.streams.topology.description.timeout.ms",
        c.topology_description_timeout_ms,
        POSITIVE,
    )?;
    c.topology_description_max_concurrent_calls = int(
        r,
        "group.streams.topology.description.max.concurrent.calls",
        c.topology_description_max_concurrent_calls,
        (1, MAX_CONCURRENT_CALLS),
    )?;
    Ok(())
}

/// The coordinator's offsets retention.
fn read_offsets_retention(
    r: &Reader<'_>,
    c: &mut GroupCoordinatorConfig,
) -> Result<(), ConfigError> {
    c.offsets_retention_minutes = int(
        r,
        "offsets.retention.minutes",
        c.offsets_retention_minutes,
        POSITIVE,
    )?;
    c.offsets_retention_check_interval_ms = r.get(
        "offsets.retention.check.interval.ms",
        c.offsets_retention_check_interval_ms,
        |v| int_in(v, 1, i64::MAX),
    )?;
    Ok(())
}

/// The specification's plugin key.
pub const TOPOLOGY_DESCRIPTION_CLASS: &str = "group.streams.topology.description.class";
/// Kafka 4.4's plugin key.
pub const TOPOLOGY_DESCRIPTION_PLUGIN_CLASS: &str =
    "group.streams.topology.description.plugin.class";
/// Keys under this prefix belong to the topology description feature and its plugin.
pub const TOPOLOGY_DESCRIPTION_PREFIX: &str = "group.streams.topology.description.";

/// Checks that the configured plugin (if any) is a known one, and collects what its
/// `configure` gets: every key of the file. The keys under the feature's prefix then count as
/// used (the plugin reads its own, e.g. `group.streams.topology.description.memory.*`), so
/// they are not reported as unknown.
fn topology_description_plugin(
    r: &Reader<'_>,
    c: &GroupCoordinatorConfig,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let Some((key, name)) = c.topology_description_plugin() else {
        return Ok(BTreeMap::new());
    };
    let known = kcoord_plugins::BUILT_IN
        .iter()
        .any(|(short, aliases)| *short == name || aliases.contains(&name));
    if !known {
        return Err(r.error(
            key,
            format!(
                "unknown topology description plugin \"{name}\" (known plugins: {})",
                kcoord_plugins::registry::known_names()
            ),
        ));
    }
    let all: BTreeMap<String, String> = r
        .props
        .entries
        .iter()
        .map(|(k, e)| (k.clone(), e.value.clone()))
        .collect();
    for k in all
        .keys()
        .filter(|k| k.starts_with(TOPOLOGY_DESCRIPTION_PREFIX))
    {
        r.entry(k);
    }
    Ok(all)
}

fn assignors(raw: &str) -> Result<Vec<String>, String> {
    let names = unique_list(raw)?;
    if names.is_empty() {
        return Err("must name at least one assignor".to_owned());
    }
    if let Some(unknown) = names
        .iter()
        .find(|n| !BUILTIN_ASSIGNORS.contains(&n.as_str()))
    {
        return Err(format!(
            "unknown assignor \"{unknown}\" (built-in assignors: {})",
            BUILTIN_ASSIGNORS.join(", ")
        ));
    }
    Ok(names)
}

/// Kafka's `verifyStreamsGroupConfigs`, in its order.
fn verify(r: &Reader<'_>, c: &GroupCoordinatorConfig) -> Result<(), ConfigError> {
    verify_liveness(r, c)?;
    verify_assignment(r, c)
}

/// The heartbeat interval and session timeout within their bounds, the heartbeat shorter.
fn verify_liveness(r: &Reader<'_>, c: &GroupCoordinatorConfig) -> Result<(), ConfigError> {
    const SESSION: &str = "group.streams.session.timeout.ms";
    const MIN_SESSION: &str = "group.streams.min.session.timeout.ms";
    const MAX_SESSION: &str = "group.streams.max.session.timeout.ms";
    const HEARTBEAT: &str = "group.streams.heartbeat.interval.ms";
    const MIN_HEARTBEAT: &str = "group.streams.min.heartbeat.interval.ms";
    const MAX_HEARTBEAT: &str = "group.streams.max.heartbeat.interval.ms";

    at_least(
        r,
        MAX_HEARTBEAT,
        c.max_heartbeat_interval_ms,
        MIN_HEARTBEAT,
        c.min_heartbeat_interval_ms,
    )?;
    at_least(
        r,
        HEARTBEAT,
        c.heartbeat_interval_ms,
        MIN_HEARTBEAT,
        c.min_heartbeat_interval_ms,
    )?;
    at_most(
        r,
        HEARTBEAT,
        c.heartbeat_interval_ms,
        MAX_HEARTBEAT,
        c.max_heartbeat_interval_ms,
    )?;
    at_least(
        r,
        MAX_SESSION,
        c.max_session_timeout_ms,
        MIN_SESSION,
        c.min_session_timeout_ms,
    )?;
    at_least(
        r,
        SESSION,
        c.session_timeout_ms,
        MIN_SESSION,
        c.min_session_timeout_ms,
    )?;
    at_most(
        r,
        SESSION,
        c.session_timeout_ms,
        MAX_SESSION,
        c.max_session_timeout_ms,
    )?;
    r.require(
        c.heartbeat_interval_ms < c.session_timeout_ms,
        &[HEARTBEAT, SESSION],
        format!(
            "{HEARTBEAT} ({}) must be less than {SESSION} ({})",
            c.heartbeat_interval_ms, c.session_timeout_ms
        ),
    )?;
    Ok(())
}

/// The assignment interval within its bounds, the standby and warm-up replicas within theirs,
/// and the task offset interval above its minimum.
fn verify_assignment(r: &Reader<'_>, c: &GroupCoordinatorConfig) -> Result<(), ConfigError> {
    const INTERVAL: &str = "group.streams.assignment.interval.ms";
    const MIN_INTERVAL: &str = "group.streams.min.assignment.interval.ms";
    const MAX_INTERVAL: &str = "group.streams.max.assignment.interval.ms";
    const STANDBY: &str = "group.streams.num.standby.replicas";
    const MAX_STANDBY: &str = "group.streams.max.standby.replicas";
    const OFFSET_INTERVAL: &str = "group.streams.task.offset.interval.ms";
    const MIN_OFFSET_INTERVAL: &str = "group.streams.min.task.offset.interval.ms";
    const WARMUP: &str = "group.streams.num.warmup.replicas";
    const MAX_WARMUP: &str = "group.streams.max.warmup.replicas";

    at_least(
        r,
        MAX_INTERVAL,
        c.max_assignment_interval_ms,
        MIN_INTERVAL,
        c.min_assignment_interval_ms,
    )?;
    at_least(
        r,
        INTERVAL,
        c.assignment_interval_ms,
        MIN_INTERVAL,
        c.min_assignment_interval_ms,
    )?;
    at_most(
        r,
        INTERVAL,
        c.assignment_interval_ms,
        MAX_INTERVAL,
        c.max_assignment_interval_ms,
    )?;
    at_most(
        r,
        STANDBY,
        c.num_standby_replicas,
        MAX_STANDBY,
        c.max_standby_replicas,
    )?;
    at_least(
        r,
        OFFSET_INTERVAL,
        c.task_offset_interval_ms,
        MIN_OFFSET_INTERVAL,
        c.min_task_offset_interval_ms,
    )?;
    at_most(
        r,
        WARMUP,
        c.num_warmup_replicas,
        MAX_WARMUP,
        c.max_warmup_replicas,
    )?;
    Ok(())
}

/// `a` (`av`) must be at least `b` (`bv`); the error names both keys.
fn at_least(r: &Reader<'_>, a: &str, av: i32, b: &str, bv: i32) -> Result<(), ConfigError> {
    r.require(
        av >= bv,
        &[a, b],
        format!("{a} ({av}) must be greater than or equal to {b} ({bv})"),
    )
}

/// `a` (`av`) must be at most `b` (`bv`); the error names both keys.
fn at_most(r: &Reader<'_>, a: &str, av: i32, b: &str, bv: i32) -> Result<(), ConfigError> {
    r.require(
        av <= bv,
        &[a, b],
        format!("{a} ({av}) must be less than or equal to {b} ({bv})"),
    )
}

impl GroupCoordinatorConfig {
    /// The topology description plugin the configuration names, with the key that names it:
    /// `group.streams.topology.description.class`, else Kafka 4.4's
    /// `group.streams.topology.description.plugin.class`; `None` = the feature is off.
    pub fn topology_description_plugin(&self) -> Option<(&'static str, &str)> {
        match (
            &self.topology_description_class,
            &self.topology_description_plugin_class,
        ) {
            (Some(name), _) => Some((TOPOLOGY_DESCRIPTION_CLASS, name.as_str())),
            (None, Some(name)) => Some((TOPOLOGY_DESCRIPTION_PLUGIN_CLASS, name.as_str())),
            (None, None) => None,
        }
    }

    /// The settings the sans-IO coordinator uses; the min/max bounds only matter here, at
    /// config time.
    pub fn coordinator_config(&self) -> kcoord_coordinator::StreamsGroupConfig {
        kcoord_coordinator::StreamsGroupConfig {
            session_timeout_ms: self.session_timeout_ms,
            heartbeat_interval_ms: self.heartbeat_interval_ms,
            max_size: self.max_size,
            num_standby_replicas: self.num_standby_replicas,
            initial_rebalance_delay_ms: self.initial_rebalance_delay_ms,
            assignment_interval_ms: self.assignment_interval_ms,
            task_offset_interval_ms: self.task_offset_interval_ms,
            acceptable_recovery_lag: self.acceptable_recovery_lag,
            rack_aware_assignment_tags: self.rack_aware_assignment_tags.clone(),
            offsets_retention_ms: i64::from(self.offsets_retention_minutes) * 60_000,
            offsets_retention_check_interval_ms: self.offsets_retention_check_interval_ms,
        }
    }

    /// What the group config rules read: the settings a group falls back to, and the bounds
    /// its own values are checked against and capped to.
    pub fn group_config_broker_settings(&self) -> kcoord_coordinator::GroupConfigBrokerSettings {
        kcoord_coordinator::GroupConfigBrokerSettings {
            group_defaults: self.coordinator_config(),
            min_session_timeout_ms: self.min_session_timeout_ms,
            max_session_timeout_ms: self.max_session_timeout_ms,
            min_heartbeat_interval_ms: self.min_heartbeat_interval_ms,
            max_heartbeat_interval_ms: self.max_heartbeat_interval_ms,
            max_standby_replicas: self.max_standby_replicas,
            min_assignment_interval_ms: self.min_assignment_interval_ms,
            max_assignment_interval_ms: self.max_assignment_interval_ms,
            min_task_offset_interval_ms: self.min_task_offset_interval_ms,
            num_warmup_replicas: self.num_warmup_replicas,
            max_warmup_replicas: self.max_warmup_replicas,
            assignor_offload_enable: self.assignor_offload_enable,
            assignors: self.assignors.clone(),
        }
    }
}
