//! The SVG drawing of a topology: every name is on it (exactly, as attributes a page can use),
//! escaped, deterministic, and a 200-node topology lays out without any two boxes overlapping.

use std::collections::{BTreeMap, BTreeSet};

use kcoord_topology::graph::{build, ClusterKind, Shape};
use kcoord_topology::layout::{layout, visible_text, Layout, Rect, MAX_LABEL_COLUMNS};
use kcoord_topology::streams::{GlobalStore, Node, Subtopology, TopologyDescription};
use kcoord_topology::svg::render_svg;
use kcoord_topology::synthetic::{chain, described, fan_out, layered};
use kcoord_topology::{NodeKind, StreamsGroupTopologyDescription};
use proptest::prelude::*;

/// Every (kind, name) a drawing must show: nodes, topics and stores, each once.
fn expected_names(topology: &StreamsGroupTopologyDescription) -> BTreeSet<(String, String)> {
    let mut names = BTreeSet::new();
    let nodes = topology
        .subtopologies
        .iter()
        .flat_map(|s| s.nodes.iter())
        .chain(
            topology
                .global_stores
                .iter()
                .flat_map(|g| [&g.source, &g.processor]),
        );
    for node in nodes {
        let kind = match &node.kind {
            NodeKind::Source { topics } => {
                names.extend(topics.iter().map(|t| ("topic".to_string(), t.clone())));
                "source"
            }
            NodeKind::Processor { stores } => {
                names.extend(stores.iter().map(|s| ("store".to_string(), s.clone())));
                "processor"
            }
            NodeKind::Sink { topic } => {
                names.extend(topic.iter().map(|t| ("topic".to_string(), t.clone())));
                "sink"
            }
        };
        names.insert((kind.to_string(), node.name.clone()));
    }
    names
}

/// The `<g class="node">` elements of a drawing as (data-kind, data-name), after XML parsing;
/// each must have a `<title>` holding its name.
fn drawn_names(svg: &str) -> Vec<(String, String)> {
    let doc = roxmltree::Document::parse(svg).expect("the drawing is well-formed XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("node"))
        .map(|g| {
            let kind = g.attribute("data-kind").expect("data-kind").to_string();
            let name = g.attribute("data-name").expect("data-name").to_string();
            let title = g
                .children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|t| t.text())
                .unwrap_or_default();
            assert_eq!(title, name, "the title holds the name");
            (kind, name)
        })
        .collect()
}

fn svg_of(topology: &StreamsGroupTopologyDescription) -> String {
    render_svg("app", topology).expect("the topology is drawn")
}

#[test]
fn every_node_topic_and_store_is_drawn_once_with_its_name_and_kind() {
    let topology = described(&layered(4, 9, 2));
    let drawn = drawn_names(&svg_of(&topology));
    let unique: BTreeSet<_> = drawn.iter().cloned().collect();
    assert_eq!(unique.len(), drawn.len(), "nothing is drawn twice");
    assert_eq!(unique, expected_names(&topology));
    // The generator shares stores between processors and topics between sub-topologies; they
    // are still drawn once each (checked above), and there are some of each kind.
    for kind in ["source", "processor", "sink", "topic", "store"] {
        assert!(drawn.iter().any(|(k, _)| k == kind), "no {kind} drawn");
    }
}

fn odd(name: &str) -> String {
    format!("{name} <&>\"' ü 数据 \u{1F600} ]]> -- \n\tend")
}

/// A topology whose every name needs escaping, in XML text and attributes alike.
fn odd_topology() -> StreamsGroupTopologyDescription {
    let (src, proc, sink) = (odd("source"), odd("processor"), odd("sink"));
    described(&TopologyDescription {
        subtopologies: vec![Subtopology {
            id: 0,
            nodes: vec![
                Node::source(src.clone(), &[&odd("in-topic")], &[&proc]),
                Node::processor(proc.clone(), &[&odd("store")], &[&sink]),
                Node::sink(sink, Some(&odd("out-topic"))),
            ],
        }],
        global_stores: vec![GlobalStore {
            id: 1,
            source: Node::source(odd("global source"), &[&odd("global topic")], &[&odd("gp")]),
            processor: Node::processor(odd("gp"), &[&odd("global store")], &[]),
        }],
    })
}

