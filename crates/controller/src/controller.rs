//! The controller: the metadata log, the state replayed from it, and the broker sessions.
//!
//! Every handler is a function of (`&self`, request, `now`) returning an [`Outcome`]: the
//! records to append as one batch, the answer, and the [`Effect`]s on the in-memory broker
//! sessions. No handler appends. Whoever runs the controller checks the batch
//! ([`Controller::prepare`]), makes it durable if it keeps a durable log, and then
//! [`Controller::apply`]s it; an outcome that is never applied changes nothing.
use std::collections::BTreeMap;

use kcoord_acl::{AclBindingFilter, AclCreation, Acls};
use kcoord_metadata::metadata_version::FEATURE_NAME;
use kcoord_metadata::{
    BrokerRegistration, BrokersImage, LogRecord, LogState, MetadataLog, MetadataVersion, Record,
    RecordAndVersion, ReplayError, Store,
};
use kcoord_runtime::Core;
use kcoord_wire::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kcoord_wire::messages::create_partitions_request::CreatePartitionsTopic;
use kcoord_wire::messages::create_partitions_response::CreatePartitionsTopicResult;
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::{
    AlterUserScramCredentialsRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest,
    CreateTopicsRequest, DeleteTopicsRequest,
};
use kcoord_wire::records::{FeatureLevelRecord, ProducerIdsRecord, UnregisterBrokerRecord};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::acls::{self, AclChange, CreateAclResult, DeleteAclsResult};
use crate::controller_config::ControllerConfig;
use crate::error::{ControllerError, Result};
use crate::group_configs::{self, GroupConfigChange, GroupConfigValidator, ResourceError};
use crate::heartbeat::{self, BrokerControlState, BrokerHeartbeatReply};
use crate::registration::{self, BrokerRegistrationReply, RegistrationContext};
use crate::sessions::Sessions;
use crate::topics::{self, Decision};

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

/// What a handler decided. `records` are one batch: all of them reach the log or none does.
/// `effects` change the broker sessions, which live in memory only (as Kafka's
/// `BrokerHeartbeatManager` keeps them); they run once the batch is in the log.
pub type Outcome<R> = kcoord_runtime::Outcome<R, Effect>;

/// The topic and config decisions' records, each at its latest version, and their results.
impl<T> From<Decision<T>> for Outcome<Vec<T>> {
    fn from(decision: Decision<T>) -> Self {
        Outcome {
            records: decision
                .records
                .into_iter()
                .map(Record::at_latest_version)
                .collect(),
            response: decision.results,
            effects: Vec::new(),
        }
    }
}

/// A change to the in-memory broker sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Broker `broker_id` heartbeat at `now` with epoch `epoch`.
    TouchSession {
        broker_id: i32,
        epoch: i64,
        now: i64,
    },
    /// Every session of the broker ends (a new incarnation registered, or it was unregistered).
    ForgetBroker { broker_id: i32 },
    /// The expired session of (`broker_id`, `epoch`) was dealt with by `tick`.
    EndSession { broker_id: i32, epoch: i64 },
    /// The broker enters or leaves controlled shutdown.
    ControlledShutdown { broker_id: i32, on: bool },
}

pub struct Controller {
    config: ControllerConfig,
    store: Store,
    sessions: Sessions,
    /// The ACLs of `store`'s state, indexed for CreateAcls and DeleteAcls.
    acls: Acls,
}

impl Core for Controller {
    type Effect = Effect;

    fn prepare(
        &self,
        records: &[RecordAndVersion],
    ) -> std::result::Result<Vec<LogRecord>, ReplayError> {
        let entries = self.store.prepare(records)?;
        self.acl_changes(records)
            .map_err(|e| ReplayError::Inconsistent {
                offset: self.store.log().next_offset(),
                reason: e.to_string(),
            })?;
        Ok(entries)
    }

