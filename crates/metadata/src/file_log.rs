//! A durable copy of a [`MetadataLog`]: its records appended to one file, and read back at
//! startup. The daemon's controller writes its log here when `metadata.log.dir` is set; nothing
//! in it is controller-specific, so a coordinator shard keeps its own log the same way (one
//! directory per log: the file name is fixed).
//!
//! # File layout (format 3; big-endian, as the Kafka wire is)
//!
//! ```text
//! header:  "KCMLOG03"                                  8 bytes, once
//!          next_offset  u64   the log's next offset when the file was written
//!          crc          u32   CRC-32C of the 16 bytes above
//! entry:   length   u32   bit 31, "more": the next entry belongs to the same batch;
//!                         bits 0-30: bytes that follow this field (crc + body)
//!          crc      u32   CRC-32C (Castagnoli, as Kafka's record batches) of the
//!                         length field's 4 bytes followed by the body
//!          body     offset i64, record_type i16, version i16,
//!                   key_len i32 (-1 = none), key bytes,
//!                   value_len i32 (-1 = tombstone), value bytes
//! ```
//!
//! Offsets strictly increase from entry to entry and may have gaps: a compacted log (a
//! coordinator shard's) keeps its survivors' offsets. The log's next offset is the larger of the
//! header's `next_offset` and the last entry's offset + 1: a compaction can drop the newest
//! records (tombstones go with what they delete), so after a [`LogWriter::rewrite`] the next
//! offset may lie past the last record, and the header keeps it so no offset is handed out
//! twice. Entries appended after a rewrite have offsets of at least the header's.
//!
//! # Batches
//!
//! Each record is one entry, and the entries of one batch (the records one
//! [`LogWriter::write`] is given: all that one handler decided, such as the tombstones that
//! delete a group) are a run whose entries all have the "more" bit set but the last. The
//! runtime appends a batch all or nothing, and its records are consistent only at its end (the
//! tombstones of a deleted group, `crate::log`'s "Why replaying a compacted log gives the live
//! state"), so a reader keeps a batch only once its last entry is there: a crash in the middle
//! of a write can leave the first entries of a batch, which loading cuts whole (below). The
//! bit costs no space: an entry is at most [`MAX_ENTRY_BYTES`] (2^26) long, so the top bits of
//! its length were always zero, and the checksum covers the bit as the rest of the field. A
//! rewritten file ([`LogWriter::rewrite`]) is made atomic by its rename, not by batches: each
//! of its records is a batch of its own.
//!
//! # Older formats
//!
//! Format 2 (`KCMLOG02`) is format 3 without batches: the same header and entries, each entry a
//! batch of its own (no length had bit 31 set; read as format 2, one that has is an impossible
//! length, as it always was). Format 1 (`KCMLOG01`) had an 8-byte header (the magic alone),
//! dense offsets from 0 and a checksum of the body only, each entry a batch of its own too.
//! Both are still read, exactly as before (the same entries, torn tails and corruption), and
//! [`open`] converts such a file to format 3 (the same atomic replacement as
//! [`LogWriter::rewrite`]) before appending: a header says how all of a file's entries read, so
//! batches must not be appended under an older one.
//!
//! # Durability
//!
//! A new file (and a rewritten one) is written in full to `metadata.log.tmp`, flushed, renamed
//! over `metadata.log` and the directory is flushed, so a crash leaves the old file or the new
//! one, whole; [`open`] deletes a temp file left behind. Appends are whole batches (one or
//! more per write) and are flushed by [`LogWriter::sync`] (fdatasync), so whatever is synced
//! ends with the last entry of a batch. [`open`] holds an exclusive `flock` on
//! `metadata.log.lock` for as long as the [`LogWriter`] lives, so two daemons never write one log.
//!
//! # Loading: torn tails versus corruption
//!
//! Reading stops at the first position `p` where no valid entry starts (valid: whole, its
//! checksum matches, its body is well formed and its offset is above the previous one). The
//! bytes from `p` to the end of the file are then either **cut** (the file is truncated and
//! [`LoadedLog::cut`] says how many bytes and why) or the load fails with
//! [`FileLogError::Corrupt`]. They are cut only when all of the following hold, so that no
//! acknowledged (synced) entry is dropped:
//!
//! 1. no valid entry starts anywhere after `p` (a damaged entry followed by valid ones is
//!    corruption: those later entries may have been acknowledged);
//! 2. and one of:
//!    - **zero-filled**: every byte from `p` on is zero (the file system extended the file but
//!      the data never landed);
//!    - **torn**: the file ends inside the entry at `p` (inside its 8-byte header, or before the
//!      end its length gives), and the bytes that are there do not form a whole entry with a
//!      matching checksum for their actual length (that would be a damaged length field on a
//!      complete last entry);
//!    - **lost sectors**: the entry at `p` fails its checksum (or has an impossible length), and
//!      the file is zero from a 512-byte boundary inside that entry to its end: the tail of an
//!      interrupted write whose last sectors never landed.
//!
//! A cut takes the unfinished batch with it: the file is cut back to the end of the last whole
//! batch, `q <= p`, so the valid entries from `q` to `p` (the first records of a batch whose
//! last entry never landed; [`TailCut::batch_records`] counts them) go too. A file that ends
//! after such entries, with no bytes left over (`p` is its end), is cut back to `q` in the same
//! way (**torn batch**). Neither drops anything acknowledged: writes are whole batches and a
//! sync covers every write before it, so a synced file ends with the last entry of a batch, and
//! all that follows the last whole batch was never synced. A batch that landed whole is kept.
//!
//! Everything else is corruption, e.g. a bit flip in a body or length (caught by the checksum,
//! which covers both), offsets out of order, or zeros in the middle followed by valid data.
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use crate::log::MetadataLog;

