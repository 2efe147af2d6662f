//! KIP-1331: what the topology description plugin adds to every heartbeat (issue 4) — the
//! steady-state `requires_topology_push` of the `memory` plugin (the group's description is
//! stored under the current id, so the answer is "no"), alone, with two threads asking at once
//! (the daemon's two workers), and behind the daemon's guard, which since issue 13 hands the
//! question to the plugin's own check threads and waits for the answer: one question at a
//! time (the round trip's latency), and 64 tasks on two runtime workers asking at once (what a
//! loaded daemon pays per heartbeat), and asked on the heartbeat's own thread as the daemon asks
//! the built-in `memory` plugin; plus building the request context the plugin is handed.
//!
//! The two-thread lines are wall time per call on each thread: on a VM whose cores other
//! processes keep busy the threads seldom overlap, so they show contention only on a quiet
//! machine.
//!
//! Run: `cargo bench --bench kip1331_requires_push`
use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kcoord_plugin_api::{
    Node, NodeKind, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Subtopology, Uuid,
};
use kcoord_plugins::clock::SystemClock;
use kcoord_plugins::{MemoryPlugin, MemoryPluginConfig};
use kcoord_server::config::{ListenerKind, SecurityProtocol};
use kcoord_server::rpc::plugin_context::{self, plugin_context};
use kcoord_server::runtime::cluster::ListenerInfo;
use kcoord_server::runtime::topology_plugin::{
    Limits, PushAnswer, RequiresPushOn, TopologyDescriptions,
};
use kcoord_server::state::{RequestContext as ServerContext, ServerState};
use kcoord_server::Config;
use kcoord_wire::messages::RequestHeader;

const ID: Uuid = Uuid::from_u128(0x1331);

fn description() -> StreamsGroupTopologyDescription {
    let node = |name: &str, kind| Node {
        name: name.into(),
        kind,
        successors: vec![],
    };
    StreamsGroupTopologyDescription {
        subtopologies: vec![Subtopology {
            id: "0".into(),
            nodes: vec![
                node(
                    "KSTREAM-SOURCE-0000000000",
                    NodeKind::Source {
                        topics: vec!["orders".into()],
                    },
                ),
                node(
                    "KSTREAM-SINK-0000000001",
                    NodeKind::Sink {
                        topic: Some("valid-orders".into()),
                    },
                ),
            ],
        }],
        global_stores: vec![],
    }
}

fn group_names(n: usize) -> Vec<String> {
    (0..n).map(|g| format!("orders-app-{g:05}")).collect()
}

/// A `memory` plugin (system clock, default settings) holding a description for each group
/// under `ID`: every further `requires_topology_push(.., ID)` is the steady state.
fn stored_plugin(groups: &[String]) -> Arc<MemoryPlugin> {
    let plugin = Arc::new(MemoryPlugin::with_clock(
        MemoryPluginConfig::default(),
        Arc::new(SystemClock),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let ctx = RequestContext::internal(88, 2);
    for g in groups {
        assert!(
            plugin.requires_topology_push(&ctx, g, ID),
            "a new group is asked for"
        );
        runtime
            .block_on(plugin.set_topology(&ctx, g, ID, description()))
            .expect("stored");
        assert!(
            !plugin.requires_topology_push(&ctx, g, ID),
            "stored: not asked again"
        );
    }
    plugin
}

/// `iters` calls on each of two threads at once, each cycling through its own `groups`; the
/// wall time of the slower thread (per call, what each worker sees).
fn two_threads(plugin: &Arc<MemoryPlugin>, groups: [&[String]; 2], iters: u64) -> Duration {
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let handles = groups.map(|mine| {
            let (plugin, barrier) = (plugin, &barrier);
            s.spawn(move || {
                let ctx = RequestContext::internal(88, 2);
                barrier.wait();
                let start = Instant::now();
                for i in 0..iters as usize {
                    black_box(plugin.requires_topology_push(&ctx, &mine[i % mine.len()], ID));
                }
                start.elapsed()
            })
        });
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .max()
            .unwrap_or_default()
    })
}