    fn replay(
        &mut self,
        records: &[RecordAndVersion],
        entries: Vec<LogRecord>,
    ) -> std::result::Result<(), ReplayError> {
        let changes: Vec<AclChange> = records
            .iter()
            .filter_map(|r| AclChange::of(&r.record))
            .collect();
        self.store.commit(records, entries)?;
        for change in changes {
            // `prepare` checked every one against the index.
            let _ = change.apply(&mut self.acls);
        }
        Ok(())
    }

    fn apply(&mut self, effect: Effect) {
        self.run_effect(effect);
    }

    fn next_offset(&self) -> u64 {
        self.store.log().next_offset()
    }
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
        let acls = acls::index(&store.state().security).map_err(ControllerError::internal)?;
        let mut controller = Controller {
            sessions: Sessions::new(config.session_timeout_ms),
            config,
            store,
            acls,
        };
        let boot = controller.boot(now);
        controller.apply(boot)?;
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

    /// What becoming active decides, as one batch: FeatureLevelRecords for `metadata.version`
    /// and the other bootstrap features when the log has no `metadata.version` yet, and a
    /// fresh session at `now` for every registered, unfenced broker (Kafka's controller does
    /// the same when it becomes active).
    fn boot(&self, now: i64) -> Outcome<()> {
        let records = match self.store.state().features.metadata_version() {
            Some(_) => Vec::new(),
            None => self.bootstrap_features(),
        };
        let effects = self
            .brokers()
            .unfenced()
            .map(|b| Effect::TouchSession {
                broker_id: b.id,
                epoch: b.epoch,
                now,
            })
            .collect();
        Outcome {
            records,
            response: (),
            effects,
        }
    }

