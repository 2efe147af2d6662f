//! Property test: for every generated type and every version it supports, random values
//! survive encode -> decode -> encode unchanged, and `compute_size` matches the bytes written.
use proptest::prelude::*;
use rand::SeedableRng;

fn check_all(seed: u64) -> Result<(), String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let cases = crate::messages::round_trip_cases()
        .into_iter()
        .chain(crate::records::round_trip_cases());
    for case in cases {
        for version in case.versions.0..=case.versions.1 {
            (case.check)(&mut rng, version).map_err(|e| format!("{}: {e}", case.name))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_schema_and_version_round_trips(seed in any::<u64>()) {
        if let Err(e) = check_all(seed) {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn every_schema_is_covered() {
    let names: Vec<&str> = crate::messages::round_trip_cases()
        .iter()
        .chain(crate::records::round_trip_cases().iter())
        .map(|c| c.name)
        .collect::<Vec<_>>();
    let schemas = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schemas")).unwrap();
    for entry in schemas {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(
                names.contains(&stem.as_str()),
                "{stem} has no round-trip case"
            );
        }
    }
}

/// A `records` field decoded from `Bytes` is a slice of the input, not a copy.
#[test]
fn records_decode_without_copying() {
    use crate::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use crate::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use crate::messages::{FetchResponse, ProduceRequest};
    use crate::{Decodable, Encodable};
    use bytes::{Bytes, BytesMut};

    fn within(inner: &Bytes, outer: &Bytes) -> bool {
        let (start, end) = (
            outer.as_ptr() as usize,
            outer.as_ptr() as usize + outer.len(),
        );
        let p = inner.as_ptr() as usize;
        p >= start && p + inner.len() <= end
    }
    let batch = Bytes::from_static(b"record batch bytes");
    assert_eq!(
        PartitionProduceData::default().records,
        None,
        "Kafka's default for records is null"
    );

    let produce = ProduceRequest {
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.clone().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    for version in [3, 9, 12] {
        let mut buf = BytesMut::new();
        produce.encode(&mut buf, version).unwrap();
        let frame = buf.freeze();
        let decoded = ProduceRequest::decode(&mut frame.clone(), version).unwrap();
        let records = decoded.topic_data[0].partition_data[0]
            .records
            .as_ref()
            .unwrap()
            .to_bytes();
        assert_eq!(records, batch);
        assert!(
            within(&records, &frame),
            "ProduceRequest v{version}: records were copied"
        );
    }

    let fetch = FetchResponse {
        responses: vec![FetchableTopicResponse {
            topic: "t".into(),
            partitions: vec![PartitionData {
                records: Some(batch.clone().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    for version in [4, 12] {
        let mut buf = BytesMut::new();
        fetch.encode(&mut buf, version).unwrap();
        let frame = buf.freeze();
        let decoded = FetchResponse::decode(&mut frame.clone(), version).unwrap();
        let records = decoded.responses[0].partitions[0]
            .records
            .as_ref()
            .unwrap()
            .to_bytes();
        assert_eq!(records, batch);
        assert!(
            within(&records, &frame),
            "FetchResponse v{version}: records were copied"
        );
    }

    // Encoding into a SharedFrame references shared stored batches instead of copying them.
    let stored = Bytes::from(vec![9u8; 4096]);
    let pieces = FetchResponse {
        responses: vec![FetchableTopicResponse {
            topic: "t".into(),
            partitions: vec![PartitionData {
                records: Some(vec![stored.clone(), stored.slice(..1024)].into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut shared = crate::frame::SharedFrame::new();
    shared.share(&stored);
    shared.share(&stored.slice(..1024));
    pieces.encode(&mut shared, 12).unwrap();
    let frame = shared.finish().unwrap();
    assert!(frame
        .parts()
        .iter()
        .any(|p| p.as_ptr() == stored.as_ptr() && p.len() == 4096));
    let mut copied = BytesMut::new();
    pieces.encode(&mut copied, 12).unwrap();
    assert_eq!(&frame.to_bytes()[4..], &copied[..], "same bytes either way");
}

/// `min_wire_size` is a lower bound (an array check built on a bigger number would refuse valid
/// input) and a tight one for most structs (the default value is the shortest encoding unless
/// a default is a non-empty string).
#[test]
fn min_wire_size_never_exceeds_the_shortest_encoding() {
    let cases = crate::messages::min_size_cases()
        .into_iter()
        .chain(crate::records::min_size_cases());
    let (mut checked, mut exact) = (0, 0);
    for case in cases {
        for version in case.versions.0..=case.versions.1 {
            let (min, size) = (case.sizes)(version);
            let size = size.unwrap_or_else(|e| panic!("{} v{version}: {e}", case.name));
            assert!(
                min <= size,
                "{} v{version}: min_wire_size {min} > default's {size}",
                case.name
            );
            checked += 1;
            exact += usize::from(min == size);
        }
    }
    assert!(exact * 10 >= checked * 9, "{exact} of {checked} exact");
}

/// A tag that names a known field in later versions arrives, in an earlier version, as an
/// unknown tag; it is written back (found by fuzzing: it was counted and sized but not written,
/// so the encoding was short by the field).
#[test]
fn an_unknown_tag_numbered_like_a_later_known_field_round_trips() {
    use crate::messages::{BrokerHeartbeatRequest, FetchRequest};
    use bytes::Bytes;
    let fetch = FetchRequest {
        replica_id: -1,
        unknown_tagged_fields: [(1, Bytes::from_static(b"\x01"))].into(),
        ..Default::default()
    };
    crate::codec::check_round_trip(&fetch, 12).unwrap();
    let heartbeat = BrokerHeartbeatRequest {
        unknown_tagged_fields: [(0, Bytes::from_static(b"\x01\x00"))].into(),
        ..Default::default()
    };
    crate::codec::check_round_trip(&heartbeat, 0).unwrap();
}
