use bytes::{BufMut, Bytes, BytesMut};

use super::encode::encode_entry;
use super::*;
use crate::log::LogRecord;

/// Batches of several records: torn, whole, damaged, and format 2 files.
mod batches;
/// A writer reading its own file back.
mod read_back;

fn record(offset: u64, record_type: i16, value: &'static [u8]) -> LogRecord {
    LogRecord {
        offset,
        record_type,
        version: 1,
        key: None,
        value: Some(Bytes::from_static(value)),
    }
}

fn sample() -> MetadataLog {
    let mut log = MetadataLog::new();
    log.append([(2, 0, None, Some(Bytes::from_static(b"topic")))]);
    log.append([
        (3, 1, None, Some(Bytes::from_static(b"partition"))),
        (17, 0, Some(Bytes::from_static(b"k")), None),
    ]);
    log
}

/// A compacted log: offsets 2, 5 and 9, next offset 12.
fn gappy() -> MetadataLog {
    let mut log = MetadataLog::new();
    for (offset, value) in [(2, &b"a"[..]), (5, b"bb"), (9, b"ccc")] {
        log.push_at(
            offset,
            17,
            0,
            Some(Bytes::from_static(b"g")),
            Some(Bytes::from_static(value)),
        )
        .unwrap();
    }
    log.advance_next_offset(12).unwrap();
    log
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The file after `sample()`'s records were appended to a new log, each a batch of its own (as
/// each record of a format 1 or 2 file is): the rules for single entries, which batches of
/// several records (`batch_tests.rs`) extend.
fn written(dir: &Path) -> Vec<u8> {
    let mut loaded = open(dir).unwrap();
    for record in sample().records() {
        loaded.writer.append(&[record]).unwrap();
    }
    std::fs::read(log_path(dir)).unwrap()
}

/// Where each entry of a format 2 or 3 image starts.
fn entry_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = HEADER;
    while at < bytes.len() {
        starts.push(at);
        at += 4 + (be_u32(&bytes[at..]) & !MORE) as usize;
    }
    starts
}

fn corrupt_at(dir: &Path, bytes: &[u8]) -> (u64, AfterOffset, String) {
    std::fs::write(log_path(dir), bytes).unwrap();
    match open(dir) {
        Err(FileLogError::Corrupt {
            position,
            after,
            reason,
            ..
        }) => {
            // The file is left alone for a look.
            assert_eq!(std::fs::read(log_path(dir)).unwrap(), bytes);
            (position, after, reason)
        }
        other => panic!("expected a corrupt entry, got {other:?}"),
    }
}

#[test]
fn records_written_are_read_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path());
    let loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.log.records(), sample().records());
    assert_eq!(loaded.writer.next_offset(), 3);
    assert_eq!((loaded.torn_bytes, loaded.cut), (0, None));
    assert_eq!(loaded.converted_from, None);
}

#[test]
fn a_new_directory_gets_an_empty_format_3_file_and_a_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b");
    let loaded = open(&nested).unwrap();
    assert!(loaded.log.is_empty());
    let bytes = std::fs::read(log_path(&nested)).unwrap();
    assert_eq!(bytes.len(), HEADER);
    assert_eq!(&bytes[..8], MAGIC_V3);
    assert_eq!(be_u64(&bytes[8..16]), 0, "next offset");
    assert_eq!(loaded.writer.len_bytes(), HEADER as u64);
    assert!(nested.join(LOCK_FILE_NAME).exists());
    assert!(!nested.join(TEMP_FILE_NAME).exists());
}

#[test]
fn writes_may_leave_gaps_but_offsets_must_increase() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path());
    let mut loaded = open(dir.path()).unwrap();
    loaded.writer.append(&[record(5, 2, b"x")]).unwrap();
    assert_eq!(loaded.writer.next_offset(), 6);
    for (batch, got) in [
        (vec![record(5, 2, b"y")], 5),
        (vec![record(8, 2, b"y"), record(8, 2, b"z")], 8),
    ] {
        let err = loaded.writer.append(&batch).unwrap_err();
        assert!(
            matches!(err, FileLogError::OutOfOrder { got: g, .. } if g == got),
            "{err}"
        );
    }
    let before = loaded.writer.len_bytes();
    assert_eq!(
        std::fs::metadata(log_path(dir.path())).unwrap().len(),
        before,
        "a refused batch writes nothing"
    );
    drop(loaded);
    let reloaded = open(dir.path()).unwrap();
    let offsets: Vec<u64> = reloaded.log.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![0, 1, 2, 5]);
    assert_eq!(reloaded.log.next_offset(), 6);
}

