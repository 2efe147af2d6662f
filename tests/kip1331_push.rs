//! KIP-1331 against the real daemon, part 1: TopologyDescriptionIds in heartbeats and the two
//! push RPCs (key 95, the specification's, with heartbeat v2; key 93, Kafka 4.4's, with
//! heartbeat v1). Test names carry the requirement id (docs/requirements.md) or the
//! specification's Test Plan item they prove.

mod kip1331_support;
mod streams_support;

use std::sync::{Arc, Mutex};

use kcoord_plugin_api::Uuid;
use kcoord_plugins::clock::ManualClock;
use kcoord_plugins::gate::Backoff;
use kcoord_plugins::{MemoryPlugin, MemoryPluginConfig};
use kcoord_server::runtime::shards::LoadGate;
use kcoord_server::security::{AclOperation, Authorizer, ResourceType};
use kcoord_server::Extensions;
use kcoord_wire::messages::update_streams_group_topology_description_request as spec_push;
use kcoord_wire::ErrorCode;
use kip1331_support::*;
use streams_support::{simple_topology, Member};

const NONE: i16 = 0;
const INVALID_REQUEST: i16 = 42;
const UNSUPPORTED_VERSION: i16 = 35;
const UPDATE_FAILED: i16 = 135;
const TOO_LARGE: i16 = 137;

/// A daemon with a test plugin that always asks, a topic `t`, and one member of `group`
/// joined with heartbeat v2; returns the id the join response carried.
async fn joined(group: &str) -> (Daemon, Arc<TestPlugin>, Member, Uuid) {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = daemon_with(&plugin, &[]).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, group, "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked for a push");
    (d, plugin, m, id)
}

// ---------------------------------------------------------------------------------------------
// Test Plan: Integration Tests

/// "A Streams client pushes its topology description after the broker requests it, and the
/// configured plugin receives the description." Both dialects, and with the `memory` plugin
/// from the configuration as `config/server.properties` ships it.
#[tokio::test]
async fn push_after_broker_request_reaches_plugin() {
    let (d, plugin, m, id) = joined("plan1").await;
    assert_eq!(plugin.asks_for("plan1"), vec![id]);
    let r = push95(&m.conn, "plan1", id, spec_description()).await;
    assert_eq!((r.error_code, r.error_message), (NONE, None));
    let sets = plugin.sets_for("plan1");
    assert_eq!(sets.len(), 1);
    let (call, description) = &sets[0];
    assert_eq!(call.id, Some(id));
    assert_eq!(description.subtopologies[0].nodes.len(), 3);
    assert_eq!(description.global_stores.len(), 1);
    // The plugin sees who pushed.
    assert_eq!(call.ctx.api_key, 95);
    assert_eq!(call.ctx.api_version, 0);
    assert_eq!(call.ctx.client_id, "kip1331-e2e");
    assert_eq!(call.ctx.listener_name, "PLAINTEXT");
    assert_eq!(call.ctx.principal, "User:ANONYMOUS");
    assert!(call.ctx.client_address.is_loopback());

    // Kafka 4.4's dialect: v1 says TopologyDescriptionRequired, key 93 pushes by epoch.
    let mut m2 = member(&d, "plan1-44", "m1", "t").await;
    assert!(beat(&mut m2, 1).await.topology_description_required);
    let r = push93(&m2.conn, "plan1-44", "m1", 1, kafka_description()).await;
    assert_eq!((r.error_code, r.error_message), (NONE, None));
    let asked = plugin.asks_for("plan1-44");
    assert_eq!(plugin.sets_for("plan1-44")[0].0.id, asked.first().copied());
    assert_eq!(plugin.sets_for("plan1-44")[0].1, *description);
    d.stop().await;

    // The memory plugin, selected by name: asked once, stored, never asked again, described.
    let d = daemon(&[MEMORY], Extensions::default()).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "plan1-memory", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("memory asks first");
    assert_eq!(
        beat(&mut m, 2).await.topology_description_id,
        None,
        "push in flight"
    );
    assert_eq!(
        push95(&m.conn, "plan1-memory", id, spec_description())
            .await
            .error_code,
        NONE
    );
    assert_eq!(
        beat(&mut m, 2).await.topology_description_id,
        None,
        "stored"
    );
    let g = &describe(&m.conn, &["plan1-memory"], true, 1).await.groups[0];
    assert_eq!(g.topology_description_status, 3);
    let stored = g.topology_description.as_ref().expect("AVAILABLE");
    assert_eq!(
        stored.subtopologies[0].nodes[2].sink_topic.as_deref(),
        Some("valid-orders")
    );
    d.stop().await;
}

