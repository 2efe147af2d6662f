//! BrokerHeartbeat, session expiry, unregistration: Kafka's `BrokerHeartbeatManager` and
//! `ReplicationControlManager.processBrokerHeartbeat` rules.
mod support;

use bytes::BytesMut;
use kcoord_controller::{Controller, TickEvent};
use kcoord_metadata::Record;
use kcoord_wire::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use kcoord_wire::records::BrokerRegistrationChangeRecord;
use kcoord_wire::{Decodable, Encodable, ErrorCode};
use support::*;

fn change(h: &Harness) -> (i16, BrokerRegistrationChangeRecord) {
    match h.last_record() {
        (entry, Record::BrokerRegistrationChange(r)) => (entry.version, r),
        other => panic!("expected a BrokerRegistrationChangeRecord, got {other:?}"),
    }
}

#[test]
fn a_heartbeat_before_registration_is_stale_broker_epoch() {
    let mut h = Harness::new();
    let e = h
        .controller
        .try_broker_heartbeat(&heartbeat(1, 0, 0), h.now)
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            ErrorCode::STALE_BROKER_EPOCH,
            "Receive a heartbeat from broker 1 before registration"
        )
    );
    // The response keeps Kafka's defaults: fenced, not caught up, no shutdown.
    let response = h.controller.heartbeat_response(&heartbeat(1, 0, 0), h.now);
    assert_eq!(response.error_code, ErrorCode::STALE_BROKER_EPOCH.code());
    assert!(response.is_fenced && !response.is_caught_up && !response.should_shut_down);
}

#[test]
fn a_wrong_epoch_is_stale_broker_epoch() {
    let mut h = Harness::new();
    let epoch = h.register(&registration(1, 0)).unwrap();
    let e = h
        .controller
        .try_broker_heartbeat(&heartbeat(1, epoch + 1, 0), h.now)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::STALE_BROKER_EPOCH);
    assert_eq!(
        e.message,
        format!(
            "Expected broker epoch {epoch}, but got broker epoch {}",
            epoch + 1
        )
    );
}

#[test]
fn a_fenced_broker_is_unfenced_once_its_metadata_offset_reaches_its_registration() {
    let mut h = Harness::new();
    let epoch = h.register(&registration(1, 0)).unwrap();
    let offset = h.controller.broker(1).unwrap().registration_offset as i64;
    let records = h.controller.store().log().len();

    let behind = h
        .controller
        .try_broker_heartbeat(&heartbeat(1, epoch, offset - 1), h.now)
        .unwrap();
    assert!(behind.is_fenced && !behind.is_caught_up);
    assert_eq!(
        h.controller.store().log().len(),
        records,
        "no change, no record"
    );

    let caught_up = h
        .controller
        .heartbeat_response(&heartbeat(1, epoch, offset), h.now);
    assert_eq!(caught_up.error_code, 0);
    assert!(!caught_up.is_fenced && caught_up.is_caught_up && !caught_up.should_shut_down);
    assert!(!h.controller.broker(1).unwrap().fenced);
    let (version, r) = change(&h);
    assert_eq!(
        (
            version,
            r.broker_id,
            r.broker_epoch,
            r.fenced,
            r.in_controlled_shutdown
        ),
        (0, 1, epoch, -1, 0)
    );

    // Staying unfenced writes nothing more.
    let records = h.controller.store().log().len();
    assert!(
        !h.controller
            .try_broker_heartbeat(&heartbeat(1, epoch, offset + 5), h.now)
            .unwrap()
            .is_fenced
    );
    assert_eq!(h.controller.store().log().len(), records);
    h.assert_replay_matches();
}

#[test]
fn want_fence_keeps_a_broker_fenced_and_fences_an_unfenced_one() {
    let mut h = Harness::new();
    let epoch = h.register(&registration(1, 0)).unwrap();
    let wants_fence = BrokerHeartbeatRequest {
        want_fence: true,
        ..heartbeat(1, epoch, epoch)
    };
    let reply = h
        .controller
        .try_broker_heartbeat(&wants_fence, h.now)
        .unwrap();
    assert!(reply.is_fenced && reply.is_caught_up);

    h.controller
        .try_broker_heartbeat(&heartbeat(1, epoch, epoch), h.now)
        .unwrap();
    assert!(!h.controller.broker(1).unwrap().fenced);
    let reply = h
        .controller
        .try_broker_heartbeat(&wants_fence, h.now)
        .unwrap();
    assert!(reply.is_fenced && !reply.should_shut_down);
    assert_eq!(change(&h).1.fenced, 1);
    assert!(h.controller.broker(1).unwrap().fenced);
}

