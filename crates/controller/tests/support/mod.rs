//! Shared harness of the controller tests: a controller, a clock, and request builders.
#![allow(dead_code)]
use kcoord_controller::{Controller, ControllerConfig, ControllerError, MetadataVersion};
use kcoord_metadata::{LogRecord, Record, Store};
use kcoord_wire::messages::broker_registration_request::{Feature, Listener, StaticConfig};
use kcoord_wire::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use uuid::Uuid;

pub const CLUSTER: &str = "a2Nvb3JkLWRldi1jbHVzdA";

/// A directory id of broker `broker` (never a reserved one).
pub fn dir(broker: i32, n: u128) -> Uuid {
    Uuid::from_u128(((broker as u128 + 1) << 64) | n)
}

/// The incarnation `n` of broker `broker`.
pub fn incarnation(broker: i32, n: u128) -> Uuid {
    Uuid::from_u128(((broker as u128) << 96) | (n + 1))
}

pub fn metadata_version_feature(min: i16, max: i16) -> Feature {
    Feature {
        name: "metadata.version".into(),
        min_supported_version: min,
        max_supported_version: max,
        ..Default::default()
    }
}

pub fn static_config(name: &str, value: Option<&str>) -> StaticConfig {
    StaticConfig {
        name: name.into(),
        value: value.map(str::to_string),
        ..Default::default()
    }
}

/// A valid v6 registration of `broker`'s incarnation `n`, with two static configs.
pub fn registration(broker: i32, n: u128) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest {
        broker_id: broker,
        cluster_id: CLUSTER.into(),
        incarnation_id: incarnation(broker, n),
        listeners: vec![Listener {
            name: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 9092 + broker as u16,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![metadata_version_feature(7, 34)],
        rack: None,
        log_dirs: vec![dir(broker, 1)],
        static_configs: vec![
            static_config("num.io.threads", Some("8")),
            static_config("broker.rack", None),
        ],
        ..Default::default()
    }
}

pub fn heartbeat(broker: i32, epoch: i64, offset: i64) -> BrokerHeartbeatRequest {
    BrokerHeartbeatRequest {
        broker_id: broker,
        broker_epoch: epoch,
        current_metadata_offset: offset,
        ..Default::default()
    }
}

/// A controller and a clock.
pub struct Harness {
    pub controller: Controller,
    pub now: i64,
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with_config(ControllerConfig::new(CLUSTER))
    }

    pub fn at_level(level: i16) -> Harness {
        let mv = MetadataVersion::from_feature_level(level).expect("a known level");
        Harness::with_config(ControllerConfig::new(CLUSTER).with_metadata_version(mv))
    }

    pub fn with_config(config: ControllerConfig) -> Harness {
        Harness {
            controller: Controller::new(config).expect("bootstrap"),
            now: 1_000_000,
        }
    }

    pub fn register(
        &mut self,
        request: &BrokerRegistrationRequest,
    ) -> Result<i64, ControllerError> {
        self.register_v(request, 6)
    }

    pub fn register_v(
        &mut self,
        request: &BrokerRegistrationRequest,
        version: i16,
    ) -> Result<i64, ControllerError> {
        self.controller
            .try_register_broker(request, version, self.now)
            .map(|r| r.epoch)
    }

    /// Registers and heartbeats until unfenced; returns the epoch.
    pub fn register_unfenced(&mut self, request: &BrokerRegistrationRequest) -> i64 {
        let epoch = self.register(request).expect("registers");
        let reply = self
            .controller
            .try_broker_heartbeat(&heartbeat(request.broker_id, epoch, epoch), self.now)
            .expect("heartbeat");
        assert!(!reply.is_fenced, "unfenced once caught up");
        epoch
    }

    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        self.controller.tick(self.now).expect("tick");
    }

    /// The last log entry, decoded.
    pub fn last_record(&self) -> (LogRecord, Record) {
        let entry = self
            .controller
            .store()
            .log()
            .records()
            .last()
            .expect("a record")
            .clone();
        let record = Record::decode(&entry).expect("decodes");
        (entry, record)
    }

    pub fn assert_replay_matches(&self) {
        let replayed = Store::replay_log(self.controller.store().log()).expect("the log replays");
        assert_eq!(
            replayed.state(),
            self.controller.state(),
            "replaying the log must rebuild the live state"
        );
    }
}
