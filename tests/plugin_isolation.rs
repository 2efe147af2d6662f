//! A topology description plugin that blocks, hangs, panics or fills up cannot hurt anyone
//! else (issue 13, items 5 and 8): against the real daemon in-process, with test plugins that
//! block their thread on a gate the test opens only at its end.
//!
//! The daemon runs on a runtime of its own with two workers (the CI machine's cores), the
//! test's clients on another: a daemon whose workers were stuck in the plugin could not stall
//! the test's clock, so such a stall fails the test (a request or a wait times out) instead of
//! hanging it. Every gate opens when the test ends, passed or failed, before the daemon's
//! runtime is dropped, so no thread is left blocked.

mod kip1331_support;
mod streams_support;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use async_trait::async_trait;
use kcoord_plugin_api::{
    PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Uuid,
};
use kcoord_plugins::clock::ManualClock;
use kcoord_plugins::gate::Backoff;
use kcoord_plugins::{MemoryPlugin, MemoryPluginConfig};
use kcoord_server::runtime::topology_plugin::CHECK_THREADS;
use kcoord_server::Extensions;
use kip1331_support::*;
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

const NONE: i16 = 0;
const TOPOLOGY_DESCRIPTION_UPDATE_FAILED: i16 = 135;
const NOT_STORED: i8 = 1;
const ERROR: i8 = 2;
const AVAILABLE: i8 = 3;

// ---------------------------------------------------------------------------------------------
// Runtimes

/// The daemon's runtime (two workers) and the clients' (the test's thread).
struct Runtimes {
    daemon: Runtime,
    client: Runtime,
}

fn runtimes() -> Runtimes {
    Runtimes {
        daemon: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("the daemon's runtime"),
        client: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the clients' runtime"),
    }
}

impl Runtimes {
    /// A daemon with `plugin` injected, on the daemon's runtime, with topic `t`.
    fn start(
        &self,
        plugin: Arc<dyn StreamsGroupTopologyDescriptionPlugin>,
        lines: &[&str],
    ) -> Daemon {
        let extensions = Extensions {
            plugin: Some(plugin),
            ..Default::default()
        };
        let d = self.daemon.block_on(daemon(lines, extensions));
        self.run(topics(&d, &["t"]));
        d
    }

    /// Runs `f` on the clients' runtime, failing the test if it takes longer than [`WAIT`].
    fn run<T>(&self, f: impl Future<Output = T>) -> T {
        self.client
            .block_on(async { tokio::time::timeout(WAIT, f).await })
            .expect("the daemon answered in time")
    }

    /// Stops `d` on the daemon's runtime; fails unless it has stopped within [`WAIT`].
    fn stop(&self, d: Daemon) {
        let stopping = self.daemon.spawn(d.stop());
        self.run(stopping).expect("the daemon stopped");
    }
}

// ---------------------------------------------------------------------------------------------
// The test plugin

/// Closed until opened, then open for good.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    /// Blocks the calling thread until the gate opens.
    fn pass(&self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        while !*open {
            open = self
                .opened
                .wait(open)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.opened.notify_all();
    }
}

/// What a method does for a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// `requires_topology_push`: yes until stored under the id; set stores, get reads.
    Fine,
    /// Blocks its thread until the gate opens (then as `Fine`).
    Block,
    /// Waits, without blocking its thread, for [`Misbehaving::release`].
    Hold,
    Panic,
}

/// A plugin whose methods do, per group, what the test says ([`Way`]), counting the
/// set/get/delete calls inside it at once and recording which threads ran it.
#[derive(Default)]
struct Misbehaving {
    gate: Gate,
    asks: Mutex<Option<Way>>,
    ways: Mutex<HashMap<String, Way>>,
    held: Held,
    close_blocks: AtomicBool,
    close_panics: AtomicBool,
    stored: Mutex<HashMap<String, Uuid>>,
    checks_entered: AtomicUsize,
    calls_entered: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    close_entered: AtomicBool,
    close_returned: AtomicBool,
    threads: Mutex<Vec<String>>,
}

/// Permits for [`Way::Hold`], none to start with.
struct Held(Semaphore);

impl Default for Held {
    fn default() -> Self {
        Held(Semaphore::new(0))
    }
}

/// Opens the plugin's gate when the test ends, passed or failed.
struct OpensOnDrop(Arc<Misbehaving>);

impl Drop for OpensOnDrop {
    fn drop(&mut self) {
        self.0.gate.open();
        self.0.held.0.add_permits(Semaphore::MAX_PERMITS / 2);
    }
}

impl Misbehaving {
    fn new() -> (Arc<Misbehaving>, OpensOnDrop) {
        quiet_deliberate_panics();
        let plugin = Arc::new(Misbehaving::default());
        (plugin.clone(), OpensOnDrop(plugin))
    }

