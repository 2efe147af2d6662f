//! Private harness of the KIP-1331 end-to-end tests: the real daemon in-process on 127.0.0.1
//! port 0 (`kcoord_server::start_with`, so a test plugin, an authorizer or a load gate can be
//! injected), the test plugins, wire descriptions in both dialects, and a capture of the
//! daemon's WARN lines.
//!
//! Test plugins live here only: they are never shipped. [`TestPlugin`] is scripted per
//! operation and per group: store, fail transiently (`Other`), fail permanently
//! (`InvalidRequest` / `TooLarge`), panic, never complete, or hold until released (the slow
//! plugin, released by the test rather than by a clock, so nothing depends on timing).
#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use kcoord_client::{ClientConfig, Connection};
use kcoord_plugin_api::{
    PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use kcoord_server::Extensions;
use kcoord_wire::messages::streams_group_topology_description_update_request as kafka_push;
use kcoord_wire::messages::update_streams_group_topology_description_request as spec_push;
use kcoord_wire::messages::{
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
    UpdateStreamsGroupTopologyDescriptionRequest, UpdateStreamsGroupTopologyDescriptionResponse,
};
use tokio::sync::Semaphore;

use crate::streams_support::Member;

/// Bound on every wait of these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// Assign at once: no initial delay, no assignment interval.
pub const FAST: &[&str] = &[
    "group.streams.initial.rebalance.delay.ms=0",
    "group.streams.assignment.interval.ms=0",
];

/// The memory plugin from the configuration, as `config/server.properties` ships it.
pub const MEMORY: &str = "group.streams.topology.description.class=memory";

// ---------------------------------------------------------------------------------------------
// The daemon

/// A daemon running in this process.
pub struct Daemon {
    handle: Option<kcoord_server::ServerHandle>,
    pub broker: String,
}

/// Starts a daemon with `lines` of configuration (after [`FAST`]) and `extensions`.
pub async fn daemon(lines: &[&str], extensions: Extensions) -> Daemon {
    logs::install();
    let mut text = String::from(
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=2\n",
    );
    for line in FAST.iter().chain(lines) {
        text.push_str(line);
        text.push('\n');
    }
    let config =
        kcoord_server::Config::parse("kip1331-e2e", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start_with(config, extensions)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let broker = handle.broker_addr().expect("a broker listener").to_string();
    Daemon {
        handle: Some(handle),
        broker,
    }
}

/// A daemon with `plugin` injected.
pub async fn daemon_with(plugin: &Arc<TestPlugin>, lines: &[&str]) -> Daemon {
    let extensions = Extensions {
        plugin: Some(plugin.clone()),
        ..Default::default()
    };
    daemon(lines, extensions).await
}

impl Daemon {
    pub async fn connect(&self) -> Connection {
        connect(&self.broker).await
    }

    pub fn handle(&self) -> &kcoord_server::ServerHandle {
        self.handle.as_ref().expect("running")
    }

    /// Stops the daemon and waits for it (bounded).
    pub async fn stop(mut self) {
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(WAIT, handle.shutdown())
                .await
                .expect("the daemon did not stop in time");
        }
    }
}

pub async fn connect(addr: &str) -> Connection {
    let config = ClientConfig::new("kip1331-e2e")
        .with_request_timeout(WAIT)
        .with_connect_timeout(WAIT);
    Connection::connect(addr, config)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Members and requests

/// One heartbeat of `m` at `version` (0-2); adopts the epoch and the assignment like
/// `Member::heartbeat` (which is v1 only). Panics on an error response.
pub async fn beat(m: &mut Member, version: i16) -> StreamsGroupHeartbeatResponse {
    let response = m
        .conn
        .send(m.request(), version)
        .await
        .expect("StreamsGroupHeartbeat");
    assert_eq!(
        response.error_code, 0,
        "member {}: {:?}",
        m.id, response.error_message
    );
    m.epoch = response.member_epoch;
    let adopt =
        |tasks: &Option<Vec<kcoord_wire::messages::streams_group_heartbeat_response::TaskIds>>| {
            tasks.as_ref().map(|t| {
                t.iter()
                    .filter(|t| !t.partitions.is_empty())
                    .map(|t| {
                        (
                            t.subtopology_id.clone(),
                            t.partitions.iter().copied().collect(),
                        )
                    })
                    .collect()
            })
        };
    if let Some(active) = adopt(&response.active_tasks) {
        m.active = active;
    }
    if let Some(standby) = adopt(&response.standby_tasks) {
        m.standby = standby;
    }
    if let Some(warmup) = adopt(&response.warmup_tasks) {
        m.warmup = warmup;
    }
    m.last = Some(response.clone());
    response
}

/// A member of `group` reading `topic` (topology epoch 1) on its own connection.
pub async fn member(d: &Daemon, group: &str, id: &str, topic: &str) -> Member {
    Member::new(
        d.connect().await,
        group,
        id,
        crate::streams_support::simple_topology(topic),
    )
}

/// Creates the topics (one partition each).
pub async fn topics(d: &Daemon, names: &[&str]) {
    let conn = d.connect().await;
    let topics: Vec<(&str, i32)> = names.iter().map(|n| (*n, 1)).collect();
    crate::streams_support::create_topics(&conn, &topics).await;
}

pub async fn push95(
    conn: &Connection,
    group: &str,
    id: Uuid,
    description: spec_push::TopologyDescription,
) -> UpdateStreamsGroupTopologyDescriptionResponse {
    let request = UpdateStreamsGroupTopologyDescriptionRequest {
        group_id: group.into(),
        topology_description_id: id,
        topology_description: description,
        ..Default::default()
    };
    conn.send(request, 0)
        .await
        .expect("UpdateStreamsGroupTopologyDescription")
}

pub async fn push93(
    conn: &Connection,
    group: &str,
    member: &str,
    topology_epoch: i32,
    description: kafka_push::TopologyDescription,
) -> StreamsGroupTopologyDescriptionUpdateResponse {
    let request = StreamsGroupTopologyDescriptionUpdateRequest {
        group_id: group.into(),
        member_id: member.into(),
        topology_epoch,
        topology_description: description,
        ..Default::default()
    };
    conn.send(request, 0)
        .await
        .expect("StreamsGroupTopologyDescriptionUpdate")
}

pub async fn describe(
    conn: &Connection,
    groups: &[&str],
    include_description: bool,
    version: i16,
) -> StreamsGroupDescribeResponse {
    let request = StreamsGroupDescribeRequest {
        group_ids: groups.iter().map(|g| (*g).to_owned()).collect(),
        include_topology_description: include_description,
        ..Default::default()
    };
    conn.send(request, version)
        .await
        .expect("StreamsGroupDescribe")
}

/// The keys ApiVersions advertises.
pub async fn advertised(conn: &Connection) -> Vec<i16> {
    let versions = conn.negotiate().await.expect("ApiVersions");
    versions.ranges().map(|(key, _)| key).collect()
}

// ---------------------------------------------------------------------------------------------
// Descriptions

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The specification's appendix example (orders → filter → valid-orders) in key 95's types.
pub fn spec_description() -> spec_push::TopologyDescription {
    let node = |name: &str, t: i8, topics: &[&str], sink: Option<&str>, succ: &[&str]| {
        spec_push::TopologyNode {
            name: name.into(),
            node_type: t,
            source_topics: strings(topics),
            sink_topic: sink.map(String::from),
            stores: vec![],
            successors: strings(succ),
            ..Default::default()
        }
    };
    spec_push::TopologyDescription {
        subtopologies: vec![spec_push::Subtopology {
            subtopology_id: "0".into(),
            nodes: vec![
                node(
                    "KSTREAM-SOURCE-0000000000",
                    1,
                    &["orders"],
                    None,
                    &["KSTREAM-FILTER-0000000001"],
                ),
                node(
                    "KSTREAM-FILTER-0000000001",
                    2,
                    &[],
                    None,
                    &["KSTREAM-SINK-0000000002"],
                ),
                node("KSTREAM-SINK-0000000002", 3, &[], Some("valid-orders"), &[]),
            ],
            ..Default::default()
        }],
        global_stores: vec![spec_push::GlobalStore {
            source: node(
                "KSTREAM-SOURCE-0000000003",
                1,
                &["rates"],
                None,
                &["KTABLE-SOURCE-0000000004"],
            ),
            processor: spec_push::TopologyNode {
                stores: strings(&["rates-store"]),
                ..node("KTABLE-SOURCE-0000000004", 2, &[], None, &[])
            },
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The same description in key 93's types.
pub fn kafka_description() -> kafka_push::TopologyDescription {
    let s = spec_description();
    let node = |n: &spec_push::TopologyNode| kafka_push::TopologyDescriptionNode {
        name: n.name.clone(),
        node_type: n.node_type,
        source_topics: n.source_topics.clone(),
        sink_topic: n.sink_topic.clone(),
        stores: n.stores.clone(),
        successors: n.successors.clone(),
        ..Default::default()
    };
    kafka_push::TopologyDescription {
        subtopologies: s
            .subtopologies
            .iter()
            .map(|st| kafka_push::TopologyDescriptionSubtopology {
                subtopology_id: st.subtopology_id.clone(),
                nodes: st.nodes.iter().map(node).collect(),
                ..Default::default()
            })
            .collect(),
        global_stores: s
            .global_stores
            .iter()
            .map(|g| kafka_push::TopologyDescriptionGlobalStore {
                source: node(&g.source),
                processor: node(&g.processor),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A chain of `nodes` nodes (a source, processors, a sink) in one sub-topology, with names
/// padded to `name_len` characters.
pub fn chain_description(nodes: usize, name_len: usize) -> spec_push::TopologyDescription {
    let name = |i: usize| format!("{:0>width$}", i, width = name_len.max(8));
    let nodes: Vec<spec_push::TopologyNode> = (0..nodes)
        .map(|i| {
            let t: i8 = if i == 0 {
                1
            } else if i + 1 == nodes {
                3
            } else {
                2
            };
            spec_push::TopologyNode {
                name: name(i),
                node_type: t,
                source_topics: if t == 1 { strings(&["in"]) } else { vec![] },
                sink_topic: (t == 3).then(|| "out".to_owned()),
                successors: if i + 1 < nodes {
                    vec![name(i + 1)]
                } else {
                    vec![]
                },
                ..Default::default()
            }
        })
        .collect();
    spec_push::TopologyDescription {
        subtopologies: vec![spec_push::Subtopology {
            subtopology_id: "0".into(),
            nodes,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Bytes of the description in the flexible wire encoding: what the `memory` plugin's
/// `max.bytes` measures.
pub fn encoded_size(d: &spec_push::TopologyDescription) -> usize {
    use kcoord_wire::Encodable;
    let mut buf = bytes::BytesMut::new();
    d.encode(&mut buf, 0).expect("encodes");
    buf.len()
}

// ---------------------------------------------------------------------------------------------
// The test plugin

/// What one plugin operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Succeed (set stores, get returns what is stored under the id, delete forgets).
    Ok,
    /// `InvalidRequest` (a permanent failure).
    Invalid,
    /// `TooLarge` (a permanent failure).
    TooLarge,
    /// `Other` (a transient failure).
    Fail,
    Panic,
    /// Never complete.
    Never,
    /// Wait for [`TestPlugin::release`], then behave as `Ok` (the slow plugin).
    Hold,
}

/// What `requires_topology_push` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    Yes,
    No,
    Panic,
}

#[derive(Debug, Clone)]
pub struct Call {
    pub ctx: RequestContext,
    pub group: String,
    pub id: Option<Uuid>,
}

/// The text every failing test-plugin operation carries: tests check it is logged and never
/// sent.
pub const SECRET: &str = "backing-store-at-10.0.0.7-refused";

#[derive(Debug)]
pub struct TestPlugin {
    ask: Mutex<Ask>,
    /// Per operation ("set", "get", "delete") the default act; per group an override.
    acts: Mutex<HashMap<String, Act>>,
    group_acts: Mutex<HashMap<String, Act>>,
    stored: Mutex<HashMap<String, (Uuid, StreamsGroupTopologyDescription)>>,
    pub asks: Mutex<Vec<Call>>,
    pub sets: Mutex<Vec<(Call, StreamsGroupTopologyDescription)>>,
    pub gets: Mutex<Vec<Call>>,
    pub deletes: Mutex<Vec<Call>>,
    /// Calls currently inside get_topology (for the concurrency test).
    pub gets_in_progress: Mutex<usize>,
    pub max_gets_in_progress: Mutex<usize>,
    held: Semaphore,
    pub closed: Mutex<bool>,
}

impl TestPlugin {
    pub fn new(ask: Ask) -> Arc<TestPlugin> {
        quiet_deliberate_panics();
        Arc::new(TestPlugin {
            ask: Mutex::new(ask),
            acts: Mutex::new(HashMap::new()),
            group_acts: Mutex::new(HashMap::new()),
            stored: Mutex::new(HashMap::new()),
            asks: Mutex::new(Vec::new()),
            sets: Mutex::new(Vec::new()),
            gets: Mutex::new(Vec::new()),
            deletes: Mutex::new(Vec::new()),
            gets_in_progress: Mutex::new(0),
            max_gets_in_progress: Mutex::new(0),
            held: Semaphore::new(0),
            closed: Mutex::new(false),
        })
    }

    pub fn set_ask(&self, ask: Ask) {
        *self.ask.lock().unwrap() = ask;
    }

    /// Every `op` ("set", "get", "delete") does `act` unless its group has an override.
    pub fn on(&self, op: &str, act: Act) {
        self.acts.lock().unwrap().insert(op.to_owned(), act);
    }

    /// Every operation for `group` does `act`.
    pub fn on_group(&self, group: &str, act: Act) {
        self.group_acts
            .lock()
            .unwrap()
            .insert(group.to_owned(), act);
    }

    /// Lets `n` held calls go on.
    pub fn release(&self, n: usize) {
        self.held.add_permits(n);
    }

    fn act(&self, op: &str, group: &str) -> Act {
        if let Some(act) = self.group_acts.lock().unwrap().get(group) {
            return *act;
        }
        self.acts
            .lock()
            .unwrap()
            .get(op)
            .copied()
            .unwrap_or(Act::Ok)
    }

    /// Applies a non-Ok act: an error, a panic, never completing, or waiting to be released.
    async fn perform(&self, act: Act) -> Result<(), PluginError> {
        match act {
            Act::Ok => Ok(()),
            Act::Invalid => Err(PluginError::InvalidRequest(SECRET.into())),
            Act::TooLarge => Err(PluginError::TooLarge(SECRET.into())),
            Act::Fail => Err(PluginError::Other(SECRET.into())),
            Act::Panic => panic!("{DELIBERATE}: {SECRET}"),
            Act::Never => std::future::pending().await,
            Act::Hold => {
                let permit = self
                    .held
                    .acquire()
                    .await
                    .map_err(|e| PluginError::Other(e.to_string()))?;
                permit.forget();
                Ok(())
            }
        }
    }

    pub fn asks_for(&self, group: &str) -> Vec<Uuid> {
        self.asks
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.group == group)
            .filter_map(|c| c.id)
            .collect()
    }

    pub fn sets_for(&self, group: &str) -> Vec<(Call, StreamsGroupTopologyDescription)> {
        self.sets
            .lock()
            .unwrap()
            .iter()
            .filter(|(c, _)| c.group == group)
            .cloned()
            .collect()
    }

    pub fn gets_for(&self, group: &str) -> Vec<Call> {
        self.gets
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.group == group)
            .cloned()
            .collect()
    }

    pub fn deletes_for(&self, group: &str) -> Vec<Call> {
        self.deletes
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.group == group)
            .cloned()
            .collect()
    }

    pub fn stored(&self, group: &str) -> Option<(Uuid, StreamsGroupTopologyDescription)> {
        self.stored.lock().unwrap().get(group).cloned()
    }

    /// Waits until `set_topology` has been entered `n` times for `group`.
    pub async fn wait_for_sets(&self, group: &str, n: usize) {
        wait_until(|| self.sets_for(group).len() >= n, "set_topology calls").await;
    }
}

/// Polls `done` until it holds; panics after [`WAIT`].
pub async fn wait_until(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn call(ctx: &RequestContext, group: &str, id: Option<Uuid>) -> Call {
    Call {
        ctx: ctx.clone(),
        group: group.to_owned(),
        id,
    }
}

/// Prefix of the panics the test plugins raise on purpose.
pub const DELIBERATE: &str = "test plugin panics";

/// The test plugins' own panics print one line instead of the default hook's backtrace
/// (`RUST_BACKTRACE=1`, as in CI): resolving a first backtrace takes longer than the heartbeat's
/// 100 ms budget, and a plugin that misses the budget is no longer asked on every heartbeat.
/// Every other panic goes to the hook there was.
pub fn quiet_deliberate_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied());
            match message {
                Some(m) if m.starts_with(DELIBERATE) => eprintln!("deliberate panic: {m}"),
                _ => previous(info),
            }
        }));
    });
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for TestPlugin {
    fn requires_topology_push(&self, ctx: &RequestContext, group_id: &str, id: Uuid) -> bool {
        self.asks
            .lock()
            .unwrap()
            .push(call(ctx, group_id, Some(id)));
        let ask = *self.ask.lock().unwrap();
        match ask {
            Ask::Yes => true,
            Ask::No => false,
            Ask::Panic => panic!("{DELIBERATE} in requires_topology_push: {SECRET}"),
        }
    }

    async fn set_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
        description: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.sets
            .lock()
            .unwrap()
            .push((call(ctx, group_id, Some(id)), description.clone()));
        self.perform(self.act("set", group_id)).await?;
        self.stored
            .lock()
            .unwrap()
            .insert(group_id.to_owned(), (id, description));
        Ok(())
    }

    async fn delete_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
    ) -> Result<(), PluginError> {
        self.deletes.lock().unwrap().push(call(ctx, group_id, None));
        self.perform(self.act("delete", group_id)).await?;
        self.stored.lock().unwrap().remove(group_id);
        Ok(())
    }

    async fn get_topology(
        &self,
        ctx: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.gets
            .lock()
            .unwrap()
            .push(call(ctx, group_id, Some(id)));
        {
            let mut now = self.gets_in_progress.lock().unwrap();
            *now += 1;
            let mut max = self.max_gets_in_progress.lock().unwrap();
            *max = (*max).max(*now);
        }
        let outcome = self.perform(self.act("get", group_id)).await;
        *self.gets_in_progress.lock().unwrap() -= 1;
        outcome?;
        Ok(self
            .stored
            .lock()
            .unwrap()
            .get(group_id)
            .filter(|(stored, _)| *stored == id)
            .map(|(_, d)| d.clone()))
    }

    fn close(&self) {
        *self.closed.lock().unwrap() = true;
    }
}

// ---------------------------------------------------------------------------------------------
// The daemon's WARN lines

pub mod logs {
    use super::*;

    static BUFFER: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Sends every WARN and ERROR of this test binary to a buffer (once per binary).
    pub fn install() {
        let buffer = BUFFER
            .get_or_init(|| Arc::new(Mutex::new(Vec::new())))
            .clone();
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || Sink(buffer.clone()))
            .try_init();
    }

    /// The WARN lines that mention `needle` (a group id unique to the test).
    pub fn warnings(needle: &str) -> Vec<String> {
        let Some(buffer) = BUFFER.get() else {
            return Vec::new();
        };
        let text =
            String::from_utf8_lossy(&buffer.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
        text.lines()
            .filter(|l| l.contains(" WARN ") && l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}