/// "A broker without a topology description plugin never asks the client to push and rejects
/// pushes outright."
#[tokio::test]
async fn no_plugin_never_asks_and_rejects_push() {
    let d = daemon(&[], Extensions::default()).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "plan2", "m1", "t").await;
    let keys = advertised(&m.conn).await;
    assert!(!keys.contains(&95) && !keys.contains(&93), "{keys:?}");
    for version in [2, 1, 0, 2, 1] {
        let r = beat(&mut m, version).await;
        assert_eq!(
            (r.topology_description_id, r.topology_description_required),
            (None, false)
        );
    }
    for group in ["plan2", "unknown-group"] {
        let r = push95(&m.conn, group, Uuid::from_u128(1), spec_description()).await;
        assert_eq!(r.error_code, UNSUPPORTED_VERSION);
        let r = push93(&m.conn, group, "m1", 1, kafka_description()).await;
        assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    }
    // Answered, not disconnected: the member goes on.
    beat(&mut m, 2).await;
    assert!(!m.conn.is_closed());
    d.stop().await;
}

/// Denies READ on the groups it names and records every question.
#[derive(Debug, Default)]
struct DenyReadOn {
    groups: Vec<&'static str>,
    asked: Mutex<Vec<(AclOperation, ResourceType, String)>>,
}

impl Authorizer for DenyReadOn {
    fn authorize(
        &self,
        _: &kcoord_server::security::Requester<'_>,
        op: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        self.asked
            .lock()
            .unwrap()
            .push((op, resource, name.to_owned()));
        !(op == AclOperation::Read
            && resource == ResourceType::Group
            && self.groups.contains(&name))
    }
}

/// "Authorization is enforced on the new RPC": READ on the GROUP (not ALTER), checked first.
#[tokio::test]
async fn update_requires_read_acl() {
    let plugin = TestPlugin::new(Ask::Yes);
    let authorizer = Arc::new(DenyReadOn {
        groups: vec!["plan3-secret"],
        ..Default::default()
    });
    let extensions = Extensions {
        plugin: Some(plugin.clone()),
        authorizer: Some(authorizer.clone()),
        ..Default::default()
    };
    let d = daemon(&[], extensions).await;
    topics(&d, &["t"]).await;
    let conn = d.connect().await;
    let r = push95(
        &conn,
        "plan3-secret",
        Uuid::from_u128(5),
        spec_description(),
    )
    .await;
    assert_eq!(r.error_code, ErrorCode::GROUP_AUTHORIZATION_FAILED.code());
    let r = push93(&conn, "plan3-secret", "m1", 1, kafka_description()).await;
    assert_eq!(r.error_code, ErrorCode::GROUP_AUTHORIZATION_FAILED.code());
    assert!(plugin.sets_for("plan3-secret").is_empty());
    let on_secret: Vec<_> = authorizer
        .asked
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, n)| n == "plan3-secret")
        .map(|(op, res, _)| (*op, *res))
        .collect();
    assert_eq!(
        on_secret,
        vec![(AclOperation::Read, ResourceType::Group); 2],
        "READ, not ALTER"
    );
    // Another group is allowed, and pushes go through.
    let mut m = member(&d, "plan3-open", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    assert_eq!(
        push95(&m.conn, "plan3-open", id, spec_description())
            .await
            .error_code,
        NONE
    );
    d.stop().await;

    // Authorization comes before the plugin check: a denied push to a plugin-less node is
    // GROUP_AUTHORIZATION_FAILED, not UNSUPPORTED_VERSION.
    let extensions = Extensions {
        authorizer: Some(Arc::new(kcoord_server::security::DenyAll)),
        ..Default::default()
    };
    let d = daemon(&[], extensions).await;
    let conn = d.connect().await;
    let r = push95(&conn, "plan3-any", Uuid::from_u128(5), spec_description()).await;
    assert_eq!(r.error_code, ErrorCode::GROUP_AUTHORIZATION_FAILED.code());
    d.stop().await;
}

/// The memory plugin, configured with `max.bytes` = the encoded size of the appendix
/// description, and a clock the test moves.
fn sized_memory(max_bytes: usize) -> (Arc<MemoryPlugin>, ManualClock) {
    let clock = ManualClock::new(1_000_000);
    let config = MemoryPluginConfig {
        max_bytes,
        backoff: Backoff {
            base_ms: 1_000,
            max_ms: 8_000,
            jitter: 0.0,
            in_flight_timeout_ms: 1_000,
        },
        ..MemoryPluginConfig::default()
    };
    (
        Arc::new(MemoryPlugin::with_clock(config, Arc::new(clock.clone()))),
        clock,
    )
}

async fn memory_daemon(plugin: &Arc<MemoryPlugin>) -> Daemon {
    let extensions = Extensions {
        plugin: Some(plugin.clone()),
        ..Default::default()
    };
    let d = daemon(&[], extensions).await;
    topics(&d, &["t"]).await;
    d
}