    /// `requires_topology_push` does `way` for every group.
    fn asks(&self, way: Way) {
        *self.asks.lock().unwrap() = Some(way);
    }

    /// Every method does `way` for `group` (`requires_topology_push` too, unless [`asks`]).
    fn on(&self, group: &str, way: Way) {
        self.ways.lock().unwrap().insert(group.to_owned(), way);
    }

    fn release(&self, n: usize) {
        self.held.0.add_permits(n);
    }

    fn way(&self, group: &str) -> Way {
        self.ways
            .lock()
            .unwrap()
            .get(group)
            .copied()
            .unwrap_or(Way::Fine)
    }

    fn record_thread(&self) {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        self.threads.lock().unwrap().push(name);
    }

    fn threads(&self) -> Vec<String> {
        self.threads.lock().unwrap().clone()
    }

    async fn act(&self, way: Way) {
        match way {
            Way::Fine => {}
            Way::Block => self.gate.pass(),
            Way::Hold => {
                if let Ok(permit) = self.held.0.acquire().await {
                    permit.forget();
                }
            }
            Way::Panic => panic!("{DELIBERATE} (misbehaving)"),
        }
    }

    /// A set/get/delete call for `group`, counted while inside.
    async fn call(&self, group: &str) {
        self.record_thread();
        self.calls_entered.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        struct Out<'a>(&'a AtomicUsize);
        impl Drop for Out<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _out = Out(&self.running);
        self.act(self.way(group)).await;
    }
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for Misbehaving {
    fn requires_topology_push(&self, _: &RequestContext, group_id: &str, id: Uuid) -> bool {
        self.record_thread();
        self.checks_entered.fetch_add(1, Ordering::SeqCst);
        let way = self.asks.lock().unwrap().unwrap_or(self.way(group_id));
        match way {
            Way::Block => self.gate.pass(),
            Way::Panic => panic!("{DELIBERATE} (misbehaving) in requires_topology_push"),
            Way::Fine | Way::Hold => {}
        }
        self.stored.lock().unwrap().get(group_id) != Some(&id)
    }

    async fn set_topology(
        &self,
        _: &RequestContext,
        group_id: &str,
        id: Uuid,
        _: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.call(group_id).await;
        self.stored.lock().unwrap().insert(group_id.to_owned(), id);
        Ok(())
    }

    async fn delete_topology(&self, _: &RequestContext, group_id: &str) -> Result<(), PluginError> {
        self.call(group_id).await;
        self.stored.lock().unwrap().remove(group_id);
        Ok(())
    }

    async fn get_topology(
        &self,
        _: &RequestContext,
        group_id: &str,
        id: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.call(group_id).await;
        let stored = self.stored.lock().unwrap().get(group_id) == Some(&id);
        Ok(stored.then(StreamsGroupTopologyDescription::default))
    }

    fn close(&self) {
        self.close_entered.store(true, Ordering::SeqCst);
        if self.close_panics.load(Ordering::SeqCst) {
            panic!("{DELIBERATE} (misbehaving) in close");
        }
        if self.close_blocks.load(Ordering::SeqCst) {
            self.gate.pass();
        }
        self.close_returned.store(true, Ordering::SeqCst);
    }
}

/// Joins `group` with one member (heartbeat v2); the id it was asked to push, if any.
async fn joined(d: &Daemon, group: &str) -> (streams_support::Member, Option<Uuid>) {
    let mut m = member(d, group, "m1", "t").await;
    let id = beat(&mut m, 2).await.topology_description_id;
    (m, id)
}

// ---------------------------------------------------------------------------------------------
// The tests

/// A plugin whose `requires_topology_push` never returns: 16 groups (8 per daemon worker)
/// heartbeating at once all get their answers, without a push request (the specification's
/// backstop), and only the plugin's own check threads are stuck in it. Before the fix the
/// first two heartbeats took both workers and nothing was answered again.
#[test]
fn a_plugin_stuck_in_requires_topology_push_leaves_every_heartbeat_answered() {
    let rt = runtimes();
    let (plugin, _open) = Misbehaving::new();
    plugin.asks(Way::Block);
    let d = rt.start(plugin.clone(), &[]);
    let answered = rt.run(async {
        let mut members = tokio::task::JoinSet::new();
        for g in 0..16 {
            let m = member(&d, &format!("stuck-ask-{g}"), "m1", "t").await;
            members.spawn(async move {
                let mut m = m;
                let mut answers = 0;
                for _ in 0..3 {
                    let r = beat(&mut m, 2).await;
                    assert_eq!(r.topology_description_id, None, "no push requested");
                    answers += 1;
                }
                answers
            });
        }
        let mut answered = 0;
        while let Some(n) = members.join_next().await {
            answered += n.expect("a member's heartbeats");
        }
        answered
    });
    assert_eq!(answered, 16 * 3);
    let entered = plugin.checks_entered.load(Ordering::SeqCst);
    assert!(
        (1..=CHECK_THREADS).contains(&entered),
        "only the plugin's {CHECK_THREADS} check threads are stuck in it, not {entered}"
    );
    assert!(
        plugin
            .threads()
            .iter()
            .all(|t| t.starts_with("plugin-check-")),
        "{:?}",
        plugin.threads()
    );
    rt.stop(d);
}

