//! One test per Plugin Implementation Guideline (requirements R40-R46, R21).
use std::sync::Arc;

use kcoord_plugin_api::{
    Node, NodeKind, PluginError, RequestContext, StreamsGroupTopologyDescription,
    StreamsGroupTopologyDescriptionPlugin, Subtopology, Uuid,
};

use super::{MemoryPlugin, MemoryPluginConfig};
use crate::clock::ManualClock;
use crate::gate::Backoff;

/// Counts the allocations of the current thread, so a test can show a call makes none.
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    }

    // SAFETY: every call is passed to `System` unchanged; the counter is a const-initialised
    // thread local without a destructor, so touching it never allocates.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    pub fn allocations() -> u64 {
        ALLOCATIONS.with(Cell::get)
    }
}

pub(crate) fn ctx() -> RequestContext {
    RequestContext::internal(88, 2)
}

pub(crate) fn config() -> MemoryPluginConfig {
    MemoryPluginConfig {
        ttl_ms: 60_000,
        max_bytes: 10_000,
        max_total_bytes: 1_000_000,
        backoff: Backoff {
            base_ms: 1_000,
            max_ms: 8_000,
            jitter: 0.2,
            in_flight_timeout_ms: 5_000,
        },
    }
}

fn plugin() -> (MemoryPlugin, ManualClock) {
    let clock = ManualClock::new(1_000_000);
    (
        MemoryPlugin::with_clock(config(), Arc::new(clock.clone())),
        clock,
    )
}

pub(crate) fn description(nodes: usize) -> StreamsGroupTopologyDescription {
    StreamsGroupTopologyDescription {
        subtopologies: vec![Subtopology {
            id: "0".into(),
            nodes: (0..nodes)
                .map(|i| Node {
                    name: format!("node-{i:05}"),
                    kind: NodeKind::Processor { stores: vec![] },
                    successors: vec![],
                })
                .collect(),
        }],
        global_stores: vec![],
    }
}

pub(crate) fn id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

#[test]
fn r40_requires_topology_push_touches_one_entry_whatever_the_number_of_groups() {
    let (p, _) = plugin();
    for g in 0..10_000 {
        p.requires_topology_push(&ctx(), &format!("g{g}"), id(1));
    }
    let before = p.entries_visited();
    p.requires_topology_push(&ctx(), "g42", id(1));
    assert_eq!(
        p.entries_visited() - before,
        1,
        "one call looks at one entry: O(1), no sweep on the heartbeat path"
    );
}

#[tokio::test]
async fn r40_the_steady_state_call_allocates_nothing() {
    let (p, clock) = plugin();
    let ctx = ctx();
    assert!(p.requires_topology_push(&ctx, "g", id(1)));
    p.set_topology(&ctx, "g", id(1), description(3))
        .await
        .unwrap();
    let before = counting::allocations();
    for _ in 0..1_000 {
        clock.advance(10);
        assert!(!p.requires_topology_push(&ctx, "g", id(1)));
    }
    assert_eq!(counting::allocations() - before, 0);
    // Longer than a key holds inline (24 bytes), so its key is allocated whichever shard it
    // falls in: a short id in the shard that already holds "g" (1 in 64, by the shards' random
    // seed) allocated nothing, and this assertion failed then.
    p.requires_topology_push(&ctx, "a-new-group-whose-id-is-not-inline", id(1));
    assert!(
        counting::allocations() > before,
        "a new group's key is allocated once"
    );
}

#[tokio::test]
async fn r41_inactive_groups_expire_and_heartbeats_keep_them_alive() {
    let (p, clock) = plugin();
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    // Kept alive by heartbeats past the TTL.
    for _ in 0..5 {
        clock.advance(30_000);
        assert!(!p.requires_topology_push(&ctx(), "g", id(1)));
    }
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_some());
    // Silent for a TTL: gone, and memory is reclaimed by the next sweep.
    clock.advance(60_000);
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none());
    p.requires_topology_push(&ctx(), "other", id(9));
    clock.advance(60_000);
    let _ = p.get_topology(&ctx(), "other", id(9)).await;
    assert_eq!(p.group_count(), 0);
}

#[tokio::test]
async fn r41_a_superseded_id_drops_the_old_description() {
    let (p, _) = plugin();
    p.requires_topology_push(&ctx(), "g", id(1));
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    assert!(
        p.requires_topology_push(&ctx(), "g", id(2)),
        "a new id is requested"
    );
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none());
    assert!(p.get_topology(&ctx(), "g", id(2)).await.unwrap().is_none());
    // A late push for the old id does not come back.
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none());
}

