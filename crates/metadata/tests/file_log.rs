//! A store written through a `LogWriter` and read back with `file_log::open` replays to the same
//! state: what a restarted controller relies on (R75).
use kcoord_metadata::file_log;
use kcoord_metadata::{Record, Store};
use kcoord_wire::records as r;
use uuid::Uuid;

#[test]
fn r75_a_store_replayed_from_its_file_has_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut loaded = file_log::open(dir.path()).unwrap();
    let mut store = Store::new();
    let topic_id = Uuid::from_u128(9);
    store
        .append(vec![Record::Topic(r::TopicRecord {
            name: "orders".into(),
            topic_id,
            ..Default::default()
        })])
        .unwrap();
    loaded.writer.sync_from(store.log()).unwrap();
    let mut register = r::RegisterBrokerRecord {
        broker_id: 4,
        broker_epoch: 1,
        ..Default::default()
    };
    register.static_configs = vec![
        r::register_broker_record::BrokerStaticConfig {
            name: "num.io.threads".into(),
            value: Some("16".into()),
            ..Default::default()
        },
        r::register_broker_record::BrokerStaticConfig {
            name: "broker.rack".into(),
            value: None,
            ..Default::default()
        },
    ];
    store
        .append(vec![Record::RegisterBroker(register)])
        .unwrap();
    loaded.writer.sync_from(store.log()).unwrap();
    drop(loaded);

    let reloaded = file_log::open(dir.path()).unwrap();
    let replayed = Store::replay_log(&reloaded.log).unwrap();
    assert_eq!(replayed.state(), store.state());
    let broker = replayed.state().brokers.get(4).unwrap();
    assert_eq!(
        broker.static_configs.get("num.io.threads"),
        Some(&Some("16".to_string()))
    );
    assert_eq!(broker.static_configs.get("broker.rack"), Some(&None));
}

fn commit(partition: i32, offset: Option<i64>) -> Record {
    Record::OffsetCommit(
        r::OffsetCommitKey {
            group: "g".into(),
            topic: "orders".into(),
            partition,
            ..Default::default()
        },
        offset.map(|offset| r::OffsetCommitValue {
            offset,
            ..Default::default()
        }),
    )
}

/// A coordinator shard's way: each batch's records (from `append_logged`) are written as they
/// are, whatever the in-memory compaction drops, and the compacted log is rewritten now and
/// then. Reloading gives the same state and next offset.
#[test]
fn a_compacting_store_written_batch_by_batch_and_rewritten_reloads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = file_log::open(dir.path()).unwrap().writer;
    let mut store = Store::new();
    for round in 0..60i64 {
        let batch: Vec<_> = (0..40)
            .map(|p| commit(p, (i64::from(p) % 7 != round % 7).then_some(round)))
            .map(Record::at_latest_version)
            .collect();
        let records = store.append_logged(batch).unwrap();
        writer.write(&records).unwrap();
        if round % 3 == 2 {
            writer.sync().unwrap();
        }
        if round == 40 {
            // The in-memory log has compacted by now: its offsets have gaps.
            assert!(store.log().len() < store.log().next_offset() as usize);
            writer.rewrite(store.log()).unwrap();
        }
    }
    writer.sync().unwrap();
    drop(writer);
    let reloaded = file_log::open(dir.path()).unwrap();
    assert_eq!(reloaded.log.next_offset(), store.log().next_offset());
    let replayed = Store::replay_log(&reloaded.log).unwrap();
    assert_eq!(replayed.state(), store.state());
}
