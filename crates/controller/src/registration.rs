//! BrokerRegistration (key 62, v0-v6) as Kafka's `ClusterControlManager.registerBroker` decides
//! it, with KIP-1326's StaticConfigs. The checks run in Kafka's order; the first that fails
//! answers.
use std::collections::{BTreeMap, HashSet};

use kcoord_metadata::metadata_version::FEATURE_NAME;
use kcoord_metadata::{BrokersImage, FeatureRange, MetadataVersion, Record, RecordAndVersion};
use kcoord_wire::messages::broker_registration_request::Feature;
use kcoord_wire::messages::{BrokerRegistrationRequest, BrokerRegistrationResponse};
use kcoord_wire::records::register_broker_record::{
    BrokerEndpoint, BrokerFeature, BrokerStaticConfig,
};
use kcoord_wire::records::RegisterBrokerRecord;
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::error::{ControllerError, Result};
use kcoord_wire::kafka_uuid;

/// The first request version with PreviousBrokerEpoch (clean shutdown detection).
pub const CLEAN_SHUTDOWN_DETECTION_VERSION: i16 = 3;
/// The first request version with CordonedLogDirs (kcoord v5).
pub const CORDONED_LOG_DIRS_VERSION: i16 = 5;
/// The first request version with StaticConfigs (KIP-1326, kcoord v6).
pub const STATIC_CONFIGS_VERSION: i16 = 6;

/// What a successful registration answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerRegistrationReply {
    pub epoch: i64,
}