/// One more node than the appendix example: too large for a limit of exactly its size.
fn bigger(mut d: spec_push::TopologyDescription) -> spec_push::TopologyDescription {
    d.subtopologies[0].nodes[2].successors.push("extra".into());
    d.subtopologies[0].nodes.push(spec_push::TopologyNode {
        name: "extra".into(),
        node_type: 3,
        sink_topic: Some("more".into()),
        ..Default::default()
    });
    d
}

/// "Topology descriptions exceeding the configured size limit are rejected; descriptions at
/// the limit are accepted." 137 on key 95, 135 with a message on key 93, and the id is not
/// asked for again (R42 at the daemon).
#[tokio::test]
async fn size_limit_rejects_above_accepts_at_limit() {
    let limit = encoded_size(&spec_description());
    assert!(encoded_size(&bigger(spec_description())) > limit);
    let (plugin, _clock) = sized_memory(limit);
    let d = memory_daemon(&plugin).await;

    let mut at = member(&d, "plan4-at", "m1", "t").await;
    let id = beat(&mut at, 2)
        .await
        .topology_description_id
        .expect("asked");
    assert_eq!(
        push95(&at.conn, "plan4-at", id, spec_description())
            .await
            .error_code,
        NONE
    );
    let g = &describe(&at.conn, &["plan4-at"], true, 1).await.groups[0];
    assert_eq!(g.topology_description_status, 3, "stored at the limit");

    let mut above = member(&d, "plan4-above", "m1", "t").await;
    let id = beat(&mut above, 2)
        .await
        .topology_description_id
        .expect("asked");
    let r = push95(&above.conn, "plan4-above", id, bigger(spec_description())).await;
    assert_eq!(r.error_code, TOO_LARGE, "{:?}", r.error_message);
    for _ in 0..3 {
        assert_eq!(
            beat(&mut above, 2).await.topology_description_id,
            None,
            "never again"
        );
    }
    assert_eq!(
        describe(&above.conn, &["plan4-above"], true, 1)
            .await
            .groups[0]
            .topology_description_status,
        1
    );

    // Kafka 4.4 clients do not know 137: 135 with a message saying why.
    let mut old = member(&d, "plan4-44", "m1", "t").await;
    assert!(beat(&mut old, 1).await.topology_description_required);
    let big44 = {
        let mut k = kafka_description();
        k.subtopologies[0].nodes[0].name = "x".repeat(2_000);
        k.subtopologies[0].nodes.truncate(1);
        k.subtopologies[0].nodes[0].successors.clear();
        k
    };
    let r = push93(&old.conn, "plan4-44", "m1", 1, big44).await;
    assert_eq!(r.error_code, UPDATE_FAILED);
    assert!(
        r.error_message
            .as_deref()
            .is_some_and(|m| m.contains("too large")),
        "{:?}",
        r.error_message
    );
    assert!(!beat(&mut old, 1).await.topology_description_required);
    assert!(!logs::warnings("group=plan4-above ").is_empty());
    assert!(!logs::warnings("group=plan4-44 ").is_empty());
    d.stop().await;
}

