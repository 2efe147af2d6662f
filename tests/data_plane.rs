//! The data plane with an independent client: librdkafka (through `rdkafka`) produces with an
//! idempotent producer and acks=all and reads back with an assigned consumer, against the real
//! daemon, in memory and with `log.dirs`; restarts (graceful and `kill -9`) lose nothing that
//! was acknowledged; retention and compaction work over several segments.

mod common;
mod data_plane_support;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{wait_until, Daemon, IO_TIMEOUT};
use data_plane_support::*;
use rdkafka::consumer::Consumer;
use rdkafka::producer::Producer;
use rdkafka::Offset;

fn records(partitions: i32, per_partition: usize, base_ts: i64) -> Vec<Rec> {
    let mut out = Vec::new();
    for i in 0..per_partition {
        for p in 0..partitions {
            out.push(Rec {
                partition: p,
                offset: -1,
                key: Some(format!("key-{p}-{i}").into_bytes()),
                value: Some(format!("value {p}/{i} {}", "x".repeat(i % 50)).into_bytes()),
                headers: vec![
                    ("h1".into(), Some(format!("{i}").into_bytes())),
                    ("empty".into(), None),
                ],
                timestamp: Some(base_ts + i as i64),
            });
        }
    }
    out
}

/// Every record came back once, in order per partition, with its key, value, headers and
/// timestamp intact.
fn assert_same(sent: &[Rec], got: &[Rec]) {
    let by_partition = |rs: &[Rec]| -> BTreeMap<i32, Vec<Rec>> {
        let mut m: BTreeMap<i32, Vec<Rec>> = BTreeMap::new();
        for r in rs {
            m.entry(r.partition).or_default().push(r.clone());
        }
        m
    };
    assert_eq!(by_partition(got), by_partition(sent));
}

#[test]
fn an_idempotent_producer_with_acks_all_and_an_assigned_consumer_see_the_same_records() {
    let daemon = Daemon::start(&[]);
    create_topic(&daemon, "orders", 3, &[]);
    let producer = producer(&daemon, &[]);
    let sent = produce(&producer, "orders", &records(3, 200, now_ms() - 10_000));
    for p in 0..3 {
        let offsets: Vec<i64> = sent
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.offset)
            .collect();
        assert_eq!(
            offsets,
            (0..200).collect::<Vec<i64>>(),
            "partition {p}: dense offsets from 0"
        );
        assert_eq!(watermarks(&daemon, "orders", p), (0, 200));
    }
    let got = consume(&daemon, "orders", &[0, 1, 2], sent.len(), &[]);
    assert_same(&sent, &got);
    // Consumers with the other isolation level and fetch sessions see the same.
    let committed = consume(
        &daemon,
        "orders",
        &[0, 1, 2],
        sent.len(),
        &[("isolation.level", "read_committed")],
    );
    assert_same(&sent, &committed);
    daemon.stop();
}

#[test]
fn every_compression_codec_round_trips() {
    let daemon = Daemon::start(&[]);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        create_topic(&daemon, &topic, 1, &[]);
        let producer = producer(
            &daemon,
            &[("compression.codec", codec), ("linger.ms", "20")],
        );
        let sent = produce(&producer, &topic, &records(1, 300, now_ms()));
        let got = consume(&daemon, &topic, &[0], sent.len(), &[]);
        assert_same(&sent, &got);
    }
    let log = daemon.stop();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn offsets_for_times_finds_the_first_record_at_or_after_a_timestamp() {
    let daemon = Daemon::start(&[]);
    create_topic(&daemon, "times", 1, &[]);
    let t0 = now_ms() - 60_000;
    let recs: Vec<Rec> = (0..10)
        .map(|i| Rec {
            timestamp: Some(t0 + i * 1000),
            ..Rec::new(0, "k", &format!("v{i}"))
        })
        .collect();
    produce(&producer(&daemon, &[("linger.ms", "0")]), "times", &recs);
    let consumer = consumer(&daemon, &[]);
    let lookup = |ts: i64| {
        let mut tpl = rdkafka::TopicPartitionList::new();
        tpl.add_partition_offset("times", 0, Offset::Offset(ts))
            .unwrap();
        let found = consumer
            .offsets_for_times(tpl, WAIT)
            .expect("offsets_for_times");
        found.find_partition("times", 0).unwrap().offset()
    };
    assert_eq!(lookup(t0 + 2500), Offset::Offset(3));
    assert_eq!(lookup(t0), Offset::Offset(0));
    assert_eq!(lookup(t0 + 9000), Offset::Offset(9));
    assert_eq!(
        lookup(t0 + 9001),
        Offset::End,
        "nothing at or after: -1, which librdkafka calls End"
    );
    daemon.stop();
}