#[tokio::test]
async fn r42_size_limit_rejects_above_and_accepts_at_the_limit() {
    let (p, _) = plugin();
    let at_limit = {
        let mut n = 1;
        while description(n + 1).encoded_size() <= 10_000 {
            n += 1;
        }
        description(n)
    };
    assert!(at_limit.encoded_size() <= 10_000);
    let mut above = at_limit.clone();
    above.subtopologies[0].nodes.push(Node {
        name: "x".repeat(40),
        kind: NodeKind::Sink { topic: None },
        successors: vec![],
    });
    assert!(above.encoded_size() > 10_000);

    p.requires_topology_push(&ctx(), "big", id(1));
    let err = p
        .set_topology(&ctx(), "big", id(1), above)
        .await
        .unwrap_err();
    assert!(matches!(err, PluginError::TooLarge(_)), "{err:?}");
    assert!(
        !p.requires_topology_push(&ctx(), "big", id(1)),
        "no further requests for a too-large id"
    );

    p.requires_topology_push(&ctx(), "fits", id(1));
    p.set_topology(&ctx(), "fits", id(1), at_limit.clone())
        .await
        .unwrap();
    assert_eq!(
        p.get_topology(&ctx(), "fits", id(1)).await.unwrap(),
        Some(at_limit)
    );
}

#[test]
fn r43_one_request_per_id_while_a_push_is_in_flight() {
    let (p, clock) = plugin();
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    for _ in 0..10 {
        clock.advance(400);
        assert!(
            !p.requires_topology_push(&ctx(), "g", id(1)),
            "still in flight"
        );
    }
    // After the in-flight timeout (5 s) and the first back-off (1 s ± 20%), it asks again.
    clock.advance(1_000);
    assert!(!p.requires_topology_push(&ctx(), "g", id(1)));
    clock.advance(1_300);
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
}

#[test]
fn r44_transient_failures_back_off_exponentially_with_jitter() {
    let (p, clock) = plugin();
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    let mut waits = Vec::new();
    for _ in 0..4 {
        p.transient_failure("g");
        let mut waited = 0;
        while !p.requires_topology_push(&ctx(), "g", id(1)) {
            clock.advance(50);
            waited += 50;
            assert!(waited < 20_000, "never asked again");
        }
        waits.push(waited);
    }
    // Base 1 s doubling, capped at 8 s, each within ±20%.
    for (wait, nominal) in waits.iter().zip([1_000u64, 2_000, 4_000, 8_000]) {
        assert!(
            *wait as f64 >= nominal as f64 * 0.8 - 50.0
                && *wait as f64 <= nominal as f64 * 1.2 + 50.0,
            "{waits:?}"
        );
    }
}

#[tokio::test]
async fn r45_an_invalid_description_disables_the_id_for_good() {
    let (p, clock) = plugin();
    p.requires_topology_push(&ctx(), "g", id(1));
    let mut bad = description(2);
    bad.subtopologies.push(bad.subtopologies[0].clone());
    let err = p.set_topology(&ctx(), "g", id(1), bad).await.unwrap_err();
    assert!(matches!(err, PluginError::InvalidRequest(_)));
    // Far past every back-off and in-flight timeout (heartbeats keep the group alive).
    for _ in 0..100 {
        clock.advance(30_000);
        assert!(!p.requires_topology_push(&ctx(), "g", id(1)));
    }
    assert!(
        p.requires_topology_push(&ctx(), "g", id(2)),
        "a new topology is asked for again"
    );
}

#[tokio::test]
async fn r46_a_stored_id_is_never_requested_again() {
    let (p, clock) = plugin();
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    for _ in 0..100 {
        clock.advance(1_000);
        assert!(!p.requires_topology_push(&ctx(), "g", id(1)));
    }
}

