//! A roll seals the rolled segment off the write path (`kcoord_storage::seal`): the append
//! that rolls neither fsyncs nor writes the index; the seal the log hands out does both, once;
//! a flush runs the seals still pending; a restart before a seal ran scans the segment, and a
//! torn batch in it drops every later segment.

use std::path::Path;

use kcoord_record_batches::{BatchBuilder, BatchOptions, Compression};
use kcoord_storage::{IncomingBatch, Log, LogConfig};

const NOW: i64 = 1_700_000_000_000;
const EXPIRY: i64 = 86_400_000;

fn batch(value: &str) -> IncomingBatch {
    let mut b = BatchBuilder::new(BatchOptions {
        compression: Compression::None,
        ..BatchOptions::default()
    });
    b.push(NOW, Some(b"k"), Some(value.as_bytes()), &[])
        .unwrap();
    IncomingBatch::from_batch(b.build().unwrap()).unwrap()
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 200,
        ..LogConfig::default()
    }
}

fn index_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".index"))
        .collect();
    names.sort();
    names
}

/// Appends until the log has rolled `rolls` times.
fn append_until_rolled(log: &mut Log, rolls: usize) {
    let mut i = 0;
    while log.segment_count() < rolls + 1 {
        log.append(&batch(&format!("value-{i:04}")), 0, NOW)
            .unwrap();
        i += 1;
    }
}

#[test]
fn a_roll_leaves_the_seal_to_its_caller_and_the_seal_writes_the_index_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open("t-0", dir.path(), small_segments(), NOW, EXPIRY).unwrap();
    append_until_rolled(&mut log, 1);
    assert!(
        index_files(dir.path()).is_empty(),
        "the rolling append wrote no index"
    );
    let seals = log.take_seals();
    assert_eq!(seals.len(), 1);
    assert!(log.take_seals().is_empty(), "a seal is handed out once");
    seals[0].run().unwrap();
    assert_eq!(index_files(dir.path()), vec!["00000000000000000000.index"]);
    assert!(seals[0].is_settled());
    // Running it again changes nothing.
    let written = std::fs::read(dir.path().join("00000000000000000000.index")).unwrap();
    seals[0].run().unwrap();
    let again = std::fs::read(dir.path().join("00000000000000000000.index")).unwrap();
    assert_eq!(written, again);
}

#[test]
fn a_flush_runs_the_seals_not_yet_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::open("t-0", dir.path(), small_segments(), NOW, EXPIRY).unwrap();
    append_until_rolled(&mut log, 2);
    assert!(index_files(dir.path()).is_empty());
    log.flush().unwrap();
    assert_eq!(index_files(dir.path()).len(), 2);
    assert!(log.take_seals().iter().all(|s| s.is_settled()));
}

#[test]
fn a_restart_before_the_seal_ran_scans_the_segment_and_keeps_every_batch() {
    let dir = tempfile::tempdir().unwrap();
    let end = {
        let mut log = Log::open("t-0", dir.path(), small_segments(), NOW, EXPIRY).unwrap();
        append_until_rolled(&mut log, 2);
        log.log_end_offset()
        // Dropped without running its seals: a crash after the rolls.
    };
    assert!(index_files(dir.path()).is_empty());
    let log = Log::open("t-0", dir.path(), small_segments(), NOW, EXPIRY).unwrap();
    assert_eq!(log.log_end_offset(), end);
    assert_eq!(log.segment_count(), 3);
}

#[test]
fn a_torn_batch_in_an_unsealed_segment_drops_the_later_segments_at_recovery() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = Log::open("t-0", dir.path(), small_segments(), NOW, EXPIRY).unwrap();
        append_until_rolled(&mut log, 2);
    }
    // The first segment lost its last bytes (never synced before the crash).
    let first = dir.path().join("00000000000000000000.log");
    let len = std::fs::metadata(&first).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap();
    f.set_len(len - 5).unwrap();
    drop(f);
    let log = Log::open("t-0", dir.path(), small_segments(), NOW, EXPIRY).unwrap();
    // The cut segment is the active one again; what followed it is gone.
    assert_eq!(log.segment_count(), 1);
    let segments: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(segments, vec!["00000000000000000000.log".to_string()]);
}

#[test]
fn retention_deleting_a_segment_whose_seal_has_not_run_leaves_no_index_behind() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: 1,
        ..small_segments()
    };
    let mut log = Log::open("t-0", dir.path(), config, NOW, EXPIRY).unwrap();
    append_until_rolled(&mut log, 2);
    let seals = log.take_seals();
    assert!(log.apply_retention(NOW) > 0);
    // The deleted segments' seals ran before their files went; running them now is a no-op.
    for s in &seals {
        assert!(s.is_settled());
        let _ = s.run();
    }
    let stray: Vec<String> = index_files(dir.path())
        .into_iter()
        .filter(|n| !dir.path().join(n.replace(".index", ".log")).exists())
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn deleting_the_log_abandons_its_seals_and_leaves_nothing_behind() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("t-0");
    let mut log = Log::open("t-0", &dir, small_segments(), NOW, EXPIRY).unwrap();
    append_until_rolled(&mut log, 2);
    let seals = log.take_seals();
    log.delete().unwrap();
    // A seal run late (its task was still queued) writes nothing where the log was.
    for s in &seals {
        assert!(s.is_settled());
        s.run().unwrap();
    }
    assert!(!dir.exists());
}
