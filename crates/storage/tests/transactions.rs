//! Transactions in a partition log: the last stable offset, markers and their epoch checks,
//! the aborted transaction index and read_committed reads, the verification guard, the state
//! rebuilt after a restart (with a transaction still open and one aborted), and compaction
//! bounded by the last stable offset. In memory and on disk where it matters.

use kcoord_record_batches::{BatchBuilder, BatchHeader, BatchOptions, RecordBatch};
use kcoord_storage::{AbortedTxn, IncomingBatch, Log, LogConfig, TxnMarker};

const NOW: i64 = 1_700_000_000_000;
const EXPIRY: i64 = 86_400_000;

/// A batch of `values` (key "k"); transactional when `txn`.
fn batch(pid: i64, epoch: i16, seq: i32, values: &[&str], txn: bool) -> IncomingBatch {
    batch_keyed(
        pid,
        epoch,
        seq,
        &values.iter().map(|v| ("k", *v)).collect::<Vec<_>>(),
        txn,
    )
}

fn batch_keyed(pid: i64, epoch: i16, seq: i32, kv: &[(&str, &str)], txn: bool) -> IncomingBatch {
    let mut b = BatchBuilder::new(BatchOptions {
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: seq,
        transactional: txn,
        ..BatchOptions::default()
    });
    for (k, v) in kv {
        b.push(NOW, Some(k.as_bytes()), Some(v.as_bytes()), &[])
            .unwrap();
    }
    IncomingBatch::from_batch(b.build().unwrap()).unwrap()
}

/// Appends a transactional batch, verifying it first as Produce does.
fn append_txn(log: &mut Log, pid: i64, epoch: i16, seq: i32, values: &[&str]) -> i64 {
    let guard = log
        .maybe_start_transaction_verification(pid, seq, epoch, NOW)
        .unwrap();
    log.append_verified(&batch(pid, epoch, seq, values, true), 0, guard, NOW)
        .unwrap()
        .base_offset
}

fn marker(pid: i64, epoch: i16, commit: bool) -> TxnMarker {
    TxnMarker {
        producer_id: pid,
        producer_epoch: epoch,
        coordinator_epoch: 0,
        commit,
        transaction_version: 0,
    }
}

/// (offset, value, is_control) of the batches a read returned.
fn offsets(read: &kcoord_storage::ReadResult) -> Vec<(i64, bool)> {
    let mut out = Vec::new();
    for chunk in &read.chunks {
        let mut rest = chunk.load().unwrap();
        while !rest.is_empty() {
            let h = BatchHeader::parse(&rest).unwrap();
            let b = RecordBatch::parse(rest.split_to(h.total_size() as usize)).unwrap();
            out.push((b.header().base_offset, b.header().is_control()));
        }
    }
    out
}

fn both(test: impl Fn(&mut Log)) {
    test(&mut Log::in_memory("t-0", LogConfig::default(), NOW));
    let dir = tempfile::tempdir().unwrap();
    test(&mut Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap());
}

#[test]
fn the_last_stable_offset_waits_for_the_earliest_ongoing_transaction() {
    both(|log| {
        assert_eq!(append_txn(log, 1, 0, 0, &["a", "b"]), 0);
        log.append(&batch(9, 0, 0, &["plain"], false), 0, NOW)
            .unwrap();
        assert_eq!(append_txn(log, 2, 0, 0, &["c"]), 3);
        assert_eq!((log.high_watermark(), log.last_stable_offset()), (4, 0));
        // A retry of the first batch is a duplicate, whatever the transaction.
        let dup = log
            .append(&batch(1, 0, 0, &["a", "b"], true), 0, NOW)
            .unwrap();
        assert!(dup.duplicate && dup.base_offset == 0);
        let commit = log.append_marker(&marker(1, 0, true), 0, NOW).unwrap();
        assert_eq!(commit.base_offset, 4);
        assert_eq!(log.last_stable_offset(), 3, "producer 2 is still open");
        log.append_marker(&marker(2, 0, false), 0, NOW).unwrap();
        assert_eq!(log.last_stable_offset(), 6);
        assert_eq!(log.last_stable_offset(), log.high_watermark());
    });
}

