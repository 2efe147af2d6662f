//! Reading a batch's records (rules 16-19 of the module docs): `LogValidator.validateRecord` on
//! each, and what the pass finds for the header the leader stores.

use bytes::Bytes;
use kcoord_record_batches::{
    BatchHeader, Record, RecordIter, RecordsError, TimestampType, NO_TIMESTAMP,
};

use super::{RecordError, ValidationConfig, ValidationError};

/// What the per-record pass found.
pub(super) struct Scan {
    /// The largest timestamp (as Kafka's iterator reports them), or -1.
    pub(super) max_timestamp: i64,
    /// The first record with that timestamp: its offset delta and its position.
    pub(super) max_at: Option<(i32, i32)>,
    pub(super) first_offset_delta: Option<i32>,
    /// For a LogAppendTime batch on a CreateTime topic (whose header Kafka flips to
    /// CreateTime): the first record whose own timestamp equals the batch's max timestamp.
    pub(super) flipped_max_at: Option<i32>,
    pub(super) offsets_in_order: bool,
}

impl Scan {
    /// A record that passed, at position `index`, with the timestamp Kafka's iterator reports.
    #[inline]
    fn note_valid_record(&mut self, record: &Record, index: i32, timestamp: i64) {
        if timestamp > self.max_timestamp {
            self.max_timestamp = timestamp;
            self.max_at = Some((record.offset_delta, index));
        } else if timestamp == self.max_timestamp && self.max_at.is_none() {
            self.max_at = Some((record.offset_delta, index));
        }
        if record.offset_delta != index {
            self.offsets_in_order = false;
        }
    }

    /// Any record, valid or not; `flipped_target` is the batch's max timestamp (at least -1).
    #[inline]
    fn note_record(&mut self, h: &BatchHeader, record: &Record, flipped_target: i64) {
        self.first_offset_delta.get_or_insert(record.offset_delta);
        if self.flipped_max_at.is_none()
            && h.base_timestamp.wrapping_add(record.timestamp_delta) == flipped_target
        {
            self.flipped_max_at = Some(record.offset_delta);
        }
    }
}