/// "Permanent plugin-side validation failures stop the client from retrying", at the
/// coordinator: after a permanent failure the id is never asked for again, so a client that
/// clears its pending id (as the specification says) is never asked to retry it. The
/// plugin's own words stay in the log.
#[tokio::test]
async fn permanent_failure_stops_client_retries() {
    let (plugin, clock) = sized_memory(10);
    let d = memory_daemon(&plugin).await;
    let mut m = member(&d, "plan5-perm", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    assert_eq!(
        push95(&m.conn, "plan5-perm", id, spec_description())
            .await
            .error_code,
        TOO_LARGE
    );
    for _ in 0..3 {
        clock.advance(3_600_000);
        assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    }
    d.stop().await;

    // A plugin that says InvalidRequest: INVALID_REQUEST, its text logged and not sent.
    let test_plugin = TestPlugin::new(Ask::Yes);
    test_plugin.on("set", Act::Invalid);
    let d = daemon_with(&test_plugin, &[]).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "plan5-invalid", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    let r = push95(&m.conn, "plan5-invalid", id, spec_description()).await;
    assert_eq!(r.error_code, INVALID_REQUEST);
    assert!(!r.error_message.unwrap_or_default().contains(SECRET));
    let warned = logs::warnings("group=plan5-invalid ");
    assert!(
        warned
            .iter()
            .any(|l| l.contains(SECRET) && l.contains(&id.to_string())),
        "{warned:?}"
    );
    d.stop().await;
}

/// "Transient failures and throttling delay subsequent attempts", at the coordinator: a
/// transient failure is 135; a push that never arrives makes the plugin back off
/// exponentially before it asks again (the memory plugin on a clock the test moves); the
/// coordinator never throttles (no quotas), so ThrottleTimeMs is 0.
#[tokio::test]
async fn transient_failure_and_throttle_delay_retries() {
    let (plugin, clock) = sized_memory(1 << 20);
    let d = memory_daemon(&plugin).await;
    let mut m = member(&d, "plan5-transient", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    // The member does not push (say the push was lost): not asked again while in flight...
    assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    clock.advance(1_000); // the in-flight timeout: counts as a failure, back off 1 s
    assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    clock.advance(999);
    assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    clock.advance(1);
    assert_eq!(
        beat(&mut m, 2).await.topology_description_id,
        Some(id),
        "asked again"
    );
    // ... and the second back-off is twice as long.
    clock.advance(1_000);
    assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    clock.advance(1_999);
    assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    clock.advance(1);
    assert_eq!(beat(&mut m, 2).await.topology_description_id, Some(id));
    let r = push95(&m.conn, "plan5-transient", id, spec_description()).await;
    assert_eq!((r.error_code, r.throttle_time_ms), (NONE, 0));
    d.stop().await;

    // A plugin failing transiently: 135, logged with the plugin's error, not sent.
    let test_plugin = TestPlugin::new(Ask::Yes);
    test_plugin.on("set", Act::Fail);
    let d = daemon_with(&test_plugin, &[]).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "plan5-fail", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    let r = push95(&m.conn, "plan5-fail", id, spec_description()).await;
    assert_eq!((r.error_code, r.throttle_time_ms), (UPDATE_FAILED, 0));
    assert!(!r.error_message.unwrap_or_default().contains(SECRET));
    assert!(logs::warnings("group=plan5-fail ")
        .iter()
        .any(|l| l.contains(SECRET)));
    d.stop().await;
}

// ---------------------------------------------------------------------------------------------
// R1-R8: ids and heartbeats

#[tokio::test]
async fn r1_a_new_group_gets_a_fresh_id() {
    let (d, plugin, mut m, id) = joined("r1-a").await;
    let mut other = member(&d, "r1-b", "m1", "t").await;
    let other_id = beat(&mut other, 2)
        .await
        .topology_description_id
        .expect("asked");
    assert!(!id.is_nil() && !other_id.is_nil());
    assert_ne!(id, other_id);
    assert_eq!(
        beat(&mut m, 2).await.topology_description_id,
        Some(id),
        "same group, same id"
    );
    assert_eq!(plugin.asks_for("r1-a"), vec![id, id]);
    d.stop().await;
}

#[tokio::test]
async fn r2_a_new_id_on_every_topology_epoch_bump_and_only_then() {
    let (d, plugin, mut a, first) = joined("r2").await;
    for _ in 0..3 {
        assert_eq!(beat(&mut a, 2).await.topology_description_id, Some(first));
    }
    // b runs the next version of the application (topology epoch 2): the epoch is bumped.
    let mut topology = simple_topology("t");
    topology.epoch = 2;
    let mut b = Member::new(d.connect().await, "r2", "m2", topology);
    let second = beat(&mut b, 2)
        .await
        .topology_description_id
        .expect("asked");
    assert_ne!(second, first);
    for _ in 0..3 {
        assert_eq!(beat(&mut b, 2).await.topology_description_id, Some(second));
    }
    let mut distinct = plugin.asks_for("r2");
    distinct.dedup();
    assert_eq!(distinct, vec![first, second]);
    d.stop().await;
}

#[tokio::test]
async fn r4_the_plugin_is_asked_after_each_successful_heartbeat_with_the_current_id() {
    let (d, plugin, mut m, id) = joined("r4").await;
    for _ in 0..4 {
        beat(&mut m, 2).await;
    }
    assert_eq!(plugin.asks_for("r4"), vec![id; 5]);
    // A heartbeat that fails (a wrong member epoch: FENCED_MEMBER_EPOCH) does not ask.
    let mut fenced = m.request();
    fenced.member_epoch += 100;
    let r = m.conn.send(fenced, 2).await.unwrap();
    assert_eq!(r.error_code, ErrorCode::FENCED_MEMBER_EPOCH.code());
    assert_eq!(r.topology_description_id, None);
    assert_eq!(plugin.asks_for("r4").len(), 5);
    // Nor does a leave.
    let mut leave = m.request();
    leave.member_epoch = -1;
    leave.topology = None;
    let r = m.conn.send(leave, 2).await.unwrap();
    assert_eq!((r.error_code, r.topology_description_id), (NONE, None));
    assert_eq!(plugin.asks_for("r4").len(), 5);
    d.stop().await;
}

#[tokio::test]
async fn r5_stale_topology_members_never_reach_the_plugin_or_get_an_id() {
    let (d, plugin, mut old, _) = joined("r5").await;
    let mut topology = simple_topology("t");
    topology.epoch = 2;
    let mut new = Member::new(d.connect().await, "r5", "m2", topology);
    let current = beat(&mut new, 2)
        .await
        .topology_description_id
        .expect("asked");
    let asks = plugin.asks_for("r5").len();
    for version in [2, 1, 2] {
        let r = beat(&mut old, version).await;
        assert!(
            r.status.iter().flatten().any(|s| s.status_code == 0),
            "STALE_TOPOLOGY"
        );
        assert_eq!(
            (r.topology_description_id, r.topology_description_required),
            (None, false)
        );
    }
    assert_eq!(
        plugin.asks_for("r5").len(),
        asks,
        "stale heartbeats never ask"
    );
    assert_eq!(
        beat(&mut new, 2).await.topology_description_id,
        Some(current)
    );
    d.stop().await;
}

#[tokio::test]
async fn r6_true_puts_the_id_in_v2_and_sets_required_in_v1_false_omits_both() {
    let (d, plugin, mut m, id) = joined("r6").await;
    let v1 = beat(&mut m, 1).await;
    assert!(v1.topology_description_required);
    assert_eq!(v1.topology_description_id, None, "v1 has no id field");
    assert_eq!(beat(&mut m, 2).await.topology_description_id, Some(id));
    plugin.set_ask(Ask::No);
    assert!(!beat(&mut m, 1).await.topology_description_required);
    assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
    d.stop().await;
}

#[tokio::test]
async fn r7_a_panic_in_requires_topology_push_is_false_logged_at_warn_and_rate_limited() {
    let plugin = TestPlugin::new(Ask::Panic);
    let d = daemon_with(&plugin, &[]).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "r7-panics", "m1", "t").await;
    for version in [2, 1, 2, 1, 2] {
        let r = beat(&mut m, version).await;
        assert_eq!(
            (
                r.error_code,
                r.topology_description_id,
                r.topology_description_required
            ),
            (NONE, None, false)
        );
    }
    assert_eq!(plugin.asks_for("r7-panics").len(), 5, "asked every time");
    let warned = logs::warnings("group=r7-panics ");
    assert_eq!(warned.len(), 1, "once per group per minute: {warned:?}");
    assert!(warned[0].contains("requires_topology_push"));
    // Another group is not held back by the first one's rate limit, and a plugin that stops
    // panicking is believed again.
    let mut other = member(&d, "r7-other", "m1", "t").await;
    beat(&mut other, 2).await;
    assert_eq!(logs::warnings("group=r7-other ").len(), 1);
    plugin.set_ask(Ask::Yes);
    assert!(beat(&mut m, 2).await.topology_description_id.is_some());
    d.stop().await;
}

#[tokio::test]
async fn r8_v0_heartbeats_never_carry_either_field() {
    let (d, plugin, mut m, _) = joined("r8").await;
    let asks = plugin.asks_for("r8").len();
    for _ in 0..3 {
        let r = beat(&mut m, 0).await;
        assert_eq!(
            (r.topology_description_id, r.topology_description_required),
            (None, false)
        );
    }
    // A v0 client cannot push, so the plugin is not asked on its behalf.
    assert_eq!(plugin.asks_for("r8").len(), asks);
    d.stop().await;
}

// ---------------------------------------------------------------------------------------------
// R10-R21: the push RPCs

#[tokio::test]
async fn r10_push_rpcs_are_advertised_only_with_a_plugin_and_otherwise_unsupported() {
    let plugin = TestPlugin::new(Ask::Yes);
    let with = daemon_with(&plugin, &[]).await;
    let conn = with.connect().await;
    let versions = conn.negotiate().await.unwrap();
    for key in [93, 95] {
        let range = versions.range(key).expect("advertised");
        assert_eq!((range.min, range.max), (0, 0));
    }
    with.stop().await;
    let without = daemon(&[], Extensions::default()).await;
    let conn = without.connect().await;
    let versions = conn.negotiate().await.unwrap();
    assert!(versions.range(93).is_none() && versions.range(95).is_none());
    let r = push95(&conn, "r10", Uuid::from_u128(3), spec_description()).await;
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    assert!(r.error_message.is_some_and(|m| m.contains("plugin")));
    without.stop().await;
}

#[tokio::test]
async fn r11_update_requires_read_not_alter_on_the_group() {
    let authorizer = Arc::new(DenyReadOn {
        groups: vec!["r11"],
        ..Default::default()
    });
    let plugin = TestPlugin::new(Ask::Yes);
    let extensions = Extensions {
        plugin: Some(plugin.clone()),
        authorizer: Some(authorizer.clone()),
        ..Default::default()
    };
    let d = daemon(&[], extensions).await;
    let conn = d.connect().await;
    let r = push95(&conn, "r11", Uuid::from_u128(9), spec_description()).await;
    assert_eq!(r.error_code, ErrorCode::GROUP_AUTHORIZATION_FAILED.code());
    let asked = authorizer.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        vec![(AclOperation::Read, ResourceType::Group, "r11".to_owned())]
    );
    assert!(plugin.sets.lock().unwrap().is_empty());
    d.stop().await;
}

