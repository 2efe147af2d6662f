//! Shared by the web API and web page tests and the page's benchmark: an HTTP client, a
//! simulated streams application that pushes its topology description (kcoord-streams-demo's
//! library, on a runtime of its own), and Debian's Chromium driven over CDP.
#![allow(dead_code)] // each test binary uses its own part

pub mod consumers;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Bound on every wait of these tests.
pub const WAIT: Duration = Duration::from_secs(30);

/// The memory topology description plugin and groups that assign at once.
pub const WEB_CONFIG: &[&str] = &[
    "http.listener=127.0.0.1:0",
    "group.streams.topology.description.class=memory",
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.assignment.interval.ms=0",
    "offsets.topic.num.partitions=2",
    "group.initial.rebalance.delay.ms=0",
];

/// [`WEB_CONFIG`] with the durable `file` plugin keeping its files in `dir/topologies`, and the
/// daemon's logs in `dir/logs`.
pub fn file_plugin_config(dir: &Path) -> Vec<String> {
    let mut lines: Vec<String> = WEB_CONFIG
        .iter()
        .filter(|l| !l.starts_with("group.streams.topology.description.class"))
        .map(|l| l.to_string())
        .collect();
    lines.extend([
        "group.streams.topology.description.class=file".to_owned(),
        format!(
            "group.streams.topology.description.file.dir={}",
            dir.join("topologies").display()
        ),
        format!("log.dirs={}", dir.join("logs").display()),
    ]);
    lines
}

/// The orders app of `examples/orders.json`, with short names.
pub fn orders_v1() -> Value {
    serde_json::json!({"subtopologies": [{"id": 0, "nodes": [
        {"type": "source", "name": "src", "topics": ["orders"], "successors": ["filter"]},
        {"type": "processor", "name": "filter", "stores": [], "successors": ["sink"]},
        {"type": "sink", "name": "sink", "topic": "valid-orders"}
    ]}], "globalStores": []})
}

/// The orders app redeployed: the filter's orders are counted into a store and written to
/// another topic.
pub fn orders_v2() -> Value {
    serde_json::json!({"subtopologies": [{"id": 0, "nodes": [
        {"type": "source", "name": "src", "topics": ["orders"], "successors": ["filter"]},
        {"type": "processor", "name": "filter", "stores": [], "successors": ["count"]},
        {"type": "processor", "name": "count", "stores": ["order-counts"], "successors": ["sink"]},
        {"type": "sink", "name": "sink", "topic": "checked-orders"}
    ]}], "globalStores": []})
}

/// Whether a `.../topology/versions` document lists `count` versions, all stored.
pub fn all_stored(versions: &Value, count: usize) -> bool {
    let list = versions["versions"].as_array().cloned().unwrap_or_default();
    list.len() == count
        && list
            .iter()
            .all(|v| v["topologyDescriptionStatus"] == "AVAILABLE")
}

/// Where Debian's `chromium` package puts the browser.
pub const CHROMIUM: &str = "/usr/bin/chromium";

// ---- HTTP -------------------------------------------------------------------------------

/// One HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A plain HTTP/1.1 client of one daemon's HTTP listener.
pub struct Http {
    base: String,
    agent: ureq::Agent,
}