#[test]
fn writes_are_durable_at_the_sync_that_follows_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = open(dir.path()).unwrap().writer;
    let header = HEADER as u64;
    writer.write(&[record(0, 2, b"a")]).unwrap();
    writer
        .write(&[record(1, 2, b"b"), record(4, 2, b"c")])
        .unwrap();
    assert_eq!(writer.next_offset(), 5);
    assert_eq!(writer.synced_next_offset(), 0);
    assert_eq!(writer.synced_len_bytes(), header);
    let written = writer.len_bytes();
    assert_eq!(written, header + 3 * (MIN_ENTRY as u64 + 1));
    writer.sync().unwrap();
    assert_eq!(
        (writer.synced_len_bytes(), writer.synced_next_offset()),
        (written, 5)
    );
    writer.append(&[record(5, 2, b"d")]).unwrap();
    assert_eq!(writer.synced_next_offset(), 6);
    drop(writer);
    let offsets: Vec<u64> = open(dir.path())
        .unwrap()
        .log
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, vec![0, 1, 4, 5]);
}

#[test]
fn a_failed_write_changes_nothing_and_can_be_retried() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path());
    let mut writer = open(dir.path()).unwrap().writer;
    let (len, next) = (writer.len_bytes(), writer.next_offset());
    // A handle that cannot write: the write fails as on a full disk.
    let writable = std::mem::replace(&mut writer.file, File::open(log_path(dir.path())).unwrap());
    let err = writer.write(&[record(3, 2, b"x")]).unwrap_err();
    assert!(matches!(err, FileLogError::Io { .. }), "{err}");
    assert_eq!((writer.len_bytes(), writer.next_offset()), (len, next));
    writer.file = writable;
    writer.append(&[record(3, 2, b"x")]).unwrap();
    drop(writer);
    assert_eq!(open(dir.path()).unwrap().log.next_offset(), 4);
}

#[test]
fn records_larger_than_an_entry_may_hold_are_refused_before_anything_is_written() {
    let overhead = entry_size(None, Some(&[]));
    assert_eq!(overhead, 4 + 4 + MIN_BODY);
    let fits = vec![0u8; MAX_ENTRY_BYTES - overhead];
    assert_eq!(check_entry_size(None, Some(&fits)), Ok(()));
    assert_eq!(
        check_entry_size(Some(b"k"), Some(&fits)),
        Err(EntryTooLarge {
            size: MAX_ENTRY_BYTES + 1
        })
    );
    let dir = tempfile::tempdir().unwrap();
    let mut writer = open(dir.path()).unwrap().writer;
    let big = LogRecord {
        offset: 1,
        record_type: 2,
        version: 0,
        key: Some(Bytes::from_static(b"k")),
        value: Some(Bytes::from(fits)),
    };
    let err = writer.append(&[record(0, 2, b"a"), big]).unwrap_err();
    assert!(
        matches!(err, FileLogError::TooLarge { offset: 1, .. }),
        "{err}"
    );
    assert_eq!(writer.len_bytes(), HEADER as u64, "not even the first");
}

#[test]
fn a_torn_last_entry_is_cut_wherever_the_file_ends_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = written(dir.path());
    let path = log_path(dir.path());
    let last = *entry_starts(&bytes).last().unwrap();
    let last_entry_len = bytes.len() - last;
    // 1..4: inside the length; ..8: inside the crc; then inside the body.
    for kept in 1..last_entry_len {
        std::fs::write(&path, &bytes[..last + kept]).unwrap();
        let mut loaded = open(dir.path()).unwrap();
        assert_eq!(
            loaded.log.records(),
            &sample().records()[..2],
            "kept {kept}"
        );
        // A length whose landed bytes are all zero (its high bytes) reads as zero fill.
        let reason = if is_zero(&bytes[last..last + kept]) {
            CutReason::ZeroFilled
        } else {
            CutReason::TornEntry
        };
        assert_eq!(
            loaded.cut,
            Some(TailCut {
                position: last as u64,
                bytes: kept as u64,
                reason,
                batch_records: 0,
            }),
            "kept {kept}"
        );
        assert_eq!(loaded.torn_bytes, kept as u64);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            last,
            "the file is cut back"
        );
        // The next append lands where the torn one was.
        loaded.writer.sync_from(&sample()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn zeros_after_the_last_whole_entry_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = written(dir.path());
    for zeros in [1, 3, 8, 100, 5000] {
        let mut padded = bytes.clone();
        padded.resize(bytes.len() + zeros, 0);
        std::fs::write(log_path(dir.path()), &padded).unwrap();
        let loaded = open(dir.path()).unwrap();
        assert_eq!(loaded.log.records(), sample().records(), "{zeros} zeros");
        let cut = loaded.cut.unwrap();
        assert_eq!(
            (cut.position, cut.bytes, cut.reason),
            (bytes.len() as u64, zeros as u64, CutReason::ZeroFilled)
        );
        assert!(cut.to_string().starts_with(&format!("cut {zeros} bytes")));
        assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), bytes);
    }
}

