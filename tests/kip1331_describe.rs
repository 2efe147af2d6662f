//! KIP-1331 against the real daemon, part 2: StreamsGroupDescribe v1 with
//! IncludeTopologyDescription, DeleteGroups, the System Tests, and what misbehaving plugins
//! (slow, never completing, panicking, failing) may and may not affect. Test names carry the
//! requirement id (docs/requirements.md) or the Test Plan item they prove.

mod kip1331_support;
mod streams_support;

use std::sync::{Arc, Mutex};

use kcoord_plugin_api::Uuid;
use kcoord_server::security::{AclOperation, Authorizer, ResourceType};
use kcoord_server::Extensions;
use kcoord_wire::messages::{DeleteGroupsRequest, DeleteGroupsResponse};
use kcoord_wire::ErrorCode;
use kip1331_support::*;
use streams_support::{simple_topology, Member};

const NONE: i16 = 0;
const NOT_REQUESTED: i8 = 0;
const NOT_STORED: i8 = 1;
const ERROR: i8 = 2;
const AVAILABLE: i8 = 3;

/// A daemon with `plugin` (asks always) and topic `t`.
async fn node(plugin: &Arc<TestPlugin>, lines: &[&str]) -> Daemon {
    let d = daemon_with(plugin, lines).await;
    topics(&d, &["t"]).await;
    d
}

/// Joins `group` with one member (heartbeat v2) and, if `push`, pushes the appendix example
/// under the id it was given.
async fn group(d: &Daemon, group: &str, push: bool) -> (Member, Uuid) {
    let mut m = member(d, group, "m1", "t").await;
    let id = beat(&mut m, 2)
        .await
        .topology_description_id
        .expect("asked");
    if push {
        assert_eq!(
            push95(&m.conn, group, id, spec_description())
                .await
                .error_code,
            NONE
        );
    }
    (m, id)
}

async fn delete(d: &Daemon, groups: &[&str]) -> DeleteGroupsResponse {
    let request = DeleteGroupsRequest {
        groups_names: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..Default::default()
    };
    d.connect()
        .await
        .send(request, 2)
        .await
        .expect("DeleteGroups")
}

/// Leaves with every member so that the group is empty (and may be deleted).
async fn empty(m: &mut Member) {
    m.leave().await;
}

// ---------------------------------------------------------------------------------------------
// Test Plan: Integration Tests

/// "Requesting a topology description via describe returns it for groups that have pushed,
/// and surfaces the appropriate non-available status (no description stored, or read error)
/// otherwise — without turning the describe itself into an error."
#[tokio::test]
async fn describe_returns_description_or_status_without_error() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on_group("plan6-broken", Act::Fail);
    let d = node(&plugin, &[]).await;
    let (m, _) = group(&d, "plan6-pushed", true).await;
    group(&d, "plan6-silent", false).await;
    group(&d, "plan6-broken", false).await;
    let ids = [
        "plan6-pushed",
        "plan6-silent",
        "plan6-broken",
        "plan6-unknown",
    ];

    let with = describe(&m.conn, &ids, true, 1).await;
    let got: Vec<(&str, i16, i8, bool)> = with
        .groups
        .iter()
        .map(|g| {
            (
                g.group_id.as_str(),
                g.error_code,
                g.topology_description_status,
                g.topology_description.is_some(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("plan6-pushed", NONE, AVAILABLE, true),
            ("plan6-silent", NONE, NOT_STORED, false),
            ("plan6-broken", NONE, ERROR, false),
            (
                "plan6-unknown",
                ErrorCode::GROUP_ID_NOT_FOUND.code(),
                NOT_REQUESTED,
                false
            ),
        ]
    );
    // Everything else is what a describe without the flag says.
    let without = describe(&m.conn, &ids, false, 1).await;
    for (a, b) in with.groups.iter().zip(&without.groups) {
        assert_eq!(
            (a.error_code, &a.group_state, a.group_epoch, &a.members),
            (b.error_code, &b.group_state, b.group_epoch, &b.members)
        );
        assert_eq!(
            (
                b.topology_description_status,
                b.topology_description.is_none()
            ),
            (NOT_REQUESTED, true)
        );
    }
    assert!(!logs::warnings("group=plan6-broken ").is_empty());
    d.stop().await;
}

// ---------------------------------------------------------------------------------------------
// R25-R31: describe

#[tokio::test]
async fn r25_not_requested_or_v0_is_null_with_status_not_requested() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = node(&plugin, &[]).await;
    let (m, _) = group(&d, "r25", true).await;
    for (include, version) in [(false, 1), (false, 0)] {
        let g = &describe(&m.conn, &["r25"], include, version).await.groups[0];
        assert_eq!(
            (
                g.error_code,
                g.topology_description_status,
                g.topology_description.is_none()
            ),
            (NONE, NOT_REQUESTED, true)
        );
    }
    assert!(plugin.gets_for("r25").is_empty(), "not asked, not read");
    d.stop().await;
}