#[test]
fn a_restart_with_log_dirs_finds_every_acknowledged_record() {
    let dir = tempfile::tempdir().unwrap();
    let logs = format!("log.dirs={}", dir.path().display());
    let daemon = Daemon::start(&[&logs, "log.segment.bytes=1048576"]);
    create_topic(&daemon, "durable", 2, &[("segment.bytes", "1048576")]);
    let mut recs = records(2, 2000, now_ms());
    for r in &mut recs {
        r.value = Some(vec![b'v'; 700]);
    }
    let sent = produce(&producer(&daemon, &[]), "durable", &recs);
    // A rolled segment is sealed off the write path: its index appears while the daemon runs,
    // not only with the flush at its shutdown.
    let indexed = wait_until(IO_TIMEOUT, || {
        let index = dir
            .path()
            .join("durable-0")
            .join("00000000000000000000.index");
        index.exists().then_some(())
    });
    assert!(indexed.is_some(), "the first segment was never sealed");
    daemon.stop();
    assert!(dir
        .path()
        .join("durable-0")
        .join("00000000000000000000.log")
        .exists());
    let segments = std::fs::read_dir(dir.path().join("durable-0"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert!(
        segments >= 2,
        "1.4 MB in 1 MiB segments: {segments} segment(s)"
    );

    let again = Daemon::start(&[&logs, "log.segment.bytes=1048576"]);
    let got = consume(&again, "durable", &[0, 1], sent.len(), &[]);
    assert_same(&sent, &got);
    // The topic itself came back from the metadata log beside the partitions.
    assert_eq!(watermarks(&again, "durable", 1), (0, 2000));
    // Producer ids are not handed out twice across the restart: a new idempotent producer
    // appends after the old data without a sequence conflict.
    let more = produce(&producer(&again, &[]), "durable", &records(2, 10, now_ms()));
    assert!(more.iter().all(|r| r.offset >= 2000));
    again.stop();
}

#[test]
fn kill_9_in_the_middle_of_a_load_loses_nothing_acknowledged_when_every_append_is_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let logs = format!("log.dirs={}", dir.path().display());
    let config = [logs.as_str(), "log.flush.interval.messages=1"];
    let daemon = Daemon::start(&config);
    create_topic(&daemon, "crash", 1, &[]);
    let producer = producer(
        &daemon,
        &[("linger.ms", "1"), ("message.timeout.ms", "5000")],
    );
    // A first round, all acknowledged; then a second one killed in the middle.
    let acked = produce(&producer, "crash", &records(1, 300, now_ms()));
    for r in records(1, 2000, now_ms()) {
        let mut rec: rdkafka::producer::BaseRecord<'_, [u8], [u8]> =
            rdkafka::producer::BaseRecord::to("crash").partition(0);
        let value = r.value.clone().unwrap();
        rec = rec.payload(&value);
        let _ = producer.send(rec);
        producer.poll(Duration::ZERO);
    }
    producer.poll(Duration::from_millis(50));
    daemon.kill();
    let _ = producer.flush(Duration::from_secs(6));
    let mut acknowledged: Vec<i64> = acked.iter().map(|r| r.offset).collect();
    acknowledged.extend(
        producer
            .context()
            .taken()
            .into_iter()
            .filter_map(Result::ok)
            .map(|(_, o)| o),
    );
    let last = acknowledged.iter().copied().max().unwrap();

    let again = Daemon::start(&config);
    let (low, high) = watermarks(&again, "crash", 0);
    assert_eq!(low, 0);
    assert!(
        high > last,
        "offset {last} was acknowledged but the log ends at {high}"
    );
    let got = consume(&again, "crash", &[0], high as usize, &[]);
    assert_eq!(
        got.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..high).collect::<Vec<_>>()
    );
    assert_same(&acked, &got[..acked.len()]);
    again.stop();
}

