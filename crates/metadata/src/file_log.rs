//! A durable copy of a [`MetadataLog`]: its records appended to one file, and read back at
//! startup. The daemon's controller writes its log here when `metadata.log.dir` is set; nothing
//! in it is controller-specific, so a coordinator shard can keep its own log the same way.
//!
//! File layout (big-endian, as the Kafka wire is):
//!
//! ```text
//! header:  "KCMLOG01"                                  8 bytes, once
//! entry:   length   u32   bytes that follow this field (crc + body)
//!          crc      u32   CRC-32C (Castagnoli, as Kafka's record batches) of body
//!          body     offset i64, record_type i16, version i16,
//!                   key_len i32 (-1 = none), key bytes,
//!                   value_len i32 (-1 = tombstone), value bytes
//! ```
//!
//! Offsets are dense from 0, as in a [`MetadataLog`] of keyless records (the controller's, which
//! never compacts); each entry repeats its offset so a file spliced from two logs is caught. Loading tells two kinds of damage apart:
//!
//! - a **torn** last entry (the file ends inside it: a crash in the middle of an append) is
//!   dropped and the file is cut back to the last whole entry, since that append was never
//!   acknowledged;
//! - a **corrupt** entry (whole, but its checksum, layout or offset is wrong) is an error:
//!   silently dropping it and what follows would lose acknowledged changes.
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::{BufMut, Bytes, BytesMut};

use crate::log::{LogRecord, MetadataLog};

/// The file inside the log directory.
pub const FILE_NAME: &str = "metadata.log";
/// Identifies the format (and its version) at the start of the file.
const MAGIC: &[u8; 8] = b"KCMLOG01";
/// length + crc.
const ENTRY_HEADER: usize = 8;
/// offset + record_type + version + key_len + value_len.
const MIN_BODY: usize = 8 + 2 + 2 + 4 + 4;
/// Larger entries are refused when written and reported as corrupt when read: no metadata
/// record comes near it, and it keeps a damaged length from asking for gigabytes.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FileLogError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a kcoord metadata log (the file does not start with {magic:?})", magic = String::from_utf8_lossy(MAGIC))]
    BadHeader { path: String },
    #[error("{path}: the entry at byte {position} (record offset {offset}) is corrupt: {reason}")]
    Corrupt {
        path: String,
        position: u64,
        offset: u64,
        reason: String,
    },
    #[error("{path}: cannot append record offset {got}: the file's next offset is {expected}")]
    OutOfOrder {
        path: String,
        expected: u64,
        got: u64,
    },
    #[error("{path}: record offset {offset} is {size} bytes, more than the {max} an entry may hold", max = MAX_ENTRY_BYTES)]
    TooLarge {
        path: String,
        offset: u64,
        size: usize,
    },
}

/// What [`open`] found.
#[derive(Debug)]
pub struct LoadedLog {
    /// Every whole record of the file, in order.
    pub log: MetadataLog,
    /// Appends after those records.
    pub writer: LogWriter,
    /// Bytes of a torn last entry that were cut off (0 when the file ended cleanly).
    pub torn_bytes: u64,
}

/// Appends records to the file, each batch flushed to disk before it returns.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    /// Bytes of whole entries (and the header) in the file: where the next entry goes.
    len: u64,
    next_offset: u64,
}

