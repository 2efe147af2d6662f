//! The shard on the runtime (`kcoord_runtime`): a job's records go to the log as one batch
//! before they are replayed, a job whose batch cannot be appended changes nothing, and a shard
//! rebuilt from its log has its members with fresh session timers.
mod support;

use std::sync::Arc;

use kcoord_coordinator::{CoordinatorShard, HeartbeatContext};
use kcoord_metadata::LogRecord;
use kcoord_runtime::{Log, Runtime, Volatile};
use kcoord_wire::ErrorCode;
use support::{config, converge, simple_topology, Harness, Member, GROUP};

/// A log that keeps the offsets of every batch it is given.
#[derive(Default)]
struct Batches(Vec<Vec<u64>>);

impl Log for Batches {
    type Receipt = ();
    type Error = std::convert::Infallible;

    fn append(&mut self, entries: &[LogRecord], _: u64) -> Result<(), Self::Error> {
        self.0.push(entries.iter().map(|e| e.offset).collect());
        Ok(())
    }
}

#[test]
fn a_jobs_records_go_to_the_log_as_one_batch_with_their_log_offsets() {
    let mut h = Harness::new(config());
    h.create_topic("input", 2);
    let topics = Arc::new(h.catalog.state().topics.clone());
    let mut shard = Runtime::new(CoordinatorShard::new(config(), 7), Batches::default());
    shard.run(|s| s.topics_changed(topics)).unwrap();
    let before = shard.store().log().next_offset();
    let ctx = HeartbeatContext::default();
    let request = Member::new("m1", "p1", simple_topology(0)).request();
    let done = shard
        .run(|s| s.streams_group_heartbeat(&ctx, &request, 1_000))
        .unwrap();
    assert!(done.response.is_ok());
    assert!(done.records > 1, "a join writes records");
    let expected: Vec<u64> = (before..shard.store().log().next_offset()).collect();
    assert_eq!(shard.log().0.last(), Some(&expected));
}

#[test]
fn an_oversize_record_is_refused_before_anything_of_its_job_applies() {
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
    let error = h.heartbeat(&request).expect_err("the record is too large");
    assert_eq!(error.code, ErrorCode::UNKNOWN_SERVER_ERROR);
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
    let loaded = CoordinatorShard::from_log(config(), 7, &log, loaded_at).unwrap();
    assert_eq!(loaded.state(), h.shard.state());
    let mut loaded = Runtime::new(loaded, Volatile);
    let session = i64::from(config().session_timeout_ms);
    // The sessions start at the load, not at the members' last heartbeat before it.
    kcoord_coordinator::tick(&mut loaded, loaded_at + session - 1);
    assert_eq!(loaded.group(GROUP).map(|g| g.members.len()), Some(2));
    let tick = kcoord_coordinator::tick(&mut loaded, loaded_at + session);
    assert_eq!(tick.events.len(), 2, "{tick:?}");
    assert_eq!(loaded.group(GROUP).map(|g| g.members.len()), Some(0));
}