#[tokio::test]
async fn r21_concurrent_pushes_of_the_same_id_are_idempotent() {
    let (p, _) = plugin();
    let p = Arc::new(p);
    p.requires_topology_push(&ctx(), "g", id(1));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let p = p.clone();
            tokio::spawn(async move { p.set_topology(&ctx(), "g", id(1), description(5)).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(
        p.get_topology(&ctx(), "g", id(1)).await.unwrap(),
        Some(description(5))
    );
    assert_eq!(p.group_count(), 1);
}

#[tokio::test]
async fn delete_removes_the_group() {
    let (p, _) = plugin();
    p.requires_topology_push(&ctx(), "g", id(1));
    p.set_topology(&ctx(), "g", id(1), description(1))
        .await
        .unwrap();
    p.delete_topology(&ctx(), "g").await.unwrap();
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none());
}

#[test]
fn settings_are_read_from_the_memory_keys() {
    let configs = [
        ("group.streams.topology.description.memory.ttl.ms", "5000"),
        ("group.streams.topology.description.memory.max.bytes", "123"),
        (
            "group.streams.topology.description.memory.max.total.bytes",
            "456",
        ),
        (
            "group.streams.topology.description.memory.backoff.base.ms",
            "10",
        ),
        (
            "group.streams.topology.description.memory.backoff.max.ms",
            "20",
        ),
        (
            "group.streams.topology.description.memory.inflight.timeout.ms",
            "30",
        ),
        (
            "group.streams.topology.description.memory.backoff.jitter",
            "0.1",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let c = MemoryPluginConfig::from_configs(&configs).unwrap();
    assert_eq!((c.ttl_ms, c.max_bytes, c.max_total_bytes), (5000, 123, 456));
    assert_eq!(
        c.backoff,
        Backoff {
            base_ms: 10,
            max_ms: 20,
            jitter: 0.1,
            in_flight_timeout_ms: 30
        }
    );
    let bad = [(
        "group.streams.topology.description.memory.backoff.max.ms".to_string(),
        "1".to_string(),
    )]
    .into();
    assert!(MemoryPluginConfig::from_configs(&bad).is_err());
    assert_eq!(
        MemoryPluginConfig::default().max_total_bytes,
        super::DEFAULT_MAX_TOTAL_BYTES
    );
    // A total below one description's maximum could refuse every description in between.
    let small_total = [(
        "group.streams.topology.description.memory.max.total.bytes".to_string(),
        "1000".to_string(),
    )]
    .into();
    let err = MemoryPluginConfig::from_configs(&small_total).unwrap_err();
    assert!(err.to_string().contains("must be at least"), "{err}");
}

/// All descriptions together stay within `max.total.bytes`: the push that would pass it is
/// refused as a transient failure (`Other`: TOPOLOGY_DESCRIPTION_UPDATE_FAILED on the wire) and
/// asked for again after the back-off; whatever makes a description go (delete, a new id,
/// expiry) gives its bytes back.
#[tokio::test]
async fn the_total_size_of_all_descriptions_is_capped_and_a_refusal_is_transient() {
    let size = description(3).encoded_size();
    let clock = ManualClock::new(1_000_000);
    let config = MemoryPluginConfig {
        max_total_bytes: 2 * size,
        ..config()
    };
    let p = MemoryPlugin::with_clock(config, Arc::new(clock.clone()));
    for g in ["a", "b"] {
        assert!(p.requires_topology_push(&ctx(), g, id(1)));
        p.set_topology(&ctx(), g, id(1), description(3))
            .await
            .unwrap();
    }
    assert_eq!(p.stored_bytes(), 2 * size);

    assert!(p.requires_topology_push(&ctx(), "c", id(1)));
    let err = p
        .set_topology(&ctx(), "c", id(1), description(3))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PluginError::Other(m) if m.contains(&format!("{}", 2 * size))),
        "{err:?}"
    );
    assert_eq!(p.stored_bytes(), 2 * size, "nothing stored");
    assert!(p.get_topology(&ctx(), "c", id(1)).await.unwrap().is_none());
    assert!(
        !p.requires_topology_push(&ctx(), "c", id(1)),
        "backing off, not disabled"
    );

    p.delete_topology(&ctx(), "a").await.unwrap();
    assert_eq!(p.stored_bytes(), size, "a delete gives its bytes back");
    clock.advance(10_000);
    assert!(
        p.requires_topology_push(&ctx(), "c", id(1)),
        "asked again after the back-off"
    );
    p.set_topology(&ctx(), "c", id(1), description(3))
        .await
        .unwrap();
    assert_eq!(p.stored_bytes(), 2 * size);

    assert!(p.requires_topology_push(&ctx(), "b", id(2)));
    assert_eq!(
        p.stored_bytes(),
        size,
        "a new id gives the old one's bytes back"
    );
    clock.advance(61_000);
    assert!(p.get_topology(&ctx(), "c", id(1)).await.unwrap().is_none());
    assert_eq!(p.stored_bytes(), 0, "expiry gives the bytes back");
}

#[tokio::test]
async fn r40_a_settled_group_is_answered_without_the_shard_lock() {
    let (p, _) = plugin();
    let p = Arc::new(p);
    for g in 0..10_000 {
        p.requires_topology_push(&ctx(), &format!("g{g}"), id(1));
        p.set_topology(&ctx(), &format!("g{g}"), id(1), description(1))
            .await
            .unwrap();
    }
    let before = p.entries_visited();
    assert!(!p.requires_topology_push(&ctx(), "g42", id(1)));
    assert_eq!(
        p.entries_visited() - before,
        1,
        "one settled group looked at, whatever the number of groups"
    );
    // With g42's shard locked, the steady-state call still answers (it would block otherwise).
    let _held = p.shard("g42").lock();
    let (tx, rx) = std::sync::mpsc::channel();
    let asker = Arc::clone(&p);
    std::thread::spawn(move || tx.send(asker.requires_topology_push(&ctx(), "g42", id(1))));
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_secs(30)),
        Ok(false)
    );
}

