//! StreamsGroupDescribe, ListGroups, DeleteGroups, DescribeGroups and offsets, sans-IO.
mod support;

use kcoord_coordinator::commits::OffsetToCommit;
use kcoord_coordinator::{CoordinatorShard, Effect};
use kcoord_metadata::{Record, Store};
use kcoord_wire::ErrorCode;
use support::*;

fn commit(topic: &str, partition: i32, offset: i64) -> OffsetToCommit {
    OffsetToCommit {
        topic: topic.into(),
        topic_id: uuid::Uuid::nil(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: Some("m".into()),
    }
}

fn stable_pair(h: &mut Harness) -> Vec<Member> {
    h.create_topic("input", 4);
    let mut members = vec![
        Member::new("a", "p1", simple_topology(1)),
        Member::new("b", "p2", simple_topology(1)),
    ];
    converge(h, &mut members);
    members
}

#[test]
fn describe_reports_state_epochs_topology_and_members() {
    let mut h = Harness::new(config());
    let members = stable_pair(&mut h);
    let described = h
        .shard
        .describe_streams_groups(&["app".into(), "nope".into()]);
    let g = &described[0];
    assert_eq!(g.error_code, 0);
    assert_eq!(g.group_state, "Stable");
    assert_eq!(g.group_epoch, h.shard.group("app").unwrap().group_epoch);
    assert_eq!(g.assignment_epoch, g.group_epoch);
    assert_eq!(
        g.topology.as_ref().unwrap().subtopologies.as_ref().unwrap()[0].source_topics,
        vec!["input".to_string()]
    );
    assert_eq!(g.members.len(), 2);
    let a = g.members.iter().find(|m| m.member_id == "a").unwrap();
    assert_eq!(a.process_id, "p1");
    assert_eq!(a.client_id, "client");
    let active: usize = a
        .assignment
        .active_tasks
        .iter()
        .map(|t| t.partitions.len())
        .sum();
    assert_eq!(active, members[0].active_count());
    assert_eq!(a.assignment, a.target_assignment);
    assert_eq!(g.assignor_name.as_deref(), Some("sticky"));
    let missing = &described[1];
    assert_eq!(missing.error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());
    assert_eq!(
        missing.error_message.as_deref(),
        Some("Group nope not found.")
    );
}

#[test]
fn list_groups_reports_streams_groups_and_offset_only_groups() {
    let mut h = Harness::new(config());
    stable_pair(&mut h);
    h.run(|s, now| s.commit_offsets("simple", "", -1, 9, &[commit("input", 0, 5)], now))
        .unwrap();
    let mut listed = h.shard.list_groups();
    listed.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    assert_eq!(listed.len(), 2);
    assert_eq!(
        (
            listed[0].group_id.as_str(),
            listed[0].group_type.as_str(),
            listed[0].protocol_type.as_str(),
            listed[0].group_state.as_str()
        ),
        ("app", "streams", "streams", "Stable")
    );
    assert_eq!(
        (
            listed[1].group_id.as_str(),
            listed[1].group_type.as_str(),
            listed[1].group_state.as_str()
        ),
        ("simple", "classic", "Empty")
    );
}

#[test]
fn only_empty_groups_can_be_deleted_and_tombstones_follow_kafka_order() {
    let mut h = Harness::new(config());
    let mut members = stable_pair(&mut h);
    assert_eq!(
        h.run(|s, _| s.delete_group("app")).unwrap_err().code,
        ErrorCode::NON_EMPTY_GROUP
    );
    assert_eq!(
        h.run(|s, _| s.delete_group("nope")).unwrap_err().code,
        ErrorCode::GROUP_ID_NOT_FOUND
    );
    h.run(|s, now| {
        s.commit_offsets(
            "app",
            "a",
            members[0].epoch,
            9,
            &[commit("input", 0, 1)],
            now,
        )
    })
    .unwrap_or_default();
    for m in members.iter_mut() {
        let mut req = m.request();
        req.member_epoch = -1;
        h.heartbeat(&req).unwrap();
    }
    let before = h.shard.store().log().next_offset();
    h.run(|s, _| s.delete_group("app")).unwrap();
    assert!(h.shard.group("app").is_none());
    let types: Vec<(i16, bool)> = h
        .shard
        .store()
        .log()
        .records_from(before)
        .map(|r| (r.record_type, r.value.is_none()))
        .collect();
    let only_types: Vec<i16> = types.iter().map(|t| t.0).collect();
    // No members are left, so: target metadata (20), group (17), topology (23), then offsets (1).
    assert_eq!(only_types, vec![20, 17, 23, 1]);
    assert!(types.iter().all(|(_, tombstone)| *tombstone));
    assert!(h.shard.state().offsets.group("app").is_none());
    let replayed = Store::replay_log(h.shard.store().log()).unwrap();
    assert_eq!(replayed.state(), h.shard.state());
}

#[test]
fn group_deletion_writes_member_tombstones_in_kafka_order() {
    // A group whose members are all gone but whose records still name one (a member left
    // with -2 and never came back keeps its records): 22, 21, 20, 19, 17, 23.
    let group = kcoord_metadata::StreamsGroup {
        group_id: "g".into(),
        members: [kcoord_metadata::StreamsGroupMember::new("m")].into(),
        target_assignment: [("m".into(), Default::default())].into(),
        ..Default::default()
    };
    let types: Vec<i16> = kcoord_coordinator::record_builders::delete_group(&group)
        .iter()
        .map(Record::record_type)
        .collect();
    assert_eq!(types, vec![22, 21, 20, 19, 17, 23]);
}

#[test]
fn offset_commits_follow_the_member_epoch_rules() {
    let mut h = Harness::new(config());
    let members = stable_pair(&mut h);
    let a = &members[0];
    let p = *a.active["0"].iter().next().unwrap();
    // A streams member must use OffsetCommit v9+.
    let err = h
        .run(|s, now| s.commit_offsets("app", "a", a.epoch, 8, &[commit("input", p, 1)], now))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::UNSUPPORTED_VERSION);
    // The current epoch is accepted.
    assert_eq!(
        h.run(|s, now| s.commit_offsets("app", "a", a.epoch, 9, &[commit("input", p, 10)], now))
            .unwrap(),
        vec![ErrorCode::NONE]
    );
    assert_eq!(h.shard.committed_offsets("app")[0].2.offset, 10);
    // A newer epoch is stale.
    let err = h
        .run(|s, now| s.commit_offsets("app", "a", a.epoch + 1, 9, &[commit("input", p, 11)], now))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::STALE_MEMBER_EPOCH);
    // An unknown member.
    let err = h
        .run(|s, now| s.commit_offsets("app", "zz", a.epoch, 9, &[commit("input", p, 11)], now))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::UNKNOWN_MEMBER_ID);
    // An older epoch is checked per task: a task assigned at a later epoch is stale.
    let err = h
        .run(|s, now| s.commit_offsets("app", "a", 0, 9, &[commit("input", p, 12)], now))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::STALE_MEMBER_EPOCH);
    // Oversized metadata is refused per partition.
    let mut big = commit("input", p, 13);
    big.metadata = Some("x".repeat(4097));
    assert_eq!(
        h.run(|s, now| s.commit_offsets("app", "a", a.epoch, 9, &[big], now))
            .unwrap(),
        vec![ErrorCode::OFFSET_METADATA_TOO_LARGE]
    );
    // Unknown group: admin commits create offsets, member commits are refused.
    assert!(h
        .run(|s, now| s.commit_offsets("other", "", -1, 9, &[commit("input", 0, 1)], now))
        .is_ok());
    assert_eq!(
        h.run(|s, now| s.commit_offsets("ghost", "m", 3, 9, &[commit("input", 0, 1)], now))
            .unwrap_err()
            .code,
        ErrorCode::GROUP_ID_NOT_FOUND
    );
    assert_eq!(
        h.run(|s, now| s.commit_offsets("ghost", "m", 3, 8, &[commit("input", 0, 1)], now))
            .unwrap_err()
            .code,
        ErrorCode::ILLEGAL_GENERATION
    );
}

