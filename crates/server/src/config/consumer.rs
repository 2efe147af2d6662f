//! The `group.consumer.*` keys of Kafka's `GroupCoordinatorConfig` (KIP-848 consumer groups),
//! with Kafka's defaults and bounds.

use kcoord_coordinator::consumer::MigrationPolicy;
use kcoord_coordinator::ConsumerGroupConfig;

use super::values::{int_in, unique_list};
use super::{ConfigError, Reader};

/// The server-side assignors built into the coordinator; Kafka's default list, in its order.
pub const BUILTIN_ASSIGNORS: &[&str] = &["uniform", "range"];

pub(super) fn read(r: &Reader<'_>) -> Result<ConsumerGroupConfig, ConfigError> {
    let d = ConsumerGroupConfig::default();
    let session_timeout_ms = r.get(
        "group.consumer.session.timeout.ms",
        d.session_timeout_ms,
        |v| int_in(v, 1, i32::MAX),
    )?;
    let heartbeat_interval_ms = r.get(
        "group.consumer.heartbeat.interval.ms",
        d.heartbeat_interval_ms,
        |v| int_in(v, 1, i32::MAX),
    )?;
    let max_size = r.get("group.consumer.max.size", d.max_size, |v| {
        int_in(v, 1, i32::MAX)
    })?;
    let assignors = r.get("group.consumer.assignors", d.assignors, assignors)?;
    let assignment_interval_ms = r.get(
        "group.consumer.assignment.interval.ms",
        d.assignment_interval_ms,
        |v| int_in(v, 0, i32::MAX),
    )?;
    let migration_policy = r.get("group.consumer.migration.policy", d.migration_policy, |v| {
        MigrationPolicy::parse(v.trim())
            .ok_or_else(|| "must be one of bidirectional, upgrade, downgrade, disabled".to_owned())
    })?;
    // Kafka's `GroupCoordinatorConfig` requires the interval below the session timeout.
    if heartbeat_interval_ms >= session_timeout_ms {
        return Err(r.error(
            "group.consumer.heartbeat.interval.ms",
            format!("must be less than group.consumer.session.timeout.ms ({session_timeout_ms})"),
        ));
    }
    Ok(ConsumerGroupConfig {
        session_timeout_ms,
        heartbeat_interval_ms,
        max_size,
        assignors,
        assignment_interval_ms,
        migration_policy,
    })
}

/// Assignor names: Kafka's `group.consumer.assignors` takes class names too; kcoord knows its
/// two built-in ones by their names (and by Kafka's class names for them).
fn assignors(raw: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = unique_list(raw)?
        .into_iter()
        .map(|n| match n.as_str() {
            "org.apache.kafka.coordinator.group.assignor.UniformAssignor" => "uniform".to_owned(),
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor" => "range".to_owned(),
            _ => n,
        })
        .collect();
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

#[cfg(test)]
mod tests {
    use kcoord_coordinator::consumer::MigrationPolicy;

    use crate::config::Config;

    #[test]
    fn the_migration_policy_is_read_case_insensitively_and_defaults_to_bidirectional() {
        let policy = |lines: &str| {
            Config::parse("t.properties", &format!("node.id=1\n{lines}"))
                .map(|c| c.consumer.migration_policy)
        };
        assert_eq!(policy("").unwrap(), MigrationPolicy::Bidirectional);
        assert_eq!(
            policy("group.consumer.migration.policy=Upgrade\n").unwrap(),
            MigrationPolicy::Upgrade
        );
        assert_eq!(
            policy("group.consumer.migration.policy=DISABLED\n").unwrap(),
            MigrationPolicy::Disabled
        );
        assert_eq!(
            policy("group.consumer.migration.policy=downgrade\n").unwrap(),
            MigrationPolicy::Downgrade
        );
        let e = policy("group.consumer.migration.policy=sideways\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("must be one of bidirectional, upgrade, downgrade, disabled"),
            "{e}"
        );
    }
}
