//! Reading a file image back: the header, then entry after entry until the end or the first
//! position where no valid entry starts (what then happens to the rest is `tail.rs`'s call).

use bytes::Bytes;

use super::tail::tail_cut;
use super::{
    be_8, be_u32, be_u64, is_zero, AfterOffset, CutReason, FileLogError, Format, TailCut,
    ENTRY_HEADER, HEADER, MAGIC_V1, MAGIC_V2, MAGIC_V3, MAX_ENTRY_BYTES, MIN_BODY,
};
use crate::log::{LogRecord, MetadataLog};

#[derive(Debug)]
pub(super) struct Parsed {
    pub(super) log: MetadataLog,
    /// `None`: no usable header (an empty file or a torn one): a new file is written.
    pub(super) format: Option<Format>,
    /// Header plus whole entries.
    pub(super) valid_len: u64,
    pub(super) cut: Option<TailCut>,
}

impl Parsed {
    /// A file without a (whole) header, `len` bytes long.
    pub(super) fn missing(len: u64) -> Parsed {
        Parsed {
            log: MetadataLog::new(),
            format: None,
            valid_len: 0,
            cut: (len > 0).then_some(TailCut {
                position: 0,
                bytes: len,
                reason: CutReason::TornHeader,
                batch_records: 0,
            }),
        }
    }
}

/// The header's format, length and next offset; `None` when the file holds a torn header.
fn read_header(bytes: &[u8], path: &str) -> Result<Option<(Format, usize, u64)>, FileLogError> {
    let bad = |reason: &str| FileLogError::BadHeader {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    match bytes.get(..MAGIC_V3.len()) {
        Some(magic) if magic == MAGIC_V1 => Ok(Some((Format::V1, MAGIC_V1.len(), 0))),
        Some(magic) if magic == MAGIC_V2 => read_long_header(bytes, Format::V2, "KCMLOG02", bad),
        Some(magic) if magic == MAGIC_V3 => read_long_header(bytes, Format::V3, "KCMLOG03", bad),
        // A crash while an older kcoord wrote the header in place (format 2 and 3 files are
        // renamed into place whole) leaves a prefix of it, or zeros that never landed.
        _ if bytes.len() <= MAGIC_V1.len() && (MAGIC_V1.starts_with(bytes) || is_zero(bytes)) => {
            Ok(None)
        }
        _ => Err(bad(
            "the file does not start with \"KCMLOG03\" (nor the older \"KCMLOG02\" or \"KCMLOG01\")",
        )),
    }
}

/// Format 2's and 3's header (the same layout): magic, next offset, checksum.
fn read_long_header(
    bytes: &[u8],
    format: Format,
    magic: &str,
    bad: impl Fn(&str) -> FileLogError,
) -> Result<Option<(Format, usize, u64)>, FileLogError> {
    let header = bytes
        .get(..HEADER)
        .ok_or_else(|| bad(&format!("the {magic} header is cut short")))?;
    if crc32c::crc32c(&header[..16]) != be_u32(&header[16..20]) {
        return Err(bad(&format!(
            "the {magic} header's checksum does not match"
        )));
    }
    // Offsets are Kafka's int64 (entries store them so): a larger next offset would make the
    // next append's offset wrap (found by fuzzing).
    let next_offset = be_u64(&header[8..16]);
    if next_offset > i64::MAX as u64 {
        return Err(bad(&format!(
            "the {magic} header's next offset {next_offset} is beyond the largest offset"
        )));
    }
    Ok(Some((format, HEADER, next_offset)))
}

/// Reads a whole file image; see the module docs for what is cut and what is corrupt.
pub(super) fn parse(bytes: &[u8], path: &str) -> Result<Parsed, FileLogError> {
    let Some((format, header_len, header_next)) = read_header(bytes, path)? else {
        return Ok(Parsed::missing(bytes.len() as u64));
    };
    let mut reader = Reader {
        path,
        format,
        log: MetadataLog::new(),
        previous: None,
        batch: Vec::new(),
        batch_start: header_len,
    };
    let mut position = header_len;
    while position < bytes.len() {
        match read_entry(&bytes[position..], format, reader.expect()) {
            EntryRead::Valid { record, len, more } => {
                position += len;
                reader.take(record, more, position)?;
            }
            read => {
                let reason = tail_cut(bytes, position, format, reader.previous, read)
                    .map_err(|reason| reader.corrupt(position, reason))?;
                return Ok(reader.finish(header_next, bytes.len(), Some(reason)));
            }
        }
    }
    // A batch left open at the end: its last entry never landed.
    let torn = (!reader.batch.is_empty()).then_some(CutReason::TornBatch);
    Ok(reader.finish(header_next, bytes.len(), torn))
}

/// The state of reading entries: the whole batches read so far, and the batch being read.
struct Reader<'a> {
    path: &'a str,
    format: Format,
    /// The records of every whole batch.
    log: MetadataLog,
    /// The offset of the last valid entry (of a whole batch or of `batch`).
    previous: Option<u64>,
    /// The records of a batch whose last entry is still to come.
    batch: Vec<LogRecord>,
    /// Where `batch` starts: the end of the last whole batch.
    batch_start: usize,
}

