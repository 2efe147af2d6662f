//! Reading a file image back: the header, then entry after entry until the end or the first
//! position where no valid entry starts (what then happens to the rest is `tail.rs`'s call).

use bytes::Bytes;

use super::tail::tail_cut;
use super::{
    be_8, be_u32, be_u64, is_zero, AfterOffset, CutReason, FileLogError, Format, TailCut,
    ENTRY_HEADER, HEADER_V2, MAGIC_V1, MAGIC_V2, MAX_ENTRY_BYTES, MIN_BODY,
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
    match bytes.get(..MAGIC_V2.len()) {
        Some(magic) if magic == MAGIC_V1 => Ok(Some((Format::V1, MAGIC_V1.len(), 0))),
        Some(magic) if magic == MAGIC_V2 => {
            let header = bytes
                .get(..HEADER_V2)
                .ok_or_else(|| bad("the KCMLOG02 header is cut short"))?;
            if crc32c::crc32c(&header[..16]) != be_u32(&header[16..20]) {
                return Err(bad("the KCMLOG02 header's checksum does not match"));
            }
            // Offsets are Kafka's int64 (entries store them so): a larger next offset would
            // make the next append's offset wrap (found by fuzzing).
            let next_offset = be_u64(&header[8..16]);
            if next_offset > i64::MAX as u64 {
                return Err(bad(&format!(
                    "the KCMLOG02 header's next offset {next_offset} is beyond the largest offset"
                )));
            }
            Ok(Some((Format::V2, HEADER_V2, next_offset)))
        }
        // A crash while an older kcoord wrote the header in place (format 2 files are renamed
        // into place whole) leaves a prefix of it, or zeros that never landed.
        _ if bytes.len() <= MAGIC_V1.len() && (MAGIC_V1.starts_with(bytes) || is_zero(bytes)) => {
            Ok(None)
        }
        _ => Err(bad(
            "the file does not start with \"KCMLOG02\" (nor the older \"KCMLOG01\")",
        )),
    }
}

/// Reads a whole file image; see the module docs for what is cut and what is corrupt.
pub(super) fn parse(bytes: &[u8], path: &str) -> Result<Parsed, FileLogError> {
    let Some((format, header_len, header_next)) = read_header(bytes, path)? else {
        return Ok(Parsed::missing(bytes.len() as u64));
    };
    let mut log = MetadataLog::new();
    let mut previous: Option<u64> = None;
    let mut position = header_len;
    while position < bytes.len() {
        let expect = match format {
            Format::V1 => Expect::Dense(previous.map_or(0, |p| p + 1)),
            Format::V2 => Expect::After(previous),
        };
        match read_entry(&bytes[position..], format, expect) {
            EntryRead::Valid { record, len } => {
                push_loaded(&mut log, record).map_err(|reason| FileLogError::Corrupt {
                    path: path.to_string(),
                    position: position as u64,
                    after: after(previous),
                    reason,
                })?;
                previous = Some(log.next_offset() - 1);
                position += len;
            }
            read => {
                let reason =
                    tail_cut(bytes, position, format, previous, read).map_err(|reason| {
                        FileLogError::Corrupt {
                            path: path.to_string(),
                            position: position as u64,
                            after: after(previous),
                            reason,
                        }
                    })?;
                return finish(
                    log,
                    format,
                    header_next,
                    position,
                    bytes.len(),
                    Some(reason),
                );
            }
        }
    }
    finish(log, format, header_next, position, bytes.len(), None)
}

fn after(previous: Option<u64>) -> AfterOffset {
    previous.map_or(AfterOffset::First, AfterOffset::After)
}

/// No compaction while loading: the file does not mark batch boundaries, and a compaction may
/// only run at one (the next append does it when due).
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

fn finish(
    mut log: MetadataLog,
    format: Format,
    header_next: u64,
    valid_len: usize,
    file_len: usize,
    reason: Option<CutReason>,
) -> Result<Parsed, FileLogError> {
    // The header's next offset only ever moves the log's forward; an error cannot happen.
    let _ = log.advance_next_offset(header_next.max(log.next_offset()));
    Ok(Parsed {
        log,
        format: Some(format),
        valid_len: valid_len as u64,
        cut: reason.map(|reason| TailCut {
            position: valid_len as u64,
            bytes: (file_len - valid_len) as u64,
            reason,
        }),
    })
}

/// The offset an entry's body must hold.
#[derive(Debug, Clone, Copy)]
pub(super) enum Expect {
    /// Format 1: exactly this one.
    Dense(u64),
    /// Format 2: above the previous entry's (any, for the first).
    After(Option<u64>),
}

/// How the bytes at some position read as an entry.
pub(super) enum EntryRead {
    /// A whole entry with a matching checksum and a sound body, `len` bytes long.
    Valid { record: LogRecord, len: usize },
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
    let Some(length) = rest.get(..4).map(be_u32) else {
        return EntryRead::Incomplete;
    };
    let length = length as usize;
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
