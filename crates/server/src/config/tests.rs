use super::*;

const MINIMAL: &str = "node.id=1\n";

fn ok(text: &str) -> Config {
    Config::parse("test.properties", text).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    match Config::parse("test.properties", text) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn minimal_file_gets_the_defaults() {
    let c = ok(MINIMAL);
    assert_eq!(c.node_id, 1);
    assert_eq!(
        c.process_roles,
        ProcessRoles {
            broker: true,
            controller: true
        }
    );
    assert_eq!(c.cluster_id, DEFAULT_CLUSTER_ID);
    assert_eq!(c.socket_request_max_bytes, 104_857_600);
    assert_eq!(c.connections.max_connections, i32::MAX);
    assert_eq!(c.log_level, "info");
    assert!(!c.auto_create_topics_enable);
    assert_eq!(c.controller_listener_names, vec!["CONTROLLER".to_owned()]);
    assert_eq!(c.streams, GroupCoordinatorConfig::default());
    assert_eq!(c.listeners.len(), 2);
    assert_eq!(
        (
            c.listeners[0].name.as_str(),
            c.listeners[0].port,
            c.listeners[0].kind
        ),
        ("PLAINTEXT", 9092, ListenerKind::Broker)
    );
    assert_eq!(
        (
            c.listeners[1].name.as_str(),
            c.listeners[1].port,
            c.listeners[1].kind
        ),
        ("CONTROLLER", 9093, ListenerKind::Controller)
    );
    assert!(c.warnings.is_empty());
}

#[test]
fn the_shipped_default_file_is_valid() {
    let text = include_str!("../../../../config/server.properties");
    let c = ok(text);
    assert_eq!(c.node_id, 1);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert!(c.listeners.iter().all(|l| l.bind_host == "127.0.0.1"));
    assert_eq!(
        c.http_listener,
        Some(http::HttpListener {
            host: "127.0.0.1".to_owned(),
            port: 8080
        }),
        "the demo serves /metrics on loopback"
    );
}

#[test]
fn the_example_message_of_the_brief() {
    let text = "# comment\nnode.id=1\n\n\n\n\nsocket.request.max.bytes=abc\n";
    assert_eq!(
        err(text),
        "test.properties:7: socket.request.max.bytes: expected a positive integer, got \"abc\""
    );
}

#[test]
fn missing_node_id() {
    assert_eq!(
        err("cluster.id=a2Nvb3JkLWRldi1jbHVzdA\n"),
        "test.properties: node.id: required key is missing"
    );
}

#[test]
fn syntax_errors_name_the_line() {
    assert_eq!(
        err("node.id=1\nx=\\u00zz\n"),
        "test.properties:2: malformed \\uxxxx escape"
    );
    assert_eq!(
        err("node.id=1\n\n= 5\n"),
        "test.properties:3: a value without a key"
    );
}

#[test]
fn bad_values_name_line_and_key() {
    assert_eq!(
        err("node.id=-1"),
        "test.properties:1: node.id: expected a non-negative integer, got -1"
    );
    assert_eq!(err("node.id=1\nprocess.roles=broker,worker"), "test.properties:2: process.roles: unknown role \"worker\" (expected broker and/or controller)");
    assert!(err("node.id=1\ncluster.id=short")
        .starts_with("test.properties:2: cluster.id: expected a 22-character"));
    assert_eq!(
        err("node.id=1\nmax.connections=-5"),
        "test.properties:2: max.connections: expected a non-negative integer, got -5"
    );
    assert_eq!(
        err("node.id=1\nauto.create.topics.enable=yes"),
        "test.properties:2: auto.create.topics.enable: expected true or false, got \"yes\""
    );
    assert!(err("node.id=1\nlog.level=info,[")
        .starts_with("test.properties:2: log.level: expected a level"));
    assert!(err("node.id=1\nlisteners=PLAINTEXT:9092")
        .starts_with("test.properties:2: listeners: expected NAME://host:port"));
}

/// tracing-subscriber slices a directive by its trimmed positions: whitespace after a comma
/// before a non-ASCII target panicked inside it (found by fuzzing `config_parse`).
#[test]
fn log_level_directives_are_trimmed_before_tracing_parses_them() {
    let c = ok("node.id=1\nlog.level=info,\u{c}\u{f8}=debug , warn\n");
    assert_eq!(c.log_level, "info,\u{f8}=debug,warn");
}

#[test]
fn values_are_trimmed_and_typed() {
    let c = ok("node.id = 7 \nsocket.request.max.bytes: 1024\nmax.connections 10\nauto.create.topics.enable=TRUE\nlog.level=debug,kcoord_server=trace\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n");
    assert_eq!(c.node_id, 7);
    assert_eq!(c.socket_request_max_bytes, 1024);
    assert_eq!(c.connections.max_connections, 10);
    assert!(c.auto_create_topics_enable);
    assert_eq!(c.log_level, "debug,kcoord_server=trace");
    assert_eq!(c.cluster_id, "MkU3OEVBNTcwNTJENDM2Qg");
}

#[test]
fn unknown_and_repeated_keys_are_warnings() {
    let c = ok("node.id=1\nlog.dirz=/tmp/x\nnode.id=2\n");
    assert_eq!(c.node_id, 2);
    assert_eq!(
        c.warnings,
        vec![
            ConfigWarning::Overridden {
                key: "node.id".to_owned(),
                first_line: 1,
                line: 3
            },
            ConfigWarning::UnknownKey {
                key: "log.dirz".to_owned(),
                line: 2
            },
        ]
    );
}

#[test]
fn listener_inconsistencies_name_the_key_to_fix() {
    // controller.listener.names is at its default, so the error points at listeners' line.
    assert_eq!(
        err("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092\n"),
        "test.properties:2: listeners: CONTROLLER does not appear in listeners; every controller listener must be listed there when process.roles contains controller"
    );
    assert_eq!(
        err("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092\ncontroller.listener.names=CTL\n"),
        "test.properties:3: controller.listener.names: CTL does not appear in listeners; every controller listener must be listed there when process.roles contains controller"
    );
    assert!(err("node.id=1\nlisteners=PLAINTEXT://:1,CONTROLLER://:1")
        .starts_with("test.properties:2: listeners: each listener must have a different port"));
    assert!(err("node.id=1\nadvertised.listeners=X://h:1")
        .starts_with("test.properties:2: advertised.listeners: X is not a listener name"));
    assert!(
        err("node.id=1\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT").starts_with(
            "test.properties:2: listener.security.protocol.map: listener name CONTROLLER is not in"
        )
    );
}

#[test]
fn broker_only_and_controller_only_nodes() {
    let c = ok("node.id=1\nprocess.roles=broker\nlisteners=PLAINTEXT://127.0.0.1:0\n");
    assert_eq!(c.listeners.len(), 1);
    assert_eq!(c.listeners_of(ListenerKind::Broker).count(), 1);
    let c = ok("node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:0\n");
    assert_eq!(c.listeners_of(ListenerKind::Controller).count(), 1);
    assert!(err("node.id=1\nprocess.roles=broker\n")
        .starts_with("test.properties:2: process.roles: CONTROLLER is a controller listener"));
    assert!(
        err("node.id=1\nprocess.roles=broker\nlisteners=PLAINTEXT://:1,CONTROLLER://:2")
            .starts_with("test.properties:3: listeners: CONTROLLER is a controller listener")
    );
}

#[test]
fn streams_keys_defaults_and_bounds() {
    let c = ok("node.id=1\ngroup.streams.session.timeout.ms=50000\ngroup.streams.num.standby.replicas=2\ngroup.streams.acceptable.recovery.lag=0\ngroup.streams.rack.aware.assignment.tags=zone, rack\ngroup.streams.topology.description.plugin.class=org.example.Plugin\ngroup.streams.topology.description.class=memory\n");
    assert_eq!(c.streams.session_timeout_ms, 50_000);
    assert_eq!(c.streams.num_standby_replicas, 2);
    assert_eq!(c.streams.acceptable_recovery_lag, 0);
    assert_eq!(
        c.streams.rack_aware_assignment_tags,
        vec!["zone".to_owned(), "rack".to_owned()]
    );
    assert_eq!(
        c.streams.topology_description_plugin_class.as_deref(),
        Some("org.example.Plugin")
    );
    assert_eq!(
        c.streams.topology_description_class.as_deref(),
        Some("memory")
    );

    assert_eq!(
        err("node.id=1\ngroup.streams.session.timeout.ms=30000\n"),
        "test.properties:2: group.streams.session.timeout.ms: group.streams.session.timeout.ms (30000) must be greater than or equal to group.streams.min.session.timeout.ms (45000)"
    );
    assert_eq!(
        err("node.id=1\ngroup.streams.session.timeout.ms=70000\n"),
        "test.properties:2: group.streams.session.timeout.ms: group.streams.session.timeout.ms (70000) must be less than or equal to group.streams.max.session.timeout.ms (60000)"
    );
    assert_eq!(
        err("node.id=1\ngroup.streams.num.standby.replicas=3\n"),
        "test.properties:2: group.streams.num.standby.replicas: group.streams.num.standby.replicas (3) must be less than or equal to group.streams.max.standby.replicas (2)"
    );
    // The rule is reported against the key the file sets, here the minimum.
    assert_eq!(
        err("node.id=1\n\ngroup.streams.min.heartbeat.interval.ms=6000\n"),
        "test.properties:3: group.streams.min.heartbeat.interval.ms: group.streams.heartbeat.interval.ms (5000) must be greater than or equal to group.streams.min.heartbeat.interval.ms (6000)"
    );
    assert!(err("node.id=1\ngroup.streams.max.session.timeout.ms=50000\ngroup.streams.session.timeout.ms=50000\ngroup.streams.max.heartbeat.interval.ms=60000\ngroup.streams.heartbeat.interval.ms=50000\n")
        .starts_with("test.properties:5: group.streams.heartbeat.interval.ms: group.streams.heartbeat.interval.ms (50000) must be less than"));
    assert_eq!(err("node.id=1\ngroup.streams.task.offset.interval.ms=1000"), "test.properties:2: group.streams.task.offset.interval.ms: group.streams.task.offset.interval.ms (1000) must be greater than or equal to group.streams.min.task.offset.interval.ms (15000)");
    assert_eq!(err("node.id=1\ngroup.streams.num.warmup.replicas=21"), "test.properties:2: group.streams.num.warmup.replicas: group.streams.num.warmup.replicas (21) must be less than or equal to group.streams.max.warmup.replicas (20)");
    assert_eq!(err("node.id=1\ngroup.streams.assignment.interval.ms=20000"), "test.properties:2: group.streams.assignment.interval.ms: group.streams.assignment.interval.ms (20000) must be less than or equal to group.streams.max.assignment.interval.ms (15000)");
    assert_eq!(
        err("node.id=1\ngroup.streams.max.size=0"),
        "test.properties:2: group.streams.max.size: expected a positive integer, got 0"
    );
    assert_eq!(err("node.id=1\ngroup.streams.acceptable.recovery.lag=-1"), "test.properties:2: group.streams.acceptable.recovery.lag: expected a non-negative integer, got -1");
    assert!(err("node.id=1\ngroup.streams.assignors=range").contains("unknown assignor \"range\""));
    assert!(err("node.id=1\ngroup.streams.assignors=").contains("must name at least one assignor"));
    assert!(
        err("node.id=1\ngroup.streams.rack.aware.assignment.tags=a,a")
            .contains("appears more than once")
    );
    assert!(err("node.id=1\ngroup.streams.assignor.offload.enable=1")
        .contains("expected true or false"));
}

/// The bounds the daemon puts on its topology description plugin.
#[test]
fn topology_description_plugin_limits() {
    let c = ok("node.id=1\n");
    assert_eq!(c.streams.topology_description_timeout_ms, 30_000);
    assert_eq!(c.streams.topology_description_max_concurrent_calls, 64);
    let c = ok("node.id=1\ngroup.streams.topology.description.max.concurrent.calls=3\ngroup.streams.topology.description.timeout.ms=250\n");
    assert_eq!(c.streams.topology_description_max_concurrent_calls, 3);
    assert_eq!(
        crate::runtime::topology_plugin::Limits::from_config(&c.streams),
        crate::runtime::topology_plugin::Limits {
            timeout: std::time::Duration::from_millis(250),
            max_concurrent_calls: 3,
            requires_push_budget: crate::runtime::topology_plugin::REQUIRES_PUSH_BUDGET,
            requires_push_probe_interval: crate::runtime::topology_plugin::PROBE_INTERVAL,
        }
    );
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(
        err("node.id=1\ngroup.streams.topology.description.max.concurrent.calls=0"),
        "test.properties:2: group.streams.topology.description.max.concurrent.calls: expected an integer between 1 and 1048576, got 0"
    );
    assert!(
        err("node.id=1\ngroup.streams.topology.description.max.concurrent.calls=2000000")
            .contains("expected an integer between 1 and 1048576")
    );
    assert!(
        err("node.id=1\ngroup.streams.topology.description.timeout.ms=0")
            .contains("expected a positive integer")
    );
}

#[test]
fn topic_defaults_and_coordinator_shards() {
    let c = ok(MINIMAL);
    assert_eq!(c.num_partitions, 1);
    assert_eq!(c.default_replication_factor, 1);
    assert_eq!(
        c.coordinator_shards, 50,
        "Kafka's default partition count of __consumer_offsets"
    );
    let c = ok(
        "node.id=1\nnum.partitions=6\ndefault.replication.factor=3\noffsets.topic.num.partitions=5\n",
    );
    assert_eq!(
        (
            c.num_partitions,
            c.default_replication_factor,
            c.coordinator_shards
        ),
        (6, 3, 5)
    );
    assert_eq!(
        err("node.id=1\nnum.partitions=0\n"),
        "test.properties:2: num.partitions: expected a positive integer, got 0"
    );
    assert_eq!(
        err("node.id=1\ndefault.replication.factor=40000\n"),
        "test.properties:2: default.replication.factor: expected a positive integer, got \"40000\""
    );
    assert_eq!(
        err("node.id=1\noffsets.topic.num.partitions=0\n"),
        "test.properties:2: offsets.topic.num.partitions: expected an integer between 1 and 1024, got 0"
    );
}

#[test]
fn the_group_limit_is_a_positive_integer() {
    assert_eq!(ok(MINIMAL).max_groups, 100_000);
    assert_eq!(
        ok("node.id=1\ngroup.coordinator.max.groups=12\n").max_groups,
        12
    );
    assert_eq!(
        err("node.id=1\ngroup.coordinator.max.groups=0\n"),
        "test.properties:2: group.coordinator.max.groups: expected a positive integer, got 0"
    );
}

#[test]
fn group_coordinator_threads_is_validated_and_changes_no_shard_count() {
    let c = ok("node.id=1\ngroup.coordinator.threads=8\n");
    assert_eq!(c.coordinator_shards, 50);
    assert!(
        c.warnings.is_empty(),
        "a key Kafka knows is not reported as unknown: {:?}",
        c.warnings
    );
    assert_eq!(
        err("node.id=1\ngroup.coordinator.threads=0\n"),
        "test.properties:2: group.coordinator.threads: expected a positive integer, got 0"
    );
}

#[test]
fn streams_settings_reach_the_coordinator() {
    let c = ok("node.id=1\ngroup.streams.min.session.timeout.ms=500\ngroup.streams.session.timeout.ms=600\ngroup.streams.min.heartbeat.interval.ms=100\ngroup.streams.heartbeat.interval.ms=200\ngroup.streams.initial.rebalance.delay.ms=0\ngroup.streams.num.standby.replicas=1\ngroup.streams.max.size=7\n");
    let k = c.streams.coordinator_config();
    assert_eq!(
        (
            k.session_timeout_ms,
            k.heartbeat_interval_ms,
            k.initial_rebalance_delay_ms,
            k.num_standby_replicas,
            k.max_size
        ),
        (600, 200, 0, 1, 7)
    );
    assert_eq!(k.assignment_interval_ms, 1_000);
    assert_eq!(k.task_offset_interval_ms, 60_000);
    assert_eq!(k.acceptable_recovery_lag, 10_000);
}

/// The rules' defaults in the coordinator crate are the daemon's, so the rules' own tests (run
/// at those defaults) test what the daemon runs with.
#[test]
fn streams_settings_reach_the_group_config_rules() {
    assert_eq!(
        GroupCoordinatorConfig::default().group_config_broker_settings(),
        kcoord_coordinator::GroupConfigBrokerSettings::default()
    );
    let c = ok("node.id=1\ngroup.streams.max.standby.replicas=5\ngroup.streams.num.standby.replicas=4\ngroup.streams.max.warmup.replicas=3\ngroup.streams.num.warmup.replicas=1\n");
    let s = c.streams.group_config_broker_settings();
    assert_eq!(
        (
            s.max_standby_replicas,
            s.group_defaults.num_standby_replicas,
            s.max_warmup_replicas,
            s.num_warmup_replicas
        ),
        (5, 4, 3, 1)
    );
    assert_eq!(s.group_defaults, c.streams.coordinator_config());
}

#[test]
fn offsets_retention_keys_have_kafkas_defaults_and_bounds_and_reach_the_coordinator() {
    let k = ok(MINIMAL).streams.coordinator_config();
    assert_eq!(
        (
            k.offsets_retention_ms,
            k.offsets_retention_check_interval_ms
        ),
        (10_080 * 60_000, 600_000)
    );
    let k = ok("node.id=1\noffsets.retention.minutes=2\noffsets.retention.check.interval.ms=500\n")
        .streams
        .coordinator_config();
    assert_eq!(
        (
            k.offsets_retention_ms,
            k.offsets_retention_check_interval_ms
        ),
        (120_000, 500)
    );
    for bad in [
        "offsets.retention.minutes=0",
        "offsets.retention.check.interval.ms=0",
    ] {
        let e = err(&format!("node.id=1\n{bad}\n"));
        assert!(e.contains(bad.split('=').next().unwrap_or_default()), "{e}");
    }
}

#[test]
fn load_reports_unreadable_files() {
    let e = Config::load(Path::new("/nonexistent/kcoord.properties")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/kcoord.properties: cannot read the file"),
        "{e}"
    );
}

#[test]
fn connection_limits_default_to_kafkas() {
    let c = ok(MINIMAL).connections;
    assert_eq!(
        c,
        ConnectionSettings {
            listeners: c.listeners.clone(),
            ..ConnectionSettings::default()
        }
    );
    assert_eq!(c.max_connections_per_ip, i32::MAX);
    assert_eq!(c.max_connection_creation_rate, i32::MAX);
    assert_eq!(
        c.connections_max_idle,
        Some(std::time::Duration::from_millis(600_000))
    );
    assert_eq!(
        c.request_receive_timeout,
        std::time::Duration::from_millis(30_000)
    );
    // Each listener's limits default to the broker-wide ones; the controller listener of a
    // node with broker listeners is the protected one.
    assert_eq!(
        c.listeners,
        vec![
            ListenerLimits {
                name: "PLAINTEXT".to_owned(),
                max_connections: i32::MAX,
                max_connection_creation_rate: i32::MAX,
                protected: false,
            },
            ListenerLimits {
                name: "CONTROLLER".to_owned(),
                max_connections: i32::MAX,
                max_connection_creation_rate: i32::MAX,
                protected: true,
            },
        ]
    );
}

#[test]
fn connection_limits_are_read() {
    let c = ok("node.id=1
max.connections=100
max.connection.creation.rate=50
listener.name.plaintext.max.connections=10
listener.name.controller.max.connection.creation.rate=5
max.connections.per.ip=0
max.connections.per.ip.overrides=127.0.0.1:3, localhost:4
connections.max.idle.ms=-1
socket.request.receive.timeout.ms=250
")
    .connections;
    assert_eq!(c.max_connections, 100);
    assert_eq!(c.max_connection_creation_rate, 50);
    assert_eq!(c.max_connections_per_ip, 0);
    assert_eq!(
        c.max_connections_per_ip_overrides,
        vec![("127.0.0.1".to_owned(), 3), ("localhost".to_owned(), 4)]
    );
    assert_eq!(c.connections_max_idle, None, "negative: never idle-closed");
    assert_eq!(
        c.request_receive_timeout,
        std::time::Duration::from_millis(250)
    );
    let limits: Vec<(i32, i32)> = c
        .listeners
        .iter()
        .map(|l| (l.max_connections, l.max_connection_creation_rate))
        .collect();
    assert_eq!(limits, vec![(10, 50), (100, 5)]);
    // A controller-only node has nothing to protect its listener from.
    let c = ok("node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://:9093\n").connections;
    assert!(!c.listeners[0].protected);
    // Zero idle time is Kafka's too: close as soon as idle.
    assert_eq!(
        ok("node.id=1\nconnections.max.idle.ms=0\n")
            .connections
            .connections_max_idle,
        Some(std::time::Duration::ZERO)
    );
}

#[test]
fn bad_connection_limits_are_refused() {
    for (line, message) in [
        (
            "max.connections.per.ip=-1",
            "expected a non-negative integer, got -1",
        ),
        (
            "max.connection.creation.rate=x",
            "expected a non-negative integer, got \"x\"",
        ),
        (
            "listener.name.plaintext.max.connections=-2",
            "expected a non-negative integer, got -2",
        ),
        (
            "connections.max.idle.ms=soon",
            "expected an integer, got \"soon\"",
        ),
        (
            "socket.request.receive.timeout.ms=0",
            "expected a positive integer, got 0",
        ),
        (
            "max.connections.per.ip.overrides=a/b:1",
            "max.connections.per.ip.overrides contains invalid addresses : a/b",
        ),
        (
            "max.connections.per.ip.overrides=host",
            "expected host:count, got \"host\"",
        ),
    ] {
        let key = line.split('=').next().unwrap_or_default();
        assert_eq!(
            err(&format!("node.id=1\n{line}\n")),
            format!("test.properties:2: {key}: {message}")
        );
    }
    assert_eq!(
        err("node.id=1\nmax.connections.per.ip=0\n"),
        "test.properties:2: max.connections.per.ip: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."
    );
    // A listener prefix for a listener that does not exist is an unknown key, as in Kafka.
    let c = ok("node.id=1\nlistener.name.internal.max.connections=5\n");
    assert_eq!(
        c.warnings,
        vec![ConfigWarning::UnknownKey {
            key: "listener.name.internal.max.connections".to_owned(),
            line: 2
        }]
    );
}

/// Span field filters are refused: tracing-subscriber compiles their values as regular
/// expressions (a crafted one took more than 10 s: found by fuzzing `log.level`).
#[test]
fn log_level_refuses_span_field_filters() {
    assert!(
        err("node.id=1\nlog.level=info,kcoord_server[conn{peer=.*}]=debug\n")
            .contains("span field filters")
    );
    assert!(super::log_filter("info,kcoord_server[conn]=debug").is_ok());
}

/// Field filters that break tracing-subscriber's ordering assertion (found by fuzzing; the
/// input is a config_parse seed) are refused before the library sees them.
#[test]
fn a_log_level_the_filter_library_panics_on_is_a_configuration_error() {
    let bytes =
        include_bytes!("../../../../fuzz/seeds/config_parse/regression-log-level-ordering-assert");
    let text = super::properties::decode_file_bytes(bytes);
    let parsed = std::panic::catch_unwind(|| Config::parse("fuzz", &text).map(|_| ()));
    assert!(parsed.is_ok(), "Config::parse panicked");
}

#[test]
fn the_http_listener_is_off_unless_set_and_its_address_is_checked() {
    assert_eq!(ok(MINIMAL).http_listener, None);
    let http = ok("node.id=1\nhttp.listener=127.0.0.1:0\n").http_listener;
    assert_eq!(
        http,
        Some(http::HttpListener {
            host: "127.0.0.1".to_owned(),
            port: 0
        })
    );
    assert_eq!(
        err("node.id=1\nhttp.listener=localhost"),
        "test.properties:2: http.listener: expected host:port (e.g. 127.0.0.1:8080), got \"localhost\""
    );
    assert_eq!(
        err("node.id=1\nhttp.listener=127.0.0.1:70000"),
        "test.properties:2: http.listener: the port must be between 0 and 65535, got \"127.0.0.1:70000\""
    );
    assert_eq!(
        err("node.id=1\nlisteners=PLAINTEXT://:9092,CONTROLLER://:9093\nhttp.listener=:9093"),
        "test.properties:3: http.listener: port 9093 is already used by listener CONTROLLER"
    );
}
