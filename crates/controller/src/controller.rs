//! The controller: the metadata log, the state replayed from it, and the broker sessions. All
//! methods are synchronous and take `now` (ms) where time matters.
use std::collections::BTreeMap;

use kcoord_metadata::metadata_version::FEATURE_NAME;
use kcoord_metadata::{
    BrokerRegistration, BrokersImage, MetadataLog, MetadataVersion, Record, RecordAndVersion,
    State, Store,
};
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse,
};
use kcoord_wire::records::{FeatureLevelRecord, ProducerIdsRecord, UnregisterBrokerRecord};
use kcoord_wire::ErrorCode;

use crate::config::ControllerConfig;
use crate::error::{ControllerError, Result};
use crate::heartbeat::{self, BrokerControlState, BrokerHeartbeatReply};
use crate::registration::{self, BrokerRegistrationReply, RegistrationContext};
use crate::sessions::Sessions;

/// Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`.
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Producer ids `first..first + size`, for one broker to hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdBlock {
    pub first: i64,
    pub size: i64,
}

/// Something `tick` did, for logging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickEvent {
    /// Kafka: "Fencing broker {id} at epoch {epoch} because its session has timed out."
    SessionExpired { broker_id: i32, epoch: i64 },
}

pub struct Controller {
    config: ControllerConfig,
    store: Store,
    sessions: Sessions,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("cluster_id", &self.config.cluster_id)
            .field("metadata_version", &self.metadata_version())
            .field("brokers", &self.brokers().len())
            .field("log_records", &self.store.log().len())
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// A controller over a new, empty log, bootstrapped with the configured features.
    pub fn new(config: ControllerConfig) -> Result<Controller> {
        Controller::with_store(config, Store::new(), 0)
    }

    /// A controller over an existing store (for instance one that already holds the topic
    /// catalog, so that topics and brokers share one log as in KRaft). The configured features
    /// are bootstrapped if the log has no `metadata.version` yet. Every registered, unfenced
    /// broker starts a fresh session at `now`, as Kafka's controller does when it becomes
    /// active.
    pub fn with_store(config: ControllerConfig, store: Store, now: i64) -> Result<Controller> {
        let mut controller = Controller {
            sessions: Sessions::new(config.session_timeout_ms),
            config,
            store,
        };
        if controller
            .store
            .state()
            .features
            .metadata_version()
            .is_none()
        {
            controller.bootstrap()?;
        }
        controller.activate(now);
        Ok(controller)
    }

    /// A restarted controller: replays `log` (every record decoded from its bytes) and carries on
    /// from there.
    pub fn from_log(config: ControllerConfig, log: &MetadataLog, now: i64) -> Result<Controller> {
        let store = Store::replay_log(log).map_err(|e| {
            ControllerError::new(
                ErrorCode::UNKNOWN_SERVER_ERROR,
                format!("the log does not replay: {e}"),
            )
        })?;
        Controller::with_store(config, store, now)
    }

    /// FeatureLevelRecords for `metadata.version` and the other bootstrap features, in one batch.
    fn bootstrap(&mut self) -> Result<()> {
        let mut features = vec![(
            FEATURE_NAME.to_string(),
            self.config.metadata_version.feature_level(),
        )];
        features.extend(
            self.config
                .bootstrap_features
                .iter()
                .filter(|(name, _)| *name != FEATURE_NAME)
                .map(|(n, l)| (n.clone(), *l)),
        );
        let records = features
            .into_iter()
            .map(|(name, feature_level)| {
                Record::FeatureLevel(FeatureLevelRecord {
                    name,
                    feature_level,
                    ..Default::default()
                })
                .at_version(0)
            })
            .collect();
        self.append_versioned(records).map(|_| ())
    }

