//! Encoding format 3: entries, batches and whole files (the module docs of `file_log.rs`).

use bytes::{BufMut, BytesMut};

use super::{check_entry_size, entry_size, EntryTooLarge, Format, ENTRY_HEADER, MAGIC_V3, MORE};
use crate::log::{LogRecord, MetadataLog};

/// The bytes of a whole file holding `log`, as [`super::LogWriter::rewrite`] writes it. With
/// [`batch_bytes`] and [`super::read_image`] a caller can keep a log file in memory, written
/// and read back exactly as the daemon writes and reads it (the coordinator's simulation keeps
/// its shard's file so).
pub fn image_bytes(log: &MetadataLog) -> Result<Vec<u8>, EntryTooLarge> {
    encode_file(log).map(|out| out.to_vec()).map_err(|(_, e)| e)
}

/// The bytes [`super::LogWriter::write`] appends for `batch` (one batch: read back whole or not
/// at all). Its offsets are not checked here; the writer refuses them out of order.
pub fn batch_bytes(batch: &[LogRecord]) -> Result<Vec<u8>, EntryTooLarge> {
    let mut out = BytesMut::new();
    // Every entry of the batch but its last has the "more" bit.
    let last = batch.len().saturating_sub(1);
    for (i, record) in batch.iter().enumerate() {
        encode_entry(record, i < last, &mut out)?;
    }
    Ok(out.to_vec())
}

/// A whole format 3 file holding `log`'s records; the offset of a record too large. Each
/// record is a batch of its own: the file is made atomic by its rename, not by batches, and a
/// file converted from an older format so reads as it did.
pub(super) fn encode_file(log: &MetadataLog) -> Result<BytesMut, (u64, EntryTooLarge)> {
    let mut out = BytesMut::with_capacity(super::HEADER);
    out.put_slice(MAGIC_V3);
    out.put_u64(log.next_offset());
    out.put_u32(crc32c::crc32c(&out[..16]));
    for record in log.iter() {
        encode_entry(&record.to_record(), false, &mut out).map_err(|e| (record.offset, e))?;
    }
    Ok(out)
}

/// Appends a format 3 entry for `record` to `out`; `more`: the next entry belongs to the same
/// batch.
pub(super) fn encode_entry(
    record: &LogRecord,
    more: bool,
    out: &mut BytesMut,
) -> Result<(), EntryTooLarge> {
    let (key, value) = (record.key.as_deref(), record.value.as_deref());
    check_entry_size(key, value)?;
    let start = out.len();
    // The size check keeps every length below 64 MiB, so these casts do not truncate and bit
    // 31 of the length is free for "more".
    let length = (entry_size(key, value) - 4) as u32;
    out.put_u32(if more { length | MORE } else { length });
    out.put_u32(0); // the crc, once the body is there
    out.put_i64(record.offset as i64);
    out.put_i16(record.record_type);
    out.put_i16(record.version);
    for part in [key, value] {
        match part {
            None => out.put_i32(-1),
            Some(bytes) => {
                out.put_i32(bytes.len() as i32);
                out.put_slice(bytes);
            }
        }
    }
    let crc = Format::V3.checksum(&out[start..start + 4], &out[start + ENTRY_HEADER..]);
    out[start + 4..start + ENTRY_HEADER].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}
