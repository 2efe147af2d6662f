//! The web page (issue 15) in a real headless Chromium (Debian's `chromium`, installed by
//! `scripts/install-chromium`), driven over the DevTools protocol with `headless_chrome`.
//!
//! A daemon with the `memory` plugin and an HTTP listener; kcoord-streams-demo runs an
//! application that pushes its topology; the page, once open, must draw it with every node
//! clickable (a click shows the node in the details panel, with its neighbours from the JSON
//! topology), show a group that appears later without a reload, show why a group has no
//! drawing, keep the selection across refreshes, and show the consumer groups (classic and
//! KIP-848) with their members' assignments and lag. A screenshot is saved to
//! `target/test-artifacts/topology-page.png`. Issue 26: the running application on the graph
//! (instances, tasks, lag, the rebalance timeline) and what a redeploy changed.

mod common;
mod web_support;

use common::Daemon;
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::Tab;
use serde_json::Value;
use web_support::{
    artifact_path, chromium, evaluate, node_names, wait_in_page, writer_json, Http, Sim, WEB_CONFIG,
};

const APP: &str = "web-app";
const SILENT: &str = "web-silent-app";

/// The selector of the drawn nodes of `group`'s section.
fn nodes_of(group: &str) -> String {
    format!("section[data-group=\"{group}\"] .drawing g.node")
}

#[test]
fn the_page_draws_the_topology_with_clickable_nodes() {
    // Before the daemon: a missing browser fails at once, naming the script to run.
    let browser = chromium();
    let daemon = Daemon::start(WEB_CONFIG);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    // Two chained sub-topologies of six nodes and a global store: sources, processors with
    // stores, sinks, a repartition topic between them.
    let description = kcoord_client::topology::synthetic::layered(2, 6, 1);
    let app = Sim::start(&daemon.bootstrap(), APP, &writer_json(&description), &[]);
    let topology = http.wait_for_topology(APP);
    let description = &topology["topologyDescription"];
    let names = node_names(description);
    assert_eq!(names.len(), 14);

    let tab = browser.new_tab().unwrap();
    tab.navigate_to(&http.url("/"))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    let selector = nodes_of(APP);
    let drawn = wait_in_page(
        &tab,
        &format!("document.querySelectorAll('{selector}').length"),
        "the group's drawing",
        |n| n.as_u64().unwrap_or(0) > 0,
    );
    let list = evaluate(
        &tab,
        "document.querySelector('#group-list tbody').innerText",
    );
    assert!(list.as_str().unwrap().contains(APP), "{list}");

    let clicked = click_every_node(&tab, &selector, description);
    assert_eq!(clicked.len() as u64, drawn.as_u64().unwrap());
    for name in &names {
        assert!(
            clicked
                .iter()
                .any(|(kind, n)| n == name && kind != "topic" && kind != "store"),
            "{name} is not a clickable node of the page"
        );
    }

    the_drawing_zooms_to_fit(&tab);
    a_new_group_appears_with_its_status(&tab, &daemon);
    consumer_groups_show_their_members_and_lag(&tab, &daemon);
    the_selection_survives_a_refresh(&tab, clicked.last().unwrap());

    // A processor selected for the picture.
    let processor = tab
        .find_element(&format!("{selector}[data-kind=\"processor\"]"))
        .unwrap();
    processor.click().unwrap();
    screenshot(&tab, "topology-page.png");

    drop(tab);
    app.stop();
    daemon.stop();
}

/// Saves what the tab shows as `target/test-artifacts/<name>`.
fn screenshot(tab: &Tab, name: &str) {
    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .unwrap();
    let path = artifact_path(name);
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}

