//! BrokerRegistration: every rule of Kafka's `ClusterControlManager.registerBroker`, in its
//! order, plus KIP-1326 (R70, R73-R76).
mod support;

use std::collections::BTreeMap;

use kcoord_controller::{Controller, ControllerConfig};
use kcoord_metadata::Record;
use kcoord_wire::messages::broker_registration_request::Feature;
use kcoord_wire::messages::BrokerRegistrationRequest;
use kcoord_wire::records::RegisterBrokerRecord;
use kcoord_wire::{Decodable, ErrorCode};
use support::*;
use uuid::Uuid;

fn error(h: &mut Harness, request: &BrokerRegistrationRequest) -> (ErrorCode, String) {
    let e = h.register(request).expect_err("rejected");
    (e.code, e.message)
}

#[test]
fn a_wrong_cluster_id_is_inconsistent_cluster_id() {
    let mut h = Harness::new();
    let mut request = registration(1, 0);
    request.cluster_id = "other".into();
    assert_eq!(
        error(&mut h, &request),
        (
            ErrorCode::INCONSISTENT_CLUSTER_ID,
            format!("Expected cluster ID {CLUSTER}, but got cluster ID other")
        )
    );
    let response = h.controller.registration_response(&request, 6, h.now);
    assert_eq!(
        (response.error_code, response.broker_epoch),
        (ErrorCode::INCONSISTENT_CLUSTER_ID.code(), -1)
    );
    assert!(h.controller.brokers().is_empty());
}

#[test]
fn another_incarnation_during_a_live_session_is_a_duplicate_registration() {
    let mut h = Harness::new();
    h.register_unfenced(&registration(1, 0));
    h.now += 9_000;
    let (code, message) = error(&mut h, &registration(1, 1));
    assert_eq!(code, ErrorCode::DUPLICATE_BROKER_REGISTRATION);
    assert!(
        message.starts_with("Another broker is registered with that broker id."),
        "{message}"
    );
    // The same incarnation may always register again (an amendment).
    assert!(h.register(&registration(1, 0)).is_ok());
}

#[test]
fn another_incarnation_registers_once_the_session_expired() {
    let mut h = Harness::new();
    let first = h.register_unfenced(&registration(1, 0));
    h.now += 9_001;
    let second = h
        .register(&registration(1, 1))
        .expect("the old session is gone");
    assert!(second > first);
    assert_eq!(
        h.controller.broker(1).unwrap().incarnation_id,
        incarnation(1, 1)
    );
}

#[test]
fn a_registration_without_heartbeats_has_no_session_to_protect() {
    // Kafka starts a session with the first heartbeat, not with the registration.
    let mut h = Harness::new();
    h.register(&registration(1, 0)).unwrap();
    assert!(h.register(&registration(1, 1)).is_ok());
}

#[test]
fn a_migrating_zk_broker_is_broker_id_not_registered() {
    let mut h = Harness::new();
    let mut request = registration(1, 0);
    request.is_migrating_zk_broker = true;
    assert_eq!(
        error(&mut h, &request),
        (
            ErrorCode::BROKER_ID_NOT_REGISTERED,
            "Controller does not support registering ZK brokers.".into()
        )
    );
}

#[test]
fn checks_run_in_kafkas_order() {
    let mut h = Harness::new();
    h.register_unfenced(&registration(1, 0));
    // Everything wrong at once: the cluster id is reported first.
    let mut request = registration(1, 1);
    request.cluster_id = "other".into();
    request.is_migrating_zk_broker = true;
    request.log_dirs.clear();
    request.features.clear();
    assert_eq!(
        error(&mut h, &request).0,
        ErrorCode::INCONSISTENT_CLUSTER_ID
    );
    request.cluster_id = CLUSTER.into();
    assert_eq!(
        error(&mut h, &request).0,
        ErrorCode::DUPLICATE_BROKER_REGISTRATION
    );
    request.incarnation_id = incarnation(1, 0);
    assert_eq!(
        error(&mut h, &request).0,
        ErrorCode::BROKER_ID_NOT_REGISTERED
    );
    request.is_migrating_zk_broker = false;
    assert_eq!(
        error(&mut h, &request),
        (
            ErrorCode::INVALID_REGISTRATION,
            "No directories specified in request".into()
        )
    );
    request.log_dirs = vec![dir(1, 1)];
    // A feature that does not fit is found before the missing metadata.version.
    request.features = vec![Feature {
        name: "group.version".into(),
        min_supported_version: 1,
        max_supported_version: 1,
        ..Default::default()
    }];
    assert_eq!(error(&mut h, &request).0, ErrorCode::UNSUPPORTED_VERSION);
    request.features.clear();
    assert_eq!(error(&mut h, &request).0, ErrorCode::INVALID_REGISTRATION);
}