#[test]
fn a_last_entry_zero_from_a_sector_boundary_on_is_cut_but_not_one_with_a_bit_flip() {
    let dir = tempfile::tempdir().unwrap();
    let mut loaded = open(dir.path()).unwrap();
    loaded.writer.append(&[record(0, 2, b"first")]).unwrap();
    let big = LogRecord {
        value: Some(Bytes::from(vec![7u8; 2000])),
        ..record(1, 2, b"")
    };
    loaded.writer.append(&[big]).unwrap();
    drop(loaded);
    let bytes = std::fs::read(log_path(dir.path())).unwrap();
    let last = entry_starts(&bytes)[1];
    let boundary = (last / SECTOR + 1) * SECTOR;
    for from in [boundary, boundary + SECTOR] {
        let mut lost = bytes.clone();
        lost[from..].fill(0);
        std::fs::write(log_path(dir.path()), &lost).unwrap();
        let loaded = open(dir.path()).unwrap();
        assert_eq!(loaded.log.len(), 1, "the unsynced entry goes");
        assert_eq!(
            loaded.cut.map(|c| (c.position, c.reason)),
            Some((last as u64, CutReason::LostSectors))
        );
    }
    // Zeros that do not start at a sector boundary inside the entry do not look like lost
    // sectors: the entry is corrupt, as is one with a flipped bit.
    let mut not_aligned = bytes.clone();
    let end = bytes.len();
    not_aligned[end - 7..].fill(0);
    let (position, after, _) = corrupt_at(dir.path(), &not_aligned);
    assert_eq!((position, after), (last as u64, AfterOffset::After(0)));
    let mut flipped = bytes.clone();
    flipped[end - 1] ^= 0x01;
    let (position, _, reason) = corrupt_at(dir.path(), &flipped);
    assert_eq!(position, last as u64);
    assert!(reason.contains("checksum"), "{reason}");
}

#[test]
fn zeros_in_the_middle_followed_by_valid_entries_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = written(dir.path());
    let starts = entry_starts(&bytes);
    let mut zeroed = bytes.clone();
    zeroed[starts[0]..starts[1]].fill(0);
    let (position, after, reason) = corrupt_at(dir.path(), &zeroed);
    assert_eq!((position, after), (starts[0] as u64, AfterOffset::First));
    assert!(
        reason.contains(&format!("a valid entry follows at byte {}", starts[1])),
        "{reason}"
    );
}

#[test]
fn a_bit_flip_in_a_body_is_corrupt_in_any_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = written(dir.path());
    let starts = entry_starts(&bytes);
    for (i, start) in starts.iter().enumerate() {
        let mut flipped = bytes.clone();
        flipped[start + ENTRY_HEADER + 9] ^= 0x40;
        let (position, after, reason) = corrupt_at(dir.path(), &flipped);
        assert_eq!(position, *start as u64);
        let expected_after = match i {
            0 => AfterOffset::First,
            i => AfterOffset::After(i as u64 - 1),
        };
        assert_eq!(after, expected_after);
        assert!(reason.contains("checksum"), "{reason}");
    }
}

#[test]
fn a_bit_flip_in_a_length_is_corrupt_in_any_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = written(dir.path());
    let starts = entry_starts(&bytes);
    let flip = |at: usize, mask: u8| {
        let mut flipped = bytes.clone();
        flipped[at] ^= mask;
        flipped
    };
    // Shorter or longer, the entry still ends inside the file: the checksum covers the length.
    for (at, mask) in [
        (starts[0] + 3, 0x01),
        (starts[0] + 3, 0x02),
        (starts[2] + 3, 0x01),
    ] {
        let (position, _, reason) = corrupt_at(dir.path(), &flip(at, mask));
        assert!(
            starts.contains(&(position as usize)) && reason.contains("checksum"),
            "{position}: {reason}"
        );
    }
    // Past the end of the file: not torn, since valid entries follow.
    let (position, _, reason) = corrupt_at(dir.path(), &flip(starts[0] + 2, 0x10));
    assert_eq!(position, starts[0] as u64);
    assert!(reason.contains("a valid entry follows"), "{reason}");
    // The last entry's length past the end: the checksum still matches what is there.
    let (position, _, reason) = corrupt_at(dir.path(), &flip(starts[2] + 2, 0x10));
    assert_eq!(position, starts[2] as u64);
    assert!(reason.contains("length field is damaged"), "{reason}");
    // Beyond any entry's size (bit 30; bit 31 is format 3's "more", below).
    let (_, _, reason) = corrupt_at(dir.path(), &flip(starts[2], 0x40));
    assert!(reason.contains("impossible entry length"), "{reason}");
    // The "more" bit is covered by the checksum as the rest of the length: a flipped one is
    // not a batch left open but a corrupt entry, in the middle or last.
    for start in [starts[0], starts[2]] {
        let (position, _, reason) = corrupt_at(dir.path(), &flip(start, 0x80));
        assert_eq!(position, start as u64);
        assert!(reason.contains("checksum"), "{reason}");
    }
}

