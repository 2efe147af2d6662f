//! Splitting, header edits, hostile inputs and build → parse → decode round trips.

mod common;

use bytes::{Bytes, BytesMut};
use common::*;
use kcoord_record_batches::*;
use proptest::prelude::*;

const ALL: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

fn header_of(b: &[u8]) -> BatchHeader {
    BatchHeader::parse(b).unwrap()
}

#[test]
fn splitter_yields_slices_and_types_a_torn_tail() {
    let a = pattern(Compression::None, 3, 1);
    let b = pattern(Compression::Gzip, 4, 1);
    let whole = [&a[..], &b[..]].concat();
    for cut in 1..b.len() {
        let mut bytes = whole.clone();
        bytes.truncate(a.len() + cut);
        let mut split = split_batches(Bytes::from(bytes));
        let (h, first) = split.next().unwrap().unwrap();
        assert_eq!((h.record_count, first.len()), (3, a.len()));
        match split.next() {
            Some(Err(RecordsError::Truncated {
                position,
                available,
                ..
            })) => {
                assert_eq!((position, available), (a.len(), cut));
            }
            other => panic!("cut {cut}: {other:?}"),
        }
        assert_eq!(split.position(), a.len());
        assert!(split.next().is_none());
    }
    let all: Vec<_> = split_batches(Bytes::from(whole))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all.len(), 2);
    assert!(split_batches(Bytes::new()).next().is_none());
}

#[test]
fn splitter_refuses_bad_lengths_and_magic() {
    let good = pattern(Compression::None, 1, 1).to_vec();
    for length in [i32::MIN, -1, 0, 14, 48] {
        let mut bad = good.clone();
        bad[8..12].copy_from_slice(&length.to_be_bytes());
        let err = split_batches(Bytes::from(bad)).next().unwrap().unwrap_err();
        assert!(
            matches!(err, RecordsError::InvalidBatchLength { length: l, .. } if l == length),
            "{err:?}"
        );
    }
    // A huge length is a truncated batch, not an allocation.
    let mut huge = good.clone();
    huge[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(
        split_batches(Bytes::from(huge)).next().unwrap(),
        Err(RecordsError::Truncated { needed, .. }) if needed == i32::MAX as usize + 12
    ));
    for magic in [0u8, 1, 3, 0xff] {
        let mut bad = good.clone();
        bad[16] = magic;
        assert!(matches!(
            split_batches(Bytes::from(bad)).next().unwrap(),
            Err(RecordsError::UnsupportedMagic { .. })
        ));
    }
}

#[test]
fn in_place_edits_match_kafka() {
    let mut b = BytesMut::from(&pattern(Compression::Snappy, 5, 1)[..]);
    let crc = header_of(&b).crc;
    // Neither the base offset nor the leader epoch is covered by the CRC.
    set_last_offset(&mut b, 104).unwrap();
    set_partition_leader_epoch(&mut b, 9).unwrap();
    let h = header_of(&b);
    assert_eq!(
        (
            h.base_offset,
            h.last_offset(),
            h.partition_leader_epoch,
            h.crc
        ),
        (100, 104, 9, crc)
    );
    assert!(crc_is_valid(&b));
    set_base_offset(&mut b, 7).unwrap();
    assert!(crc_is_valid(&b));
    // The same max timestamp and type: nothing written.
    assert!(!set_max_timestamp(&mut b, TimestampType::CreateTime, h.max_timestamp).unwrap());
    assert_eq!(header_of(&b).crc, crc);
    // LogAppendTime: attribute bit 3, the new max timestamp, a new CRC.
    assert!(set_max_timestamp(&mut b, TimestampType::LogAppendTime, 42).unwrap());
    let h = header_of(&b);
    assert_eq!(
        (h.timestamp_type(), h.max_timestamp),
        (TimestampType::LogAppendTime, 42)
    );
    assert_eq!(h.compression(), Ok(Compression::Snappy));
    assert_ne!(h.crc, crc);
    assert!(crc_is_valid(&b));
    verify_crc(&b).unwrap();
    let batch = RecordBatch::parse(b.clone().freeze()).unwrap();
    assert!(batch
        .decode_records(1 << 20)
        .unwrap()
        .iter()
        .all(|r| r.timestamp(&h) == 42));
    // A flipped payload bit is a CRC mismatch naming both values.
    let last = b.len() - 1;
    b[last] ^= 1;
    assert!(matches!(
        verify_crc(&b),
        Err(RecordsError::CrcMismatch { .. })
    ));
    write_crc(&mut b).unwrap();
    assert!(crc_is_valid(&b));
    // The CRC of a header and a body kept apart.
    let (head, body) = b.split_at(HEADER_LEN);
    assert_eq!(
        compute_crc_parts(head, body).unwrap(),
        compute_crc(&b).unwrap()
    );
    assert!(compute_crc_parts(&head[..60], body).is_err());
}