#[test]
fn names_with_markup_quotes_and_unicode_round_trip_through_xml() {
    let topology = odd_topology();
    let svg = svg_of(&topology);
    let drawn: BTreeSet<_> = drawn_names(&svg).into_iter().collect();
    assert_eq!(drawn, expected_names(&topology));
    assert!(
        !svg.contains("<&>"),
        "raw markup never reaches the document"
    );
}

#[test]
fn characters_xml_cannot_carry_become_replacement_characters() {
    let topology = described(&TopologyDescription {
        subtopologies: vec![Subtopology {
            id: 0,
            nodes: vec![Node::source("a\u{1}b\u{FFFF}", &["t\u{0}"], &[])],
        }],
        global_stores: vec![],
    });
    let drawn: BTreeSet<_> = drawn_names(&svg_of(&topology)).into_iter().collect();
    let expected: BTreeSet<(String, String)> = [
        ("source".into(), "a\u{FFFD}b\u{FFFD}".into()),
        ("topic".into(), "t\u{FFFD}".into()),
    ]
    .into();
    assert_eq!(drawn, expected);
}

#[test]
fn long_names_are_shortened_on_screen_only_and_widths_follow_the_labels() {
    let long = format!("KSTREAM-{}", "X".repeat(120));
    let topology = described(&TopologyDescription {
        subtopologies: vec![Subtopology {
            id: 0,
            nodes: vec![
                Node::source("s", &["in"], &[&long]),
                Node::processor(long.clone(), &[], &["medium-sized-sink-name"]),
                Node::sink("medium-sized-sink-name", Some("out")),
            ],
        }],
        global_stores: vec![],
    });
    let laid_out = layout(&build(&topology)).unwrap();
    let node = |name: &str| {
        laid_out
            .nodes
            .iter()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("{name} not laid out"))
    };
    let shown = &node(&long).text;
    assert!(shown.ends_with('…'), "{shown}");
    assert_eq!(shown.chars().count(), MAX_LABEL_COLUMNS);
    assert!(long.starts_with(shown.trim_end_matches('…')));
    assert!(node(&long).rect.width > node("medium-sized-sink-name").rect.width);
    assert!(node("medium-sized-sink-name").rect.width > node("out").rect.width);
    // Every box is at least as wide as its visible label.
    for n in &laid_out.nodes {
        let (_, columns) = visible_text(&n.name);
        assert!(n.rect.width >= columns as f64 * kcoord_topology::layout::CHAR_WIDTH);
    }
    // The full name stays in the attributes and the title; the shortened one is the text.
    let svg = svg_of(&topology);
    assert!(drawn_names(&svg).contains(&("processor".to_string(), long.clone())));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&shown.as_str()), "{texts:?}");
    assert!(!texts.contains(&long.as_str()));
}

/// Every geometric promise of a layout: nodes, clusters and labels do not overlap; each
/// cluster holds its own nodes and its label and no other node; everything is on the canvas.
fn assert_readable(laid_out: &Layout) {
    let nodes = &laid_out.nodes;
    let canvas = Rect {
        x: 0.0,
        y: 0.0,
        width: laid_out.width,
        height: laid_out.height,
    };
    for (i, a) in nodes.iter().enumerate() {
        assert!(canvas.contains(&a.rect), "{} is off the canvas", a.name);
        for b in &nodes[i + 1..] {
            assert!(
                !a.rect.overlaps(&b.rect),
                "{} {:?} overlaps {} {:?}",
                a.name,
                a.rect,
                b.name,
                b.rect
            );
        }
    }
    for (c, cluster) in laid_out.clusters.iter().enumerate() {
        assert!(
            canvas.contains(&cluster.rect),
            "{} is off the canvas",
            cluster.label
        );
        assert!(
            cluster.rect.contains(&cluster.label_rect),
            "{}",
            cluster.label
        );
        for other in &laid_out.clusters[c + 1..] {
            assert!(
                !cluster.rect.overlaps(&other.rect),
                "{} {:?} overlaps {} {:?}",
                cluster.label,
                cluster.rect,
                other.label,
                other.rect
            );
        }
        for node in nodes {
            assert!(
                !node.rect.overlaps(&cluster.label_rect),
                "{} hides {}",
                node.name,
                cluster.label
            );
            if node.cluster == Some(c) {
                assert!(
                    cluster.rect.contains(&node.rect),
                    "{} is outside {}",
                    node.name,
                    cluster.label
                );
            } else {
                assert!(
                    !node.rect.overlaps(&cluster.rect),
                    "{} is inside {}",
                    node.name,
                    cluster.label
                );
            }
        }
    }
    for edge in &laid_out.edges {
        for p in &edge.points {
            assert!(
                (0.0..=laid_out.width).contains(&p.x) && (0.0..=laid_out.height).contains(&p.y),
                "edge {} -> {} leaves the canvas",
                edge.from,
                edge.to
            );
        }
    }
}

