//! The `file` plugin: what survives a restart, what the limits and the TTL remove from disk,
//! and what a torn file or a failing disk does.
use std::path::Path;
use std::sync::Arc;

use kcoord_plugin_api::{
    PluginError, StreamsGroupTopologyDescription, StreamsGroupTopologyDescriptionPlugin, Uuid,
};

use super::{FilePlugin, FilePluginConfig};
use crate::clock::ManualClock;
use crate::memory::tests::{config as limits, ctx, description, id};

fn config(dir: &Path) -> FilePluginConfig {
    FilePluginConfig {
        limits: limits(),
        dir: dir.to_path_buf(),
        history_count: 3,
    }
}

fn open(config: FilePluginConfig, clock: &ManualClock) -> FilePlugin {
    FilePlugin::open(config, Arc::new(clock.clone())).unwrap()
}

/// A plugin on a new directory, with the default test settings.
fn fresh() -> (tempfile::TempDir, ManualClock, FilePlugin) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let plugin = open(config(dir.path()), &clock);
    (dir, clock, plugin)
}

/// What a member does when asked: the coordinator asks about `id`, the member pushes.
async fn push(
    p: &FilePlugin,
    group: &str,
    id: Uuid,
    d: StreamsGroupTopologyDescription,
) -> Result<(), PluginError> {
    assert!(
        p.requires_topology_push(&ctx(), group, id),
        "{group} {id} asked"
    );
    p.set_topology(&ctx(), group, id, d).await
}

fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn a_restart_keeps_the_descriptions_and_their_history() {
    let (dir, clock, p) = fresh();
    push(&p, "app", id(1), description(2)).await.unwrap();
    clock.advance(10);
    push(&p, "app", id(2), description(3)).await.unwrap();
    push(&p, "other", id(9), description(1)).await.unwrap();
    drop(p);

    let p = open(config(dir.path()), &clock);
    assert_eq!(p.versions("app"), [id(1), id(2)]);
    for (n, nodes) in [(1, 2), (2, 3)] {
        let got = p.get_topology(&ctx(), "app", id(n)).await.unwrap();
        assert_eq!(got, Some(description(nodes)), "version {n}");
    }
    assert_eq!(
        p.get_topology(&ctx(), "other", id(9)).await.unwrap(),
        Some(description(1))
    );
    // The stored id is not asked for again; a new one is.
    assert!(!p.requires_topology_push(&ctx(), "app", id(2)));
    assert!(p.requires_topology_push(&ctx(), "app", id(3)));
}

#[tokio::test]
async fn a_group_keeps_history_count_versions_and_the_oldest_go_first() {
    let (dir, clock, p) = fresh();
    for n in 1..=5 {
        clock.advance(10);
        push(&p, "app", id(n), description(n as usize))
            .await
            .unwrap();
    }
    assert_eq!(p.versions("app"), [id(3), id(4), id(5)]);
    assert_eq!(files(dir.path()).len(), 3);
    assert_eq!(p.get_topology(&ctx(), "app", id(2)).await.unwrap(), None);
    assert_eq!(
        p.get_topology(&ctx(), "app", id(3)).await.unwrap(),
        Some(description(3))
    );
}

#[tokio::test]
async fn groups_not_heard_from_for_the_ttl_leave_the_disk() {
    let (dir, clock, p) = fresh();
    push(&p, "gone", id(1), description(2)).await.unwrap();
    clock.advance(10);
    push(&p, "gone", id(2), description(2)).await.unwrap();
    push(&p, "alive", id(5), description(2)).await.unwrap();
    for _ in 0..4 {
        clock.advance(limits().ttl_ms / 4);
        assert!(!p.requires_topology_push(&ctx(), "alive", id(5)));
    }
    assert_eq!(p.get_topology(&ctx(), "gone", id(1)).await.unwrap(), None);
    assert_eq!(p.versions("gone"), Vec::<Uuid>::new());
    assert_eq!(
        files(dir.path()).len(),
        1,
        "only the live group's file is left"
    );
    assert_eq!(
        p.get_topology(&ctx(), "alive", id(5)).await.unwrap(),
        Some(description(2))
    );
    // And after a restart.
    drop(p);
    assert_eq!(
        open(config(dir.path()), &clock).versions("gone"),
        Vec::<Uuid>::new()
    );
}

#[tokio::test]
async fn a_description_over_max_bytes_is_too_large_and_never_written() {
    let (dir, _clock, p) = fresh();
    let err = push(&p, "app", id(1), description(1_000))
        .await
        .unwrap_err();
    assert!(matches!(err, PluginError::TooLarge(_)), "{err:?}");
    assert!(files(dir.path()).is_empty());
    assert!(
        !p.requires_topology_push(&ctx(), "app", id(1)),
        "never asked again"
    );
}

