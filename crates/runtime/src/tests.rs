//! The runtime's contract on a small core: a store of topics and a list of applied effects.
use kcoord_metadata::{Record, Store};
use kcoord_wire::records::TopicRecord;

use super::*;

#[derive(Debug, Default)]
struct Topics {
    store: Store,
    effects: Vec<&'static str>,
    /// Makes the next replay panic.
    broken: bool,
}

impl Core for Topics {
    type Effect = &'static str;

    fn prepare(&self, records: &[RecordAndVersion]) -> Result<Vec<LogRecord>, ReplayError> {
        self.store.prepare(records)
    }

    fn replay(
        &mut self,
        records: &[RecordAndVersion],
        entries: Vec<LogRecord>,
    ) -> Result<(), ReplayError> {
        assert!(!self.broken, "a replay bug");
        self.store.commit(records, entries)
    }

    fn apply(&mut self, effect: &'static str) {
        self.effects.push(effect);
    }

    fn next_offset(&self) -> u64 {
        self.store.log().next_offset()
    }
}

fn topic(name: &str, id: u128) -> RecordAndVersion {
    Record::Topic(TopicRecord {
        name: name.into(),
        topic_id: uuid::Uuid::from_u128(id),
        ..Default::default()
    })
    .at_latest_version()
}

fn create(name: &'static str, id: u128) -> impl FnOnce(&Topics) -> Outcome<usize, &'static str> {
    move |core: &Topics| Outcome {
        records: vec![topic(name, id)],
        response: core.store.state().topics.len(),
        effects: vec![name],
    }
}

/// A log that records what it was given, and refuses batches while `refusing`.
#[derive(Debug, Default)]
struct Recorder {
    batches: Vec<(Vec<u64>, u64)>,
    refusing: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("disk full")]
struct DiskFull;

impl Log for Recorder {
    type Receipt = u64;
    type Error = DiskFull;

    fn append(&mut self, entries: &[LogRecord], next_offset: u64) -> Result<u64, DiskFull> {
        if self.refusing {
            return Err(DiskFull);
        }
        self.batches
            .push((entries.iter().map(|e| e.offset).collect(), next_offset));
        Ok(next_offset)
    }
}

#[test]
fn a_committed_outcome_is_appended_then_replayed_then_its_effects_applied() {
    let mut runtime = Runtime::new(Topics::default(), Recorder::default());
    let done = runtime.run(create("a", 1)).unwrap();
    assert_eq!((done.response, done.records, done.receipt), (0, 1, 1));
    let done = runtime.run(create("b", 2)).unwrap();
    assert_eq!(done.response, 1, "the handler saw the first batch");
    assert_eq!(runtime.store.state().topics.len(), 2);
    assert_eq!(runtime.effects, vec!["a", "b"]);
    assert_eq!(runtime.log().batches, vec![(vec![0], 1), (vec![1], 2)]);
    // A batch without records still asks the log what to wait for.
    let done = runtime.run(|_| Outcome::<(), &str>::answer(())).unwrap();
    assert_eq!(done.receipt, 2);
}

#[test]
fn a_handler_that_panics_changes_nothing_and_the_runtime_goes_on() {
    let mut runtime = Runtime::new(Topics::default(), Recorder::default());
    let refused = runtime
        .run(|_| -> Outcome<(), &'static str> { panic!("boom") })
        .unwrap_err();
    assert!(matches!(&refused.error, RunError::Panicked(m) if m == "boom"));
    assert!(refused.decided.is_none());
    assert!(runtime.log().batches.is_empty());
    runtime.run(create("a", 1)).unwrap();
    assert_eq!(runtime.store.log().next_offset(), 1);
}

#[test]
fn a_batch_that_does_not_replay_is_refused_before_the_log_sees_it() {
    let mut runtime = Runtime::new(Topics::default(), Recorder::default());
    runtime.run(create("a", 1)).unwrap();
    // The same name with another id is refused by the topics image.
    let refused = runtime.run(create("a", 2)).unwrap_err();
    assert!(matches!(refused.error, RunError::Invalid(_)));
    assert_eq!(refused.decided, Some(1), "the decided response comes back");
    assert_eq!(runtime.log().batches.len(), 1);
    assert_eq!(runtime.effects, vec!["a"]);
    assert_eq!(runtime.store.log().next_offset(), 1);
}

#[test]
fn a_batch_the_log_refuses_changes_nothing() {
    let mut runtime = Runtime::new(Topics::default(), Recorder::default());
    let before = runtime.store.state().clone();
    runtime.set_log(Recorder {
        refusing: true,
        ..Default::default()
    });
    let refused = runtime.run(create("a", 1)).unwrap_err();
    assert!(matches!(refused.error, RunError::Log(DiskFull)));
    assert_eq!(runtime.store.state(), &before);
    assert_eq!(runtime.store.log().next_offset(), 0);
    assert!(runtime.effects.is_empty());
}

#[test]
fn a_replay_that_panics_is_reported_as_diverged_and_the_core_can_be_rebuilt() {
    let mut runtime = Runtime::new(Topics::default(), Volatile);
    runtime.run(create("a", 1)).unwrap();
    let broken = Topics {
        store: Store::replay_log(runtime.store.log()).unwrap(),
        broken: true,
        ..Default::default()
    };
    runtime.replace_core(broken);
    let refused = runtime.run(create("b", 2)).unwrap_err();
    assert!(matches!(refused.error, RunError::Diverged(_)));
    let rebuilt = Topics {
        store: Store::replay_log(runtime.store.log()).unwrap(),
        ..Default::default()
    };
    runtime.replace_core(rebuilt);
    assert_eq!(runtime.store.state().topics.len(), 1);
    runtime.run(create("b", 2)).unwrap();
    assert_eq!(runtime.store.state().topics.len(), 2);
}

#[test]
fn inputs_go_through_the_same_apply_as_effects() {
    let mut runtime = Runtime::new(Topics::default(), Volatile);
    runtime.input("catalog");
    runtime.run(create("a", 1)).unwrap();
    assert_eq!(runtime.effects, vec!["catalog", "a"]);
}
