//! Batches of several records (format 3): a batch torn anywhere is cut whole, a whole one is
//! kept, damage is still corruption, and format 2 files read as they always did.

use super::*;

/// The records at offsets `first` to `first + n - 1`, each value as long as its offset + 3.
fn batch(first: u64, n: usize) -> Vec<LogRecord> {
    (first..first + n as u64)
        .map(|offset| LogRecord {
            offset,
            record_type: 2,
            version: 0,
            key: Some(Bytes::from(format!("key-{offset}"))),
            value: Some(Bytes::from(vec![b'v'; 3 + offset as usize])),
        })
        .collect()
}

/// A file holding batch A (offsets 0 and 1) and batch B (offsets 2 to 5), each appended and
/// synced; its bytes and where each of its six entries starts.
fn a_then_b(dir: &Path) -> (Vec<u8>, Vec<usize>) {
    let mut writer = open(dir).unwrap().writer;
    writer.append(&batch(0, 2)).unwrap();
    writer.append(&batch(2, 4)).unwrap();
    drop(writer);
    let bytes = std::fs::read(log_path(dir)).unwrap();
    let starts = entry_starts(&bytes);
    assert_eq!(starts.len(), 6);
    (bytes, starts)
}

/// Loads `bytes` (with `open`, and `read_image` too) and checks that only batch A is left and
/// that the cut starts where B starts.
fn only_a_is_left(dir: &Path, bytes: &[u8], b_start: usize) -> TailCut {
    let (log, image_cut) = read_image(bytes).unwrap();
    std::fs::write(log_path(dir), bytes).unwrap();
    let loaded = open(dir).unwrap();
    assert_eq!(loaded.log.records(), batch(0, 2), "{} bytes", bytes.len());
    assert_eq!(log.records(), batch(0, 2));
    let cut = loaded.cut.unwrap();
    assert_eq!(image_cut, Some(cut));
    assert_eq!(cut.position, b_start as u64);
    assert_eq!(cut.bytes, (bytes.len() - b_start) as u64);
    assert_eq!(loaded.torn_bytes, cut.bytes);
    assert_eq!(
        std::fs::metadata(log_path(dir)).unwrap().len() as usize,
        b_start,
        "the file is cut back to the end of the last whole batch"
    );
    cut
}

#[test]
fn a_batch_torn_after_any_of_its_records_is_cut_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = a_then_b(dir.path());
    let b_start = starts[2];
    for whole in 1..4 {
        let end = starts[2 + whole];
        let cut = only_a_is_left(dir.path(), &bytes[..end], b_start);
        assert_eq!(
            (cut.reason, cut.batch_records),
            (CutReason::TornBatch, whole as u64)
        );
        let records = if whole == 1 { "record" } else { "records" };
        assert_eq!(
            cut.to_string(),
            format!(
                "cut {} bytes at byte {b_start}: the first records of a batch whose end never \
                 reached the file ({whole} whole {records})",
                end - b_start
            )
        );
    }
    // The next append lands where the torn batch started.
    let mut loaded = open(dir.path()).unwrap();
    loaded.writer.append(&batch(2, 4)).unwrap();
    assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), bytes);
}

#[test]
fn a_batch_torn_at_any_byte_is_cut_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = a_then_b(dir.path());
    let b_start = starts[2];
    for end in b_start + 1..bytes.len() {
        let cut = only_a_is_left(dir.path(), &bytes[..end], b_start);
        // The entries of B that are whole, and where the torn one (if any) starts.
        let whole = starts[3..].iter().filter(|s| **s <= end).count();
        let torn_from = starts[2 + whole];
        let reason = if torn_from == end {
            CutReason::TornBatch
        } else if is_zero(&bytes[torn_from..end]) {
            // Only B's last entry has no "more" bit: its length starts with zero bytes.
            CutReason::ZeroFilled
        } else {
            CutReason::TornEntry
        };
        assert_eq!(
            (cut.reason, cut.batch_records),
            (reason, whole as u64),
            "{end}"
        );
    }
}