#[test]
fn read_committed_stops_at_the_lso_and_lists_the_aborted_transactions() {
    both(|log| {
        append_txn(log, 1, 0, 0, &["a1", "a2"]); // 0-1, to be aborted
        append_txn(log, 2, 0, 0, &["b1"]); // 2, to be committed
        log.append(&batch(-1, -1, -1, &["plain"], false), 0, NOW)
            .unwrap(); // 3
        let uncommitted = log.read(0, usize::MAX, true).unwrap();
        assert_eq!(offsets(&uncommitted).len(), 3);
        assert_eq!(uncommitted.last_stable_offset, 0);
        assert_eq!(uncommitted.aborted_transactions, None);
        let early = log.read_committed(0, usize::MAX, true).unwrap();
        assert!(early.chunks.is_empty(), "nothing is decided yet");
        assert_eq!(early.aborted_transactions, Some(vec![]));

        log.append_marker(&marker(1, 0, false), 0, NOW).unwrap(); // 4
        let aborted = AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 4,
            last_stable_offset: 2,
        };
        assert_eq!(
            log.aborted_transactions()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            vec![aborted]
        );
        let read = log.read_committed(0, usize::MAX, true).unwrap();
        assert_eq!(read.last_stable_offset, 2);
        assert_eq!(offsets(&read), vec![(0, false)]);
        assert_eq!(read.aborted_transactions, Some(vec![aborted]));

        log.append_marker(&marker(2, 0, true), 0, NOW).unwrap(); // 5
        let read = log.read_committed(0, usize::MAX, true).unwrap();
        assert_eq!(read.last_stable_offset, 6);
        assert_eq!(
            offsets(&read),
            vec![(0, false), (2, false), (3, false), (4, true), (5, true)]
        );
        assert_eq!(read.aborted_transactions, Some(vec![aborted]));
        // From past the aborted transaction's marker: not listed.
        let later = log.read_committed(5, usize::MAX, true).unwrap();
        assert_eq!(later.aborted_transactions, Some(vec![]));
        // A read of the first batch only still overlaps it.
        let first = log.read_committed(0, 1, true).unwrap();
        assert_eq!(offsets(&first), vec![(0, false)]);
        assert_eq!(first.aborted_transactions, Some(vec![aborted]));
    });
}

#[test]
fn markers_from_older_epochs_are_fenced() {
    both(|log| {
        append_txn(log, 1, 5, 0, &["a"]);
        let old = log.append_marker(&marker(1, 4, true), 0, NOW).unwrap_err();
        assert_eq!(old.error_code(), 47);
        let fenced_coordinator = TxnMarker {
            coordinator_epoch: 3,
            ..marker(1, 5, false)
        };
        log.append_marker(&fenced_coordinator, 0, NOW).unwrap();
        append_txn(log, 1, 5, 1, &["b"]);
        let zombie = TxnMarker {
            coordinator_epoch: 2,
            ..marker(1, 5, true)
        };
        assert_eq!(
            log.append_marker(&zombie, 0, NOW).unwrap_err().error_code(),
            52
        );
        // Transaction version 2: the marker's epoch must be newer than the producer's.
        let tv2 = |epoch| TxnMarker {
            coordinator_epoch: 3,
            transaction_version: 2,
            ..marker(1, epoch, true)
        };
        assert_eq!(
            log.append_marker(&tv2(5), 0, NOW).unwrap_err().error_code(),
            47
        );
        log.append_marker(&tv2(6), 0, NOW).unwrap();
        assert_eq!(log.last_stable_offset(), log.high_watermark());
        // Its retry, once the transaction ended, is written again (KAFKA-19999).
        log.append_marker(&tv2(6), 0, NOW).unwrap();
        // A data batch of the old epoch is refused.
        let stale = log
            .append(&batch(1, 5, 2, &["c"], false), 0, NOW)
            .unwrap_err();
        assert_eq!(stale.error_code(), 47);
    });
}

