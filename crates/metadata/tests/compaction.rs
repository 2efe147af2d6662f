//! A compacted log replays to the live state for the record shapes the coordinator writes, and
//! the cross-key effects of replay (implicit creation, member and group tombstones) are why it
//! has to write them that way (see the `log` module docs).
use kcoord_metadata::{MetadataLog, Record, Store};
use kcoord_wire::records as r;
use kcoord_wire::records::streams_group_current_member_assignment_value as current;
use kcoord_wire::records::streams_group_target_assignment_member_value as target;

fn group(g: &str, epoch: i32) -> Record {
    Record::StreamsGroupMetadata(
        r::StreamsGroupMetadataKey {
            group_id: g.into(),
            ..Default::default()
        },
        Some(r::StreamsGroupMetadataValue {
            epoch,
            validated_topology_epoch: 1,
            ..Default::default()
        }),
    )
}

fn group_tombstone(g: &str) -> Record {
    Record::StreamsGroupMetadata(
        r::StreamsGroupMetadataKey {
            group_id: g.into(),
            ..Default::default()
        },
        None,
    )
}

fn topology(g: &str, epoch: Option<i32>) -> Record {
    Record::StreamsGroupTopology(
        r::StreamsGroupTopologyKey {
            group_id: g.into(),
            ..Default::default()
        },
        epoch.map(|epoch| r::StreamsGroupTopologyValue {
            epoch,
            ..Default::default()
        }),
    )
}

fn member(g: &str, m: &str, client: Option<&str>) -> Record {
    Record::StreamsGroupMemberMetadata(
        r::StreamsGroupMemberMetadataKey {
            group_id: g.into(),
            member_id: m.into(),
            ..Default::default()
        },
        client.map(|c| r::StreamsGroupMemberMetadataValue {
            client_id: c.into(),
            process_id: format!("{c}-process"),
            ..Default::default()
        }),
    )
}

