//! The shard's log compacts (latest record per key, as Kafka compacts `__consumer_offsets`),
//! and the compacted log still replays to the live state whatever members and admins do: the
//! coordinator's tombstone order is what makes that hold (see `kcoord_metadata::log`).
mod support;

use std::collections::{BTreeMap, HashSet};

use kcoord_coordinator::commits::OffsetToCommit;
use kcoord_coordinator::StreamsGroupConfig;
use kcoord_metadata::{MetadataLog, Store};
use proptest::prelude::*;
use support::*;

const GROUPS: [&str; 2] = [GROUP, "other"];

/// Members 0-3 are in `app` (3 is static), 4-5 in `other`.
fn group_of(member: usize) -> &'static str {
    GROUPS[usize::from(member >= 4)]
}

fn commit(partition: i32, offset: i64) -> OffsetToCommit {
    OffsetToCommit {
        topic: "input".into(),
        topic_id: uuid::Uuid::nil(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: Some("m".into()),
    }
}

/// Compacts a copy of the shard's log and checks it: every survivor is the latest record of its
/// key in the whole log, no tombstone is left, offsets and order are kept, and replaying it
/// rebuilds the live state.
fn check_compacted(h: &Harness) -> Result<MetadataLog, TestCaseError> {
    let live = h.shard.store().log();
    let mut log = live.clone();
    log.compact();
    let mut latest: BTreeMap<(i16, Vec<u8>), u64> = BTreeMap::new();
    for r in live.iter() {
        if let Some(key) = r.key {
            latest.insert((r.record_type, key.to_vec()), r.offset);
        }
    }
    let mut seen = HashSet::new();
    let mut previous = None;
    for r in log.iter() {
        prop_assert!(previous < Some(r.offset), "offsets stay in order");
        previous = Some(r.offset);
        prop_assert!(r.value.is_some(), "a tombstone survived at {}", r.offset);
        if let Some(key) = r.key {
            prop_assert!(
                seen.insert((r.record_type, key.to_vec())),
                "two records of one key"
            );
            prop_assert_eq!(
                latest.get(&(r.record_type, key.to_vec())),
                Some(&r.offset),
                "not the latest record of its key"
            );
        }
        let original = live.records_from(r.offset).next().map(|o| o.to_record());
        prop_assert_eq!(original, Some(r.to_record()), "a survivor changed");
    }
    let replayed = Store::replay_log(&log)
        .map_err(|e| TestCaseError::fail(format!("the compacted log does not replay: {e}")))?;
    prop_assert_eq!(
        replayed.state(),
        h.shard.state(),
        "replaying the compacted log must rebuild the live state"
    );
    Ok(log)
}

#[derive(Debug, Clone)]
enum Op {
    Beat(usize),
    Rejoin(usize),
    Leave(usize),
    StaticLeave(usize),
    Advance(i64),
    CreateTopic(i32),
    Upgrade(usize),
    Commit(usize, i32, i64),
    SimpleCommit(i32, i64),
    Delete(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0usize..6).prop_map(Op::Beat),
        1 => (0usize..6).prop_map(Op::Rejoin),
        2 => (0usize..6).prop_map(Op::Leave),
        1 => (0usize..6).prop_map(Op::StaticLeave),
        // Long enough to expire sessions: the timers fence members.
        1 => (0i64..60_000).prop_map(Op::Advance),
        1 => (1i32..8).prop_map(Op::CreateTopic),
        1 => (0usize..6).prop_map(Op::Upgrade),
        2 => ((0usize..6), (0i32..4), (0i64..1_000)).prop_map(|(m, p, o)| Op::Commit(m, p, o)),
        1 => ((0i32..4), (0i64..1_000)).prop_map(|(p, o)| Op::SimpleCommit(p, o)),
        1 => (0usize..3).prop_map(Op::Delete),
    ]
}

