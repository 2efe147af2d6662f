//! What Kafka does to one partition's records in a Produce request before a leader appends
//! them (magic 2), with Kafka's error codes and messages. Rules in the order Kafka applies
//! them; "no message" means Kafka answers with the code alone (`ErrorMessage` null), since only
//! a `RecordValidationException` carries its message and record errors to the client
//! (`ReplicaManager.appendToLocalLog`, `LogAppendResult.errorMessage`).
//!
//! **`KafkaApis.handleProduceRequest` → `ProduceRequest.validateRecords`**, over Kafka's batch
//! iterator (`ByteBufferLogInputStream`, which stops silently at an incomplete batch):
//! 1. A length field below 14 (`LegacyRecord.RECORD_OVERHEAD_V0`): CORRUPT_MESSAGE (2)
//!    `Record size N is less than the minimum record overhead (14)`, no message. A magic
//!    outside 0..=2: CORRUPT_MESSAGE `Invalid magic found in record: M`, no message. (For a
//!    partition's first batch Kafka meets these earlier, in `hasTransactionalRecords`, and fails
//!    the whole request: see [`has_transactional_records`].)
//! 2. No whole batch at all (empty, or the first batch incomplete): INVALID_RECORD (87)
//!    `Produce requests with version V must have at least one record batch per partition`, no
//!    message.
//! 3. Magic 0 or 1: INVALID_RECORD `Produce requests with version V are only allowed to contain
//!    record batches with magic version 2`, no message.
//! 4. Produce v3-v6 with zstd: UNSUPPORTED_COMPRESSION_TYPE (76) `Produce requests with version
//!    V are not allowed to use ZStandard compression`, no message. (On v3-v6, a compression id
//!    of 5-7 throws `IllegalArgumentException` here, outside any per-partition handling: the
//!    whole request fails with UNKNOWN_SERVER_ERROR (-1); see
//!    [`ValidationError::fails_whole_request`].)
//! 5. A second whole batch: INVALID_RECORD `Produce requests with version V are only allowed to
//!    contain exactly one record batch per partition`, no message. Trailing bytes that are not a
//!    whole batch are dropped (`UnifiedLog.trimInvalidBytes`) unless rule 1 refuses them.
//!
//! **`UnifiedLog.analyzeAndValidateRecords`**:
//! 6. Base offset not 0: INVALID_RECORD `The baseOffset of the record batch in the append to TP
//!    should be 0, but it is B`, no message. (A batch too short to hold its last offset delta,
//!    under 27 bytes, then throws `IndexOutOfBoundsException`: UNKNOWN_SERVER_ERROR.)
//! 7. Batch size (`batch_length + 12`) above `max.message.bytes`: MESSAGE_TOO_LARGE (10) `The
//!    record batch size in the append to TP is S bytes which exceeds the maximum configured
//!    value of M).`, no message.
//! 8. Shorter than the 61-byte header, or a CRC-32C mismatch: CORRUPT_MESSAGE `Record is
//!    corrupt (stored crc = C) in topic partition TP.`, no message.
//! 9. Compression id 5-7: `IllegalArgumentException` `Unknown compression type id: N`:
//!    UNKNOWN_SERVER_ERROR, no message.
//!
//! **`LogValidator.validateBatch`** (origin CLIENT), each INVALID_RECORD, no message:
//! 10. `last_offset_delta + 1 <= 0`: `Batch has an invalid offset range: [B, L] in topic
//!     partition TP`.
//! 11. Record count `<= 0`: `Invalid reported count for record batch: C in topic partition TP`.
//! 12. Count differs from `last_offset_delta + 1`: `Inconsistent batch offset range [B, L] and
//!     count of records C in topic partition TP`.
//! 13. A control batch: `Clients are not allowed to write control records in topic partition
//!     TP`. (So clients can never write transaction markers; transactional data batches pass
//!     here. A transactional batch in a request without a transactional id fails the whole
//!     request with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) before any of this: see
//!     [`has_transactional_records`].)
//! 14. A producer id (`> -1`) with a negative base sequence: `Invalid sequence number S in
//!     record batch with producerId P in topic partition TP`. Nothing else about the producer
//!     id, epoch or sequence is checked here (that is the producer state's job).
//!
//! **Reading the records** (`DefaultRecordBatch` iterators, `DefaultRecord.readFrom`):
//! 15. Compressed batches are decompressed (Kafka streams them; we decompress up to
//!     [`ValidationConfig::max_uncompressed_bytes`]). A stream the codec cannot read: Kafka
//!     throws `KafkaException` (`Failed to decompress record stream`): UNKNOWN_SERVER_ERROR, no
//!     message. More than the limit (kcoord's own rule; Kafka has no limit): MESSAGE_TOO_LARGE,
//!     no message, which makes Kafka's producers split the batch and retry.
//! 16. Malformed records, fewer records than the count (`Incorrect declared batch size,
//!     premature EOF reached`), bytes after the last one (`Incorrect declared batch size,
//!     records still remaining in file`): INVALID_RECORD, no message.
//!
//! **`LogValidator.validateRecord`**, per record (index from 0, first failing check only),
//! collected and thrown together by `processRecordErrors` as a `RecordValidationException`
//! (code, message and record errors all sent):
//! 17. Compacted topic (`cleanup.policy` includes `compact`) and a null key: record error
//!     `Compacted topic cannot accept message without key in topic partition TP`.
//! 18. `message.timestamp.type=CreateTime` and a timestamp other than -1 with `now - ts >
//!     message.timestamp.before.max.ms` (default `i64::MAX`) or `ts - now >
//!     message.timestamp.after.max.ms` (default 3600000, Kafka 4's one hour): record error
//!     `Timestamp T of message with offset O is out of range. The timestamp should be within
//!     [now - before, now + after]`.
//! 19. Otherwise, a batch with the LogAppendTime attribute: record error `Invalid timestamp type
//!     in message DefaultRecord(offset=O, timestamp=T, key=K bytes, value=V bytes). Producer
//!     should not set timestamp type to LogAppendTime.` (`PartialDefaultRecord(...)` with -1 for
//!     a null key or value when a compressed batch is validated in place, as Kafka's skipping
//!     iterator prints it).
//!
//! With any timestamp error: INVALID_TIMESTAMP (32) `One or more records have been rejected
//! due to invalid timestamp`, with every record error. Otherwise INVALID_RECORD `One or more
//! records have been rejected due to N record errors in total, and only showing the first
//! three errors at most: [RecordError(batchIndex=I, message='...'), ...]`.
//!
//! **Assigning** (`LogValidator.assignOffsetsNonCompressed` and
//! `validateMessagesAndAssignOffsetsCompressed`):
//! 20. The batch is kept as sent, its header patched: base offset, partition leader epoch, and
//!     `setMaxTimestamp(message.timestamp.type, max)` where max is the log append time for
//!     LogAppendTime topics, else the largest record timestamp (-1 if none is larger); the CRC
//!     is recomputed only when the type or max timestamp change. See
//!     [`ValidatedBatch::leader_header`].
//! 21. Except when the batch must be rebuilt: the topic's `compression.type` is not `producer`
//!     and differs from the batch's codec, or a compressed batch's offset deltas are not 0, 1,
//!     2, ... Kafka then re-encodes the records (offsets renumbered, timestamps kept, producer
//!     fields and transactional flag kept) with the topic's codec; the new batch above
//!     `max.message.bytes`: MESSAGE_TOO_LARGE `Message batch size is S bytes in append to
//!     partition TP which exceeds the maximum configured size of M.`, no message. (A record
//!     timestamp below -1 then makes Kafka's builder throw: UNKNOWN_SERVER_ERROR.)
//!     Uncompressed batches are never rebuilt for their offset deltas: Kafka keeps them as sent.
//! 22. The batch to append larger than `segment.bytes`: RECORD_LIST_TOO_LARGE (18) `Message
//!     batch size is S bytes in append to partition TP, which exceeds the maximum configured
//!     segment size of M.`, no message (`UnifiedLog.append`).
//!
//! Where kcoord differs from Kafka, on inputs no real client sends:
//! * Kafka validates a compressed batch in place with an iterator that skips keys and values
//!   without checking each record's length prefix against its fields; we decode every record
//!   fully, so such a malformed record is INVALID_RECORD here.
//! * Kafka decompresses as it reads records, so a malformed record ahead of a corrupt part of
//!   the stream is INVALID_RECORD there; we decompress first, so it is UNKNOWN_SERVER_ERROR here.
//!   Likewise Java's gzip reader ignores garbage after the last gzip member; ours refuses it.
//! * The decompression bound of rule 15.