#[tokio::test]
async fn r12_an_unknown_group_is_group_id_not_found() {
    let (d, plugin, m, id) = joined("r12").await;
    let r = push95(&m.conn, "r12-nope", id, spec_description()).await;
    assert_eq!(r.error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());
    let r = push93(&m.conn, "r12-nope", "m1", 1, kafka_description()).await;
    assert_eq!(r.error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());
    assert!(plugin.sets.lock().unwrap().is_empty());
    d.stop().await;
}

#[tokio::test]
async fn r13_coordinator_load_in_progress_while_the_shards_load() {
    let plugin = TestPlugin::new(Ask::Yes);
    let gate = LoadGate::new();
    let extensions = Extensions {
        plugin: Some(plugin.clone()),
        load_gate: Some(gate.clone()),
        ..Default::default()
    };
    let d = daemon(&[], extensions).await;
    let conn = d.connect().await;
    let load = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code();
    assert_eq!(
        push95(&conn, "r13", Uuid::from_u128(1), spec_description())
            .await
            .error_code,
        load
    );
    assert_eq!(
        push93(&conn, "r13", "m1", 1, kafka_description())
            .await
            .error_code,
        load
    );
    gate.open();
    for shard in d.handle().state().coordinators.all() {
        tokio::time::timeout(WAIT, shard.loaded())
            .await
            .expect("loaded");
    }
    let r = push95(&conn, "r13", Uuid::from_u128(1), spec_description()).await;
    assert_eq!(
        r.error_code,
        ErrorCode::GROUP_ID_NOT_FOUND.code(),
        "loaded: on to the next check"
    );
    d.stop().await;
}

