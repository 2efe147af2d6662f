//! Why a partition's records were refused: Kafka's error codes, its per-record errors and the
//! partition's answer.

/// Kafka's error codes for the answers of this module.
pub mod codes {
    pub const UNKNOWN_SERVER_ERROR: i16 = -1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    pub const RECORD_LIST_TOO_LARGE: i16 = 18;
    pub const INVALID_TIMESTAMP: i16 = 32;
    pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
    pub const INVALID_RECORD: i16 = 87;
}

/// Kafka's `ProduceResponse.RecordError`: the index of the failing record in the batch and its
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub message: Option<String>,
}

impl std::fmt::Display for RecordError {
    /// As Kafka's `RecordError.toString`, which its top-level message embeds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.message {
            Some(m) => write!(
                f,
                "RecordError(batchIndex={}, message='{}')",
                self.batch_index, m
            ),
            None => write!(
                f,
                "RecordError(batchIndex={}, message=null)",
                self.batch_index
            ),
        }
    }
}

/// Why a partition's records were refused. [`ValidationError::error_code`],
/// [`ValidationError::message`] and [`ValidationError::record_errors`] are the partition's
/// ErrorCode, ErrorMessage and RecordErrors in Kafka's Produce response; `Display` is Kafka's
/// exception message, for logs, also when Kafka does not send it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// INVALID_RECORD (87), message not sent.
    #[error("{0}")]
    InvalidRecord(String),
    /// CORRUPT_MESSAGE (2), message not sent.
    #[error("{0}")]
    CorruptMessage(String),
    /// MESSAGE_TOO_LARGE (10), message not sent.
    #[error("{0}")]
    MessageTooLarge(String),
    /// RECORD_LIST_TOO_LARGE (18), message not sent.
    #[error("{0}")]
    RecordListTooLarge(String),
    /// UNSUPPORTED_COMPRESSION_TYPE (76), message not sent.
    #[error("{0}")]
    UnsupportedCompressionType(String),
    /// UNKNOWN_SERVER_ERROR (-1): where Kafka throws an exception that is not an API error.
    /// With `whole_request`, Kafka fails every partition of the request with it.
    #[error("{message}")]
    UnknownServerError {
        message: String,
        whole_request: bool,
    },
    /// INVALID_RECORD (87) from per-record checks: message and record errors sent.
    #[error("{message}")]
    InvalidRecords {
        message: String,
        record_errors: Vec<RecordError>,
    },
    /// INVALID_TIMESTAMP (32) from per-record checks: message and record errors sent.
    #[error("{message}")]
    InvalidTimestamp {
        message: String,
        record_errors: Vec<RecordError>,
    },
}

impl ValidationError {
    /// Kafka's numeric error code.
    pub fn error_code(&self) -> i16 {
        match self {
            ValidationError::InvalidRecord(_) | ValidationError::InvalidRecords { .. } => {
                codes::INVALID_RECORD
            }
            ValidationError::CorruptMessage(_) => codes::CORRUPT_MESSAGE,
            ValidationError::MessageTooLarge(_) => codes::MESSAGE_TOO_LARGE,
            ValidationError::RecordListTooLarge(_) => codes::RECORD_LIST_TOO_LARGE,
            ValidationError::UnsupportedCompressionType(_) => codes::UNSUPPORTED_COMPRESSION_TYPE,
            ValidationError::UnknownServerError { .. } => codes::UNKNOWN_SERVER_ERROR,
            ValidationError::InvalidTimestamp { .. } => codes::INVALID_TIMESTAMP,
        }
    }

    /// The partition's ErrorMessage as Kafka sends it: only per-record failures carry one.
    pub fn message(&self) -> Option<String> {
        match self {
            ValidationError::InvalidRecords { message, .. }
            | ValidationError::InvalidTimestamp { message, .. } => Some(message.clone()),
            _ => None,
        }
    }

    /// The partition's RecordErrors: `(batch_index, message)`.
    pub fn record_errors(&self) -> Vec<(i32, Option<String>)> {
        match self {
            ValidationError::InvalidRecords { record_errors, .. }
            | ValidationError::InvalidTimestamp { record_errors, .. } => record_errors
                .iter()
                .map(|e| (e.batch_index, e.message.clone()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Kafka answers every partition of the request with this error, not just this one (its
    /// ErrorMessage then null, as `ApiError.fromThrowable` gives none for UNKNOWN_SERVER_ERROR).
    pub fn fails_whole_request(&self) -> bool {
        matches!(
            self,
            ValidationError::UnknownServerError {
                whole_request: true,
                ..
            }
        )
    }
}
