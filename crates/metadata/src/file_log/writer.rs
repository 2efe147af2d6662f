//! Writing: appends after the file's entries, syncs, and whole rewrites.

use std::os::unix::fs::FileExt;
use std::path::Path;

use bytes::BytesMut;

use super::encode::encode_entry;
use super::{install, io_error, sync_dir, FileLogError, LogWriter};
use crate::log::{LogRecord, MetadataLog};

impl LogWriter {
    /// The offset the next written record must have at least.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// The next offset as of the last successful [`LogWriter::sync`]: records below it are on
    /// disk.
    pub fn synced_next_offset(&self) -> u64 {
        self.synced_next_offset
    }

    /// Bytes of the file that hold the header and whole entries, synced or not.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// Bytes of the file known to be on disk (as of the last successful sync).
    pub fn synced_len_bytes(&self) -> u64 {
        self.synced_len
    }

    pub fn path(&self) -> &Path {
        &self.paths.log
    }

    /// The log as the file holds it (every whole entry written, synced or not), for a log whose
    /// records are kept nowhere else in memory (a coordinator shard's, when it is compacted).
    /// A torn or corrupt entry inside what this writer wrote is an error: it can only come from
    /// outside the daemon.
    pub fn read_back(&self) -> Result<MetadataLog, FileLogError> {
        let Ok(len) = usize::try_from(self.len) else {
            return Err(self.io(std::io::Error::other("larger than memory can address")));
        };
        let mut bytes = vec![0; len];
        self.file
            .read_exact_at(&mut bytes, 0)
            .map_err(|e| self.io(e))?;
        let shown = self.paths.log.display().to_string();
        let mut parsed = super::read::parse(&bytes, &shown)?;
        if let Some(cut) = parsed.cut {
            return Err(FileLogError::Corrupt {
                path: shown,
                position: parsed.valid_len,
                after: super::AfterOffset::First,
                reason: format!("the file changed under its writer: {cut}"),
            });
        }
        // The header's next offset is the rewrite's; what was appended since moved it on.
        parsed
            .log
            .advance_next_offset(self.next_offset)
            .map_err(|e| FileLogError::OutOfOrder {
                path: shown,
                expected: e.next_offset,
                got: e.offset,
            })?;
        Ok(parsed.log)
    }

    fn io(&self, source: std::io::Error) -> FileLogError {
        io_error(&self.paths.log)(source)
    }

    /// Cuts the file back to `len` after a failed write or sync, or remembers to do it before
    /// the next write (bytes left after `len` would be read back as entries).
    fn cut_back(&mut self, len: u64) {
        self.len = len;
        self.tail_to_cut = self.file.set_len(len).is_err();
    }

    /// Encodes `batch`, one batch (a reader keeps it whole or not at all: all that one handler
    /// decided), and writes it after the file's entries, without flushing it: a
    /// [`LogWriter::sync`] does that, for any number of writes. Its offsets must increase and
    /// start at [`LogWriter::next_offset`] or later (gaps are fine: a compacted log has them).
    /// Nothing is written when a record is out of order or too large. On an I/O error the file
    /// is cut back to where it was, so the same records can be written again.
    pub fn write(&mut self, batch: &[LogRecord]) -> Result<(), FileLogError> {
        self.write_batches([batch])
    }

