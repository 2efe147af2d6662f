//! The versions the coordinator keeps per streams group (issue 26): every TopologyDescriptionId
//! it mints, with its topology epoch and time, bounded and rebuilt by replay.
mod support;

use kcoord_metadata::log::MetadataLog;
use kcoord_metadata::{Record, Store, TopologyVersion, MAX_TOPOLOGY_VERSIONS};
use kcoord_wire::records::{StreamsGroupMetadataKey, StreamsGroupMetadataValue};
use support::*;

fn versions(h: &Harness) -> Vec<TopologyVersion> {
    h.shard.group(GROUP).unwrap().topology_versions.clone()
}

/// A member `name` joining with topology epoch `epoch`: a redeploy when `epoch` is higher.
fn redeploy(h: &mut Harness, name: &str, epoch: i32) {
    Member::new(name, name, simple_topology(epoch)).beat(h);
}

#[test]
fn each_minted_id_is_recorded_with_its_topology_epoch_and_time() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    let created = h.now;
    assert_eq!(
        versions(&h),
        [TopologyVersion {
            id: h
                .shard
                .group(GROUP)
                .unwrap()
                .topology_description_id
                .unwrap(),
            topology_epoch: 1,
            minted_ms: created,
        }]
    );
    // A heartbeat and a member joining with the same topology mint nothing.
    h.advance(1_000);
    a.beat(&mut h);
    redeploy(&mut h, "b", 1);
    assert_eq!(versions(&h).len(), 1);
    h.advance(5_000);
    redeploy(&mut h, "c", 2);
    let kept = versions(&h);
    let group = h.shard.group(GROUP).unwrap();
    assert_eq!(kept.len(), 2);
    assert_eq!(
        kept[1],
        TopologyVersion {
            id: group.topology_description_id.unwrap(),
            topology_epoch: 2,
            minted_ms: created + 6_000,
        }
    );
    assert_ne!(kept[0].id, kept[1].id);
    // Fencing a member rewrites the group's metadata record and keeps them.
    a.epoch = -1;
    h.heartbeat(&a.request()).unwrap();
    assert_eq!(versions(&h), kept);
    h.assert_replay_matches();
}

#[test]
fn the_oldest_versions_go_first_past_the_bound_and_replay_restores_the_rest() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let deploys = MAX_TOPOLOGY_VERSIONS as i32 + 8;
    for epoch in 1..=deploys {
        h.advance(1_000);
        redeploy(&mut h, &format!("m{epoch}"), epoch);
    }
    let kept = versions(&h);
    assert_eq!(kept.len(), MAX_TOPOLOGY_VERSIONS);
    let epochs: Vec<i32> = kept.iter().map(|v| v.topology_epoch).collect();
    assert_eq!(epochs, (9..=deploys).collect::<Vec<_>>());
    assert_eq!(
        kept.last().map(|v| v.id),
        h.shard.group(GROUP).unwrap().topology_description_id
    );
    // The replayed state is the live one, these versions included.
    h.assert_replay_matches();
}

#[test]
fn a_metadata_record_written_before_versions_replays_without_them() {
    let id = uuid::Uuid::from_u128(7);
    let old = Record::StreamsGroupMetadata(
        StreamsGroupMetadataKey {
            group_id: GROUP.into(),
            ..Default::default()
        },
        Some(StreamsGroupMetadataValue {
            epoch: 3,
            topology_description_id: Some(id),
            topology_description_versions: None,
            ..Default::default()
        }),
    );
    // Through the log format: the tag is absent from the bytes, as in an old log.
    let mut log = MetadataLog::new();
    log.append([old.encode().unwrap()]);
    let store = Store::replay_log(&log).unwrap();
    let group = store.state().streams_groups.get(GROUP).unwrap();
    assert_eq!(group.topology_description_id, Some(id));
    assert!(group.topology_versions.is_empty());
}