mod encode;
mod read;
mod tail;
mod writer;

use encode::encode_file;
pub use encode::{batch_bytes, image_bytes};

use read::{parse, Parsed};

/// The file inside the log directory.
pub const FILE_NAME: &str = "metadata.log";
/// A new or rewritten file is written here first, then renamed to [`FILE_NAME`].
pub const TEMP_FILE_NAME: &str = "metadata.log.tmp";
/// Locked (`flock`, exclusive) while a [`LogWriter`] of the directory lives.
pub const LOCK_FILE_NAME: &str = "metadata.log.lock";
/// Identifies format 1 (read, never written).
const MAGIC_V1: &[u8; 8] = b"KCMLOG01";
/// Identifies format 2 (read, never written).
const MAGIC_V2: &[u8; 8] = b"KCMLOG02";
/// Identifies format 3, the one written.
const MAGIC_V3: &[u8; 8] = b"KCMLOG03";
/// Format 2's and 3's header: magic, next offset, crc.
const HEADER: usize = 8 + 8 + 4;
/// Bit 31 of a format 3 entry's length field: the next entry belongs to the same batch.
const MORE: u32 = 1 << 31;
/// length + crc.
const ENTRY_HEADER: usize = 8;
/// offset + record_type + version + key_len + value_len.
const MIN_BODY: usize = 8 + 2 + 2 + 4 + 4;
/// The smallest whole entry.
const MIN_ENTRY: usize = ENTRY_HEADER + MIN_BODY;
/// Disks persist whole sectors, so a write interrupted by a power loss leaves zeros from a
/// sector boundary on (512 bytes is the smallest sector in use).
const SECTOR: usize = 512;
/// Larger entries (length field, crc and body) are refused when written and reported as corrupt
/// when read: no metadata record comes near it, and it keeps a damaged length from asking for
/// gigabytes. [`check_entry_size`] lets a caller refuse a record before applying it.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FileLogError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a kcoord metadata log: {reason}")]
    BadHeader { path: String, reason: String },
    #[error("{path}: the entry at byte {position} ({after}) is corrupt: {reason}")]
    Corrupt {
        path: String,
        position: u64,
        /// Where the entry sits: after which record offset, or first.
        after: AfterOffset,
        reason: String,
    },
    #[error("{path}: cannot write record offset {got}: offsets must increase and the file's next offset is {expected}")]
    OutOfOrder {
        path: String,
        expected: u64,
        got: u64,
    },
    #[error("{path}: record offset {offset}: {source}")]
    TooLarge {
        path: String,
        offset: u64,
        #[source]
        source: EntryTooLarge,
    },
    #[error("{path}: another kcoord holds this log directory (the lock file is locked); two daemons must not share a log directory")]
    Locked { path: String },
}

/// The record offset a corrupt entry follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterOffset {
    /// The entry is the file's first.
    First,
    /// The previous (valid) entry held this record offset.
    After(u64),
}

impl fmt::Display for AfterOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AfterOffset::First => write!(f, "the first entry"),
            AfterOffset::After(offset) => write!(f, "after record offset {offset}"),
        }
    }
}

/// A record too large for one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("its log entry would be {size} bytes, more than the {max} an entry may hold", max = MAX_ENTRY_BYTES)]
pub struct EntryTooLarge {
    pub size: usize,
}

/// Bytes the entry of a record with this key and value takes (length field, crc and body).
pub fn entry_size(key: Option<&[u8]>, value: Option<&[u8]>) -> usize {
    4 + 4 + MIN_BODY + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len)
}