/// A classic group (lag 3 on one partition) and a consumer group appear below the streams
/// groups, without a reload, with each member's assignment and each partition's lag.
fn consumer_groups_show_their_members_and_lag(tab: &Tab, daemon: &Daemon) {
    use web_support::consumers::{CLASSIC, CONSUMER, TOPIC};
    web_support::consumers::start(daemon);
    let text = wait_in_page(
        tab,
        "document.getElementById('consumer-groups').innerText",
        "the consumer groups",
        |t| {
            t.as_str()
                .is_some_and(|t| t.contains(CLASSIC) && t.contains(CONSUMER))
        },
    );
    let text = text.as_str().unwrap();
    assert!(text.contains("total lag 3"), "{text}");
    assert!(text.contains(&format!("{TOPIC} [0, 1]")), "{text}");
    let lag = evaluate(
        tab,
        &format!(
            "document.querySelector('.consumer-group[data-group=\"{CLASSIC}\"] td.lag').innerText"
        ),
    );
    assert_eq!(lag.as_str(), Some("3"), "the largest lag is listed first");
}

/// Clicks each drawn node of the group and checks the details panel: its name, its kind, and
/// for sources, processors and sinks the predecessors and successors of the JSON topology.
/// Returns (kind, name) of every node clicked.
fn click_every_node(tab: &Tab, selector: &str, description: &Value) -> Vec<(String, String)> {
    let elements = tab.find_elements(selector).unwrap();
    let mut clicked = Vec::new();
    for element in elements {
        let kind = element.get_attribute_value("data-kind").unwrap().unwrap();
        let name = element.get_attribute_value("data-name").unwrap().unwrap();
        element
            .click()
            .unwrap_or_else(|e| panic!("{kind} {name} cannot be clicked: {e}"));
        let heading = wait_in_page(
            tab,
            "document.querySelector('#details h2')?.textContent ?? null",
            &format!("the details of {kind} {name}"),
            |h| h.as_str() == Some(name.as_str()),
        );
        assert_eq!(heading, Value::String(name.clone()));
        let text = evaluate(tab, "document.querySelector('#details').innerText");
        let text = text.as_str().unwrap();
        assert!(text.contains(&kind), "{kind} {name}: {text}");
        if let Some(node) = find_node(description, &name) {
            for neighbour in ["predecessors", "successors"] {
                for other in node[neighbour].as_array().unwrap() {
                    let other = other.as_str().unwrap();
                    assert!(
                        text.contains(other),
                        "{name}'s {neighbour} lack {other}: {text}"
                    );
                }
            }
        }
        let selected = evaluate(
            tab,
            "[...document.querySelectorAll('.drawing g.node.selected')].map(g => g.dataset.name)",
        );
        assert_eq!(
            selected,
            serde_json::json!([name]),
            "only the clicked node is selected"
        );
        clicked.push((kind, name));
    }
    clicked
}

fn find_node<'a>(description: &'a Value, name: &str) -> Option<&'a Value> {
    let subtopology_nodes = description["subtopologies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["nodes"].as_array().unwrap());
    let global_nodes = description["globalStores"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| [&g["source"], &g["processor"]]);
    subtopology_nodes
        .chain(global_nodes)
        .find(|n| n["name"] == name)
}

/// "Fit" scales the drawing down to its box's width (never up), "100%" back to its natural
/// size.
fn the_drawing_zooms_to_fit(tab: &Tab) {
    let section = format!("section[data-group=\"{APP}\"]");
    let sizes = format!(
        "(() => {{ const d = document.querySelector('{section} .drawing'); const svg = d.querySelector('svg'); \
         return [svg.getBoundingClientRect().width, d.clientWidth, svg.viewBox.baseVal.width]; }})()"
    );
    tab.find_element(&format!("{section} .toolbar button[data-zoom=\"fit\"]"))
        .unwrap()
        .click()
        .unwrap();
    let fitted = evaluate(tab, &sizes);
    let [width, room, natural] = [0, 1, 2].map(|i| fitted[i].as_f64().unwrap());
    // Never larger than its natural size.
    let expected = room.min(natural);
    assert!((width - expected).abs() <= 3.0, "fitted: {fitted}");
    tab.find_element(&format!("{section} .toolbar button[data-zoom=\"actual\"]"))
        .unwrap()
        .click()
        .unwrap();
    let actual = evaluate(tab, &sizes);
    assert!(
        (actual[0].as_f64().unwrap() - actual[2].as_f64().unwrap()).abs() < 1.0,
        "actual size: {actual}"
    );
}

