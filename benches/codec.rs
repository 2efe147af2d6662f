//! Encode/decode cost of the messages on the hot paths: the streams heartbeat request and
//! response, and a 1,000-node topology description push.
//!
//! Run: `cargo bench --bench codec`
use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kcoord_wire::messages::streams_group_heartbeat_request as hb_req;
use kcoord_wire::messages::streams_group_heartbeat_response as hb_resp;
use kcoord_wire::messages::update_streams_group_topology_description_request as push;
use kcoord_wire::{Decodable, Encodable};
use std::hint::black_box;

fn task_ids(subtopologies: usize, partitions: i32) -> Vec<hb_req::TaskIds> {
    (0..subtopologies)
        .map(|s| hb_req::TaskIds {
            subtopology_id: s.to_string(),
            partitions: (0..partitions).collect(),
            ..Default::default()
        })
        .collect()
}

/// A steady-state heartbeat of a member owning 4 sub-topologies x 3 partitions.
fn heartbeat_request() -> hb_req::StreamsGroupHeartbeatRequest {
    hb_req::StreamsGroupHeartbeatRequest {
        group_id: "orders-app".into(),
        member_id: "6b1f0c8e-2d1c-4c55-9a57-52a4c1cf1a3e".into(),
        member_epoch: 12,
        endpoint_information_epoch: 3,
        rebalance_timeout_ms: 300_000,
        active_tasks: Some(task_ids(4, 3)),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![]),
        process_id: Some("a1b2c3d4-0000-4000-8000-000000000001".into()),
        ..Default::default()
    }
}

fn heartbeat_response() -> hb_resp::StreamsGroupHeartbeatResponse {
    hb_resp::StreamsGroupHeartbeatResponse {
        member_id: "6b1f0c8e-2d1c-4c55-9a57-52a4c1cf1a3e".into(),
        member_epoch: 12,
        heartbeat_interval_ms: 5000,
        task_offset_interval_ms: 60_000,
        status: Some(vec![]),
        endpoint_information_epoch: 3,
        ..Default::default()
    }
}

/// 100 sub-topologies of 10 nodes each: a source, eight processors with a store each, a sink.
pub fn topology_push(
    subtopologies: usize,
    nodes_per: usize,
) -> push::UpdateStreamsGroupTopologyDescriptionRequest {
    let subs = (0..subtopologies)
        .map(|s| {
            let name = |i: usize| format!("KSTREAM-NODE-{s:04}-{i:06}");
            let nodes = (0..nodes_per)
                .map(|i| {
                    let last = i + 1 == nodes_per;
                    push::TopologyNode {
                        name: name(i),
                        node_type: if i == 0 {
                            1
                        } else if last {
                            3
                        } else {
                            2
                        },
                        source_topics: if i == 0 {
                            vec![format!("input-topic-{s}")]
                        } else {
                            vec![]
                        },
                        sink_topic: last.then(|| format!("output-topic-{s}")),
                        stores: if i > 0 && !last {
                            vec![format!("store-{s}-{i}")]
                        } else {
                            vec![]
                        },
                        successors: if last { vec![] } else { vec![name(i + 1)] },
                        ..Default::default()
                    }
                })
                .collect();
            push::Subtopology {
                subtopology_id: s.to_string(),
                nodes,
                ..Default::default()
            }
        })
        .collect();
    push::UpdateStreamsGroupTopologyDescriptionRequest {
        group_id: "orders-app".into(),
        topology_description_id: uuid::Uuid::from_u128(0x8d7e3c2a_4f6b_4d9a_9c1b_7e5f3a8d2c4e),
        topology_description: push::TopologyDescription {
            subtopologies: subs,
            global_stores: vec![],
            ..Default::default()
        },
        ..Default::default()
    }
}

fn bench_message<T: Encodable + Decodable>(c: &mut Criterion, name: &str, value: &T, version: i16) {
    let mut encoded = BytesMut::new();
    value.encode(&mut encoded, version).expect("encodes");
    let encoded = encoded.freeze();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(encoded.len() as u64));
    group.bench_function("encode", |b| {
        let mut buf = BytesMut::with_capacity(encoded.len());
        b.iter(|| {
            buf.clear();
            black_box(value).encode(&mut buf, version).expect("encodes");
        })
    });
    group.bench_function("decode", |b| {
        b.iter_batched(
            || encoded.clone(),
            |mut input: Bytes| T::decode(&mut input, version).expect("decodes"),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn codecs(c: &mut Criterion) {
    bench_message(c, "heartbeat_request_v2", &heartbeat_request(), 2);
    bench_message(c, "heartbeat_response_v2", &heartbeat_response(), 2);
    bench_message(c, "topology_push_1000_nodes", &topology_push(100, 10), 0);
}

criterion_group!(benches, codecs);
criterion_main!(benches);