#[test]
fn a_transaction_starts_only_with_a_verification() {
    both(|log| {
        let unverified = log
            .append(&batch(1, 0, 0, &["a"], true), 0, NOW)
            .unwrap_err();
        assert_eq!(unverified.error_code(), 48);
        let guard = log
            .maybe_start_transaction_verification(1, 0, 0, NOW)
            .unwrap();
        assert!(guard.is_some());
        assert_eq!(log.verification_state(1).map(|v| v.guard), guard);
        // A marker written meanwhile ends what the guard verified.
        log.append_marker(&marker(1, 0, false), 0, NOW).unwrap();
        let late = log.append_verified(&batch(1, 0, 0, &["a"], true), 0, guard, NOW);
        assert_eq!(late.unwrap_err().error_code(), 48);
        append_txn(log, 1, 0, 0, &["a"]);
        assert!(log.verification_state(1).is_none(), "spent");
        assert_eq!(
            log.maybe_start_transaction_verification(1, 1, 0, NOW)
                .unwrap(),
            None,
            "ongoing: nothing to verify"
        );
        log.append(&batch(1, 0, 1, &["b"], true), 0, NOW).unwrap();
        // An idempotent batch while the transaction is ongoing is refused.
        let plain = log
            .append(&batch(1, 0, 2, &["c"], false), 0, NOW)
            .unwrap_err();
        assert_eq!(plain.error_code(), 48);
        // So is a transactional one of a newer epoch, verified or not.
        let guard = log
            .maybe_start_transaction_verification(1, 0, 1, NOW)
            .unwrap();
        let newer = log.append_verified(&batch(1, 1, 0, &["d"], true), 0, guard, NOW);
        assert_eq!(newer.unwrap_err().error_code(), 48);
        assert_eq!(
            log.maybe_start_transaction_verification(1, 0, -1, NOW)
                .unwrap_err()
                .to_string(),
            "Epoch of producer 1 is -1, which is smaller than the last seen epoch 0"
        );
    });
}

#[test]
fn a_restart_rebuilds_open_and_aborted_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig::default();
    let (aborted, summaries) = {
        let mut log = Log::open("t-0", dir.path(), config.clone(), NOW, EXPIRY).unwrap();
        append_txn(&mut log, 1, 0, 0, &["a"]); // 0: aborted
        append_txn(&mut log, 2, 3, 0, &["b"]); // 1: stays open
        log.append_marker(
            &TxnMarker {
                coordinator_epoch: 7,
                ..marker(1, 0, false)
            },
            0,
            NOW,
        )
        .unwrap(); // 2
        log.roll(NOW).unwrap(); // sealed: read back from its index
        append_txn(&mut log, 3, 0, 0, &["c"]); // 3: aborted, in the active segment (scanned)
        log.append_marker(&marker(3, 0, false), 0, NOW).unwrap(); // 4
        log.flush().unwrap();
        assert_eq!(log.last_stable_offset(), 1);
        (
            log.aborted_transactions()
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            log.producer_summaries(),
        )
    };
    assert_eq!(aborted.len(), 2);
    let mut log = Log::open("t-0", dir.path(), config, NOW, EXPIRY).unwrap();
    assert_eq!(
        log.last_stable_offset(),
        1,
        "the open transaction still holds it"
    );
    assert_eq!(
        log.aborted_transactions()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        aborted
    );
    assert_eq!(log.producer_summaries(), summaries);
    let p1 = summaries.iter().find(|s| s.producer_id == 1).unwrap();
    assert_eq!((p1.coordinator_epoch, p1.current_txn_start_offset), (7, -1));
    let p2 = summaries.iter().find(|s| s.producer_id == 2).unwrap();
    assert_eq!(
        (
            p2.producer_epoch,
            p2.last_sequence,
            p2.current_txn_start_offset
        ),
        (3, 0, 1)
    );
    // The coordinator epoch survived: an older coordinator is still fenced.
    let zombie = TxnMarker {
        coordinator_epoch: 6,
        ..marker(1, 0, true)
    };
    assert_eq!(
        log.append_marker(&zombie, 0, NOW).unwrap_err().error_code(),
        52
    );
    // Producer 2's transaction goes on without a new verification, and ends.
    log.append(&batch(2, 3, 1, &["b2"], true), 0, NOW).unwrap();
    log.append_marker(&marker(2, 3, true), 0, NOW).unwrap();
    assert_eq!(log.last_stable_offset(), log.high_watermark());
    let read = log.read_committed(0, usize::MAX, true).unwrap();
    let pids: Vec<i64> = read
        .aborted_transactions
        .unwrap()
        .iter()
        .map(|t| t.producer_id)
        .collect();
    assert_eq!(pids, vec![1, 3]);
}