/// A group that joins while the page is open shows up at the next poll, with the reason it
/// has no drawing.
fn a_new_group_appears_with_its_status(tab: &Tab, daemon: &Daemon) {
    let orders: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/orders.json"))
            .unwrap(),
    )
    .unwrap();
    let silent = Sim::start(&daemon.bootstrap(), SILENT, &orders, &["--no-push"]);
    let status = wait_in_page(
        tab,
        &format!(
            "document.querySelector('section[data-group=\"{SILENT}\"] .topology-status')?.textContent ?? ''"
        ),
        "the new group's status",
        |t| t.as_str().is_some_and(|t| !t.is_empty()),
    );
    assert!(
        status
            .as_str()
            .unwrap()
            .starts_with("No topology description has been recorded"),
        "{status}"
    );
    silent.stop();
}

/// The page polls every few seconds; after two more rounds the clicked node is still the
/// selected one and the panel still shows it.
fn the_selection_survives_a_refresh(tab: &Tab, (kind, name): &(String, String)) {
    for _ in 0..2 {
        let before = evaluate(tab, "document.getElementById('status').textContent");
        wait_in_page(
            tab,
            "document.getElementById('status').textContent",
            "a refresh",
            |now| *now != before,
        );
    }
    let selected = evaluate(
        tab,
        "[...document.querySelectorAll('.drawing g.node.selected')].map(g => [g.dataset.kind, g.dataset.name])",
    );
    assert_eq!(selected, serde_json::json!([[kind, name]]));
    let heading = evaluate(tab, "document.querySelector('#details h2').textContent");
    assert_eq!(heading, Value::String(name.clone()));
}

/// Issue 26: an application redeployed with a changed topology, the `file` plugin keeping both
/// descriptions. The group's "Versions" panel lists both and shows what the redeploy added,
/// removed and changed; a third deployment whose members do not push is flagged as running a
/// topology that differs from the last stored description. A screenshot is saved to
/// `target/test-artifacts/topology-versions.png`.
#[test]
fn the_page_shows_what_a_redeploy_changed() {
    const ORDERS: &str = "orders-app";
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let lines = web_support::file_plugin_config(dir.path());
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let daemon = Daemon::start_with_config(&common::config_text(&lines));
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let versions = format!(
        "/api/v1/groups/{}/topology/versions",
        web_support::encode(ORDERS)
    );
    let v1 = Sim::start(&daemon.bootstrap(), ORDERS, &web_support::orders_v1(), &[]);
    http.wait_for(&versions, |v| web_support::all_stored(v, 1));
    v1.stop();
    let v2 = Sim::start(
        &daemon.bootstrap(),
        ORDERS,
        &web_support::orders_v2(),
        &["--topology-epoch", "1"],
    );
    http.wait_for(&versions, |v| web_support::all_stored(v, 2));

    let tab = browser.new_tab().unwrap();
    tab.navigate_to(&http.url("/"))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    let section = format!("section[data-group=\"{ORDERS}\"]");
    wait_in_page(
        &tab,
        &format!("document.querySelector('{section} details.versions') !== null"),
        "the group's versions panel",
        |v| v == &Value::Bool(true),
    );
    evaluate(
        &tab,
        &format!("document.querySelector('{section} details.versions').open = true"),
    );
    let changes = wait_in_page(
        &tab,
        &format!(
            "Array.from(document.querySelectorAll('{section} .diff li')).map((li) => `${{li.className}} ${{li.dataset.kind}} ${{li.dataset.name}}`)"
        ),
        "the differences between the two versions",
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    );
    let changes: Vec<&str> = changes
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for expected in [
        "added node count",
        "changed node filter",
        "changed node sink",
        "added edge filter->count",
        "removed edge filter->sink",
        "added topic checked-orders",
        "removed topic valid-orders",
        "added store order-counts",
        "changed subtopology 0",
    ] {
        assert!(
            changes.contains(&expected),
            "{expected} is not shown: {changes:?}"
        );
    }
    let rows = evaluate(
        &tab,
        &format!("document.querySelectorAll('{section} .version-list tbody tr').length"),
    );
    assert_eq!(rows, 2);
    evaluate(
        &tab,
        &format!("document.querySelector('{section} details.versions').scrollIntoView()"),
    );
    screenshot(&tab, "topology-versions.png");

    // The other way round, chosen on the page: the redeploy's additions are removals.
    evaluate(
        &tab,
        &format!(
            "(() => {{ const [newer, older] = document.querySelectorAll('{section} .version-list tbody tr'); older.querySelector('input[data-role=to]').click(); newer.querySelector('input[data-role=from]').click(); return true; }})()"
        ),
    );
    wait_in_page(
        &tab,
        &format!(
            "Array.from(document.querySelectorAll('{section} .diff li')).map((li) => `${{li.className}} ${{li.dataset.kind}} ${{li.dataset.name}}`)"
        ),
        "the differences the other way round",
        |v| v.as_array().is_some_and(|a| a.contains(&Value::from("removed node count"))),
    );

    // Redeployed again, but the members do not push: the page says the drawing is stale.
    v2.stop();
    let v3 = Sim::start(
        &daemon.bootstrap(),
        ORDERS,
        &web_support::orders_v1(),
        &["--topology-epoch", "2", "--no-push"],
    );
    let stale = wait_in_page(
        &tab,
        &format!(
            "(() => {{ const p = document.querySelector('{section} p.stale'); return p && !p.hidden ? p.textContent : null; }})()"
        ),
        "the stale flag",
        |v| v.is_string(),
    );
    assert!(
        stale
            .as_str()
            .unwrap()
            .contains("differs from the last stored description"),
        "{stale}"
    );
    drop(tab);
    v3.stop();
    daemon.stop();
}