/// `iters` guarded questions from 64 tasks on `runtime` at once, each cycling through its
/// share of `groups`; the wall time of the whole (per question: what a loaded daemon pays).
fn concurrent_asks(
    runtime: &tokio::runtime::Runtime,
    guarded: &TopologyDescriptions,
    groups: &Arc<Vec<String>>,
    iters: u64,
) -> Duration {
    const TASKS: u64 = 64;
    let start = Instant::now();
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for t in 0..TASKS {
            let (guarded, groups) = (guarded.clone(), Arc::clone(groups));
            let n = iters / TASKS + u64::from(t < iters % TASKS);
            tasks.spawn(async move {
                let ctx = RequestContext::internal(88, 2);
                for i in 0..n as usize {
                    let g = &groups[(t as usize * 131 + i) % groups.len()];
                    black_box(guarded.requires_push(&ctx, g, ID).await);
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    });
    start.elapsed()
}

fn requires_push(c: &mut Criterion) {
    let ctx = RequestContext::internal(88, 2);
    let mut group = c.benchmark_group("kip1331_requires_push");

    let one = group_names(1);
    let plugin = stored_plugin(&one);
    group.bench_function("memory_stored_1_group", |b| {
        b.iter(|| plugin.requires_topology_push(black_box(&ctx), black_box(&one[0]), black_box(ID)))
    });

    let many = group_names(10_000);
    let plugin = stored_plugin(&many);
    let mut i = 0;
    group.bench_function("memory_stored_10000_groups", |b| {
        b.iter(|| {
            i = (i + 1) % many.len();
            plugin.requires_topology_push(black_box(&ctx), black_box(&many[i]), black_box(ID))
        })
    });

    let (left, right) = many.split_at(many.len() / 2);
    group.bench_function("memory_stored_2_threads_distinct_groups", |b| {
        b.iter_custom(|iters| two_threads(&plugin, [left, right], iters))
    });
    group.bench_function("memory_stored_2_threads_same_group", |b| {
        b.iter_custom(|iters| two_threads(&plugin, [&many[..1], &many[..1]], iters))
    });

    let plugin = stored_plugin(&one);
    let guarded =
        TopologyDescriptions::new(plugin, "memory", Duration::from_secs(30)).expect("threads");
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    group.bench_function("guard_memory_stored_1_group_round_trip", |b| {
        b.iter(|| {
            current.block_on(guarded.requires_push(
                black_box(&ctx),
                black_box(&one[0]),
                black_box(ID),
            ))
        })
    });
    let workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let plugin = stored_plugin(&many);
    let loaded =
        TopologyDescriptions::new(plugin, "memory", Duration::from_secs(30)).expect("threads");
    let many = Arc::new(many);
    group.bench_function("guard_memory_stored_64_tasks_2_workers", |b| {
        b.iter_custom(|iters| concurrent_asks(&workers, &loaded, &many, iters))
    });

    // The daemon's side: a heartbeat's request context, as the handler has it.
    let config = Config::parse(
        "bench",
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n",
    )
    .expect("a valid config");
    let listener = ListenerInfo {
        name: "PLAINTEXT".into(),
        kind: ListenerKind::Broker,
        security_protocol: SecurityProtocol::Plaintext,
        local_addr: SocketAddr::from(([127, 0, 0, 1], 9092)),
        advertised_host: "localhost".into(),
        advertised_port: 9092,
        upstream_broker: None,
    };
    let (server, _background) = ServerState::build(Arc::new(config), vec![listener.clone()]);
    let header = RequestHeader {
        request_api_key: 88,
        request_api_version: 2,
        correlation_id: 7,
        client_id: Some("orders-app-StreamThread-1-consumer".into()),
        ..Default::default()
    };
    let anonymous = kcoord_server::security::KafkaPrincipal::anonymous();
    let rctx = ServerContext {
        server: &server,
        listener: &listener,
        principal: &anonymous,
        peer: SocketAddr::from(([127, 0, 0, 1], 40000)),
        client_host: "/127.0.0.1",
        header: &header,
        mute: None,
    };
    group.bench_function("context_plugin_context", |b| {
        b.iter(|| plugin_context(black_box(&rctx)))
    });
    // The heartbeat handler's whole plugin step, one at a time: the built-in plugin asked on
    // the heartbeat's thread (what the daemon does for `memory`), then on the check threads.
    let inline = TopologyDescriptions::running(
        stored_plugin(&one),
        "memory",
        Limits::with_timeout(Duration::from_secs(30)),
        RequiresPushOn::HeartbeatThread,
    )
    .expect("threads");
    group.bench_function(
        "handler_guard_requires_push_for_memory_stored_inline",
        |b| {
            b.iter(|| {
                // Answered on this thread: known at once, nothing to wait for.
                match plugin_context::requires_push(
                    &inline,
                    black_box(&rctx),
                    black_box(&one[0]),
                    black_box(ID),
                ) {
                    PushAnswer::Known(answer) => answer,
                    PushAnswer::Waiting(_) => unreachable!("asked on this thread"),
                }
            })
        },
    );
    group.bench_function("handler_guard_requires_push_for_memory_stored", |b| {
        b.iter(|| {
            current.block_on(plugin_context::requires_push(
                &guarded,
                black_box(&rctx),
                black_box(&one[0]),
                black_box(ID),
            ))
        })
    });
    group.bench_function("clock_system_now_ms", |b| {
        b.iter(|| kcoord_plugins::clock::Clock::now_ms(black_box(&SystemClock)))
    });

    group.finish();
}

criterion_group!(benches, requires_push);
criterion_main!(benches);