#[test]
fn log_dirs_must_be_present_unreserved_unique_and_not_another_brokers() {
    let mut h = Harness::new();
    h.register(&registration(1, 0)).unwrap();
    let with_dirs = |dirs: Vec<Uuid>| BrokerRegistrationRequest {
        log_dirs: dirs,
        ..registration(2, 0)
    };
    let cases = [
        (vec![], "No directories specified in request".to_string()),
        (
            vec![dir(2, 1), Uuid::from_u128(2)],
            "Reserved directory ID in request".to_string(),
        ),
        (
            vec![dir(2, 1), dir(2, 1)],
            "Duplicate directory ID in request".to_string(),
        ),
        (
            vec![dir(2, 1), dir(1, 1)],
            format!(
                "Broker 1 is already registered with directory {}",
                kcoord_wire::kafka_uuid(&dir(1, 1))
            ),
        ),
    ];
    for (dirs, message) in cases {
        assert_eq!(
            error(&mut h, &with_dirs(dirs)),
            (ErrorCode::INVALID_REGISTRATION, message)
        );
    }
    // A broker may register its own directories again.
    assert!(h
        .register(&BrokerRegistrationRequest {
            log_dirs: vec![dir(1, 1), dir(1, 2)],
            ..registration(1, 0)
        })
        .is_ok());
    assert!(h.register(&with_dirs(vec![dir(2, 1)])).is_ok());
}

#[test]
fn log_dirs_are_neither_checked_nor_recorded_before_3_7_iv2() {
    let mut h = Harness::at_level(16);
    let epoch = h
        .register(&BrokerRegistrationRequest {
            log_dirs: vec![],
            ..registration(1, 0)
        })
        .unwrap();
    assert!(h
        .register(&BrokerRegistrationRequest {
            log_dirs: vec![dir(1, 1), dir(1, 1)],
            ..registration(1, 0)
        })
        .is_ok());
    assert!(h.controller.broker(1).unwrap().directories.is_empty());
    assert_eq!(h.controller.broker(1).unwrap().epoch, epoch);
    let mut h = Harness::at_level(17);
    assert_eq!(
        error(
            &mut h,
            &BrokerRegistrationRequest {
                log_dirs: vec![],
                ..registration(1, 0)
            }
        )
        .0,
        ErrorCode::INVALID_REGISTRATION
    );
}

#[test]
fn a_registration_without_metadata_version_is_invalid() {
    let mut h = Harness::new();
    let request = BrokerRegistrationRequest {
        features: vec![],
        ..registration(1, 0)
    };
    assert_eq!(
        error(&mut h, &request),
        (
            ErrorCode::INVALID_REGISTRATION,
            "Request features do not contain 'metadata.version'".into()
        )
    );
}

#[test]
fn a_feature_range_without_the_finalized_level_is_unsupported_version() {
    let mut h = Harness::at_level(34);
    let request = BrokerRegistrationRequest {
        features: vec![metadata_version_feature(7, 33)],
        ..registration(1, 0)
    };
    assert_eq!(
        error(&mut h, &request),
        (
            ErrorCode::UNSUPPORTED_VERSION,
            "Unable to register because the broker does not support finalized version 34 of metadata.version. \
             The broker wants a version between 7 and 33, inclusive."
                .into()
        )
    );
    // A Kafka 4.4 broker fits a cluster finalized at 4.4-IV2.
    let mut h = Harness::at_level(33);
    assert!(h.register(&request).is_ok());
}

#[test]
fn a_feature_the_controller_has_not_finalized_is_checked_at_level_0() {
    let mut h = Harness::new();
    let mut request = registration(1, 0);
    request.features.push(Feature {
        name: "share.version".into(),
        min_supported_version: 1,
        max_supported_version: 1,
        ..Default::default()
    });
    assert_eq!(error(&mut h, &request).0, ErrorCode::UNSUPPORTED_VERSION);
    request.features[1].min_supported_version = 0;
    assert!(h.register(&request).is_ok());
    let features = &h.controller.broker(1).unwrap().supported_features;
    assert_eq!(
        features.keys().collect::<Vec<_>>(),
        vec!["metadata.version", "share.version"]
    );
}