impl Reader<'_> {
    fn expect(&self) -> Expect {
        match self.format {
            Format::V1 => Expect::Dense(self.previous.map_or(0, |p| p + 1)),
            Format::V2 | Format::V3 => Expect::After(self.previous),
        }
    }

    /// A valid entry, ending at `end`; the batch goes to the log once its last entry is read.
    fn take(&mut self, record: LogRecord, more: bool, end: usize) -> Result<(), FileLogError> {
        self.previous = Some(record.offset);
        if more {
            self.batch.push(record);
            return Ok(());
        }
        let pushed = if self.batch.is_empty() {
            // A batch of one record (every record of a rewritten or older file): no detour.
            push_loaded(&mut self.log, record)
        } else {
            self.batch.push(record);
            // Drained, not taken: the batch's buffer serves the next batch too.
            let log = &mut self.log;
            self.batch
                .drain(..)
                .try_for_each(|record| push_loaded(log, record))
        };
        pushed.map_err(|reason| self.corrupt(self.batch_start, reason))?;
        self.batch_start = end;
        Ok(())
    }

    fn corrupt(&self, position: usize, reason: String) -> FileLogError {
        FileLogError::Corrupt {
            path: self.path.to_string(),
            position: position as u64,
            after: self.previous.map_or(AfterOffset::First, AfterOffset::After),
            reason,
        }
    }

    /// The whole batches, and, when `reason` says why, the rest of the file cut off from the
    /// end of the last whole batch (with the first records of an unfinished one, if any).
    fn finish(mut self, header_next: u64, file_len: usize, reason: Option<CutReason>) -> Parsed {
        // The header's next offset only ever moves the log's forward; an error cannot happen.
        let _ = self
            .log
            .advance_next_offset(header_next.max(self.log.next_offset()));
        let valid_len = self.batch_start;
        Parsed {
            log: self.log,
            format: Some(self.format),
            valid_len: valid_len as u64,
            cut: reason.map(|reason| TailCut {
                position: valid_len as u64,
                bytes: (file_len - valid_len) as u64,
                reason,
                batch_records: self.batch.len() as u64,
            }),
        }
    }
}

/// No compaction while loading, as after any batch appended: the next append compacts when
/// due (only whole batches are loaded, so the log ends at a batch boundary, where a compaction
/// may run).
fn push_loaded(log: &mut MetadataLog, record: LogRecord) -> Result<(), String> {
    log.push_at(
        record.offset,
        record.record_type,
        record.version,
        record.key,
        record.value,
    )
    .map_err(|e| e.to_string())
}

/// The offset an entry's body must hold.
#[derive(Debug, Clone, Copy)]
pub(super) enum Expect {
    /// Format 1: exactly this one.
    Dense(u64),
    /// Formats 2 and 3: above the previous entry's (any, for the first).
    After(Option<u64>),
}

/// How the bytes at some position read as an entry.
pub(super) enum EntryRead {
    /// A whole entry with a matching checksum and a sound body, `len` bytes long; `more`: the
    /// next entry belongs to the same batch.
    Valid {
        record: LogRecord,
        len: usize,
        more: bool,
    },
    /// The file ends inside the entry: inside its 8-byte header, or before the end its
    /// (possible) length gives.
    Incomplete,
    /// Whole, or with an impossible length, and wrong. `checksum`: it failed its checksum or
    /// length check (so missing sectors could explain it), rather than a matching checksum over
    /// a bad body.
    Damaged { reason: String, checksum: bool },
}

pub(super) fn read_entry(rest: &[u8], format: Format, expect: Expect) -> EntryRead {
    let damaged = |reason: String, checksum| EntryRead::Damaged { reason, checksum };
    let Some((length, more)) = rest
        .get(..4)
        .map(|field| format.split_length(be_u32(field)))
    else {
        return EntryRead::Incomplete;
    };
    if !(4 + MIN_BODY..=MAX_ENTRY_BYTES - 4).contains(&length) {
        return damaged(format!("impossible entry length {length}"), true);
    }
    let Some(entry) = rest.get(..4 + length) else {
        return EntryRead::Incomplete;
    };
    let stored = be_u32(&entry[4..8]);
    let actual = format.checksum(&entry[..4], &entry[ENTRY_HEADER..]);
    if actual != stored {
        return damaged(
            format!("checksum {actual:#010x} does not match the stored {stored:#010x}"),
            true,
        );
    }
    match decode_body(&entry[ENTRY_HEADER..], expect) {
        Ok(record) => EntryRead::Valid {
            record,
            len: entry.len(),
            more,
        },
        Err(reason) => damaged(reason, false),
    }
}

/// A body whose checksum matched; its layout is still checked, never trusted.
fn decode_body(body: &[u8], expect: Expect) -> Result<LogRecord, String> {
    let mut cursor = Cursor { bytes: body, at: 0 };
    let offset = cursor.i64()?;
    let offset = u64::try_from(offset).map_err(|_| format!("negative record offset {offset}"))?;
    match expect {
        Expect::Dense(expected) if offset != expected => {
            return Err(format!(
                "it says it is record offset {offset}, not {expected} (format 1 offsets are dense)"
            ))
        }
        Expect::After(Some(previous)) if offset <= previous => {
            return Err(format!(
                "it says it is record offset {offset}, not above the previous entry's {previous}"
            ))
        }
        _ => {}
    }
    let record_type = cursor.i16()?;
    let version = cursor.i16()?;
    let key = cursor.optional_bytes()?;
    let value = cursor.optional_bytes()?;
    if cursor.at != body.len() {
        return Err(format!("{} bytes after the value", body.len() - cursor.at));
    }
    Ok(LogRecord {
        offset,
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
        Ok(i64::from_be_bytes(be_8(b)))
    }

    fn optional_bytes(&mut self) -> Result<Option<Bytes>, String> {
        match self.i32()? {
            -1 => Ok(None),
            n if n < 0 => Err(format!("negative length {n}")),
            n => Ok(Some(Bytes::copy_from_slice(self.take(n as usize)?))),
        }
    }
}