#[tokio::test]
async fn r14_malformed_requests_are_invalid_request() {
    let (d, plugin, m, id) = joined("r14").await;
    let c = &m.conn;
    let bad = |f: fn(&mut spec_push::TopologyDescription)| {
        let mut d = spec_description();
        f(&mut d);
        d
    };
    let cases: Vec<(&str, Uuid, spec_push::TopologyDescription, &str)> = vec![
        (
            "r14",
            Uuid::nil(),
            spec_description(),
            "TopologyDescriptionId must not be null",
        ),
        (
            "r14",
            id,
            bad(|d| d.subtopologies[0].nodes[1].node_type = 4),
            "Unknown topology node type: 4",
        ),
        (
            "r14",
            id,
            bad(|d| d.subtopologies[0].nodes[1].name = "KSTREAM-SOURCE-0000000000".into()),
            "Duplicate node name",
        ),
        (
            "r14",
            id,
            bad(|d| d.subtopologies[0].nodes[0].successors = vec!["ghost".into()]),
            "unknown successor ghost",
        ),
        (
            "r14",
            id,
            bad(|d| d.subtopologies[0].nodes[2].sink_topic = Some(String::new())),
            "empty sink topic",
        ),
        (
            "r14",
            id,
            bad(|d| d.subtopologies[0].nodes[1].sink_topic = Some("t".into())),
            "not a sink",
        ),
        (
            "r14",
            id,
            bad(|d| {
                let s = d.subtopologies[0].clone();
                d.subtopologies.push(s)
            }),
            "Duplicate sub-topology id",
        ),
        (
            "r14",
            id,
            bad(|d| d.global_stores[0].source.node_type = 2),
            "Global store",
        ),
        ("", id, spec_description(), "GroupId must not be empty"),
    ];
    for (group, push_id, description, text) in cases {
        let r = push95(c, group, push_id, description).await;
        assert_eq!(r.error_code, INVALID_REQUEST, "{text}");
        assert!(
            r.error_message.as_deref().is_some_and(|m| m.contains(text)),
            "{text}: {:?}",
            r.error_message
        );
    }
    // Key 93: the same rules, plus its own fields.
    let mut k = kafka_description();
    k.subtopologies[0].nodes[0].node_type = 0;
    let r = push93(c, "r14", "m1", 1, k).await;
    assert_eq!(
        (r.error_code, r.error_message.as_deref()),
        (INVALID_REQUEST, Some("Unknown topology node type: 0"))
    );
    let r = push93(c, "r14", "", 1, kafka_description()).await;
    assert_eq!(r.error_code, INVALID_REQUEST);
    let r = push93(c, "r14", "m1", 2, kafka_description()).await;
    assert_eq!(
        r.error_code, INVALID_REQUEST,
        "not the current topology epoch"
    );
    assert_eq!(
        r.error_message.as_deref(),
        Some("Topology epoch 2 does not match the group's current topology epoch 1.")
    );
    let r = push93(c, "r14", "stranger", 1, kafka_description()).await;
    assert_eq!(r.error_code, ErrorCode::UNKNOWN_MEMBER_ID.code());
    assert!(
        plugin.sets.lock().unwrap().is_empty(),
        "nothing malformed reaches the plugin"
    );
    d.stop().await;
}

