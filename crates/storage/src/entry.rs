//! One batch as the log indexes it, and the `.index` file that keeps a sealed segment's
//! entries: everything the log needs about a batch without reading it (where it is, its
//! offsets and largest timestamp, and the producer fields idempotence and transactions are
//! rebuilt from: the transactional flag, and a transaction marker's type).
//!
//! The index is dense, one entry per batch, unlike Kafka's sparse `.index` (one entry per
//! `index.interval.bytes`): reads, timestamp searches and producer-state recovery then never
//! scan a segment, for 48 bytes of memory per batch.

use std::io::{self, Read, Write};

/// One stored batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry {
    pub base_offset: i64,
    pub last_offset: i64,
    /// Byte position in its segment.
    pub position: u32,
    /// Whole batch, header included.
    pub size: u32,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// The batch is a control batch (transaction marker).
    pub is_control: bool,
    /// The batch is part of a transaction (data batches) or ends one (markers).
    pub is_transactional: bool,
    /// For a transaction marker: whether it commits or aborts.
    pub marker: Option<MarkerKind>,
}

/// What a transaction marker (a control batch's COMMIT or ABORT record) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Commit,
    Abort,
}

/// The bits of an entry's flags byte. Index files of format 1 hold only `CONTROL` (as 0 or 1):
/// they were written before transactions were accepted.
mod flags {
    pub const CONTROL: u8 = 1;
    pub const TRANSACTIONAL: u8 = 2;
    pub const COMMIT: u8 = 4;
    pub const ABORT: u8 = 8;
}

impl BatchEntry {
    pub fn next_offset(&self) -> i64 {
        self.last_offset + 1
    }

    pub fn end_position(&self) -> u64 {
        u64::from(self.position) + u64::from(self.size)
    }

    /// Bytes per entry in an index file.
    pub const ENCODED_LEN: usize = 8 + 8 + 4 + 4 + 8 + 8 + 2 + 4 + 1;

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&self.last_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        let mut f = 0;
        if self.is_control {
            f |= flags::CONTROL;
        }
        if self.is_transactional {
            f |= flags::TRANSACTIONAL;
        }
        f |= match self.marker {
            Some(MarkerKind::Commit) => flags::COMMIT,
            Some(MarkerKind::Abort) => flags::ABORT,
            None => 0,
        };
        out.push(f);
    }

    /// `format_1`: an index written before transactions, whose last byte is only "control".
    fn decode(b: &[u8; Self::ENCODED_LEN], format_1: bool) -> BatchEntry {
        let i64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            i64::from_be_bytes(x)
        };
        let u32_at = |at: usize| {
            let mut x = [0u8; 4];
            x.copy_from_slice(&b[at..at + 4]);
            u32::from_be_bytes(x)
        };
        BatchEntry {
            base_offset: i64_at(0),
            last_offset: i64_at(8),
            position: u32_at(16),
            size: u32_at(20),
            max_timestamp: i64_at(24),
            producer_id: i64_at(32),
            producer_epoch: i16::from_be_bytes([b[40], b[41]]),
            base_sequence: u32_at(42) as i32,
            is_control: if format_1 {
                b[46] != 0
            } else {
                b[46] & flags::CONTROL != 0
            },
            is_transactional: !format_1 && b[46] & flags::TRANSACTIONAL != 0,
            marker: match b[46] {
                _ if format_1 => None,
                f if f & flags::COMMIT != 0 => Some(MarkerKind::Commit),
                f if f & flags::ABORT != 0 => Some(MarkerKind::Abort),
                _ => None,
            },
        }
    }
}

/// Index file layout: magic, entry count, entries, CRC-32C of everything before it. Format 2
/// adds the transactional and marker flags; a new magic so that an older kcoord, which would
/// read those flags as "control", scans the segment instead of trusting the index.
const INDEX_MAGIC: &[u8; 8] = b"kcoordI2";
/// The format before transactions, still read.
const INDEX_MAGIC_1: &[u8; 8] = b"kcoordI1";

/// Writes `entries` as an index file's bytes.
pub fn encode_index(entries: &[BatchEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + entries.len() * BatchEntry::ENCODED_LEN + 4);
    out.extend_from_slice(INDEX_MAGIC);
    out.extend_from_slice(&(entries.len() as u64).to_be_bytes());
    for e in entries {
        e.encode(&mut out);
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// Reads an index file's bytes; `None` when they are not a whole, intact index (the segment
/// is then scanned instead).
pub fn decode_index(bytes: &[u8]) -> Option<Vec<BatchEntry>> {
    let body_len = bytes.len().checked_sub(4)?;
    let (body, crc) = bytes.split_at(body_len);
    if crc32c::crc32c(body).to_be_bytes() != crc {
        return None;
    }
    let (rest, format_1) = match body.strip_prefix(INDEX_MAGIC.as_slice()) {
        Some(rest) => (rest, false),
        None => (body.strip_prefix(INDEX_MAGIC_1.as_slice())?, true),
    };
    let (count, rest) = rest.split_at_checked(8)?;
    let count = u64::from_be_bytes(count.try_into().ok()?);
    if rest.len() as u64 != count.checked_mul(BatchEntry::ENCODED_LEN as u64)? {
        return None;
    }
    Some(
        rest.chunks_exact(BatchEntry::ENCODED_LEN)
            .filter_map(|c| c.try_into().ok().map(|b| BatchEntry::decode(b, format_1)))
            .collect(),
    )
}

/// Writes an index file, complete or not at all: a temporary file renamed into place after
/// an fsync.
pub fn write_index_file(path: &std::path::Path, entries: &[BatchEntry]) -> io::Result<()> {
    let tmp = path.with_extension("index.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&encode_index(entries))?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Reads an index file; `Ok(None)` when it is missing or damaged.
pub fn read_index_file(path: &std::path::Path) -> io::Result<Option<Vec<BatchEntry>>> {
    let mut bytes = Vec::new();
    match std::fs::File::open(path) {
        Ok(mut f) => f.read_to_end(&mut bytes)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(decode_index(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: i64) -> BatchEntry {
        BatchEntry {
            base_offset: i * 10,
            last_offset: i * 10 + 9,
            position: (i * 100) as u32,
            size: 100,
            max_timestamp: 1_700_000_000_000 + i,
            producer_id: if i % 2 == 0 { -1 } else { 4000 + i },
            producer_epoch: (i % 3) as i16,
            base_sequence: -1 + i as i32,
            is_control: i == 3 || i == 4,
            is_transactional: i >= 2,
            marker: match i {
                3 => Some(MarkerKind::Abort),
                4 => Some(MarkerKind::Commit),
                _ => None,
            },
        }
    }

    #[test]
    fn indexes_of_format_1_are_still_read() {
        // Format 1: the last byte of an entry is 0 or 1 (control), nothing else.
        let mut old = entry(3);
        old.is_transactional = false;
        old.marker = None;
        let mut bytes = encode_index(&[old, entry(1)]);
        bytes[..8].copy_from_slice(INDEX_MAGIC_1);
        let body = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(decode_index(&bytes), Some(vec![old, entry(1)]));
    }

    #[test]
    fn index_round_trips_and_refuses_damage() {
        let entries: Vec<BatchEntry> = (0..5).map(entry).collect();
        let bytes = encode_index(&entries);
        assert_eq!(decode_index(&bytes), Some(entries.clone()));
        assert_eq!(decode_index(&encode_index(&[])), Some(vec![]));
        for cut in [0, 3, 15, bytes.len() - 1] {
            assert_eq!(decode_index(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(decode_index(&flipped), None);
    }
}