/// Refuses a record whose entry would exceed [`MAX_ENTRY_BYTES`]. Call it on every record of a
/// batch before applying any of them: a record the file cannot take must not change memory.
pub fn check_entry_size(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<(), EntryTooLarge> {
    let size = entry_size(key, value);
    if size > MAX_ENTRY_BYTES {
        return Err(EntryTooLarge { size });
    }
    Ok(())
}

/// What [`open`] found.
#[derive(Debug)]
pub struct LoadedLog {
    /// Every whole record of the file, in order, with the file's next offset.
    pub log: MetadataLog,
    /// Appends after those records.
    pub writer: LogWriter,
    /// Bytes cut off the end of the file (0 when it ended cleanly); [`LoadedLog::cut`] says
    /// where and why.
    pub torn_bytes: u64,
    /// What was cut off the end of the file, if anything: worth a WARN.
    pub cut: Option<TailCut>,
    /// The file was in this older format (1 or 2) and was converted to format 3.
    pub converted_from: Option<u8>,
}

/// Bytes [`open`] cut off the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailCut {
    /// Where the cut bytes started: the file is now this long.
    pub position: u64,
    pub bytes: u64,
    pub reason: CutReason,
    /// Whole records (valid entries) cut with the tail: the first records of a batch whose last
    /// entry never reached the file, so none of the batch was acknowledged.
    pub batch_records: u64,
}

/// Why bytes were cut; see the module docs for the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutReason {
    /// The file held part of a header: it was being created.
    TornHeader,
    /// The file ended inside an entry.
    TornEntry,
    /// Zero bytes after the last valid entry.
    ZeroFilled,
    /// An entry whose last sectors read as zeros.
    LostSectors,
    /// The file ends after whole entries of a batch whose last entry is missing.
    TornBatch,
}

impl fmt::Display for TailCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.reason {
            CutReason::TornHeader => "a torn file header (the file was being created)",
            CutReason::TornEntry => "a torn last entry (the file ends inside it)",
            CutReason::ZeroFilled => "zero bytes after the last whole entry",
            CutReason::LostSectors => "a last entry whose final sectors never reached the disk",
            CutReason::TornBatch => "the first records of a batch whose end never reached the file",
        };
        write!(
            f,
            "cut {} bytes at byte {}: {why}",
            self.bytes, self.position
        )?;
        let records = match self.batch_records {
            1 => "1 whole record".to_string(),
            n => format!("{n} whole records"),
        };
        match (self.reason, self.batch_records) {
            (_, 0) => Ok(()),
            (CutReason::TornBatch, _) => write!(f, " ({records})"),
            _ => write!(
                f,
                ", with the {records} before it of the same unfinished batch"
            ),
        }
    }
}

/// Writes records to the file. [`LogWriter::write`] writes, [`LogWriter::sync`] flushes
/// (group commit: several writes, one sync); [`LogWriter::append`] does both.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    paths: Paths,
    /// Holds the directory's `flock` until the writer is dropped.
    _lock: File,
    /// Bytes of the header and whole entries written: where the next entry goes.
    len: u64,
    next_offset: u64,
    /// `len` and `next_offset` at the last successful sync.
    synced_len: u64,
    synced_next_offset: u64,
    /// A failed write or sync may have left bytes after `len` that could not be cut yet: cut
    /// them before anything else is written.
    tail_to_cut: bool,
    /// A rename's directory flush failed: retry it before a sync reports success.
    dir_unsynced: bool,
}

/// The files of one log directory.
#[derive(Debug, Clone)]
struct Paths {
    dir: PathBuf,
    log: PathBuf,
    temp: PathBuf,
}