#[test]
fn a_finalized_feature_the_broker_omits_is_checked_as_0_to_0() {
    let mut h =
        Harness::with_config(ControllerConfig::new(CLUSTER).with_feature("group.version", 1));
    assert_eq!(
        error(&mut h, &registration(1, 0)),
        (
            ErrorCode::UNSUPPORTED_VERSION,
            "Unable to register because the broker does not support finalized version 1 of group.version. \
             The broker wants a version between 0 and 0, inclusive."
                .into()
        )
    );
    let mut request = registration(1, 0);
    request.features.push(Feature {
        name: "group.version".into(),
        min_supported_version: 0,
        max_supported_version: 1,
        ..Default::default()
    });
    assert!(h.register(&request).is_ok());
    // A feature finalized at 0 is disabled: nothing to support.
    let mut h =
        Harness::with_config(ControllerConfig::new(CLUSTER).with_feature("group.version", 0));
    assert!(h.register(&registration(1, 0)).is_ok());
}

#[test]
fn a_new_incarnation_registers_fenced_with_the_offset_of_its_batch_as_epoch() {
    let mut h = Harness::new();
    let next = h.controller.store().log().next_offset() as i64;
    let epoch = h.register(&registration(1, 0)).unwrap();
    assert_eq!(epoch, next);
    let b = h.controller.broker(1).unwrap();
    assert!(b.fenced && !b.in_controlled_shutdown);
    assert_eq!((b.epoch, b.registration_offset), (epoch, epoch as u64));
    let response = h
        .controller
        .registration_response(&registration(2, 0), 6, h.now);
    assert_eq!((response.error_code, response.broker_epoch), (0, epoch + 1));
}

#[test]
fn the_same_incarnation_amends_and_keeps_epoch_fencing_and_controlled_shutdown() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    let mut amended = registration(1, 0);
    amended.rack = Some("rack-b".into());
    amended.listeners[0].port = 19092;
    amended.static_configs = vec![static_config("num.io.threads", Some("16"))];
    let again = h.register(&amended).unwrap();
    assert_eq!(again, epoch);
    let b = h.controller.broker(1).unwrap();
    assert!(!b.fenced, "an amendment does not fence");
    assert_eq!(b.epoch, epoch);
    assert_eq!(b.rack.as_deref(), Some("rack-b"));
    assert_eq!(b.listeners[0].port, 19092);
    assert_eq!(
        b.static_configs,
        BTreeMap::from([("num.io.threads".to_string(), Some("16".to_string()))])
    );
    assert!(
        b.registration_offset > epoch as u64,
        "the amendment is a new record"
    );
    h.assert_replay_matches();
}

#[test]
fn a_new_incarnation_replaces_an_unfenced_one_fenced_with_a_new_epoch() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    h.now += 10_000;
    let next = h.register(&registration(1, 1)).unwrap();
    assert!(next > epoch);
    assert!(h.controller.broker(1).unwrap().fenced);
    // The old epoch is stale now.
    let stale = h
        .controller
        .try_broker_heartbeat(&heartbeat(1, epoch, 100), h.now)
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::STALE_BROKER_EPOCH);
}

#[test]
fn r70_v6_static_configs_arrive_and_v0_to_v5_are_still_accepted() {
    for version in 0..=6 {
        let mut h = Harness::new();
        let mut request = registration(1, 0);
        if version < 6 {
            request.static_configs.clear();
        }
        let epoch = h
            .register_v(&request, version)
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        let b = h.controller.broker(1).unwrap();
        assert_eq!(b.epoch, epoch);
        assert_eq!(
            b.static_configs.len(),
            if version == 6 { 2 } else { 0 },
            "v{version}"
        );
        assert_eq!(
            b.cordoned_directories.is_some(),
            version >= 5,
            "CordonedLogDirs exist from v5"
        );
    }
}

#[test]
fn r73_static_configs_are_copied_into_register_broker_record_v5_at_level_34() {
    let mut h = Harness::at_level(34);
    h.register(&registration(1, 0)).unwrap();
    let (entry, record) = h.last_record();
    assert_eq!((entry.record_type, entry.version), (0, 5));
    let Record::RegisterBroker(r) = record else {
        panic!("a RegisterBrokerRecord")
    };
    let configs: Vec<(String, Option<String>)> = r
        .static_configs
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect();
    assert_eq!(
        configs,
        vec![
            ("num.io.threads".into(), Some("8".into())),
            ("broker.rack".into(), None)
        ]
    );
    // StaticConfigs are tagged field 2: a v4 reader keeps them as an unknown tag.
    let mut bytes = entry.value.clone().unwrap();
    let as_v4 = RegisterBrokerRecord::decode(&mut bytes, 4).unwrap();
    assert!(as_v4.unknown_tagged_fields.contains_key(&2));
    assert!(as_v4.static_configs.is_empty());
    let b = h.controller.broker(1).unwrap();
    assert_eq!(
        b.static_configs.get("num.io.threads"),
        Some(&Some("8".to_string()))
    );
    assert_eq!(
        b.static_configs.get("broker.rack"),
        Some(&None),
        "null stays null"
    );
}