    /// [`LogWriter::write`] of several batches in a row, in one write: each is read back whole
    /// or not at all, independently of the others (the batches of several requests that a
    /// group commit writes and syncs together). Empty batches are skipped.
    pub fn write_batches<'a>(
        &mut self,
        batches: impl IntoIterator<Item = &'a [LogRecord]>,
    ) -> Result<(), FileLogError> {
        let (out, next_offset) = self.encode(batches)?;
        if out.is_empty() {
            return Ok(());
        }
        if self.tail_to_cut {
            self.file.set_len(self.len).map_err(|e| self.io(e))?;
            self.tail_to_cut = false;
        }
        if let Err(e) = self.file.write_all_at(&out, self.len) {
            self.cut_back(self.len);
            return Err(self.io(e));
        }
        self.len += out.len() as u64;
        self.next_offset = next_offset;
        Ok(())
    }

    /// The entries of `batches` and the next offset after them, or why they cannot be written.
    fn encode<'a>(
        &self,
        batches: impl IntoIterator<Item = &'a [LogRecord]>,
    ) -> Result<(BytesMut, u64), FileLogError> {
        let mut out = BytesMut::new();
        let mut expected = self.next_offset;
        for batch in batches {
            // Every entry of the batch but its last has the "more" bit.
            let last = batch.len().saturating_sub(1);
            for (i, record) in batch.iter().enumerate() {
                if record.offset < expected {
                    return Err(FileLogError::OutOfOrder {
                        path: self.paths.log.display().to_string(),
                        expected,
                        got: record.offset,
                    });
                }
                encode_entry(record, i < last, &mut out).map_err(|source| {
                    FileLogError::TooLarge {
                        path: self.paths.log.display().to_string(),
                        offset: record.offset,
                        source,
                    }
                })?;
                expected = record.offset + 1;
            }
        }
        Ok((out, expected))
    }

    /// Flushes what was written since the last sync (fdatasync). Only once it returns `Ok` are
    /// those records durable. On an error every write since the last successful sync is cut
    /// off (their durability is unknown; Linux may already have dropped the failed pages), and
    /// [`LogWriter::next_offset`] goes back to [`LogWriter::synced_next_offset`]: the caller
    /// writes them again, or fails the batches they came from.
    pub fn sync(&mut self) -> Result<(), FileLogError> {
        if self.dir_unsynced {
            sync_dir(&self.paths.dir)?;
            self.dir_unsynced = false;
        }
        if self.len == self.synced_len {
            return Ok(());
        }
        if let Err(e) = self.file.sync_data() {
            self.cut_back(self.synced_len);
            self.next_offset = self.synced_next_offset;
            return Err(self.io(e));
        }
        self.synced_len = self.len;
        self.synced_next_offset = self.next_offset;
        Ok(())
    }

    /// [`LogWriter::write`] of one batch, then [`LogWriter::sync`].
    pub fn append(&mut self, batch: &[LogRecord]) -> Result<(), FileLogError> {
        self.write(batch)?;
        self.sync()
    }

    /// Appends and syncs every record of `log` the file does not have yet (those from
    /// [`LogWriter::next_offset`] on), as one batch. Returns how many were written.
    ///
    /// Only for a log whose records are written before a compaction can drop them (a log of
    /// keyless records, the controller's, never compacts): a record compacted away in memory
    /// before it was written is missing from the file. A compacting log writes each batch's
    /// records with [`LogWriter::write`] instead.
    pub fn sync_from(&mut self, log: &MetadataLog) -> Result<usize, FileLogError> {
        if log.next_offset() < self.next_offset {
            return Err(FileLogError::OutOfOrder {
                path: self.paths.log.display().to_string(),
                expected: self.next_offset,
                got: log.next_offset(),
            });
        }
        let tail: Vec<LogRecord> = log
            .records_from(self.next_offset)
            .map(|r| r.to_record())
            .collect();
        self.append(&tail)?;
        Ok(tail.len())
    }

    /// Replaces the file's content with `log`'s records and next offset (a shard's compacted
    /// log, or a controller snapshot), then goes on appending after them. The new file is
    /// written beside the old one, flushed, renamed over it and the directory flushed, so a
    /// crash at any point leaves the old file or the new one, whole. Records written but not
    /// synced before are dropped with the old file unless `log` holds them.
    ///
    /// On an error before the rename the old file stays and the writer is unchanged. If only
    /// the directory flush fails, the writer goes on with the new file and the next
    /// [`LogWriter::sync`] flushes the directory again before it reports success.
    pub fn rewrite(&mut self, log: &MetadataLog) -> Result<(), FileLogError> {
        let (file, len) = install(&self.paths, log)?;
        self.file = file;
        self.len = len;
        self.synced_len = len;
        self.next_offset = log.next_offset();
        self.synced_next_offset = log.next_offset();
        self.tail_to_cut = false;
        self.dir_unsynced = true;
        sync_dir(&self.paths.dir)?;
        self.dir_unsynced = false;
        Ok(())
    }
}
