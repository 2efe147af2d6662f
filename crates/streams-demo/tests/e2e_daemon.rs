//! End to end against the real daemon, in this process: the simulator pushes, the CLI reads
//! the topology back (both dialects); push disabled pushes nothing; the client's retry rules
//! against a scripted plugin; a plugin-less daemon never asks.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use kcoord_client::admin::{DescribeStreamsGroupsOptions, NewTopic};
use kcoord_client::streams::{
    PushOutcome, StreamsMember, StreamsMemberConfig, TopologyDescriptionRequest,
};
use kcoord_client::topology::TopologyDescriptionStatus;
use kcoord_client::{Client, ClientConfig};
use kcoord_plugin_api::{
    PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use kcoord_streams_demo::{app_topology, Options};
use kcoord_wire::ErrorCode;
use tokio::sync::oneshot;

/// Bound on every wait.
const WAIT: Duration = Duration::from_secs(20);

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// A daemon running in this process on free loopback ports, assigning at once.
struct Daemon {
    handle: Option<kcoord_server::ServerHandle>,
    broker: String,
}

impl Daemon {
    async fn start(lines: &[&str], plugin: Option<Arc<ScriptedPlugin>>) -> Daemon {
        let mut text = String::from(
            "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=2\n\
             group.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n",
        );
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        let config =
            kcoord_server::Config::parse("sim-e2e", &text).unwrap_or_else(|e| panic!("{e}"));
        let plugin = plugin.map(|p| p as Arc<kcoord_server::runtime::topology_plugin::Plugin>);
        let extensions = kcoord_server::Extensions {
            plugin,
            ..Default::default()
        };
        let handle = kcoord_server::start_with(config, extensions)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let broker = handle.broker_addr().expect("a broker listener").to_string();
        Daemon {
            handle: Some(handle),
            broker,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(&self.broker, ClientConfig::new("sim-e2e"))
            .await
            .unwrap()
    }

    async fn stop(mut self) {
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(WAIT, handle.shutdown())
                .await
                .expect("the daemon stops in time");
        }
    }
}

/// The memory plugin, as `config/server.properties` configures it.
const MEMORY: &str = "group.streams.topology.description.class=memory";

/// A plugin that asks a given number of times (or until something is stored), fails stores
/// with a given error, and records every store.
#[derive(Default)]
struct ScriptedPlugin {
    /// `None`: ask while nothing is stored under the current id.
    asks_left: Mutex<Option<u32>>,
    fail_sets: Mutex<Option<PluginError>>,
    sets: Mutex<Vec<(String, Uuid, StreamsGroupTopologyDescription)>>,
    stored: Mutex<HashMap<String, (Uuid, StreamsGroupTopologyDescription)>>,
}

impl ScriptedPlugin {
    fn sets(&self, group: &str) -> Vec<(Uuid, StreamsGroupTopologyDescription)> {
        self.sets
            .lock()
            .unwrap()
            .iter()
            .filter(|(g, _, _)| g == group)
            .map(|(_, id, d)| (*id, d.clone()))
            .collect()
    }
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for ScriptedPlugin {
    fn requires_topology_push(&self, _ctx: &RequestContext, group_id: &str, id: Uuid) -> bool {
        match &mut *self.asks_left.lock().unwrap() {
            None => self
                .stored
                .lock()
                .unwrap()
                .get(group_id)
                .is_none_or(|(stored, _)| *stored != id),
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    async fn set_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.sets
            .lock()
            .unwrap()
            .push((group_id.to_string(), id, description.clone()));
        if let Some(error) = self.fail_sets.lock().unwrap().clone() {
            return Err(error);
        }
        self.stored
            .lock()
            .unwrap()
            .insert(group_id.to_string(), (id, description));
        Ok(())
    }

    async fn delete_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
    ) -> Result<(), PluginError> {
        self.stored.lock().unwrap().remove(group_id);
        Ok(())
    }

    async fn get_topology(
        &self,
        _ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        Ok(self
            .stored
            .lock()
            .unwrap()
            .get(group_id)
            .filter(|(stored, _)| *stored == id)
            .map(|(_, d)| d.clone()))
    }
}

/// Output the simulator writes while it runs, readable meanwhile.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// The simulator running on a task until [`Sim::stop`].
struct Sim {
    out: Shared,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), kcoord_streams_demo::SimError>>,
}

impl Sim {
    fn start(broker: &str, group: &str, extra: &[&str]) -> Sim {
        let example = repo_file("examples/orders.json");
        let mut args = vec![
            "kcoord-streams-demo",
            "--bootstrap-server",
            broker,
            "--group",
            group,
            "--topology",
            example.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let kcoord_streams_demo::Parsed::Run(options) = kcoord_streams_demo::parse(args) else {
            panic!("bad test arguments")
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let out = Shared::default();
        let mut writer = out.clone();
        let task = tokio::spawn(async move {
            let options: Options = options;
            kcoord_streams_demo::run(&options, &mut writer, async {
                let _ = stopped.await;
            })
            .await
        });
        Sim { out, stop, task }
    }

    async fn wait_for_line(&self, containing: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !self.out.text().contains(containing) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no line with {containing:?} within {WAIT:?}; output:\n{}",
                self.out.text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops the simulator (its members leave) and returns its output.
    async fn stop(self) -> String {
        let _ = self.stop.send(());
        let result = tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the simulator stops in time")
            .expect("no panic");
        let out = self.out.text();
        assert!(result.is_ok(), "{result:?}\n{out}");
        out
    }
}

/// `kafka-streams-groups` with `args`; (exit code, stdout, stderr).
async fn cli(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = std::iter::once("kafka-streams-groups")
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect();
    tokio::task::spawn_blocking(move || {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = kcoord_streams_groups::run(args, &mut out, &mut err);
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    })
    .await
    .expect("the CLI does not panic")
}

/// `--describe --topology` until it exits 0 (the push may still be on its way).
async fn describe_topology_until_available(broker: &str, group: &str) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (code, out, err) = cli(&[
            "--bootstrap-server",
            broker,
            "--describe",
            "--topology",
            "--group",
            group,
            "--timeout",
            "5000",
        ])
        .await;
        if code == 0 {
            return out;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still exit {code} after {WAIT:?}: {out}{err}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn kip_example_text() -> String {
    std::fs::read_to_string(repo_file(
        "crates/streams-groups/tests/fixtures/orders.topology.txt",
    ))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_r58_the_simulator_pushes_and_the_cli_prints_it_heartbeat_v2() {
    let daemon = Daemon::start(&[MEMORY], None).await;
    let sim = Sim::start(&daemon.broker, "orders-v2", &["--heartbeat-version", "2"]);
    sim.wait_for_line("stored by the coordinator").await;
    assert_eq!(
        describe_topology_until_available(&daemon.broker, "orders-v2").await,
        kip_example_text()
    );
    let out = sim.stop().await;
    assert!(out.contains("created topic orders"), "{out}");
    assert!(out.contains("pushed the topology description (UpdateStreamsGroupTopologyDescription, TopologyDescriptionId"), "{out}");
    assert!(out.contains("member-1: left the group"), "{out}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_r67_the_simulator_pushes_and_the_cli_prints_it_heartbeat_v1() {
    let daemon = Daemon::start(&[MEMORY], None).await;
    let sim = Sim::start(
        &daemon.broker,
        "orders-v1",
        &["--heartbeat-version", "1", "--members", "2"],
    );
    sim.wait_for_line("stored by the coordinator").await;
    assert_eq!(
        describe_topology_until_available(&daemon.broker, "orders-v1").await,
        kip_example_text()
    );
    let out = sim.stop().await;
    assert!(out.contains("(TopologyDescriptionRequired)"), "{out}");
    assert!(out.contains("pushed the topology description (StreamsGroupTopologyDescriptionUpdate, by topology epoch)"), "{out}");
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_r50_push_disabled_pushes_nothing_and_the_cli_says_not_stored() {
    let plugin = Arc::new(ScriptedPlugin::default());
    let daemon = Daemon::start(&[], Some(plugin.clone())).await;
    let sim = Sim::start(&daemon.broker, "orders-off", &["--no-push"]);
    sim.wait_for_line("coordinator asks for the topology description")
        .await;

    // Stepped members ask the daemon three times each, pushing disabled.
    let client = daemon.client().await;
    let config = member_config("orders-off").with_topology_description_push(false);
    let mut member = StreamsMember::new(&client, config);
    for _ in 0..3 {
        member.heartbeat_once().await.unwrap();
        assert!(
            member.topology_description_id().is_some(),
            "the coordinator asks"
        );
        assert!(member.maybe_push().is_none(), "and is ignored");
    }
    member.leave().await.unwrap();

    let (code, out, err) = cli(&[
        "--bootstrap-server",
        &daemon.broker,
        "--describe",
        "--topology",
        "--group",
        "orders-off",
    ])
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        format!("{out}{err}")
            .contains("No topology description has been recorded for group 'orders-off'."),
        "{out}{err}"
    );
    let out = sim.stop().await;
    assert!(!out.contains("pushed"), "{out}");
    assert!(plugin.sets("orders-off").is_empty());
    daemon.stop().await;
}

/// The orders example's member config for `group`, with short retry back-offs.
fn member_config(group: &str) -> StreamsMemberConfig {
    let description = app_topology::load(&repo_file("examples/orders.json")).unwrap();
    let topology = app_topology::assignment_topology(&description, group, 0).unwrap();
    StreamsMemberConfig::new(group, topology)
        .with_topology_description(&description)
        .unwrap()
        .with_retry_backoff(Duration::from_millis(10), Duration::from_millis(20))
}

async fn create_orders(client: &Client) {
    let results = client
        .create_topics(&[NewTopic::new("orders", 1, -1)], false)
        .await
        .unwrap();
    for r in results {
        assert!(
            r.result.is_ok()
                || r.result.as_ref().err().and_then(|e| e.error_code())
                    == Some(ErrorCode::TOPIC_ALREADY_EXISTS)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_r54_a_permanent_plugin_failure_is_not_retried_until_the_coordinator_asks_again() {
    let plugin = Arc::new(ScriptedPlugin::default());
    *plugin.asks_left.lock().unwrap() = Some(1);
    *plugin.fail_sets.lock().unwrap() = Some(PluginError::InvalidRequest("scripted".into()));
    let daemon = Daemon::start(&[], Some(plugin.clone())).await;
    let client = daemon.client().await;
    create_orders(&client).await;
    let mut member = StreamsMember::new(&client, member_config("perm"));
    member.heartbeat_once().await.unwrap();
    let Some(TopologyDescriptionRequest::Id(id)) = member.pending_topology_description() else {
        panic!("asked")
    };
    match member.push_once().await {
        Some(PushOutcome::Dropped { error }) => {
            assert_eq!(error.error_code(), Some(ErrorCode::INVALID_REQUEST))
        }
        other => panic!("{other:?}"),
    }
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(30)).await;
        member.heartbeat_once().await.unwrap();
        assert!(member.push_once().await.is_none(), "no retry of its own");
    }
    assert_eq!(plugin.sets("perm").len(), 1);

    // The plugin asks again (and now stores): the member pushes again, under the same id.
    *plugin.fail_sets.lock().unwrap() = None;
    *plugin.asks_left.lock().unwrap() = Some(1);
    member.heartbeat_once().await.unwrap();
    assert!(matches!(
        member.push_once().await,
        Some(PushOutcome::Stored)
    ));
    let sets = plugin.sets("perm");
    assert_eq!(sets.len(), 2);
    assert_eq!(sets[1].0, id);
    member.leave().await.unwrap();
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_r67_both_dialects_store_the_same_description_and_describe_rebuilds_predecessors() {
    let plugin = Arc::new(ScriptedPlugin::default());
    let daemon = Daemon::start(&[], Some(plugin.clone())).await;
    let client = daemon.client().await;
    create_orders(&client).await;
    for (group, version) in [("dialect-v2", 2), ("dialect-v1", 1)] {
        let mut member = StreamsMember::new(
            &client,
            member_config(group).with_heartbeat_version(version),
        );
        member.heartbeat_once().await.unwrap();
        assert!(
            matches!(member.push_once().await, Some(PushOutcome::Stored)),
            "{group}"
        );
        member.heartbeat_once().await.unwrap();
        assert_eq!(
            member.pending_topology_description(),
            None,
            "{group}: not asked again once stored"
        );
    }
    let (v2, v1) = (plugin.sets("dialect-v2"), plugin.sets("dialect-v1"));
    assert_eq!((v2.len(), v1.len()), (1, 1));
    assert_eq!(
        v2[0].1, v1[0].1,
        "the same description through key 95 and key 93"
    );
    let names: Vec<&str> = v2[0].1.subtopologies[0]
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "KSTREAM-FILTER-0000000001",
            "KSTREAM-SINK-0000000002",
            "KSTREAM-SOURCE-0000000000"
        ]
    );

    let options = DescribeStreamsGroupsOptions {
        include_topology_description: true,
        include_authorized_operations: false,
    };
    for result in client
        .describe_streams_groups(&["dialect-v2", "dialect-v1"], options)
        .await
    {
        let d = result.result.unwrap();
        assert_eq!(
            d.topology_description_status(),
            TopologyDescriptionStatus::Available
        );
        let topology = d.topology_description().unwrap();
        let filter = topology.subtopologies[0]
            .nodes
            .iter()
            .find(|n| n.name == "KSTREAM-FILTER-0000000001")
            .unwrap();
        assert_eq!(
            filter.predecessors.iter().collect::<Vec<_>>(),
            ["KSTREAM-SOURCE-0000000000"]
        );
    }
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2e_r66_a_daemon_without_a_plugin_never_asks() {
    let daemon = Daemon::start(&[], None).await;
    let client = daemon.client().await;
    create_orders(&client).await;
    let mut member = StreamsMember::new(&client, member_config("no-plugin"));
    for _ in 0..3 {
        member.heartbeat_once().await.unwrap();
        assert_eq!(member.pending_topology_description(), None);
        assert!(member.maybe_push().is_none());
    }
    let (code, out, err) = cli(&[
        "--bootstrap-server",
        &daemon.broker,
        "--describe",
        "--topology",
        "--group",
        "no-plugin",
    ])
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        format!("{out}{err}")
            .contains("No topology description has been recorded for group 'no-plugin'."),
        "{out}{err}"
    );
    member.leave().await.unwrap();
    daemon.stop().await;
}
