//! Generated topologies of a given size, for the tests and benchmarks that need a large
//! drawing (the SVG tests, `benches/topology_svg.rs`, the web page's tests). Names look like
//! Kafka Streams' generated ones (`KSTREAM-MAPVALUES-0000000012`).
//!
//! Each returns the writer's model, which a simulated member can push; [`described`] gives the
//! reader's model an admin client would get back.

use crate::streams::{GlobalStore, Node, Subtopology, TopologyDescription};
use crate::StreamsGroupTopologyDescription;

/// `subtopologies` sub-topologies of `nodes_per_subtopology` nodes each (at least 3), linked in
/// a row by repartition topics: sub-topology 0 reads `input`, each next one reads the
/// repartition topic its predecessor's sink writes, the last one writes `output`. Between its
/// source and its sink each is a chain of processors in which every fifth one also skips ahead
/// (a diamond), every fourth has a state store of its own and the first two share one. Plus
/// `global_stores` global stores, each reading its own topic into its own store.
pub fn layered(
    subtopologies: usize,
    nodes_per_subtopology: usize,
    global_stores: usize,
) -> TopologyDescription {
    let per = nodes_per_subtopology.max(3);
    let subtopologies: Vec<Subtopology> = (0..subtopologies)
        .map(|s| {
            let name = |i: usize| node_name(s, i, per);
            let input = if s == 0 {
                "input".to_string()
            } else {
                repartition_topic(s - 1)
            };
            let output = if s + 1 == subtopologies {
                "output".to_string()
            } else {
                repartition_topic(s)
            };
            let mut nodes = vec![Node::source(name(0), &[&input], &[&name(1)])];
            for i in 1..per - 1 {
                let mut successors = vec![name(i + 1)];
                if i % 5 == 0 && i + 2 < per {
                    successors.push(name(i + 2));
                }
                let mut stores = Vec::new();
                if i % 4 == 0 {
                    stores.push(format!("KSTREAM-AGGREGATE-STATE-STORE-{s:04}-{i:06}"));
                }
                if i <= 2 {
                    stores.push(format!("shared-store-{s}"));
                }
                let stores: Vec<&str> = stores.iter().map(String::as_str).collect();
                let successors: Vec<&str> = successors.iter().map(String::as_str).collect();
                nodes.push(Node::processor(name(i), &stores, &successors));
            }
            nodes.push(Node::sink(name(per - 1), Some(&output)));
            Subtopology {
                id: s as i32,
                nodes,
            }
        })
        .collect();
    let first_global = subtopologies.len();
    TopologyDescription {
        subtopologies,
        global_stores: (0..global_stores)
            .map(|g| global_store((first_global + g) as i32))
            .collect(),
    }
}

/// One sub-topology of `nodes` nodes (at least 2) in a single chain: a source, processors, a
/// sink.
pub fn chain(nodes: usize) -> TopologyDescription {
    let n = nodes.max(2);
    let name = |i: usize| node_name(0, i, n);
    let mut list = vec![Node::source(name(0), &["input"], &[&name(1)])];
    for i in 1..n - 1 {
        list.push(Node::processor(name(i), &[], &[&name(i + 1)]));
    }
    list.push(Node::sink(name(n - 1), Some("output")));
    single(list)
}

/// One sub-topology of `nodes` nodes (at least 3): a source fanning out to `nodes - 2`
/// processors that all feed one sink.
pub fn fan_out(nodes: usize) -> TopologyDescription {
    let n = nodes.max(3);
    let name = |i: usize| node_name(0, i, n);
    let sink = name(n - 1);
    let processors: Vec<String> = (1..n - 1).map(name).collect();
    let successors: Vec<&str> = processors.iter().map(String::as_str).collect();
    let mut list = vec![Node::source(name(0), &["input"], &successors)];
    list.extend(
        processors
            .iter()
            .map(|p| Node::processor(p.clone(), &[], &[&sink])),
    );
    list.push(Node::sink(sink, Some("output")));
    single(list)
}

/// The reader's model of a generated topology, as StreamsGroupDescribe would return it.
pub fn described(topology: &TopologyDescription) -> StreamsGroupTopologyDescription {
    // The generators only build valid graphs; an invalid one would be a bug in this module,
    // and tests and benchmarks are its only callers.
    let wire = topology
        .to_wire()
        .unwrap_or_else(|e| panic!("generated topology is invalid: {e}"));
    StreamsGroupTopologyDescription::try_from(&wire)
        .unwrap_or_else(|e| panic!("generated topology does not convert: {e}"))
}

fn single(nodes: Vec<Node>) -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![Subtopology { id: 0, nodes }],
        global_stores: Vec::new(),
    }
}

fn node_name(subtopology: usize, index: usize, per: usize) -> String {
    let number = subtopology * per + index;
    let kind = if index == 0 {
        "SOURCE"
    } else if index + 1 == per {
        "SINK"
    } else {
        "MAPVALUES"
    };
    format!("KSTREAM-{kind}-{number:010}")
}

fn repartition_topic(subtopology: usize) -> String {
    format!("app-KSTREAM-REPARTITION-{subtopology:04}-repartition")
}

fn global_store(id: i32) -> GlobalStore {
    GlobalStore {
        id,
        source: Node::source(
            format!("KSTREAM-SOURCE-GLOBAL-{id:04}"),
            &[&format!("global-topic-{id}")],
            &[&format!("KTABLE-SOURCE-GLOBAL-{id:04}")],
        ),
        processor: Node::processor(
            format!("KTABLE-SOURCE-GLOBAL-{id:04}"),
            &[&format!("global-store-{id}")],
            &[],
        ),
    }
}
