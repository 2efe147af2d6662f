//! The one error type of the crate.

use crate::Compression;

/// What can go wrong reading, checking, decompressing or building batches.
///
/// Every variant is reachable from untrusted bytes except [`RecordsError::InvalidArgument`] and
/// [`RecordsError::Compress`], which report a caller's mistake or a codec failure while
/// building.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordsError {
    /// Fewer bytes than a batch header (61) where one was expected.
    #[error("record batch header needs {needed} bytes but only {available} are present")]
    ShortHeader { needed: usize, available: usize },

    /// The bytes from `position` on are the start of a batch that is not all there: fewer than
    /// `needed` bytes remain. Everything before `position` is whole batches, so storage
    /// recovery can cut the tail there.
    #[error("record batch at byte {position} is truncated: it needs {needed} bytes but only {available} remain")]
    Truncated {
        position: usize,
        needed: usize,
        available: usize,
    },

    /// The batch length field at `position` is below the 49 bytes a magic 2 batch needs after
    /// the length field itself.
    #[error("record batch at byte {position} has invalid length {length} (a batch needs at least {min})")]
    InvalidBatchLength {
        position: usize,
        length: i32,
        min: i32,
    },

    /// Only magic 2 batches are supported.
    #[error("record batch at byte {position} has magic {magic}; only magic 2 is supported")]
    UnsupportedMagic { position: usize, magic: i8 },

    /// Compression ids 5, 6 and 7 are not defined.
    #[error("Unknown compression type id: {0}")]
    UnknownCompression(u8),

    /// The stored CRC is not the CRC-32C of the bytes from the attributes to the end.
    #[error("Record is corrupt (stored crc = {stored}, computed crc = {computed})")]
    CrcMismatch { stored: u32, computed: u32 },

    /// The batch's record count is negative.
    #[error("Found invalid record count {0} in magic v2 batch")]
    InvalidRecordCount(i32),

    /// A record inside the batch is malformed; `index` counts from 0. `reason` uses Kafka's
    /// wording where Kafka has one.
    #[error("record {index}: {reason}")]
    MalformedRecord { index: usize, reason: String },

    /// The batch declares more records than its bytes hold.
    #[error("Incorrect declared batch size, premature EOF reached (record {index} of {count})")]
    MissingRecords { index: usize, count: i32 },

    /// Bytes are left after the declared number of records.
    #[error("Incorrect declared batch size, records still remaining in file")]
    TrailingBytes,

    /// The compressed payload could not be decompressed.
    #[error("failed to decompress {codec} records: {reason}")]
    Decompress { codec: Compression, reason: String },

    /// Decompression would produce more than the caller's limit.
    #[error("{codec} records decompress to more than the limit of {limit} bytes")]
    DecompressedTooLarge { codec: Compression, limit: usize },

    /// Compression failed while building a batch.
    #[error("failed to compress records with {codec}: {reason}")]
    Compress { codec: Compression, reason: String },

    /// A builder or editor was given something Kafka's builder refuses.
    #[error("{0}")]
    InvalidArgument(String),
}