#[tokio::test]
async fn max_total_bytes_bounds_the_files_and_superseded_versions_make_room_first() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    // Room for three and a half descriptions of 20 nodes, as files.
    let probe = tempfile::tempdir().unwrap();
    let one = open(config(probe.path()), &clock);
    push(&one, "x", id(99), description(20)).await.unwrap();
    let max = one.stored_bytes() * 7 / 2;
    let mut c = config(dir.path());
    c.history_count = 10;
    c.limits.max_total_bytes = max;
    let p = open(c.clone(), &clock);
    for n in 1..=3 {
        clock.advance(10);
        push(&p, "a", id(n), description(20)).await.unwrap();
    }
    clock.advance(10);
    push(&p, "b", id(10), description(20)).await.unwrap();
    // b's description took the place of a's oldest version.
    assert_eq!(p.versions("a"), [id(2), id(3)]);
    let on_disk: u64 = files(dir.path()).iter().map(|(_, len)| len).sum();
    assert_eq!(on_disk as usize, p.stored_bytes());
    assert!(p.stored_bytes() <= max);
    clock.advance(10);
    push(&p, "c", id(20), description(20)).await.unwrap();
    assert_eq!(p.versions("a"), [id(3)]);
    // Only current descriptions are left: no room, a transient refusal.
    clock.advance(10);
    let err = push(&p, "d", id(30), description(20)).await.unwrap_err();
    assert!(matches!(err, PluginError::Other(_)), "{err:?}");
    assert!(
        !p.requires_topology_push(&ctx(), "d", id(30)),
        "backing off"
    );
    clock.advance(c.limits.backoff.max_ms * 2);
    assert!(
        p.requires_topology_push(&ctx(), "d", id(30)),
        "asked again later"
    );
    let on_disk: u64 = files(dir.path()).iter().map(|(_, len)| len).sum();
    assert!(on_disk as usize <= max, "{on_disk}");
}

#[tokio::test]
async fn torn_and_corrupt_files_are_skipped_at_load() {
    let (dir, clock, p) = fresh();
    push(&p, "good", id(1), description(2)).await.unwrap();
    push(&p, "torn", id(2), description(2)).await.unwrap();
    drop(p);
    let torn = dir.path().join(super::format::file_name("torn", id(2)));
    let bytes = std::fs::read(&torn).unwrap();
    std::fs::write(&torn, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(
        dir.path().join(super::format::file_name("junk", id(3))),
        b"\xff\x00{",
    )
    .unwrap();
    std::fs::write(dir.path().join("left-over.json.tmp"), b"{").unwrap();

    let p = open(config(dir.path()), &clock);
    assert_eq!(p.versions("good"), [id(1)]);
    assert_eq!(p.versions("torn"), Vec::<Uuid>::new());
    assert!(!dir.path().join("left-over.json.tmp").exists());
    // The torn group's description is asked for again and stored anew.
    push(&p, "torn", id(2), description(2)).await.unwrap();
    assert_eq!(
        p.get_topology(&ctx(), "torn", id(2)).await.unwrap(),
        Some(description(2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_identical_pushes_store_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let p = Arc::new(open(config(dir.path()), &clock));
    assert!(p.requires_topology_push(&ctx(), "app", id(1)));
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let p = Arc::clone(&p);
            tokio::spawn(async move { p.set_topology(&ctx(), "app", id(1), description(5)).await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(p.versions("app"), [id(1)]);
    assert_eq!(files(dir.path()).len(), 1);
    assert!(!p.requires_topology_push(&ctx(), "app", id(1)));
}

#[tokio::test]
async fn a_failing_disk_is_an_error_answer_and_a_back_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let p = open(config(&dir.path().join("d")), &clock);
    std::fs::remove_dir_all(dir.path().join("d")).unwrap();
    let err = push(&p, "app", id(1), description(2)).await.unwrap_err();
    assert!(matches!(err, PluginError::Other(_)), "{err:?}");
    assert!(
        !p.requires_topology_push(&ctx(), "app", id(1)),
        "backing off"
    );
    assert_eq!(p.get_topology(&ctx(), "app", id(1)).await.unwrap(), None);
}

#[test]
fn settings_are_read_from_the_file_keys() {
    let key = |k: &str| format!("group.streams.topology.description.file.{k}");
    let configs = [
        (key("dir"), "/var/lib/kcoord/topologies".to_owned()),
        (key("history.count"), "5".to_owned()),
        (key("ttl.ms"), "1000".to_owned()),
        (key("max.total.bytes"), "9999999".to_owned()),
    ]
    .into();
    let c = FilePluginConfig::from_configs(&configs).unwrap();
    assert_eq!(c.dir, Path::new("/var/lib/kcoord/topologies"));
    assert_eq!(
        (c.history_count, c.limits.ttl_ms, c.limits.max_total_bytes),
        (5, 1000, 9_999_999)
    );
    let zero = [
        (key("dir"), "d".to_owned()),
        (key("history.count"), "0".to_owned()),
    ]
    .into();
    assert!(FilePluginConfig::from_configs(&zero).is_err());
}

#[tokio::test]
async fn smaller_limits_apply_to_what_a_restart_finds() {
    let (dir, clock, p) = fresh();
    for n in 1..=3 {
        clock.advance(10);
        push(&p, "app", id(n), description(20)).await.unwrap();
    }
    push(&p, "other", id(9), description(20)).await.unwrap();
    let one = p.stored_bytes() / 4;
    drop(p);
    let mut c = config(dir.path());
    c.history_count = 2;
    assert_eq!(open(c.clone(), &clock).versions("app"), [id(2), id(3)]);
    // Room for two files: each group keeps its latest, superseded ones go first.
    c.limits.max_total_bytes = one * 2;
    c.limits.max_bytes = one;
    let p = open(c, &clock);
    assert_eq!(
        (p.versions("app"), p.versions("other")),
        (vec![id(3)], vec![id(9)])
    );
    assert_eq!(files(dir.path()).len(), 2);
}