#[tokio::test]
async fn r26_get_topology_gets_the_current_id_for_every_group_concurrently() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on("get", Act::Hold);
    let d = node(&plugin, &[]).await;
    let mut ids = Vec::new();
    for g in ["r26-a", "r26-b", "r26-c"] {
        ids.push(group(&d, g, true).await.1);
    }
    let conn = d.connect().await;
    let describing =
        tokio::spawn(async move { describe(&conn, &["r26-a", "r26-b", "r26-c"], true, 1).await });
    // All three are inside get_topology before any may finish: they run at the same time.
    // (Called one after another, the second would never start and this would time out.)
    wait_until(
        || *plugin.gets_in_progress.lock().unwrap() == 3,
        "three concurrent get_topology calls",
    )
    .await;
    plugin.release(3);
    let described = describing.await.unwrap();
    assert!(described
        .groups
        .iter()
        .all(|g| g.topology_description_status == AVAILABLE));
    for (g, id) in ["r26-a", "r26-b", "r26-c"].iter().zip(&ids) {
        assert_eq!(
            plugin.gets_for(g)[0].id,
            Some(*id),
            "the group's current id"
        );
        assert_eq!(plugin.gets_for(g)[0].ctx.api_key, 89);
    }
    d.stop().await;
}

#[tokio::test]
async fn r27_nothing_stored_or_no_plugin_is_not_stored() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = node(&plugin, &[]).await;
    let (m, _) = group(&d, "r27", false).await;
    let g = &describe(&m.conn, &["r27"], true, 1).await.groups[0];
    assert_eq!(
        (g.error_code, g.topology_description_status),
        (NONE, NOT_STORED)
    );
    assert_eq!(plugin.gets_for("r27").len(), 1);
    d.stop().await;

    let d = daemon(&[], Extensions::default()).await;
    topics(&d, &["t"]).await;
    let mut m = member(&d, "r27-pluginless", "m1", "t").await;
    beat(&mut m, 2).await;
    let g = &describe(&m.conn, &["r27-pluginless"], true, 1).await.groups[0];
    assert_eq!(
        (
            g.error_code,
            g.topology_description_status,
            g.topology_description.is_none()
        ),
        (NONE, NOT_STORED, true)
    );
    d.stop().await;
}

#[tokio::test]
async fn r28_a_failing_plugin_is_error_logged_at_warn() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on_group("r28-fail", Act::Fail);
    plugin.on_group("r28-panic", Act::Panic);
    plugin.on_group("r28-never", Act::Never);
    let d = node(
        &plugin,
        &["group.streams.topology.description.timeout.ms=300"],
    )
    .await;
    for g in ["r28-fail", "r28-panic", "r28-never", "r28-fine"] {
        group(&d, g, g == "r28-fine").await;
    }
    let conn = d.connect().await;
    let described = describe(
        &conn,
        &["r28-fail", "r28-panic", "r28-never", "r28-fine"],
        true,
        1,
    )
    .await;
    let statuses: Vec<(i16, i8)> = described
        .groups
        .iter()
        .map(|g| (g.error_code, g.topology_description_status))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (NONE, ERROR),
            (NONE, ERROR),
            (NONE, ERROR),
            (NONE, AVAILABLE)
        ]
    );
    for (g, text) in [
        ("r28-fail", SECRET),
        ("r28-panic", "panicked"),
        ("r28-never", "did not complete within"),
    ] {
        let warned = logs::warnings(&format!("group={g} "));
        assert!(warned.iter().any(|l| l.contains(text)), "{g}: {warned:?}");
    }
    d.stop().await;
}