fn target_member(g: &str, m: &str, partitions: Option<Vec<i32>>) -> Record {
    Record::StreamsGroupTargetAssignmentMember(
        r::StreamsGroupTargetAssignmentMemberKey {
            group_id: g.into(),
            member_id: m.into(),
            ..Default::default()
        },
        partitions.map(|partitions| r::StreamsGroupTargetAssignmentMemberValue {
            active_tasks: vec![target::TaskIds {
                subtopology_id: "0".into(),
                partitions,
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
}

fn target_metadata(g: &str, epoch: Option<i32>) -> Record {
    Record::StreamsGroupTargetAssignmentMetadata(
        r::StreamsGroupTargetAssignmentMetadataKey {
            group_id: g.into(),
            ..Default::default()
        },
        epoch.map(|epoch| r::StreamsGroupTargetAssignmentMetadataValue {
            assignment_epoch: epoch,
            assignment_timestamp: 1_000 + i64::from(epoch),
            ..Default::default()
        }),
    )
}

fn assignment(g: &str, m: &str, epoch_and_partitions: Option<(i32, Vec<i32>)>) -> Record {
    Record::StreamsGroupCurrentMemberAssignment(
        r::StreamsGroupCurrentMemberAssignmentKey {
            group_id: g.into(),
            member_id: m.into(),
            ..Default::default()
        },
        epoch_and_partitions.map(|(epoch, partitions)| {
            r::StreamsGroupCurrentMemberAssignmentValue {
                member_epoch: epoch,
                previous_member_epoch: epoch - 1,
                state: 1,
                active_tasks: vec![current::TaskIds {
                    subtopology_id: "0".into(),
                    assignment_epochs: Some(vec![epoch; partitions.len()]),
                    partitions,
                    ..Default::default()
                }],
                ..Default::default()
            }
        }),
    )
}

fn offset(g: &str, partition: i32, value: Option<i64>) -> Record {
    Record::OffsetCommit(
        r::OffsetCommitKey {
            group: g.into(),
            topic: "input".into(),
            partition,
            ..Default::default()
        },
        value.map(|offset| r::OffsetCommitValue {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: offset,
            ..Default::default()
        }),
    )
}

/// The tombstones that remove a member, in the coordinator's (Kafka's) order.
fn remove_member(g: &str, m: &str) -> Vec<Record> {
    vec![
        assignment(g, m, None),
        target_member(g, m, None),
        member(g, m, None),
    ]
}

/// The compacted copy of the store's log, after checking it replays to the live state.
fn compacted_and_checked(store: &Store) -> MetadataLog {
    let mut log = store.log().clone();
    log.compact();
    let replayed = Store::replay_log(&log).expect("the compacted log replays");
    assert_eq!(
        replayed.state(),
        store.state(),
        "replaying the compacted log must rebuild the live state"
    );
    log
}

/// A group of two members that joined and then went through `rebalances` rebalances.
fn rebalanced_group(store: &mut Store, g: &str, rebalances: i32) {
    store
        .append(vec![
            member(g, "m1", Some("c1")),
            topology(g, Some(1)),
            group(g, 1),
            target_member(g, "m1", Some(vec![0, 1])),
            target_metadata(g, Some(1)),
            assignment(g, "m1", Some((1, vec![0, 1]))),
        ])
        .unwrap();
    store
        .append(vec![member(g, "m2", Some("c2")), group(g, 2)])
        .unwrap();
    for epoch in 3..3 + rebalances {
        store
            .append(vec![
                group(g, epoch),
                target_member(g, "m1", Some(vec![0])),
                target_member(g, "m2", Some(vec![1])),
                target_metadata(g, Some(epoch)),
                assignment(g, "m1", Some((epoch, vec![0]))),
                assignment(g, "m2", Some((epoch, vec![1]))),
            ])
            .unwrap();
        compacted_and_checked(store);
    }
}

#[test]
fn member_records_older_than_the_latest_group_metadata_replay_to_the_same_group() {
    let mut store = Store::new();
    rebalanced_group(&mut store, "g", 20);
    let log = compacted_and_checked(&store);
    // Member metadata (19) and the topology (23), written at the join, now come before the
    // group's metadata (17): replaying them creates the group with default fields, which the
    // later group record overwrites, as it did in the live log.
    let types: Vec<i16> = log.iter().map(|r| r.record_type).collect();
    assert_eq!(types, vec![19, 23, 19, 17, 21, 21, 20, 22, 22]);
    assert!(log.len() < store.log().len());
}

#[test]
fn a_member_removed_in_kafkas_order_and_rejoining_with_its_id_starts_afresh() {
    let mut store = Store::new();
    rebalanced_group(&mut store, "g", 3);
    let mut removal = remove_member("g", "m2");
    removal.push(group("g", 10));
    store.append(removal).unwrap();
    let log = compacted_and_checked(&store);
    assert!(
        log.iter()
            .all(|r| !r.key.is_some_and(|k| k.ends_with(b"m2"))),
        "nothing of m2 is left"
    );
    // Back with the same id (a static member's replacement can do that): only the new records
    // count, not the assignment of before the removal.
    store
        .append(vec![member("g", "m2", Some("c2-again")), group("g", 11)])
        .unwrap();
    compacted_and_checked(&store);
    let m2 = &store.state().streams_groups.get("g").unwrap().members["m2"];
    assert_eq!((m2.client_id.as_str(), m2.member_epoch), ("c2-again", 0));
}

#[test]
fn a_group_deleted_in_kafkas_order_and_created_again_keeps_nothing_of_the_old_one() {
    let mut store = Store::new();
    rebalanced_group(&mut store, "g", 3);
    rebalanced_group(&mut store, "other", 2);
    store
        .append(vec![offset("g", 0, Some(5)), offset("g", 1, Some(7))])
        .unwrap();
    let mut leave = remove_member("g", "m1");
    leave.extend(remove_member("g", "m2"));
    leave.push(group("g", 20));
    store.append(leave).unwrap();
    // DeleteGroups: 22*, 21*, 20, 19*, 17, 23 (no members are left), then the offsets.
    store
        .append(vec![
            target_metadata("g", None),
            group_tombstone("g"),
            topology("g", None),
            offset("g", 0, None),
            offset("g", 1, None),
        ])
        .unwrap();
    let log = compacted_and_checked(&store);
    assert!(store.state().streams_groups.get("g").is_none());
    assert!(
        log.iter()
            .all(|r| !r.key.is_some_and(|k| k.windows(2).any(|w| w == b"\x01g"))),
        "every record of g is gone, tombstones too"
    );
    // The same group id again: its records follow the old group's tombstones, which compaction
    // dropped; nothing of the old group comes back.
    store
        .append(vec![
            member("g", "m3", Some("c3")),
            topology("g", Some(2)),
            group("g", 1),
        ])
        .unwrap();
    compacted_and_checked(&store);
    let g = store.state().streams_groups.get("g").unwrap();
    assert_eq!(
        (
            g.members.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            g.target_assignment.len(),
            g.target_assignment_epoch
        ),
        // A new group's (empty) target assignment has Kafka's initial epoch 1 (KAFKA-20268).
        (vec!["m3"], 0, 1)
    );
}

#[test]
fn offset_commits_keep_the_latest_offset_and_deletions_drop_it() {
    let mut store = Store::new();
    for i in 0..50 {
        store
            .append(vec![offset("simple", i % 3, Some(i64::from(i)))])
            .unwrap();
    }
    store.append(vec![offset("simple", 1, None)]).unwrap();
    let log = compacted_and_checked(&store);
    assert_eq!(
        log.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![47, 48],
        "partitions 2 and 0, at their last commits"
    );
    store
        .append(vec![offset("simple", 0, None), offset("simple", 2, None)])
        .unwrap();
    assert!(compacted_and_checked(&store).is_empty());
    assert!(store.state().offsets.group("simple").is_none());
}

#[test]
fn a_store_compacts_its_own_log_as_records_pass_the_floor() {
    let mut store = Store::new();
    rebalanced_group(&mut store, "g", 400);
    assert!(store.log().next_offset() > 2_000);
    assert!(
        store.log().len() < 1_100,
        "{} records held",
        store.log().len()
    );
    let replayed = Store::replay_log(store.log()).unwrap();
    assert_eq!(replayed.state(), store.state());
}

/// Deleting a group writes its topology tombstone after the group tombstone. Were the store to
/// compact between the two, the compaction would drop the group tombstone but keep the
/// topology (still its key's latest record), and the log would replay to a group that was
/// deleted. So the store compacts only once a batch is whole.
#[test]
fn a_store_compacts_between_batches_never_inside_one() {
    let mut store = Store::new();
    rebalanced_group(&mut store, "g", 100); // 8 + 600 keyed records
    for i in 0..407 {
        store.append(vec![offset("simple", 0, Some(i))]).unwrap();
    }
    let mut leave = remove_member("g", "m1");
    leave.extend(remove_member("g", "m2"));
    leave.push(group("g", 200)); // 7 more: 1,022 in all
    store.append(leave).unwrap();
    assert_eq!(store.log().len(), 1_022, "not compacted yet");
    // The group tombstone is the 1,024th keyed record: the floor is reached inside the batch.
    store
        .append(vec![
            target_metadata("g", None),
            group_tombstone("g"),
            topology("g", None),
        ])
        .unwrap();
    let replayed = Store::replay_log(store.log()).unwrap();
    assert!(
        replayed.state().streams_groups.get("g").is_none(),
        "the deleted group came back"
    );
    assert_eq!(replayed.state(), store.state());
    assert_eq!(
        store.log().len(),
        1,
        "compacted: only the last offset commit is left"
    );
}

/// Why the coordinator writes the current-assignment tombstone (22) before the member tombstone
/// (19): a member tombstone removes the member and with it the state its assignment record
/// wrote. Without the 22 tombstone, that assignment record stays the latest of its key, and
/// once compaction has dropped the member tombstone (superseded by the member's return) it
/// would give the returning member its old assignment. The coordinator never writes this shape.
#[test]
fn a_member_tombstone_without_the_assignment_tombstone_is_not_compaction_safe() {
    let mut store = Store::new();
    rebalanced_group(&mut store, "g", 1);
    store
        .append(vec![
            member("g", "m2", None),
            target_member("g", "m2", None),
        ])
        .unwrap();
    store
        .append(vec![member("g", "m2", Some("c2-again"))])
        .unwrap();
    assert_eq!(
        store.state().streams_groups.get("g").unwrap().members["m2"].member_epoch,
        0
    );
    let mut log = store.log().clone();
    log.compact();
    let replayed = Store::replay_log(&log).unwrap();
    assert_eq!(
        replayed.state().streams_groups.get("g").unwrap().members["m2"].member_epoch,
        3,
        "the old assignment came back"
    );
}
