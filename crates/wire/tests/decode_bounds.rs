//! What decoding a request may allocate: hostile array counts fail before any large
//! reservation, valid requests that grow too much when decoded are refused by the per-request
//! budget, and legitimately large requests still decode.
//!
//! A counting global allocator measures, per thread, the largest single allocation and the
//! peak of live bytes while one decode runs (tests run on their own threads).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::{BufMut, Bytes, BytesMut};
use kcoord_wire::budget;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kcoord_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
use kcoord_wire::messages::{
    CreateTopicsRequest, MetadataRequest, OffsetCommitRequest, ProduceRequest,
    StreamsGroupHeartbeatRequest,
};
use kcoord_wire::{Decodable, Encodable};

struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn allocated(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + size as isize);
        let _ = PEAK.try_with(|p| p.set(p.get().max(live.get())));
    });
}

fn freed(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - size as isize));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// const-initialised thread-locals without destructors, so touching them never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocated(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        allocated(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        freed(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        freed(layout.size());
        allocated(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one call allocated on this thread: (largest single allocation, peak live bytes above
/// what was live before).
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let base = LIVE.with(Cell::get);
    LARGEST.with(|l| l.set(0));
    PEAK.with(|p| p.set(base));
    let out = f();
    let largest = LARGEST.with(Cell::get);
    let peak = PEAK.with(Cell::get) - base;
    (out, largest, peak.max(0) as usize)
}

/// Decodes `body` at `version` under the budget the server gives a frame of its size.
fn decode_as_server<T: Decodable>(body: &Bytes, version: i16) -> anyhow::Result<T> {
    budget::with_limit(budget::for_frame(body.len()), || {
        T::decode(&mut body.clone(), version)
    })
}

fn compact_string(out: &mut BytesMut, s: &str) {
    out.put_u8(s.len() as u8 + 1);
    out.put_slice(s.as_bytes());
}

fn uvarint(out: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        out.put_u8(v as u8 | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// Whether a body fails to decode at a version, under the server's budget.
type FailsToDecode = fn(&Bytes, i16) -> bool;

/// Hostile request bodies: the head of a request, then an array declaring 2^31-1 structs, then
/// `filler` bytes of zeros (a count the filler could back if each element were one byte).
fn hostile_bodies(filler: usize) -> Vec<(&'static str, i16, Bytes, FailsToDecode)> {
    const HUGE: u32 = i32::MAX as u32;
    // OffsetCommit v9: group id, epoch, member id, null instance id, topics.
    let mut commit = BytesMut::new();
    compact_string(&mut commit, "g");
    commit.put_i32(1);
    compact_string(&mut commit, "m");
    commit.put_u8(0);
    uvarint(&mut commit, HUGE);
    commit.put_bytes(0, filler);
    // OffsetCommit v2 (classic): group id, generation, member id, retention, topics.
    let mut classic = BytesMut::new();
    classic.put_i16(1);
    classic.put_slice(b"g");
    classic.put_i32(1);
    classic.put_i16(1);
    classic.put_slice(b"m");
    classic.put_i64(-1);
    classic.put_i32(HUGE as i32);
    classic.put_bytes(0, filler);
    // CreateTopics v7: topics first.
    let mut create = BytesMut::new();
    uvarint(&mut create, HUGE);
    create.put_bytes(0, filler);
    // StreamsGroupHeartbeat v0 with a topology declaring 2^31-1 subtopologies.
    let mut heartbeat = BytesMut::new();
    compact_string(&mut heartbeat, "g");
    compact_string(&mut heartbeat, "m");
    heartbeat.put_i32(0);
    heartbeat.put_i32(0);
    heartbeat.put_u8(0); // null instance id
    heartbeat.put_u8(0); // null rack id
    heartbeat.put_i32(-1);
    heartbeat.put_u8(1); // topology present
    heartbeat.put_i32(1);
    uvarint(&mut heartbeat, HUGE);
    heartbeat.put_bytes(0, filler);
    vec![
        ("OffsetCommit v9", 9, commit.freeze(), |b, v| {
            decode_as_server::<OffsetCommitRequest>(b, v).is_err()
        }),
        ("OffsetCommit v2", 2, classic.freeze(), |b, v| {
            decode_as_server::<OffsetCommitRequest>(b, v).is_err()
        }),
        ("CreateTopics v7", 7, create.freeze(), |b, v| {
            decode_as_server::<CreateTopicsRequest>(b, v).is_err()
        }),
        ("StreamsGroupHeartbeat v0", 0, heartbeat.freeze(), |b, v| {
            decode_as_server::<StreamsGroupHeartbeatRequest>(b, v).is_err()
        }),
    ]
}

/// Slack for what an error costs: anyhow captures a backtrace when RUST_BACKTRACE is set.
const ERROR_SLACK: usize = 16 << 10;

/// A count of 2^31-1 structs fails, and nothing the decode allocates is bigger than the frame
/// (before the fix, a 1 MiB frame reserved one 70-200 byte struct per remaining byte).
#[test]
fn a_huge_array_count_fails_without_reserving_more_than_the_frame() {
    for filler in [64 << 10, 1 << 20] {
        for (name, version, body, fails) in hostile_bodies(filler) {
            let (failed, largest, peak) = measure(|| fails(&body, version));
            assert!(failed, "{name} with {filler} bytes of filler decoded");
            assert!(
                largest <= body.len() + ERROR_SLACK && peak <= body.len() + ERROR_SLACK,
                "{name}, {} byte body: largest allocation {largest}, peak {peak}",
                body.len()
            );
        }
    }
}

/// A count the bytes could back at one byte per element, but not at the element's smallest
/// encoding, fails at once; one they can back reserves no more than about the input's size.
#[test]
fn an_array_reserves_at_most_what_the_input_can_back() {
    // 100k subtopologies of at least 8 bytes each do not fit in 400k bytes.
    let mut body = BytesMut::new();
    body.put_i32(1);
    uvarint(&mut body, 100_001);
    body.put_bytes(0, 400_000);
    let body = body.freeze();
    let (r, largest, _) = measure(|| Topology::decode(&mut body.clone(), 0));
    assert!(r.is_err());
    assert!(
        largest < ERROR_SLACK,
        "reserved {largest} bytes for a count it refused"
    );

    // 12,500 subtopologies of at least 8 bytes fit in 100k bytes, so the count passes; the
    // first id is a null string, which fails the decode. The Vec reserved meanwhile is no
    // bigger than the input (12,500 subtopologies would take 2.4 MB).
    let mut body = BytesMut::new();
    body.put_i32(1);
    uvarint(&mut body, 12_501);
    body.put_bytes(0, 100_000);
    let body = body.freeze();
    let (r, largest, peak) = measure(|| Topology::decode(&mut body.clone(), 0));
    assert!(r.is_err());
    assert!(
        largest <= body.len() + ERROR_SLACK && peak <= body.len() + ERROR_SLACK,
        "largest {largest}, peak {peak} for {} bytes",
        body.len()
    );
}

fn encode<T: Encodable>(value: &T, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    value.encode(&mut out, version).expect("encodes");
    out.freeze()
}

/// A heartbeat whose topology lists many empty subtopologies: valid, 8 bytes each on the
/// wire and about 190 in memory. The server's budget refuses it; without a budget it decodes.
#[test]
fn a_valid_but_amplifying_request_is_refused_by_the_budget() {
    let request = StreamsGroupHeartbeatRequest {
        group_id: "g".into(),
        member_id: "m".into(),
        topology: Some(Topology {
            epoch: 1,
            subtopologies: vec![Subtopology::default(); 1 << 19],
            ..Default::default()
        }),
        ..Default::default()
    };
    let body = encode(&request, 0);
    assert!(body.len() > 4 << 20, "{} bytes", body.len());
    let decoded = StreamsGroupHeartbeatRequest::decode(&mut body.clone(), 0)
        .expect("valid input decodes without a budget");
    assert_eq!(decoded, request);
    drop(decoded);

    let (r, _, peak) = measure(|| decode_as_server::<StreamsGroupHeartbeatRequest>(&body, 0));
    let error = r.expect_err("refused by the budget").to_string();
    assert!(error.contains("bytes of memory allowed"), "{error}");
    assert!(
        peak <= budget::for_frame(body.len()),
        "the refusal came after {peak} bytes"
    );
}

/// A 1 MiB Produce decodes, its records a slice of the frame that costs the budget nothing.
#[test]
fn a_large_produce_decodes_and_its_records_cost_nothing() {
    let records = Bytes::from(vec![7u8; 1 << 20]);
    let request = ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let body = encode(&request, 9);
    let limit = budget::for_frame(body.len());
    let (decoded, spent) = budget::with_limit(limit, || {
        let decoded = ProduceRequest::decode(&mut body.clone(), 9);
        (decoded, budget::remaining().map(|left| limit - left))
    });
    assert_eq!(decoded.expect("decodes"), request);
    let spent = spent.expect("under a budget");
    assert!(spent < 1024, "spent {spent} bytes of budget on a produce");
}

/// Metadata naming 10,000 topics and OffsetCommit of 100,000 partitions decode under the budget.
#[test]
fn large_legitimate_requests_decode_under_the_budget() {
    let metadata = MetadataRequest {
        topics: Some(
            (0..10_000)
                .map(|i| MetadataRequestTopic {
                    name: Some(format!("some-application-topic-{i:05}")),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    };
    for version in [1, 9, 12, 13] {
        let body = encode(&metadata, version);
        let decoded = decode_as_server::<MetadataRequest>(&body, version).expect("decodes");
        assert_eq!(decoded.topics.map(|t| t.len()), Some(10_000));
    }

    let commit = OffsetCommitRequest {
        group_id: "g".into(),
        member_id: "m".into(),
        topics: (0..100)
            .map(|t| OffsetCommitRequestTopic {
                name: format!("topic-{t}"),
                partitions: (0..1000)
                    .map(|p| OffsetCommitRequestPartition {
                        partition_index: p,
                        committed_offset: 42,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    for version in [2, 8, 9] {
        let body = encode(&commit, version);
        let decoded = decode_as_server::<OffsetCommitRequest>(&body, version).expect("decodes");
        assert_eq!(decoded, commit);
    }
}