use bytes::{Bytes, BytesMut};
use kcoord_record_batches::{
    compute_crc_parts, crc_is_valid, rewritten_attributes, BatchHeader, Compression, RecordsError,
    TimestampType, HEADER_LEN, LOG_OVERHEAD,
};

mod error;
mod rebuild;
mod records;

pub use error::{codes, RecordError, ValidationError};
use rebuild::rebuild_batch;
use records::{scan_records, Scan};

/// Kafka 4.4's defaults.
pub mod defaults {
    /// `max.message.bytes`: 1 MiB plus the 12-byte log overhead.
    pub const MAX_MESSAGE_BYTES: i32 = 1024 * 1024 + 12;
    /// `message.timestamp.before.max.ms`.
    pub const TIMESTAMP_BEFORE_MAX_MS: i64 = i64::MAX;
    /// `message.timestamp.after.max.ms`: one hour since Kafka 4.0.
    pub const TIMESTAMP_AFTER_MAX_MS: i64 = 3_600_000;
    /// `segment.bytes`.
    pub const SEGMENT_BYTES: i32 = 1024 * 1024 * 1024;
    /// kcoord's bound on a compressed batch's decompressed records (Kafka streams them
    /// without a bound).
    pub const MAX_UNCOMPRESSED_BYTES: usize = 64 * 1024 * 1024;
}

/// The topic's `compression.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicCompression {
    /// `producer` (Kafka's default): keep the producer's codec.
    Producer,
    /// `uncompressed` (`Compression::None`), `gzip`, `snappy`, `lz4`, `zstd`, with the topic's
    /// `compression.<codec>.level` if set.
    Codec {
        codec: Compression,
        level: Option<i32>,
    },
}

/// The topic configs the checks use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationConfig {
    /// `max.message.bytes`.
    pub max_message_bytes: i32,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    pub timestamp_after_max_ms: i64,
    /// `cleanup.policy` includes `compact`.
    pub compacted: bool,
    /// `compression.type`.
    pub compression: TopicCompression,
    /// `segment.bytes`.
    pub segment_bytes: i32,
    /// The most bytes a compressed batch may decompress to (kcoord's own bound).
    pub max_uncompressed_bytes: usize,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig {
            max_message_bytes: defaults::MAX_MESSAGE_BYTES,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: defaults::TIMESTAMP_BEFORE_MAX_MS,
            timestamp_after_max_ms: defaults::TIMESTAMP_AFTER_MAX_MS,
            compacted: false,
            compression: TopicCompression::Producer,
            segment_bytes: defaults::SEGMENT_BYTES,
            max_uncompressed_bytes: defaults::MAX_UNCOMPRESSED_BYTES,
        }
    }
}

/// Where the records are going, for the checks that depend on it and for Kafka's messages
/// (which name the partition as `topic-partition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceContext<'a> {
    /// The Produce request's version (3-13 in Kafka 4.4).
    pub api_version: i16,
    pub topic: &'a str,
    pub partition: i32,
}

/// A batch that passed, and what appending it takes.
///
/// The common case copies nothing: `bytes` is a slice of the request's records (without any
/// trailing partial batch) and only its 61-byte header changes on append; write
/// [`ValidatedBatch::leader_header`] followed by [`ValidatedBatch::body`]. When the batch had
/// to be rebuilt (rule 21 of the module docs) `bytes` is the new batch and `rebuilt` is set;
/// the same two calls apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedBatch {
    /// The header of `bytes`, as they are (not yet patched).
    pub header: BatchHeader,
    pub bytes: Bytes,
    /// `bytes` is a batch Kafka would have re-encoded, not the one received.
    pub rebuilt: bool,
    pub record_count: i32,
    /// What the stored header says after the patch: the topic's `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// What the stored header's max timestamp is after the patch: the log append time, or the
    /// largest record timestamp (-1 when none is larger).
    pub max_timestamp: i64,
    /// The offset delta of the first record whose timestamp is `max_timestamp`, as Kafka's
    /// `RecordBatch.offsetOfMaxTimestamp` finds it for ListOffsets MAX_TIMESTAMP; `None` when
    /// no record has it (every timestamp below -1).
    pub offset_delta_of_max_timestamp: Option<i32>,
    /// `Some(now)` for LogAppendTime topics (Kafka's `LogAppendInfo.logAppendTime`).
    pub log_append_time: Option<i64>,
    /// The patch changes the attributes or the max timestamp, so the CRC must be recomputed
    /// (which reads the body once).
    pub crc_changes: bool,
}

impl ValidatedBatch {
    /// The offset delta of the last record: `record_count - 1`.
    pub fn last_offset_delta(&self) -> i32 {
        self.header.last_offset_delta
    }

    /// Everything after the header, untouched on append.
    pub fn body(&self) -> Bytes {
        self.bytes.slice(HEADER_LEN.min(self.bytes.len())..)
    }

    /// The header to store, as Kafka's leader patches it in place: `setLastOffset` (the base
    /// offset becomes `base_offset`, the log end offset), `setPartitionLeaderEpoch`, and
    /// `setMaxTimestamp` (attributes and max timestamp, with a new CRC when they change).
    pub fn leader_header(&self, base_offset: i64, leader_epoch: i32) -> [u8; HEADER_LEN] {
        let mut h = self.header;
        h.base_offset = base_offset;
        h.partition_leader_epoch = leader_epoch;
        if self.crc_changes {
            h.attributes = rewritten_attributes(h.attributes, self.timestamp_type);
            h.max_timestamp = self.max_timestamp;
            let mut bytes = h.to_bytes();
            h.crc = compute_crc_parts(&bytes, &self.body()).unwrap_or(h.crc);
            bytes[17..21].copy_from_slice(&h.crc.to_be_bytes());
            return bytes;
        }
        h.to_bytes()
    }