/// At most `max.concurrent.calls` set/get/delete calls are inside the plugin at once: a
/// describe of six groups whose reads wait for the test runs them two at a time. Before the
/// fix all six were inside at once.
#[test]
fn no_more_than_max_concurrent_calls_are_inside_the_plugin_at_once() {
    let rt = runtimes();
    let (plugin, _open) = Misbehaving::new();
    let d = rt.start(
        plugin.clone(),
        &["group.streams.topology.description.max.concurrent.calls=2"],
    );
    let groups: Vec<String> = (0..6).map(|g| format!("held-{g}")).collect();
    rt.run(async {
        for g in &groups {
            joined(&d, g).await;
            plugin.on(g, Way::Hold);
        }
        let conn = d.connect().await;
        let names: Vec<String> = groups.clone();
        let describing = tokio::spawn(async move {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            describe(&conn, &names, true, 1).await
        });
        wait_until(
            || plugin.running.load(Ordering::SeqCst) == 2,
            "two reads inside the plugin",
        )
        .await;
        plugin.release(groups.len());
        let described = describing.await.expect("the describe");
        for g in &described.groups {
            assert_eq!(
                (g.error_code, g.topology_description_status),
                (NONE, NOT_STORED),
                "{}",
                g.group_id
            );
        }
    });
    assert_eq!(plugin.calls_entered.load(Ordering::SeqCst), groups.len());
    assert_eq!(plugin.max_running.load(Ordering::SeqCst), 2);
    rt.stop(d);
}

/// set/get calls that block their thread forever: a describe answers ERROR for them (the read
/// stuck inside timed out, the one that found no free slot too), a push that finds no free
/// slot is TOPOLOGY_DESCRIPTION_UPDATE_FAILED, no more than the limit ever entered the plugin,
/// and the daemon's own work goes on (heartbeats of every group). Before the fix the two
/// blocked reads took both daemon workers and nothing was answered again.
#[test]
fn calls_stuck_in_the_plugin_time_out_with_the_specifications_answers() {
    let rt = runtimes();
    let (plugin, _open) = Misbehaving::new();
    plugin.asks(Way::Fine);
    let d = rt.start(
        plugin.clone(),
        &[
            "group.streams.topology.description.max.concurrent.calls=2",
            // Ample time for the plugin's runtime to start the two reads that block.
            "group.streams.topology.description.timeout.ms=2000",
        ],
    );
    rt.run(async {
        let mut members = Vec::new();
        let mut ids = Vec::new();
        for g in ["block-0", "block-1", "block-2", "free"] {
            let (m, id) = joined(&d, g).await;
            members.push(m);
            ids.push(id.expect("asked to push"));
        }
        for g in ["block-0", "block-1", "block-2"] {
            plugin.on(g, Way::Block);
        }
        let conn = d.connect().await;
        let described = describe(&conn, &["block-0", "block-1", "block-2"], true, 1).await;
        for g in &described.groups {
            assert_eq!(
                (g.error_code, g.topology_description_status),
                (NONE, ERROR),
                "{}",
                g.group_id
            );
        }
        // Both slots are held by the two blocked reads: a push finds none.
        let pushed = push95(&conn, "free", ids[3], spec_description()).await;
        assert_eq!(pushed.error_code, TOPOLOGY_DESCRIPTION_UPDATE_FAILED);
        for m in &mut members {
            assert_eq!(beat(m, 2).await.error_code, NONE);
        }
    });
    assert_eq!(plugin.calls_entered.load(Ordering::SeqCst), 2);
    assert_eq!(plugin.max_running.load(Ordering::SeqCst), 2);
    assert!(
        plugin
            .threads()
            .iter()
            .any(|t| t.starts_with("plugin-call")),
        "{:?}",
        plugin.threads()
    );
    assert!(
        plugin
            .threads()
            .iter()
            .all(|t| t.starts_with("plugin-call") || t.starts_with("plugin-check-")),
        "{:?}",
        plugin.threads()
    );
    rt.stop(d);
}