#[tokio::test]
async fn r41_settled_groups_leave_the_lock_free_path_when_their_state_changes() {
    let (p, clock) = plugin();
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    assert!(!p.requires_topology_push(&ctx(), "g", id(1)));
    // A transient failure reported for the stored id makes it pending again.
    p.transient_failure("g");
    clock.advance(config().backoff.max_ms * 2);
    assert!(
        p.requires_topology_push(&ctx(), "g", id(1)),
        "asked again after the back-off"
    );
    // A new id is asked for at once, and the old one is no longer settled.
    assert!(p.requires_topology_push(&ctx(), "g", id(2)));
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none());
    // Deleted: a later call starts over.
    p.delete_topology(&ctx(), "g").await.unwrap();
    assert!(p.requires_topology_push(&ctx(), "g", id(2)));
    // Expired while settled: the next call starts over too.
    p.set_topology(&ctx(), "g", id(2), description(3))
        .await
        .unwrap();
    clock.advance(config().ttl_ms);
    assert!(
        p.requires_topology_push(&ctx(), "g", id(2)),
        "an expired group is asked again"
    );
}

#[tokio::test]
async fn r41_keep_alives_on_the_lock_free_path_are_recorded_to_within_a_64th_of_the_ttl() {
    let (p, clock) = plugin();
    let step = config().ttl_ms / 64;
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    // Calls every step/2 for three TTLs: the group stays.
    for _ in 0..(3 * 64 * 2) {
        clock.advance(step / 2);
        assert!(!p.requires_topology_push(&ctx(), "g", id(1)));
    }
    // Silent for the TTL minus one step: still there; for the TTL: gone.
    clock.advance(config().ttl_ms - step);
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_some());
    clock.advance(step);
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none());
}

#[test]
fn r40_the_settled_table_finds_every_group_and_nothing_else() {
    use super::Settled;
    assert!(
        Settled::default().get("g").is_none(),
        "an empty snapshot holds nothing"
    );
    for n in [1, 2, 3, 7, 8, 100, 1_000] {
        let groups = (0..n)
            .map(|g| (format!("g{g}").into(), id(g as u128), g as u64))
            .collect();
        let table = Settled::new(groups);
        assert!(
            table.slots.len() >= 2 * n,
            "at most half full, so every probe ends"
        );
        for g in 0..n {
            let found = table
                .get(&format!("g{g}"))
                .expect("a settled group is found");
            assert_eq!((found.id, found.last_seen()), (id(g as u128), g as u64));
        }
        assert!(table.get("absent").is_none() && table.get(&format!("g{n}")).is_none());
        assert_eq!(table.iter().count(), n);
    }
}

#[tokio::test]
async fn r44_a_transient_failure_after_storing_asks_again_and_stores_the_next_push() {
    let (p, clock) = plugin();
    assert!(p.requires_topology_push(&ctx(), "g", id(1)));
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    p.transient_failure("g");
    assert!(
        p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_none(),
        "what the backend failed to store is not served"
    );
    clock.advance(config().backoff.max_ms * 2);
    assert!(
        p.requires_topology_push(&ctx(), "g", id(1)),
        "asked again after the back-off"
    );
    p.set_topology(&ctx(), "g", id(1), description(3))
        .await
        .unwrap();
    assert!(
        !p.requires_topology_push(&ctx(), "g", id(1)),
        "the next push is stored"
    );
    assert!(p.get_topology(&ctx(), "g", id(1)).await.unwrap().is_some());
}