/// A batch of `count` records whose payload is `payload`, with a correct CRC.
fn raw_batch(count: i32, payload: &[u8]) -> Bytes {
    let mut b = BatchBuilder::new(BatchOptions::default())
        .build_mut()
        .unwrap();
    b.extend_from_slice(payload);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    b[57..61].copy_from_slice(&count.to_be_bytes());
    write_crc(&mut b).unwrap();
    b.freeze()
}

fn decode(count: i32, payload: &[u8]) -> Result<Vec<Record>, RecordsError> {
    RecordBatch::parse(raw_batch(count, payload))?.decode_records(1 << 20)
}

#[test]
fn hostile_record_bytes_are_errors() {
    // One well-formed record: length 6, attributes, ts 0, offset 0, null key, null value, 0 headers.
    let record = [0x0c, 0, 0, 0, 1, 1, 0];
    assert_eq!(decode(1, &record).unwrap().len(), 1);
    // Count and records present disagree, both ways.
    assert!(matches!(
        decode(2, &record),
        Err(RecordsError::MissingRecords { index: 1, count: 2 })
    ));
    assert!(matches!(
        decode(i32::MAX, &record),
        Err(RecordsError::MissingRecords { .. })
    ));
    assert!(matches!(
        decode(0, &record),
        Err(RecordsError::TrailingBytes)
    ));
    assert!(matches!(
        decode(1, &[&record[..], &record[..]].concat()),
        Err(RecordsError::TrailingBytes)
    ));
    assert!(matches!(
        decode(-1, &record),
        Err(RecordsError::InvalidRecordCount(-1))
    ));
    let bad: &[&[u8]] = &[
        // A varint that never ends.
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        // Record length larger than the bytes present, and negative.
        &[0xfe, 0xff, 0xff, 0xff, 0x0f, 0],
        &[0x01, 0, 0, 0],
        // Key length beyond the record.
        &[0x0c, 0, 0, 0, 0x7e, 1, 0],
        // Negative header count; header count beyond the bytes.
        &[0x0c, 0, 0, 0, 1, 1, 1],
        &[0x0c, 0, 0, 0, 1, 1, 0x7e],
        // A header with a negative key length.
        &[0x0e, 0, 0, 0, 1, 1, 2, 1],
        // Length says 5, the fields take 6.
        &[0x0a, 0, 0, 0, 1, 1, 0],
        // Length says 7, the fields take 6.
        &[0x0e, 0, 0, 0, 1, 1, 0, 0],
        // A varlong timestamp that never ends.
        &[
            0x18, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    ];
    for payload in bad {
        let err = decode(1, payload).unwrap_err();
        assert!(
            matches!(
                err,
                RecordsError::MalformedRecord { .. }
                    | RecordsError::MissingRecords { .. }
                    | RecordsError::TrailingBytes
            ),
            "{payload:?}: {err:?}"
        );
    }
    // Negative key and value lengths other than -1 are null, as in Kafka.
    let r = &decode(1, &[0x0c, 0, 0, 0, 0x05, 0x07, 0]).unwrap()[0];
    assert_eq!((r.key.clone(), r.value.clone()), (None, None));
}

#[test]
fn hostile_batches_are_errors() {
    let good = pattern(Compression::Gzip, 5, 1);
    // Garbage in place of a compressed payload.
    let mut garbage = good.to_vec();
    for b in &mut garbage[61..] {
        *b = 0xa5;
    }
    write_crc(&mut garbage).unwrap();
    let batch = RecordBatch::parse(Bytes::from(garbage)).unwrap();
    assert!(matches!(
        batch.decode_records(1 << 20),
        Err(RecordsError::Decompress { .. })
    ));
    // Compression ids 5-7.
    let mut unknown = good.to_vec();
    unknown[22] = (unknown[22] & !7) | 6;
    let batch = RecordBatch::parse(Bytes::from(unknown)).unwrap();
    assert_eq!(
        batch.header().compression(),
        Err(RecordsError::UnknownCompression(6))
    );
    assert!(batch.decode_records(1 << 20).is_err());
    // Each codec, limit below the uncompressed size (the limit bounds decompression output:
    // an uncompressed payload is a slice, never copied).
    for codec in &ALL[1..] {
        let codec = *codec;
        let batch = RecordBatch::parse(pattern(codec, 50, 100)).unwrap();
        let full = batch.uncompressed_payload(1 << 20).unwrap().len();
        assert!(
            matches!(
                batch.decode_records(full - 1),
                Err(RecordsError::DecompressedTooLarge { .. })
            ),
            "{codec}"
        );
        assert_eq!(batch.decode_records(full).unwrap().len(), 50);
    }
    // A parse of anything but exactly one batch.
    assert!(RecordBatch::parse(good.slice(..60)).is_err());
    assert!(RecordBatch::parse(good.slice(..good.len() - 1)).is_err());
    assert!(RecordBatch::parse(Bytes::from([&good[..], &[0u8][..]].concat())).is_err());
}

#[test]
fn builder_refuses_what_kafkas_refuses() {
    let mut b = BatchBuilder::new(BatchOptions::default());
    b.append(3, 10, None, None, &[]).unwrap();
    assert!(b.append(3, 10, None, None, &[]).is_err());
    assert!(b.append(2, 10, None, None, &[]).is_err());
    assert!(b.append(4, -2, None, None, &[]).is_err());
    b.append(4, -1, None, None, &[]).unwrap();
    let mut below = b.clone();
    below.override_last_offset_delta(3);
    assert!(below.build().is_err());
    let built = b.build().unwrap();
    let h = header_of(&built);
    assert_eq!(
        (
            h.last_offset_delta,
            h.record_count,
            h.base_timestamp,
            h.max_timestamp
        ),
        (4, 2, 10, 10)
    );
    let bad_level = BatchBuilder::new(BatchOptions {
        compression: Compression::Gzip,
        compression_level: Some(11),
        ..BatchOptions::default()
    });
    let mut bad_level = bad_level;
    bad_level.push(1, None, None, &[]).unwrap();
    assert!(bad_level.build().is_err());
    let negative_horizon = BatchBuilder::new(BatchOptions {
        delete_horizon_ms: Some(-5),
        ..BatchOptions::default()
    });
    assert!(negative_horizon.build().is_err());
}

#[test]
fn empty_batch_keeps_the_header() {
    let mut b = BatchBuilder::new(BatchOptions {
        base_offset: 10,
        compression: Compression::Zstd,
        producer_id: 3,
        producer_epoch: 1,
        base_sequence: 5,
        ..BatchOptions::default()
    });
    b.override_last_offset_delta(4);
    b.override_max_timestamp(99);
    let built = b.build().unwrap();
    assert_eq!(built.len(), HEADER_LEN);
    let h = header_of(&built);
    assert_eq!(h.compression(), Ok(Compression::None));
    assert_eq!(
        (
            h.record_count,
            h.last_offset(),
            h.last_sequence(),
            h.base_timestamp,
            h.max_timestamp
        ),
        (0, 14, 9, -1, 99)
    );
    assert!(crc_is_valid(&built));
    assert!(RecordBatch::parse(built)
        .unwrap()
        .decode_records(0)
        .unwrap()
        .is_empty());
}

fn arb_bytes() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40))
}

