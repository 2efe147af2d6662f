//! The shard's side of its runtime (`kcoord_coordinator::runtime`): a job's records come out as
//! one batch, a job with a refused batch is undone whole, and a shard rebuilt from its log has
//! its members with fresh session timers.
mod support;

use kcoord_coordinator::runtime::JobEnd;
use kcoord_coordinator::CoordinatorShard;
use kcoord_wire::ErrorCode;
use support::{config, converge, simple_topology, Harness, Member, GROUP};

#[test]
fn a_jobs_records_come_out_as_one_batch_with_their_log_offsets() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mark = h.shard.begin_job();
    let before = h.shard.store().log().next_offset();
    let mut m = Member::new("m1", "p1", simple_topology(0));
    m.beat(&mut h);
    let end = h.shard.end_job(mark, h.now).unwrap();
    let JobEnd::Appended(records) = end else {
        panic!("the job was not undone: {end:?}");
    };
    assert!(!records.is_empty(), "a join writes records");
    let offsets: Vec<u64> = records.iter().map(|r| r.offset).collect();
    let expected: Vec<u64> = (before..h.shard.store().log().next_offset()).collect();
    assert_eq!(offsets, expected);
}

#[test]
fn an_oversize_record_is_refused_before_it_applies_and_the_job_is_undone() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut members = vec![Member::new("m1", "p1", simple_topology(0))];
    converge(&mut h, &mut members);
    let state = h.shard.state().clone();
    let next = h.shard.store().log().next_offset();

    // A member of another group joins with a topology whose record cannot fit one log entry
    // (64 MiB): source topics named at Kafka's longest, about 70 MB of them.
    let name = "t".repeat(249);
    let mut huge = simple_topology(0);
    huge.subtopologies[0].source_topics = vec![name; 280_000];
    let mut request = Member::new("big", "p2", huge).request();
    request.group_id = "other".into();
    let mark = h.shard.begin_job();
    let error = h.heartbeat(&request).expect_err("the record is too large");
    assert_eq!(error.code, ErrorCode::UNKNOWN_SERVER_ERROR);
    assert!(matches!(
        h.shard.end_job(mark, h.now),
        Ok(JobEnd::RolledBack)
    ));
    assert_eq!(h.shard.state(), &state, "nothing of the join applied");
    assert_eq!(h.shard.store().log().next_offset(), next);
    assert!(h.shard.group("other").is_none());
    // The shard goes on: its group still heartbeats.
    members[0].beat(&mut h);
    assert!(h.shard.group(GROUP).is_some());
}

#[test]
fn a_shard_loaded_from_its_log_has_its_groups_and_fences_silent_members_after_a_session() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let mut members = vec![
        Member::new("m1", "p1", simple_topology(0)),
        Member::new("m2", "p2", simple_topology(0)),
    ];
    converge(&mut h, &mut members);
    let log = h.shard.store().log().clone();
    let loaded_at = h.now + 60_000;
    let mut loaded = CoordinatorShard::from_log(config(), 7, &log, loaded_at).unwrap();
    assert_eq!(loaded.state(), h.shard.state());
    let session = i64::from(config().session_timeout_ms);
    let topics = h.catalog.state().topics.clone();
    // The sessions start at the load, not at the members' last heartbeat before it.
    loaded.tick(&topics, loaded_at + session - 1).unwrap();
    assert_eq!(loaded.group(GROUP).map(|g| g.members.len()), Some(2));
    loaded.tick(&topics, loaded_at + session).unwrap();
    assert_eq!(loaded.group(GROUP).map(|g| g.members.len()), Some(0));
}
