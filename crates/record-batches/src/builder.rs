//! Encoding records into a batch (what Kafka's `MemoryRecordsBuilder` does for magic 2).

use bytes::{BufMut, Bytes, BytesMut};

use crate::header::{attributes, BatchHeader, HEADER_LEN, LOG_OVERHEAD, MAGIC};
use crate::record::encode_record;
use crate::{
    compression, Compression, Record, RecordHeader, RecordsError, TimestampType,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};

/// The header fields of a batch to build. `Default` is an uncompressed CreateTime batch at base
/// offset 0 without a producer, as a plain (non-idempotent) producer would send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub compression: Compression,
    /// Kafka's level for the codec (checked as Kafka checks it); `None` is Kafka's default.
    pub compression_level: Option<i32>,
    pub timestamp_type: TimestampType,
    /// For LogAppendTime batches: the max timestamp written in the header.
    pub log_append_time: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub transactional: bool,
    pub control: bool,
    /// Sets attribute bit 6 and makes this the base timestamp (record timestamp deltas are then
    /// relative to it), as compaction does. Must be non-negative.
    pub delete_horizon_ms: Option<i64>,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            compression: Compression::None,
            compression_level: None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: NO_TIMESTAMP,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            delete_horizon_ms: None,
        }
    }
}

/// Builds one batch. Records are appended with offset deltas that must strictly increase (they
/// need not be contiguous: compacted batches keep their records' original offsets), and with
/// absolute timestamps (`-1` for none).
///
/// The header is Kafka's: base timestamp = the delete horizon if set, else the first record's
/// timestamp (-1 for an empty batch); max timestamp = the LogAppendTime, else the largest record
/// timestamp (-1 if none), unless overridden; last offset delta = the last record's, unless
/// overridden (compaction keeps the original, so that the producer's last sequence survives).
///
/// An empty batch (only useful with overrides, as compaction keeps the header of a batch whose
/// records were all removed) is written uncompressed with no payload, as Kafka's
/// `writeEmptyHeader` writes it.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    options: BatchOptions,
    records: Vec<u8>,
    count: i32,
    last_offset_delta: Option<i32>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    override_last_offset_delta: Option<i32>,
    override_max_timestamp: Option<i64>,
}

impl BatchBuilder {
    pub fn new(options: BatchOptions) -> BatchBuilder {
        BatchBuilder {
            base_timestamp: options.delete_horizon_ms,
            options,
            records: Vec::new(),
            count: 0,
            last_offset_delta: None,
            max_timestamp: NO_TIMESTAMP,
            override_last_offset_delta: None,
            override_max_timestamp: None,
        }
    }

    pub fn options(&self) -> &BatchOptions {
        &self.options
    }

    /// Records appended so far.
    pub fn record_count(&self) -> i32 {
        self.count
    }

    /// Uncompressed bytes of the records appended so far.
    pub fn records_len(&self) -> usize {
        self.records.len()
    }

    /// The delta the next [`BatchBuilder::push`] uses.
    pub fn next_offset_delta(&self) -> Result<i32, RecordsError> {
        match self.last_offset_delta {
            None => Ok(0),
            Some(d) => d
                .checked_add(1)
                .ok_or_else(|| RecordsError::InvalidArgument("offset delta overflow".to_string())),
        }
    }