/// Issue 26: three instances of an application, one partition of its source topic 3 records
/// behind. The page lists the instances and each task with its runner; selecting an instance
/// highlights exactly its tasks (as `.../tasks` gives them) and the nodes it runs; the lag
/// shows on its task, the sub-topology is flagged as the one that lags most, and the lag's
/// rate appears as it grows. An instance is killed: the "Rebalances" panel shows it fenced
/// and its task moves to the others. A screenshot is saved to
/// `target/test-artifacts/running-application.png`.
#[test]
fn the_page_shows_who_runs_what_and_where_the_lag_is() {
    const GROUP: &str = "three-app";
    let browser = chromium();
    let mut lines = WEB_CONFIG.to_vec();
    lines.extend([
        "group.streams.min.session.timeout.ms=3000",
        "group.streams.session.timeout.ms=3000",
        "group.streams.min.heartbeat.interval.ms=500",
        "group.streams.heartbeat.interval.ms=500",
    ]);
    let daemon = Daemon::start(&lines);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    web_support::consumers::lagging_source(&daemon, "orders", 3, 5, GROUP, 2);
    let orders = web_support::orders_v1();
    let mut apps: Vec<Sim> = (0..3)
        .map(|_| Sim::start(&daemon.bootstrap(), GROUP, &orders, &[]))
        .collect();
    let tasks_path = format!("/api/v1/groups/{GROUP}/tasks");
    let one_each = |doc: &Value| {
        let instances = doc["instances"].as_array().cloned().unwrap_or_default();
        instances.len() == 3 && instances.iter().all(|i| i["activeTasks"] == 1)
    };
    let tasks = http.wait_for(&tasks_path, one_each);
    http.wait_for_topology(GROUP);

    let tab = browser.new_tab().unwrap();
    tab.navigate_to(&http.url("/"))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    let section = format!("section[data-group=\"{GROUP}\"]");
    wait_in_page(
        &tab,
        &format!("document.querySelectorAll('{section} tr.task').length + document.querySelectorAll('{section} button.instance').length"),
        "the tasks and instances",
        |n| n.as_u64() == Some(6),
    );
    for instance in tasks["instances"].as_array().unwrap() {
        let member = instance["memberId"].as_str().unwrap();
        select_instance_highlights_its_tasks(&tab, &section, &tasks, member);
    }

    // The lag of task 0_0, and its sub-topology flagged on the page and on the drawing.
    let lag_of_0_0 = format!(
        "document.querySelector('{section} tr.task[data-partition=\"0\"] td.lag')?.textContent ?? ''"
    );
    wait_in_page(&tab, &lag_of_0_0, "the lag of task 0_0", |t| {
        t.as_str() == Some("3")
    });
    let flagged = evaluate(
        &tab,
        &format!("[document.querySelector('{section} .subtopology-tasks.worst')?.dataset.subtopology, !!document.querySelector('{section} .drawing g.cluster.most-lag')]"),
    );
    assert_eq!(flagged, serde_json::json!(["0", true]));
    let badge = format!(
        "document.querySelector('{section} .drawing g.cluster text.lag-badge')?.textContent ?? ''"
    );
    assert!(
        evaluate(&tab, &badge)
            .as_str()
            .unwrap()
            .starts_with("lag 3"),
        "the lag on the drawing"
    );
    let detail = evaluate(
        &tab,
        &format!("document.querySelector('{section} tr.task[data-partition=\"0\"] td.lag').title"),
    );
    assert_eq!(
        detail, "orders-0: committed 2, end 5, lag 3",
        "the source partition"
    );
    web_support::consumers::produce_more(&daemon, "orders", 5);
    let rate = wait_in_page(
        &tab,
        &format!("document.querySelector('{section} tr.task[data-partition=\"0\"] td.lag + td.lag')?.textContent ?? ''"),
        "the lag's rate",
        |t| t.as_str().is_some_and(|t| t.starts_with('+')),
    );
    assert!(rate.as_str().unwrap().ends_with("/s"), "{rate}");
    assert_eq!(evaluate(&tab, &lag_of_0_0), "8");
    evaluate(
        &tab,
        &format!("document.querySelector('{section} details.timeline').open = true"),
    );
    a_killed_instance_is_fenced_and_its_task_moves(&tab, &section, &http, apps.remove(0));
    evaluate(
        &tab,
        &format!("document.querySelector('{section} .drawing').scrollIntoView()"),
    );
    screenshot(&tab, "running-application.png");
    for app in apps {
        app.stop();
    }
    the_lag_drains(&tab, &section, &daemon);
    drop(tab);
    daemon.stop();
}

