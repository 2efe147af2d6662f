//! The error a coordinator operation answers with: a Kafka error code and an optional message.
use kcoord_wire::ErrorCode;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", code.name(), message.as_deref().unwrap_or(code.message()))]
pub struct CoordinatorError {
    pub code: ErrorCode,
    pub message: Option<String>,
}

impl CoordinatorError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CoordinatorError {
            code,
            message: Some(message.into()),
        }
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }

    pub fn unknown_member(group_id: &str, member_id: &str) -> Self {
        Self::new(
            ErrorCode::UNKNOWN_MEMBER_ID,
            format!("Member {member_id} is not a member of group {group_id}."),
        )
    }

    /// `getStreamsGroupOrThrow` (a heartbeat that is not a join).
    pub fn group_not_found(group_id: &str) -> Self {
        Self::new(
            ErrorCode::GROUP_ID_NOT_FOUND,
            format!("Streams group {group_id} not found."),
        )
    }

    /// `GroupMetadataManager.group` (leave, describe, offset commit and delete).
    pub fn any_group_not_found(group_id: &str) -> Self {
        Self::new(
            ErrorCode::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} not found."),
        )
    }

    /// `castToStreamsGroup`: the id names a group of another type (here: an offsets-only group).
    pub fn not_a_streams_group(group_id: &str) -> Self {
        Self::new(
            ErrorCode::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} is not a streams group."),
        )
    }

    pub fn fenced(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::FENCED_MEMBER_EPOCH, message)
    }
}

pub type Result<T> = std::result::Result<T, CoordinatorError>;

impl CoordinatorError {
    /// The error a request gets when the runtime did not commit its outcome (a batch that does
    /// not fit the log, say): Kafka's coordinator answers a failed write so.
    pub fn not_committed(reason: &impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::UNKNOWN_SERVER_ERROR,
            format!("records did not apply: {reason}"),
        )
    }
}