/// Opens (creating it and the directory if needed) the log file in `dir` and reads it back.
pub fn open(dir: &Path) -> Result<LoadedLog, FileLogError> {
    let path = dir.join(FILE_NAME);
    let io = |source| FileLogError::Io {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;

    let shown = path.display().to_string();
    let parsed = parse(&bytes, &shown)?;
    let mut writer = LogWriter {
        file,
        path,
        len: parsed.valid_len,
        next_offset: parsed.log.next_offset(),
    };
    if parsed.needs_header || parsed.valid_len < bytes.len() as u64 {
        writer.reset_to(parsed.valid_len, parsed.needs_header)?;
    }
    Ok(LoadedLog {
        log: parsed.log,
        writer,
        torn_bytes: parsed.torn_bytes,
    })
}

#[derive(Debug)]
struct Parsed {
    log: MetadataLog,
    /// Header plus whole entries.
    valid_len: u64,
    torn_bytes: u64,
    /// The file is empty or holds only part of the header: write it (again).
    needs_header: bool,
}

/// Reads a whole file image; see the module docs for torn versus corrupt.
fn parse(bytes: &[u8], path: &str) -> Result<Parsed, FileLogError> {
    if bytes.len() < MAGIC.len() {
        // A crash while the header itself was written leaves a prefix of it.
        if MAGIC.starts_with(bytes) {
            return Ok(Parsed {
                log: MetadataLog::new(),
                valid_len: 0,
                torn_bytes: bytes.len() as u64,
                needs_header: true,
            });
        }
        return Err(FileLogError::BadHeader {
            path: path.to_string(),
        });
    }
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err(FileLogError::BadHeader {
            path: path.to_string(),
        });
    }
    let mut log = MetadataLog::new();
    let mut position = MAGIC.len();
    loop {
        let rest = &bytes[position..];
        if rest.is_empty() {
            return Ok(Parsed {
                log,
                valid_len: position as u64,
                torn_bytes: 0,
                needs_header: false,
            });
        }
        let offset = log.next_offset();
        let corrupt = |reason: String| FileLogError::Corrupt {
            path: path.to_string(),
            position: position as u64,
            offset,
            reason,
        };
        let torn = Parsed {
            log: MetadataLog::new(),
            valid_len: position as u64,
            torn_bytes: rest.len() as u64,
            needs_header: false,
        };
        if rest.len() < ENTRY_HEADER {
            return Ok(Parsed { log, ..torn });
        }
        let length = be_u32(&rest[0..4]) as usize;
        if !(4 + MIN_BODY..=MAX_ENTRY_BYTES).contains(&length) {
            return Err(corrupt(format!("impossible entry length {length}")));
        }
        if rest.len() < 4 + length {
            return Ok(Parsed { log, ..torn });
        }
        let crc = be_u32(&rest[4..8]);
        let body = &rest[ENTRY_HEADER..4 + length];
        let actual = crc32c::crc32c(body);
        if actual != crc {
            return Err(corrupt(format!(
                "checksum {actual:#010x} does not match the stored {crc:#010x}"
            )));
        }
        let record = decode_body(body, offset).map_err(corrupt)?;
        // No compaction while loading: the file does not mark batch boundaries, and a
        // compaction may only run at one (the next append does it when due).
        log.push(record.record_type, record.version, record.key, record.value);
        position += 4 + length;
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A body whose checksum matched; its layout is still checked, never trusted.
fn decode_body(body: &[u8], expected_offset: u64) -> Result<LogRecord, String> {
    let mut cursor = Cursor { bytes: body, at: 0 };
    let offset = cursor.i64()?;
    if offset != expected_offset as i64 {
        return Err(format!("it says it is record offset {offset}"));
    }
    let record_type = cursor.i16()?;
    let version = cursor.i16()?;
    let key = cursor.optional_bytes()?;
    let value = cursor.optional_bytes()?;
    if cursor.at != body.len() {
        return Err(format!("{} bytes after the value", body.len() - cursor.at));
    }
    Ok(LogRecord {
        offset: expected_offset,
        record_type,
        version,
        key,
        value,
    })
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or("the body ends early")?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn i16(&mut self) -> Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn optional_bytes(&mut self) -> Result<Option<Bytes>, String> {
        match self.i32()? {
            -1 => Ok(None),
            n if n < 0 => Err(format!("negative length {n}")),
            n => Ok(Some(Bytes::copy_from_slice(self.take(n as usize)?))),
        }
    }
}

fn encode_entry(record: &LogRecord, out: &mut BytesMut) -> Result<(), usize> {
    let mut body = BytesMut::with_capacity(
        MIN_BODY
            + record.key.as_ref().map_or(0, Bytes::len)
            + record.value.as_ref().map_or(0, Bytes::len),
    );
    body.put_i64(record.offset as i64);
    body.put_i16(record.record_type);
    body.put_i16(record.version);
    for part in [&record.key, &record.value] {
        match part {
            None => body.put_i32(-1),
            Some(bytes) => {
                let len = i32::try_from(bytes.len()).map_err(|_| bytes.len())?;
                body.put_i32(len);
                body.put_slice(bytes);
            }
        }
    }
    let length = 4 + body.len();
    if length > MAX_ENTRY_BYTES {
        return Err(length);
    }
    out.put_u32(length as u32);
    out.put_u32(crc32c::crc32c(&body));
    out.put_slice(&body);
    Ok(())
}

impl LogWriter {
    /// The offset the next appended record must have.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> FileLogError {
        FileLogError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Cuts the file back to `len` bytes (rewriting the header when asked) and syncs it.
    fn reset_to(&mut self, len: u64, write_header: bool) -> Result<(), FileLogError> {
        self.file.set_len(len).map_err(|e| self.io(e))?;
        self.file
            .seek(SeekFrom::Start(len))
            .map_err(|e| self.io(e))?;
        if write_header {
            self.file.write_all(MAGIC).map_err(|e| self.io(e))?;
        }
        self.file.sync_all().map_err(|e| self.io(e))?;
        self.len = if write_header {
            MAGIC.len() as u64
        } else {
            len
        };
        Ok(())
    }

    /// Appends `records` (their offsets must continue the file's) as one write, then syncs.
    /// On failure the file is cut back to where it was, so a later call can try again.
    pub fn append(&mut self, records: &[LogRecord]) -> Result<(), FileLogError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut out = BytesMut::new();
        let mut expected = self.next_offset;
        for record in records {
            if record.offset != expected {
                return Err(FileLogError::OutOfOrder {
                    path: self.path.display().to_string(),
                    expected,
                    got: record.offset,
                });
            }
            encode_entry(record, &mut out).map_err(|size| FileLogError::TooLarge {
                path: self.path.display().to_string(),
                offset: record.offset,
                size,
            })?;
            expected += 1;
        }
        let written = self
            .file
            .write_all(&out)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Best effort: the torn tail would be dropped at the next load anyway.
            let _ = self.file.set_len(self.len);
            let _ = self.file.seek(SeekFrom::Start(self.len));
            return Err(self.io(e));
        }
        self.len += out.len() as u64;
        self.next_offset = expected;
        Ok(())
    }

    /// Appends every record of `log` the file does not have yet (those from
    /// [`LogWriter::next_offset`] on). Returns how many were written.
    ///
    /// The file holds dense offsets, so the records it lacks must all still be in `log`: true of
    /// a log of keyless records, which never compacts. If a compaction dropped one of them, the
    /// gap is reported as [`FileLogError::OutOfOrder`] and nothing is written.
    pub fn sync_from(&mut self, log: &MetadataLog) -> Result<usize, FileLogError> {
        if log.next_offset() < self.next_offset {
            return Err(FileLogError::OutOfOrder {
                path: self.path.display().to_string(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(offset: u64, record_type: i16, value: &'static [u8]) -> LogRecord {
        LogRecord {
            offset,
            record_type,
            version: 1,
            key: None,
            value: Some(Bytes::from_static(value)),
        }
    }

    fn sample() -> MetadataLog {
        let mut log = MetadataLog::new();
        log.append([(2, 0, None, Some(Bytes::from_static(b"topic")))]);
        log.append([
            (3, 1, None, Some(Bytes::from_static(b"partition"))),
            (17, 0, Some(Bytes::from_static(b"k")), None),
        ]);
        log
    }

    fn written(dir: &Path) -> Vec<u8> {
        let mut loaded = open(dir).unwrap();
        assert_eq!(loaded.writer.sync_from(&sample()).unwrap(), 3);
        std::fs::read(dir.join(FILE_NAME)).unwrap()
    }

    #[test]
    fn records_written_are_read_back_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        written(dir.path());
        let loaded = open(dir.path()).unwrap();
        assert_eq!(loaded.log.records(), sample().records());
        assert_eq!((loaded.writer.next_offset(), loaded.torn_bytes), (3, 0));
    }

    #[test]
    fn a_new_directory_gets_an_empty_log_with_a_header() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        let loaded = open(&nested).unwrap();
        assert!(loaded.log.is_empty());
        assert_eq!(std::fs::read(nested.join(FILE_NAME)).unwrap(), MAGIC);
    }

    #[test]
    fn appends_continue_after_a_reload_and_must_be_in_order() {
        let dir = tempfile::tempdir().unwrap();
        written(dir.path());
        let mut loaded = open(dir.path()).unwrap();
        let err = loaded.writer.append(&[record(5, 2, b"x")]).unwrap_err();
        assert!(
            matches!(
                err,
                FileLogError::OutOfOrder {
                    expected: 3,
                    got: 5,
                    ..
                }
            ),
            "{err}"
        );
        loaded.writer.append(&[record(3, 2, b"x")]).unwrap();
        // Nothing new to write.
        let mut log = loaded.log.clone();
        log.append([(2, 1, None, Some(Bytes::from_static(b"x")))]);
        assert_eq!(loaded.writer.sync_from(&log).unwrap(), 0);
        assert_eq!(open(dir.path()).unwrap().log.records(), log.records());
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = written(dir.path());
        let path = dir.path().join(FILE_NAME);
        // Every cut inside the last entry (header or body) loses only that entry.
        let last_entry_len = ENTRY_HEADER + MIN_BODY + 1;
        for cut in 1..last_entry_len {
            std::fs::write(&path, &bytes[..bytes.len() - cut]).unwrap();
            let mut loaded = open(dir.path()).unwrap();
            assert_eq!(loaded.log.records(), &sample().records()[..2], "cut {cut}");
            assert_eq!(
                loaded.torn_bytes,
                (last_entry_len - cut) as u64,
                "cut {cut}"
            );
            assert_eq!(
                std::fs::metadata(&path).unwrap().len() as usize,
                bytes.len() - last_entry_len,
                "the file is cut back"
            );
            // The next append lands where the torn one was.
            loaded.writer.sync_from(&sample()).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), bytes);
        }
    }

    #[test]
    fn a_torn_header_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), &MAGIC[..3]).unwrap();
        let loaded = open(dir.path()).unwrap();
        assert!(loaded.log.is_empty());
        assert_eq!(std::fs::read(dir.path().join(FILE_NAME)).unwrap(), MAGIC);
    }

    #[test]
    fn a_corrupt_record_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = written(dir.path());
        let path = dir.path().join(FILE_NAME);
        // Flip one byte of the first entry's body: its checksum no longer matches.
        let mut flipped = bytes.clone();
        flipped[MAGIC.len() + ENTRY_HEADER + 9] ^= 0x40;
        std::fs::write(&path, &flipped).unwrap();
        let err = open(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                FileLogError::Corrupt {
                    position: 8,
                    offset: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("checksum"), "{err}");
        // The file is left alone for a look.
        assert_eq!(std::fs::read(&path).unwrap(), flipped);

        // A damaged length is caught too, even in the last entry.
        let mut bad_length = bytes.clone();
        bad_length[MAGIC.len()..MAGIC.len() + 4].copy_from_slice(&2u32.to_be_bytes());
        std::fs::write(&path, &bad_length).unwrap();
        assert!(matches!(
            open(dir.path()),
            Err(FileLogError::Corrupt { .. })
        ));

        // A file that is not a log at all.
        std::fs::write(&path, b"hello, world").unwrap();
        assert!(matches!(
            open(dir.path()),
            Err(FileLogError::BadHeader { .. })
        ));
    }

    #[test]
    fn an_entry_with_a_valid_checksum_but_the_wrong_offset_is_corrupt() {
        let mut out = BytesMut::from(&MAGIC[..]);
        encode_entry(&record(0, 2, b"a"), &mut out).unwrap();
        encode_entry(&record(7, 2, b"b"), &mut out).unwrap();
        let err = parse(&out, "x").unwrap_err();
        assert!(
            matches!(err, FileLogError::Corrupt { offset: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("record offset 7"), "{err}");
    }

    #[test]
    fn bodies_are_checked_even_when_the_checksum_matches() {
        // A body whose key length runs past its end.
        let mut body = BytesMut::new();
        body.put_i64(0);
        body.put_i16(2);
        body.put_i16(0);
        body.put_i32(100);
        body.put_i32(-1);
        let mut out = BytesMut::from(&MAGIC[..]);
        out.put_u32(4 + body.len() as u32);
        out.put_u32(crc32c::crc32c(&body));
        out.put_slice(&body);
        assert!(matches!(
            parse(&out, "x"),
            Err(FileLogError::Corrupt { .. })
        ));
    }
}
