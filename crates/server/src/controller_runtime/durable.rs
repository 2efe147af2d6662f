//! Where the controller runtime makes a batch durable before it applies it: the file log of
//! `metadata.log.dir` ([`LogWriter`]), or, in tests, a sink that can be made to fail.

use std::path::Path;

use kcoord_metadata::file_log::{FileLogError, LogWriter, MAX_ENTRY_BYTES};
use kcoord_metadata::{LogRecord, MetadataLog};

/// The durable copy of the controller's log.
pub trait DurableLog: Send + std::fmt::Debug {
    /// Appends `records` (their offsets continue the log's) and syncs them, all or nothing:
    /// on `Err` nothing of the batch counts as written.
    fn append(&mut self, records: &[LogRecord]) -> Result<(), FileLogError>;

    /// Replaces the whole log by `log` (a snapshot), atomically: on `Err` the old log stays,
    /// and appends go on after it.
    fn rewrite(&mut self, log: &MetadataLog) -> Result<(), FileLogError>;

    /// Where the log is, for messages.
    fn path(&self) -> &Path;
}

impl DurableLog for LogWriter {
    fn append(&mut self, records: &[LogRecord]) -> Result<(), FileLogError> {
        LogWriter::append(self, records)
    }

    fn rewrite(&mut self, log: &MetadataLog) -> Result<(), FileLogError> {
        LogWriter::rewrite(self, log)
    }

    fn path(&self) -> &Path {
        LogWriter::path(self)
    }
}

/// The metadata log's file, its appends and fsyncs counted (`kcoord_log_*{log="controller"}`).
#[derive(Debug)]
pub struct MeteredLog {
    pub writer: LogWriter,
    pub metrics: crate::metrics::LogMetrics,
}

impl DurableLog for MeteredLog {
    fn append(&mut self, records: &[LogRecord]) -> Result<(), FileLogError> {
        let before = self.writer.len_bytes();
        self.writer.write(records)?;
        self.metrics.appended(
            records.len(),
            self.writer.len_bytes().saturating_sub(before),
        );
        let started = std::time::Instant::now();
        let synced = self.writer.sync();
        self.metrics.synced(started.elapsed());
        synced
    }

    fn rewrite(&mut self, log: &MetadataLog) -> Result<(), FileLogError> {
        self.writer.rewrite(log)
    }

    fn path(&self) -> &Path {
        self.writer.path()
    }
}

/// The first record of a batch that is too large for one entry of the log, as (offset, bytes).
/// Checked whether or not a durable log is configured, so that a batch the file would refuse
/// is never applied in memory either.
pub(crate) fn oversized(records: &[LogRecord]) -> Option<(u64, usize)> {
    // Length + crc + offset + type + version + key and value lengths, then the bytes.
    const OVERHEAD: usize = 4 + 4 + 8 + 2 + 2 + 4 + 4;
    records.iter().find_map(|r| {
        let size = OVERHEAD
            + r.key.as_ref().map_or(0, |k| k.len())
            + r.value.as_ref().map_or(0, |v| v.len());
        (size > MAX_ENTRY_BYTES).then_some((r.offset, size))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn a_record_larger_than_an_entry_is_found_before_anything_is_written() {
        let record = |offset, len: usize| LogRecord {
            offset,
            record_type: 2,
            version: 0,
            key: None,
            value: Some(Bytes::from(vec![0u8; len])),
        };
        assert_eq!(oversized(&[record(5, 10)]), None);
        let big = MAX_ENTRY_BYTES;
        assert_eq!(
            oversized(&[record(5, 10), record(6, big)]),
            Some((6, big + 28))
        );
    }
}
