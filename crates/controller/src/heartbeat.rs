//! BrokerHeartbeat (key 63, v0-v2): Kafka's `BrokerHeartbeatManager.calculateNextBrokerState`
//! and `ReplicationControlManager.processBrokerHeartbeat`, minus partition leadership (kcoord
//! brokers lead no partitions).
use kcoord_metadata::{BrokerRegistration, MetadataVersion, Record, RecordAndVersion};
use kcoord_wire::messages::{BrokerHeartbeatRequest, BrokerHeartbeatResponse};

use crate::error::Result;
use kcoord_wire::records::BrokerRegistrationChangeRecord;

/// `BrokerRegistrationFencingChange` values of BrokerRegistrationChangeRecord.Fenced.
pub const FENCE: i8 = 1;
pub const UNFENCE: i8 = -1;
/// `BrokerRegistrationInControlledShutdownChange.IN_CONTROLLED_SHUTDOWN`.
pub const IN_CONTROLLED_SHUTDOWN: i8 = 1;

/// Kafka's `BrokerControlState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerControlState {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

impl BrokerControlState {
    pub fn fenced(self) -> bool {
        matches!(
            self,
            BrokerControlState::Fenced | BrokerControlState::ShutdownNow
        )
    }

    pub fn should_shut_down(self) -> bool {
        self == BrokerControlState::ShutdownNow
    }

    pub fn in_controlled_shutdown(self) -> bool {
        self == BrokerControlState::ControlledShutdown
    }
}

/// What a successful heartbeat answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerHeartbeatReply {
    /// The broker has applied the log up to its own RegisterBrokerRecord.
    pub is_caught_up: bool,
    pub is_fenced: bool,
    pub in_controlled_shutdown: bool,
    pub should_shut_down: bool,
}

impl BrokerHeartbeatReply {
    /// The response Kafka answers with; an error keeps Kafka's defaults (not caught up,
    /// fenced, no shutdown).
    pub fn response(result: &Result<BrokerHeartbeatReply>) -> BrokerHeartbeatResponse {
        match result {
            Ok(reply) => BrokerHeartbeatResponse {
                is_caught_up: reply.is_caught_up,
                is_fenced: reply.is_fenced,
                should_shut_down: reply.should_shut_down,
                ..Default::default()
            },
            Err(e) => BrokerHeartbeatResponse {
                error_code: e.code.code(),
                ..Default::default()
            },
        }
    }
}

/// `calculateNextBrokerState`. `has_leaderships` says whether the broker still leads
/// partitions (always false for kcoord brokers, so a shutdown request is granted at once).
pub fn next_state(
    current: BrokerControlState,
    request: &BrokerHeartbeatRequest,
    registration_offset: u64,
    has_leaderships: bool,
) -> BrokerControlState {
    use BrokerControlState::*;
    match current {
        Fenced if request.want_shut_down => ShutdownNow,
        Fenced if !request.want_fence && caught_up(request, registration_offset) => Unfenced,
        Fenced => Fenced,
        Unfenced if request.want_fence && request.want_shut_down => ShutdownNow,
        Unfenced if request.want_fence => Fenced,
        Unfenced if request.want_shut_down && has_leaderships => ControlledShutdown,
        Unfenced if request.want_shut_down => ShutdownNow,
        Unfenced => Unfenced,
        // Kafka also waits for the other brokers to catch up with the leadership changes; with
        // no leaderships there were none.
        ControlledShutdown if has_leaderships => ControlledShutdown,
        ControlledShutdown | ShutdownNow => ShutdownNow,
    }
}

/// Kafka: the broker's metadata offset has reached the offset of its RegisterBrokerRecord.
pub fn caught_up(request: &BrokerHeartbeatRequest, registration_offset: u64) -> bool {
    request.current_metadata_offset >= 0
        && request.current_metadata_offset as u64 >= registration_offset
}

/// The records Kafka writes for a state change, at the versions it writes them.
pub(crate) fn state_change_records(
    registration: &BrokerRegistration,
    next: BrokerControlState,
) -> Vec<RecordAndVersion> {
    let change = |fenced: i8, in_controlled_shutdown: i8, version: i16| {
        Record::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
            broker_id: registration.id,
            broker_epoch: registration.epoch,
            fenced,
            in_controlled_shutdown,
            ..Default::default()
        })
        .at_version(version)
    };
    match next {
        BrokerControlState::Fenced | BrokerControlState::ShutdownNow => vec![change(FENCE, 0, 0)],
        BrokerControlState::Unfenced => vec![change(UNFENCE, 0, 0)],
        // Written only on entering controlled shutdown.
        BrokerControlState::ControlledShutdown if !registration.in_controlled_shutdown => {
            vec![change(0, IN_CONTROLLED_SHUTDOWN, 1)]
        }
        BrokerControlState::ControlledShutdown => vec![],
    }
}