#[tokio::test]
async fn r15_the_coordinator_enforces_no_size_limit_of_its_own() {
    let (d, plugin, m, id) = joined("r15").await;
    // About 2.5 MB: far above what any plugin here would store, well below
    // socket.request.max.bytes (100 MiB), which bounds every request alike.
    let huge = chain_description(20_000, 120);
    assert!(encoded_size(&huge) > 2_000_000);
    let r = push95(&m.conn, "r15", id, huge).await;
    assert_eq!(r.error_code, NONE);
    assert_eq!(
        plugin.stored("r15").expect("stored").1.subtopologies[0]
            .nodes
            .len(),
        20_000
    );
    d.stop().await;
}

#[tokio::test]
async fn r16_set_topology_gets_the_id_from_the_request_unchanged() {
    let (d, plugin, m, id) = joined("r16").await;
    // Not the group's current id (say from an older heartbeat): passed through as it is.
    let other = Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
    assert_eq!(
        push95(&m.conn, "r16", other, spec_description())
            .await
            .error_code,
        NONE
    );
    assert_eq!(
        push95(&m.conn, "r16", id, spec_description())
            .await
            .error_code,
        NONE
    );
    let ids: Vec<Option<Uuid>> = plugin.sets_for("r16").iter().map(|(c, _)| c.id).collect();
    assert_eq!(ids, vec![Some(other), Some(id)]);
    d.stop().await;
}

#[tokio::test]
async fn r17_plugin_success_answers_none() {
    let (d, _plugin, m, id) = joined("r17").await;
    let r = push95(&m.conn, "r17", id, spec_description()).await;
    assert_eq!(
        (r.error_code, r.error_message, r.throttle_time_ms),
        (NONE, None, 0)
    );
    d.stop().await;
}

#[tokio::test]
async fn r18_plugin_invalid_request_is_invalid_request_and_logged_at_warn() {
    let (d, plugin, m, id) = joined("r18").await;
    plugin.on("set", Act::Invalid);
    let r = push95(&m.conn, "r18", id, spec_description()).await;
    assert_eq!(r.error_code, INVALID_REQUEST);
    assert!(!r.error_message.unwrap_or_default().contains(SECRET));
    let r = push93(&m.conn, "r18", "m1", 1, kafka_description()).await;
    assert_eq!(r.error_code, INVALID_REQUEST);
    let warned = logs::warnings("group=r18 ");
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned
        .iter()
        .all(|l| l.contains(SECRET) && l.contains(&id.to_string())));
    d.stop().await;
}

#[tokio::test]
async fn r19_plugin_too_large_is_137_on_key_95_and_135_with_a_message_on_key_93() {
    let (d, plugin, m, id) = joined("r19").await;
    plugin.on("set", Act::TooLarge);
    let r = push95(&m.conn, "r19", id, spec_description()).await;
    assert_eq!(r.error_code, TOO_LARGE);
    let r = push93(&m.conn, "r19", "m1", 1, kafka_description()).await;
    assert_eq!(r.error_code, UPDATE_FAILED);
    let message = r.error_message.unwrap_or_default();
    assert!(
        message.contains("too large") && !message.contains(SECRET),
        "{message}"
    );
    let warned = logs::warnings("group=r19 ");
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned.iter().all(|l| l.contains(SECRET)));
    d.stop().await;
}

#[tokio::test]
async fn r20_other_failures_timeouts_and_panics_are_135_logged_not_sent() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on_group("r20-fail", Act::Fail);
    plugin.on_group("r20-never", Act::Never);
    plugin.on_group("r20-panic", Act::Panic);
    let d = daemon_with(
        &plugin,
        &["group.streams.topology.description.timeout.ms=300"],
    )
    .await;
    topics(&d, &["t"]).await;
    for (group, logged) in [
        ("r20-fail", SECRET),
        ("r20-never", "did not complete within"),
        ("r20-panic", "panicked"),
    ] {
        let mut m = member(&d, group, "m1", "t").await;
        let id = beat(&mut m, 2)
            .await
            .topology_description_id
            .expect("asked");
        let r = push95(&m.conn, group, id, spec_description()).await;
        assert_eq!(r.error_code, UPDATE_FAILED, "{group}");
        assert!(!r.error_message.unwrap_or_default().contains(SECRET));
        let r = push93(&m.conn, group, "m1", 1, kafka_description()).await;
        assert_eq!(r.error_code, UPDATE_FAILED, "{group}");
        let warned = logs::warnings(&format!("group={group} "));
        assert_eq!(warned.len(), 2, "{group}: {warned:?}");
        assert!(
            warned
                .iter()
                .all(|l| l.contains(logged) && l.contains(&id.to_string())),
            "{warned:?}"
        );
        // The connection and the member are fine afterwards.
        beat(&mut m, 2).await;
    }
    d.stop().await;
}

