//! The JSON API (issue 15) against real daemons, every answer checked against
//! `docs/openapi.json`: its status must be documented for its path, its content type too, and
//! its body must match the documented schema (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
//! The test fails if the document has a path, or an explicit status of a path, that no request
//! here produced.
//!
//! Four daemons give every documented answer: one with the `memory` plugin and groups that do
//! and do not push their topology (200s, 404s); one with Kafka's StandardAuthorizer and no ACLs
//! (403s: the API is `User:ANONYMOUS`); one whose coordinator shards are still loading (503s);
//! and one whose topology description plugin fails (status ERROR, and 503 for the drawing).

mod common;
mod web_support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use common::Daemon;
use kcoord_plugin_api::{
    PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use serde_json::{json, Value};
use web_support::{encode, node_names, Answer, Http, Sim, WEB_CONFIG};

/// `docs/openapi.json`, and the (path, status) pairs the test has seen answered.
struct OpenApi {
    doc: Value,
    exercised: BTreeSet<(String, String)>,
}

impl OpenApi {
    fn load() -> OpenApi {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        OpenApi {
            doc,
            exercised: BTreeSet::new(),
        }
    }

    /// GET `path` (an instance of the document's `template`), checks the answer against the
    /// document, and returns it.
    fn get(&mut self, http: &Http, template: &str, path: &str) -> Answer {
        let answer = http.get(path);
        self.check(template, path, &answer);
        answer
    }

    fn check(&mut self, template: &str, path: &str, answer: &Answer) {
        let responses = &self.doc["paths"][template]["get"]["responses"];
        assert!(
            responses.is_object(),
            "{template} is not a documented GET path"
        );
        let status = answer.status.to_string();
        let (key, response) = match responses.get(&status) {
            Some(response) => (status.clone(), response),
            None => panic!(
                "GET {path}: status {status} is not documented for {template}: {}",
                answer.body
            ),
        };
        let media_type = answer
            .content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim();
        let content = &response["content"][media_type];
        assert!(
            content.is_object(),
            "GET {path}: {status} with content type {:?}, not one the document lists",
            answer.content_type
        );
        let pointer = format!(
            "#/paths/{}/get/responses/{key}/content/{}/schema",
            escape_pointer(template),
            escape_pointer(media_type)
        );
        let instance = if media_type == "application/json" {
            answer.json()
        } else {
            Value::String(answer.body.clone())
        };
        self.validate(&pointer, &instance, &format!("GET {path} ({status})"));
        self.exercised.insert((template.to_owned(), key));
    }

    /// Validates `instance` against the schema at `pointer`, with the whole document as the
    /// root so that `#/components/schemas/...` references resolve.
    fn validate(&self, pointer: &str, instance: &Value, what: &str) {
        let mut root = self.doc.clone();
        root["$ref"] = Value::String(pointer.to_owned());
        let validator = jsonschema::draft202012::new(&root)
            .unwrap_or_else(|e| panic!("the schema at {pointer} does not compile: {e}"));
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what} does not match {pointer}:\n{}\n{}",
            errors.join("\n"),
            serde_json::to_string_pretty(instance).unwrap()
        );
    }

    /// Every documented path, and every explicit status of it, was answered at least once.
    fn assert_all_exercised(&self) {
        let mut missing = Vec::new();
        for (template, item) in self.doc["paths"].as_object().unwrap() {
            let responses = item["get"]["responses"].as_object().unwrap();
            for status in responses.keys().filter(|s| *s != "default") {
                if !self.exercised.contains(&(template.clone(), status.clone())) {
                    missing.push(format!("GET {template} {status}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "documented but never answered: {missing:?}"
        );
    }
}

/// A JSON pointer token (RFC 6901), for a `$ref`'s fragment (which is then a URI fragment:
/// `{` and `}` are percent-encoded).
fn escape_pointer(token: &str) -> String {
    token
        .replace('~', "~0")
        .replace('/', "~1")
        .replace('{', "%7B")
        .replace('}', "%7D")
}

const GROUP: &str = "/api/v1/groups/{groupId}";
const TOPOLOGY: &str = "/api/v1/groups/{groupId}/topology";
const SVG: &str = "/api/v1/groups/{groupId}/topology.svg";
const VERSIONS: &str = "/api/v1/groups/{groupId}/topology/versions";
const DIFF: &str = "/api/v1/groups/{groupId}/topology/diff";
const TASKS: &str = "/api/v1/groups/{groupId}/tasks";
const LAG: &str = "/api/v1/groups/{groupId}/lag";
const TIMELINE: &str = "/api/v1/groups/{groupId}/timeline";

fn group_paths(group: &str) -> [(&'static str, String); 8] {
    let base = format!("/api/v1/groups/{}", encode(group));
    [
        (GROUP, base.clone()),
        (TOPOLOGY, format!("{base}/topology")),
        (SVG, format!("{base}/topology.svg")),
        (VERSIONS, format!("{base}/topology/versions")),
        (DIFF, format!("{base}/topology/diff")),
        (TASKS, format!("{base}/tasks")),
        (LAG, format!("{base}/lag")),
        (TIMELINE, format!("{base}/timeline")),
    ]
}

fn orders_json() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/orders.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_answer_matches_the_openapi_document() {
    let mut api = OpenApi::load();
    groups_with_and_without_descriptions(&mut api);
    consumer_groups_with_their_lag(&mut api);
    state_stores_and_their_holders(&mut api);
    an_authorizer_without_acls_refuses_user_anonymous(&mut api);
    loading_coordinators_answer_503(&mut api);
    a_failing_plugin_answers_error(&mut api);
    api.assert_all_exercised();
}

/// The `memory` plugin; `orders-app` pushes `examples/orders.json`, `silent-app` never pushes.
fn groups_with_and_without_descriptions(api: &mut OpenApi) {
    let daemon = Daemon::start(WEB_CONFIG);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    // 5 records on partition 0 of the app's source topic, 2 of them processed.
    web_support::consumers::lagging_source(&daemon, "orders", 3, 5, "orders-app", 2);
    let orders = Sim::start(&daemon.bootstrap(), "orders-app", &orders_json(), &[]);
    let silent = Sim::start(
        &daemon.bootstrap(),
        "silent-app",
        &orders_json(),
        &["--no-push"],
    );
    http.wait_for_topology("orders-app");

    let document = api.get(&http, "/api/openapi.json", "/api/openapi.json");
    assert_eq!(
        document.json(),
        api.doc,
        "the served document is docs/openapi.json"
    );

    let list = api.get(&http, "/api/v1/groups", "/api/v1/groups").json();
    let ids: Vec<&str> = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["groupId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["orders-app", "silent-app"]);
    assert_eq!(list["groups"][0]["memberCount"], 1);

    let [(group, group_path), (topology, topology_path), (svg, svg_path), ..] =
        group_paths("orders-app");
    let described = api.get(&http, group, &group_path).json();
    assert_eq!(described["groupId"], "orders-app");
    let member = &described["members"][0];
    assert_eq!(member["clientHost"], "/127.0.0.1");
    // The one sub-topology's three partitions (the simulator creates `orders` with 3).
    assert_eq!(
        member["targetAssignment"]["activeTasks"],
        json!({"0": [0, 1, 2]})
    );

    let topology_doc = api.get(&http, topology, &topology_path).json();
    assert_eq!(topology_doc["topologyDescriptionStatus"], "AVAILABLE");
    let nodes = &topology_doc["topologyDescription"]["subtopologies"][0]["nodes"];
    let filter = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "KSTREAM-FILTER-0000000001")
        .expect("the filter node");
    // Rebuilt from the source's successors: the wire carries successors only.
    assert_eq!(filter["predecessors"], json!(["KSTREAM-SOURCE-0000000000"]));
    assert_eq!(filter["successors"], json!(["KSTREAM-SINK-0000000002"]));

    let drawing = api.get(&http, svg, &svg_path);
    assert!(drawing.body.starts_with("<svg"), "{}", drawing.body);
    for name in node_names(&topology_doc["topologyDescription"]) {
        assert!(
            drawing.body.contains(&format!("data-name=\"{name}\"")),
            "{name} is not drawn"
        );
    }

    one_version_of_each_group(api, &http);
    the_running_application(api, &http, member["memberId"].as_str().unwrap());
    let [_, (topology, topology_path), (svg, svg_path), ..] = group_paths("silent-app");
    let silent_doc = api.get(&http, topology, &topology_path).json();
    assert_eq!(silent_doc["topologyDescriptionStatus"], "NOT_STORED");
    assert_eq!(silent_doc["topologyDescription"], Value::Null);
    let not_drawn = api.get(&http, svg, &svg_path);
    assert_eq!(not_drawn.status, 404);
    assert_eq!(not_drawn.json()["error"], "TOPOLOGY_DESCRIPTION_NOT_STORED");

    for (template, path) in group_paths("no-such-group") {
        let answer = api.get(&http, template, &path);
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(answer.json()["error"], "GROUP_ID_NOT_FOUND", "{path}");
    }
    orders.stop();
    silent.stop();
    daemon.stop();
}

/// One deployment each: `orders-app`'s description is stored, `silent-app`'s is not. A diff
/// needs two versions (400), or names one twice (200, nothing changed), and both stored (404).
fn one_version_of_each_group(api: &mut OpenApi, http: &Http) {
    let [_, _, _, (versions, versions_path), (diff, diff_path), ..] = group_paths("orders-app");
    let orders = api.get(http, versions, &versions_path).json();
    let id = orders["topologyDescriptionId"].as_str().unwrap().to_owned();
    assert_eq!(orders["versions"].as_array().unwrap().len(), 1);
    assert_eq!(
        orders["versions"][0]["topologyDescriptionStatus"],
        "AVAILABLE"
    );
    assert_eq!(orders["versions"][0]["current"], true);
    assert_eq!(
        orders["versions"][0]["topologyEpoch"], 0,
        "the demo app's first topology"
    );
    assert_eq!(
        (
            orders["topologyStale"].clone(),
            orders["storedTopologyDescriptionId"].as_str()
        ),
        (json!(false), Some(id.as_str()))
    );
    let too_few = api.get(http, diff, &diff_path);
    assert_eq!(
        (too_few.status, too_few.json()["error"].clone()),
        (400, json!("INVALID_REQUEST"))
    );
    let bad = api.get(http, diff, &format!("{diff_path}?from=not-an-id&to={id}"));
    assert_eq!(bad.status, 400, "{}", bad.body);
    let same = api
        .get(http, diff, &format!("{diff_path}?from={id}&to={id}"))
        .json();
    assert_eq!(
        same["nodes"],
        json!({"added": [], "removed": [], "changed": []})
    );
    assert_eq!(same["from"]["topologyDescriptionId"], id.as_str());

    let [_, _, _, (versions, versions_path), (diff, diff_path), ..] = group_paths("silent-app");
    let silent = api.get(http, versions, &versions_path).json();
    assert_eq!(
        silent["versions"][0]["topologyDescriptionStatus"],
        "NOT_STORED"
    );
    assert_eq!(
        (
            silent["topologyStale"].clone(),
            silent["storedTopologyDescriptionId"].clone()
        ),
        (json!(false), Value::Null)
    );
    let id = silent["topologyDescriptionId"].as_str().unwrap().to_owned();
    let not_stored = api.get(http, diff, &format!("{diff_path}?from={id}&to={id}"));
    assert_eq!(
        (not_stored.status, not_stored.json()["error"].clone()),
        (404, json!("TOPOLOGY_DESCRIPTION_NOT_STORED"))
    );
}

/// `orders-app`'s one member runs its three tasks, its source topic lags 3 on partition 0,
/// and its timeline has the member joining and reconciling.
fn the_running_application(api: &mut OpenApi, http: &Http, member_id: &str) {
    let [.., (tasks, tasks_path), (lag, lag_path), (timeline, timeline_path)] =
        group_paths("orders-app");
    let doc = api.get(http, tasks, &tasks_path).json();
    let subtopology = &doc["subtopologies"][0];
    assert_eq!(subtopology["subtopologyId"], "0");
    let runners: Vec<(i64, &str)> = subtopology["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["partition"].as_i64().unwrap(),
                t["active"]["memberId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(runners, [(0, member_id), (1, member_id), (2, member_id)]);
    assert_eq!(doc["instances"][0]["activeTasks"], 3);

    let doc = api.get(http, lag, &lag_path).json();
    let partitions = doc["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 3);
    assert_eq!(
        (
            partitions[0]["committedOffset"].clone(),
            partitions[0]["logEndOffset"].clone(),
            partitions[0]["lag"].clone()
        ),
        (json!(2), json!(5), json!(3))
    );
    assert_eq!(partitions[1]["lag"], Value::Null, "nothing committed");
    assert_eq!(doc["subtopologies"][0]["lag"], 3);
    assert_eq!(doc["subtopologies"][0]["partitionsWithoutLag"], 2);
    assert_eq!(doc["worstSubtopologyId"], "0");
    assert_eq!(doc["totalLag"], 3);

    let doc = api.get(http, timeline, &timeline_path).json();
    let of_member: Vec<&str> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["memberId"] == member_id)
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        of_member,
        [
            "MEMBER_JOINED",
            "TARGET_ASSIGNMENT_CHANGED",
            "MEMBER_RECONCILED"
        ]
    );
    let changed = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "TARGET_ASSIGNMENT_CHANGED")
        .unwrap();
    assert_eq!(
        changed["gainedActiveTasks"],
        json!({"tasks": {"0": [0, 1, 2]}, "count": 3})
    );
    assert!(doc["events"][0]["timeMs"].as_i64().unwrap() > 0);
    assert_eq!(doc["reconciling"], json!([]));
}

/// A stateful application of two instances with one standby replica: every partition of its
/// store is held by one instance as active and by the other as standby, and each task lists
/// the same.
fn state_stores_and_their_holders(api: &mut OpenApi) {
    let mut lines = WEB_CONFIG.to_vec();
    lines.push("group.streams.num.standby.replicas=1");
    let daemon = Daemon::start(&lines);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let app = Sim::start(
        &daemon.bootstrap(),
        "counts-app",
        &web_support::orders_v2(),
        &["--members", "2"],
    );
    let [.., (tasks, tasks_path), _, _] = group_paths("counts-app");
    let all_held = |doc: &Value| {
        let tasks = doc["subtopologies"][0]["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        tasks.len() == 3
            && tasks.iter().all(|t| {
                t["active"].is_object() && t["standbys"].as_array().is_some_and(|s| s.len() == 1)
            })
    };
    http.wait_for(&tasks_path, all_held);
    let doc = api.get(&http, tasks, &tasks_path).json();
    assert!(all_held(&doc), "{doc}");
    let store = &doc["stateStores"][0];
    assert_eq!(
        (
            &store["storeName"],
            &store["changelogTopic"],
            &store["subtopologyId"]
        ),
        (
            &json!("order-counts"),
            &json!("counts-app-order-counts-changelog"),
            &json!("0")
        )
    );
    let mut held: Vec<(String, String, i64)> = Vec::new();
    for holder in store["holders"].as_array().unwrap() {
        for p in holder["partitions"].as_array().unwrap() {
            held.push((
                holder["role"].as_str().unwrap().to_owned(),
                holder["memberId"].as_str().unwrap().to_owned(),
                p.as_i64().unwrap(),
            ));
        }
    }
    for task in doc["subtopologies"][0]["tasks"].as_array().unwrap() {
        let p = task["partition"].as_i64().unwrap();
        let active = task["active"]["memberId"].as_str().unwrap().to_owned();
        let standby = task["standbys"][0]["memberId"].as_str().unwrap().to_owned();
        assert_ne!(active, standby, "task {p}");
        assert!(held.contains(&("active".into(), active, p)), "{held:?}");
        assert!(held.contains(&("standby".into(), standby, p)), "{held:?}");
    }
    assert_eq!(held.len(), 6, "each partition held twice: {held:?}");
    app.stop();
    daemon.stop();
}

const CONSUMER_GROUPS: &str = "/api/v1/consumer-groups";
const CONSUMER_GROUP: &str = "/api/v1/consumer-groups/{groupId}";

fn consumer_group_path(group: &str) -> String {
    format!("/api/v1/consumer-groups/{}", encode(group))
}

/// A classic group (its leader's consumer-protocol assignment, a lag of 3) and a KIP-848
/// consumer group beside a streams group, which the consumer groups' API does not show.
fn consumer_groups_with_their_lag(api: &mut OpenApi) {
    use web_support::consumers::{CLASSIC, CONSUMER, TOPIC};
    let daemon = Daemon::start(WEB_CONFIG);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    web_support::consumers::start(&daemon);
    let list = api.get(&http, CONSUMER_GROUPS, CONSUMER_GROUPS).json();
    let listed: Vec<(&str, &str)> = list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["groupId"].as_str().unwrap(),
                g["groupType"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, [(CONSUMER, "consumer"), (CLASSIC, "classic")]);

    let classic = api
        .get(&http, CONSUMER_GROUP, &consumer_group_path(CLASSIC))
        .json();
    assert_eq!(
        (
            classic["groupState"].as_str(),
            classic["partitionAssignor"].as_str()
        ),
        (Some("Stable"), Some("range"))
    );
    assert_eq!(classic["members"][0]["assignment"], json!({TOPIC: [0, 1]}));
    assert_eq!(
        classic["offsets"],
        json!([{"topic": TOPIC, "partition": 0, "committedOffset": 2, "logEndOffset": 5, "lag": 3}])
    );
    assert_eq!(classic["totalLag"], 3);

    let consumer = api
        .get(&http, CONSUMER_GROUP, &consumer_group_path(CONSUMER))
        .json();
    assert_eq!(consumer["groupType"], "consumer");
    assert_eq!(consumer["members"][0]["memberId"], "auditor-1");
    assert_eq!(consumer["members"][0]["assignment"], json!({TOPIC: [0, 1]}));
    assert_eq!(
        (consumer["offsets"].clone(), consumer["totalLag"].clone()),
        (json!([]), json!(0))
    );

    let missing = api.get(&http, CONSUMER_GROUP, &consumer_group_path("no-such-group"));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "GROUP_ID_NOT_FOUND");
    daemon.stop();
}

/// Kafka's StandardAuthorizer without ACLs, everyone denied: the API (`User:ANONYMOUS`) lists
/// nothing and may describe nothing, whether the group exists or not (as in Kafka, authorization
/// comes first).
fn an_authorizer_without_acls_refuses_user_anonymous(api: &mut OpenApi) {
    let mut lines = WEB_CONFIG.to_vec();
    lines.extend([
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found=false",
    ]);
    let daemon = Daemon::start(&lines);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let list = api.get(&http, "/api/v1/groups", "/api/v1/groups").json();
    assert_eq!(list, json!({"groups": []}));
    let list = api.get(&http, CONSUMER_GROUPS, CONSUMER_GROUPS).json();
    assert_eq!(list, json!({"groups": []}));
    let mut paths = group_paths("any-group").to_vec();
    paths.push((CONSUMER_GROUP, consumer_group_path("any-group")));
    for (template, path) in paths {
        let answer = api.get(&http, template, &path);
        assert_eq!(answer.status, 403, "{path}");
        assert_eq!(
            answer.json()["error"],
            "GROUP_AUTHORIZATION_FAILED",
            "{path}"
        );
    }
    daemon.stop();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// An in-process daemon (for what only [`kcoord_server::Extensions`] can set up).
fn in_process(
    runtime: &tokio::runtime::Runtime,
    extensions: kcoord_server::Extensions,
) -> kcoord_server::ServerHandle {
    let text = format!(
        "{}\n{}\n",
        common::BASE_CONFIG.join("\n"),
        WEB_CONFIG.join("\n")
    );
    let config = kcoord_server::Config::parse("web-api", &text).unwrap();
    runtime
        .block_on(kcoord_server::start_with(config, extensions))
        .unwrap()
}

/// Coordinator shards held in their loading state: every read is 503, with Kafka's error.
fn loading_coordinators_answer_503(api: &mut OpenApi) {
    let runtime = runtime();
    let gate = kcoord_server::runtime::shards::LoadGate::new();
    let daemon = in_process(
        &runtime,
        kcoord_server::Extensions {
            load_gate: Some(gate.clone()),
            ..Default::default()
        },
    );
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let mut paths = vec![
        ("/api/v1/groups", "/api/v1/groups".to_owned()),
        (CONSUMER_GROUPS, CONSUMER_GROUPS.to_owned()),
        (CONSUMER_GROUP, consumer_group_path("loading-group")),
    ];
    paths.extend(group_paths("loading-group"));
    for (template, path) in paths {
        let answer = api.get(&http, template, &path);
        assert_eq!(answer.status, 503, "{path}");
        assert_eq!(
            answer.json()["error"],
            "COORDINATOR_LOAD_IN_PROGRESS",
            "{path}"
        );
    }
    gate.open();
    runtime.block_on(daemon.shutdown());
}

/// A plugin that never asks for a push and fails every read, recording who read.
#[derive(Default)]
struct FailingPlugin {
    reads: std::sync::Mutex<Vec<RequestContext>>,
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for FailingPlugin {
    fn requires_topology_push(&self, _: &RequestContext, _: &str, _: Uuid) -> bool {
        false
    }

    async fn set_topology(
        &self,
        _: &RequestContext,
        _: &str,
        _: Uuid,
        _: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        Ok(())
    }

    async fn delete_topology(&self, _: &RequestContext, _: &str) -> Result<(), PluginError> {
        Ok(())
    }

    async fn get_topology(
        &self,
        ctx: &RequestContext,
        _: &str,
        _: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.reads.lock().unwrap().push(ctx.clone());
        Err(PluginError::Other("the store is down".to_owned()))
    }
}

/// The plugin fails: the description's status is ERROR (200), the drawing 503. The plugin
/// is read as StreamsGroupDescribe v1 reads it, for `User:ANONYMOUS` at the HTTP client's
/// address on the `HTTP` listener.
fn a_failing_plugin_answers_error(api: &mut OpenApi) {
    let runtime = runtime();
    let plugin = Arc::new(FailingPlugin::default());
    let daemon = in_process(
        &runtime,
        kcoord_server::Extensions {
            plugin: Some(plugin.clone() as Arc<kcoord_server::runtime::topology_plugin::Plugin>),
            ..Default::default()
        },
    );
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let broker = daemon.broker_addr().expect("a broker listener").to_string();
    let app = Sim::start(&broker, "broken-app", &orders_json(), &[]);
    let [_, (topology, topology_path), (svg, svg_path), ..] = group_paths("broken-app");
    let deadline = std::time::Instant::now() + web_support::WAIT;
    // The group exists once the member has joined.
    let doc = loop {
        let answer = http.get(&topology_path);
        if answer.status == 200 {
            api.check(topology, &topology_path, &answer);
            break answer.json();
        }
        assert!(std::time::Instant::now() < deadline, "{}", answer.body);
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(doc["topologyDescriptionStatus"], "ERROR");
    let drawing = api.get(&http, svg, &svg_path);
    assert_eq!(drawing.status, 503);
    assert_eq!(drawing.json()["error"], "TOPOLOGY_DESCRIPTION_ERROR");
    let reads = plugin.reads.lock().unwrap().clone();
    assert_eq!(reads.len(), 2, "one read per request");
    for ctx in reads {
        assert_eq!(ctx.principal, "User:ANONYMOUS");
        assert_eq!(ctx.listener_name, "HTTP");
        assert_eq!(ctx.client_id, "kcoord-http-api");
        assert_eq!(ctx.client_address, std::net::IpAddr::from([127, 0, 0, 1]));
        assert_eq!((ctx.api_key, ctx.api_version), (89, 1));
    }
    // The versions read the plugin as describe does: its failure is each version's ERROR, and
    // a diff of versions it cannot read is 503.
    let [_, _, _, (versions, versions_path), (diff, diff_path), ..] = group_paths("broken-app");
    let listed = api.get(&http, versions, &versions_path).json();
    assert_eq!(listed["versions"][0]["topologyDescriptionStatus"], "ERROR");
    assert_eq!(listed["topologyStale"], false);
    let id = listed["topologyDescriptionId"].as_str().unwrap().to_owned();
    let unreadable = api.get(&http, diff, &format!("{diff_path}?from={id}&to={id}"));
    assert_eq!(
        (unreadable.status, unreadable.json()["error"].clone()),
        (503, json!("TOPOLOGY_DESCRIPTION_ERROR"))
    );
    app.stop();
    runtime.block_on(daemon.shutdown());
}