impl BrokerRegistrationReply {
    /// The response Kafka answers with: the epoch, or the error code and epoch -1 (the
    /// response has no room for the message).
    pub fn response(result: &Result<BrokerRegistrationReply>) -> BrokerRegistrationResponse {
        match result {
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
}

/// Everything `decide` reads.
pub(crate) struct RegistrationContext<'a> {
    pub cluster_id: &'a str,
    pub brokers: &'a BrokersImage,
    pub metadata_version: MetadataVersion,
    /// Every finalized feature, `metadata.version` included.
    pub finalized: &'a BTreeMap<String, i16>,
    /// The offset the batch will start at: a new incarnation's epoch.
    pub next_offset: u64,
    /// Whether the broker's current registration still has a live session.
    pub has_live_session: bool,
}

/// The decision: the record to append and the epoch to answer.
#[derive(Debug)]
pub(crate) struct RegistrationDecision {
    pub record: RecordAndVersion,
    pub epoch: i64,
    /// A new incarnation replaces the old one: its sessions are dropped.
    pub new_incarnation: bool,
}

/// Kafka's `DirectoryId.reserved`: the ids whose most significant 64 bits are zero and whose
/// least significant 64 bits, read as a signed Java long, are below 100.
pub fn is_reserved_directory(id: &Uuid) -> bool {
    let value = id.as_u128();
    (value >> 64) == 0 && (value as u64 as i64) < 100
}

pub(crate) fn decide(
    ctx: &RegistrationContext<'_>,
    request: &BrokerRegistrationRequest,
    api_version: i16,
) -> Result<RegistrationDecision> {
    check_cluster_and_incarnation(ctx, request)?;
    if ctx.metadata_version.is_directory_assignment_supported() {
        check_log_dirs(ctx.brokers, request.broker_id, &request.log_dirs)?;
    }
    let features = check_features(ctx, &request.features)?;
    let mut record = register_broker_record(ctx, request, api_version, features);

    let existing = ctx.brokers.get(request.broker_id);
    let new_incarnation = existing.is_none_or(|e| e.incarnation_id != request.incarnation_id);
    match existing.filter(|_| !new_incarnation) {
        // Same incarnation: the registration is amended; epoch, fencing and controlled
        // shutdown stay as they are.
        Some(existing) => {
            record.fenced = existing.fenced;
            record.in_controlled_shutdown = existing.in_controlled_shutdown;
            record.broker_epoch = existing.epoch;
        }
        // New incarnation: registers fenced, with the offset of the batch's first record as its
        // epoch. Kafka puts the old incarnation's shutdown clean-up records (partition changes)
        // first in the batch; kcoord brokers host no partitions, so there are none and the
        // epoch is also the offset of the RegisterBrokerRecord. For the same reason the clean
        // shutdown detection of v3+ (PreviousBrokerEpoch) changes nothing here.
        None => {
            record.fenced = true;
            record.broker_epoch = ctx.next_offset as i64;
        }
    }
    let epoch = record.broker_epoch;
    let version = ctx.metadata_version.register_broker_record_version();
    Ok(RegistrationDecision {
        record: Record::RegisterBroker(record).at_version(version),
        epoch,
        new_incarnation,
    })
}

/// The first checks: the cluster id, another live incarnation of the broker id, and ZK brokers.
fn check_cluster_and_incarnation(
    ctx: &RegistrationContext<'_>,
    request: &BrokerRegistrationRequest,
) -> Result<()> {
    if request.cluster_id != ctx.cluster_id {
        return Err(ControllerError::new(
            ErrorCode::INCONSISTENT_CLUSTER_ID,
            format!(
                "Expected cluster ID {}, but got cluster ID {}",
                ctx.cluster_id, request.cluster_id
            ),
        ));
    }
    if let Some(existing) = ctx.brokers.get(request.broker_id) {
        if ctx.has_live_session && request.incarnation_id != existing.incarnation_id {
            return Err(ControllerError::new(
                ErrorCode::DUPLICATE_BROKER_REGISTRATION,
                "Another broker is registered with that broker id. If the broker was recently restarted this should \
                 self-resolve once the heartbeat manager expires the broker's session.",
            ));
        }
    }
    if request.is_migrating_zk_broker {
        return Err(ControllerError::new(
            ErrorCode::BROKER_ID_NOT_REGISTERED,
            "Controller does not support registering ZK brokers.",
        ));
    }
    Ok(())
}

/// The RegisterBrokerRecord of the request, with the fields the finalized `metadata.version`
/// and the request's version have room for; its epoch and fencing are left to `decide`.
fn register_broker_record(
    ctx: &RegistrationContext<'_>,
    request: &BrokerRegistrationRequest,
    api_version: i16,
    features: Vec<BrokerFeature>,
) -> RegisterBrokerRecord {
    let mut record = RegisterBrokerRecord {
        broker_id: request.broker_id,
        is_migrating_zk_broker: false,
        incarnation_id: request.incarnation_id,
        rack: request.rack.clone(),
        end_points: request
            .listeners
            .iter()
            .map(|l| BrokerEndpoint {
                name: l.name.clone(),
                host: l.host.clone(),
                port: l.port,
                security_protocol: l.security_protocol,
                ..Default::default()
            })
            .collect(),
        features,
        ..Default::default()
    };
    if ctx.metadata_version.is_directory_assignment_supported() {
        record.log_dirs = request.log_dirs.clone();
    }
    if ctx.metadata_version.is_cordoned_log_dirs_supported()
        && api_version >= CORDONED_LOG_DIRS_VERSION
    {
        record.cordoned_log_dirs = Some(request.cordoned_log_dirs.clone());
    }
    // KIP-1326: copied only when the finalized metadata.version can persist them; at older
    // levels the record is written at an older version, which has no room for them.
    if ctx.metadata_version.is_static_configs_supported() && api_version >= STATIC_CONFIGS_VERSION {
        record.static_configs = request
            .static_configs
            .iter()
            .map(|c| BrokerStaticConfig {
                name: c.name.clone(),
                value: c.value.clone(),
                ..Default::default()
            })
            .collect();
    }
    record
}

/// INVALID_REGISTRATION for log directory problems (metadata.version 3.7-IV2 and later).
fn check_log_dirs(brokers: &BrokersImage, broker_id: i32, log_dirs: &[Uuid]) -> Result<()> {
    if log_dirs.is_empty() {
        return Err(ControllerError::invalid_registration(
            "No directories specified in request",
        ));
    }
    if log_dirs.iter().any(is_reserved_directory) {
        return Err(ControllerError::invalid_registration(
            "Reserved directory ID in request",
        ));
    }
    if log_dirs.iter().collect::<HashSet<_>>().len() != log_dirs.len() {
        return Err(ControllerError::invalid_registration(
            "Duplicate directory ID in request",
        ));
    }
    for dir in log_dirs {
        if let Some(owner) = brokers
            .directory_owner(dir)
            .filter(|owner| *owner != broker_id)
        {
            return Err(ControllerError::invalid_registration(format!(
                "Broker {owner} is already registered with directory {}",
                kafka_uuid(dir)
            )));
        }
    }
    Ok(())
}

/// Every feature range the broker sent must contain the finalized level (0 for a feature that
/// is not finalized); `metadata.version` must be among them; and every finalized feature the
/// broker left out is checked as the range [0, 0].
fn check_features(
    ctx: &RegistrationContext<'_>,
    features: &[Feature],
) -> Result<Vec<BrokerFeature>> {
    let mut record_features = Vec::with_capacity(features.len());
    for feature in features {
        check_feature(
            ctx,
            &feature.name,
            FeatureRange {
                min: feature.min_supported_version,
                max: feature.max_supported_version,
            },
        )?;
        record_features.push(BrokerFeature {
            name: feature.name.clone(),
            min_supported_version: feature.min_supported_version,
            max_supported_version: feature.max_supported_version,
            ..Default::default()
        });
    }
    if !features.iter().any(|f| f.name == FEATURE_NAME) {
        return Err(ControllerError::invalid_registration(format!(
            "Request features do not contain '{FEATURE_NAME}'"
        )));
    }
    for (name, level) in ctx.finalized {
        if *level != 0 && !features.iter().any(|f| &f.name == name) {
            check_feature(ctx, name, FeatureRange { min: 0, max: 0 })?;
        }
    }
    Ok(record_features)
}

fn check_feature(ctx: &RegistrationContext<'_>, name: &str, range: FeatureRange) -> Result<()> {
    let finalized = if name == FEATURE_NAME {
        ctx.metadata_version.feature_level()
    } else {
        ctx.finalized.get(name).copied().unwrap_or(0)
    };
    if !range.contains(finalized) {
        return Err(ControllerError::new(
            ErrorCode::UNSUPPORTED_VERSION,
            format!(
                "Unable to register because the broker does not support finalized version {finalized} of {name}. \
                 The broker wants a version between {} and {}, inclusive.",
                range.min, range.max
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_directory_ids_are_kafkas() {
        assert!(is_reserved_directory(&Uuid::nil()));
        assert!(is_reserved_directory(&Uuid::from_u128(1)));
        assert!(is_reserved_directory(&Uuid::from_u128(99)));
        assert!(!is_reserved_directory(&Uuid::from_u128(100)));
        // A negative Java long is below 100 too.
        assert!(is_reserved_directory(&Uuid::from_u128(u64::MAX as u128)));
        assert!(!is_reserved_directory(&Uuid::from_u128(1 << 64)));
    }
}
