//! Writing appended bytes back to the disk behind the appends. Without it the kernel holds
//! every appended byte as a dirty page until its own writeback starts (at
//! `vm.dirty_background_ratio`) and, when appends outrun the disk, stops the appending thread
//! for up to a second at a time once `vm.dirty_ratio` is reached: a produce load that rolls
//! 1 GiB segments saw its slowest produce at 0.5-1 s. The log hands out each full
//! [`WRITEBACK_CHUNK`] of its active segment as a [`WritebackRange`]; the daemon asks the
//! kernel to write it and counts it until the write completes, and makes producers wait for
//! the disk when too much is in flight, a little at a time, before the kernel would make them
//! wait all at once (RocksDB's `bytes_per_sync` works the same way). Durability is unchanged:
//! only an fsync (`flush.messages`, `flush.ms`, a seal) makes bytes durable.

use std::fs::File;
use std::sync::Arc;

/// The bytes of a segment handed out for writeback at a time.
pub const WRITEBACK_CHUNK: u64 = 1 << 20;

/// Appended bytes of a segment file, to be written to the disk.
#[derive(Debug, Clone)]
pub struct WritebackRange {
    /// Kept open by the range, so a segment deleted meanwhile is still a valid target.
    pub file: Arc<File>,
    pub offset: u64,
    pub len: u64,
}
