use std::collections::BTreeMap;

use kcoord_wire::records::broker_registration_change_record::BrokerRegistrationChangeRecord;
use uuid::Uuid;

use super::*;
use crate::image::security::fixtures::{acl, credential};
use crate::Store;

fn feature(name: &str, level: i16) -> Record {
    Record::FeatureLevel(r::FeatureLevelRecord {
        name: name.into(),
        feature_level: level,
        ..Default::default()
    })
}

fn topic(name: &str, id: u128, replication_factor: i16) -> Record {
    Record::Topic(r::TopicRecord {
        name: name.into(),
        topic_id: Uuid::from_u128(id),
        replication_factor,
        ..Default::default()
    })
}

fn partition(topic: u128, partition_id: i32, leader: i32, leader_epoch: i32) -> Record {
    Record::Partition(r::PartitionRecord {
        partition_id,
        topic_id: Uuid::from_u128(topic),
        replicas: vec![1, 2],
        isr: vec![leader],
        leader,
        leader_epoch,
        ..Default::default()
    })
}

fn set_config(resource_type: i8, resource: &str, name: &str, value: Option<&str>) -> Record {
    Record::Config(r::ConfigRecord {
        resource_type,
        resource_name: resource.into(),
        name: name.into(),
        value: value.map(str::to_owned),
        ..Default::default()
    })
}

