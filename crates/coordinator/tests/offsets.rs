//! Offsets removed without a request: those of deleted topics (`onTopicsDeleted`) and, below,
//! expired ones (`cleanupGroupMetadata`).
mod support;

use kcoord_coordinator::groups::OffsetToCommit;
use kcoord_coordinator::offsets::DeletedTopic;
use support::*;
use uuid::Uuid;

fn commit(topic: &str, id: Uuid, partition: i32) -> OffsetToCommit {
    OffsetToCommit {
        topic: topic.into(),
        topic_id: id,
        partition,
        offset: 5,
        leader_epoch: -1,
        metadata: None,
    }
}

fn offsets_of(h: &Harness, group: &str) -> Vec<(String, i32)> {
    h.shard
        .state()
        .offsets
        .group(group)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn offsets_of_a_deleted_topic_go_from_every_group_unless_they_name_its_successor() {
    let mut h = Harness::new(config());
    let old = Uuid::from_u128(11);
    let new = Uuid::from_u128(12);
    let other = Uuid::from_u128(13);
    h.shard
        .commit_offsets(
            "g1",
            "",
            -1,
            10,
            &[
                commit("t", old, 0),
                commit("t", old, 1),
                commit("u", other, 0),
            ],
            h.now,
        )
        .unwrap();
    // Committed by name (no id, as before OffsetCommit v10), and with the new topic's id.
    h.shard
        .commit_offsets("g2", "", -1, 8, &[commit("t", Uuid::nil(), 0)], h.now)
        .unwrap();
    h.shard
        .commit_offsets("g3", "", -1, 10, &[commit("t", new, 0)], h.now)
        .unwrap();
    let removed = h
        .shard
        .on_topics_deleted(&[DeletedTopic {
            name: "t".into(),
            id: old,
        }])
        .unwrap();
    assert_eq!(removed, 3);
    assert_eq!(offsets_of(&h, "g1"), vec![("u".to_owned(), 0)]);
    assert!(h.shard.state().offsets.group("g2").is_none());
    assert_eq!(offsets_of(&h, "g3"), vec![("t".to_owned(), 0)]);
    h.assert_replay_matches();
}