#[tokio::test]
async fn r29_a_stored_description_is_returned_with_status_available() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = node(&plugin, &[]).await;
    let (m, _) = group(&d, "r29", true).await;
    let g = &describe(&m.conn, &["r29"], true, 1).await.groups[0];
    assert_eq!(g.topology_description_status, AVAILABLE);
    let t = g.topology_description.as_ref().expect("present");
    let pushed = spec_description();
    let names: Vec<&str> = t.subtopologies[0]
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    let pushed_names: Vec<&str> = pushed.subtopologies[0]
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(names, pushed_names);
    let types: Vec<i8> = t.subtopologies[0]
        .nodes
        .iter()
        .map(|n| n.node_type)
        .collect();
    assert_eq!(types, vec![1, 2, 3]);
    assert_eq!(
        t.subtopologies[0].nodes[0].source_topics,
        vec!["orders".to_owned()]
    );
    assert_eq!(
        t.subtopologies[0].nodes[0].successors,
        vec!["KSTREAM-FILTER-0000000001".to_owned()]
    );
    assert_eq!(
        t.subtopologies[0].nodes[2].sink_topic.as_deref(),
        Some("valid-orders")
    );
    assert_eq!(
        t.global_stores[0].source.source_topics,
        vec!["rates".to_owned()]
    );
    assert_eq!(
        t.global_stores[0].processor.stores,
        vec!["rates-store".to_owned()]
    );
    d.stop().await;
}

#[tokio::test]
async fn r30_the_group_error_code_is_never_changed_by_topology_outcomes() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on("get", Act::Panic);
    let d = node(&plugin, &[]).await;
    let (m, _) = group(&d, "r30", true).await;
    let ids = ["r30", "r30-unknown", ""];
    let with = describe(&m.conn, &ids, true, 1).await;
    let without = describe(&m.conn, &ids, false, 1).await;
    let codes =
        |r: &kcoord_wire::messages::StreamsGroupDescribeResponse| -> Vec<(i16, Option<String>)> {
            r.groups
                .iter()
                .map(|g| (g.error_code, g.error_message.clone()))
                .collect()
        };
    assert_eq!(codes(&with), codes(&without));
    assert_eq!(with.groups[0].topology_description_status, ERROR);
    assert_eq!(with.groups[0].error_code, NONE);
    d.stop().await;
}

/// Denies DESCRIBE on the groups it names.
#[derive(Debug, Default)]
struct DenyDescribeOn {
    groups: Vec<&'static str>,
    asked: Mutex<Vec<(AclOperation, String)>>,
}

impl Authorizer for DenyDescribeOn {
    fn authorize(
        &self,
        _: &kcoord_server::security::Requester<'_>,
        op: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        self.asked.lock().unwrap().push((op, name.to_owned()));
        !(op == AclOperation::Describe
            && resource == ResourceType::Group
            && self.groups.contains(&name))
    }
}

#[tokio::test]
async fn r31_describe_on_the_group_guards_the_description() {
    let plugin = TestPlugin::new(Ask::Yes);
    let authorizer = Arc::new(DenyDescribeOn {
        groups: vec!["r31-hidden"],
        ..Default::default()
    });
    let extensions = Extensions {
        plugin: Some(plugin.clone()),
        authorizer: Some(authorizer.clone()),
        ..Default::default()
    };
    let d = daemon(&[], extensions).await;
    topics(&d, &["t"]).await;
    let (m, _) = group(&d, "r31-hidden", true).await;
    group(&d, "r31-visible", true).await;
    let described = describe(&m.conn, &["r31-hidden", "r31-visible"], true, 1).await;
    let hidden = &described.groups[0];
    assert_eq!(
        (
            hidden.error_code,
            hidden.topology_description_status,
            hidden.topology_description.is_none()
        ),
        (
            ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
            NOT_REQUESTED,
            true
        )
    );
    assert!(
        plugin.gets_for("r31-hidden").is_empty(),
        "an unauthorized caller never reaches the plugin"
    );
    assert_eq!(described.groups[1].topology_description_status, AVAILABLE);
    // DESCRIBE is the only permission asked for: the description needs nothing more.
    let asked: Vec<AclOperation> = authorizer
        .asked
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, n)| n == "r31-visible")
        .map(|(op, _)| *op)
        .filter(|op| *op != AclOperation::Read) // the member's heartbeats and push
        .collect();
    assert_eq!(asked, vec![AclOperation::Describe]);
    d.stop().await;
}

// ---------------------------------------------------------------------------------------------
// R32-R34: delete