impl Paths {
    fn new(dir: &Path) -> Paths {
        Paths {
            dir: dir.to_path_buf(),
            log: dir.join(FILE_NAME),
            temp: dir.join(TEMP_FILE_NAME),
        }
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> FileLogError + '_ {
    move |source| FileLogError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Opens (creating it and the directory if needed) the log in `dir`, locks it and reads it
/// back. Fails with [`FileLogError::Locked`] at once if another writer holds the directory.
pub fn open(dir: &Path) -> Result<LoadedLog, FileLogError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let lock = lock_dir(dir)?;
    let paths = Paths::new(dir);
    // A rewrite that crashed before its rename: the log file is still the old, whole one.
    match std::fs::remove_file(&paths.temp) {
        Err(e) if e.kind() != ErrorKind::NotFound => return Err(io_error(&paths.temp)(e)),
        _ => {}
    }
    let bytes = read_if_exists(&paths.log)?;
    let shown = paths.log.display().to_string();
    let parsed = match &bytes {
        Some(bytes) => parse(bytes, &shown)?,
        None => Parsed::missing(0),
    };
    let file_len = bytes.as_ref().map_or(0, |b| b.len() as u64);
    let cut = parsed.cut;
    let converted_from = match parsed.format {
        Some(Format::V1) => Some(1),
        Some(Format::V2) => Some(2),
        _ => None,
    };
    let (file, len) = if parsed.format == Some(Format::V3) {
        let file = open_rw(&paths.log)?;
        if parsed.valid_len < file_len {
            file.set_len(parsed.valid_len)
                .and_then(|()| file.sync_all())
                .map_err(io_error(&paths.log))?;
        }
        (file, parsed.valid_len)
    } else {
        // No file, a torn header, or an older format: write a format 3 file in its place.
        let installed = install(&paths, &parsed.log)?;
        sync_dir(&paths.dir)?;
        installed
    };
    let writer = LogWriter {
        file,
        paths,
        _lock: lock,
        len,
        next_offset: parsed.log.next_offset(),
        synced_len: len,
        synced_next_offset: parsed.log.next_offset(),
        tail_to_cut: false,
        dir_unsynced: false,
    };
    Ok(LoadedLog {
        log: parsed.log,
        writer,
        torn_bytes: cut.map_or(0, |c| c.bytes),
        cut,
        converted_from,
    })
}

/// What [`open`] reads from a log file's bytes, without a file: its records and what would be
/// cut off its end (the same rules). For tools and the fuzz targets.
pub fn read_image(bytes: &[u8]) -> Result<(MetadataLog, Option<TailCut>), FileLogError> {
    parse(bytes, "(image)").map(|parsed| (parsed.log, parsed.cut))
}

/// Takes the directory's exclusive lock, or says who holds it. `flock` locks belong to the open
/// file, so a second open in the same process is refused too, and the lock goes with the
/// process (no stale lock after a crash).
pub fn lock_dir(dir: &Path) -> Result<File, FileLogError> {
    let path = dir.join(LOCK_FILE_NAME);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_error(&path))?;
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(FileLogError::Locked {
            path: path.display().to_string(),
        }),
        Err(e) => Err(io_error(&path)(e.into())),
    }
}

fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>, FileLogError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path)(e)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io_error(path))?;
    Ok(Some(bytes))
}

fn open_rw(path: &Path) -> Result<File, FileLogError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io_error(path))
}

/// Flushes the directory, so that a file created or renamed in it is still there after a power
/// loss (the file's own fsync does not cover its name).
fn sync_dir(dir: &Path) -> Result<(), FileLogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(dir))
}

/// Writes `log` as a whole format 3 file to the temp file, flushes it and renames it over the
/// log file; returns the renamed file, open for appends, and its length. The caller flushes the
/// directory. On an error before the rename the temp file is removed and the log file is
/// untouched.
fn install(paths: &Paths, log: &MetadataLog) -> Result<(File, u64), FileLogError> {
    let image = encode_file(log).map_err(|(offset, source)| FileLogError::TooLarge {
        path: paths.log.display().to_string(),
        offset,
        source,
    })?;
    let written = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&paths.temp)
        .and_then(|mut file| {
            file.write_all(&image)?;
            file.sync_all()?;
            Ok(file)
        });
    let file =
        match written.and_then(|file| std::fs::rename(&paths.temp, &paths.log).map(|()| file)) {
            Ok(file) => file,
            Err(e) => {
                // Best effort: the next open deletes a leftover temp file anyway.
                let _ = std::fs::remove_file(&paths.temp);
                return Err(io_error(&paths.temp)(e));
            }
        };
    Ok((file, image.len() as u64))
}

/// The on-disk formats; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    V1,
    V2,
    V3,
}

impl Format {
    /// The entry checksum: formats 2 and 3 cover the length field too, so a damaged length (or
    /// "more" bit) fails it.
    fn checksum(self, length_field: &[u8], body: &[u8]) -> u32 {
        match self {
            Format::V1 => crc32c::crc32c(body),
            Format::V2 | Format::V3 => crc32c::crc32c_append(crc32c::crc32c(length_field), body),
        }
    }

    /// An entry's length field read: the bytes that follow it, and whether the next entry
    /// belongs to the same batch (format 3's bit 31; in the older formats every entry is a
    /// batch of its own, and a set bit 31 is part of an impossible length).
    fn split_length(self, field: u32) -> (usize, bool) {
        match self {
            Format::V3 => ((field & !MORE) as usize, field & MORE != 0),
            Format::V1 | Format::V2 => (field as usize, false),
        }
    }
}

fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == 0)
}

/// The first four bytes, big-endian; callers pass at least four.
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_8(b: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}

fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(be_8(b))
}

#[cfg(test)]
mod tests;