#[tokio::test]
async fn r21_concurrent_pushes_of_the_same_group_and_id_are_safe_and_idempotent() {
    let d = daemon(&[MEMORY], Extensions::default()).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "r21", "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    let mut pushes = Vec::new();
    for _ in 0..8 {
        let conn = d.connect().await;
        pushes.push(tokio::spawn(async move {
            push95(&conn, "r21", id, spec_description())
                .await
                .error_code
        }));
    }
    for p in pushes {
        assert_eq!(p.await.unwrap(), NONE);
    }
    let g = &describe(&m.conn, &["r21"], true, 1).await.groups[0];
    assert_eq!(g.topology_description_status, 3);
    assert_eq!(
        g.topology_description.as_ref().unwrap().subtopologies.len(),
        1
    );
    d.stop().await;
}

// ---------------------------------------------------------------------------------------------
// R65-R67: compatibility

#[tokio::test]
async fn r65_clients_on_older_versions_are_served_unchanged() {
    let (d, plugin, mut m, id) = joined("r65").await;
    assert_eq!(
        push95(&m.conn, "r65", id, spec_description())
            .await
            .error_code,
        NONE
    );
    let r = beat(&mut m, 0).await;
    assert_eq!(
        (r.topology_description_id, r.topology_description_required),
        (None, false)
    );
    assert!(r.member_epoch > 0);
    // v0 cannot even carry IncludeTopologyDescription.
    let g = &describe(&m.conn, &["r65"], false, 0).await.groups[0];
    assert_eq!(
        (
            g.error_code,
            g.topology_description_status,
            g.topology_description.is_none()
        ),
        (NONE, 0, true)
    );
    assert!(
        plugin.gets_for("r65").is_empty(),
        "v0 never reads the plugin"
    );
    d.stop().await;
}

#[tokio::test]
async fn r66_a_pluginless_coordinator_never_sends_an_id_and_rejects_pushes() {
    let d = daemon(&[], Extensions::default()).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "r66", "m1", "t").await;
    let mut topology = simple_topology("t");
    topology.epoch = 2;
    let mut upgraded = Member::new(d.connect().await, "r66", "m2", topology);
    for _ in 0..3 {
        assert_eq!(beat(&mut m, 2).await.topology_description_id, None);
        assert!(!beat(&mut upgraded, 1).await.topology_description_required);
    }
    // An upgraded client that still holds an id from elsewhere gets UNSUPPORTED_VERSION,
    // a final answer (the client clears its pending id).
    let r = push95(
        &upgraded.conn,
        "r66",
        Uuid::from_u128(77),
        spec_description(),
    )
    .await;
    assert_eq!(r.error_code, UNSUPPORTED_VERSION);
    d.stop().await;
}

#[tokio::test]
async fn r67_kafka_44_dialect_end_to_end() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = daemon_with(&plugin, &[]).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "r67", "m1", "t").await;
    let r = beat(&mut m, 1).await;
    assert!(r.topology_description_required);
    assert_eq!(r.acceptable_recovery_lag, 10_000, "v1 layout");
    let r = push93(&m.conn, "r67", "m1", 1, kafka_description()).await;
    assert_eq!((r.error_code, r.error_message), (NONE, None));
    // The epoch became the group's current id, the one the plugin was asked about.
    let asked = plugin.asks_for("r67");
    let sets = plugin.sets_for("r67");
    assert_eq!(sets[0].0.id, Some(asked[0]));
    assert_eq!(sets[0].0.ctx.api_key, 93);
    let g = &describe(&m.conn, &["r67"], true, 1).await.groups[0];
    assert_eq!(g.topology_description_status, 3);
    let described = g.topology_description.as_ref().unwrap();
    assert_eq!(
        described.global_stores[0].processor.stores,
        vec!["rates-store".to_owned()]
    );
    // After an upgrade the old epoch no longer maps to anything.
    let mut topology = simple_topology("t");
    topology.epoch = 2;
    let mut next = Member::new(d.connect().await, "r67", "m2", topology);
    assert!(beat(&mut next, 1).await.topology_description_required);
    assert_eq!(
        push93(&m.conn, "r67", "m1", 1, kafka_description())
            .await
            .error_code,
        INVALID_REQUEST
    );
    assert_eq!(
        push93(&next.conn, "r67", "m2", 2, kafka_description())
            .await
            .error_code,
        NONE
    );
    let new_id = plugin.sets_for("r67")[1].0.id;
    assert_ne!(new_id, Some(asked[0]));
    d.stop().await;
}
