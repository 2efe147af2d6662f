//! KIP-1331: the coordinator's cost of accepting a 10,000-node topology description push
//! (about 1 MB): decoding the request, checking and converting the description, and storing it
//! in the `memory` plugin.
//!
//! Run: `cargo bench --bench kip1331_push`
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kcoord_plugin_api::{RequestContext, StreamsGroupTopologyDescriptionPlugin, Uuid};
use kcoord_plugins::MemoryPlugin;
use kcoord_wire::messages::update_streams_group_topology_description_request::UpdateStreamsGroupTopologyDescriptionRequest;
use kcoord_wire::{Decodable, Encodable};

#[path = "codec.rs"]
#[allow(dead_code)]
mod codec;

fn push_cost(c: &mut Criterion) {
    let request = codec::topology_push(1_000, 10);
    let mut encoded = BytesMut::new();
    request.encode(&mut encoded, 0).expect("encodes");
    let encoded = encoded.freeze();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let ctx = RequestContext::internal(95, 0);
    let config = kcoord_plugins::MemoryPluginConfig {
        max_bytes: 8 * 1024 * 1024,
        ..Default::default()
    };

    let mut group = c.benchmark_group("kip1331_push_10000_nodes");
    group.throughput(Throughput::Bytes(encoded.len() as u64));
    group.sample_size(20);
    group.bench_function("decode", |b| {
        b.iter_batched(
            || encoded.clone(),
            |mut input: Bytes| {
                UpdateStreamsGroupTopologyDescriptionRequest::decode(&mut input, 0)
                    .expect("decodes")
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("decode_check_convert", |b| {
        b.iter_batched(
            || encoded.clone(),
            |mut input: Bytes| {
                let req = UpdateStreamsGroupTopologyDescriptionRequest::decode(&mut input, 0)
                    .expect("decodes");
                kcoord_coordinator::description::from_spec_push(&req.topology_description)
                    .expect("well formed")
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("decode_check_convert_store", |b| {
        b.iter_batched(
            || {
                (
                    encoded.clone(),
                    MemoryPlugin::with_clock(
                        config.clone(),
                        Arc::new(kcoord_plugins::clock::SystemClock),
                    ),
                )
            },
            |(mut input, plugin): (Bytes, MemoryPlugin)| {
                let req = UpdateStreamsGroupTopologyDescriptionRequest::decode(&mut input, 0)
                    .expect("decodes");
                let description =
                    kcoord_coordinator::description::from_spec_push(&req.topology_description)
                        .expect("well formed");
                let id = Uuid::from_u128(1);
                plugin.requires_topology_push(&ctx, "orders-app", id);
                runtime
                    .block_on(plugin.set_topology(&ctx, "orders-app", id, description))
                    .expect("stored");
                plugin
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, push_cost);
criterion_main!(benches);
