//! KIP-848 consumer groups (`group.protocol=consumer`), following Apache Kafka 4.4's
//! `GroupMetadataManager.consumerGroupHeartbeat` on the shard's runtime: a handler reads the
//! shard and returns the records, the response and the effects (timers).
//!
//! The modules: [`heartbeat`] (join, steady heartbeat, epoch bumps), [`leave`], `member`
//! (finding the member, static membership and epoch checks), [`reconcile`] (Kafka's
//! `CurrentAssignmentBuilder`), [`assignor`] (`uniform` and `range`), [`target`] (the target
//! assignment and its records), [`subscription`] (regular expressions and the metadata hash),
//! [`admin`] (describe, list, delete, offsets, timers), `upgrade` (why a live classic group
//! is not converted).
pub mod admin;
pub mod assignor;
mod classic_join;
mod classic_members;
mod downgrade;
mod heartbeat;
mod leave;
mod member;
pub mod reconcile;
pub mod records;
mod settings;
mod steady;
mod steps;
pub mod subscription;
pub mod target;
mod upgrade;

use kcoord_wire::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kcoord_wire::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;
use kcoord_wire::ErrorCode;

use crate::error::{CoordinatorError, Result};
use crate::shard::CoordinatorShard;
use crate::validate::{LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use crate::Outcome;

/// The protocol type and group type Kafka reports for consumer groups.
pub const CONSUMER: &str = "consumer";

/// Heartbeat v1 and later: the member id is the client's own (KIP-1082).
const CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION: i16 = 1;

/// The broker's consumer group settings (`group.consumer.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub max_size: i32,
    /// `group.consumer.assignors`: the first is the default.
    pub assignors: Vec<String>,
    /// `group.consumer.assignment.interval.ms`: the least time between two target assignment
    /// computations of a group (0: every heartbeat that moves the group epoch computes one).
    pub assignment_interval_ms: i32,
    /// `group.consumer.migration.policy`.
    pub migration_policy: MigrationPolicy,
}

/// Kafka's `ConsumerGroupMigrationPolicy`: whether a classic group with members may become a
/// consumer group online (upgrade), and a consumer group whose members all speak the classic
/// protocol may become a classic group again (downgrade).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    #[default]
    Bidirectional,
    Upgrade,
    Downgrade,
    /// Neither; a classic member may not join a consumer group either.
    Disabled,
}

impl MigrationPolicy {
    /// The policy `name` names, case-insensitively as Kafka parses it.
    pub fn parse(name: &str) -> Option<MigrationPolicy> {
        [
            MigrationPolicy::Bidirectional,
            MigrationPolicy::Upgrade,
            MigrationPolicy::Downgrade,
            MigrationPolicy::Disabled,
        ]
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            MigrationPolicy::Bidirectional => "bidirectional",
            MigrationPolicy::Upgrade => "upgrade",
            MigrationPolicy::Downgrade => "downgrade",
            MigrationPolicy::Disabled => "disabled",
        }
    }

    pub fn is_upgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade
        )
    }

    pub fn is_downgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
        )
    }
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: i32::MAX,
            assignors: vec![assignor::UNIFORM.to_string(), assignor::RANGE.to_string()],
            assignment_interval_ms: 1_000,
            migration_policy: MigrationPolicy::Bidirectional,
        }
    }
}

impl ConsumerGroupConfig {
    /// The assignor a group uses when no member names one.
    pub fn default_assignor(&self) -> &str {
        self.assignors
            .first()
            .map_or(assignor::UNIFORM, String::as_str)
    }
}

/// Who is asking, as the network layer knows it.
#[derive(Clone, Copy)]
pub struct ConsumerHeartbeatContext<'a> {
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub api_version: i16,
    /// Whether the requester may DESCRIBE a topic: a regular expression resolves only to
    /// those, as Kafka's `TopicRegexResolver` filters them.
    pub may_describe: &'a (dyn Fn(&str) -> bool + Sync),
}

impl std::fmt::Debug for ConsumerHeartbeatContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerHeartbeatContext")
            .field("client_id", &self.client_id)
            .field("client_host", &self.client_host)
            .field("api_version", &self.api_version)
            .finish_non_exhaustive()
    }
}