#[test]
fn zeros_or_lost_sectors_inside_a_batch_cut_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = a_then_b(dir.path());
    let mut zeros = bytes[..starts[4]].to_vec();
    zeros.resize(zeros.len() + 700, 0);
    let cut = only_a_is_left(dir.path(), &zeros, starts[2]);
    assert_eq!((cut.reason, cut.batch_records), (CutReason::ZeroFilled, 2));
    assert!(
        cut.to_string().ends_with(
            "zero bytes after the last whole entry, with the 2 whole records before it of the \
             same unfinished batch"
        ),
        "{cut}"
    );

    // A batch whose last entry lost its final sectors.
    let dir = tempfile::tempdir().unwrap();
    let mut writer = open(dir.path()).unwrap().writer;
    writer.append(&batch(0, 2)).unwrap();
    let mut second = batch(2, 3);
    second[2].value = Some(Bytes::from(vec![7u8; 2000]));
    writer.append(&second).unwrap();
    drop(writer);
    let mut lost = std::fs::read(log_path(dir.path())).unwrap();
    let starts = entry_starts(&lost);
    let boundary = (starts[4] / SECTOR + 1) * SECTOR;
    lost[boundary..].fill(0);
    let cut = only_a_is_left(dir.path(), &lost, starts[2]);
    assert_eq!((cut.reason, cut.batch_records), (CutReason::LostSectors, 2));
}

#[test]
fn a_batch_that_landed_whole_is_kept_and_batches_written_together_are_read_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_, starts) = a_then_b(dir.path());
    let mut loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.log.records(), batch(0, 6));
    assert_eq!(loaded.cut, None);
    // C and D in one write and one sync, as a group commit writes them.
    let (c, d) = (batch(6, 3), batch(9, 2));
    loaded
        .writer
        .write_batches([&c[..], &[][..], &d[..]])
        .unwrap();
    loaded.writer.sync().unwrap();
    assert_eq!(loaded.writer.next_offset(), 11);
    drop(loaded);
    let bytes = std::fs::read(log_path(dir.path())).unwrap();
    assert_eq!(open(dir.path()).unwrap().log.records(), batch(0, 11));
    // Torn inside D: A, B and C stay.
    let all = entry_starts(&bytes);
    let d_start = all[9];
    std::fs::write(log_path(dir.path()), &bytes[..d_start + 5]).unwrap();
    let loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.log.records(), batch(0, 9));
    let cut = loaded.cut.unwrap();
    assert_eq!((cut.position, cut.batch_records), (d_start as u64, 0));
    drop(loaded);
    // Torn after C's first record: A and B stay.
    only_a_or_b(dir.path(), &bytes[..all[7]], all[6], starts.len());
}

/// Loads `bytes` and checks that its first `records` records are left, cut at `at`.
fn only_a_or_b(dir: &Path, bytes: &[u8], at: usize, records: usize) {
    std::fs::write(log_path(dir), bytes).unwrap();
    let loaded = open(dir).unwrap();
    assert_eq!(loaded.log.records(), batch(0, records));
    assert_eq!(
        loaded.cut.map(|c| (c.position, c.reason, c.batch_records)),
        Some((at as u64, CutReason::TornBatch, 1))
    );
}

