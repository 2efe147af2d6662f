//! What the log does to and reads from stored batches, through `kcoord-record-batches`.

use bytes::Bytes;
use kcoord_record_batches::{RecordBatch, TimestampType};

use crate::log::TimestampOffset;

pub(crate) const HEADER_LEN: usize = kcoord_record_batches::HEADER_LEN;

/// Decompressed bytes a timestamp search may read from one batch: a stored batch was accepted
/// under `max.message.bytes`, so its records are bounded; this bounds a damaged one.
const MAX_UNCOMPRESSED: usize = 256 * 1024 * 1024;

/// Sets the offsets the leader assigns (outside the CRC): base offset, partition leader epoch.
/// `batch` holds at least the header.
pub(crate) fn assign_offsets(batch: &mut [u8], base_offset: i64, leader_epoch: i32) {
    // Both fields lie inside the header, which the validator checked is present.
    let _ = kcoord_record_batches::set_base_offset(batch, base_offset);
    let _ = kcoord_record_batches::set_partition_leader_epoch(batch, leader_epoch);
}

/// Rewrites a header's timestamp type and max timestamp, and its CRC over `header` + `body`
/// (Kafka's `setMaxTimestamp`), without copying the body.
pub(crate) fn set_timestamps(
    header: &mut [u8],
    body: &[u8],
    timestamp_type: TimestampType,
    max_timestamp: i64,
) {
    let Ok(h) = kcoord_record_batches::BatchHeader::parse(header) else {
        return;
    };
    let attributes = kcoord_record_batches::rewritten_attributes(h.attributes, timestamp_type);
    if let Some(a) = header.get_mut(21..23) {
        a.copy_from_slice(&attributes.to_be_bytes());
    }
    if let Some(m) = header.get_mut(35..43) {
        m.copy_from_slice(&max_timestamp.to_be_bytes());
    }
    if let Ok(crc) = kcoord_record_batches::compute_crc_parts(header, body) {
        if let Some(c) = header.get_mut(17..21) {
            c.copy_from_slice(&crc.to_be_bytes());
        }
    }
}

/// The first record of `batch` at or after `min_offset` whose timestamp is at least
/// `timestamp`.
pub(crate) fn first_record_at_or_after(
    batch: &Bytes,
    timestamp: i64,
    min_offset: i64,
) -> Result<Option<TimestampOffset>, String> {
    let batch = RecordBatch::parse(batch.clone()).map_err(|e| e.to_string())?;
    let header = *batch.header();
    for record in batch.records(MAX_UNCOMPRESSED).map_err(|e| e.to_string())? {
        let record = record.map_err(|e| e.to_string())?;
        let (offset, ts) = (record.offset(&header), record.timestamp(&header));
        if ts >= timestamp && offset >= min_offset {
            return Ok(Some(TimestampOffset {
                offset,
                timestamp: ts,
            }));
        }
    }
    Ok(None)
}