impl CoordinatorShard {
    /// ConsumerGroupHeartbeat: the request's records, its answer (or the error to answer
    /// with) and its effects.
    pub fn consumer_group_heartbeat(
        &self,
        ctx: &ConsumerHeartbeatContext,
        request: &ConsumerGroupHeartbeatRequest,
        now: i64,
    ) -> Outcome<Result<ConsumerGroupHeartbeatResponse>> {
        if let Err(e) = self.validate_consumer_heartbeat(request, ctx.api_version) {
            return Outcome::answer(Err(e));
        }
        if request.member_epoch == LEAVE_EPOCH || request.member_epoch == STATIC_LEAVE_EPOCH {
            return self.consumer_group_leave(request, now);
        }
        if let Some(steady) = self.consumer_steady_heartbeat(ctx, request, now) {
            return steady;
        }
        heartbeat::ConsumerHeartbeat::new(self, ctx, request, now).run()
    }

    /// The consumer group settings of the broker.
    pub fn consumer_config(&self) -> &ConsumerGroupConfig {
        &self.consumer
    }

    /// `GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid`.
    fn validate_consumer_heartbeat(
        &self,
        request: &ConsumerGroupHeartbeatRequest,
        api_version: i16,
    ) -> Result<()> {
        let epoch = request.member_epoch;
        if (api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
            || epoch > 0
            || epoch == LEAVE_EPOCH)
            && request.member_id.is_empty()
        {
            return Err(CoordinatorError::invalid_request(
                "MemberId can't be empty.",
            ));
        }
        if request.group_id.is_empty() {
            return Err(CoordinatorError::invalid_request("GroupId can't be empty."));
        }
        if request.instance_id.as_deref() == Some("") {
            return Err(CoordinatorError::invalid_request(
                "InstanceId can't be empty.",
            ));
        }
        if request.rack_id.as_deref() == Some("") {
            return Err(CoordinatorError::invalid_request("RackId can't be empty."));
        }
        if epoch == 0 {
            if request.rebalance_timeout_ms == -1 {
                return Err(CoordinatorError::invalid_request(
                    "RebalanceTimeoutMs must be provided in first request.",
                ));
            }
            if request
                .topic_partitions
                .as_ref()
                .is_none_or(|p| !p.is_empty())
            {
                return Err(CoordinatorError::invalid_request(
                    "TopicPartitions must be empty when (re-)joining.",
                ));
            }
            if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none()
            {
                return Err(CoordinatorError::invalid_request(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
                ));
            }
        } else if epoch == STATIC_LEAVE_EPOCH {
            if request.instance_id.is_none() {
                return Err(CoordinatorError::invalid_request(
                    "InstanceId can't be null.",
                ));
            }
        } else if epoch < STATIC_LEAVE_EPOCH {
            return Err(CoordinatorError::invalid_request("MemberEpoch is invalid."));
        }
        if let Some(name) = &request.server_assignor {
            if !self.consumer.assignors.iter().any(|a| a == name) {
                return Err(CoordinatorError::new(
                    ErrorCode::UNSUPPORTED_ASSIGNOR,
                    format!(
                        "ServerAssignor {name} is not supported. Supported assignors: {}.",
                        self.consumer.assignors.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The error for a heartbeat (not a join) to a group that is not a consumer group.
    pub(crate) fn missing_consumer_group(&self, group_id: &str) -> CoordinatorError {
        if self.is_other_group_type(group_id) {
            not_a_consumer_group(group_id)
        } else {
            CoordinatorError::new(
                ErrorCode::GROUP_ID_NOT_FOUND,
                format!("Consumer group {group_id} not found."),
            )
        }
    }

    /// Whether `group_id` names a streams group or a classic group (types a consumer-protocol
    /// member cannot join; an empty classic group is converted by a join instead).
    pub(crate) fn is_other_group_type(&self, group_id: &str) -> bool {
        self.state().streams_groups.get(group_id).is_some()
            || self.classic_group(group_id).is_some()
    }
}

/// `getOrMaybeCreateConsumerGroup`'s words for a group of another type.
pub(crate) fn not_a_consumer_group(group_id: &str) -> CoordinatorError {
    CoordinatorError::new(
        ErrorCode::GROUP_ID_NOT_FOUND,
        format!("Group {group_id} is not a consumer group."),
    )
}

/// Kafka's `Uuid.toString()`: the 16 bytes in URL-safe base64 without padding (22 characters),
/// the form of a member id the coordinator mints for a v0 client.
pub(crate) fn kafka_uuid_string(id: uuid::Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
    out
}