#[test]
fn want_shut_down_shuts_a_broker_down_now_as_it_leads_no_partitions() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    let request = BrokerHeartbeatRequest {
        want_shut_down: true,
        ..heartbeat(1, epoch, epoch)
    };
    let response = h.controller.heartbeat_response(&request, h.now);
    assert!(response.should_shut_down && response.is_fenced);
    let (version, r) = change(&h);
    assert_eq!((version, r.fenced, r.in_controlled_shutdown), (0, 1, 0));
    let b = h.controller.broker(1).unwrap();
    assert!(b.fenced && !b.in_controlled_shutdown);
    // A fenced broker asking to shut down is granted it too.
    let again = h.controller.try_broker_heartbeat(&request, h.now).unwrap();
    assert!(again.should_shut_down && again.is_fenced && !again.in_controlled_shutdown);
}

#[test]
fn a_session_that_expires_fences_the_broker() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    assert_eq!(h.controller.next_deadline(), Some(h.now + 9_001));
    h.now += 9_000;
    assert!(
        h.controller.fence_expired(h.now).unwrap().is_empty(),
        "exactly the timeout is still live"
    );
    h.now += 1;
    assert_eq!(
        h.controller.fence_expired(h.now).unwrap(),
        vec![TickEvent::SessionExpired {
            broker_id: 1,
            epoch
        }]
    );
    assert!(h.controller.broker(1).unwrap().fenced);
    assert_eq!(change(&h).1.fenced, 1);
    assert_eq!(h.controller.next_deadline(), None);
    // A broker that comes back with its epoch is unfenced again once caught up.
    assert!(
        !h.controller
            .try_broker_heartbeat(&heartbeat(1, epoch, epoch), h.now)
            .unwrap()
            .is_fenced
    );
    h.assert_replay_matches();
}

#[test]
fn an_expired_session_of_a_fenced_broker_writes_nothing() {
    let mut h = Harness::new();
    let epoch = h.register(&registration(1, 0)).unwrap();
    // A heartbeat that is not caught up keeps the broker fenced but starts its session.
    assert!(
        h.controller
            .try_broker_heartbeat(&heartbeat(1, epoch, epoch - 1), h.now)
            .unwrap()
            .is_fenced
    );
    let records = h.controller.store().log().len();
    h.now += 9_001;
    assert!(h.controller.fence_expired(h.now).unwrap().is_empty());
    assert_eq!(h.controller.store().log().len(), records);
    assert_eq!(h.controller.next_deadline(), None);
}

#[test]
fn heartbeats_keep_a_session_alive() {
    let mut h = Harness::with_config(
        kcoord_controller::ControllerConfig::new(CLUSTER).with_session_timeout_ms(1_000),
    );
    let epoch = h.register_unfenced(&registration(1, 0));
    for _ in 0..10 {
        h.advance(600);
        assert!(
            !h.controller
                .try_broker_heartbeat(&heartbeat(1, epoch, epoch), h.now)
                .unwrap()
                .is_fenced
        );
    }
    h.advance(1_001);
    assert!(h.controller.broker(1).unwrap().fenced);
}

#[test]
fn a_replaced_incarnation_leaves_no_session_behind() {
    let mut h = Harness::new();
    let old = h.register_unfenced(&registration(1, 0));
    // The old session expired, but no tick ran before the new incarnation registered.
    h.now += 9_001;
    let epoch = h.register(&registration(1, 1)).unwrap();
    let records = h.controller.store().log().len();
    assert!(
        h.controller.fence_expired(h.now).unwrap().is_empty(),
        "nothing to fence for epoch {old}"
    );
    assert_eq!(h.controller.store().log().len(), records);
    h.controller
        .try_broker_heartbeat(&heartbeat(1, epoch, epoch), h.now)
        .unwrap();
    h.now += 9_001;
    assert_eq!(
        h.controller.fence_expired(h.now).unwrap(),
        vec![TickEvent::SessionExpired {
            broker_id: 1,
            epoch
        }]
    );
}

#[test]
fn offline_log_dirs_leave_the_registration_from_3_7_iv2() {
    let mut h = Harness::new();
    let request = BrokerRegistrationRequest {
        log_dirs: vec![dir(1, 1), dir(1, 2)],
        ..registration(1, 0)
    };
    let epoch = h.register(&request).unwrap();
    let offline = BrokerHeartbeatRequest {
        offline_log_dirs: vec![dir(1, 2), dir(9, 9)],
        ..heartbeat(1, epoch, 0)
    };
    h.controller.try_broker_heartbeat(&offline, h.now).unwrap();
    let (version, r) = change(&h);
    assert_eq!(
        (version, r.log_dirs.clone(), r.fenced),
        (2, vec![dir(1, 1)], 0)
    );
    assert_eq!(h.controller.broker(1).unwrap().directories, vec![dir(1, 1)]);
    // Reporting it again changes nothing.
    let records = h.controller.store().log().len();
    h.controller.try_broker_heartbeat(&offline, h.now).unwrap();
    assert_eq!(h.controller.store().log().len(), records);
}

