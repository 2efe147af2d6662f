//! The partition log against its promises: offsets assigned in order, reads of whole batches
//! within a byte limit, rolling, recovery of a torn tail, restart with every batch and the
//! producer state, retention and DeleteRecords, timestamp lookups. Each test runs in memory
//! and on disk.

use bytes::Bytes;
use kcoord_record_batches::{BatchBuilder, BatchHeader, BatchOptions, Compression, RecordBatch};
use kcoord_storage::{Chunk, IncomingBatch, Log, LogConfig, ReadError};

const NOW: i64 = 1_700_000_000_000;
const EXPIRY: i64 = 86_400_000;

fn batch(records: &[(&str, i64)], producer: Option<(i64, i16, i32)>) -> IncomingBatch {
    let (producer_id, producer_epoch, base_sequence) = producer.unwrap_or((-1, -1, -1));
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id,
        producer_epoch,
        base_sequence,
        compression: Compression::None,
        ..BatchOptions::default()
    });
    for (value, ts) in records {
        b.push(*ts, Some(b"k"), Some(value.as_bytes()), &[])
            .unwrap();
    }
    IncomingBatch::from_batch(b.build().unwrap()).unwrap()
}

fn values(log: &Log, offset: i64, max_bytes: usize) -> Vec<(i64, String)> {
    let read = log.read(offset, max_bytes, true).unwrap();
    let mut out = Vec::new();
    for chunk in &read.chunks {
        let bytes = chunk.load().unwrap();
        let mut rest = bytes.clone();
        while !rest.is_empty() {
            let h = BatchHeader::parse(&rest).unwrap();
            let b = RecordBatch::parse(rest.split_to(h.total_size() as usize)).unwrap();
            for r in b.decode_records(1 << 20).unwrap() {
                out.push((
                    r.offset(b.header()),
                    String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
                ));
            }
        }
    }
    out
}

/// Runs `test` on a memory log and on a disk log with the same config.
fn both(config: LogConfig, test: impl Fn(&mut Log, Option<&std::path::Path>)) {
    let mut memory = Log::in_memory("t-0", config.clone(), NOW);
    test(&mut memory, None);
    let dir = tempfile::tempdir().unwrap();
    let mut disk = Log::open("t-0", dir.path(), config, NOW, EXPIRY).unwrap();
    test(&mut disk, Some(dir.path()));
}

#[test]
fn offsets_are_assigned_in_order_and_reads_return_whole_batches() {
    both(LogConfig::default(), |log, _| {
        let a = log
            .append(&batch(&[("a", NOW), ("b", NOW)], None), 0, NOW)
            .unwrap();
        let b = log.append(&batch(&[("c", NOW)], None), 0, NOW).unwrap();
        assert_eq!((a.base_offset, a.last_offset, b.base_offset), (0, 1, 2));
        assert_eq!(log.log_end_offset(), 3);
        assert_eq!(
            values(log, 0, 1 << 20),
            vec![(0, "a".into()), (1, "b".into()), (2, "c".into())]
        );
        // A fetch in the middle of a batch gets the whole batch, from its start.
        assert_eq!(values(log, 1, 1 << 20)[0], (0, "a".into()));
        // At the log end: nothing, no error; past it: out of range.
        assert!(log.read(3, 1 << 20, true).unwrap().chunks.is_empty());
        assert!(matches!(
            log.read(4, 100, true),
            Err(ReadError::OffsetOutOfRange { .. })
        ));
        // The byte limit stops before a batch that does not fit, but one batch always comes.
        assert_eq!(
            values(log, 0, 1).len(),
            2,
            "the first batch even though it is larger"
        );
        assert!(
            log.read(0, 1, false).unwrap().chunks.is_empty(),
            "unless the caller forbids"
        );
    });
}

#[test]
fn stored_batches_carry_their_offsets_and_the_leader_epoch() {
    both(LogConfig::default(), |log, _| {
        log.append(&batch(&[("a", NOW)], None), 0, NOW).unwrap();
        log.append(&batch(&[("b", NOW), ("c", NOW)], None), 4, NOW)
            .unwrap();
        let read = log.read(1, 1 << 20, true).unwrap();
        let bytes = read
            .chunks
            .iter()
            .map(|c| c.load().unwrap())
            .fold(Vec::new(), |mut v, b| {
                v.extend_from_slice(&b);
                v
            });
        let h = BatchHeader::parse(&bytes).unwrap();
        assert_eq!((h.base_offset, h.partition_leader_epoch), (1, 4));
        assert!(
            kcoord_record_batches::crc_is_valid(&bytes),
            "the CRC does not cover the assigned fields"
        );
    });
}