#[test]
fn offset_fetches_check_member_and_epoch_unless_from_an_admin() {
    let mut h = Harness::new(config());
    let members = stable_pair(&mut h);
    assert!(h.shard.validate_offset_fetch("app", None, -1).is_ok());
    assert!(h
        .shard
        .validate_offset_fetch("app", Some("a"), members[0].epoch)
        .is_ok());
    assert_eq!(
        h.shard
            .validate_offset_fetch("app", Some("a"), members[0].epoch + 1)
            .unwrap_err()
            .code,
        ErrorCode::STALE_MEMBER_EPOCH
    );
    assert_eq!(
        h.shard
            .validate_offset_fetch("app", Some("x"), 1)
            .unwrap_err()
            .code,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn describe_groups_says_a_streams_group_is_not_classic() {
    let mut h = Harness::new(config());
    stable_pair(&mut h);
    let err = h.shard.describe_classic_group("app").unwrap_err();
    assert_eq!(err.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        err.message.as_deref(),
        Some("Group app is not a classic group.")
    );
}

/// `group.coordinator.max.groups`: once the node holds that many groups (this shard's and the
/// other shards'), a new streams group and a new offsets-only group are refused with
/// GROUP_MAX_SIZE_REACHED; existing groups go on, and a deleted group makes room.
#[test]
fn the_group_limit_refuses_new_groups_once_reached() {
    let mut h = Harness::with_shard(CoordinatorShard::new(config(), 7).with_max_groups(3));
    h.create_topic("input", 1);
    // One group lives on another shard.
    h.input(Effect::GroupsElsewhere(1));
    let join = |group: &str| {
        let mut r = Member::new("m", "p", simple_topology(1)).request();
        r.group_id = group.into();
        r
    };
    h.heartbeat(&join("first"))
        .expect("room for a streams group");
    let codes = h
        .run(|s, now| s.commit_offsets("simple", "", -1, 9, &[commit("input", 0, 5)], now))
        .expect("room for an offsets-only group");
    assert_eq!(codes, vec![ErrorCode::NONE]);
    assert_eq!(h.shard.state().group_count(), 2);

    let refused = h.heartbeat(&join("second")).unwrap_err();
    assert_eq!(refused.code, ErrorCode::GROUP_MAX_SIZE_REACHED);
    assert!(refused
        .message
        .as_deref()
        .is_some_and(|m| m.contains("maximum of 3 groups")));
    let refused = h
        .run(|s, now| s.commit_offsets("other", "", -1, 9, &[commit("input", 0, 5)], now))
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::GROUP_MAX_SIZE_REACHED);
    assert!(h.shard.group("second").is_none());
    assert_eq!(h.shard.state().group_count(), 2);

    // Existing groups are not new: their members join and commit as before.
    let mut more = join("first");
    more.member_id = "n".into();
    h.heartbeat(&more).expect("a member of an existing group");
    h.run(|s, now| s.commit_offsets("simple", "", -1, 9, &[commit("input", 0, 6)], now))
        .expect("an existing offsets-only group");
    // A streams group may start in a group known by its offsets: it is not a new group.
    h.heartbeat(&join("simple"))
        .expect("the offsets-only group becomes a streams group");
    assert_eq!(h.shard.state().group_count(), 2);

    // Room again once the other shard lost its group.
    h.input(Effect::GroupsElsewhere(0));
    h.heartbeat(&join("second")).expect("room again");
    assert_eq!(h.shard.state().group_count(), 3);
    h.assert_replay_matches();
}