#[test]
fn damage_inside_a_batch_or_before_one_is_still_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = a_then_b(dir.path());
    let flipped = |at: usize| {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x04;
        flipped
    };
    // A bit flip in B's second entry, the rest of B after it: not a torn batch.
    let (position, after, reason) = corrupt_at(dir.path(), &flipped(starts[3] + 12));
    assert_eq!((position, after), (starts[3] as u64, AfterOffset::After(2)));
    assert!(reason.contains("a valid entry follows"), "{reason}");
    // In B's last entry, which is whole: corrupt too, not cut with its batch.
    let (position, _, reason) = corrupt_at(dir.path(), &flipped(bytes.len() - 1));
    assert_eq!(position, starts[5] as u64);
    assert!(reason.contains("checksum"), "{reason}");
    // In A, before a whole batch.
    let (position, after, _) = corrupt_at(dir.path(), &flipped(starts[1] + 12));
    assert_eq!((position, after), (starts[1] as u64, AfterOffset::After(0)));
    // B's first entries zeroed (sectors lost in the middle), its last ones there.
    let mut zeroed = bytes.clone();
    zeroed[starts[2]..starts[4]].fill(0);
    let (position, _, reason) = corrupt_at(dir.path(), &zeroed);
    assert_eq!(position, starts[2] as u64);
    assert!(
        reason.contains(&format!("a valid entry follows at byte {}", starts[4])),
        "{reason}"
    );
}

/// A format 2 file (as kcoord wrote it before batches): `log`'s records, each its own entry.
fn format_2(log: &MetadataLog) -> Vec<u8> {
    let mut out = MAGIC_V2.to_vec();
    out.extend_from_slice(&log.next_offset().to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(&out).to_be_bytes());
    let mut entries = BytesMut::new();
    for record in log.iter() {
        encode_entry(&record.to_record(), false, &mut entries).unwrap();
    }
    out.extend_from_slice(&entries);
    out
}

#[test]
fn a_format_2_file_loads_as_before_and_is_converted_to_format_3() {
    let dir = tempfile::tempdir().unwrap();
    let v2 = format_2(&gappy());
    std::fs::write(log_path(dir.path()), &v2).unwrap();
    let loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.converted_from, Some(2));
    assert_eq!(loaded.log.records(), gappy().records());
    assert_eq!((loaded.log.next_offset(), loaded.cut), (12, None));
    drop(loaded);

    // Torn inside its last entry: cut back to the entry before, each entry a batch of its own.
    let last = *entry_starts(&v2).last().unwrap();
    std::fs::write(log_path(dir.path()), &v2[..v2.len() - 3]).unwrap();
    let loaded = open(dir.path()).unwrap();
    assert_eq!(loaded.converted_from, Some(2));
    assert_eq!(loaded.log.records(), &gappy().records()[..2]);
    assert_eq!(
        loaded.cut,
        Some(TailCut {
            position: last as u64,
            bytes: (v2.len() - 3 - last) as u64,
            reason: CutReason::TornEntry,
            batch_records: 0,
        })
    );
    // Converted: the same records and next offset, in format 3.
    assert_eq!(
        std::fs::read(log_path(dir.path())).unwrap(),
        &encode_file(&loaded.log).unwrap()[..]
    );
    drop(loaded);
    let reloaded = open(dir.path()).unwrap();
    assert_eq!(reloaded.converted_from, None);
    assert_eq!(reloaded.log.records(), &gappy().records()[..2]);
    assert_eq!(reloaded.log.next_offset(), 12);
    drop(reloaded);

    // Bit 31 of a format 2 length is no "more" bit but an impossible length, as it was.
    let mut high = v2.clone();
    high[last] |= 0x80;
    let (position, _, reason) = corrupt_at(dir.path(), &high);
    assert_eq!(position, last as u64);
    assert!(reason.contains("impossible entry length"), "{reason}");
}

#[test]
fn the_writer_writes_image_bytes_then_batch_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = open(dir.path()).unwrap().writer;
    let (a, b, c) = (batch(0, 1), batch(1, 3), batch(4, 2));
    writer.append(&a).unwrap();
    writer.write_batches([&b[..], &c[..]]).unwrap();
    writer.sync().unwrap();
    let mut expected = image_bytes(&MetadataLog::new()).unwrap();
    for records in [&a, &b, &c] {
        expected.extend(batch_bytes(records).unwrap());
    }
    assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), expected);
    writer.rewrite(&gappy()).unwrap();
    assert_eq!(
        std::fs::read(log_path(dir.path())).unwrap(),
        image_bytes(&gappy()).unwrap()
    );
}
