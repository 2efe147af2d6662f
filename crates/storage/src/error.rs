//! Storage errors, each with the Kafka error code a client is answered with.

use std::path::Path;

use crate::producer_state::ProducerError;

/// Kafka's `KAFKA_STORAGE_ERROR`.
pub const KAFKA_STORAGE_ERROR: i16 = 56;
/// Kafka's `OFFSET_OUT_OF_RANGE`.
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
/// Kafka's `CORRUPT_MESSAGE`.
pub const CORRUPT_MESSAGE: i16 = 2;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("log {log}: a stored batch does not decode: {reason}")]
    Corrupt { log: String, reason: String },
}

impl StorageError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> StorageError {
        StorageError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub fn error_code(&self) -> i16 {
        KAFKA_STORAGE_ERROR
    }
}

/// Why an append did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error(transparent)]
    Producer(#[from] ProducerError),
    /// The log could not take the write (full disk, I/O error); nothing was appended.
    #[error("the log could not be written: {0}")]
    Storage(String),
}

impl AppendError {
    pub fn error_code(&self) -> i16 {
        match self {
            AppendError::Producer(e) => e.error_code(),
            AppendError::Storage(_) => KAFKA_STORAGE_ERROR,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("offset {offset} is outside the log ({log_start_offset} to {log_end_offset})")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
}

impl ReadError {
    pub fn error_code(&self) -> i16 {
        OFFSET_OUT_OF_RANGE
    }
}
