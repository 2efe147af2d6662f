use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::*;

/// A plugin whose every operation does what its name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Fine,
    Fail,
    Panic,
    Never,
}

struct Scripted {
    mode: Mode,
    asked: AtomicUsize,
}

impl Scripted {
    fn new(mode: Mode) -> Arc<Scripted> {
        Arc::new(Scripted {
            mode,
            asked: AtomicUsize::new(0),
        })
    }

    async fn act<T>(&self, value: T) -> Result<T, PluginError> {
        match self.mode {
            Mode::Fine => Ok(value),
            Mode::Fail => Err(PluginError::Other("the backing store is down".into())),
            Mode::Panic => panic!("scripted plugin panic"),
            Mode::Never => std::future::pending().await,
        }
    }
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for Scripted {
    fn requires_topology_push(&self, _: &PluginContext, _: &str, _: Uuid) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        match self.mode {
            Mode::Panic => panic!("scripted requires_topology_push panic"),
            _ => true,
        }
    }

    async fn set_topology(
        &self,
        _: &PluginContext,
        _: &str,
        _: Uuid,
        _: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.act(()).await
    }

    async fn delete_topology(&self, _: &PluginContext, _: &str) -> Result<(), PluginError> {
        self.act(()).await
    }

    async fn get_topology(
        &self,
        _: &PluginContext,
        _: &str,
        _: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.act(Some(StreamsGroupTopologyDescription::default()))
            .await
    }

    fn close(&self) {
        if self.mode == Mode::Panic {
            panic!("scripted close panic");
        }
    }
}

fn holder(mode: Mode, timeout_ms: u64) -> (TopologyDescriptions, Arc<Scripted>) {
    let plugin = Scripted::new(mode);
    let t = TopologyDescriptions::new(
        plugin.clone(),
        "scripted",
        Duration::from_millis(timeout_ms),
    )
    .expect("threads");
    (t, plugin)
}

fn ctx() -> PluginContext {
    PluginContext::internal(88, 2)
}

const ID: Uuid = Uuid::from_u128(7);

#[tokio::test]
async fn r7_a_panic_in_requires_topology_push_counts_as_false() {
    let (t, plugin) = holder(Mode::Panic, 1_000);
    assert!(!t.requires_push(&ctx(), "g", ID).await);
    assert!(!t.requires_push(&ctx(), "g", ID).await);
    assert_eq!(
        plugin.asked.load(Ordering::SeqCst),
        2,
        "asked every time, never cached"
    );
    let (fine, _) = holder(Mode::Fine, 1_000);
    assert!(fine.requires_push(&ctx(), "g", ID).await);
}

#[test]
fn r7_panic_warnings_are_rate_limited_per_group() {
    let limiter = WarnLimiter::new(Duration::from_secs(60));
    let t0 = Instant::now();
    assert_eq!(limiter.allow("a", t0), Some(0));
    assert_eq!(limiter.allow("a", t0 + Duration::from_secs(1)), None);
    assert_eq!(limiter.allow("a", t0 + Duration::from_secs(59)), None);
    assert_eq!(
        limiter.allow("b", t0 + Duration::from_secs(59)),
        Some(0),
        "per group"
    );
    assert_eq!(
        limiter.allow("a", t0 + Duration::from_secs(60)),
        Some(2),
        "reports what it held back"
    );
    assert_eq!(limiter.allow("a", t0 + Duration::from_secs(61)), None);
}