/// `handleDirectoriesOffline` (metadata.version 3.7-IV2 and later): when a directory the
/// registration lists goes offline, the remaining ones become the registration's directories.
pub(crate) fn offline_dirs_record(
    registration: &BrokerRegistration,
    request: &BrokerHeartbeatRequest,
    mv: MetadataVersion,
) -> Option<RecordAndVersion> {
    if !mv.is_directory_assignment_supported() {
        return None;
    }
    let newly_offline = registration
        .directories
        .iter()
        .any(|d| request.offline_log_dirs.contains(d));
    if !newly_offline {
        return None;
    }
    let online: Vec<_> = registration
        .directories
        .iter()
        .filter(|d| !request.offline_log_dirs.contains(d))
        .copied()
        .collect();
    let record = BrokerRegistrationChangeRecord {
        broker_id: registration.id,
        broker_epoch: registration.epoch,
        log_dirs: online,
        ..Default::default()
    };
    Some(Record::BrokerRegistrationChange(record).at_version(2))
}

/// `handleDirectoriesCordoned` (metadata.version 4.3-IV0 and later): a changed set of cordoned
/// directories is recorded; null means the broker does not know yet.
pub(crate) fn cordoned_dirs_record(
    registration: &BrokerRegistration,
    request: &BrokerHeartbeatRequest,
    mv: MetadataVersion,
) -> Option<RecordAndVersion> {
    if !mv.is_cordoned_log_dirs_supported() {
        return None;
    }
    let reported = request.cordoned_log_dirs.as_ref()?;
    let changed = match &registration.cordoned_directories {
        None => true,
        Some(current) => {
            let as_set = |dirs: &[uuid::Uuid]| {
                dirs.iter()
                    .copied()
                    .collect::<std::collections::BTreeSet<_>>()
            };
            as_set(current) != as_set(reported)
        }
    };
    if !changed {
        return None;
    }
    let record = BrokerRegistrationChangeRecord {
        broker_id: registration.id,
        broker_epoch: registration.epoch,
        cordoned_log_dirs: Some(reported.clone()),
        ..Default::default()
    };
    Some(Record::BrokerRegistrationChange(record).at_version(3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use BrokerControlState::*;

    fn request(want_fence: bool, want_shut_down: bool, offset: i64) -> BrokerHeartbeatRequest {
        BrokerHeartbeatRequest {
            want_fence,
            want_shut_down,
            current_metadata_offset: offset,
            ..Default::default()
        }
    }

    #[test]
    fn a_fenced_broker_is_unfenced_once_caught_up_unless_it_wants_to_stay_fenced() {
        assert_eq!(
            next_state(Fenced, &request(false, false, 9), 10, false),
            Fenced
        );
        assert_eq!(
            next_state(Fenced, &request(false, false, 10), 10, false),
            Unfenced
        );
        assert_eq!(
            next_state(Fenced, &request(true, false, 10), 10, false),
            Fenced
        );
        assert_eq!(
            next_state(Fenced, &request(false, false, -1), 0, false),
            Fenced,
            "-1 means nothing applied"
        );
        assert_eq!(
            next_state(Fenced, &request(false, true, 0), 10, false),
            ShutdownNow
        );
    }

    #[test]
    fn an_unfenced_broker_asks_to_be_fenced_or_to_shut_down() {
        assert_eq!(
            next_state(Unfenced, &request(false, false, 0), 10, false),
            Unfenced
        );
        assert_eq!(
            next_state(Unfenced, &request(true, false, 0), 10, false),
            Fenced
        );
        assert_eq!(
            next_state(Unfenced, &request(true, true, 0), 10, false),
            ShutdownNow
        );
        assert_eq!(
            next_state(Unfenced, &request(false, true, 0), 10, false),
            ShutdownNow,
            "no leaderships: shut down now"
        );
        assert_eq!(
            next_state(Unfenced, &request(false, true, 0), 10, true),
            ControlledShutdown,
            "leaders move first"
        );
        assert_eq!(
            next_state(ControlledShutdown, &request(false, true, 0), 10, true),
            ControlledShutdown
        );
        assert_eq!(
            next_state(ControlledShutdown, &request(false, true, 0), 10, false),
            ShutdownNow
        );
    }

    #[test]
    fn states_answer_as_kafkas() {
        assert!(Fenced.fenced() && !Fenced.should_shut_down());
        assert!(!Unfenced.fenced());
        assert!(!ControlledShutdown.fenced() && ControlledShutdown.in_controlled_shutdown());
        assert!(ShutdownNow.fenced() && ShutdownNow.should_shut_down());
    }
}