fn entries(records: &[LogRecord]) -> BytesMut {
    let mut out = BytesMut::from(&encode_file(&MetadataLog::new()).unwrap()[..]);
    for r in records {
        encode_entry(r, false, &mut out).unwrap();
    }
    out
}

#[test]
fn offsets_out_of_order_are_corrupt_even_with_valid_checksums() {
    for (second, reason) in [
        (5, "record offset 5, not above the previous entry's 5"),
        (3, "record offset 3, not above"),
    ] {
        let out = entries(&[record(5, 2, b"a"), record(second, 2, b"b")]);
        let err = parse(&out, "x").unwrap_err();
        assert!(
            matches!(
                err,
                FileLogError::Corrupt {
                    after: AfterOffset::After(5),
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains(reason), "{err}");
    }
}

#[test]
fn bodies_are_checked_even_when_the_checksum_matches() {
    // A body whose key length runs past its end.
    let mut out = entries(&[]);
    let start = out.len();
    out.put_u32(4 + MIN_BODY as u32);
    out.put_u32(0);
    out.put_i64(0);
    out.put_i16(2);
    out.put_i16(0);
    out.put_i32(100);
    out.put_i32(-1);
    let crc = Format::V3.checksum(&out[start..start + 4], &out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
    let err = parse(&out, "x").unwrap_err();
    assert!(err.to_string().contains("the body ends early"), "{err}");
}

#[test]
fn a_torn_or_missing_file_header_gets_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    for (torn, cut) in [
        (&b""[..], None),
        (&MAGIC_V1[..3], Some(3)),
        (&[0u8; 8][..], Some(8)),
    ] {
        std::fs::write(log_path(dir.path()), torn).unwrap();
        let loaded = open(dir.path()).unwrap();
        assert!(loaded.log.is_empty());
        assert_eq!(
            loaded.cut.map(|c| (c.bytes, c.reason)),
            cut.map(|n| (n, CutReason::TornHeader))
        );
        assert_eq!(
            std::fs::read(log_path(dir.path())).unwrap(),
            &encode_file(&MetadataLog::new()).unwrap()[..]
        );
    }
}

#[test]
fn a_file_that_is_not_a_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad_crc = encode_file(&gappy()).unwrap().to_vec();
    bad_crc[10] ^= 1;
    for bytes in [
        &b"hello, world"[..],
        &bad_crc,
        &MAGIC_V2[..],
        &MAGIC_V3[..],
        &[0u8; 9],
    ] {
        std::fs::write(log_path(dir.path()), bytes).unwrap();
        let err = open(dir.path()).unwrap_err();
        assert!(matches!(err, FileLogError::BadHeader { .. }), "{err}");
        assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), bytes);
    }
}

/// A format 1 file (as an older kcoord wrote it) of `records`.
fn format_1(records: &[LogRecord]) -> Vec<u8> {
    let mut out = MAGIC_V1.to_vec();
    for r in records {
        let mut v2 = BytesMut::new();
        encode_entry(r, false, &mut v2).unwrap();
        // The same layout; the checksum covers the body only.
        let crc = crc32c::crc32c(&v2[ENTRY_HEADER..]);
        v2[4..8].copy_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&v2);
    }
    out
}

#[test]
fn a_format_1_file_is_read_and_converted_to_format_3() {
    let dir = tempfile::tempdir().unwrap();
    let records = sample().records();
    let v1 = format_1(&records);
    // With a torn last entry, which is cut before the conversion.
    std::fs::write(log_path(dir.path()), &v1[..v1.len() - 3]).unwrap();
    let loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.converted_from, Some(1));
    assert_eq!(loaded.log.records(), &records[..2]);
    assert_eq!(loaded.cut.map(|c| c.reason), Some(CutReason::TornEntry));
    assert_eq!(loaded.writer.next_offset(), 2);
    let converted = std::fs::read(log_path(dir.path())).unwrap();
    assert_eq!(converted, &encode_file(&loaded.log).unwrap()[..]);
    drop(loaded);
    let reloaded = open(dir.path()).unwrap();
    assert_eq!(reloaded.converted_from, None);
    assert_eq!(reloaded.log.records(), &records[..2]);
}

