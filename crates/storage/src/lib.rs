//! Partition logs for the data plane: batches validated as Kafka validates them
//! ([`validate`]), stored exactly as received once their offsets are assigned, in memory or in
//! segment files ([`Log`]), with idempotent and transactional producers' state
//! ([`producer_state`]), transaction markers and the aborted transaction index ([`txn`]),
//! retention and compaction. Knows nothing of sockets or of the coordinator.

pub mod compaction;
pub mod dirs;
pub mod entry;
pub mod error;
mod format;
pub mod log;
pub mod log_config;
pub mod producer_state;
mod scan;
pub mod seal;
mod segment;
pub mod txn;
pub mod validate;
pub mod writeback;

pub use error::{AppendError, ReadError, StorageError};
pub use log::{Appended, IncomingBatch, Log, ReadResult, TimestampOffset, TxnMarker};
pub use log_config::{LogConfig, TimestampType};
pub use producer_state::{ProducerSummary, VerificationGuard, VerificationState};
pub use segment::Chunk;
pub use txn::AbortedTxn;