#[test]
fn segments_roll_at_segment_bytes_and_reads_cross_them() {
    let config = LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    };
    both(config, |log, dir| {
        for i in 0..10 {
            log.append(&batch(&[(&format!("v{i}"), NOW)], None), 0, NOW)
                .unwrap();
        }
        assert!(log.segment_count() > 2, "{} segments", log.segment_count());
        let all = values(log, 0, 1 << 20);
        assert_eq!(all.len(), 10);
        assert!(all
            .iter()
            .enumerate()
            .all(|(i, (o, v))| *o == i as i64 && *v == format!("v{i}")));
        if let Some(dir) = dir {
            let files = std::fs::read_dir(dir).unwrap().count();
            assert!(files >= log.segment_count(), "a file per segment");
            assert!(dir.join("00000000000000000000.log").exists());
        }
    });
}

#[test]
fn a_restart_finds_every_batch_and_the_producer_state() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 400,
        ..LogConfig::default()
    };
    {
        let mut log = Log::open("t-0", dir.path(), config.clone(), NOW, EXPIRY).unwrap();
        for i in 0..6 {
            log.append(&batch(&[(&format!("v{i}"), NOW)], Some((7, 0, i))), 0, NOW)
                .unwrap();
        }
    }
    let mut log = Log::open("t-0", dir.path(), config, NOW, EXPIRY).unwrap();
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(values(&log, 0, 1 << 20).len(), 6);
    // The last batch again is a duplicate: answered with its offset, not appended.
    let dup = log
        .append(&batch(&[("v5", NOW)], Some((7, 0, 5))), 0, NOW)
        .unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.base_offset, 5);
    // A gap is refused.
    let gap = log
        .append(&batch(&[("v9", NOW)], Some((7, 0, 9))), 0, NOW)
        .unwrap_err();
    assert_eq!(gap.error_code(), 45);
    assert_eq!(log.log_end_offset(), 6);
}

#[test]
fn recovery_cuts_a_torn_tail_and_keeps_what_was_whole() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
        log.append(&batch(&[("a", NOW)], None), 0, NOW).unwrap();
        log.append(&batch(&[("b", NOW)], None), 0, NOW).unwrap();
    }
    let path = dir.path().join("00000000000000000000.log");
    let whole = std::fs::metadata(&path).unwrap().len();
    // Half of a third batch, as a crash in the middle of a write leaves it.
    let third = batch(&[("c", NOW)], None).bytes;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut f, &third[..third.len() / 2]).unwrap();
    drop(f);
    let mut log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        whole,
        "the torn bytes are gone"
    );
    assert_eq!(
        log.append(&batch(&[("c", NOW)], None), 0, NOW)
            .unwrap()
            .base_offset,
        2
    );

    // A flipped bit in the last batch: its CRC fails and it is cut too.
    drop(log);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
    assert_eq!(log.log_end_offset(), 2);
}

#[test]
fn retention_deletes_old_and_excess_segments_but_never_the_data_of_the_active_one() {
    let config = LogConfig {
        segment_bytes: 200,
        retention_ms: 1000,
        ..LogConfig::default()
    };
    both(config.clone(), |log, _| {
        for i in 0..6 {
            log.append(&batch(&[(&format!("v{i}"), NOW + i)], None), 0, NOW)
                .unwrap();
        }
        let segments = log.segment_count();
        assert_eq!(log.apply_retention(NOW + 500), 0, "nothing is old enough");
        assert!(log.apply_retention(NOW + 5_000) >= segments - 1);
        assert_eq!(
            log.log_start_offset(),
            log.log_end_offset(),
            "everything expired"
        );
        assert!(matches!(
            log.read(0, 100, true),
            Err(ReadError::OffsetOutOfRange { .. })
        ));
        assert_eq!(
            log.append(&batch(&[("new", NOW)], None), 0, NOW)
                .unwrap()
                .base_offset,
            6
        );
    });
    let by_size = LogConfig {
        segment_bytes: 200,
        retention_bytes: 400,
        ..LogConfig::default()
    };
    both(by_size, |log, _| {
        for i in 0..10 {
            log.append(&batch(&[(&format!("v{i}"), NOW)], None), 0, NOW)
                .unwrap();
        }
        log.apply_retention(NOW);
        assert!(
            log.size() <= 400 + 200,
            "at most retention.bytes plus one segment: {}",
            log.size()
        );
        assert!(log.log_start_offset() > 0);
        assert_eq!(
            values(log, log.log_start_offset(), 1 << 20)
                .last()
                .unwrap()
                .1,
            "v9"
        );
    });
}