/// Offset gap to the next record, timestamp, key, value, headers.
type ArbRecord = (
    u8,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn arb_record() -> impl Strategy<Value = ArbRecord> {
    (
        1u8..5,
        prop_oneof![Just(-1i64), 0i64..4_000_000_000_000],
        arb_bytes(),
        arb_bytes(),
        proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..10), arb_bytes()),
            0..3,
        ),
    )
}

fn arb_codec() -> impl Strategy<Value = Compression> {
    proptest::sample::select(ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn build_parse_decode_round_trips(
        codec in arb_codec(),
        log_append in any::<bool>(),
        horizon in proptest::option::of(0i64..4_000_000_000_000),
        base_offset in 0i64..i64::MAX / 2,
        producer in proptest::option::of((0i64..i64::MAX, 0i16..i16::MAX, 0i32..i32::MAX)),
        transactional in any::<bool>(),
        records in proptest::collection::vec(arb_record(), 0..30),
    ) {
        let (producer_id, producer_epoch, base_sequence) = producer.unwrap_or((-1, -1, -1));
        let options = BatchOptions {
            base_offset,
            compression: codec,
            timestamp_type: if log_append { TimestampType::LogAppendTime } else { TimestampType::CreateTime },
            log_append_time: 1_234,
            producer_id,
            producer_epoch,
            base_sequence,
            transactional,
            delete_horizon_ms: horizon,
            ..BatchOptions::default()
        };
        let mut builder = BatchBuilder::new(options);
        let mut expected = Vec::new();
        let mut delta = 0i32;
        for (gap, ts, key, value, headers) in &records {
            let headers: Vec<RecordHeader> = headers
                .iter()
                .map(|(k, v)| RecordHeader::new(Bytes::from(k.clone()), v.clone().map(Bytes::from)))
                .collect();
            builder.append(delta, *ts, key.as_deref(), value.as_deref(), &headers).unwrap();
            expected.push((delta, *ts, key.clone(), value.clone(), headers));
            delta += i32::from(*gap);
        }
        let bytes = builder.build().unwrap();
        // Twice, to check the splitter too.
        let twice = Bytes::from([&bytes[..], &bytes[..]].concat());
        let split: Vec<_> = split_batches(twice).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(split.len(), 2);
        let (header, slice) = split[0].clone();
        prop_assert_eq!(&slice, &bytes);
        prop_assert!(crc_is_valid(&slice));
        prop_assert_eq!(header.record_count as usize, records.len());
        prop_assert_eq!(header.delete_horizon_ms(), horizon);
        prop_assert_eq!(header.is_transactional(), transactional);
        prop_assert_eq!(header.producer_id, producer_id);
        let batch = RecordBatch::parse(bytes).unwrap();
        let decoded = batch.decode_records(1 << 20).unwrap();
        prop_assert_eq!(decoded.len(), expected.len());
        let mut max_ts = -1;
        for (r, (delta, ts, key, value, headers)) in decoded.iter().zip(&expected) {
            prop_assert_eq!(r.offset_delta, *delta);
            prop_assert_eq!(r.offset(&header), base_offset + i64::from(*delta));
            if log_append {
                prop_assert_eq!(r.timestamp(&header), 1_234);
            } else {
                prop_assert_eq!(r.timestamp(&header), *ts);
            }
            prop_assert_eq!(r.key.as_deref(), key.as_deref());
            prop_assert_eq!(r.value.as_deref(), value.as_deref());
            prop_assert_eq!(&r.headers, headers);
            max_ts = max_ts.max(*ts);
            // Re-encoding a decoded record gives its bytes back.
            let mut again = Vec::new();
            r.encode(&mut again).unwrap();
            prop_assert_eq!(again.len(), r.encoded_len().unwrap());
        }
        if !expected.is_empty() {
            prop_assert_eq!(header.last_offset_delta, expected.last().unwrap().0);
            prop_assert_eq!(header.max_timestamp, if log_append { 1_234 } else { max_ts });
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), count in any::<i32>()) {
        let _ = split_batches(Bytes::from(bytes.clone())).count();
        let _ = decode(count, &bytes);
        for codec in ALL {
            let _ = decompress(codec, &bytes, 1 << 16);
        }
        let _ = ControlRecordType::parse_key(&bytes);
    }

    #[test]
    fn corrupted_batches_never_panic(codec in arb_codec(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let good = pattern(codec, 8, 3).to_vec();
        let mut bad = good.clone();
        for (at, x) in flips {
            let i = 61 + at % (bad.len() - 61);
            bad[i] ^= x | 1;
        }
        write_crc(&mut bad).unwrap();
        if let Ok(batch) = RecordBatch::parse(Bytes::from(bad)) {
            let _ = batch.decode_records(1 << 16);
        }
    }
}