#[tokio::test]
async fn r32_delete_topology_only_after_the_group_was_deleted_without_error() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = node(&plugin, &[]).await;
    let (_busy, _) = group(&d, "r32-busy", true).await;
    let (mut idle, _) = group(&d, "r32-idle", true).await;
    empty(&mut idle).await;
    let r = delete(&d, &["r32-busy", "r32-idle", "r32-unknown"]).await;
    let codes: Vec<(&str, i16)> = r
        .results
        .iter()
        .map(|g| (g.group_id.as_str(), g.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("r32-busy", ErrorCode::NON_EMPTY_GROUP.code()),
            ("r32-idle", NONE),
            ("r32-unknown", ErrorCode::GROUP_ID_NOT_FOUND.code()),
        ]
    );
    // By the time the response arrives the plugin has been told, about the deleted one only.
    assert_eq!(plugin.deletes_for("r32-idle").len(), 1);
    assert_eq!(plugin.deletes_for("r32-idle")[0].ctx.api_key, 42);
    assert!(plugin.deletes_for("r32-busy").is_empty());
    assert!(plugin.deletes_for("r32-unknown").is_empty());
    assert!(plugin.stored("r32-idle").is_none());
    assert!(plugin.stored("r32-busy").is_some());
    d.stop().await;
}

#[tokio::test]
async fn r33_a_failing_delete_topology_is_logged_and_does_not_change_the_response() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on_group("r33-fail", Act::Fail);
    plugin.on_group("r33-panic", Act::Panic);
    plugin.on_group("r33-never", Act::Never);
    let d = node(
        &plugin,
        &["group.streams.topology.description.timeout.ms=300"],
    )
    .await;
    let groups = ["r33-fail", "r33-panic", "r33-never"];
    for g in groups {
        let (mut m, _) = group(&d, g, false).await;
        empty(&mut m).await;
    }
    let r = delete(&d, &groups).await;
    assert!(
        r.results
            .iter()
            .all(|g| g.error_code == NONE && g.error_message.is_none()),
        "{r:?}"
    );
    for (g, text) in [
        ("r33-fail", SECRET),
        ("r33-panic", "panicked"),
        ("r33-never", "did not complete within"),
    ] {
        assert_eq!(plugin.deletes_for(g).len(), 1);
        let warned = logs::warnings(&format!("group={g} "));
        assert!(warned.iter().any(|l| l.contains(text)), "{g}: {warned:?}");
    }
    // Deleted all the same.
    let described = describe(&d.connect().await, &groups, false, 1).await;
    assert!(described
        .groups
        .iter()
        .all(|g| g.error_code == ErrorCode::GROUP_ID_NOT_FOUND.code()));
    d.stop().await;
}

#[tokio::test]
async fn r34_groups_emptied_by_their_members_do_not_reach_the_plugin() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = node(&plugin, &[]).await;
    let (mut a, _) = group(&d, "r34", true).await;
    let mut b = member(&d, "r34", "m2", "t").await;
    beat(&mut b, 2).await;
    empty(&mut a).await;
    empty(&mut b).await;
    let g = &describe(&d.connect().await, &["r34"], true, 1).await.groups[0];
    assert_eq!(g.group_state, "Empty");
    assert!(plugin.deletes_for("r34").is_empty());
    assert!(
        plugin.stored("r34").is_some(),
        "the plugin's TTL, not the coordinator, forgets it"
    );
    d.stop().await;
}

// ---------------------------------------------------------------------------------------------
// System Tests, and misbehaving plugins