    /// Appends a record at the next offset delta.
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[RecordHeader],
    ) -> Result<i32, RecordsError> {
        let delta = self.next_offset_delta()?;
        self.append(delta, timestamp, key, value, headers)?;
        Ok(delta)
    }

    /// Appends a record at `offset_delta`, which must be greater than the last one's.
    pub fn append(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[RecordHeader],
    ) -> Result<(), RecordsError> {
        if let Some(last) = self.last_offset_delta {
            if offset_delta <= last {
                return Err(RecordsError::InvalidArgument(format!(
                    "Illegal offset {} following previous offset {} (Offsets must increase monotonically).",
                    self.options.base_offset.wrapping_add(i64::from(offset_delta)),
                    self.options.base_offset.wrapping_add(i64::from(last)),
                )));
            }
        } else if offset_delta < 0 {
            return Err(RecordsError::InvalidArgument(format!(
                "Illegal negative offset delta {offset_delta}"
            )));
        }
        if timestamp < 0 && timestamp != NO_TIMESTAMP {
            return Err(RecordsError::InvalidArgument(format!(
                "Invalid negative timestamp {timestamp}"
            )));
        }
        if self.count == i32::MAX {
            return Err(RecordsError::InvalidArgument(format!(
                "Maximum number of records per batch exceeded, max records: {}",
                i32::MAX
            )));
        }
        let base = *self.base_timestamp.get_or_insert(timestamp);
        encode_record(
            &mut self.records,
            offset_delta,
            timestamp.wrapping_sub(base),
            key,
            value,
            headers,
        )?;
        self.count += 1;
        self.last_offset_delta = Some(offset_delta);
        if timestamp > self.max_timestamp {
            self.max_timestamp = timestamp;
        }
        Ok(())
    }

    /// Appends a decoded record, keeping its offset delta, at `timestamp` (for a record of
    /// another batch: [`Record::timestamp`] of that batch's header).
    pub fn append_record(&mut self, record: &Record, timestamp: i64) -> Result<(), RecordsError> {
        self.append(
            record.offset_delta,
            timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        )
    }

    /// Writes this last offset delta instead of the last record's (Kafka's
    /// `overrideLastOffset`). It must not be below the last record's.
    pub fn override_last_offset_delta(&mut self, last_offset_delta: i32) {
        self.override_last_offset_delta = Some(last_offset_delta);
    }

    /// Writes this max timestamp instead of the computed one.
    pub fn override_max_timestamp(&mut self, max_timestamp: i64) {
        self.override_max_timestamp = Some(max_timestamp);
    }

    /// The batch's bytes.
    pub fn build(self) -> Result<Bytes, RecordsError> {
        self.build_mut().map(BytesMut::freeze)
    }

    /// The batch's bytes, mutable (to assign offsets and epochs in place afterwards).
    pub fn build_mut(self) -> Result<BytesMut, RecordsError> {
        let o = &self.options;
        if let Some(h) = o.delete_horizon_ms {
            if h < 0 {
                return Err(RecordsError::InvalidArgument(format!(
                    "Invalid delete horizon {h}"
                )));
            }
        }
        let last_offset_delta = self
            .override_last_offset_delta
            .or(self.last_offset_delta)
            .unwrap_or(0);
        if let Some(last) = self.last_offset_delta {
            if last_offset_delta < last {
                return Err(RecordsError::InvalidArgument(format!(
                    "last offset delta {last_offset_delta} is below the last record's {last}"
                )));
            }
        }
        let codec = if self.count == 0 {
            Compression::None
        } else {
            o.compression
        };
        if let Some(level) = o.compression_level {
            if codec != Compression::None {
                compression::check_level(codec, level)?;
            }
        }
        let payload = match codec {
            Compression::None => self.records,
            codec => compression::compress(codec, o.compression_level, &self.records)?,
        };
        let size = HEADER_LEN + payload.len();
        let batch_length = i32::try_from(size - LOG_OVERHEAD).map_err(|_| {
            RecordsError::InvalidArgument(format!("a batch of {size} bytes is too large"))
        })?;
        let max_timestamp = match (self.override_max_timestamp, o.timestamp_type) {
            (Some(ts), _) => ts,
            (None, TimestampType::LogAppendTime) => o.log_append_time,
            (None, TimestampType::CreateTime) => self.max_timestamp,
        };
        let header = BatchHeader {
            base_offset: o.base_offset,
            batch_length,
            partition_leader_epoch: o.partition_leader_epoch,
            magic: MAGIC,
            crc: 0,
            attributes: attributes(
                codec,
                o.timestamp_type,
                o.transactional,
                o.control,
                o.delete_horizon_ms.is_some(),
            ),
            last_offset_delta,
            base_timestamp: self.base_timestamp.unwrap_or(NO_TIMESTAMP),
            max_timestamp,
            producer_id: o.producer_id,
            producer_epoch: o.producer_epoch,
            base_sequence: o.base_sequence,
            record_count: self.count,
        };
        let mut out = BytesMut::with_capacity(size);
        out.put_slice(&header.to_bytes());
        out.put_slice(&payload);
        crate::write_crc(&mut out)?;
        Ok(out)
    }
}