#[test]
fn delete_records_moves_the_log_start_and_survives_a_restart() {
    both(
        LogConfig {
            segment_bytes: 200,
            ..LogConfig::default()
        },
        |log, dir| {
            for i in 0..6 {
                log.append(&batch(&[(&format!("v{i}"), NOW)], None), 0, NOW)
                    .unwrap();
            }
            assert_eq!(log.delete_records_before(4).unwrap(), 4);
            assert!(matches!(
                log.read(3, 100, true),
                Err(ReadError::OffsetOutOfRange { .. })
            ));
            assert_eq!(values(log, 4, 1 << 20).first().unwrap().0, 4);
            assert!(
                log.delete_records_before(7).is_err(),
                "beyond the high watermark"
            );
            if let Some(dir) = dir {
                let reopened = Log::open("t-0", dir, log.config().clone(), NOW, EXPIRY).unwrap();
                assert_eq!(reopened.log_start_offset(), 4);
            }
        },
    );
}

#[test]
fn offsets_by_timestamp_and_the_max_timestamp() {
    both(LogConfig::default(), |log, _| {
        log.append(&batch(&[("a", 100), ("b", 300)], None), 0, NOW)
            .unwrap();
        log.append(&batch(&[("c", 200), ("d", 500)], None), 0, NOW)
            .unwrap();
        let at = |ts| {
            log.offset_for_timestamp(ts)
                .unwrap()
                .map(|t| (t.offset, t.timestamp))
        };
        assert_eq!(at(0), Some((0, 100)));
        assert_eq!(at(150), Some((1, 300)));
        assert_eq!(
            at(301),
            Some((3, 500)),
            "the first record at or after, in offset order"
        );
        assert_eq!(at(501), None);
        let max = log.max_timestamp_offset().unwrap().unwrap();
        assert_eq!((max.offset, max.timestamp), (3, 500));
    });
}

#[test]
fn log_append_time_is_written_into_the_stored_header() {
    both(LogConfig::default(), |log, _| {
        let mut b = batch(&[("a", 100)], None);
        b.log_append_time = Some(NOW + 7);
        b.max_timestamp = NOW + 7;
        b.timestamp_type = kcoord_record_batches::TimestampType::LogAppendTime;
        b.rewrite_timestamps = true;
        let appended = log.append(&b, 0, NOW).unwrap();
        assert_eq!(appended.log_append_time, NOW + 7);
        let read = log.read(0, 1 << 20, true).unwrap();
        let bytes = read.chunks[0].load().unwrap();
        let h = BatchHeader::parse(&bytes).unwrap();
        assert_eq!(h.max_timestamp, NOW + 7);
        assert_eq!(
            h.timestamp_type(),
            kcoord_record_batches::TimestampType::LogAppendTime
        );
        assert!(kcoord_record_batches::crc_is_valid(&bytes));
    });
}

#[test]
fn memory_reads_share_the_stored_bytes() {
    let mut log = Log::in_memory("t-0", LogConfig::default(), NOW);
    log.append(&batch(&[("a", NOW)], None), 0, NOW).unwrap();
    let one = log.read(0, 1 << 20, true).unwrap();
    let two = log.read(0, 1 << 20, true).unwrap();
    let (Chunk::Memory(a), Chunk::Memory(b)) = (&one.chunks[0], &two.chunks[0]) else {
        panic!("in memory")
    };
    assert_eq!(a.as_ptr(), b.as_ptr(), "no copy per read");
    let _: &Bytes = a;
}
