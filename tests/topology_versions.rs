//! Issue 26, topology versions with the durable `file` plugin against a real daemon: an
//! application is deployed, then redeployed with a changed topology (a higher topology epoch),
//! both descriptions are pushed; the daemon is killed with SIGKILL and restarted on the same
//! directories, and the JSON API still lists both versions, with their descriptions, and what
//! the redeploy changed. The rebalance timeline too is the same after kill -9.
mod common;
mod web_support;

use std::path::Path;

use common::Daemon;
use serde_json::{json, Value};
use web_support::{all_stored, encode, file_plugin_config, orders_v1, orders_v2, Http, Sim};

const APP: &str = "orders-app";

fn config(dir: &Path) -> String {
    let lines = file_plugin_config(dir);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    common::config_text(&lines)
}

fn check_diff(diff: &Value) {
    assert_eq!(
        diff["nodes"]["added"],
        json!([{"name": "count", "subtopology": "0", "type": "PROCESSOR"}])
    );
    assert_eq!(
        diff["nodes"]["changed"],
        json!([
            {"name": "filter", "subtopology": "0", "type": "PROCESSOR", "changes": ["successors"]},
            {"name": "sink", "subtopology": "0", "type": "SINK", "changes": ["topics"]}
        ])
    );
    assert_eq!(
        diff["edges"],
        json!({"added": [{"from": "count", "to": "sink"}, {"from": "filter", "to": "count"}],
               "removed": [{"from": "filter", "to": "sink"}]})
    );
    assert_eq!(
        diff["topics"],
        json!({"added": ["checked-orders"], "removed": ["valid-orders"], "changed": []})
    );
    assert_eq!(
        diff["stateStores"],
        json!({"added": ["order-counts"], "removed": [], "changed": []})
    );
    assert_eq!(diff["subtopologies"]["changed"], json!(["0"]));
}

#[test]
fn versions_and_their_difference_survive_kill_9_with_the_file_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let text = config(dir.path());
    let versions_path = format!("/api/v1/groups/{}/topology/versions", encode(APP));
    let diff_path = format!("/api/v1/groups/{}/topology/diff", encode(APP));

    let daemon = Daemon::start_with_config(&text);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let v1 = Sim::start(&daemon.bootstrap(), APP, &orders_v1(), &[]);
    http.wait_for(&versions_path, |v| all_stored(v, 1));
    v1.stop();
    let v2 = Sim::start(
        &daemon.bootstrap(),
        APP,
        &orders_v2(),
        &["--topology-epoch", "1"],
    );
    let before = http.wait_for(&versions_path, |v| all_stored(v, 2));
    v2.stop();
    check_diff(&http.get(&diff_path).json());
    daemon.kill();

    let daemon = Daemon::start_with_config(&text);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let after = http.wait_for(&versions_path, |v| all_stored(v, 2));
    assert_eq!(after, before, "the same versions after kill -9");
    let epochs: Vec<&Value> = after["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["topologyEpoch"])
        .collect();
    assert_eq!(epochs, [&json!(0), &json!(1)]);
    assert!(after["versions"][0]["mintedMs"].as_i64().unwrap() > 0);
    assert_eq!(after["topologyStale"], false);
    let diff = http.get(&diff_path).json();
    check_diff(&diff);
    assert_eq!(
        diff["to"]["topologyDescriptionId"],
        after["topologyDescriptionId"]
    );
    let first_id = after["versions"][0]["topologyDescriptionId"]
        .as_str()
        .unwrap();
    let old = http.get(&format!(
        "/api/v1/groups/{}/topology/diff?from={first_id}&to={first_id}",
        encode(APP)
    ));
    assert_eq!(
        old.status, 200,
        "the first version is still readable: {}",
        old.body
    );
    daemon.stop();
}

/// The rebalance timeline is derived from the coordinator's records as they replay: after
/// kill -9 and a restart on the same log it is the same, times and all (a log this short is
/// not compacted).
#[test]
fn the_rebalance_timeline_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let text = config(dir.path());
    let timeline_path = format!("/api/v1/groups/{}/timeline", encode(APP));
    let tasks_path = format!("/api/v1/groups/{}/tasks", encode(APP));

    let daemon = Daemon::start_with_config(&text);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let first = Sim::start(&daemon.bootstrap(), APP, &orders_v1(), &[]);
    http.wait_for(&tasks_path, |t| {
        t["instances"].as_array().is_some_and(|i| i.len() == 1)
    });
    let second = Sim::start(&daemon.bootstrap(), APP, &orders_v1(), &[]);
    let two_running = |t: &Value| {
        let instances = t["instances"].as_array().cloned().unwrap_or_default();
        instances.len() == 2
            && instances
                .iter()
                .all(|i| i["activeTasks"].as_u64() > Some(0))
    };
    http.wait_for(&tasks_path, two_running);
    first.stop();
    second.stop();
    let before = http.wait_for(&timeline_path, |t| {
        t["events"]
            .as_array()
            .is_some_and(|e| e.iter().filter(|e| e["type"] == "MEMBER_LEFT").count() == 2)
    });
    let kinds: Vec<&str> = before["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    for kind in [
        "MEMBER_JOINED",
        "GROUP_EPOCH_BUMPED",
        "TARGET_ASSIGNMENT_COMPUTED",
        "MEMBER_RECONCILED",
        "MEMBER_LEFT",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    assert!(before["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["timeMs"].as_i64().is_some_and(|t| t > 0)));
    daemon.kill();

    let daemon = Daemon::start_with_config(&text);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let after = http.wait_for(&timeline_path, |t| t["events"].is_array());
    assert_eq!(
        after["events"], before["events"],
        "the same timeline after kill -9"
    );
    daemon.stop();
}