fn forget(m: &mut Member) {
    m.epoch = 0;
    m.active.clear();
    m.standby.clear();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Joins, rebalances, leaves, fencing by session expiry, topology upgrades, offset commits
    /// and group deletions (two streams groups and an offsets-only one): after every operation
    /// the compacted log keeps only the latest record of each key and replays to the live state.
    #[test]
    fn the_compacted_log_replays_to_the_live_state_after_any_operations(ops in proptest::collection::vec(op(), 1..80)) {
        let mut h = Harness::new(StreamsGroupConfig { initial_rebalance_delay_ms: 1_000, assignment_interval_ms: 500, ..Default::default() });
        let mut members: Vec<Member> = (0..6).map(|i| {
            let mut m = Member::new(&format!("m{i}"), &format!("p{}", i % 2), simple_topology(1));
            if i == 3 { m.instance = Some("static-3".into()); }
            m
        }).collect();
        let mut topics = 0;
        for op in ops {
            match op {
                Op::Beat(i) | Op::Rejoin(i) => {
                    if matches!(op, Op::Rejoin(_)) {
                        forget(&mut members[i]);
                    }
                    let mut req = members[i].request();
                    req.group_id = group_of(i).into();
                    match h.heartbeat(&req) {
                        Ok(r) => members[i].adopt(&r.response),
                        Err(_) => forget(&mut members[i]),
                    }
                }
                Op::Leave(i) | Op::StaticLeave(i) => {
                    let mut req = members[i].request();
                    req.group_id = group_of(i).into();
                    req.member_epoch = if matches!(op, Op::Leave(_)) { -1 } else { -2 };
                    let _ = h.heartbeat(&req);
                    forget(&mut members[i]);
                }
                Op::Advance(ms) => h.advance(ms),
                Op::CreateTopic(n) => {
                    if topics == 0 { h.create_topic("input", n); topics += 1; }
                }
                Op::Upgrade(i) => {
                    members[i].topology = simple_topology(members[i].topology.epoch + 1);
                    forget(&mut members[i]);
                }
                Op::Commit(i, partition, offset) => {
                    let _ = h.run(|s, now| s.commit_offsets(group_of(i), &members[i].id, members[i].epoch, 9, &[commit(partition, offset)], now));
                }
                Op::SimpleCommit(partition, offset) => {
                    let _ = h.run(|s, now| s.commit_offsets("simple", "", -1, 9, &[commit(partition, offset)], now));
                }
                Op::Delete(g) => {
                    let _ = h.run(|s, _| s.delete_group(["simple", GROUPS[0], GROUPS[1]][g]));
                }
            }
            check_compacted(&h)?;
        }
        // Compacting is idempotent.
        let once = check_compacted(&h)?;
        let mut twice = once.clone();
        twice.compact();
        prop_assert_eq!(twice.records(), once.records());
    }
}

/// Many rebalances push the shard's own log past the compaction floor: it compacts itself as
/// it goes, stays near its live size, and still replays to the live state.
#[test]
fn a_busy_shard_compacts_its_own_log_and_replays_to_the_live_state() {
    let mut h = Harness::new(config());
    h.create_topic("input", 6);
    let mut members: Vec<Member> = (0..4)
        .map(|i| Member::new(&format!("m{i}"), &format!("p{i}"), simple_topology(1)))
        .collect();
    converge(&mut h, &mut members);
    for round in 0..150 {
        // One member leaves and comes back: two rebalances, each rewriting every member's target
        // and current assignment.
        let i = round % members.len();
        let mut leave = members[i].request();
        leave.member_epoch = -1;
        h.heartbeat(&leave).unwrap();
        forget(&mut members[i]);
        converge(&mut h, &mut members);
    }
    let log = h.shard.store().log();
    assert!(
        log.next_offset() > 2_000,
        "{} records written",
        log.next_offset()
    );
    assert!(log.len() < 1_200, "{} records held", log.len());
    h.assert_replay_matches();
    let mut compacted = log.clone();
    compacted.compact();
    // Per member: metadata, target and current assignment; per group: metadata, target
    // metadata, topology.
    assert_eq!(compacted.len(), 4 * 3 + 3);
}