/// The application stopped (the group empty), its offsets are committed up to the end: the
/// task's lag goes to 0 with a falling rate, and no sub-topology is flagged any more.
fn the_lag_drains(tab: &Tab, section: &str, daemon: &Daemon) {
    web_support::consumers::commit_as_admin(daemon, "three-app", ("orders", 0), 10);
    let drained = wait_in_page(
        tab,
        &format!("(() => {{ const cells = document.querySelectorAll('{section} tr.task[data-partition=\"0\"] td.lag'); return cells.length === 2 ? [cells[0].textContent, cells[1].textContent] : null; }})()"),
        "the lag drained",
        |v| v[0] == "0" && v[1].as_str().is_some_and(|r| r.starts_with('-')),
    );
    assert!(drained[1].as_str().unwrap().ends_with("/s"), "{drained}");
    let flagged = evaluate(
        tab,
        &format!("document.querySelectorAll('{section} .subtopology-tasks.worst, {section} .drawing g.cluster.most-lag').length"),
    );
    assert_eq!(flagged, 0, "nothing lags");
}

/// Clicks `member`'s instance button: the highlighted task rows are exactly the member's tasks
/// in `tasks` (`.../tasks`), the drawing marks nodes it runs, and only its button is pressed.
fn select_instance_highlights_its_tasks(tab: &Tab, section: &str, tasks: &Value, member: &str) {
    let mut expected: Vec<String> = Vec::new();
    for s in tasks["subtopologies"].as_array().unwrap() {
        for t in s["tasks"].as_array().unwrap() {
            let runs = std::iter::once(&t["active"])
                .chain(t["standbys"].as_array().unwrap())
                .chain(t["warmups"].as_array().unwrap())
                .any(|r| r["memberId"] == member);
            if runs {
                expected.push(format!(
                    "{}_{}",
                    s["subtopologyId"].as_str().unwrap(),
                    t["partition"]
                ));
            }
        }
    }
    // Clicked in the page: the buttons are rebuilt by every poll. A second click deselects,
    // so only one that is not pressed already.
    evaluate(
        tab,
        &format!(
            "(() => {{ const b = document.querySelector('{section} button.instance[data-member=\"{member}\"]'); if (b.getAttribute('aria-pressed') !== 'true') b.click(); return true; }})()"
        ),
    );
    let highlighted = wait_in_page(
        tab,
        &format!("[...document.querySelectorAll('{section} tr.task.instance-selected')].map(r => `${{r.dataset.subtopology}}_${{r.dataset.partition}}`)"),
        &format!("{member}'s tasks highlighted"),
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    );
    assert_eq!(highlighted, serde_json::json!(expected), "{member}");
    let marked = evaluate(
        tab,
        &format!("[document.querySelectorAll('{section} .drawing g.node.instance-runs').length, [...document.querySelectorAll('{section} button.instance[aria-pressed=\"true\"]')].map(b => b.dataset.member)]"),
    );
    assert!(marked[0].as_u64().unwrap() > 0, "no node marked: {marked}");
    assert_eq!(marked[1], serde_json::json!([member]));
}