#[test]
fn r74_static_configs_are_dropped_and_the_record_version_follows_older_levels() {
    for (level, version) in [(33, 4), (30, 4), (29, 3), (17, 3), (16, 2), (8, 2), (7, 1)] {
        let mut h = Harness::at_level(level);
        let request = BrokerRegistrationRequest {
            features: vec![metadata_version_feature(7, 34)],
            ..registration(1, 0)
        };
        h.register(&request)
            .unwrap_or_else(|e| panic!("level {level}: {e}"));
        let (entry, record) = h.last_record();
        assert_eq!(
            (entry.record_type, entry.version),
            (0, version),
            "level {level}"
        );
        let Record::RegisterBroker(r) = record else {
            panic!("a RegisterBrokerRecord")
        };
        assert!(r.static_configs.is_empty(), "level {level}");
        assert!(
            h.controller.static_configs(1).unwrap().is_empty(),
            "level {level}"
        );
        assert_eq!(r.log_dirs.is_empty(), level < 17, "LogDirs from 3.7-IV2");
        assert_eq!(
            r.cordoned_log_dirs.is_some(),
            level >= 30,
            "CordonedLogDirs from 4.3-IV0"
        );
        h.assert_replay_matches();
    }
}

#[test]
fn r75_a_controller_restarted_from_the_same_log_has_the_same_static_configs() {
    let mut h = Harness::new();
    h.register_unfenced(&registration(1, 0));
    h.register(&registration(2, 0)).unwrap();
    let mut third = registration(3, 0);
    third
        .static_configs
        .push(static_config("log.dirs", Some("/var/kafka")));
    h.register(&third).unwrap();
    h.now += 10_000;
    h.register(&BrokerRegistrationRequest {
        static_configs: vec![static_config("num.io.threads", Some("32"))],
        ..registration(2, 1)
    })
    .unwrap();

    let restarted = Controller::from_log(
        h.controller.config().clone(),
        h.controller.store().log(),
        h.now,
    )
    .unwrap();
    assert_eq!(restarted.brokers(), h.controller.brokers());
    for id in 1..=3 {
        assert_eq!(
            restarted.static_configs(id),
            h.controller.static_configs(id),
            "broker {id}"
        );
    }
    assert_eq!(
        restarted.static_configs(2).unwrap().get("num.io.threads"),
        Some(&Some("32".to_string()))
    );
    assert_eq!(restarted.static_configs(3).unwrap().len(), 3);
    assert_eq!(
        restarted.metadata_version(),
        h.controller.metadata_version()
    );
    assert_eq!(
        restarted.store().log().len(),
        h.controller.store().log().len(),
        "a restart writes nothing"
    );
}

#[test]
fn r76_old_register_broker_record_versions_are_still_read() {
    let mut h = Harness::new();
    for version in 0..=4i16 {
        let mut record = RegisterBrokerRecord {
            broker_id: 10 + version as i32,
            broker_epoch: 100 + version as i64,
            incarnation_id: incarnation(10, version as u128),
            rack: Some("r".into()),
            fenced: false,
            ..Default::default()
        };
        if version >= 1 {
            record.in_controlled_shutdown = true;
        }
        if version >= 3 {
            record.log_dirs = vec![dir(10 + version as i32, 1)];
        }
        let entry = Record::RegisterBroker(record).at_version(version);
        let mut store = h.controller.store().log().clone();
        let (record_type, v, key, value) = entry.record.encode_version(entry.version).unwrap();
        store.append([(record_type, v, key, value)]);
        h.controller = Controller::from_log(h.controller.config().clone(), &store, h.now).unwrap();
        let b = h
            .controller
            .broker(10 + version as i32)
            .unwrap_or_else(|| panic!("v{version} replays"));
        assert!(!b.fenced);
        assert_eq!(b.in_controlled_shutdown, version >= 1);
        assert!(b.static_configs.is_empty());
    }
    assert_eq!(h.controller.brokers().len(), 5);
}
