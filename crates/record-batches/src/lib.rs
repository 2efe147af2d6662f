//! Kafka's record batch format, magic 2 (`DefaultRecordBatch` / `DefaultRecord` in Apache
//! Kafka): the 61-byte batch header, the records inside, CRC-32C, and the four compression
//! codecs. Used by the storage (validation, compaction), the server and the client (building
//! batches to produce).
//!
//! * [`BatchHeader`]: the header fields and flags; [`split_batches`] / [`BatchSplitter`]:
//!   zero-copy splitting of concatenated batches, with typed errors for torn tails.
//! * [`compute_crc`], [`crc_is_valid`], [`verify_crc`], [`write_crc`]; the leader's in-place
//!   edits [`set_base_offset`], [`set_last_offset`], [`set_partition_leader_epoch`],
//!   [`set_max_timestamp`].
//! * [`RecordBatch`] / [`RecordIter`] / [`Record`]: decoding, with decompression bounded by a
//!   caller's limit; [`compress`] / [`decompress`] for the codecs alone.
//! * [`BatchBuilder`]: encoding records into a batch.
//! * [`ControlRecordType`], [`EndTxnMarker`]: control records; [`end_txn_marker_batch`]: a
//!   transaction marker batch.
//!
//! Nothing here panics on bytes from the network or a file.

mod builder;
mod compression;
mod control;
mod error;
mod header;
mod record;
mod split;
mod varint;

pub use builder::{BatchBuilder, BatchOptions};
pub use compression::{
    check_level, compress, decompress, GZIP_DEFAULT_LEVEL, LZ4_DEFAULT_LEVEL, ZSTD_DEFAULT_LEVEL,
};
pub use control::{end_txn_marker_batch, ControlRecordType, EndTxnMarker};
pub use error::RecordsError;
pub use header::{
    attributes, compute_crc, compute_crc_parts, crc_is_valid, decrement_sequence,
    increment_sequence, rewritten_attributes, set_base_offset, set_last_offset, set_max_timestamp,
    set_partition_leader_epoch, verify_crc, write_crc, BatchHeader, Compression, TimestampType,
    HEADER_LEN, LOG_OVERHEAD, MAGIC, MIN_BATCH_LENGTH, NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};
pub use record::{Record, RecordBatch, RecordHeader, RecordIter};
pub use split::{split_batches, BatchSplitter};