/// Kills one instance: the timeline shows it fenced (its session timed out) and its task
/// gained by another member's target, and the three tasks end up run by the two others.
fn a_killed_instance_is_fenced_and_its_task_moves(tab: &Tab, section: &str, http: &Http, app: Sim) {
    let before = http.get("/api/v1/groups/three-app/tasks").json();
    let members: Vec<String> = before["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["memberId"].as_str().unwrap().to_owned())
        .collect();
    app.kill();
    let fenced = wait_in_page(
        tab,
        &format!("[...document.querySelectorAll('{section} .timeline tr[data-type=\"MEMBER_FENCED\"]')].map(r => [r.dataset.member, r.textContent])"),
        "the fencing on the timeline",
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
    );
    let (gone, text) = (
        fenced[0][0].as_str().unwrap(),
        fenced[0][1].as_str().unwrap(),
    );
    assert!(members.iter().any(|m| m == gone), "{gone} was a member");
    assert!(text.contains("session timeout"), "{text}");
    // Its task, gained by another member's target on the timeline.
    let task = before["subtopologies"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["active"]["memberId"] == gone)
        .map(|t| format!("0_{}", t["partition"]))
        .unwrap();
    // Newest first: the rows above the fencing are what followed it.
    let gained = wait_in_page(
        tab,
        &format!("(() => {{ const rows = [...document.querySelectorAll('{section} .timeline tbody tr')]; const fenced = rows.findIndex(r => r.dataset.type === 'MEMBER_FENCED'); return rows.slice(0, fenced).filter(r => r.dataset.type === 'TARGET_ASSIGNMENT_CHANGED' && r.dataset.member !== '{gone}' && (r.dataset.gained || '').split(', ').includes('{task}')).length; }})()"),
        "the fenced member's task gained by another",
        |n| n.as_u64().is_some_and(|n| n > 0),
    );
    assert_eq!(gained, 1, "one member gains it");
    let moved = wait_in_page(
        tab,
        &format!("[...document.querySelectorAll('{section} tr.task')].map(r => r.dataset.active)"),
        "the fenced member's task moved",
        |v| {
            v.as_array().is_some_and(|a| {
                a.len() == 3
                    && a.iter()
                        .all(|m| m.as_str().is_some_and(|m| !m.is_empty() && m != gone))
            })
        },
    );
    assert_eq!(moved.as_array().unwrap().len(), 3);
}