    /// The whole batch to store, patched (a copy; prefer [`ValidatedBatch::leader_header`] and
    /// [`ValidatedBatch::body`]).
    pub fn to_leader_bytes(&self, base_offset: i64, leader_epoch: i32) -> BytesMut {
        let mut out = BytesMut::with_capacity(self.bytes.len());
        out.extend_from_slice(&self.leader_header(base_offset, leader_epoch));
        out.extend_from_slice(&self.body());
        out
    }
}

/// Kafka's `LegacyRecord.RECORD_OVERHEAD_V0`, the smallest length its batch iterator accepts.
const RECORD_OVERHEAD_V0: i32 = 14;
/// Kafka's `HEADER_SIZE_UP_TO_MAGIC`.
const HEADER_SIZE_UP_TO_MAGIC: usize = 17;

/// The next batch at `pos`, as Kafka's `ByteBufferLogInputStream.nextBatch` finds it: `None`
/// when the bytes end before a whole batch.
fn kafka_next_batch(records: &Bytes, pos: usize) -> Result<Option<Bytes>, ValidationError> {
    let rest = records.get(pos..).unwrap_or_default();
    let Some(len_bytes) = rest.get(8..LOG_OVERHEAD) else {
        return Ok(None);
    };
    let length = i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
    if length < RECORD_OVERHEAD_V0 {
        return Err(ValidationError::CorruptMessage(format!(
            "Record size {length} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})"
        )));
    }
    let Some(&magic) = rest.get(HEADER_SIZE_UP_TO_MAGIC - 1) else {
        return Ok(None);
    };
    let magic = magic as i8;
    if !(0..=2).contains(&magic) {
        return Err(ValidationError::CorruptMessage(format!(
            "Invalid magic found in record: {magic}"
        )));
    }
    // length >= 14, so this is positive and cannot overflow.
    let size = length as usize + LOG_OVERHEAD;
    if rest.len() < size {
        return Ok(None);
    }
    Ok(Some(records.slice(pos..pos + size)))
}