#[test]
fn format_1_offsets_must_be_dense() {
    let v1 = format_1(&[record(0, 2, b"a"), record(2, 2, b"b")]);
    let err = parse(&v1, "x").unwrap_err();
    assert!(
        matches!(
            err,
            FileLogError::Corrupt {
                after: AfterOffset::After(0),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("not 1 (format 1 offsets are dense)"),
        "{err}"
    );
    // A bit flip in a format 1 length that runs past the end is caught as well.
    let mut v1 = format_1(&[record(0, 2, b"a"), record(1, 2, b"b")]);
    v1[8 + 2] ^= 0x10;
    assert!(matches!(parse(&v1, "x"), Err(FileLogError::Corrupt { .. })));
}

#[test]
fn a_second_open_of_the_directory_is_refused_while_the_writer_lives() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(dir.path()).unwrap();
    let err = open(dir.path()).unwrap_err();
    assert!(matches!(err, FileLogError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another kcoord holds"), "{err}");
    drop(first);
    open(dir.path()).unwrap();
}

#[test]
fn a_rewrite_keeps_offsets_with_gaps_and_the_next_offset_and_appends_follow() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path());
    let mut loaded = open(dir.path()).unwrap();
    loaded.writer.rewrite(&gappy()).unwrap();
    assert_eq!(loaded.writer.next_offset(), 12);
    assert!(loaded.writer.write(&[record(11, 2, b"x")]).is_err());
    loaded.writer.append(&[record(12, 2, b"x")]).unwrap();
    assert!(!dir.path().join(TEMP_FILE_NAME).exists());
    drop(loaded);
    let reloaded = open(dir.path()).unwrap();
    let mut expected = gappy();
    expected.append([(2, 1, None, Some(Bytes::from_static(b"x")))]);
    assert_eq!(reloaded.log.records(), expected.records());
    assert_eq!(reloaded.log.next_offset(), 13);

    // A log whose next offset lies past its last record, even with no record at all.
    let mut writer = reloaded.writer;
    let mut empty = MetadataLog::new();
    empty.advance_next_offset(40).unwrap();
    writer.rewrite(&empty).unwrap();
    drop(writer);
    let reloaded = open(dir.path()).unwrap();
    assert!(reloaded.log.is_empty());
    assert_eq!(reloaded.log.next_offset(), 40);
    assert_eq!(reloaded.writer.next_offset(), 40);
}

#[test]
fn a_rewrite_cut_short_by_a_crash_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = written(dir.path());
    // A crash after half of the new file was written, before the rename.
    let new = encode_file(&gappy()).unwrap();
    std::fs::write(dir.path().join(TEMP_FILE_NAME), &new[..new.len() / 2]).unwrap();
    let loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.log.records(), sample().records());
    assert!(!dir.path().join(TEMP_FILE_NAME).exists(), "deleted");
    assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), bytes);
}

#[test]
fn read_image_reads_what_open_reads_without_a_file() {
    let image = encode_file(&sample()).unwrap();
    let (log, cut) = read_image(&image).unwrap();
    assert_eq!(
        log.iter().collect::<Vec<_>>(),
        sample().iter().collect::<Vec<_>>()
    );
    assert_eq!(cut, None);
    let (log, cut) = read_image(&image[..image.len() - 1]).unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(cut.map(|c| c.reason), Some(CutReason::TornEntry));
    assert!(read_image(b"not a log").is_err());
}

/// A header whose next offset is beyond int64 is refused: replaying it and appending would
/// wrap the next offset (found by fuzzing: the controller's bootstrap record overflowed it).
#[test]
fn a_header_next_offset_beyond_int64_is_a_bad_header() {
    let mut image = encode_file(&MetadataLog::new()).unwrap().to_vec();
    image[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
    let crc = crc32c::crc32c(&image[..16]);
    image[16..20].copy_from_slice(&crc.to_be_bytes());
    let err = read_image(&image).unwrap_err();
    assert!(matches!(err, FileLogError::BadHeader { .. }), "{err}");
    image[8..16].copy_from_slice(&(i64::MAX as u64).to_be_bytes());
    let crc = crc32c::crc32c(&image[..16]);
    image[16..20].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(read_image(&image).unwrap().0.next_offset(), i64::MAX as u64);
}
