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
    let t = TopologyDescriptions::build(&config, Some(Scripted::new(Mode::Fine))).unwrap();
    assert!(t.is_enabled());
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
        include_str!("../../../../config/server.properties"),
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