impl Http {
    pub fn new(addr: std::net::SocketAddr) -> Http {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(WAIT))
            .build()
            .into();
        Http {
            base: format!("http://{addr}"),
            agent,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn get(&self, path: &str) -> Answer {
        let url = self.url(path);
        let mut response = self
            .agent
            .get(&url)
            .call()
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = response
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_string()
            .unwrap_or_else(|e| panic!("GET {url}: body: {e}"));
        Answer {
            status: response.status().as_u16(),
            content_type,
            body,
        }
    }

    /// `GET path` until `done` holds for a 200 answer (shards load, pushes arrive).
    pub fn wait_for(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let answer = self.get(path);
            if answer.status == 200 && done(&answer.json()) {
                return answer.json();
            }
            assert!(
                Instant::now() < deadline,
                "{path}: {} {}",
                answer.status,
                answer.body
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET .../topology` until its status is AVAILABLE (the push may still be on its way).
    pub fn wait_for_topology(&self, group: &str) -> Value {
        let path = format!("/api/v1/groups/{}/topology", encode(group));
        self.wait_for(&path, |doc| doc["topologyDescriptionStatus"] == "AVAILABLE")
    }
}

/// A path segment, percent-encoded.
pub fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every node name of a topology description as the API returns it (sub-topologies' nodes,
/// then global stores' sources and processors).
pub fn node_names(description: &Value) -> Vec<String> {
    let name = |node: &Value| node["name"].as_str().expect("a name").to_owned();
    let mut names: Vec<String> = Vec::new();
    for subtopology in description["subtopologies"]
        .as_array()
        .expect("subtopologies")
    {
        names.extend(
            subtopology["nodes"]
                .as_array()
                .expect("nodes")
                .iter()
                .map(name),
        );
    }
    for store in description["globalStores"]
        .as_array()
        .expect("globalStores")
    {
        names.push(name(&store["source"]));
        names.push(name(&store["processor"]));
    }
    names
}

// ---- A streams application that pushes its topology --------------------------------------

/// Output the simulator writes while it runs.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// kcoord-streams-demo (its library) running one application instance on a runtime of its
/// own until [`Sim::stop`]: it creates the source topics, joins `group` and pushes the
/// description when the coordinator asks.
pub struct Sim {
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), kcoord_streams_demo::SimError>>>,
    out: Shared,
    _file: tempfile::NamedTempFile,
}

impl Sim {
    /// Runs the application described by `description` (the writer's model, as JSON: the
    /// format of `examples/orders.json`); `extra` are more command-line arguments.
    pub fn start(bootstrap: &str, group: &str, description: &Value, extra: &[&str]) -> Sim {
        let mut file = tempfile::Builder::new()
            .prefix("kcoord-web-topology-")
            .suffix(".json")
            .tempfile()
            .expect("a temp file");
        file.write_all(description.to_string().as_bytes())
            .expect("the topology file is written");
        let path = file.path().to_str().expect("a UTF-8 temp path").to_owned();
        let mut args = vec![
            "kcoord-streams-demo",
            "--bootstrap-server",
            bootstrap,
            "--group",
            group,
            "--topology",
            &path,
        ];
        args.extend_from_slice(extra);
        let kcoord_streams_demo::Parsed::Run(options) = kcoord_streams_demo::parse(args) else {
            panic!("bad simulator arguments")
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let out = Shared::default();
        let mut writer = out.clone();
        let task = runtime.spawn(async move {
            kcoord_streams_demo::run(&options, &mut writer, async {
                let _ = stopped.await;
            })
            .await
        });
        Sim {
            runtime,
            stop: Some(stop),
            task: Some(task),
            out,
            _file: file,
        }
    }

    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.out.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// Ends the application as `kill -9` would: its member never leaves, and is fenced when
    /// its session times out.
    pub fn kill(self) {
        drop(self);
    }

    /// Stops the application (its member leaves) and checks it ran without error.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(task) = self.task.take() else {
            return;
        };
        let result = self
            .runtime
            .block_on(async { tokio::time::timeout(WAIT, task).await });
        let output = self.output();
        match result {
            Ok(Ok(Ok(()))) => {}
            other => panic!("the simulator did not stop cleanly: {other:?}\n{output}"),
        }
    }
}

/// The writer's model of a description, as the simulator reads it.
pub fn writer_json(description: &kcoord_client::topology::streams::TopologyDescription) -> Value {
    serde_json::to_value(description).expect("a description serializes")
}

// ---- Chromium ---------------------------------------------------------------------------

/// Debian's Chromium, headless, with a fresh profile; panics with what to do when it is not
/// installed (never a silent skip).
pub fn chromium() -> headless_chrome::Browser {
    let path = Path::new(CHROMIUM);
    assert!(
        path.exists(),
        "{CHROMIUM} is missing: run scripts/install-chromium (as root: it installs Debian's \
         chromium package), as scripts/test-all does"
    );
    let options = headless_chrome::LaunchOptions::default_builder()
        .path(Some(PathBuf::from(CHROMIUM)))
        .headless(true)
        // Root (CI, this machine) cannot use Chromium's sandbox.
        .sandbox(false)
        .window_size(Some((1600, 1000)))
        .idle_browser_timeout(Duration::from_secs(120))
        .args(
            [
                "--disable-gpu",
                "--no-first-run",
                // The machine's network is closed: no background connections, no updates.
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ]
            .iter()
            .map(std::ffi::OsStr::new)
            .collect(),
        )
        .build()
        .expect("launch options");
    headless_chrome::Browser::new(options)
        .unwrap_or_else(|e| panic!("cannot start {CHROMIUM}: {e}"))
}

/// Evaluates `expression` in the page until it returns a JSON value `done` accepts, or panics
/// after [`WAIT`] with `what`.
pub fn wait_in_page(
    tab: &headless_chrome::Tab,
    expression: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let value = evaluate(tab, expression);
        if done(&value) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {WAIT:?} (last: {value})"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// `expression`'s value (JSON-serializable) in the page.
pub fn evaluate(tab: &headless_chrome::Tab, expression: &str) -> Value {
    let wrapped = format!("JSON.stringify((() => {{ return {expression}; }})())");
    let result = tab
        .evaluate(&wrapped, false)
        .unwrap_or_else(|e| panic!("evaluate {expression}: {e}"));
    match result.value {
        Some(Value::String(json)) => serde_json::from_str(&json).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// Where test artifacts go: `target/test-artifacts/` of the target directory in use.
pub fn artifact_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("the artifacts directory");
    dir.join(name)
}