fn processing_nodes(topology: &StreamsGroupTopologyDescription) -> usize {
    topology
        .subtopologies
        .iter()
        .map(|s| s.nodes.len())
        .sum::<usize>()
        + 2 * topology.global_stores.len()
}

#[test]
fn ten_sub_topologies_of_twenty_nodes_do_not_overlap() {
    let topology = described(&layered(10, 20, 2));
    assert_eq!(processing_nodes(&topology), 204);
    let laid_out = layout(&build(&topology)).unwrap();
    assert_eq!(laid_out.clusters.len(), 12);
    assert!(
        laid_out.nodes.len() > 250,
        "topics and stores are nodes too"
    );
    assert_readable(&laid_out);
}

#[test]
fn a_chain_of_200_nodes_does_not_overlap() {
    let topology = described(&chain(200));
    assert_eq!(processing_nodes(&topology), 200);
    assert_readable(&layout(&build(&topology)).unwrap());
}

#[test]
fn a_fan_out_to_200_nodes_does_not_overlap_and_stays_narrow() {
    let topology = described(&fan_out(200));
    assert_eq!(processing_nodes(&topology), 200);
    let laid_out = layout(&build(&topology)).unwrap();
    assert_readable(&laid_out);
    // Top to bottom, 198 siblings side by side would be ~40,000 px wide; left to right they
    // stack and a page scrolls down instead.
    assert!(
        laid_out.width < laid_out.height,
        "{} x {}",
        laid_out.width,
        laid_out.height
    );
}

/// The drawing puts each node where the layout says, and sizes the canvas to the layout.
#[test]
fn the_drawing_follows_the_layout_and_has_a_scrollable_size() {
    let topology = described(&layered(10, 20, 2));
    let laid_out = layout(&build(&topology)).unwrap();
    let svg = svg_of(&topology);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let root = doc.root_element();
    let (width, height) = (
        root.attribute("width").unwrap().parse::<f64>().unwrap(),
        root.attribute("height").unwrap().parse::<f64>().unwrap(),
    );
    assert!((width - laid_out.width).abs() < 0.1 && (height - laid_out.height).abs() < 0.1);
    assert_eq!(
        root.attribute("viewBox"),
        Some(
            format!(
                "0 0 {} {}",
                root.attribute("width").unwrap(),
                root.attribute("height").unwrap()
            )
            .as_str()
        )
    );
    let placed: BTreeMap<&str, Rect> = laid_out
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n.rect))
        .collect();
    let groups: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .collect();
    assert_eq!(groups.len(), laid_out.nodes.len());
    for g in groups {
        let id = g.attribute("data-id").unwrap();
        let translate = g.attribute("transform").unwrap();
        let coordinates: Vec<f64> = translate
            .trim_start_matches("translate(")
            .trim_end_matches(')')
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect();
        let rect = placed[id];
        assert!(
            (coordinates[0] - rect.x).abs() <= 0.05 && (coordinates[1] - rect.y).abs() <= 0.05,
            "{id}: {translate} vs {rect:?}"
        );
    }
    let edges = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge"))
        .count();
    assert_eq!(edges, build(&topology).edges.len());
}

#[test]
fn the_same_topology_gives_the_same_bytes() {
    let topology = described(&layered(5, 12, 2));
    let first = svg_of(&topology);
    for _ in 0..3 {
        assert_eq!(svg_of(&topology.clone()), first);
    }
}

