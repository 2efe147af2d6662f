//! Laying out and drawing a 200-node topology as SVG (`kcoord_topology::svg`), what
//! `kafka-streams-groups --output svg` and the daemon's web page do per group: the layout
//! (dagre) and the drawing timed apart and together, for three shapes of about 200 processing
//! nodes from `kcoord_topology::synthetic`:
//!
//! - `layered_10x20`: 10 sub-topologies of 20 nodes linked by repartition topics, with stores
//!   and 2 global stores (204 nodes, 259 boxes with the topics and stores);
//! - `chain_200`: one sub-topology, a chain of 200 nodes;
//! - `fan_out_200`: a source fanning out to 198 processors feeding one sink (laid out left to
//!   right, so it is laid out twice: top to bottom first, then left to right).
//!
//! Run: `cargo bench --bench topology_svg`
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use kcoord_topology::graph::build;
use kcoord_topology::layout::layout;
use kcoord_topology::svg::{draw, render_svg};
use kcoord_topology::synthetic::{chain, described, fan_out, layered};
use kcoord_topology::StreamsGroupTopologyDescription;

fn bench_topology(c: &mut Criterion, name: &str, topology: &StreamsGroupTopologyDescription) {
    let graph = build(topology);
    let laid_out = layout(&graph).expect("lays out");
    let mut group = c.benchmark_group(name);
    // A layout takes tens of milliseconds: ten samples are enough and keep the run short.
    group.sample_size(10);
    group.bench_function("render_svg", |b| {
        b.iter(|| render_svg("app", black_box(topology)).expect("draws"))
    });
    group.bench_function("layout", |b| {
        b.iter(|| layout(black_box(&graph)).expect("lays out"))
    });
    group.bench_function("draw", |b| b.iter(|| draw("app", black_box(&laid_out))));
    group.finish();
}

fn topologies(c: &mut Criterion) {
    bench_topology(c, "layered_10x20", &described(&layered(10, 20, 2)));
    bench_topology(c, "chain_200", &described(&chain(200)));
    bench_topology(c, "fan_out_200", &described(&fan_out(200)));
}

criterion_group!(benches, topologies);
criterion_main!(benches);