    fn bootstrap_features(&self) -> Vec<RecordAndVersion> {
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
        features
            .into_iter()
            .map(|(name, feature_level)| {
                Record::FeatureLevel(FeatureLevelRecord {
                    name,
                    feature_level,
                    ..Default::default()
                })
                .at_version(0)
            })
            .collect()
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn state(&self) -> &LogState {
        self.store.state()
    }

    /// Gives the store back, e.g. to rebuild a controller from it.
    pub fn into_store(self) -> Store {
        self.store
    }

    /// Commits `outcome` in memory (no durable log): what the daemon's runtime does, for
    /// tests and tools that drive a controller by hand. On `Err` nothing changed.
    pub fn apply<R>(&mut self, outcome: Outcome<R>) -> Result<R> {
        kcoord_runtime::Runtime::new(self, kcoord_runtime::Volatile)
            .commit(outcome)
            .map(|done| done.response)
            .map_err(|refused| ControllerError::internal(refused.error))
    }

    /// The ACL changes of a batch, once they are known to apply to the index: the image
    /// refuses a repeated or unknown id (`prepare`), the index also an ACL stored twice.
    fn acl_changes(&self, records: &[RecordAndVersion]) -> Result<Vec<AclChange>> {
        let changes: Vec<AclChange> = records
            .iter()
            .filter_map(|r| AclChange::of(&r.record))
            .collect();
        if !changes.is_empty() {
            let mut index = self.acls.clone();
            for change in &changes {
                change
                    .clone()
                    .apply(&mut index)
                    .map_err(ControllerError::internal)?;
            }
        }
        Ok(changes)
    }

    /// The batch as the log will hold it: each record encoded at the offset it will get,
    /// after checking that the whole batch replays onto (copies of) the current state and
    /// that its ACL changes fit the index. `Err` means the batch must not be written anywhere:
    /// a decision that does not replay is a bug.
    pub fn prepare(&self, records: &[RecordAndVersion]) -> Result<Vec<LogRecord>> {
        Core::prepare(self, records).map_err(ControllerError::internal)
    }

    fn run_effect(&mut self, effect: Effect) {
        match effect {
            Effect::TouchSession {
                broker_id,
                epoch,
                now,
            } => self.sessions.touch(broker_id, epoch, now),
            Effect::ForgetBroker { broker_id } => self.sessions.remove(broker_id),
            Effect::EndSession { broker_id, epoch } => self.sessions.end(broker_id, epoch),
            Effect::ControlledShutdown { broker_id, on } => {
                self.sessions.set_controlled_shutdown(broker_id, on)
            }
        }
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

    /// BrokerRegistration at request version `api_version`, with Kafka's error and message.
    /// The reply's epoch is the offset the registration record will get: the batch is the
    /// next one appended.
    pub fn register_broker(
        &self,
        request: &BrokerRegistrationRequest,
        api_version: i16,
        now: i64,
    ) -> Result<Outcome<BrokerRegistrationReply>> {
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
        let mut outcome = Outcome::answer(BrokerRegistrationReply {
            epoch: decision.epoch,
        });
        outcome.records.push(decision.record);
        if decision.new_incarnation {
            outcome.effects.push(Effect::ForgetBroker {
                broker_id: request.broker_id,
            });
        }
        Ok(outcome)
    }

    /// BrokerHeartbeat (any version), with Kafka's error and message.
    pub fn broker_heartbeat(
        &self,
        request: &BrokerHeartbeatRequest,
        now: i64,
    ) -> Result<Outcome<BrokerHeartbeatReply>> {
        let broker_id = request.broker_id;
        let Some(registration) = self.broker(broker_id) else {
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
            records.extend(heartbeat::state_change_records(registration, next));
        }
        let mv = self.metadata_version();
        records.extend(heartbeat::offline_dirs_record(registration, request, mv));
        records.extend(heartbeat::cordoned_dirs_record(registration, request, mv));
        let effects = vec![
            Effect::TouchSession {
                broker_id,
                epoch: registration.epoch,
                now,
            },
            // A fenced broker leaves controlled shutdown (Kafka's `touch`).
            Effect::ControlledShutdown {
                broker_id,
                on: next.in_controlled_shutdown(),
            },
        ];
        Ok(Outcome {
            records,
            response: BrokerHeartbeatReply {
                is_caught_up: heartbeat::caught_up(request, registration.registration_offset),
                is_fenced: next.fenced(),
                in_controlled_shutdown: next.in_controlled_shutdown(),
                should_shut_down: next.should_shut_down(),
            },
            effects,
        })
    }

    /// Kafka's UnregisterBroker (key 64): removes a registration whatever its state.
    pub fn unregister_broker(&self, broker_id: i32) -> Result<Outcome<()>> {
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
        let mut outcome = Outcome::answer(());
        outcome.records.push(record.at_version(0));
        outcome.effects.push(Effect::ForgetBroker { broker_id });
        Ok(outcome)
    }

    /// Fences every broker whose session expired at `now` (Kafka's `maybeFenceOneStaleBroker`,
    /// oldest contact first; here in one batch). A session of a previous epoch, of a broker
    /// that is gone, or of a broker that is fenced already (Kafka looks for stale brokers among
    /// the unfenced ones only) is just forgotten.
    pub fn tick(&self, now: i64) -> Outcome<Vec<TickEvent>> {
        let mut outcome = Outcome::answer(Vec::new());
        for (broker_id, epoch) in self.sessions.expired(now) {
            outcome
                .effects
                .push(Effect::EndSession { broker_id, epoch });
            let Some(registration) = self
                .broker(broker_id)
                .filter(|r| r.epoch == epoch && !r.fenced)
            else {
                continue;
            };
            outcome.records.extend(heartbeat::state_change_records(
                registration,
                BrokerControlState::Fenced,
            ));
            outcome.effects.push(Effect::ControlledShutdown {
                broker_id,
                on: false,
            });
            outcome
                .response
                .push(TickEvent::SessionExpired { broker_id, epoch });
        }
        outcome
    }

    /// Kafka's `ProducerIdControlManager.generateNextProducerId`: the next block of
    /// [`PRODUCER_ID_BLOCK_SIZE`] producer ids for `broker_id`, recorded in the log before it is
    /// handed out, so that no id is ever handed out twice, across restarts too.
    pub fn allocate_producer_ids(
        &self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<Outcome<ProducerIdBlock>> {
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
        let mut outcome = Outcome::answer(ProducerIdBlock {
            first,
            size: PRODUCER_ID_BLOCK_SIZE,
        });
        outcome.records.push(record.at_version(0));
        Ok(outcome)
    }

    /// CreateTopics (see [`topics::create_topics`]); `new_id` gives each new topic its id.
    pub fn create_topics(
        &self,
        request: &CreateTopicsRequest,
        new_id: impl FnMut() -> Uuid,
    ) -> Outcome<Vec<CreatableTopicResult>> {
        topics::create_topics(
            &self.state().topics,
            &self.config.topic_defaults,
            &self.config.topic_limits,
            request,
            new_id,
        )
        .into()
    }

    /// CreatePartitions of the topics left once the handler answered duplicates and refusals
    /// (see [`topics::create_partitions`]).
    pub fn create_partitions(
        &self,
        topics: &[CreatePartitionsTopic],
        validate_only: bool,
    ) -> Outcome<Vec<CreatePartitionsTopicResult>> {
        topics::create_partitions(
            &self.state().topics,
            self.config.topic_defaults.node_id,
            &self.config.topic_limits,
            topics,
            validate_only,
        )
        .into()
    }

    /// DeleteTopics (see [`topics::delete_topics_as`]).
    pub fn delete_topics(
        &self,
        request: &DeleteTopicsRequest,
        access: &topics::TopicAccess,
    ) -> Outcome<Vec<DeletableTopicResult>> {
        topics::delete_topics_as(&self.state().topics, request, access).into()
    }

    /// IncrementalAlterConfigs of GROUP resources (see [`group_configs::alter_group_configs`]):
    /// one result per change, in order.
    pub fn alter_group_configs(
        &self,
        rules: &dyn GroupConfigValidator,
        changes: &[GroupConfigChange],
        validate_only: bool,
    ) -> Outcome<Vec<std::result::Result<(), ResourceError>>> {
        group_configs::alter_group_configs(
            &self.state().group_configs,
            rules,
            changes,
            validate_only,
        )
        .into()
    }

    /// IncrementalAlterConfigs and AlterConfigs of TOPIC and BROKER resources (see
    /// [`crate::configs::alter_configs`]): one result per change, in order.
    pub fn alter_configs(
        &self,
        changes: &[crate::configs::ConfigChange],
        validate_only: bool,
    ) -> Outcome<Vec<std::result::Result<(), ResourceError>>> {
        crate::configs::alter_configs(
            self.state(),
            self.config.topic_defaults.node_id,
            changes,
            validate_only,
        )
        .into()
    }

    /// The ACLs the log holds.
    pub fn acls(&self) -> &Acls {
        &self.acls
    }

    /// CreateAcls (see [`acls::create_acls`]): each creation's result in request order;
    /// `new_id` draws the new ACLs' ids.
    pub fn create_acls(
        &self,
        creations: &[AclCreation],
        new_id: impl FnMut() -> Uuid,
    ) -> Outcome<Vec<CreateAclResult>> {
        let cidr_supported = self.metadata_version().is_cidr_acl_supported();
        let (records, results) = acls::create_acls(&self.acls, creations, cidr_supported, new_id);
        Outcome {
            records,
            response: results,
            effects: Vec::new(),
        }
    }

    /// DeleteAcls (see [`acls::delete_acls`]): each filter's result in request order.
    pub fn delete_acls(&self, filters: &[AclBindingFilter]) -> Outcome<Vec<DeleteAclsResult>> {
        let (records, results) = acls::delete_acls(&self.acls, filters);
        Outcome {
            records,
            response: results,
            effects: Vec::new(),
        }
    }

    /// AlterUserScramCredentials (see [`crate::scram::alter_credentials`]): one result per
    /// user.
    pub fn alter_scram_credentials(
        &self,
        request: &AlterUserScramCredentialsRequest,
    ) -> Outcome<Vec<AlterUserScramCredentialsResult>> {
        let (records, results) = crate::scram::alter_credentials(
            &self.state().security,
            self.metadata_version(),
            request,
        );
        Outcome {
            records,
            response: results,
            effects: Vec::new(),
        }
    }

    /// The next time `tick` has work to do.
    pub fn next_deadline(&self) -> Option<i64> {
        self.sessions.next_deadline()
    }
}