    fn activate(&mut self, now: i64) {
        let unfenced: Vec<(i32, i64)> =
            self.brokers().unfenced().map(|b| (b.id, b.epoch)).collect();
        for (id, epoch) in unfenced {
            self.sessions.touch(id, epoch, now);
        }
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn state(&self) -> &State {
        self.store.state()
    }

    /// Gives the store back, e.g. to rebuild a controller from it.
    pub fn into_store(self) -> Store {
        self.store
    }

    /// Appends records other parts of the daemon decided (topics, configs) to the same log,
    /// each at its latest version. Returns the offset of the first one.
    pub fn append(&mut self, records: Vec<Record>) -> Result<u64> {
        self.append_versioned(records.into_iter().map(Record::at_latest_version).collect())
    }

    fn append_versioned(&mut self, records: Vec<RecordAndVersion>) -> Result<u64> {
        self.store
            .append_versioned(records)
            .map_err(ControllerError::internal)
    }

    /// The finalized `metadata.version`.
    pub fn metadata_version(&self) -> MetadataVersion {
        // Bootstrapping guarantees one; the configured level is the fallback of last resort.
        self.state()
            .features
            .metadata_version()
            .unwrap_or(self.config.metadata_version)
    }

    /// Every finalized feature, `metadata.version` included (ApiVersions' FinalizedFeatures).
    pub fn finalized_features(&self) -> BTreeMap<String, i16> {
        self.state().features.finalized()
    }

    /// ApiVersions' FinalizedFeaturesEpoch: the offset of the last FeatureLevelRecord.
    pub fn finalized_features_epoch(&self) -> i64 {
        self.state().features.epoch()
    }

    /// Every registered broker, fenced or not.
    pub fn brokers(&self) -> &BrokersImage {
        &self.state().brokers
    }

    pub fn broker(&self, broker_id: i32) -> Option<&BrokerRegistration> {
        self.brokers().get(broker_id)
    }

    /// KIP-1326: the static configs broker `broker_id` registered with (empty when it
    /// registered below v6 or while `metadata.version` was older than 4.5-IV0).
    pub fn static_configs(&self, broker_id: i32) -> Option<&BTreeMap<String, Option<String>>> {
        self.broker(broker_id).map(|b| &b.static_configs)
    }

    /// BrokerRegistration at request version `api_version`, answered as Kafka answers it.
    pub fn register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> BrokerRegistrationResponse {
        match self.try_register_broker(request, api_version, now) {
            Ok(reply) => BrokerRegistrationResponse {
                broker_epoch: reply.epoch,
                ..Default::default()
            },
            Err(e) => BrokerRegistrationResponse {
                error_code: e.code.code(),
                broker_epoch: -1,
                ..Default::default()
            },
        }
    }

    /// [`Controller::register_broker`] with Kafka's error message.
    pub fn try_register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> Result<BrokerRegistrationReply> {
        let finalized = self.finalized_features();
        let has_live_session = self.broker(request.broker_id).is_some_and(|existing| {
            self.sessions
                .has_valid_session(existing.id, existing.epoch, now)
        });
        let decision = registration::decide(
            &RegistrationContext {
                cluster_id: &self.config.cluster_id,
                brokers: self.brokers(),
                metadata_version: self.metadata_version(),
                finalized: &finalized,
                next_offset: self.store.log().next_offset(),
                has_live_session,
            },
            request,
            api_version,
        )?;
        if decision.new_incarnation {
            self.sessions.remove(request.broker_id);
        }
        self.append_versioned(vec![decision.record])?;
        Ok(BrokerRegistrationReply {
            epoch: decision.epoch,
        })
    }

    /// BrokerHeartbeat (any version), answered as Kafka answers it.
    pub fn broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> BrokerHeartbeatResponse {
        match self.try_broker_heartbeat(request, now) {
            Ok(reply) => BrokerHeartbeatResponse {
                is_caught_up: reply.is_caught_up,
                is_fenced: reply.is_fenced,
                should_shut_down: reply.should_shut_down,
                ..Default::default()
            },
            // Kafka's error response keeps the defaults: not caught up, fenced, no shutdown.
            Err(e) => BrokerHeartbeatResponse {
                error_code: e.code.code(),
                ..Default::default()
            },
        }
    }

    /// [`Controller::broker_heartbeat`] with Kafka's error message.
    pub fn try_broker_heartbeat(
        &mut self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> Result<BrokerHeartbeatReply> {
        let broker_id = request.broker_id;
        let Some(registration) = self.broker(broker_id).cloned() else {
            return Err(ControllerError::stale_broker_epoch(format!(
                "Receive a heartbeat from broker {broker_id} before registration"
            )));
        };
        if registration.epoch != request.broker_epoch {
            return Err(ControllerError::stale_broker_epoch(format!(
                "Expected broker epoch {}, but got broker epoch {}",
                registration.epoch, request.broker_epoch
            )));
        }
        self.sessions.touch(broker_id, registration.epoch, now);

        let current = if registration.fenced {
            BrokerControlState::Fenced
        } else if self.sessions.in_controlled_shutdown(broker_id) {
            BrokerControlState::ControlledShutdown
        } else {
            BrokerControlState::Unfenced
        };
        // kcoord brokers host no partitions, so they never lead one.
        let next = heartbeat::next_state(current, request, registration.registration_offset, false);
        let mut records = Vec::new();
        if next != current {
            records.extend(heartbeat::state_change_records(&registration, next));
        }
        let mv = self.metadata_version();
        records.extend(heartbeat::offline_dirs_record(&registration, request, mv));
        records.extend(heartbeat::cordoned_dirs_record(&registration, request, mv));
        if !records.is_empty() {
            self.append_versioned(records)?;
        }
        // A fenced broker leaves controlled shutdown (Kafka's `touch`).
        self.sessions
            .set_controlled_shutdown(broker_id, next.in_controlled_shutdown());
        Ok(BrokerHeartbeatReply {
            is_caught_up: heartbeat::caught_up(request, registration.registration_offset),
            is_fenced: next.fenced(),
            in_controlled_shutdown: next.in_controlled_shutdown(),
            should_shut_down: next.should_shut_down(),
        })
    }

    /// Kafka's UnregisterBroker (key 64): removes a registration whatever its state.
    pub fn unregister_broker(&mut self, broker_id: i32) -> Result<()> {
        let Some(registration) = self.broker(broker_id) else {
            return Err(ControllerError::new(
                ErrorCode::BROKER_ID_NOT_REGISTERED,
                format!("Broker ID {broker_id} is not currently registered"),
            ));
        };
        let record = Record::UnregisterBroker(UnregisterBrokerRecord {
            broker_id,
            broker_epoch: registration.epoch,
            ..Default::default()
        });
        self.append_versioned(vec![record.at_version(0)])?;
        self.sessions.remove(broker_id);
        Ok(())
    }

    /// Fences every broker whose session expired at `now` (Kafka's `maybeFenceOneStaleBroker`,
    /// one batch per broker, oldest contact first). A session of a previous epoch, of a broker
    /// that is gone, or of a broker that is fenced already (Kafka looks for stale brokers among
    /// the unfenced ones only) is just forgotten.
    pub fn tick(&mut self, now: i64) -> Result<Vec<TickEvent>> {
        let mut events = Vec::new();
        for (broker_id, epoch) in self.sessions.take_expired(now) {
            let Some(registration) = self
                .broker(broker_id)
                .filter(|r| r.epoch == epoch && !r.fenced)
                .cloned()
            else {
                continue;
            };
            self.append_versioned(heartbeat::state_change_records(
                &registration,
                BrokerControlState::Fenced,
            ))?;
            self.sessions.set_controlled_shutdown(broker_id, false);
            events.push(TickEvent::SessionExpired { broker_id, epoch });
        }
        Ok(events)
    }

    /// Kafka's `ProducerIdControlManager.generateNextProducerId`: the next block of
    /// [`PRODUCER_ID_BLOCK_SIZE`] producer ids for `broker_id`, recorded in the log before it is
    /// handed out, so that no id is ever handed out twice, across restarts too.
    pub fn allocate_producer_ids(
        &mut self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<ProducerIdBlock> {
        let first = self.state().producer_ids.next_producer_id();
        let next = first.checked_add(PRODUCER_ID_BLOCK_SIZE).ok_or_else(|| {
            ControllerError::new(ErrorCode::UNKNOWN_SERVER_ERROR, "Exhausted all producerIds as the next block's end producerId is has exceeded the int64 type limit".to_owned())
        })?;
        let record = Record::ProducerIds(ProducerIdsRecord {
            broker_id,
            broker_epoch,
            next_producer_id: next,
            ..Default::default()
        });
        self.append_versioned(vec![record.at_version(0)])?;
        Ok(ProducerIdBlock {
            first,
            size: PRODUCER_ID_BLOCK_SIZE,
        })
    }

    /// The next time `tick` has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        self.sessions.next_deadline()
    }
}