fn register(id: i32, epoch: i64, dir: u128) -> r::RegisterBrokerRecord {
    r::RegisterBrokerRecord {
        broker_id: id,
        broker_epoch: epoch,
        incarnation_id: Uuid::from_u128(100 + id as u128),
        end_points: vec![
            rb::BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: format!("b{id}"),
                port: 9092,
                security_protocol: 0,
                ..Default::default()
            },
            rb::BrokerEndpoint {
                name: "INTERNAL".into(),
                host: format!("b{id}"),
                port: 9094,
                security_protocol: 1,
                ..Default::default()
            },
        ],
        features: vec![rb::BrokerFeature {
            name: "metadata.version".into(),
            min_supported_version: 7,
            max_supported_version: 34,
            ..Default::default()
        }],
        rack: Some(format!("rack-{id}")),
        log_dirs: vec![Uuid::from_u128(dir + 1), Uuid::from_u128(dir)],
        static_configs: vec![
            rb::BrokerStaticConfig {
                name: "num.io.threads".into(),
                value: Some("8".into()),
                ..Default::default()
            },
            rb::BrokerStaticConfig {
                name: "broker.rack".into(),
                value: None,
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

/// A controller log with topics created and deleted, configs set and removed, brokers
/// registered, fenced, unfenced, changed and unregistered, features and producer id blocks.
fn varied_store() -> Store {
    let mut store = Store::new();
    let batches: Vec<Vec<Record>> = vec![
        vec![feature("metadata.version", 34), feature("group.version", 1)],
        vec![
            topic("orders", 1, 3),
            partition(1, 0, 1, 0),
            partition(1, 1, 2, 0),
        ],
        vec![
            set_config(TOPIC_RESOURCE, "orders", "retention.ms", Some("1000")),
            set_config(TOPIC_RESOURCE, "orders", "cleanup.policy", Some("compact")),
            set_config(TOPIC_RESOURCE, "orders", "retention.ms", None),
        ],
        vec![topic("tmp", 2, -1), partition(2, 0, 1, 0)],
        vec![Record::RemoveTopic(r::RemoveTopicRecord {
            topic_id: Uuid::from_u128(2),
            ..Default::default()
        })],
        vec![
            topic("tmp", 3, 1),
            partition(3, 0, 1, 0),
            partition(3, 0, 2, 1),
        ],
        vec![
            set_config(
                GROUP_RESOURCE,
                "g1",
                "streams.num.standby.replicas",
                Some("1"),
            ),
            set_config(
                GROUP_RESOURCE,
                "g1",
                "streams.session.timeout.ms",
                Some("50000"),
            ),
            set_config(GROUP_RESOURCE, "g1", "streams.session.timeout.ms", None),
            set_config(
                GROUP_RESOURCE,
                "g2",
                "streams.num.standby.replicas",
                Some("2"),
            ),
            set_config(GROUP_RESOURCE, "g2", "streams.num.standby.replicas", None),
            set_config(crate::BROKER_RESOURCE, "", "log.retention.ms", Some("5000")),
            set_config(
                crate::BROKER_RESOURCE,
                "1",
                "log.retention.ms",
                Some("6000"),
            ),
            set_config(
                crate::BROKER_RESOURCE,
                "1",
                "message.max.bytes",
                Some("1000"),
            ),
            set_config(crate::BROKER_RESOURCE, "1", "message.max.bytes", None),
        ],
        vec![Record::RegisterBroker(register(1, 10, 1000))],
        vec![Record::UnfenceBroker(r::UnfenceBrokerRecord {
            id: 1,
            epoch: 10,
            ..Default::default()
        })],
        vec![Record::RegisterBroker(register(2, 11, 2000))],
        vec![Record::BrokerRegistrationChange(
            BrokerRegistrationChangeRecord {
                broker_id: 2,
                broker_epoch: 11,
                fenced: -1,
                in_controlled_shutdown: 1,
                log_dirs: vec![Uuid::from_u128(2002)],
                cordoned_log_dirs: Some(vec![Uuid::from_u128(2002)]),
                ..Default::default()
            },
        )],
        vec![Record::RegisterBroker(register(3, 12, 3000))],
        vec![Record::UnregisterBroker(r::UnregisterBrokerRecord {
            broker_id: 3,
            broker_epoch: 12,
            ..Default::default()
        })],
        // Broker 1 comes back as a new incarnation, then is fenced.
        vec![Record::RegisterBroker(register(1, 20, 1000))],
        vec![Record::FenceBroker(r::FenceBrokerRecord {
            id: 1,
            epoch: 20,
            ..Default::default()
        })],
        vec![feature("streams.version", 1), feature("group.version", 0)],
        vec![feature("kraft.version", 1)],
        vec![Record::ProducerIds(r::ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 20,
            next_producer_id: 1000,
            ..Default::default()
        })],
        vec![Record::ProducerIds(r::ProducerIdsRecord {
            broker_id: 2,
            broker_epoch: 11,
            next_producer_id: 2000,
            ..Default::default()
        })],
        // Two ACLs, one removed again; a credential replaced, another removed.
        vec![
            Record::AccessControlEntry(acl(1)),
            Record::AccessControlEntry(acl(2)),
        ],
        vec![Record::RemoveAccessControlEntry(
            r::RemoveAccessControlEntryRecord {
                id: Uuid::from_u128(1),
                ..Default::default()
            },
        )],
        vec![
            Record::UserScramCredential(credential("alice", 1, 4096)),
            Record::UserScramCredential(credential("bob", 2, 4096)),
        ],
        vec![Record::UserScramCredential(credential("alice", 1, 8192))],
        vec![Record::RemoveUserScramCredential(
            r::RemoveUserScramCredentialRecord {
                name: "bob".into(),
                mechanism: 2,
                ..Default::default()
            },
        )],
    ];
    for batch in batches {
        store.append(batch).unwrap();
    }
    store
}

/// Replays `records` into an empty state from offset `base` on.
fn replay(records: &[Record], base: u64) -> LogState {
    let mut state = LogState::default();
    for (i, record) in records.iter().enumerate() {
        state.replay(record, base + i as u64).unwrap();
    }
    state
}

/// The registrations with the offsets a snapshot replayed from `base` gives them.
fn registrations_as_replayed(
    state: &LogState,
    records: &[Record],
    base: u64,
) -> BTreeMap<i32, BrokerRegistration> {
    let offsets: BTreeMap<i32, u64> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Record::RegisterBroker(b) => Some((b.broker_id, base + i as u64)),
            _ => None,
        })
        .collect();
    state
        .brokers
        .iter()
        .map(|b| {
            let mut b = b.clone();
            b.registration_offset = offsets[&b.id];
            (b.id, b)
        })
        .collect()
}

