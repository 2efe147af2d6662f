//! Recovery: reading a segment file batch by batch, checking each batch's length, magic and
//! CRC, and stopping at the first one that is torn or damaged, as Kafka's `LogSegment.recover`
//! does. Everything before it is the segment; everything from it on was never acknowledged as
//! durable and is cut.

use std::io::{self, Read};

use bytes::Bytes;
use kcoord_record_batches::{BatchHeader, EndTxnMarker, RecordBatch};

use crate::entry::{BatchEntry, MarkerKind};

pub(crate) struct Scanned {
    pub entries: Vec<BatchEntry>,
    /// Bytes from the start of the file that hold whole, intact batches.
    pub valid_len: u64,
}

/// Scans `len` bytes from `reader`.
pub(crate) fn scan(reader: &mut impl Read, len: u64) -> io::Result<Scanned> {
    let mut entries = Vec::new();
    let mut position: u64 = 0;
    let mut batch = Vec::new();
    loop {
        let remaining = len - position;
        if remaining < kcoord_record_batches::HEADER_LEN as u64 {
            break;
        }
        batch.resize(kcoord_record_batches::HEADER_LEN, 0);
        reader.read_exact(&mut batch)?;
        let Ok(header) = BatchHeader::parse(&batch) else {
            break;
        };
        let size = header.total_size() as u64;
        if size > remaining || size < kcoord_record_batches::HEADER_LEN as u64 {
            break;
        }
        batch.resize(size as usize, 0);
        reader.read_exact(&mut batch[kcoord_record_batches::HEADER_LEN..])?;
        if !kcoord_record_batches::crc_is_valid(&batch) {
            break;
        }
        if entries
            .last()
            .is_some_and(|e: &BatchEntry| header.base_offset < e.next_offset())
        {
            break;
        }
        let marker = if header.is_control() {
            marker_of(Bytes::copy_from_slice(&batch))
        } else {
            None
        };
        entries.push(entry_of(&header, position as u32, size as u32, marker));
        position += size;
    }
    Ok(Scanned {
        entries,
        valid_len: position,
    })
}

/// What a control batch's record says: a COMMIT or ABORT marker, or neither (another control
/// type, no record, or one that does not read, which then ends no transaction).
pub(crate) fn marker_of(batch: Bytes) -> Option<MarkerKind> {
    let batch = RecordBatch::parse(batch).ok()?;
    match EndTxnMarker::of_batch(&batch) {
        Ok(Some(m)) if m.commit => Some(MarkerKind::Commit),
        Ok(Some(_)) => Some(MarkerKind::Abort),
        _ => None,
    }
}

/// The index entry of a batch with this header at `position`.
pub(crate) fn entry_of(
    header: &BatchHeader,
    position: u32,
    size: u32,
    marker: Option<MarkerKind>,
) -> BatchEntry {
    BatchEntry {
        base_offset: header.base_offset,
        last_offset: header.last_offset(),
        position,
        size,
        max_timestamp: header.max_timestamp,
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        base_sequence: header.base_sequence,
        is_control: header.is_control(),
        is_transactional: header.is_transactional(),
        marker,
    }
}
