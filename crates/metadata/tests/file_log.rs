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
