//! A log on disk hands out its appended bytes for writeback a full chunk at a time
//! (`kcoord_storage::writeback`): contiguous ranges of the active segment that cover every byte
//! once; nothing for a log in memory, and nothing of a rolled segment, whose seal syncs it.

use kcoord_record_batches::{BatchBuilder, BatchOptions, Compression};
use kcoord_storage::writeback::WRITEBACK_CHUNK;
use kcoord_storage::{IncomingBatch, Log, LogConfig};

const NOW: i64 = 1_700_000_000_000;
const EXPIRY: i64 = 86_400_000;

/// A batch of about 64 KiB.
fn batch() -> IncomingBatch {
    let mut b = BatchBuilder::new(BatchOptions {
        compression: Compression::None,
        ..BatchOptions::default()
    });
    b.push(NOW, Some(b"k"), Some(&[7u8; 64 << 10]), &[])
        .unwrap();
    IncomingBatch::from_batch(b.build().unwrap()).unwrap()
}

#[test]
fn appended_bytes_are_handed_out_once_in_contiguous_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
    let mut ranges = Vec::new();
    for _ in 0..40 {
        log.append(&batch(), 0, NOW).unwrap();
        ranges.extend(log.take_writeback());
        assert!(log.take_writeback().is_none(), "a range is handed out once");
    }
    assert!(ranges.len() >= 2, "40 batches of 64 KiB fill two chunks");
    let mut next = 0;
    for r in &ranges {
        assert_eq!(r.offset, next, "ranges follow each other");
        assert!(r.len >= WRITEBACK_CHUNK, "a range is at least a chunk");
        next = r.offset + r.len;
    }
    assert!(
        log.size() - next < WRITEBACK_CHUNK,
        "what is left is less than a chunk"
    );
}

#[test]
fn a_log_in_memory_and_a_rolled_segment_hand_out_nothing() {
    let mut in_memory = Log::in_memory("t-0", LogConfig::default(), NOW);
    for _ in 0..40 {
        in_memory.append(&batch(), 0, NOW).unwrap();
    }
    assert!(in_memory.take_writeback().is_none());

    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
    for _ in 0..10 {
        log.append(&batch(), 0, NOW).unwrap();
    }
    log.roll(NOW).unwrap();
    assert!(
        log.take_writeback().is_none(),
        "the rolled segment's bytes are its seal's to sync"
    );
    for _ in 0..20 {
        log.append(&batch(), 0, NOW).unwrap();
    }
    let range = log.take_writeback().expect("the new segment's chunk");
    assert_eq!(
        range.offset, 0,
        "the new segment's file starts at its own zero"
    );
}