/// Kafka's `RequestUtils.hasTransactionalRecords` over a Produce request's partitions: whether
/// any partition's first batch is transactional. `KafkaApis.handleProduceRequest` asks this
/// before anything else; when true, the request needs a transactional id the client may write
/// to, else every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), no message.
///
/// An `Err` is an exception Kafka throws while looking: a first batch whose length is below 14
/// or whose magic is bad (CORRUPT_MESSAGE). Kafka then answers every partition of the request
/// with that code and the exception's text as ErrorMessage (`ApiError.fromThrowable`; use the
/// error's `Display`). So rule 1 of the module docs fails the whole request for a partition's
/// first batch, and only a partition's trailing bytes reach [`validate_produce`]'s rule 1.
pub fn has_transactional_records<'a>(
    partitions: impl IntoIterator<Item = &'a Bytes>,
) -> Result<bool, ValidationError> {
    for records in partitions {
        if let Some(batch) = kafka_next_batch(records, 0)? {
            let attributes = batch
                .get(21..23)
                .map_or(0, |a| u16::from_be_bytes([a[0], a[1]]));
            if batch.get(16) == Some(&2) && attributes & 0x10 != 0 {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Validates one partition's records from a Produce request for a leader append, as Kafka 4.4
/// does; see the module docs for every rule. `now_ms` is the broker's clock (Kafka's
/// `time.milliseconds()`), used for the timestamp bounds and as the log append time.
pub fn validate_produce(
    records: &Bytes,
    config: &ValidationConfig,
    context: &ProduceContext<'_>,
    now_ms: i64,
) -> Result<ValidatedBatch, ValidationError> {
    let tp = format!("{}-{}", context.topic, context.partition);
    let batch = single_batch(records, context.api_version)?;
    let (header, source) = analyze_and_validate(&batch, config, &tp)?;
    // LogValidator.validateBatch.
    validate_batch(&header, &tp)?;

    // LogValidator: which path.
    let (target, target_level) = match config.compression {
        TopicCompression::Producer => (source, None),
        TopicCompression::Codec { codec, level } => (codec, level),
    };
    let compressed_path = !(source == Compression::None && target == Compression::None);
    // Kafka's skipping iterator (and its record strings) when a compressed batch may stay as is.
    let partial_records = compressed_path && source == target;

    let data = decompressed(source, batch.slice(HEADER_LEN..), config, &tp)?;
    let scan = scan_records(&header, data.clone(), config, &tp, now_ms, partial_records)?;
    let log_append_time = (config.timestamp_type == TimestampType::LogAppendTime).then_some(now_ms);

    let rebuild = compressed_path && (source != target || !scan.offsets_in_order);
    if rebuild {
        return rebuild_batch(
            &header,
            &data,
            &scan,
            config,
            target,
            target_level,
            &tp,
            now_ms,
            log_append_time,
        );
    }
    patched_in_place(batch, header, &scan, config, &tp, log_append_time)
}

/// `ProduceRequest.validateRecords` (rules 1-5): the partition's one batch, without any
/// trailing bytes that are not a whole batch.
#[inline]
fn single_batch(records: &Bytes, version: i16) -> Result<Bytes, ValidationError> {
    let Some(batch) = kafka_next_batch(records, 0)? else {
        return Err(ValidationError::InvalidRecord(format!(
            "Produce requests with version {version} must have at least one record batch per partition"
        )));
    };
    if batch.get(16) != Some(&2) {
        return Err(ValidationError::InvalidRecord(format!(
            "Produce requests with version {version} are only allowed to contain record batches with magic version 2"
        )));
    }
    // A magic 2 batch that the iterator accepted has at least 26 bytes.
    let attributes = batch
        .get(21..23)
        .map_or(0, |a| u16::from_be_bytes([a[0], a[1]]));
    let compression_id = (attributes & 0x07) as u8;
    if version < 7 {
        match Compression::from_id(compression_id) {
            Some(Compression::Zstd) => {
                return Err(ValidationError::UnsupportedCompressionType(format!(
                    "Produce requests with version {version} are not allowed to use ZStandard compression"
                )))
            }
            Some(_) => {}
            None => {
                return Err(ValidationError::UnknownServerError {
                    message: format!("Unknown compression type id: {compression_id}"),
                    whole_request: true,
                })
            }
        }
    }
    if kafka_next_batch(records, batch.len())?.is_some() {
        return Err(ValidationError::InvalidRecord(format!(
            "Produce requests with version {version} are only allowed to contain exactly one record batch per partition"
        )));
    }
    Ok(batch)
}

/// `UnifiedLog.analyzeAndValidateRecords` (rules 6-9): the batch's header and codec.
#[inline]
fn analyze_and_validate(
    batch: &Bytes,
    config: &ValidationConfig,
    tp: &str,
) -> Result<(BatchHeader, Compression), ValidationError> {
    let base_offset = be_i64(batch, 0).unwrap_or(0);
    if base_offset != 0 {
        return Err(ValidationError::InvalidRecord(format!(
            "The baseOffset of the record batch in the append to {tp} should be 0, but it is {base_offset}"
        )));
    }
    if be_i32(batch, 23).is_none() {
        return Err(ValidationError::UnknownServerError {
            message: format!(
                "A record batch of {} bytes cannot hold its last offset delta",
                batch.len()
            ),
            whole_request: false,
        });
    }
    let size = batch.len();
    if size > usize::try_from(config.max_message_bytes).unwrap_or(0) {
        return Err(ValidationError::MessageTooLarge(format!(
            "The record batch size in the append to {tp} is {size} bytes which exceeds the maximum configured value of {}).",
            config.max_message_bytes
        )));
    }
    if !crc_is_valid(batch) {
        let stored = be_u32(batch, 17).unwrap_or(0);
        return Err(ValidationError::CorruptMessage(format!(
            "Record is corrupt (stored crc = {stored}) in topic partition {tp}."
        )));
    }
    let header =
        BatchHeader::parse(batch).map_err(|e| ValidationError::CorruptMessage(e.to_string()))?;
    let source = header
        .compression()
        .map_err(|e| ValidationError::UnknownServerError {
            message: e.to_string(),
            whole_request: false,
        })?;
    Ok((header, source))
}

/// The records of the batch (`payload`, what follows its header) as the `source` codec
/// decompresses them (rule 15).
#[inline]
fn decompressed(
    source: Compression,
    payload: Bytes,
    config: &ValidationConfig,
    tp: &str,
) -> Result<Bytes, ValidationError> {
    match source {
        Compression::None => Ok(payload),
        codec => match kcoord_record_batches::decompress(codec, &payload, config.max_uncompressed_bytes) {
            Ok(d) => Ok(Bytes::from(d)),
            Err(RecordsError::DecompressedTooLarge { limit, .. }) => {
                Err(ValidationError::MessageTooLarge(format!(
                    "The records of the record batch in the append to {tp} decompress to more than {limit} bytes"
                )))
            }
            Err(_) => Err(ValidationError::UnknownServerError {
                message: "Failed to decompress record stream".to_string(),
                whole_request: false,
            }),
        },
    }
}

/// Rule 20: the batch as sent, with what its header becomes on append.
#[inline]
fn patched_in_place(
    batch: Bytes,
    header: BatchHeader,
    scan: &Scan,
    config: &ValidationConfig,
    tp: &str,
    log_append_time: Option<i64>,
) -> Result<ValidatedBatch, ValidationError> {
    let max_timestamp = log_append_time.unwrap_or(scan.max_timestamp);
    let crc_changes =
        header.timestamp_type() != config.timestamp_type || header.max_timestamp != max_timestamp;
    // The record that the stored batch reports with its max timestamp.
    let offset_delta_of_max_timestamp = match (config.timestamp_type, header.timestamp_type()) {
        (TimestampType::LogAppendTime, _) => scan.first_offset_delta,
        (TimestampType::CreateTime, TimestampType::CreateTime) => {
            scan.max_at.map(|(delta, _)| delta)
        }
        (TimestampType::CreateTime, TimestampType::LogAppendTime) => scan.flipped_max_at,
    };
    check_segment_size(batch.len(), config, tp)?;
    Ok(ValidatedBatch {
        header,
        bytes: batch,
        rebuilt: false,
        record_count: header.record_count,
        timestamp_type: config.timestamp_type,
        max_timestamp,
        offset_delta_of_max_timestamp,
        log_append_time,
        crc_changes,
    })
}

/// `LogValidator.validateBatch` for a client's magic 2 batch.
fn validate_batch(h: &BatchHeader, tp: &str) -> Result<(), ValidationError> {
    let base = h.base_offset;
    let last = h.last_offset();
    let count_from_offsets = i64::from(h.last_offset_delta) + 1;
    if count_from_offsets <= 0 {
        return Err(ValidationError::InvalidRecord(format!(
            "Batch has an invalid offset range: [{base}, {last}] in topic partition {tp}"
        )));
    }
    let count = i64::from(h.record_count);
    if count <= 0 {
        return Err(ValidationError::InvalidRecord(format!(
            "Invalid reported count for record batch: {count} in topic partition {tp}"
        )));
    }
    if count_from_offsets != count {
        return Err(ValidationError::InvalidRecord(format!(
            "Inconsistent batch offset range [{base}, {last}] and count of records {count} in topic partition {tp}"
        )));
    }
    if h.is_control() {
        return Err(ValidationError::InvalidRecord(format!(
            "Clients are not allowed to write control records in topic partition {tp}"
        )));
    }
    if h.has_producer_id() && h.base_sequence < 0 {
        return Err(ValidationError::InvalidRecord(format!(
            "Invalid sequence number {} in record batch with producerId {} in topic partition {tp}",
            h.base_sequence, h.producer_id
        )));
    }
    Ok(())
}

fn check_segment_size(
    size: usize,
    config: &ValidationConfig,
    tp: &str,
) -> Result<(), ValidationError> {
    if size > usize::try_from(config.segment_bytes).unwrap_or(0) {
        return Err(ValidationError::RecordListTooLarge(format!(
            "Message batch size is {size} bytes in append to partition {tp}, which exceeds the maximum configured segment size of {}.",
            config.segment_bytes
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_record_batches::{
        set_partition_leader_epoch, verify_crc, write_crc, BatchBuilder, BatchOptions, RecordBatch,
    };

    const NOW: i64 = 1_700_000_000_000;

    fn ctx(api_version: i16) -> ProduceContext<'static> {
        ProduceContext {
            api_version,
            topic: "t",
            partition: 0,
        }
    }

    fn options() -> BatchOptions {
        BatchOptions::default()
    }

    /// `(timestamp, key, value)`.
    type TestRecord<'a> = (i64, Option<&'a [u8]>, Option<&'a [u8]>);

    /// A batch of these records at offset deltas 0, 1, ...
    fn batch_with(options: BatchOptions, records: &[TestRecord<'_>]) -> Vec<u8> {
        let mut b = BatchBuilder::new(options);
        for (ts, k, v) in records {
            b.push(*ts, *k, *v, &[]).unwrap();
        }
        b.build().unwrap().to_vec()
    }

    fn simple(n: usize) -> Vec<u8> {
        let records: Vec<_> = (0..n)
            .map(|i| (NOW + i as i64, Some(&b"key"[..]), Some(&b"value"[..])))
            .collect();
        batch_with(options(), &records)
    }

    fn validate(
        bytes: &[u8],
        config: &ValidationConfig,
    ) -> Result<ValidatedBatch, ValidationError> {
        validate_produce(&Bytes::copy_from_slice(bytes), config, &ctx(11), NOW)
    }

    fn validate_default(bytes: &[u8]) -> Result<ValidatedBatch, ValidationError> {
        validate(bytes, &ValidationConfig::default())
    }

    /// Edits header bytes and puts a valid CRC back.
    fn edit(mut bytes: Vec<u8>, at: usize, value: &[u8]) -> Vec<u8> {
        bytes[at..at + value.len()].copy_from_slice(value);
        write_crc(&mut bytes).unwrap();
        bytes
    }

    fn assert_error(result: Result<ValidatedBatch, ValidationError>, code: i16, text: &str) {
        let err = result.unwrap_err();
        assert_eq!(err.error_code(), code, "{err}");
        assert_eq!(err.to_string(), text);
        assert_eq!(err.message(), None, "only per-record errors send a message");
        assert!(err.record_errors().is_empty());
    }

    #[test]
    fn a_good_batch_is_kept_as_sent() {
        let input = Bytes::from(simple(3));
        let v = validate_produce(&input, &ValidationConfig::default(), &ctx(11), NOW).unwrap();
        assert_eq!(v.bytes.as_ptr(), input.as_ptr(), "no copy");
        assert_eq!(v.bytes.len(), input.len());
        assert!(!v.rebuilt && !v.crc_changes);
        assert_eq!(
            (v.record_count, v.last_offset_delta(), v.max_timestamp),
            (3, 2, NOW + 2)
        );
        assert_eq!(
            (
                v.timestamp_type,
                v.log_append_time,
                v.offset_delta_of_max_timestamp
            ),
            (TimestampType::CreateTime, None, Some(2))
        );
        let stored = v.to_leader_bytes(1000, 7);
        verify_crc(&stored).unwrap();
        let h = BatchHeader::parse(&stored).unwrap();
        assert_eq!(
            (h.base_offset, h.last_offset(), h.partition_leader_epoch),
            (1000, 1002, 7)
        );
        assert_eq!(&stored[HEADER_LEN..], &v.body()[..]);
    }

    #[test]
    fn iterator_checks_lengths_and_magic() {
        let good = simple(1);
        let short = edit(good.clone(), 8, &13i32.to_be_bytes());
        assert_error(
            validate_default(&short),
            codes::CORRUPT_MESSAGE,
            "Record size 13 is less than the minimum record overhead (14)",
        );
        for magic in [3u8, 0xff] {
            let bad = edit(good.clone(), 16, &[magic]);
            let text = format!("Invalid magic found in record: {}", magic as i8);
            assert_error(validate_default(&bad), codes::CORRUPT_MESSAGE, &text);
        }
        let none =
            "Produce requests with version 11 must have at least one record batch per partition";
        assert_error(validate_default(&[]), codes::INVALID_RECORD, none);
        assert_error(validate_default(&good[..11]), codes::INVALID_RECORD, none);
        assert_error(
            validate_default(&good[..good.len() - 1]),
            codes::INVALID_RECORD,
            none,
        );
        // 12 to 16 bytes: the length is checked, the magic is not there yet.
        assert_error(
            validate_default(&short[..12]),
            codes::CORRUPT_MESSAGE,
            "Record size 13 is less than the minimum record overhead (14)",
        );
        assert_error(validate_default(&good[..16]), codes::INVALID_RECORD, none);
    }

    #[test]
    fn only_magic_2() {
        for magic in [0u8, 1] {
            let old = edit(simple(1), 16, &[magic]);
            assert_error(
                validate_default(&old),
                codes::INVALID_RECORD,
                "Produce requests with version 11 are only allowed to contain record batches with magic version 2",
            );
        }
    }

    #[test]
    fn zstd_needs_produce_v7_and_unknown_codecs_fail() {
        let zstd = batch_with(
            BatchOptions {
                compression: Compression::Zstd,
                ..options()
            },
            &[(NOW, Some(b"k"), Some(b"v"))],
        );
        for v in 3..=6 {
            let err = validate_produce(
                &Bytes::from(zstd.clone()),
                &ValidationConfig::default(),
                &ctx(v),
                NOW,
            )
            .unwrap_err();
            assert_eq!(err.error_code(), codes::UNSUPPORTED_COMPRESSION_TYPE);
            assert_eq!(err.to_string(), format!("Produce requests with version {v} are not allowed to use ZStandard compression"));
            assert_eq!(err.message(), None);
        }
        assert!(validate_produce(
            &Bytes::from(zstd.clone()),
            &ValidationConfig::default(),
            &ctx(7),
            NOW
        )
        .is_ok());
        let mut unknown = zstd.clone();
        unknown[22] = (unknown[22] & !7) | 6;
        write_crc(&mut unknown).unwrap();
        let old = validate_produce(
            &Bytes::from(unknown.clone()),
            &ValidationConfig::default(),
            &ctx(6),
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            (old.error_code(), old.fails_whole_request()),
            (codes::UNKNOWN_SERVER_ERROR, true)
        );
        assert_eq!(old.to_string(), "Unknown compression type id: 6");
        let new = validate_produce(
            &Bytes::from(unknown),
            &ValidationConfig::default(),
            &ctx(13),
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            (new.error_code(), new.fails_whole_request()),
            (codes::UNKNOWN_SERVER_ERROR, false)
        );
        assert_eq!(new.to_string(), "Unknown compression type id: 6");
    }

    #[test]
    fn exactly_one_batch_and_partial_tails_dropped() {
        let a = simple(2);
        let two = [a.clone(), a.clone()].concat();
        assert_error(
            validate_default(&two),
            codes::INVALID_RECORD,
            "Produce requests with version 11 are only allowed to contain exactly one record batch per partition",
        );
        // An incomplete second batch is cut off, as trimInvalidBytes does.
        for cut in [1, 11, 12, 17, a.len() - 1] {
            let input = Bytes::from([&a[..], &a[..cut]].concat());
            let v = validate_produce(&input, &ValidationConfig::default(), &ctx(11), NOW).unwrap();
            assert_eq!(v.bytes, &a[..], "tail of {cut}");
        }
        // ... unless its length or magic is bad.
        let mut tail = [0u8; 12];
        tail[8..12].copy_from_slice(&5i32.to_be_bytes());
        assert_error(
            validate_default(&[&a[..], &tail[..]].concat()),
            codes::CORRUPT_MESSAGE,
            "Record size 5 is less than the minimum record overhead (14)",
        );
        let mut tail = a[..20].to_vec();
        tail[16] = 9;
        assert_error(
            validate_default(&[&a[..], &tail[..]].concat()),
            codes::CORRUPT_MESSAGE,
            "Invalid magic found in record: 9",
        );
    }

    #[test]
    fn base_offset_must_be_zero() {
        let moved = edit(simple(1), 0, &5i64.to_be_bytes());
        assert_error(
            validate_default(&moved),
            codes::INVALID_RECORD,
            "The baseOffset of the record batch in the append to t-0 should be 0, but it is 5",
        );
    }

    #[test]
    fn max_message_bytes_counts_the_whole_batch() {
        let b = simple(4);
        let size = b.len() as i32;
        let at = |max| ValidationConfig {
            max_message_bytes: max,
            ..ValidationConfig::default()
        };
        assert!(validate(&b, &at(size)).is_ok());
        assert_error(
            validate(&b, &at(size - 1)),
            codes::MESSAGE_TOO_LARGE,
            &format!("The record batch size in the append to t-0 is {size} bytes which exceeds the maximum configured value of {}).", size - 1),
        );
    }

    #[test]
    fn crc_and_short_batches() {
        let mut b = simple(2);
        let stored = u32::from_be_bytes(b[17..21].try_into().unwrap());
        let last = b.len() - 1;
        b[last] ^= 0x40;
        assert_error(
            validate_default(&b),
            codes::CORRUPT_MESSAGE,
            &format!("Record is corrupt (stored crc = {stored}) in topic partition t-0."),
        );
        // The leader epoch is not covered by the CRC: a client may send any.
        let mut epoch = simple(2);
        set_partition_leader_epoch(&mut epoch, 77).unwrap();
        assert!(validate_default(&epoch).is_ok());
        // Magic 2 batches shorter than the header: corrupt from 27 bytes, an exception below.
        let mut short = simple(1)[..40].to_vec();
        short[8..12].copy_from_slice(&28i32.to_be_bytes());
        let stored = u32::from_be_bytes(short[17..21].try_into().unwrap());
        assert_error(
            validate_default(&short),
            codes::CORRUPT_MESSAGE,
            &format!("Record is corrupt (stored crc = {stored}) in topic partition t-0."),
        );
        let mut tiny = simple(1)[..26].to_vec();
        tiny[8..12].copy_from_slice(&14i32.to_be_bytes());
        assert_eq!(
            validate_default(&tiny).unwrap_err().error_code(),
            codes::UNKNOWN_SERVER_ERROR
        );
    }

    #[test]
    fn batch_level_rules() {
        let b = simple(3);
        let cases: Vec<(Vec<u8>, String)> = vec![
            (edit(b.clone(), 23, &(-1i32).to_be_bytes()), "Batch has an invalid offset range: [0, -1] in topic partition t-0".into()),
            (edit(b.clone(), 23, &i32::MIN.to_be_bytes()), format!("Batch has an invalid offset range: [0, {}] in topic partition t-0", i32::MIN)),
            (
                edit(edit(b.clone(), 57, &0i32.to_be_bytes()), 23, &0i32.to_be_bytes()),
                "Invalid reported count for record batch: 0 in topic partition t-0".into(),
            ),
            (edit(b.clone(), 57, &(-4i32).to_be_bytes()), "Invalid reported count for record batch: -4 in topic partition t-0".into()),
            (edit(b.clone(), 57, &2i32.to_be_bytes()), "Inconsistent batch offset range [0, 2] and count of records 2 in topic partition t-0".into()),
            (edit(b.clone(), 21, &0x0020u16.to_be_bytes()), "Clients are not allowed to write control records in topic partition t-0".into()),
            (
                edit(edit(b.clone(), 43, &5i64.to_be_bytes()), 53, &(-1i32).to_be_bytes()),
                "Invalid sequence number -1 in record batch with producerId 5 in topic partition t-0".into(),
            ),
        ];
        for (bytes, text) in cases {
            assert_error(validate_default(&bytes), codes::INVALID_RECORD, &text);
        }
        // An idempotent batch with a sequence, and a transactional one, pass.
        let idempotent = batch_with(
            BatchOptions {
                producer_id: 5,
                producer_epoch: 0,
                base_sequence: 0,
                ..options()
            },
            &[(NOW, Some(b"k"), None)],
        );
        assert!(validate_default(&idempotent).is_ok());
        let txn = batch_with(
            BatchOptions {
                producer_id: 5,
                producer_epoch: 0,
                base_sequence: 0,
                transactional: true,
                ..options()
            },
            &[(NOW, Some(b"k"), None)],
        );
        assert!(validate_default(&txn).is_ok());
        // A producer id of -1 needs no sequence.
        assert!(validate_default(&edit(b, 53, &(-7i32).to_be_bytes())).is_ok());
    }

    #[test]
    fn records_must_match_the_count() {
        // Count 4 and last offset delta 3 for 3 records.
        let more = edit(
            edit(simple(3), 57, &4i32.to_be_bytes()),
            23,
            &3i32.to_be_bytes(),
        );
        assert_error(
            validate_default(&more),
            codes::INVALID_RECORD,
            "Incorrect declared batch size, premature EOF reached",
        );
        let fewer = edit(
            edit(simple(3), 57, &2i32.to_be_bytes()),
            23,
            &1i32.to_be_bytes(),
        );
        assert_error(
            validate_default(&fewer),
            codes::INVALID_RECORD,
            "Incorrect declared batch size, records still remaining in file",
        );
        for codec in [Compression::Gzip, Compression::Lz4] {
            let b = batch_with(
                BatchOptions {
                    compression: codec,
                    ..options()
                },
                &[(NOW, None, None), (NOW, None, None)],
            );
            let more = edit(edit(b, 57, &3i32.to_be_bytes()), 23, &2i32.to_be_bytes());
            assert_error(
                validate_default(&more),
                codes::INVALID_RECORD,
                "Incorrect declared batch size, premature EOF reached",
            );
        }
        // A record whose length runs past the batch.
        let mut bad = simple(1);
        bad[61] = 0x7e;
        write_crc(&mut bad).unwrap();
        assert_eq!(
            validate_default(&bad).unwrap_err().error_code(),
            codes::INVALID_RECORD
        );
    }

    #[test]
    fn compacted_topics_need_keys() {
        let config = ValidationConfig {
            compacted: true,
            ..ValidationConfig::default()
        };
        let keyed = batch_with(
            options(),
            &[(NOW, Some(b"a"), Some(b"1")), (NOW, Some(b"b"), None)],
        );
        assert!(validate(&keyed, &config).is_ok());
        let missing = batch_with(
            options(),
            &[
                (NOW, Some(b"a"), None),
                (NOW, None, Some(b"x")),
                (NOW, Some(b"b"), None),
                (NOW, None, None),
                (NOW, None, None),
                (NOW, None, None),
            ],
        );
        let err = validate(&missing, &config).unwrap_err();
        assert_eq!(err.error_code(), codes::INVALID_RECORD);
        let m = "Compacted topic cannot accept message without key in topic partition t-0";
        assert_eq!(
            err.message().unwrap(),
            format!(
                "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=1, message='{m}'), RecordError(batchIndex=3, message='{m}'), RecordError(batchIndex=4, message='{m}')]"
            )
        );
        let indexes: Vec<i32> = err.record_errors().iter().map(|e| e.0).collect();
        assert_eq!(indexes, vec![1, 3, 4, 5]);
        assert!(err
            .record_errors()
            .iter()
            .all(|e| e.1.as_deref() == Some(m)));
        // The same in a compressed batch.
        let gz = batch_with(
            BatchOptions {
                compression: Compression::Snappy,
                ..options()
            },
            &[(NOW, None, Some(b"x"))],
        );
        let err = validate(&gz, &config).unwrap_err();
        assert_eq!(
            (err.error_code(), err.record_errors()),
            (codes::INVALID_RECORD, vec![(0, Some(m.to_string()))])
        );
    }

    #[test]
    fn create_time_bounds() {
        let config = ValidationConfig {
            timestamp_before_max_ms: 1000,
            timestamp_after_max_ms: 500,
            ..ValidationConfig::default()
        };
        let ok = batch_with(
            options(),
            &[
                (NOW - 1000, None, None),
                (NOW + 500, None, None),
                (-1, None, None),
            ],
        );
        assert!(validate(&ok, &config).is_ok());
        let bad = batch_with(
            options(),
            &[
                (NOW - 1001, None, None),
                (NOW, None, None),
                (NOW + 501, None, None),
            ],
        );
        let err = validate(&bad, &config).unwrap_err();
        assert_eq!(err.error_code(), codes::INVALID_TIMESTAMP);
        assert_eq!(
            err.message().as_deref(),
            Some("One or more records have been rejected due to invalid timestamp")
        );
        let range = format!("[{}, {}]", NOW - 1000, NOW + 500);
        assert_eq!(
            err.record_errors(),
            vec![
                (0, Some(format!("Timestamp {} of message with offset 0 is out of range. The timestamp should be within {range}", NOW - 1001))),
                (2, Some(format!("Timestamp {} of message with offset 2 is out of range. The timestamp should be within {range}", NOW + 501))),
            ]
        );
        // Kafka 4's defaults: any past timestamp, at most an hour ahead.
        let defaults = ValidationConfig::default();
        assert!(validate(
            &batch_with(options(), &[(0, None, None), (NOW + 3_600_000, None, None)]),
            &defaults
        )
        .is_ok());
        let err = validate(
            &batch_with(options(), &[(NOW + 3_600_001, None, None)]),
            &defaults,
        )
        .unwrap_err();
        assert_eq!(
            err.record_errors()[0].1.as_deref(),
            Some(&*format!(
                "Timestamp {} of message with offset 0 is out of range. The timestamp should be within [{}, {}]",
                NOW + 3_600_001,
                NOW.wrapping_sub(i64::MAX),
                NOW + 3_600_000
            ))
        );
        // Key and timestamp errors together: INVALID_TIMESTAMP with both.
        let mixed = batch_with(
            options(),
            &[(NOW, None, None), (NOW + 3_600_001, Some(b"k"), None)],
        );
        let err = validate(
            &mixed,
            &ValidationConfig {
                compacted: true,
                ..ValidationConfig::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.error_code(), codes::INVALID_TIMESTAMP);
        assert_eq!(
            err.record_errors().iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![0, 1]
        );
        // A wrong max timestamp in the header is corrected, with a new CRC.
        let mut wrong = simple(2);
        wrong[35..43].copy_from_slice(&5i64.to_be_bytes());
        write_crc(&mut wrong).unwrap();
        let v = validate_default(&wrong).unwrap();
        assert!(v.crc_changes);
        assert_eq!(v.max_timestamp, NOW + 1);
        let stored = v.to_leader_bytes(0, 0);
        verify_crc(&stored).unwrap();
        assert_eq!(BatchHeader::parse(&stored).unwrap().max_timestamp, NOW + 1);
    }

    #[test]
    fn producers_must_not_send_log_append_time() {
        let lat = |codec| {
            batch_with(
                BatchOptions {
                    compression: codec,
                    timestamp_type: TimestampType::LogAppendTime,
                    log_append_time: NOW - 5,
                    ..options()
                },
                &[(NOW, Some(b"key"), None), (NOW, None, Some(b"ab"))],
            )
        };
        let config = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..ValidationConfig::default()
        };
        let tail = ". Producer should not set timestamp type to LogAppendTime.";
        let err = validate(&lat(Compression::None), &config).unwrap_err();
        assert_eq!(err.error_code(), codes::INVALID_TIMESTAMP);
        assert_eq!(
            err.record_errors(),
            vec![
                (0, Some(format!("Invalid timestamp type in message DefaultRecord(offset=0, timestamp={}, key=3 bytes, value=0 bytes){tail}", NOW - 5))),
                (1, Some(format!("Invalid timestamp type in message DefaultRecord(offset=1, timestamp={}, key=0 bytes, value=2 bytes){tail}", NOW - 5))),
            ]
        );
        // Compressed and kept in place: Kafka's skipping iterator prints -1 for null.
        let err = validate(&lat(Compression::Gzip), &config).unwrap_err();
        assert_eq!(
            err.record_errors()[0].1.as_deref(),
            Some(&*format!("Invalid timestamp type in message PartialDefaultRecord(offset=0, timestamp={}, key=3 bytes, value=-1 bytes){tail}", NOW - 5))
        );
        // On a CreateTime topic the batch's timestamp is range-checked instead, and the stored
        // header says CreateTime (Kafka's setMaxTimestamp flips the bit).
        let v = validate(&lat(Compression::None), &ValidationConfig::default()).unwrap();
        assert!(v.crc_changes);
        assert_eq!(
            (v.timestamp_type, v.max_timestamp),
            (TimestampType::CreateTime, NOW - 5)
        );
        let stored = v.to_leader_bytes(0, 0);
        verify_crc(&stored).unwrap();
        assert_eq!(
            BatchHeader::parse(&stored).unwrap().timestamp_type(),
            TimestampType::CreateTime
        );
        // Now the records' own timestamps show, none of them NOW - 5.
        assert_eq!(v.offset_delta_of_max_timestamp, None);
    }

    #[test]
    fn log_append_time_topics() {
        let config = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..ValidationConfig::default()
        };
        for codec in [Compression::None, Compression::Lz4] {
            let b = batch_with(
                BatchOptions {
                    compression: codec,
                    ..options()
                },
                &[(5, None, None), (NOW + 9_999_999, None, None)],
            );
            let v = validate(&b, &config).unwrap();
            assert!(!v.rebuilt && v.crc_changes);
            assert_eq!(
                (
                    v.log_append_time,
                    v.max_timestamp,
                    v.offset_delta_of_max_timestamp
                ),
                (Some(NOW), NOW, Some(0))
            );
            let stored = v.to_leader_bytes(50, 3);
            verify_crc(&stored).unwrap();
            let batch = RecordBatch::parse(stored.freeze()).unwrap();
            let h = *batch.header();
            assert_eq!(
                (
                    h.timestamp_type(),
                    h.max_timestamp,
                    h.base_offset,
                    h.partition_leader_epoch
                ),
                (TimestampType::LogAppendTime, NOW, 50, 3)
            );
            assert!(batch
                .decode_records(1 << 20)
                .unwrap()
                .iter()
                .all(|r| r.timestamp(&h) == NOW));
        }
    }

    #[test]
    fn offset_of_max_timestamp() {
        let b = batch_with(
            options(),
            &[
                (NOW + 5, None, None),
                (NOW + 9, None, None),
                (NOW + 9, None, None),
                (NOW + 3, None, None),
            ],
        );
        let v = validate_default(&b).unwrap();
        assert_eq!(
            (v.max_timestamp, v.offset_delta_of_max_timestamp),
            (NOW + 9, Some(1))
        );
        let none = batch_with(options(), &[(-1, None, None), (-1, None, None)]);
        let v = validate_default(&none).unwrap();
        assert_eq!(
            (v.max_timestamp, v.offset_delta_of_max_timestamp),
            (-1, Some(0))
        );
    }

    /// A batch whose record offset deltas are 0, 2 but whose header says 2 records, deltas 0-1.
    fn gapped(codec: Compression) -> Vec<u8> {
        let mut b = BatchBuilder::new(BatchOptions {
            compression: codec,
            producer_id: 8,
            producer_epoch: 1,
            base_sequence: 4,
            ..options()
        });
        b.append(0, NOW, Some(b"a"), Some(b"1"), &[]).unwrap();
        b.append(2, NOW + 1, Some(b"b"), Some(b"2"), &[]).unwrap();
        edit(b.build().unwrap().to_vec(), 23, &1i32.to_be_bytes())
    }

    #[test]
    fn compressed_batches_with_gaps_are_rebuilt() {
        let v = validate_default(&gapped(Compression::Zstd)).unwrap();
        assert!(v.rebuilt);
        let batch = RecordBatch::parse(v.bytes.clone()).unwrap();
        let h = *batch.header();
        assert_eq!(h.compression(), Ok(Compression::Zstd));
        assert_eq!(
            (
                h.producer_id,
                h.producer_epoch,
                h.base_sequence,
                h.record_count,
                h.last_offset_delta
            ),
            (8, 1, 4, 2, 1)
        );
        let records = batch.decode_records(1 << 20).unwrap();
        assert_eq!(
            records
                .iter()
                .map(|r| (r.offset_delta, r.timestamp(&h)))
                .collect::<Vec<_>>(),
            vec![(0, NOW), (1, NOW + 1)]
        );
        assert_eq!(
            (v.max_timestamp, v.offset_delta_of_max_timestamp),
            (NOW + 1, Some(1))
        );
        verify_crc(&v.to_leader_bytes(9, 9)).unwrap();
        // Uncompressed, Kafka keeps the gaps.
        let v = validate_default(&gapped(Compression::None)).unwrap();
        assert!(!v.rebuilt);
    }

    #[test]
    fn topic_compression_rebuilds() {
        let b = simple(5);
        let gzip = ValidationConfig {
            compression: TopicCompression::Codec {
                codec: Compression::Gzip,
                level: Some(1),
            },
            ..ValidationConfig::default()
        };
        let v = validate(&b, &gzip).unwrap();
        assert!(v.rebuilt);
        assert_eq!(v.header.compression(), Ok(Compression::Gzip));
        let records = RecordBatch::parse(v.bytes.clone())
            .unwrap()
            .decode_records(1 << 20)
            .unwrap();
        assert_eq!(
            records,
            RecordBatch::parse(Bytes::from(b.clone()))
                .unwrap()
                .decode_records(1 << 20)
                .unwrap()
        );
        // The same codec as the producer's: kept as sent.
        let snappy = batch_with(
            BatchOptions {
                compression: Compression::Snappy,
                ..options()
            },
            &[(NOW, None, None)],
        );
        let same = ValidationConfig {
            compression: TopicCompression::Codec {
                codec: Compression::Snappy,
                level: None,
            },
            ..ValidationConfig::default()
        };
        assert!(!validate(&snappy, &same).unwrap().rebuilt);
        let plain = ValidationConfig {
            compression: TopicCompression::Codec {
                codec: Compression::None,
                level: None,
            },
            ..ValidationConfig::default()
        };
        let v = validate(&snappy, &plain).unwrap();
        assert!(v.rebuilt);
        assert_eq!(v.header.compression(), Ok(Compression::None));
        // A rebuilt batch over max.message.bytes: incompressible data grows under gzip.
        let mut x: u32 = 12345;
        let noise: Vec<u8> = (0..4000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let big = batch_with(options(), &[(NOW, None, Some(&noise))]);
        let limit = big.len() as i32;
        let tight = ValidationConfig {
            max_message_bytes: limit,
            ..gzip
        };
        let err = validate(&big, &tight).unwrap_err();
        assert_eq!(err.error_code(), codes::MESSAGE_TOO_LARGE);
        assert!(
            err.to_string().starts_with("Message batch size is "),
            "{err}"
        );
        assert!(err.to_string().ends_with(&format!(" bytes in append to partition t-0 which exceeds the maximum configured size of {limit}.")));
        assert_eq!(err.message(), None);
    }

    #[test]
    fn segment_size() {
        let b = simple(3);
        let config = ValidationConfig {
            segment_bytes: b.len() as i32 - 1,
            ..ValidationConfig::default()
        };
        assert_error(
            validate(&b, &config),
            codes::RECORD_LIST_TOO_LARGE,
            &format!("Message batch size is {} bytes in append to partition t-0, which exceeds the maximum configured segment size of {}.", b.len(), b.len() - 1),
        );
    }

    #[test]
    fn broken_and_huge_compressed_payloads() {
        let b = batch_with(
            BatchOptions {
                compression: Compression::Gzip,
                ..options()
            },
            &[(NOW, None, Some(&[0u8; 5000][..]))],
        );
        let mut broken = b.clone();
        let mid = 61 + (broken.len() - 61) / 2;
        broken.truncate(mid);
        let length = (broken.len() - 12) as i32;
        broken[8..12].copy_from_slice(&length.to_be_bytes());
        write_crc(&mut broken).unwrap();
        assert_error(
            validate_default(&broken),
            codes::UNKNOWN_SERVER_ERROR,
            "Failed to decompress record stream",
        );
        let small = ValidationConfig {
            max_uncompressed_bytes: 1000,
            ..ValidationConfig::default()
        };
        let err = validate(&b, &small).unwrap_err();
        assert_eq!(
            (err.error_code(), err.message()),
            (codes::MESSAGE_TOO_LARGE, None)
        );
    }

    #[test]
    fn transactional_requests() {
        let plain = Bytes::from(simple(1));
        let txn = Bytes::from(batch_with(
            BatchOptions {
                producer_id: 1,
                producer_epoch: 0,
                base_sequence: 0,
                transactional: true,
                ..options()
            },
            &[(NOW, None, None)],
        ));
        assert_eq!(has_transactional_records([&plain]), Ok(false));
        assert_eq!(has_transactional_records([&plain, &txn]), Ok(true));
        assert_eq!(has_transactional_records([&Bytes::new()]), Ok(false));
        let corrupt = Bytes::from(edit(simple(1), 8, &3i32.to_be_bytes()));
        assert_eq!(
            has_transactional_records([&corrupt])
                .unwrap_err()
                .error_code(),
            codes::CORRUPT_MESSAGE
        );
    }

    #[test]
    fn record_error_display_is_kafkas() {
        let e = RecordError {
            batch_index: 2,
            message: None,
        };
        assert_eq!(e.to_string(), "RecordError(batchIndex=2, message=null)");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), version in 3i16..14) {
            let _ = validate_produce(&Bytes::from(bytes), &ValidationConfig::default(), &ctx(version), NOW);
        }

        #[test]
        fn mutated_batches_never_panic(
            codec in proptest::sample::select(vec![Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]),
            flips in proptest::collection::vec((proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()), 1..5),
            fix_crc in proptest::prelude::any::<bool>(),
        ) {
            let mut b = batch_with(BatchOptions { compression: codec, ..options() }, &[(NOW, Some(b"k"), Some(b"value")), (NOW, None, None)]);
            for (at, x) in flips {
                let i = at % b.len();
                b[i] ^= x;
            }
            if fix_crc && b.len() >= HEADER_LEN {
                let _ = write_crc(&mut b);
            }
            let config = ValidationConfig { compacted: true, ..ValidationConfig::default() };
            if let Ok(v) = validate(&b, &config) {
                let _ = v.to_leader_bytes(1, 1);
            }
        }
    }
}