#[test]
fn global_stores_are_boxes_of_their_own() {
    let topology = described(&layered(2, 6, 2));
    let svg = svg_of(&topology);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let global_boxes = doc
        .descendants()
        .filter(|n| {
            n.attribute("class") == Some("cluster")
                && n.attribute("data-kind") == Some("global-store")
        })
        .count();
    assert_eq!(global_boxes, 2);
    let laid_out = layout(&build(&topology)).unwrap();
    for (c, cluster) in laid_out.clusters.iter().enumerate() {
        let members: Vec<_> = laid_out
            .nodes
            .iter()
            .filter(|n| n.cluster == Some(c))
            .collect();
        if cluster.kind == ClusterKind::GlobalStore {
            let shapes: Vec<Shape> = members.iter().map(|n| n.shape).collect();
            assert_eq!(
                shapes,
                [Shape::Source, Shape::Processor],
                "{}",
                cluster.label
            );
        }
    }
    let stores: Vec<_> = laid_out
        .nodes
        .iter()
        .filter(|n| n.name.starts_with("global-store-"))
        .collect();
    assert_eq!(stores.len(), 2);
    assert!(stores
        .iter()
        .all(|s| s.shape == Shape::Store && s.cluster.is_none()));
    assert_readable(&laid_out);
}

#[test]
fn the_drawing_has_no_script_ids_or_event_handlers() {
    let svg = svg_of(&odd_topology());
    let doc = roxmltree::Document::parse(&svg).unwrap();
    for element in doc.descendants().filter(|n| n.is_element()) {
        let tag = element.tag_name().name();
        assert!(
            !["script", "style", "foreignObject", "a", "image", "use"].contains(&tag),
            "<{tag}>"
        );
        for attribute in element.attributes() {
            let name = attribute.name();
            assert!(
                name != "id" && !name.starts_with("on") && name != "href",
                "{name}"
            );
        }
    }
}

#[test]
fn an_empty_topology_is_an_empty_drawing() {
    let svg = svg_of(&StreamsGroupTopologyDescription::default());
    assert!(drawn_names(&svg).is_empty());
}

/// Small topologies of any shape: cycles, self-loops, dangling successors, a topic read and
/// written by one sub-topology, shared names across sub-topologies.
fn topologies() -> impl Strategy<Value = StreamsGroupTopologyDescription> {
    let node = (
        0u8..3,
        0usize..6,
        proptest::collection::vec(0usize..6, 0..3),
        0usize..4,
    );
    let subtopology = proptest::collection::vec(node, 1..6);
    (proptest::collection::vec(subtopology, 0..4), 0usize..3).prop_map(|(subs, globals)| {
        let subtopologies = subs
            .into_iter()
            .enumerate()
            .map(|(s, nodes)| kcoord_topology::Subtopology {
                id: s.to_string(),
                nodes: nodes
                    .into_iter()
                    .enumerate()
                    .map(
                        |(i, (kind, _, successors, resource))| kcoord_topology::Node {
                            name: format!("n{i}"),
                            kind: match kind {
                                0 => NodeKind::Source {
                                    topics: [format!("topic-{resource}")].into(),
                                },
                                1 => NodeKind::Processor {
                                    stores: [format!("store-{resource}")].into(),
                                },
                                _ => NodeKind::Sink {
                                    topic: Some(format!("topic-{resource}")),
                                },
                            },
                            successors: successors.into_iter().map(|t| format!("n{t}")).collect(),
                            predecessors: BTreeSet::new(),
                        },
                    )
                    .collect(),
            })
            .collect();
        let global_stores = (0..globals)
            .map(|g| kcoord_topology::GlobalStore {
                source: kcoord_topology::Node {
                    name: format!("g{g}"),
                    kind: NodeKind::Source {
                        topics: [format!("topic-{g}")].into(),
                    },
                    successors: [format!("gp{g}")].into(),
                    predecessors: BTreeSet::new(),
                },
                processor: kcoord_topology::Node {
                    name: format!("gp{g}"),
                    kind: NodeKind::Processor {
                        stores: [format!("store-{g}")].into(),
                    },
                    successors: BTreeSet::new(),
                    predecessors: BTreeSet::new(),
                },
            })
            .collect();
        StreamsGroupTopologyDescription {
            subtopologies,
            global_stores,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_topology_is_drawn_readably(topology in topologies()) {
        let laid_out = layout(&build(&topology)).unwrap();
        assert_readable(&laid_out);
        let drawn: BTreeSet<_> = drawn_names(&svg_of(&topology)).into_iter().collect();
        prop_assert_eq!(drawn, expected_names(&topology));
    }
}
