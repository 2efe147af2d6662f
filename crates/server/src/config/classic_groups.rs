//! The classic groups' settings: Kafka's `group.*` broker configs for JoinGroup/SyncGroup
//! groups, with its defaults and bounds (config/README.md, "Classic groups").

use kcoord_coordinator::classic::ClassicGroupConfig;

use super::values::int_in;
use super::{ConfigError, Reader};

pub(super) fn read(r: &Reader<'_>) -> Result<ClassicGroupConfig, ConfigError> {
    let kafka = ClassicGroupConfig::default();
    let positive = |v: &str| int_in(v, 1, i32::MAX);
    let config = ClassicGroupConfig {
        min_session_timeout_ms: r.get(
            "group.min.session.timeout.ms",
            kafka.min_session_timeout_ms,
            positive,
        )?,
        max_session_timeout_ms: r.get(
            "group.max.session.timeout.ms",
            kafka.max_session_timeout_ms,
            positive,
        )?,
        initial_rebalance_delay_ms: r.get(
            "group.initial.rebalance.delay.ms",
            kafka.initial_rebalance_delay_ms,
            |v| int_in(v, 0, i32::MAX),
        )?,
        max_size: r.get("group.max.size", kafka.max_size, positive)?,
        new_member_join_timeout_ms: kafka.new_member_join_timeout_ms,
    };
    let (min, max) = (config.min_session_timeout_ms, config.max_session_timeout_ms);
    r.require(
        max >= min,
        &["group.max.session.timeout.ms", "group.min.session.timeout.ms"],
        format!("group.max.session.timeout.ms ({max}) must be greater than or equal to group.min.session.timeout.ms ({min})"),
    )?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn kafkas_defaults_and_the_keys_that_change_them() {
        let defaults = Config::parse("t.properties", "node.id=1\n")
            .unwrap()
            .classic_groups;
        assert_eq!(
            defaults,
            kcoord_coordinator::classic::ClassicGroupConfig::default()
        );
        let c = Config::parse(
            "t.properties",
            "node.id=1\ngroup.min.session.timeout.ms=1000\ngroup.max.session.timeout.ms=2000\ngroup.initial.rebalance.delay.ms=0\ngroup.max.size=3\n",
        )
        .unwrap()
        .classic_groups;
        assert_eq!(
            (
                c.min_session_timeout_ms,
                c.max_session_timeout_ms,
                c.initial_rebalance_delay_ms,
                c.max_size
            ),
            (1000, 2000, 0, 3)
        );
        let e = Config::parse(
            "t.properties",
            "node.id=1\ngroup.min.session.timeout.ms=5000\ngroup.max.session.timeout.ms=2000\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("group.max.session.timeout.ms (2000) must be greater than or equal to group.min.session.timeout.ms (5000)"), "{e}");
        assert!(Config::parse("t.properties", "node.id=1\ngroup.max.size=0\n").is_err());
    }
}