#[test]
fn retention_deletes_expired_segments_and_keeps_new_records() {
    let daemon = Daemon::start(&["log.retention.check.interval.ms=200"]);
    create_topic(
        &daemon,
        "expiring",
        1,
        &[("retention.ms", "60000"), ("segment.ms", "1")],
    );
    let old = now_ms() - 3_600_000;
    let producer = producer(&daemon, &[("linger.ms", "0")]);
    for i in 0..5 {
        // One batch per send, each a millisecond-plus later: a segment each.
        produce(
            &producer,
            "expiring",
            &[Rec {
                timestamp: Some(old + i * 10),
                ..Rec::new(0, "k", "old")
            }],
        );
    }
    let expired = wait_until(WAIT, || {
        let (low, high) = watermarks(&daemon, "expiring", 0);
        (low == 5 && high == 5).then_some(())
    });
    assert!(
        expired.is_some(),
        "watermarks {:?}:\n{}",
        watermarks(&daemon, "expiring", 0),
        daemon.stderr_log()
    );
    let fresh = produce(&producer, "expiring", &[Rec::new(0, "k", "new")]);
    assert_eq!(
        fresh[0].offset, 5,
        "offsets go on after the deleted segments"
    );
    let got = consume(&daemon, "expiring", &[0], 1, &[]);
    assert_eq!(got[0].value.as_deref(), Some(&b"new"[..]));
    daemon.stop();
}

#[test]
fn compaction_keeps_the_latest_value_of_each_key_and_drops_tombstones_after_delete_retention() {
    let daemon = Daemon::start(&["log.cleaner.backoff.ms=100"]);
    create_topic(
        &daemon,
        "changelog",
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.ms", "1"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "1500"),
        ],
    );
    let producer = producer(&daemon, &[("linger.ms", "0")]);
    let t0 = now_ms();
    let mut ts = t0;
    let mut put = |key: &str, value: Option<&str>| {
        ts += 10;
        let rec = Rec {
            value: value.map(|v| v.as_bytes().to_vec()),
            timestamp: Some(ts),
            ..Rec::new(0, key, "")
        };
        produce(&producer, "changelog", &[rec]);
    };
    for round in 0..4 {
        for key in ["a", "b", "c"] {
            put(key, Some(&format!("{key}{round}")));
        }
    }
    put("a", None); // a tombstone for a
    put("z", Some("last")); // rolls the tombstone's segment out of the active one
    let compacted = wait_until(WAIT, || {
        let got = read_compacted(&daemon);
        let b: Vec<_> = got.iter().filter(|(k, _)| k == "b").collect();
        (b.len() == 1).then_some(got)
    })
    .unwrap_or_else(|| {
        panic!(
            "not compacted: {:?}\n{}",
            read_compacted(&daemon),
            daemon.stderr_log()
        )
    });
    assert_eq!(
        compacted
            .iter()
            .filter(|(k, _)| k == "b")
            .collect::<Vec<_>>(),
        vec![&("b".to_owned(), Some("b3".to_owned()))]
    );
    assert!(compacted.contains(&("c".to_owned(), Some("c3".to_owned()))));
    assert!(
        compacted.contains(&("a".to_owned(), None)),
        "the tombstone stays for delete.retention.ms: {compacted:?}"
    );
    assert!(!compacted.iter().any(|(k, v)| k == "a" && v.is_some()));
    let gone = wait_until(WAIT, || {
        let got = read_compacted(&daemon);
        (!got.iter().any(|(k, _)| k == "a")).then_some(got)
    });
    assert!(
        gone.is_some(),
        "the tombstone outlived delete.retention.ms: {:?}",
        read_compacted(&daemon)
    );
    assert_eq!(
        watermarks(&daemon, "changelog", 0).1,
        14,
        "the log end never moves back"
    );
    daemon.stop();
}

/// (key, value) of every record the log holds now, read with librdkafka.
fn read_compacted(daemon: &Daemon) -> Vec<(String, Option<String>)> {
    let (_, high) = watermarks(daemon, "changelog", 0);
    let consumer = consumer(daemon, &[]);
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset("changelog", 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let position = consumer
            .position()
            .ok()
            .and_then(|p| p.find_partition("changelog", 0).map(|e| e.offset()));
        if matches!(position, Some(Offset::Offset(o)) if o >= high)
            || std::time::Instant::now() > deadline
        {
            break;
        }
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            use rdkafka::message::Message;
            out.push((
                String::from_utf8(m.key().unwrap_or_default().to_vec()).unwrap(),
                m.payload().map(|v| String::from_utf8(v.to_vec()).unwrap()),
            ));
            if m.offset() + 1 >= high {
                break;
            }
        }
    }
    out
}
