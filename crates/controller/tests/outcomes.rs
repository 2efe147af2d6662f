//! The handler contract: a handler returns an outcome and changes nothing; `apply` appends the
//! whole batch or nothing; `prepare` gives the records at the offsets the log will give them.
mod support;

use kcoord_controller::{Effect, Outcome};
use kcoord_metadata::{Record, Store};
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::CreateTopicsRequest;
use kcoord_wire::records::{PartitionRecord, TopicRecord};
use support::*;
use uuid::Uuid;

fn create(name: &str) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: 2,
            replication_factor: -1,
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn handlers_change_nothing_until_their_outcome_is_applied() {
    let mut h = Harness::new();
    let before = h.controller.store().log().len();
    let registration = h
        .controller
        .register_broker(&registration(1, 0), 6, h.now)
        .unwrap();
    let topics = h
        .controller
        .create_topics(&create("orders"), || Uuid::from_u128(9));
    assert_eq!(h.controller.store().log().len(), before);
    assert!(h.controller.broker(1).is_none());
    assert!(h.controller.state().topics.get("orders").is_none());
    // The epoch is the offset the registration record gets when its batch is the next one.
    assert_eq!(registration.response.epoch, before as i64);
    assert_eq!(
        registration.effects,
        vec![Effect::ForgetBroker { broker_id: 1 }]
    );

    let reply = h.controller.apply(registration).unwrap();
    assert_eq!(h.controller.broker(1).unwrap().epoch, reply.epoch);
    let results = h.controller.apply(topics).unwrap();
    assert_eq!(results[0].error_code, 0);
    assert_eq!(
        h.controller
            .state()
            .topics
            .get("orders")
            .map(|t| t.partition_count()),
        Some(2)
    );
    h.assert_replay_matches();
}

#[test]
fn a_batch_that_does_not_replay_applies_nothing_at_all() {
    let mut h = Harness::new();
    let before_log = h.controller.store().log().len();
    let before_state = h.controller.state().clone();
    // A topic, then a partition of a topic that does not exist: the second record fails.
    let outcome = Outcome {
        records: vec![
            Record::Topic(TopicRecord {
                name: "t".into(),
                topic_id: Uuid::from_u128(1),
                ..Default::default()
            })
            .at_latest_version(),
            Record::Partition(PartitionRecord {
                topic_id: Uuid::from_u128(2),
                ..Default::default()
            })
            .at_latest_version(),
        ],
        response: (),
        effects: vec![Effect::ForgetBroker { broker_id: 1 }],
    };
    assert!(h.controller.prepare(&outcome.records).is_err());
    let e = h.controller.apply(outcome).unwrap_err();
    assert!(e.message.starts_with("records did not apply"), "{e}");
    assert_eq!(h.controller.store().log().len(), before_log);
    assert_eq!(h.controller.state(), &before_state);
}

#[test]
fn prepare_encodes_the_batch_at_the_offsets_the_log_gives_it() {
    let mut h = Harness::new();
    let outcome = h
        .controller
        .create_topics(&create("orders"), || Uuid::from_u128(9));
    let prepared = h.controller.prepare(&outcome.records).unwrap();
    let next = h.controller.store().log().next_offset();
    h.controller.apply(outcome).unwrap();
    let appended = h.controller.store().log().records();
    assert_eq!(prepared.len(), 3, "a TopicRecord and two PartitionRecords");
    assert_eq!(prepared[0].offset, next);
    assert_eq!(&appended[appended.len() - 3..], &prepared[..]);
    assert_eq!(
        Store::replay_log(h.controller.store().log())
            .unwrap()
            .state(),
        h.controller.state()
    );
}

#[test]
fn an_expired_session_is_fenced_only_when_the_tick_is_applied() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    h.now += 9_001;
    let outcome = h.controller.tick(h.now);
    assert_eq!(outcome.records.len(), 1);
    assert!(!h.controller.broker(1).unwrap().fenced);
    // Not applied (the log could not take it): the next tick decides the same again.
    assert_eq!(h.controller.tick(h.now), outcome);
    h.controller.apply(outcome).unwrap();
    assert!(h.controller.broker(1).unwrap().fenced);
    assert_eq!(h.controller.next_deadline(), None);
    let again = h.controller.tick(h.now);
    assert!(
        again.records.is_empty() && again.response.is_empty(),
        "epoch {epoch}"
    );
}
