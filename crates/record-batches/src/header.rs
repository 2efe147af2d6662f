//! The 61-byte header of a magic 2 record batch, its CRC-32C, and the header edits a leader
//! makes in place (Kafka's `DefaultRecordBatch`).
//!
//! ```text
//! offset size field
//!      0    8 base offset
//!      8    4 batch length (bytes after this field)
//!     12    4 partition leader epoch
//!     16    1 magic (2)
//!     17    4 CRC-32C of bytes 21..end (uint32)
//!     21    2 attributes
//!     23    4 last offset delta
//!     27    8 base timestamp (the delete horizon when attribute bit 6 is set)
//!     35    8 max timestamp
//!     43    8 producer id
//!     51    2 producer epoch
//!     53    4 base sequence
//!     57    4 record count
//!     61      records
//! ```
//!
//! Attributes: bits 0-2 compression, bit 3 timestamp type (1 = LogAppendTime), bit 4
//! transactional, bit 5 control, bit 6 delete horizon; bits 7-15 unused.

use std::fmt;

use crate::RecordsError;

/// Bytes of the batch header, up to and including the record count.
pub const HEADER_LEN: usize = 61;
/// The base offset and length fields, which every log entry starts with (Kafka's
/// `LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// The smallest valid value of the batch length field: a header without records.
pub const MIN_BATCH_LENGTH: i32 = (HEADER_LEN - LOG_OVERHEAD) as i32;
/// The only magic this crate reads and writes.
pub const MAGIC: i8 = 2;

pub(crate) const BASE_OFFSET_OFFSET: usize = 0;
pub(crate) const LENGTH_OFFSET: usize = 8;
pub(crate) const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
pub(crate) const MAGIC_OFFSET: usize = 16;
pub(crate) const CRC_OFFSET: usize = 17;
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_OFFSET: usize = 23;
pub(crate) const BASE_TIMESTAMP_OFFSET: usize = 27;
pub(crate) const MAX_TIMESTAMP_OFFSET: usize = 35;
pub(crate) const PRODUCER_ID_OFFSET: usize = 43;
pub(crate) const PRODUCER_EPOCH_OFFSET: usize = 51;
pub(crate) const BASE_SEQUENCE_OFFSET: usize = 53;
pub(crate) const RECORD_COUNT_OFFSET: usize = 57;

const COMPRESSION_MASK: u16 = 0x07;
const TIMESTAMP_TYPE_MASK: u16 = 0x08;
const TRANSACTIONAL_MASK: u16 = 0x10;
const CONTROL_MASK: u16 = 0x20;
const DELETE_HORIZON_MASK: u16 = 0x40;

/// `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;
/// `RecordBatch.NO_PRODUCER_ID`.
pub const NO_PRODUCER_ID: i64 = -1;
/// `RecordBatch.NO_PRODUCER_EPOCH`.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// `RecordBatch.NO_SEQUENCE`.
pub const NO_SEQUENCE: i32 = -1;
/// `RecordBatch.NO_PARTITION_LEADER_EPOCH`.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;

