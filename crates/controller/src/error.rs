//! The error a controller operation answers with: a Kafka error code and Kafka's message.
use kcoord_wire::ErrorCode;
use uuid::Uuid;

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
    pub(crate) fn internal(what: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::UNKNOWN_SERVER_ERROR,
            format!("records did not apply: {what}"),
        )
    }
}

pub type Result<T> = std::result::Result<T, ControllerError>;

/// How Kafka prints a `Uuid` in messages: base64url of the 16 bytes, without padding.
pub fn kafka_uuid(id: &Uuid) -> String {
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
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_print_as_kafka_prints_them() {
        assert_eq!(kafka_uuid(&Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(kafka_uuid(&Uuid::from_u128(1)), "AAAAAAAAAAAAAAAAAAAAAQ");
        // The dev cluster id of config/server.properties is the base64url of "kcoord-dev-clust".
        assert_eq!(
            kafka_uuid(&Uuid::from_bytes(*b"kcoord-dev-clust")),
            "a2Nvb3JkLWRldi1jbHVzdA"
        );
    }

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