/// Kafka's wording for a record that cannot be read.
pub(super) fn record_read_error(e: RecordsError) -> ValidationError {
    ValidationError::InvalidRecord(match e {
        RecordsError::MissingRecords { .. } => {
            "Incorrect declared batch size, premature EOF reached".to_string()
        }
        RecordsError::TrailingBytes => {
            "Incorrect declared batch size, records still remaining in file".to_string()
        }
        RecordsError::MalformedRecord { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// Reads every record, applying `LogValidator.validateRecord`; throws the collected record
/// errors as `processRecordErrors` does.
pub(super) fn scan_records(
    h: &BatchHeader,
    data: Bytes,
    config: &ValidationConfig,
    tp: &str,
    now: i64,
    partial_records: bool,
) -> Result<Scan, ValidationError> {
    let iter = RecordIter::new(data, h.record_count).map_err(record_read_error)?;
    let checks = RecordChecks {
        h,
        config,
        tp,
        now,
        partial_records,
    };
    let mut errors: Vec<RecordError> = Vec::new();
    let mut any_timestamp_error = false;
    let mut scan = Scan {
        max_timestamp: NO_TIMESTAMP,
        max_at: None,
        first_offset_delta: None,
        flipped_max_at: None,
        offsets_in_order: true,
    };
    let flipped_target = h.max_timestamp.max(NO_TIMESTAMP);
    for (index, record) in iter.enumerate() {
        let record = record.map_err(record_read_error)?;
        let timestamp = record.timestamp(h);
        let index = i32::try_from(index).unwrap_or(i32::MAX);
        match checks.fault(&record, timestamp) {
            Some(fault) => {
                any_timestamp_error |= fault.timestamp;
                errors.push(RecordError {
                    batch_index: index,
                    message: Some(fault.message),
                });
            }
            None => scan.note_valid_record(&record, index, timestamp),
        }
        scan.note_record(h, &record, flipped_target);
    }
    if errors.is_empty() {
        return Ok(scan);
    }
    Err(process_record_errors(errors, any_timestamp_error))
}

/// Why `LogValidator.validateRecord` refuses a record: its first failing check.
struct RecordFault {
    message: String,
    /// A timestamp check: the partition's answer becomes INVALID_TIMESTAMP.
    timestamp: bool,
}

/// What `LogValidator.validateRecord` checks the records of one batch against.
struct RecordChecks<'a> {
    h: &'a BatchHeader,
    config: &'a ValidationConfig,
    tp: &'a str,
    now: i64,
    /// Records are printed as Kafka's skipping iterator prints them (`PartialDefaultRecord`).
    partial_records: bool,
}

impl RecordChecks<'_> {
    /// `timestamp` is the record's as Kafka's iterator reports it.
    #[inline]
    fn fault(&self, record: &Record, timestamp: i64) -> Option<RecordFault> {
        let RecordChecks {
            h, config, tp, now, ..
        } = *self;
        if config.compacted && record.key.is_none() {
            return Some(RecordFault {
                message: format!(
                    "Compacted topic cannot accept message without key in topic partition {tp}"
                ),
                timestamp: false,
            });
        }
        if config.timestamp_type == TimestampType::CreateTime && timestamp != NO_TIMESTAMP {
            let diff = now.wrapping_sub(timestamp);
            let out_of_range = diff > config.timestamp_before_max_ms
                || diff.wrapping_neg() > config.timestamp_after_max_ms;
            return out_of_range.then(|| RecordFault {
                message: format!(
                    "Timestamp {timestamp} of message with offset {} is out of range. The timestamp should be within [{}, {}]",
                    record.offset(h),
                    now.wrapping_sub(config.timestamp_before_max_ms),
                    now.wrapping_add(config.timestamp_after_max_ms)
                ),
                timestamp: true,
            });
        }
        if h.timestamp_type() == TimestampType::LogAppendTime {
            return Some(RecordFault {
                message: format!(
                    "Invalid timestamp type in message {}. Producer should not set timestamp type to LogAppendTime.",
                    self.described(record, timestamp)
                ),
                timestamp: true,
            });
        }
        None
    }

    /// The record as Kafka's `toString` prints it (sizes of -1 for a null key or value in a
    /// `PartialDefaultRecord`, 0 in a `DefaultRecord`).
    fn described(&self, record: &Record, timestamp: i64) -> String {
        let offset = record.offset(self.h);
        let size = |b: &Option<Bytes>, null: i64| b.as_ref().map_or(null, |b| b.len() as i64);
        if self.partial_records {
            format!(
                "PartialDefaultRecord(offset={offset}, timestamp={timestamp}, key={} bytes, value={} bytes)",
                size(&record.key, -1),
                size(&record.value, -1)
            )
        } else {
            format!(
                "DefaultRecord(offset={offset}, timestamp={timestamp}, key={} bytes, value={} bytes)",
                size(&record.key, 0),
                size(&record.value, 0)
            )
        }
    }
}

/// `processRecordErrors`: INVALID_TIMESTAMP with every record error when a timestamp was
/// refused, else INVALID_RECORD naming the first three.
fn process_record_errors(errors: Vec<RecordError>, any_timestamp_error: bool) -> ValidationError {
    if any_timestamp_error {
        return ValidationError::InvalidTimestamp {
            message: "One or more records have been rejected due to invalid timestamp".to_string(),
            record_errors: errors,
        };
    }
    let shown: Vec<String> = errors.iter().take(3).map(RecordError::to_string).collect();
    ValidationError::InvalidRecords {
        message: format!(
            "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: [{}]",
            errors.len(),
            shown.join(", ")
        ),
        record_errors: errors,
    }
}
