//! Rule 21 of the module docs: a batch Kafka re-encodes rather than keeps.

use bytes::Bytes;
use kcoord_record_batches::{
    BatchBuilder, BatchHeader, BatchOptions, Compression, RecordIter, RecordsError,
};

use super::records::{record_read_error, Scan};
use super::{check_segment_size, ValidatedBatch, ValidationConfig, ValidationError};

/// `LogValidator.buildRecordsAndAssignOffsets`: the records again, at offset deltas 0, 1, 2, ...
/// with their timestamps, in the topic's codec.
#[allow(clippy::too_many_arguments)]
pub(super) fn rebuild_batch(
    h: &BatchHeader,
    data: &Bytes,
    scan: &Scan,
    config: &ValidationConfig,
    target: Compression,
    target_level: Option<i32>,
    tp: &str,
    now: i64,
    log_append_time: Option<i64>,
) -> Result<ValidatedBatch, ValidationError> {
    let unknown = |e: RecordsError| ValidationError::UnknownServerError {
        message: e.to_string(),
        whole_request: false,
    };
    let mut builder = BatchBuilder::new(BatchOptions {
        base_offset: 0,
        partition_leader_epoch: h.partition_leader_epoch,
        compression: target,
        compression_level: target_level,
        timestamp_type: config.timestamp_type,
        log_append_time: now,
        producer_id: h.producer_id,
        producer_epoch: h.producer_epoch,
        base_sequence: h.base_sequence,
        transactional: h.is_transactional(),
        control: false,
        delete_horizon_ms: None,
    });
    let iter = RecordIter::new(data.clone(), h.record_count).map_err(record_read_error)?;
    for record in iter {
        let record = record.map_err(record_read_error)?;
        builder
            .push(
                record.timestamp(h),
                record.key.as_deref(),
                record.value.as_deref(),
                &record.headers,
            )
            .map_err(unknown)?;
    }
    let bytes = builder.build().map_err(unknown)?;
    let size = bytes.len();
    if size > usize::try_from(config.max_message_bytes).unwrap_or(0) {
        return Err(ValidationError::MessageTooLarge(format!(
            "Message batch size is {size} bytes in append to partition {tp} which exceeds the maximum configured size of {}.",
            config.max_message_bytes
        )));
    }
    check_segment_size(size, config, tp)?;
    let header = BatchHeader::parse(&bytes).map_err(unknown)?;
    let max_timestamp = header.max_timestamp;
    // Renumbered from 0: a record's new offset delta is its position.
    let offset_delta_of_max_timestamp = match log_append_time {
        Some(_) => Some(0),
        None => scan.max_at.map(|(_, index)| index),
    };
    Ok(ValidatedBatch {
        header,
        bytes,
        rebuilt: true,
        record_count: header.record_count,
        timestamp_type: config.timestamp_type,
        max_timestamp,
        offset_delta_of_max_timestamp,
        log_append_time,
        crc_changes: false,
    })
}
