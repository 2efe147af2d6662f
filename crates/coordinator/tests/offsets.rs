//! Offsets removed without a request: those of deleted topics (`onTopicsDeleted`) and, below,
//! expired ones (`cleanupGroupMetadata`).
mod support;

use kcoord_coordinator::commits::OffsetToCommit;
use std::sync::Arc;

use kcoord_coordinator::offsets::DeletedTopic;
use kcoord_metadata::Record;
use kcoord_wire::records::RemoveTopicRecord;
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
    h.create_topic("t", 2);
    let old = Uuid::from_u128(1);
    let new = Uuid::from_u128(12);
    let other = Uuid::from_u128(13);
    h.run(|s, now| {
        s.commit_offsets(
            "g1",
            "",
            -1,
            10,
            &[
                commit("t", old, 0),
                commit("t", old, 1),
                commit("u", other, 0),
            ],
            now,
        )
    })
    .unwrap();
    // Committed by name (no id, as before OffsetCommit v10), and with the new topic's id.
    h.run(|s, now| s.commit_offsets("g2", "", -1, 8, &[commit("t", Uuid::nil(), 0)], now))
        .unwrap();
    h.run(|s, now| s.commit_offsets("g3", "", -1, 10, &[commit("t", new, 0)], now))
        .unwrap();
    h.catalog
        .append(vec![Record::RemoveTopic(RemoveTopicRecord {
            topic_id: old,
            ..Default::default()
        })])
        .unwrap();
    let topics = Arc::new(h.catalog.state().topics.clone());
    let (deleted, removed) = h.shard.run(|s| s.topics_changed(topics)).unwrap().response;
    let t = DeletedTopic {
        name: "t".into(),
        id: old,
    };
    assert_eq!((deleted, removed), (vec![t], 3));
    assert_eq!(offsets_of(&h, "g1"), vec![("u".to_owned(), 0)]);
    assert!(h.shard.state().offsets.group("g2").is_none());
    assert_eq!(offsets_of(&h, "g3"), vec![("t".to_owned(), 0)]);
    h.assert_replay_matches();
}

fn expiring_config() -> kcoord_coordinator::StreamsGroupConfig {
    kcoord_coordinator::StreamsGroupConfig {
        offsets_retention_ms: 10_000,
        offsets_retention_check_interval_ms: 1_000,
        ..config()
    }
}

#[test]
fn a_simple_groups_offsets_expire_retention_after_their_commit_and_the_group_goes_with_them() {
    let mut h = Harness::new(expiring_config());
    h.start_offset_expiry();
    assert_eq!(h.shard.next_deadline(), Some(h.now + 1_000));
    let t = Uuid::from_u128(1);
    h.run(|s, now| s.commit_offsets("simple", "", -1, 10, &[commit("t", t, 0)], now))
        .unwrap();
    h.advance(5_000);
    h.run(|s, now| s.commit_offsets("simple", "", -1, 10, &[commit("t", t, 1)], now))
        .unwrap();
    // 10 s after the first commit (checked each second): partition 0 goes, 1 stays.
    for _ in 0..5 {
        h.advance(1_000);
    }
    assert_eq!(offsets_of(&h, "simple"), vec![("t".to_owned(), 1)]);
    for _ in 0..5 {
        h.advance(1_000);
    }
    assert!(h.shard.state().offsets.group("simple").is_none());
    assert!(h.shard.list_groups().iter().all(|g| g.group_id != "simple"));
    h.assert_replay_matches();
}

#[test]
fn a_streams_group_keeps_offsets_of_topics_it_consumes_until_it_is_empty_then_is_deleted() {
    let mut h = Harness::new(expiring_config());
    h.create_topic("input", 1);
    h.start_offset_expiry();
    let mut members = vec![Member::new("a", "p1", simple_topology(1))];
    converge(&mut h, &mut members);
    let epoch = members[0].epoch;
    h.run(|s, now| {
        s.commit_offsets(
            GROUP,
            "a",
            epoch,
            10,
            &[
                commit("input", Uuid::nil(), 0),
                commit("old", Uuid::nil(), 0),
            ],
            now,
        )
    })
    .unwrap();
    for _ in 0..11 {
        h.advance(1_000);
        members[0].beat(&mut h);
    }
    // The group consumes "input": only "old" expired.
    assert_eq!(offsets_of(&h, GROUP), vec![("input".to_owned(), 0)]);
    assert!(h.shard.group(GROUP).is_some());
    // The member leaves: the group is empty, consumes nothing, and its last offset (older than
    // the retention) expires at the next pass, the group with it.
    let mut leave = members[0].request();
    leave.member_epoch = -1;
    h.heartbeat(&leave).unwrap();
    h.advance(1_000);
    assert!(h.shard.state().offsets.group(GROUP).is_none());
    assert!(h.shard.group(GROUP).is_none(), "the empty group is deleted");
    h.assert_replay_matches();
}

#[test]
fn an_empty_streams_group_without_offsets_is_deleted_by_the_next_pass() {
    let mut h = Harness::new(expiring_config());
    h.create_topic("input", 1);
    h.start_offset_expiry();
    let mut a = Member::new("a", "p1", simple_topology(1));
    a.beat(&mut h);
    h.advance(1_000);
    assert!(h.shard.group(GROUP).is_some(), "a group with members stays");
    let mut leave = a.request();
    leave.member_epoch = -1;
    h.heartbeat(&leave).unwrap();
    assert!(h.shard.group(GROUP).is_some());
    h.advance(1_000);
    assert!(h.shard.group(GROUP).is_none());
}