#[test]
fn cordoned_log_dirs_are_recorded_when_they_change_from_4_3_iv0() {
    let mut h = Harness::new();
    let epoch = h.register_v(&registration(1, 0), 4).unwrap();
    assert_eq!(
        h.controller.broker(1).unwrap().cordoned_directories,
        None,
        "v4 registrations do not know"
    );
    let records = h.controller.store().log().len();
    h.controller
        .try_broker_heartbeat(&heartbeat(1, epoch, 0), h.now)
        .unwrap();
    assert_eq!(
        h.controller.store().log().len(),
        records,
        "null means unknown: nothing to record"
    );
    let cordoned = BrokerHeartbeatRequest {
        cordoned_log_dirs: Some(vec![dir(1, 1)]),
        ..heartbeat(1, epoch, 0)
    };
    h.controller.try_broker_heartbeat(&cordoned, h.now).unwrap();
    let (version, r) = change(&h);
    assert_eq!((version, r.cordoned_log_dirs), (3, Some(vec![dir(1, 1)])));
    let records = h.controller.store().log().len();
    h.controller.try_broker_heartbeat(&cordoned, h.now).unwrap();
    assert_eq!(h.controller.store().log().len(), records, "unchanged");

    let mut old = Harness::at_level(29);
    let epoch = old.register(&registration(1, 0)).unwrap();
    let records = old.controller.store().log().len();
    old.controller
        .try_broker_heartbeat(
            &BrokerHeartbeatRequest {
                cordoned_log_dirs: Some(vec![dir(1, 1)]),
                ..heartbeat(1, epoch, 0)
            },
            old.now,
        )
        .unwrap();
    assert_eq!(old.controller.store().log().len(), records);
}

#[test]
fn unregistering_removes_the_registration() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    let e = h.controller.unregister(2).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            ErrorCode::BROKER_ID_NOT_REGISTERED,
            "Broker ID 2 is not currently registered"
        )
    );
    h.controller.unregister(1).unwrap();
    assert!(h.controller.broker(1).is_none());
    assert_eq!(
        h.controller
            .try_broker_heartbeat(&heartbeat(1, epoch, epoch), h.now)
            .unwrap_err()
            .code,
        ErrorCode::STALE_BROKER_EPOCH
    );
    assert_eq!(h.controller.next_deadline(), None);
    h.assert_replay_matches();
}

#[test]
fn a_restarted_controller_gives_unfenced_brokers_a_fresh_session() {
    let mut h = Harness::new();
    let epoch = h.register_unfenced(&registration(1, 0));
    h.register(&registration(2, 0)).unwrap();
    let restart_at = h.now + 60_000;
    let mut restarted = Controller::from_log(
        h.controller.config().clone(),
        h.controller.store().log(),
        restart_at,
    )
    .unwrap();
    assert_eq!(
        restarted.next_deadline(),
        Some(restart_at + 9_001),
        "only the unfenced broker has a session"
    );
    // A new incarnation of broker 1 must wait for that session to expire.
    let e = restarted
        .try_register_broker(&registration(1, 1), 6, restart_at)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::DUPLICATE_BROKER_REGISTRATION);
    assert!(restarted
        .fence_expired(restart_at + 9_001)
        .unwrap()
        .contains(&TickEvent::SessionExpired {
            broker_id: 1,
            epoch
        }));
    assert!(restarted
        .try_register_broker(&registration(1, 1), 6, restart_at + 9_001)
        .is_ok());
}

#[test]
fn r76_every_heartbeat_and_registration_version_is_read() {
    for version in 0..=2i16 {
        let mut h = Harness::new();
        let epoch = h.register(&registration(1, 0)).unwrap();
        let mut request = heartbeat(1, epoch, epoch);
        if version >= 1 {
            request.offline_log_dirs = vec![dir(1, 7)];
        }
        if version >= 2 {
            request.cordoned_log_dirs = Some(vec![]);
        }
        let mut buf = BytesMut::new();
        request.encode(&mut buf, version).unwrap();
        let decoded = BrokerHeartbeatRequest::decode(&mut buf.freeze(), version).unwrap();
        assert!(
            !h.controller
                .try_broker_heartbeat(&decoded, h.now)
                .unwrap()
                .is_fenced,
            "v{version}"
        );
    }
    for version in 0..=6i16 {
        let mut h = Harness::new();
        let mut request = registration(1, 0);
        if version < 6 {
            request.static_configs.clear();
        }
        let mut buf = BytesMut::new();
        request.encode(&mut buf, version).unwrap();
        let decoded = BrokerRegistrationRequest::decode(&mut buf.freeze(), version).unwrap();
        // v0 and v1 carry no LogDirs: at 3.7-IV2 and later such a broker cannot register.
        let registered = h.register_v(&decoded, version);
        assert_eq!(
            registered.is_ok(),
            version >= 2,
            "v{version}: {registered:?}"
        );
        let mut old = Harness::at_level(16);
        assert!(
            old.register_v(&decoded, version).is_ok(),
            "v{version} at 3.7-IV1"
        );
    }
}
