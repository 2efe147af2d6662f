//! The record pattern of testdata/KafkaFixtures.java, and a dump of batches in the format its
//! `dump` mode prints.

#![allow(dead_code)]

use bytes::Bytes;
use kcoord_record_batches::{
    BatchBuilder, BatchHeader, BatchOptions, Compression, Record, RecordBatch, RecordHeader,
};

pub const BASE_TS: i64 = 1_700_000_000_000;

pub fn key(i: i32) -> Option<Vec<u8>> {
    (i % 3 != 2).then(|| format!("key-{i}").into_bytes())
}

pub fn value(i: i32, reps: usize) -> Option<Vec<u8>> {
    (i % 5 != 4).then(|| format!("value-{i}").repeat(reps).into_bytes())
}

pub fn headers(i: i32) -> Vec<RecordHeader> {
    if i % 2 != 0 {
        return Vec::new();
    }
    vec![
        RecordHeader::new(
            Bytes::from_static(b"h1"),
            Some(Bytes::from(format!("v{i}"))),
        ),
        RecordHeader::new(Bytes::from_static(b"h2"), None),
    ]
}

/// Record `i` of the pattern, at offset delta `delta` in a batch whose base timestamp is
/// `base_ts`.
pub fn expected(i: i32, delta: i32, reps: usize, base_ts: i64) -> Record {
    Record {
        attributes: 0,
        timestamp_delta: BASE_TS + 10 * i64::from(i) - base_ts,
        offset_delta: delta,
        key: key(i).map(Bytes::from),
        value: value(i, reps).map(Bytes::from),
        headers: headers(i),
    }
}

/// The options of the Java generator's `pattern` batches.
pub fn pattern_options(compression: Compression) -> BatchOptions {
    BatchOptions {
        compression,
        producer_id: 4242,
        producer_epoch: 3,
        base_sequence: 17,
        ..BatchOptions::default()
    }
}

pub fn pattern(compression: Compression, n: i32, reps: usize) -> Bytes {
    let mut b = BatchBuilder::new(pattern_options(compression));
    for i in 0..n {
        b.push(
            BASE_TS + 10 * i64::from(i),
            key(i).as_deref(),
            value(i, reps).as_deref(),
            &headers(i),
        )
        .unwrap();
    }
    b.build().unwrap()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn hex_or_null(b: &Option<Bytes>) -> String {
    b.as_ref().map_or("null".to_string(), |b| hex(b))
}

/// One batch as KafkaFixtures.java's `dump` prints it.
pub fn dump_batch(batch: &RecordBatch) -> String {
    let h: &BatchHeader = batch.header();
    let horizon = match h.delete_horizon_ms() {
        Some(ms) => format!("OptionalLong[{ms}]"),
        None => "OptionalLong.empty".to_string(),
    };
    let mut out = format!(
        "batch base={} last={} count={} crc={} compression={} type={} max={} pid={} epoch={} seq={} lastseq={} txn={} control={} leader={} horizon={}\n",
        h.base_offset,
        h.last_offset(),
        h.record_count,
        h.crc,
        h.compression().unwrap().name(),
        h.timestamp_type().name(),
        h.max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        h.last_sequence(),
        h.is_transactional(),
        h.is_control(),
        h.partition_leader_epoch,
        horizon,
    );
    for r in batch.decode_records(64 << 20).unwrap() {
        let hs: Vec<String> = r
            .headers
            .iter()
            .map(|x| format!("{}:{}", x.key_str().unwrap(), hex_or_null(&x.value)))
            .collect();
        out += &format!(
            "record off={} ts={} key={} value={} headers=[{}]\n",
            r.offset(h),
            r.timestamp(h),
            hex_or_null(&r.key),
            hex_or_null(&r.value),
            hs.join(", ")
        );
    }
    out
}