#[test]
fn a_torn_marker_leaves_the_transaction_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
        append_txn(&mut log, 1, 0, 0, &["a"]);
        log.append_marker(&marker(1, 0, false), 0, NOW).unwrap();
        log.flush().unwrap();
    }
    // The marker's last bytes never reached the disk.
    let file = dir.path().join("00000000000000000000.log");
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let log = Log::open("t-0", dir.path(), LogConfig::default(), NOW, EXPIRY).unwrap();
    assert_eq!((log.high_watermark(), log.last_stable_offset()), (1, 0));
    assert!(log.aborted_transactions().is_empty());
    assert!(log
        .read_committed(0, usize::MAX, true)
        .unwrap()
        .chunks
        .is_empty());
}

#[test]
fn producers_with_an_open_transaction_do_not_expire() {
    let mut log = Log::in_memory("t-0", LogConfig::default(), NOW);
    append_txn(&mut log, 1, 0, 0, &["a"]);
    log.append(&batch(2, 0, 0, &["b"], false), 0, NOW).unwrap();
    assert_eq!(log.expire_producers(NOW + 2 * EXPIRY, EXPIRY), 1);
    assert!(log.has_ongoing_transaction(1, 0));
}

fn compacted() -> LogConfig {
    LogConfig {
        cleanup_compact: true,
        cleanup_delete: false,
        min_cleanable_dirty_ratio: 0.0,
        ..LogConfig::default()
    }
}

/// (offset, key, value) of every record from the log start.
fn records(log: &Log) -> Vec<(i64, String, String)> {
    let read = log.read(log.log_start_offset(), usize::MAX, true).unwrap();
    let mut out = Vec::new();
    for chunk in read.chunks {
        let mut rest = chunk.load().unwrap();
        while !rest.is_empty() {
            let h = BatchHeader::parse(&rest).unwrap();
            let b = RecordBatch::parse(rest.split_to(h.total_size() as usize)).unwrap();
            if b.header().is_control() {
                continue;
            }
            for r in b.decode_records(1 << 20).unwrap() {
                let s = |x: Option<bytes::Bytes>| String::from_utf8(x.unwrap().to_vec()).unwrap();
                out.push((r.offset(b.header()), s(r.key.clone()), s(r.value)));
            }
        }
    }
    out
}

#[test]
fn compaction_stops_at_the_lso_and_drops_aborted_records() {
    let mut log = Log::in_memory("c-0", compacted(), NOW);
    let put = |log: &mut Log, v: &str| {
        log.append(&batch_keyed(-1, -1, -1, &[("k", v)], false), 0, NOW)
            .unwrap();
    };
    put(&mut log, "v1"); // 0
    append_txn(&mut log, 1, 0, 0, &["aborted"]); // 1
    log.append_marker(&marker(1, 0, false), 0, NOW).unwrap(); // 2
    log.roll(NOW).unwrap();
    log.compact(NOW).unwrap();
    // The aborted value neither survives nor hides the committed one.
    assert_eq!(records(&log), vec![(0, "k".into(), "v1".into())]);

    append_txn(&mut log, 2, 0, 0, &["open"]); // 3: undecided
    log.roll(NOW).unwrap();
    put(&mut log, "v2"); // 4
    log.roll(NOW).unwrap();
    log.compact(NOW).unwrap();
    let kept: Vec<String> = records(&log).into_iter().map(|r| r.2).collect();
    assert_eq!(
        kept,
        vec!["v1", "open", "v2"],
        "nothing at or past the LSO is cleaned"
    );

    log.append_marker(&marker(2, 0, true), 0, NOW).unwrap();
    log.roll(NOW).unwrap();
    log.compact(NOW).unwrap();
    let kept: Vec<String> = records(&log).into_iter().map(|r| r.2).collect();
    assert_eq!(kept, vec!["v2"]);
}
