//! Per-group configs (Kafka's `GroupConfigManager`): a group with overrides runs with them
//! (`GroupMetadataManager.streamsGroupSessionTimeoutMs(groupId)` and siblings), other groups
//! with the broker's settings.
mod support;

use std::collections::BTreeMap;

use kcoord_coordinator::{Effect, StreamsGroupConfig};
use support::*;

fn overridden(f: impl FnOnce(&mut StreamsGroupConfig)) -> BTreeMap<String, StreamsGroupConfig> {
    let mut c = config();
    f(&mut c);
    BTreeMap::from([(GROUP.to_owned(), c)])
}

#[test]
fn a_group_with_overrides_answers_and_expires_with_its_own_settings() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    h.input(Effect::GroupConfigs(overridden(|c| {
        c.session_timeout_ms = 50_000;
        c.heartbeat_interval_ms = 7_000;
        c.task_offset_interval_ms = 20_000;
        c.acceptable_recovery_lag = 5;
    })));
    let mut members = vec![Member::new("a", "p1", simple_topology(1))];
    converge(&mut h, &mut members);
    let mut a = members.remove(0);
    let r = a.last.clone().unwrap();
    assert_eq!(
        (
            r.heartbeat_interval_ms,
            r.task_offset_interval_ms,
            r.acceptable_recovery_lag
        ),
        (7_000, 20_000, 5)
    );
    // The steady-state path answers with the group's settings too.
    let steady = a.beat(&mut h).response;
    assert_eq!(steady.heartbeat_interval_ms, 7_000);
    // The broker's session timeout (45 s) passes; the group's (50 s) has not.
    h.advance(46_000);
    assert!(h.shard.group(GROUP).unwrap().members.contains_key("a"));
    h.advance(5_000);
    assert!(h.shard.group(GROUP).unwrap().members.is_empty());
    // Another group keeps the broker's settings.
    assert_eq!(
        h.shard.group_settings("other").config.session_timeout_ms,
        45_000
    );
}

#[test]
fn changing_the_standby_replicas_of_a_group_bumps_its_epoch_and_assigns_standbys() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    h.create_topic("app-store-changelog", 2);
    let mut members = vec![
        Member::new("a", "p1", stateful_topology(1)),
        Member::new("b", "p2", stateful_topology(1)),
    ];
    converge(&mut h, &mut members);
    let epoch = h.shard.group(GROUP).unwrap().group_epoch;
    assert!(members.iter().all(|m| m.standby.is_empty()));
    h.input(Effect::GroupConfigs(overridden(|c| {
        c.num_standby_replicas = 1
    })));
    converge(&mut h, &mut members);
    let g = h.shard.group(GROUP).unwrap();
    assert_eq!(g.group_epoch, epoch + 1);
    assert_eq!(
        g.last_assignment_configs
            .as_ref()
            .and_then(|c| c.get("num.standby.replicas"))
            .map(String::as_str),
        Some("1")
    );
    assert!(members.iter().all(|m| !m.standby.is_empty()));
    // Removing the override goes back to the broker's value (no standbys).
    h.input(Effect::GroupConfigs(BTreeMap::new()));
    converge(&mut h, &mut members);
    assert!(members.iter().all(|m| m.standby.is_empty()));
    h.assert_replay_matches();
}

#[test]
fn the_initial_rebalance_delay_of_a_group_applies_to_its_first_join() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    h.input(Effect::GroupConfigs(overridden(|c| {
        c.initial_rebalance_delay_ms = 2_000
    })));
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    assert!(
        a.active.is_empty(),
        "the assignment waits for the group's delay"
    );
    assert!(a.statuses().contains(&5), "{:?}", a.statuses());
    h.advance(2_001);
    a.beat(&mut h);
    a.beat(&mut h);
    assert_eq!(a.active_count(), 2);
}
