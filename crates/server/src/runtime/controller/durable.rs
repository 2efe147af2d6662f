//! Where the controller runtime makes a batch durable before it applies it: the file log of
//! `metadata.log.dir` ([`LogWriter`]), or, in tests, a sink that can be made to fail.

use std::path::Path;

use kcoord_metadata::file_log::{FileLogError, LogWriter};
use kcoord_metadata::{LogRecord, MetadataLog};

/// The durable copy of the controller's log.
pub trait DurableLog: Send + std::fmt::Debug {
    /// Appends `records`, one batch (their offsets continue the log's), and syncs them, all or
    /// nothing: on `Err` nothing of the batch counts as written, and after a crash in the
    /// middle the file log reads the batch back whole or not at all.
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

/// The controller's log as its runtime sees it: the durable file when one is configured
/// (written and synced before the batch is replayed), and the bytes appended since they were
/// last counted (how the snapshot schedule sees the log grow).
#[derive(Debug, Default)]
pub struct ControllerLog {
    pub durable: Option<Box<dyn DurableLog>>,
    appended_bytes: u64,
}

impl ControllerLog {
    pub fn new(durable: Option<Box<dyn DurableLog>>) -> ControllerLog {
        ControllerLog {
            durable,
            appended_bytes: 0,
        }
    }

    /// The bytes appended since the last call.
    pub fn take_appended_bytes(&mut self) -> u64 {
        std::mem::take(&mut self.appended_bytes)
    }
}

impl kcoord_runtime::Log for ControllerLog {
    type Receipt = ();
    type Error = FileLogError;

    fn append(&mut self, entries: &[LogRecord], _: u64) -> Result<(), FileLogError> {
        if entries.is_empty() {
            return Ok(());
        }
        if let Some(durable) = self.durable.as_mut() {
            durable.append(entries)?;
        }
        self.appended_bytes = self
            .appended_bytes
            .saturating_add(super::snapshots::records_bytes(entries));
        Ok(())
    }
}