#[test]
fn a_replayed_snapshot_rebuilds_the_controller_state() {
    let store = varied_store();
    let state = store.state();
    // The log really is varied: every kind of image holds something.
    assert_eq!(state.topics.len(), 2);
    assert_eq!(state.brokers.len(), 2);
    assert!(state
        .brokers
        .get(1)
        .is_some_and(|b| b.fenced && b.epoch == 20));
    assert_eq!(state.group_configs.iter().count(), 1);
    assert_eq!(state.producer_ids.next_producer_id(), 2000);
    assert_eq!(state.security.acls().count(), 1);
    assert_eq!(
        state.security.credential("alice", 1).map(|c| c.iterations),
        Some(8192)
    );
    assert_eq!(state.security.credentials().count(), 1);

    let records = state.snapshot_records();
    let base = 500;
    let replayed = replay(&records, base);
    assert_eq!(replayed.topics, state.topics);
    assert_eq!(replayed.group_configs, state.group_configs);
    assert_eq!(state.broker_configs.iter().count(), 2);
    assert_eq!(replayed.broker_configs, state.broker_configs);
    assert_eq!(replayed.producer_ids, state.producer_ids);
    assert_eq!(replayed.security, state.security);
    assert_eq!(replayed.features.finalized(), state.features.finalized());
    assert_eq!(
        replayed.features.metadata_version(),
        state.features.metadata_version()
    );
    assert_eq!(replayed.streams_groups, state.streams_groups);
    assert_eq!(replayed.offsets, state.offsets);
    // Everything of a registration but its offset, which is the snapshot record's.
    assert_eq!(
        replayed
            .brokers
            .iter()
            .map(|b| (b.id, b.clone()))
            .collect::<BTreeMap<_, _>>(),
        registrations_as_replayed(state, &records, base)
    );
    // The features epoch is the offset of the snapshot's last FeatureLevelRecord.
    let last_feature = records
        .iter()
        .rposition(|r| matches!(r, Record::FeatureLevel(_)))
        .unwrap();
    assert_eq!(
        replayed.features.epoch(),
        (base + last_feature as u64) as i64
    );

    // A snapshot of the replayed state, replayed at the same offsets, is the same state.
    assert_eq!(replay(&replayed.snapshot_records(), base), replayed);
}

#[test]
fn a_snapshot_rewritten_into_the_file_log_replays_to_the_same_state() {
    let store = varied_store();
    let records: Vec<RecordAndVersion> = store
        .state()
        .snapshot_records()
        .into_iter()
        .map(Record::at_latest_version)
        .collect();
    let next = store.log().next_offset();
    let log = snapshot_log(&records, next).unwrap();
    assert_eq!(log.next_offset(), next);
    assert_eq!(log.len(), records.len());
    assert_eq!(log.iter().last().map(|r| r.offset), Some(next - 1));

    let dir = tempfile::tempdir().unwrap();
    let mut loaded = file_log::open(dir.path()).unwrap();
    loaded.writer.sync_from(store.log()).unwrap();
    loaded.writer.rewrite(&log).unwrap();
    drop(loaded);
    let reloaded = file_log::open(dir.path()).unwrap();
    assert_eq!(reloaded.log.next_offset(), next);
    let from_file = Store::replay_log(&reloaded.log).unwrap();
    let plain: Vec<Record> = records.into_iter().map(|r| r.record).collect();
    assert_eq!(
        from_file.state(),
        &replay(&plain, next - plain.len() as u64)
    );
}

