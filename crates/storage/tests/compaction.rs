//! Compaction of `cleanup.policy=compact` logs: the latest value per key stays, older ones go,
//! offsets are kept, tombstones stay for `delete.retention.ms` and then go; in memory and on
//! disk, and a compacted disk log reopens the same.

use kcoord_record_batches::{BatchBuilder, BatchHeader, BatchOptions, Compression, RecordBatch};
use kcoord_storage::{IncomingBatch, Log, LogConfig};

const NOW: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        cleanup_compact: true,
        cleanup_delete: false,
        segment_bytes: 256,
        delete_retention_ms: 1_000,
        ..LogConfig::default()
    }
}

fn put(log: &mut Log, key: &str, value: Option<&str>, compression: Compression) {
    let mut b = BatchBuilder::new(BatchOptions {
        compression,
        ..BatchOptions::default()
    });
    b.push(NOW, Some(key.as_bytes()), value.map(str::as_bytes), &[])
        .unwrap();
    log.append(
        &IncomingBatch::from_batch(b.build().unwrap()).unwrap(),
        0,
        NOW,
    )
    .unwrap();
}

/// (offset, key, value) of every record from the log start.
fn contents(log: &Log) -> Vec<(i64, String, Option<String>)> {
    let read = log.read(log.log_start_offset(), usize::MAX, true).unwrap();
    let mut out = Vec::new();
    for chunk in read.chunks {
        let mut rest = chunk.load().unwrap();
        while !rest.is_empty() {
            let h = BatchHeader::parse(&rest).unwrap();
            let batch = RecordBatch::parse(rest.split_to(h.total_size() as usize)).unwrap();
            assert!(batch.is_crc_valid());
            for r in batch.decode_records(1 << 20).unwrap() {
                let s = |b: Option<bytes::Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
                out.push((
                    r.offset(batch.header()),
                    s(r.key.clone()).unwrap(),
                    s(r.value),
                ));
            }
        }
    }
    out
}

fn both(test: impl Fn(&mut Log, Option<&std::path::Path>)) {
    let mut memory = Log::in_memory("c-0", config(), NOW);
    test(&mut memory, None);
    let dir = tempfile::tempdir().unwrap();
    let mut disk = Log::open("c-0", dir.path(), config(), NOW, 86_400_000).unwrap();
    test(&mut disk, Some(dir.path()));
}

#[test]
fn the_latest_value_of_each_key_survives_with_its_offset() {
    both(|log, dir| {
        for round in 0..5 {
            for key in ["a", "b", "c"] {
                let v = format!("{key}{round}");
                put(
                    log,
                    key,
                    Some(&v),
                    if round % 2 == 0 {
                        Compression::None
                    } else {
                        Compression::Lz4
                    },
                );
            }
        }
        log.roll(NOW).unwrap();
        put(log, "z", Some("last"), Compression::None); // in the active segment, untouched
        assert!(log.segment_count() > 3);
        let stats = log.compact(NOW).unwrap();
        assert_eq!(stats.removed_records, 12, "{stats:?}");
        let kept = contents(log);
        let sealed: Vec<_> = kept.iter().filter(|(_, k, _)| k != "z").collect();
        assert!(
            sealed
                .iter()
                .all(|(_, _, v)| v.as_deref().is_some_and(|v| v.ends_with('4'))),
            "{kept:?}"
        );
        for key in ["a", "b", "c"] {
            assert_eq!(
                kept.iter().filter(|(_, k, _)| k == key).count(),
                1,
                "one value of {key}: {kept:?}"
            );
        }
        assert!(
            kept.windows(2).all(|w| w[0].0 < w[1].0),
            "offsets keep their order"
        );
        assert_eq!(log.log_end_offset(), 16, "the log end does not move");
        if let Some(dir) = dir {
            let reopened = Log::open("c-0", dir, config(), NOW, 86_400_000).unwrap();
            assert_eq!(contents(&reopened), kept);
        }
    });
}

#[test]
fn tombstones_stay_for_delete_retention_ms_then_go() {
    both(|log, _| {
        put(log, "k", Some("v1"), Compression::None);
        put(log, "k", None, Compression::None);
        put(log, "other", Some("x"), Compression::None);
        for i in 0..6 {
            put(log, "filler", Some(&format!("f{i}")), Compression::None);
        }
        log.compact(NOW).unwrap();
        let first = contents(log);
        assert!(
            first.iter().any(|(_, k, v)| k == "k" && v.is_none()),
            "the tombstone is still readable: {first:?}"
        );
        assert!(!first.iter().any(|(_, k, v)| k == "k" && v.is_some()));
        // Before the deadline a pass keeps it; after, it is gone.
        log.compact(NOW + 500).unwrap();
        assert!(contents(log)
            .iter()
            .any(|(_, k, v)| k == "k" && v.is_none()));
        log.compact(NOW + 1_001).unwrap();
        let after = contents(log);
        assert!(!after.iter().any(|(_, k, _)| k == "k"), "{after:?}");
        assert!(after.iter().any(|(_, k, _)| k == "other"));
    });
}

#[test]
fn logs_without_the_compact_policy_are_never_compacted() {
    let mut log = Log::in_memory(
        "d-0",
        LogConfig {
            segment_bytes: 256,
            ..LogConfig::default()
        },
        NOW,
    );
    for i in 0..10 {
        put(&mut log, "k", Some(&format!("v{i}")), Compression::None);
    }
    assert_eq!(log.compact(NOW).unwrap().removed_records, 0);
    assert_eq!(contents(&log).len(), 10);
}