/// "During a rolling upgrade the feature degrades gracefully on either side: pre-upgrade
/// clients are not asked to push, and pre-upgrade brokers cleanly reject pushes from upgraded
/// clients." Two daemons: a pre-upgrade one without a plugin and an upgraded one with the
/// `memory` plugin.
#[tokio::test]
async fn rolling_upgrade_degrades_gracefully() {
    let old_broker = daemon(&[], Extensions::default()).await;
    let new_broker = daemon(&[MEMORY], Extensions::default()).await;
    for d in [&old_broker, &new_broker] {
        topics(d, &["t"]).await;
    }

    // A pre-upgrade client (heartbeat v0) on the upgraded broker is never asked.
    let mut old_client = member(&new_broker, "upgrade", "old", "t").await;
    for _ in 0..3 {
        let r = beat(&mut old_client, 0).await;
        assert_eq!(
            (r.topology_description_id, r.topology_description_required),
            (None, false)
        );
    }

    // An upgraded client on the pre-upgrade broker: never asked, and a push it sends anyway
    // (its id came from another coordinator) is cleanly refused, with the connection kept.
    let mut upgraded = member(&old_broker, "upgrade", "new", "t").await;
    for _ in 0..3 {
        assert_eq!(beat(&mut upgraded, 2).await.topology_description_id, None);
    }
    let r = push95(
        &upgraded.conn,
        "upgrade",
        Uuid::from_u128(42),
        spec_description(),
    )
    .await;
    assert_eq!(r.error_code, ErrorCode::UNSUPPORTED_VERSION.code());
    let r = push93(&upgraded.conn, "upgrade", "new", 1, kafka_description()).await;
    assert_eq!(r.error_code, ErrorCode::UNSUPPORTED_VERSION.code());
    beat(&mut upgraded, 2).await;

    // The coordinator moves to the upgraded broker: from there the client is asked and its
    // push lands; a Kafka 4.4 client (v1 + key 93) in another group likewise.
    let mut moved = member(&new_broker, "upgrade", "new", "t").await;
    let id = beat(&mut moved, 2)
        .await
        .topology_description_id
        .expect("asked by the upgraded broker");
    assert_eq!(
        push95(&moved.conn, "upgrade", id, spec_description())
            .await
            .error_code,
        NONE
    );
    let mut kafka44 = member(&new_broker, "upgrade-44", "k", "t").await;
    assert!(beat(&mut kafka44, 1).await.topology_description_required);
    assert_eq!(
        push93(&kafka44.conn, "upgrade-44", "k", 1, kafka_description())
            .await
            .error_code,
        NONE
    );
    let described = describe(&moved.conn, &["upgrade", "upgrade-44"], true, 1).await;
    assert!(described
        .groups
        .iter()
        .all(|g| g.topology_description_status == AVAILABLE));

    // A rolling upgrade of the application: members still on the old topology epoch are
    // skipped; the new id is asked for once a member runs the new topology.
    let mut topology = simple_topology("t");
    topology.epoch = 2;
    let mut rolled = Member::new(new_broker.connect().await, "upgrade", "rolled", topology);
    let new_id = beat(&mut rolled, 2)
        .await
        .topology_description_id
        .expect("new topology, new id");
    assert_ne!(new_id, id);
    assert_eq!(
        beat(&mut moved, 2).await.topology_description_id,
        None,
        "stale member"
    );

    old_broker.stop().await;
    new_broker.stop().await;
}

/// The slow, never-completing and panicking test plugins: a push held by the plugin does not
/// hold heartbeats (its own group's or any other's), other groups' pushes, or describes.
#[tokio::test]
async fn slow_or_stuck_plugins_leave_heartbeats_and_other_groups_unaffected() {
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on_group("stuck-slow", Act::Hold);
    plugin.on_group("stuck-panic", Act::Panic);
    let d = node(&plugin, &[]).await;
    let (mut slow, slow_id) = group(&d, "stuck-slow", false).await;
    let (mut other, other_id) = group(&d, "stuck-other", false).await;
    let (mut panics, panic_id) = group(&d, "stuck-panic", false).await;

    // The slow group's push is inside the plugin and stays there until released.
    let push_conn = d.connect().await;
    let held =
        tokio::spawn(
            async move { push95(&push_conn, "stuck-slow", slow_id, spec_description()).await },
        );
    plugin.wait_for_sets("stuck-slow", 1).await;

    for _ in 0..3 {
        beat(&mut slow, 2).await;
        beat(&mut other, 2).await;
    }
    assert_eq!(
        push95(&other.conn, "stuck-other", other_id, spec_description())
            .await
            .error_code,
        NONE
    );
    let r = push95(&panics.conn, "stuck-panic", panic_id, spec_description()).await;
    assert_eq!(r.error_code, 135);
    beat(&mut panics, 2).await;
    let g = &describe(&other.conn, &["stuck-other"], true, 1)
        .await
        .groups[0];
    assert_eq!(g.topology_description_status, AVAILABLE);
    assert!(!held.is_finished(), "still held by the plugin");

    plugin.release(1);
    assert_eq!(held.await.unwrap().error_code, NONE);
    d.stop().await;

    // A never-completing plugin: the push is answered 135 after the timeout, and the member's
    // next request on the same connection is served.
    let plugin = TestPlugin::new(Ask::Yes);
    plugin.on("set", Act::Never);
    let d = node(
        &plugin,
        &["group.streams.topology.description.timeout.ms=200"],
    )
    .await;
    let (mut m, id) = group(&d, "stuck-never", false).await;
    assert_eq!(
        push95(&m.conn, "stuck-never", id, spec_description())
            .await
            .error_code,
        135
    );
    beat(&mut m, 2).await;
    d.stop().await;
}

/// The plugin's `close` is called on shutdown.
#[tokio::test]
async fn the_plugin_is_closed_on_shutdown() {
    let plugin = TestPlugin::new(Ask::Yes);
    let d = node(&plugin, &[]).await;
    assert!(!*plugin.closed.lock().unwrap());
    d.stop().await;
    assert!(*plugin.closed.lock().unwrap());
}