#[test]
fn a_snapshot_must_fit_below_its_next_offset() {
    let records = vec![feature("metadata.version", 34).at_latest_version(); 3];
    assert!(matches!(
        snapshot_log(&records, 2),
        Err(SnapshotError::TooManyRecords {
            records: 3,
            next_offset: 2
        })
    ));
    assert_eq!(snapshot_log(&[], 0).unwrap().next_offset(), 0);
}

#[test]
fn an_empty_state_has_an_empty_snapshot() {
    assert!(LogState::default().snapshot_records().is_empty());
}

#[test]
fn a_snapshot_keeps_registration_offsets_and_the_features_epoch() {
    let store = varied_store();
    let state = store.state();
    let next = store.log().next_offset();
    let log = state.snapshot(next).unwrap();
    assert_eq!(log.next_offset(), next);
    assert_eq!(log.len(), state.snapshot_records().len());
    assert!(log.len() < store.log().len(), "a snapshot is smaller");
    // Replayed, it is the very same state: registration offsets and the features epoch too.
    let replayed = Store::replay_log(&log).unwrap();
    assert_eq!(replayed.state(), state);
    // The records the brokers' offsets do not pin sit just below the next offset.
    assert_eq!(log.last().map(|r| r.offset), Some(next - 1));
    // A snapshot of the snapshot is the same log.
    assert_eq!(
        replayed.state().snapshot(next).unwrap().records(),
        log.records()
    );
}

#[test]
fn snapshot_records_are_written_at_the_finalized_metadata_versions_record_versions() {
    let mut store = Store::new();
    store
        .append(vec![feature("metadata.version", 21)]) // 3.9-IV0: RegisterBrokerRecord v3
        .unwrap();
    let mut old = register(1, 1, 1000);
    old.static_configs.clear();
    store.append(vec![Record::RegisterBroker(old)]).unwrap();
    store
        .append(vec![topic("t", 9, 1), partition(9, 0, 1, 0)])
        .unwrap();
    let log = store.state().snapshot(store.log().next_offset()).unwrap();
    let versions: Vec<(i16, i16)> = log.iter().map(|r| (r.record_type, r.version)).collect();
    let register_type = r::RegisterBrokerRecord::API_KEY;
    assert!(versions.contains(&(register_type, 3)), "{versions:?}");
    assert!(
        versions.contains(&(r::FeatureLevelRecord::API_KEY, 0)),
        "{versions:?}"
    );
    assert_eq!(
        Store::replay_log(&log).unwrap().state(),
        store.state(),
        "{versions:?}"
    );
}

#[test]
fn a_snapshot_after_a_long_history_fits_and_a_wrong_next_offset_is_refused() {
    let mut store = Store::new();
    store.append(vec![feature("metadata.version", 34)]).unwrap();
    store
        .append(vec![Record::RegisterBroker(register(1, 1, 1000))])
        .unwrap();
    for i in 0..200u128 {
        store
            .append(vec![topic("loop", 10 + i, 1), partition(10 + i, 0, 1, 0)])
            .unwrap();
        store
            .append(vec![Record::RemoveTopic(r::RemoveTopicRecord {
                topic_id: Uuid::from_u128(10 + i),
                ..Default::default()
            })])
            .unwrap();
    }
    store
        .append(vec![topic("kept", 5, 1), partition(5, 0, 1, 0)])
        .unwrap();
    let next = store.log().next_offset();
    let log = store.state().snapshot(next).unwrap();
    assert_eq!(log.len(), 4);
    let offsets: Vec<u64> = log.iter().map(|r| r.offset).collect();
    // metadata.version at its epoch (0), the broker at its registration (1), the topic last.
    assert_eq!(offsets, vec![0, 1, next - 2, next - 1]);
    assert_eq!(Store::replay_log(&log).unwrap().state(), store.state());
    // The registration offset must lie below the next offset.
    assert!(matches!(
        store.state().snapshot(1),
        Err(SnapshotError::Placement { .. })
    ));
}
