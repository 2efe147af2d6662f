//! Shared harness of the controller tests: a controller, a clock, and request builders.
#![allow(dead_code)]
use kcoord_controller::{
    BrokerHeartbeatReply, BrokerRegistrationReply, Controller, ControllerConfig, ControllerError,
    MetadataVersion, ProducerIdBlock, TickEvent,
};
use kcoord_metadata::{LogRecord, Record, Store};
use kcoord_wire::messages::broker_registration_request::{Feature, Listener, StaticConfig};
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse,
};
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

/// Each handler followed by [`Controller::apply`] of its outcome, as the daemon's runtime
/// runs them (minus the durable log).
pub trait Applied {
    fn try_register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> Result<BrokerRegistrationReply, ControllerError>;
    fn registration_response(
        &mut self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> BrokerRegistrationResponse;
    fn try_broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> Result<BrokerHeartbeatReply, ControllerError>;
    fn heartbeat_response(
        &mut self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> BrokerHeartbeatResponse;
    fn fence_expired(&mut self, now: i64) -> Result<Vec<TickEvent>, ControllerError>;
    fn unregister(&mut self, broker_id: i32) -> Result<(), ControllerError>;
    fn allocate(&mut self, broker_id: i32, epoch: i64) -> Result<ProducerIdBlock, ControllerError>;
}

impl Applied for Controller {
    fn try_register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> Result<BrokerRegistrationReply, ControllerError> {
        let outcome = self.register_broker(request, api_version, now)?;
        self.apply(outcome)
    }

    fn registration_response(
        &mut self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> BrokerRegistrationResponse {
        BrokerRegistrationReply::response(&self.try_register_broker(request, api_version, now))
    }

    fn try_broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> Result<BrokerHeartbeatReply, ControllerError> {
        let outcome = self.broker_heartbeat(request, now)?;
        self.apply(outcome)
    }

    fn heartbeat_response(
        &mut self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> BrokerHeartbeatResponse {
        BrokerHeartbeatReply::response(&self.try_broker_heartbeat(request, now))
    }

    fn fence_expired(&mut self, now: i64) -> Result<Vec<TickEvent>, ControllerError> {
        let outcome = self.tick(now);
        self.apply(outcome)
    }

    fn unregister(&mut self, broker_id: i32) -> Result<(), ControllerError> {
        let outcome = self.unregister_broker(broker_id)?;
        self.apply(outcome)
    }

    fn allocate(&mut self, broker_id: i32, epoch: i64) -> Result<ProducerIdBlock, ControllerError> {
        let outcome = self.allocate_producer_ids(broker_id, epoch)?;
        self.apply(outcome)
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
        self.controller.fence_expired(self.now).expect("tick");
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
