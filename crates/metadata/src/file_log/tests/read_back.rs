//! A writer reading its own file back: what a log kept nowhere else in memory is compacted from.

use super::*;

fn keyed(offset: u64, key: &'static [u8], value: Option<&'static [u8]>) -> LogRecord {
    LogRecord {
        offset,
        record_type: 17,
        version: 0,
        key: Some(Bytes::from_static(key)),
        value: value.map(Bytes::from_static),
    }
}

/// Written and not yet synced, after a rewrite whose next offset lies past its last record:
/// every record comes back, and the next offset is the writer's.
#[test]
fn a_writer_reads_back_every_record_it_wrote_synced_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = open(dir.path()).unwrap().writer;
    writer.rewrite(&gappy()).unwrap();
    let batch = [keyed(12, b"a", Some(b"1")), keyed(13, b"a", None)];
    writer.write(&batch).unwrap();
    let back = writer.read_back().unwrap();
    let mut expected = gappy().records();
    expected.extend(batch);
    assert_eq!(back.records(), expected);
    assert_eq!(back.next_offset(), 14);
    writer.sync().unwrap();
    assert_eq!(writer.read_back().unwrap().records(), expected);
}

/// Bytes changed under the writer are an error, not a shorter log.
#[test]
fn a_file_torn_under_its_writer_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = open(dir.path()).unwrap().writer;
    writer
        .append(&[keyed(0, b"a", Some(b"1")), keyed(1, b"b", Some(b"2"))])
        .unwrap();
    let len = std::fs::metadata(log_path(dir.path())).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(log_path(dir.path()))
        .unwrap();
    file.set_len(len - 3).unwrap();
    assert!(writer.read_back().is_err());
}