/// The codec of a batch's records (attribute bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    /// Kafka's id: none 0, gzip 1, snappy 2, lz4 3, zstd 4.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec with Kafka's id, if there is one.
    pub fn from_id(id: u8) -> Option<Compression> {
        Some(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            _ => return None,
        })
    }

    /// Kafka's name (`compression.type` values).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// The codec with this Kafka name.
    pub fn from_name(name: &str) -> Option<Compression> {
        [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Attribute bit 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name, as in `message.timestamp.type`.
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

impl fmt::Display for TimestampType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The fields of a batch header, as read. Parsing checks only that 61 bytes are there and the
/// magic is 2; how the length relates to the bytes present is the caller's (or
/// [`crate::BatchSplitter`]'s) check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Bytes after the length field: the batch is `batch_length + 12` bytes.
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: u16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

pub(crate) fn get_i64(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
pub(crate) fn get_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
pub(crate) fn get_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
pub(crate) fn get_i16(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
pub(crate) fn get_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn put(b: &mut [u8], at: usize, bytes: &[u8]) -> Result<(), RecordsError> {
    let available = b.len();
    let dst = b
        .get_mut(at..at + bytes.len())
        .ok_or(RecordsError::ShortHeader {
            needed: at + bytes.len(),
            available,
        })?;
    dst.copy_from_slice(bytes);
    Ok(())
}

fn short(available: usize) -> RecordsError {
    RecordsError::ShortHeader {
        needed: HEADER_LEN,
        available,
    }
}

impl BatchHeader {
    /// Reads the header at the start of `bytes` (which may hold more than the header).
    pub fn parse(bytes: &[u8]) -> Result<BatchHeader, RecordsError> {
        let h = bytes.get(..HEADER_LEN).ok_or(short(bytes.len()))?;
        let magic = i8::from_be_bytes([h[MAGIC_OFFSET]]);
        if magic != MAGIC {
            return Err(RecordsError::UnsupportedMagic { position: 0, magic });
        }
        let err = || short(h.len());
        Ok(BatchHeader {
            base_offset: get_i64(h, BASE_OFFSET_OFFSET).ok_or_else(err)?,
            batch_length: get_i32(h, LENGTH_OFFSET).ok_or_else(err)?,
            partition_leader_epoch: get_i32(h, PARTITION_LEADER_EPOCH_OFFSET).ok_or_else(err)?,
            magic,
            crc: get_u32(h, CRC_OFFSET).ok_or_else(err)?,
            attributes: get_u16(h, ATTRIBUTES_OFFSET).ok_or_else(err)?,
            last_offset_delta: get_i32(h, LAST_OFFSET_DELTA_OFFSET).ok_or_else(err)?,
            base_timestamp: get_i64(h, BASE_TIMESTAMP_OFFSET).ok_or_else(err)?,
            max_timestamp: get_i64(h, MAX_TIMESTAMP_OFFSET).ok_or_else(err)?,
            producer_id: get_i64(h, PRODUCER_ID_OFFSET).ok_or_else(err)?,
            producer_epoch: get_i16(h, PRODUCER_EPOCH_OFFSET).ok_or_else(err)?,
            base_sequence: get_i32(h, BASE_SEQUENCE_OFFSET).ok_or_else(err)?,
            record_count: get_i32(h, RECORD_COUNT_OFFSET).ok_or_else(err)?,
        })
    }

    /// The 61 header bytes of these fields, as they stand (the CRC field is written as is).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[BASE_OFFSET_OFFSET..LENGTH_OFFSET].copy_from_slice(&self.base_offset.to_be_bytes());
        h[LENGTH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET]
            .copy_from_slice(&self.batch_length.to_be_bytes());
        h[PARTITION_LEADER_EPOCH_OFFSET..MAGIC_OFFSET]
            .copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        h[MAGIC_OFFSET] = self.magic.to_be_bytes()[0];
        h[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&self.crc.to_be_bytes());
        h[ATTRIBUTES_OFFSET..LAST_OFFSET_DELTA_OFFSET]
            .copy_from_slice(&self.attributes.to_be_bytes());
        h[LAST_OFFSET_DELTA_OFFSET..BASE_TIMESTAMP_OFFSET]
            .copy_from_slice(&self.last_offset_delta.to_be_bytes());
        h[BASE_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET]
            .copy_from_slice(&self.base_timestamp.to_be_bytes());
        h[MAX_TIMESTAMP_OFFSET..PRODUCER_ID_OFFSET]
            .copy_from_slice(&self.max_timestamp.to_be_bytes());
        h[PRODUCER_ID_OFFSET..PRODUCER_EPOCH_OFFSET]
            .copy_from_slice(&self.producer_id.to_be_bytes());
        h[PRODUCER_EPOCH_OFFSET..BASE_SEQUENCE_OFFSET]
            .copy_from_slice(&self.producer_epoch.to_be_bytes());
        h[BASE_SEQUENCE_OFFSET..RECORD_COUNT_OFFSET]
            .copy_from_slice(&self.base_sequence.to_be_bytes());
        h[RECORD_COUNT_OFFSET..HEADER_LEN].copy_from_slice(&self.record_count.to_be_bytes());
        h
    }

    /// The compression id (attribute bits 0-2), defined or not.
    pub fn compression_id(&self) -> u8 {
        (self.attributes & COMPRESSION_MASK) as u8
    }

    /// The codec; ids 5-7 are [`RecordsError::UnknownCompression`] (Kafka's
    /// `CompressionType.forId` throws for them).
    pub fn compression(&self) -> Result<Compression, RecordsError> {
        let id = self.compression_id();
        Compression::from_id(id).ok_or(RecordsError::UnknownCompression(id))
    }

    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_MASK == 0 {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        }
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_MASK != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_MASK != 0
    }

    /// Attribute bit 6: `base_timestamp` is the delete horizon (set by compaction).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & DELETE_HORIZON_MASK != 0
    }

    /// The delete horizon, when bit 6 is set.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then_some(self.base_timestamp)
    }

    /// `base_offset + last_offset_delta` (wrapping, like Java's long arithmetic).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Whether a producer id is set (Kafka's `hasProducerId`: greater than -1).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id > NO_PRODUCER_ID
    }

    /// The sequence of the last record: `base_sequence + last_offset_delta`, wrapping past
    /// `i32::MAX` to 0 as Kafka's `DefaultRecordBatch.incrementSequence` does; -1 when the batch
    /// has no sequence.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == NO_SEQUENCE {
            return NO_SEQUENCE;
        }
        increment_sequence(self.base_sequence, self.last_offset_delta)
    }

    /// Bytes of the whole batch: `batch_length + 12`, or `None` when the length field is
    /// negative.
    pub fn size(&self) -> Option<usize> {
        usize::try_from(self.batch_length)
            .ok()?
            .checked_add(LOG_OVERHEAD)
    }

    /// Bytes of the whole batch as Kafka's `sizeInBytes` computes it (`12 + batch_length`, in
    /// 64 bits so it cannot overflow).
    pub fn total_size(&self) -> i64 {
        LOG_OVERHEAD as i64 + i64::from(self.batch_length)
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap from `i32::MAX` to 0.
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment
            .wrapping_sub(i32::MAX.wrapping_sub(sequence))
            .wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`.
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// The attributes Kafka computes for these flags (`computeAttributes`): only bits 0-6 are ever
/// set.
pub fn attributes(
    compression: Compression,
    timestamp_type: TimestampType,
    transactional: bool,
    control: bool,
    delete_horizon: bool,
) -> u16 {
    let mut a = u16::from(compression.id()) & COMPRESSION_MASK;
    if timestamp_type == TimestampType::LogAppendTime {
        a |= TIMESTAMP_TYPE_MASK;
    }
    if transactional {
        a |= TRANSACTIONAL_MASK;
    }
    if control {
        a |= CONTROL_MASK;
    }
    if delete_horizon {
        a |= DELETE_HORIZON_MASK;
    }
    a
}

/// CRC-32C of `batch[21..]`: `batch` must be exactly one whole batch (at least the header).
pub fn compute_crc(batch: &[u8]) -> Result<u32, RecordsError> {
    let covered = batch
        .get(ATTRIBUTES_OFFSET..)
        .filter(|_| batch.len() >= HEADER_LEN);
    covered.map(crc32c::crc32c).ok_or(short(batch.len()))
}

/// CRC-32C of a batch given in two parts: its 61 header bytes (only bytes 21..61 are covered)
/// and everything after them. Lets a leader write a patched header in front of an untouched
/// body without joining the two.
pub fn compute_crc_parts(header: &[u8], body: &[u8]) -> Result<u32, RecordsError> {
    let covered = header
        .get(ATTRIBUTES_OFFSET..HEADER_LEN)
        .ok_or(short(header.len()))?;
    Ok(crc32c::crc32c_append(crc32c::crc32c(covered), body))
}

/// Whether `batch` (exactly one whole batch) carries the CRC of its bytes. False for fewer than
/// 61 bytes, as Kafka's `isValid` is false below the header size.
pub fn crc_is_valid(batch: &[u8]) -> bool {
    match (get_u32(batch, CRC_OFFSET), compute_crc(batch)) {
        (Some(stored), Ok(computed)) => stored == computed,
        _ => false,
    }
}

/// Checks the CRC, naming both values when they differ.
pub fn verify_crc(batch: &[u8]) -> Result<(), RecordsError> {
    let computed = compute_crc(batch)?;
    let stored = get_u32(batch, CRC_OFFSET).ok_or(short(batch.len()))?;
    if stored == computed {
        Ok(())
    } else {
        Err(RecordsError::CrcMismatch { stored, computed })
    }
}

/// Recomputes and stores the CRC of `batch` (exactly one whole batch).
pub fn write_crc(batch: &mut [u8]) -> Result<u32, RecordsError> {
    let crc = compute_crc(batch)?;
    put(batch, CRC_OFFSET, &crc.to_be_bytes())?;
    Ok(crc)
}

/// Sets the base offset (not covered by the CRC).
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) -> Result<(), RecordsError> {
    put(batch, BASE_OFFSET_OFFSET, &base_offset.to_be_bytes())
}

/// Kafka's `setLastOffset`: sets the base offset to `last_offset - last_offset_delta`, so that
/// the batch ends at `last_offset`.
pub fn set_last_offset(batch: &mut [u8], last_offset: i64) -> Result<(), RecordsError> {
    let delta = get_i32(batch, LAST_OFFSET_DELTA_OFFSET).ok_or(short(batch.len()))?;
    set_base_offset(batch, last_offset.wrapping_sub(i64::from(delta)))
}

/// Sets the partition leader epoch (not covered by the CRC).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) -> Result<(), RecordsError> {
    put(batch, PARTITION_LEADER_EPOCH_OFFSET, &epoch.to_be_bytes())
}

/// Kafka's `setMaxTimestamp`: when the timestamp type or the max timestamp differ from what the
/// header holds, rewrites the attributes (recomputed from the flags, which clears bits 7-15 as
/// Kafka does) and the max timestamp, and recomputes the CRC. Returns whether anything
/// changed. `batch` must be exactly one whole batch.
pub fn set_max_timestamp(
    batch: &mut [u8],
    timestamp_type: TimestampType,
    max_timestamp: i64,
) -> Result<bool, RecordsError> {
    if batch.len() < HEADER_LEN {
        return Err(short(batch.len()));
    }
    let header = BatchHeader::parse(batch)?;
    if header.timestamp_type() == timestamp_type && header.max_timestamp == max_timestamp {
        return Ok(false);
    }
    let attrs = rewritten_attributes(header.attributes, timestamp_type);
    put(batch, ATTRIBUTES_OFFSET, &attrs.to_be_bytes())?;
    put(batch, MAX_TIMESTAMP_OFFSET, &max_timestamp.to_be_bytes())?;
    write_crc(batch)?;
    Ok(true)
}

/// The attributes `setMaxTimestamp` writes: the same flags and compression bits, the new
/// timestamp type, nothing else.
pub fn rewritten_attributes(attributes: u16, timestamp_type: TimestampType) -> u16 {
    let keep = COMPRESSION_MASK | TRANSACTIONAL_MASK | CONTROL_MASK | DELETE_HORIZON_MASK;
    let mut a = attributes & keep;
    if timestamp_type == TimestampType::LogAppendTime {
        a |= TIMESTAMP_TYPE_MASK;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_wraps_like_kafka() {
        assert_eq!(increment_sequence(5, 3), 8);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 5), 3);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        assert_eq!(decrement_sequence(3, 5), i32::MAX - 1);
        let header = BatchHeader {
            base_offset: 0,
            batch_length: MIN_BATCH_LENGTH,
            partition_leader_epoch: -1,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: 4,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: 1,
            producer_epoch: 0,
            base_sequence: i32::MAX - 2,
            record_count: 5,
        };
        assert_eq!(header.last_sequence(), 1);
        assert_eq!(
            BatchHeader {
                base_sequence: -1,
                ..header
            }
            .last_sequence(),
            -1
        );
        assert_eq!(header.last_offset(), 4);
        assert_eq!(header.next_offset(), 5);
        assert_eq!(header.size(), Some(HEADER_LEN));
    }

    #[test]
    fn crc32c_matches_kafkas_test_vector() {
        // Kafka's Crc32CTest: "Some String" -> 608512271.
        assert_eq!(crc32c::crc32c(b"Some String"), 608_512_271);
    }

    #[test]
    fn attribute_bits() {
        let a = attributes(
            Compression::Zstd,
            TimestampType::LogAppendTime,
            true,
            true,
            true,
        );
        assert_eq!(a, 0x7c);
        assert_eq!(
            rewritten_attributes(0xff84, TimestampType::CreateTime),
            0x04
        );
        assert_eq!(Compression::from_name("lz4"), Some(Compression::Lz4));
        assert_eq!(Compression::from_id(5), None);
    }

    #[test]
    fn short_buffers_are_errors_not_panics() {
        let mut small = [0u8; 20];
        assert!(BatchHeader::parse(&small).is_err());
        assert!(compute_crc(&small).is_err());
        assert!(!crc_is_valid(&small));
        assert!(set_last_offset(&mut small, 5).is_err());
        assert!(set_max_timestamp(&mut small, TimestampType::CreateTime, 1).is_err());
        assert!(set_base_offset(&mut small[..4], 1).is_err());
        assert!(set_partition_leader_epoch(&mut small[..13], 1).is_err());
    }
}