/// A plugin whose `close` never returns: the daemon stops anyway, after
/// `group.streams.topology.description.timeout.ms`. Before the fix shutdown waited for it
/// forever.
#[test]
fn a_plugin_whose_close_hangs_does_not_keep_the_daemon_from_stopping() {
    let rt = runtimes();
    let (plugin, _open) = Misbehaving::new();
    plugin.close_blocks.store(true, Ordering::SeqCst);
    let d = rt.start(
        plugin.clone(),
        &["group.streams.topology.description.timeout.ms=300"],
    );
    rt.stop(d);
    rt.run(wait_until(
        || plugin.close_entered.load(Ordering::SeqCst),
        "close called",
    ));
    assert!(
        !plugin.close_returned.load(Ordering::SeqCst),
        "and is still stuck: the daemon did not wait for it"
    );
}

/// A plugin that panics in every method for one group: that group's heartbeats are answered
/// without a push request, its push is TOPOLOGY_DESCRIPTION_UPDATE_FAILED, its describe ERROR;
/// after all that the other group is served as usual, so the panics took down none of the
/// plugin's threads, and the daemon stops (close panics too).
#[test]
fn a_plugin_panicking_in_every_method_is_contained() {
    let rt = runtimes();
    let (plugin, _open) = Misbehaving::new();
    plugin.close_panics.store(true, Ordering::SeqCst);
    let d = rt.start(plugin.clone(), &[]);
    rt.run(async {
        let (mut panics, panic_id) = joined(&d, "panics").await;
        let panic_id = panic_id.expect("asked before the plugin turned bad");
        plugin.on("panics", Way::Panic);
        for _ in 0..4 * CHECK_THREADS {
            assert_eq!(beat(&mut panics, 2).await.topology_description_id, None);
        }
        for _ in 0..4 {
            let r = push95(&panics.conn, "panics", panic_id, spec_description()).await;
            assert_eq!(r.error_code, TOPOLOGY_DESCRIPTION_UPDATE_FAILED);
            let g = &describe(&panics.conn, &["panics"], true, 1).await.groups[0];
            assert_eq!((g.error_code, g.topology_description_status), (NONE, ERROR));
        }

        let (calm, calm_id) = joined(&d, "calm").await;
        let calm_id = calm_id.expect("the check threads still answer");
        let r = push95(&calm.conn, "calm", calm_id, spec_description()).await;
        assert_eq!(r.error_code, NONE);
        let g = &describe(&calm.conn, &["calm"], true, 1).await.groups[0];
        assert_eq!(g.topology_description_status, AVAILABLE);
    });
    rt.stop(d);
    assert!(plugin.close_entered.load(Ordering::SeqCst));
}

/// The memory plugin's `max.total.bytes`: once the stored descriptions fill it, a push is
/// TOPOLOGY_DESCRIPTION_UPDATE_FAILED and nothing is stored; the plugin asks the group again
/// after its back-off, like after any transient failure.
#[test]
fn the_memory_plugins_total_cap_refuses_a_push_as_a_transient_failure() {
    let rt = runtimes();
    let one = encoded_size(&spec_description());
    let clock = ManualClock::new(1_000_000);
    let config = MemoryPluginConfig {
        max_bytes: one,
        max_total_bytes: one,
        backoff: Backoff {
            base_ms: 1_000,
            max_ms: 8_000,
            jitter: 0.0,
            in_flight_timeout_ms: 60_000,
        },
        ..MemoryPluginConfig::default()
    };
    let plugin = Arc::new(MemoryPlugin::with_clock(config, Arc::new(clock.clone())));
    let d = rt.start(plugin.clone(), &[]);
    rt.run(async {
        let (first, id) = joined(&d, "cap-first").await;
        let r = push95(
            &first.conn,
            "cap-first",
            id.expect("asked"),
            spec_description(),
        )
        .await;
        assert_eq!(r.error_code, NONE);
        assert_eq!(plugin.stored_bytes(), one);

        let (mut second, id) = joined(&d, "cap-second").await;
        let id = id.expect("asked");
        let r = push95(&second.conn, "cap-second", id, spec_description()).await;
        assert_eq!(r.error_code, TOPOLOGY_DESCRIPTION_UPDATE_FAILED);
        assert_eq!(plugin.stored_bytes(), one, "nothing more stored");
        let g = &describe(&second.conn, &["cap-second"], true, 1)
            .await
            .groups[0];
        assert_eq!(g.topology_description_status, NOT_STORED);
        assert_eq!(beat(&mut second, 2).await.topology_description_id, None);
        clock.advance(1_000);
        assert_eq!(
            beat(&mut second, 2).await.topology_description_id,
            Some(id),
            "asked again after the back-off"
        );
    });
    rt.stop(d);
}