#[test]
fn the_rate_limiter_stays_bounded() {
    let limiter = WarnLimiter::new(Duration::from_secs(60));
    let t0 = Instant::now();
    for i in 0..WARN_LIMITER_CAPACITY + 10 {
        assert_eq!(limiter.allow(&format!("g{i}"), t0), Some(0));
    }
    assert!(limiter.last.lock().unwrap().len() <= WARN_LIMITER_CAPACITY);
    // Once the old entries are stale they make room again.
    assert_eq!(limiter.allow("late", t0 + Duration::from_secs(61)), Some(0));
    assert_eq!(limiter.last.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn calls_map_errors_panics_and_timeouts() {
    let desc = StreamsGroupTopologyDescription::default;
    let (fine, _) = holder(Mode::Fine, 5_000);
    assert_eq!(
        fine.set(ctx(), "g".into(), ID, desc()).outcome().await,
        Ok(())
    );
    assert_eq!(
        fine.get(ctx(), "g".into(), ID).outcome().await,
        Ok(Some(desc()))
    );
    assert_eq!(fine.delete(ctx(), "g".into()).outcome().await, Ok(()));

    let (fail, _) = holder(Mode::Fail, 5_000);
    assert_eq!(
        fail.set(ctx(), "g".into(), ID, desc()).outcome().await,
        Err(PluginCallError::Plugin(PluginError::Other(
            "the backing store is down".into()
        )))
    );

    let (panics, _) = holder(Mode::Panic, 5_000);
    assert_eq!(
        panics.get(ctx(), "g".into(), ID).outcome().await,
        Err(PluginCallError::Panicked)
    );
    assert_eq!(
        panics.delete(ctx(), "g".into()).outcome().await,
        Err(PluginCallError::Panicked)
    );
    // close() panicking is contained too.
    panics.close().await;

    let (never, _) = holder(Mode::Never, 50);
    assert_eq!(
        never.set(ctx(), "g".into(), ID, desc()).outcome().await,
        Err(PluginCallError::TimedOut(Duration::from_millis(50)))
    );
}

#[tokio::test]
async fn without_a_plugin_nothing_is_called() {
    let t = TopologyDescriptions::disabled();
    assert!(!t.is_enabled());
    assert_eq!(t.timeout(), None);
    assert!(!t.requires_push(&ctx(), "g", ID).await);
    assert_eq!(
        t.get(ctx(), "g".into(), ID).outcome().await,
        Err(PluginCallError::NotConfigured)
    );
    t.close().await;
}

#[test]
fn the_configuration_selects_the_plugin() {
    let config = |extra: &str| {
        Config::parse("test", &format!("node.id=1\n{extra}")).unwrap_or_else(|e| panic!("{e}"))
    };
    assert!(!TopologyDescriptions::from_config(&config(""))
        .unwrap()
        .is_enabled());
    let t = TopologyDescriptions::from_config(&config(
        "group.streams.topology.description.class=memory\ngroup.streams.topology.description.timeout.ms=1234\n",
    ))
    .unwrap();
    assert_eq!(t.timeout(), Some(Duration::from_millis(1234)));
    assert_eq!(
        t.requires_push_on(),
        Some(RequiresPushOn::HeartbeatThread),
        "the built-in memory plugin is asked on the heartbeat's thread"
    );
    // Kafka 4.4's key and the Java class name alias work too.
    let t = TopologyDescriptions::from_config(&config(
        "group.streams.topology.description.plugin.class=org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin\n",
    ))
    .unwrap();
    assert_eq!(
        t.timeout(),
        Some(Duration::from_millis(DEFAULT_TIMEOUT_MS as u64))
    );
    // The plugin's own settings reach its configure().
    let err = TopologyDescriptions::from_config(&config(
        "group.streams.topology.description.class=memory\ngroup.streams.topology.description.memory.max.bytes=lots\n",
    ))
    .unwrap_err();
    assert!(
        matches!(err, PluginStartError::Config { key, .. } if key == "group.streams.topology.description.class"),
        "{err}"
    );
    assert!(err.to_string().contains("max.bytes"), "{err}");
}

#[test]
fn an_injected_plugin_wins_over_the_configuration() {
    let config = Config::parse(
        "test",
        "node.id=1\ngroup.streams.topology.description.timeout.ms=99\n",
    )
    .unwrap();
    let t = TopologyDescriptions::build(
        &config,
        Some(Scripted::new(Mode::Fine)),
        PluginMetrics::unregistered(),
    )
    .unwrap();
    assert!(t.is_enabled());
    assert_eq!(
        t.requires_push_on(),
        Some(RequiresPushOn::PluginThreads),
        "a plugin that is not built in is asked on its own threads"
    );
    assert_eq!(t.timeout(), Some(Duration::from_millis(99)));
}

#[test]
fn an_unknown_plugin_is_a_configuration_error_naming_the_key_and_the_known_plugins() {
    let err = Config::parse(
        "test.properties",
        "node.id=1\ngroup.streams.topology.description.class=nope\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("test.properties:2: group.streams.topology.description.class: unknown topology description plugin \"nope\" (known plugins: memory (org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin"),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
    let err = Config::parse(
        "t",
        "node.id=1\ngroup.streams.topology.description.plugin.class=org.example.Nope\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "group.streams.topology.description.plugin.class: unknown topology description plugin"
        ),
        "{err}"
    );
}

#[test]
fn the_plugin_gets_every_key_and_its_own_keys_are_not_unknown() {
    let config = Config::parse(
        "t",
        "node.id=1\ngroup.streams.topology.description.class=memory\ngroup.streams.topology.description.memory.ttl.ms=5\n",
    )
    .unwrap();
    let configs = &config.streams.topology_description_configs;
    assert_eq!(configs.get("node.id").map(String::as_str), Some("1"));
    assert_eq!(
        configs
            .get("group.streams.topology.description.memory.ttl.ms")
            .map(String::as_str),
        Some("5")
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    // Without a plugin they are unknown (and ignored), and nothing is collected.
    let config = Config::parse(
        "t",
        "node.id=1\ngroup.streams.topology.description.memory.ttl.ms=5\n",
    )
    .unwrap();
    assert!(config.streams.topology_description_configs.is_empty());
    assert_eq!(config.warnings.len(), 1);
}

#[test]
fn the_shipped_default_file_enables_the_memory_plugin() {
    let config = Config::parse(
        "server.properties",
        include_str!("../../../../../config/server.properties"),
    )
    .unwrap();
    assert_eq!(
        config.streams.topology_description_plugin(),
        Some(("group.streams.topology.description.class", "memory"))
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(TopologyDescriptions::from_config(&config)
        .unwrap()
        .is_enabled());
}

// ---------------------------------------------------------------------------------------------
// Plugins that block, panic or hang: what they may hold, and what they may not.

/// Bound on every wait of these tests.
const WAIT: Duration = Duration::from_secs(20);

/// Polls `done` until it holds; panics after [`WAIT`].
async fn wait_until(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Closed until opened, then open for good.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: std::sync::Condvar,
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

/// Opens the plugin's gate when the test ends, passed or failed, so its blocked threads end.
struct OpensOnDrop(Arc<Blocking>);

impl Drop for OpensOnDrop {
    fn drop(&mut self) {
        self.0.gate.open();
    }
}

/// A plugin whose every method blocks its thread until the gate opens (or, while `panic` is
/// set, panics), recording which threads run it.
#[derive(Default)]
struct Blocking {
    gate: Gate,
    block: std::sync::atomic::AtomicBool,
    panic: std::sync::atomic::AtomicBool,
    checks_entered: AtomicUsize,
    calls_entered: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    close_entered: std::sync::atomic::AtomicBool,
    close_returned: std::sync::atomic::AtomicBool,
    threads: Mutex<Vec<String>>,
}

impl Blocking {
    fn new(block: bool) -> Arc<Blocking> {
        let plugin = Blocking::default();
        plugin.block.store(block, Ordering::SeqCst);
        Arc::new(plugin)
    }

    fn enter(&self) {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(name);
        if self.panic.load(Ordering::SeqCst) {
            panic!("blocking test plugin panics");
        }
        if self.block.load(Ordering::SeqCst) {
            self.gate.pass();
        }
    }

    fn call(&self) {
        self.calls_entered.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        // Counted out even when `enter` panics.
        struct Out<'a>(&'a AtomicUsize);
        impl Drop for Out<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _out = Out(&self.running);
        self.enter();
    }

    fn threads(&self) -> Vec<String> {
        self.threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl StreamsGroupTopologyDescriptionPlugin for Blocking {
    fn requires_topology_push(&self, _: &PluginContext, _: &str, _: Uuid) -> bool {
        self.checks_entered.fetch_add(1, Ordering::SeqCst);
        self.enter();
        true
    }

    async fn set_topology(
        &self,
        _: &PluginContext,
        _: &str,
        _: Uuid,
        _: StreamsGroupTopologyDescription,
    ) -> Result<(), PluginError> {
        self.call();
        Ok(())
    }

    async fn delete_topology(&self, _: &PluginContext, _: &str) -> Result<(), PluginError> {
        self.call();
        Ok(())
    }

    async fn get_topology(
        &self,
        _: &PluginContext,
        _: &str,
        _: Uuid,
    ) -> Result<Option<StreamsGroupTopologyDescription>, PluginError> {
        self.call();
        Ok(None)
    }

    fn close(&self) {
        self.close_entered.store(true, Ordering::SeqCst);
        self.enter();
        self.close_returned.store(true, Ordering::SeqCst);
    }
}

fn limits(timeout: Duration, max_concurrent_calls: usize) -> Limits {
    Limits {
        timeout,
        max_concurrent_calls,
        requires_push_budget: REQUIRES_PUSH_BUDGET,
        requires_push_probe_interval: PROBE_INTERVAL,
    }
}

/// No plugin method runs on the caller's thread (here the test's runtime, in the daemon a
/// runtime worker): `requires_topology_push` runs on the check threads, set/get/delete on the
/// plugin's runtime, `close` on a thread of its own.
#[tokio::test]
async fn every_plugin_method_runs_on_the_plugins_own_threads() {
    let plugin = Blocking::new(false);
    let t = TopologyDescriptions::new(plugin.clone(), "blocking", WAIT).expect("threads");
    assert!(t.requires_push(&ctx(), "g", ID).await);
    let desc = StreamsGroupTopologyDescription::default();
    assert_eq!(t.set(ctx(), "g".into(), ID, desc).outcome().await, Ok(()));
    assert_eq!(t.get(ctx(), "g".into(), ID).outcome().await, Ok(None));
    assert_eq!(t.delete(ctx(), "g".into()).outcome().await, Ok(()));
    t.close().await;
    let threads = plugin.threads();
    assert_eq!(threads.len(), 5, "{threads:?}");
    assert!(threads[0].starts_with("plugin-check-"), "{threads:?}");
    assert!(
        threads[1..4].iter().all(|t| t.starts_with("plugin-call")),
        "{threads:?}"
    );
    assert_eq!(threads[4], "plugin-close");
    assert!(plugin.close_returned.load(Ordering::SeqCst));
}

/// A `requires_topology_push` that never returns holds the check threads and nothing else:
/// questions queue behind them (here with a budget so long that a queued one would never be
/// answered within the test), and once every queue is full a question is answered "no push"
/// at once, without reaching the plugin.
#[tokio::test]
async fn a_stuck_requires_topology_push_holds_only_its_threads_and_full_queues_answer_at_once() {
    let plugin = Blocking::new(true);
    let _open = OpensOnDrop(plugin.clone());
    let long = Limits {
        requires_push_budget: Duration::from_secs(3_600),
        ..limits(Duration::from_secs(3_600), 1)
    };
    let t = TopologyDescriptions::with_limits(plugin.clone(), "blocking", long).expect("threads");
    // Each question polled once: by then it is queued (or refused) and waits for its answer.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut pending = Vec::new();
    let mut ask = |i: usize| {
        let t = t.clone();
        let mut question =
            Box::pin(async move { t.requires_push(&ctx(), &format!("g{i}"), ID).await });
        assert!(
            question.as_mut().poll(&mut cx).is_pending(),
            "queued, waiting"
        );
        pending.push(question);
    };
    for i in 0..CHECK_THREADS {
        ask(i);
    }
    wait_until(
        || plugin.checks_entered.load(Ordering::SeqCst) == CHECK_THREADS,
        "every check thread stuck in the plugin",
    )
    .await;
    for i in 0..CHECK_THREADS * CHECK_QUEUE {
        ask(CHECK_THREADS + i);
    }
    for i in 0..10 {
        let answer = tokio::time::timeout(WAIT, t.requires_push(&ctx(), &format!("late{i}"), ID))
            .await
            .expect("a question that finds every queue full is answered at once");
        assert!(!answer, "not asked: no push");
    }
    assert_eq!(
        plugin.checks_entered.load(Ordering::SeqCst),
        CHECK_THREADS,
        "only the plugin's own threads ever entered it"
    );
}

/// Once the check threads have been in the plugin for longer than the budget, they are stuck:
/// later questions are not queued behind them (where each would wait out the budget), they
/// are answered "no push" at once, on their first poll.
#[tokio::test]
async fn questions_to_stuck_check_threads_are_answered_at_once_without_queueing() {
    let plugin = Blocking::new(true);
    let _open = OpensOnDrop(plugin.clone());
    let budget = Duration::from_millis(20);
    let short = Limits {
        requires_push_budget: budget,
        // Every question is a probe: what is tested here is the stuck-thread rule alone.
        requires_push_probe_interval: Duration::ZERO,
        ..limits(Duration::from_secs(3_600), 1)
    };
    let t = TopologyDescriptions::with_limits(plugin.clone(), "blocking", short).expect("threads");
    for i in 0..CHECK_THREADS {
        assert!(!t.requires_push(&ctx(), &format!("g{i}"), ID).await);
    }
    wait_until(
        || plugin.checks_entered.load(Ordering::SeqCst) == CHECK_THREADS,
        "every check thread in the plugin",
    )
    .await;
    // Now they have been in the plugin for longer than the budget.
    tokio::time::sleep(budget * 3).await;
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    for i in 0..1_000 {
        let t = t.clone();
        let mut question =
            Box::pin(async move { t.requires_push(&ctx(), &format!("later{i}"), ID).await });
        assert_eq!(
            question.as_mut().poll(&mut cx),
            std::task::Poll::Ready(false),
            "question {i} is answered on its first poll"
        );
    }
    assert_eq!(plugin.checks_entered.load(Ordering::SeqCst), CHECK_THREADS);
}

/// A blocking plugin, asked with `budget` and `probe_interval`, whose first question (group
/// `g0`, its thread still blocked in it) missed the budget: the plugin is failing.
async fn failing(
    budget: Duration,
    probe_interval: Duration,
) -> (TopologyDescriptions, Arc<Blocking>, OpensOnDrop) {
    let plugin = Blocking::new(true);
    let open = OpensOnDrop(plugin.clone());
    let limits = Limits {
        requires_push_budget: budget,
        requires_push_probe_interval: probe_interval,
        ..limits(Duration::from_secs(3_600), 1)
    };
    let t = TopologyDescriptions::with_limits(plugin.clone(), "slow", limits).expect("threads");
    assert!(!t.requires_push(&ctx(), "g0", ID).await);
    (t, plugin, open)
}

/// Once the plugin has missed the budget, heartbeats stop asking it (each answered "no push"
/// at once, reaching no check thread) until a probe is due.
#[tokio::test]
async fn after_a_missed_budget_questions_are_not_asked_until_a_probe_is_due() {
    let (t, plugin, _open) = failing(Duration::from_millis(20), Duration::from_secs(3_600)).await;
    wait_until(
        || plugin.checks_entered.load(Ordering::SeqCst) == 1,
        "the first question in the plugin",
    )
    .await;
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    for i in 0..1_000 {
        let t = t.clone();
        let mut question =
            Box::pin(async move { t.requires_push(&ctx(), &format!("later{i}"), ID).await });
        assert_eq!(
            question.as_mut().poll(&mut cx),
            std::task::Poll::Ready(false),
            "question {i} is answered on its first poll"
        );
    }
    // A free check thread was there all along: the questions were not asked at all.
    assert_eq!(plugin.checks_entered.load(Ordering::SeqCst), 1);
}

/// A probe is handed to a check thread and its heartbeat goes on without waiting: a plugin
/// that blocks in every call delays no heartbeat after the first one.
#[tokio::test]
async fn a_probe_reaches_the_plugin_without_its_heartbeat_waiting() {
    // Every question after the first miss is a probe.
    let (t, plugin, _open) = failing(Duration::from_secs(1), Duration::ZERO).await;
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let t2 = t.clone();
    let mut probe = Box::pin(async move { t2.requires_push(&ctx(), "probe", ID).await });
    assert_eq!(
        probe.as_mut().poll(&mut cx),
        std::task::Poll::Ready(false),
        "the probe's heartbeat does not wait"
    );
    wait_until(
        || plugin.checks_entered.load(Ordering::SeqCst) == 2,
        "the probe in the plugin",
    )
    .await;
}

/// A plugin that missed the budget is asked by every heartbeat again from its first probe
/// answered in time.
#[tokio::test]
async fn a_plugin_that_answers_a_probe_in_time_is_asked_again() {
    // Long next to a plugin that returns at once, so only the blocked call misses it.
    let (t, plugin, _open) = failing(Duration::from_secs(1), Duration::from_millis(50)).await;
    // The plugin recovers; its first call stays blocked on its thread.
    plugin.block.store(false, Ordering::SeqCst);
    // Skipped questions and probes until a probe is answered (the schedule itself is tested
    // in `health`).
    let deadline = Instant::now() + WAIT;
    while !t.requires_push(&ctx(), "g", ID).await {
        assert!(Instant::now() < deadline, "no probe was answered in time");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let entered = plugin.checks_entered.load(Ordering::SeqCst);
    for g in ["a", "b", "c", "d"] {
        assert!(t.requires_push(&ctx(), g, ID).await, "asked again");
    }
    assert_eq!(plugin.checks_entered.load(Ordering::SeqCst), entered + 4);
}

/// With the default budget a heartbeat's question to a stuck plugin is "no push".
#[tokio::test]
async fn a_question_not_answered_within_the_budget_is_no_push() {
    let plugin = Blocking::new(true);
    let _open = OpensOnDrop(plugin.clone());
    let t = TopologyDescriptions::new(plugin.clone(), "blocking", WAIT).expect("threads");
    for g in ["a", "b", "c"] {
        assert!(!t.requires_push(&ctx(), g, ID).await);
    }
    assert!(plugin.checks_entered.load(Ordering::SeqCst) >= 1);
}

/// set/get/delete calls that block their thread hold at most `max.concurrent.calls` slots;
/// calls that find no slot free fail `Busy` at their deadline, calls stuck inside fail
/// `TimedOut` then; both map to the specification's failure answers in the handlers.
#[tokio::test]
async fn calls_beyond_the_limit_fail_busy_and_no_more_than_the_limit_run_at_once() {
    let plugin = Blocking::new(true);
    let _open = OpensOnDrop(plugin.clone());
    // Ample time for the plugin's runtime to start the two calls that block.
    let timeout = Duration::from_secs(2);
    let t = TopologyDescriptions::with_limits(plugin.clone(), "blocking", limits(timeout, 2))
        .expect("threads");
    let calls: Vec<_> = (0..5).map(|i| t.get(ctx(), format!("g{i}"), ID)).collect();
    wait_until(
        || plugin.calls_entered.load(Ordering::SeqCst) == 2,
        "two calls inside the plugin",
    )
    .await;
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.outcome().await);
    }
    let busy = Err(PluginCallError::Busy { limit: 2, timeout });
    assert_eq!(
        outcomes,
        [
            Err(PluginCallError::TimedOut(timeout)),
            Err(PluginCallError::TimedOut(timeout)),
            busy.clone(),
            busy.clone(),
            busy.clone(),
        ]
    );
    // Still no slot: the two stuck calls hold theirs until the plugin returns.
    assert_eq!(
        t.set(ctx(), "s".into(), ID, Default::default())
            .outcome()
            .await,
        Err(PluginCallError::Busy { limit: 2, timeout })
    );
    assert_eq!(plugin.calls_entered.load(Ordering::SeqCst), 2);
    assert_eq!(plugin.max_running.load(Ordering::SeqCst), 2);
}

/// A call that hangs without blocking its thread is dropped at its deadline, and its slot
/// serves the next call.
#[tokio::test]
async fn a_hanging_call_gives_its_slot_back_at_its_deadline() {
    // Each call's deadline is a whole timeout after the previous one's: ample time for the
    // plugin's runtime to drop the previous call and free the slot.
    let timeout = Duration::from_millis(500);
    let plugin = Scripted::new(Mode::Never);
    let t =
        TopologyDescriptions::with_limits(plugin, "never", limits(timeout, 1)).expect("threads");
    for _ in 0..3 {
        assert_eq!(
            t.get(ctx(), "g".into(), ID).outcome().await,
            Err(PluginCallError::TimedOut(timeout))
        );
    }
}

/// A `close` that never returns: shutdown waits `timeout.ms` for it, then goes on.
#[tokio::test]
async fn a_close_that_hangs_is_left_behind_after_the_timeout() {
    let plugin = Blocking::new(true);
    let _open = OpensOnDrop(plugin.clone());
    let t = TopologyDescriptions::new(plugin.clone(), "blocking", Duration::from_millis(100))
        .expect("threads");
    tokio::time::timeout(WAIT, t.close())
        .await
        .expect("close returns although the plugin's close does not");
    wait_until(
        || plugin.close_entered.load(Ordering::SeqCst),
        "close called",
    )
    .await;
    assert!(!plugin.close_returned.load(Ordering::SeqCst));
}

/// Panics in every method fail those calls only: the threads that ran them serve the next
/// calls.
#[tokio::test]
async fn panics_in_every_method_are_contained_and_the_plugins_threads_live_on() {
    let plugin = Blocking::new(false);
    plugin.panic.store(true, Ordering::SeqCst);
    let t = TopologyDescriptions::new(plugin.clone(), "panicking", WAIT).expect("threads");
    for i in 0..4 * CHECK_THREADS.max(CALL_THREADS) {
        let g = format!("g{i}");
        assert!(!t.requires_push(&ctx(), &g, ID).await);
        let desc = StreamsGroupTopologyDescription::default();
        assert_eq!(
            t.set(ctx(), g.clone(), ID, desc).outcome().await,
            Err(PluginCallError::Panicked)
        );
        assert_eq!(
            t.get(ctx(), g.clone(), ID).outcome().await,
            Err(PluginCallError::Panicked)
        );
        assert_eq!(
            t.delete(ctx(), g).outcome().await,
            Err(PluginCallError::Panicked)
        );
    }
    t.close().await;
    plugin.panic.store(false, Ordering::SeqCst);
    for i in 0..2 * CHECK_THREADS {
        assert!(
            t.requires_push(&ctx(), &format!("g{i}"), ID).await,
            "the check threads survived"
        );
    }
    assert_eq!(t.get(ctx(), "g".into(), ID).outcome().await, Ok(None));
    assert_eq!(plugin.running.load(Ordering::SeqCst), 0);
}

/// A built-in plugin known never to block is asked on the caller's thread, a panic there still
/// counting as no push.
#[tokio::test]
async fn a_plugin_asked_on_the_heartbeats_thread_runs_there_and_its_panics_are_no() {
    let plugin = Blocking::new(false);
    let t = TopologyDescriptions::running(
        plugin.clone(),
        "inline",
        Limits::with_timeout(WAIT),
        RequiresPushOn::HeartbeatThread,
    )
    .expect("threads");
    assert!(t.requires_push(&ctx(), "g", ID).await);
    let here = std::thread::current().name().unwrap_or("").to_owned();
    assert_eq!(plugin.threads(), [here]);
    plugin.panic.store(true, Ordering::SeqCst);
    assert!(!t.requires_push(&ctx(), "g", ID).await);
    // set/get/delete still run on the plugin's runtime.
    plugin.panic.store(false, Ordering::SeqCst);
    assert_eq!(t.get(ctx(), "g".into(), ID).outcome().await, Ok(None));
    assert!(plugin.threads()[2].starts_with("plugin-call"));
}
