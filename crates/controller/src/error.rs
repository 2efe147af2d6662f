//! The error a controller operation answers with: a Kafka error code and Kafka's message.
use kcoord_wire::ErrorCode;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.name())]
pub struct ControllerError {
    pub code: ErrorCode,
    pub message: String,
}

impl ControllerError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ControllerError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid_registration(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REGISTRATION, message)
    }

    pub(crate) fn stale_broker_epoch(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::STALE_BROKER_EPOCH, message)
    }

    /// Records the controller built did not apply: a bug, reported rather than panicking.
    pub fn internal(what: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::UNKNOWN_SERVER_ERROR,
            format!("records did not apply: {what}"),
        )
    }
}

pub type Result<T> = std::result::Result<T, ControllerError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_show_the_code_name_and_message() {
        let e =
            ControllerError::stale_broker_epoch("Expected broker epoch 3, but got broker epoch 2");
        assert_eq!(
            e.to_string(),
            "STALE_BROKER_EPOCH: Expected broker epoch 3, but got broker epoch 2"
        );
    }
}
