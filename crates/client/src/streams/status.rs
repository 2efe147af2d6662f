//! The statuses a streams group heartbeat response carries
//! (Kafka's `StreamsGroupHeartbeatResponse.Status`).

use kcoord_wire::messages::streams_group_heartbeat_response as resp;

/// A status code; codes this client does not know are kept as they came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusCode {
    StaleTopology,
    MissingSourceTopics,
    IncorrectlyPartitionedTopics,
    MissingInternalTopics,
    ShutdownApplication,
    AssignmentDelayed,
    MissingClientTags,
    Unknown(i8),
}

impl StatusCode {
    pub fn from_code(code: i8) -> StatusCode {
        match code {
            0 => StatusCode::StaleTopology,
            1 => StatusCode::MissingSourceTopics,
            2 => StatusCode::IncorrectlyPartitionedTopics,
            3 => StatusCode::MissingInternalTopics,
            4 => StatusCode::ShutdownApplication,
            5 => StatusCode::AssignmentDelayed,
            6 => StatusCode::MissingClientTags,
            other => StatusCode::Unknown(other),
        }
    }

    pub fn code(self) -> i8 {
        match self {
            StatusCode::StaleTopology => 0,
            StatusCode::MissingSourceTopics => 1,
            StatusCode::IncorrectlyPartitionedTopics => 2,
            StatusCode::MissingInternalTopics => 3,
            StatusCode::ShutdownApplication => 4,
            StatusCode::AssignmentDelayed => 5,
            StatusCode::MissingClientTags => 6,
            StatusCode::Unknown(code) => code,
        }
    }

    /// Kafka's constant name, e.g. `MISSING_SOURCE_TOPICS`.
    pub fn name(self) -> &'static str {
        match self {
            StatusCode::StaleTopology => "STALE_TOPOLOGY",
            StatusCode::MissingSourceTopics => "MISSING_SOURCE_TOPICS",
            StatusCode::IncorrectlyPartitionedTopics => "INCORRECTLY_PARTITIONED_TOPICS",
            StatusCode::MissingInternalTopics => "MISSING_INTERNAL_TOPICS",
            StatusCode::ShutdownApplication => "SHUTDOWN_APPLICATION",
            StatusCode::AssignmentDelayed => "ASSIGNMENT_DELAYED",
            StatusCode::MissingClientTags => "MISSING_CLIENT_TAGS",
            StatusCode::Unknown(_) => "UNKNOWN",
        }
    }
}

/// One status of the last heartbeat response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupStatus {
    pub code: StatusCode,
    pub detail: String,
}

impl StreamsGroupStatus {
    pub(crate) fn from_wire(status: &resp::Status) -> StreamsGroupStatus {
        StreamsGroupStatus {
            code: StatusCode::from_code(status.status_code),
            detail: status.status_detail.clone(),
        }
    }
}

impl std::fmt::Display for StreamsGroupStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.name(),
            self.code.code(),
            self.detail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_ones_are_kept() {
        for code in -1..=8 {
            assert_eq!(StatusCode::from_code(code).code(), code);
        }
        assert_eq!(StatusCode::from_code(6), StatusCode::MissingClientTags);
        assert_eq!(StatusCode::from_code(9).name(), "UNKNOWN");
    }
}
