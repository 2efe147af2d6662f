use kcoord_plugin_api::{
    GlobalStore, Node, NodeKind, StreamsGroupTopologyDescription, Subtopology,
};
use serde_json::json;

use super::*;

fn node(name: &str, kind: NodeKind, successors: &[&str]) -> Node {
    Node {
        name: name.into(),
        kind,
        successors: successors.iter().map(|s| s.to_string()).collect(),
    }
}

fn source(name: &str, topic: &str, next: &[&str]) -> Node {
    node(
        name,
        NodeKind::Source {
            topics: vec![topic.into()],
        },
        next,
    )
}

fn processor(name: &str, stores: &[&str], next: &[&str]) -> Node {
    let stores = stores.iter().map(|s| s.to_string()).collect();
    node(name, NodeKind::Processor { stores }, next)
}

fn sink(name: &str, topic: &str) -> Node {
    node(
        name,
        NodeKind::Sink {
            topic: Some(topic.into()),
        },
        &[],
    )
}

/// The orders app: orders → filter → valid-orders.
fn first() -> StreamsGroupTopologyDescription {
    StreamsGroupTopologyDescription {
        subtopologies: vec![Subtopology {
            id: "0".into(),
            nodes: vec![
                source("src", "orders", &["filter"]),
                processor("filter", &[], &["sink"]),
                sink("sink", "valid-orders"),
            ],
        }],
        global_stores: vec![],
    }
}

/// Redeployed: the filter now counts into a store and a second sub-topology reads returns.
fn second() -> StreamsGroupTopologyDescription {
    StreamsGroupTopologyDescription {
        subtopologies: vec![
            Subtopology {
                id: "0".into(),
                nodes: vec![
                    source("src", "orders", &["filter"]),
                    processor("filter", &["counts"], &["count", "sink"]),
                    processor("count", &["counts"], &[]),
                    sink("sink", "checked-orders"),
                ],
            },
            Subtopology {
                id: "1".into(),
                nodes: vec![source("returns", "returns", &[])],
            },
        ],
        global_stores: vec![GlobalStore {
            source: source("gsrc", "prices", &["gproc"]),
            processor: processor("gproc", &["prices-store"], &[]),
        }],
    }
}

#[test]
fn a_redeploy_lists_what_it_added_removed_and_changed() {
    let d = serde_json::to_value(diff(&first(), &second())).unwrap();
    assert_eq!(
        d["subtopologies"],
        json!({"added": ["1"], "removed": [], "changed": ["0"]})
    );
    let added: Vec<&str> = d["nodes"]["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(added, ["count", "gproc", "gsrc", "returns"]);
    assert_eq!(d["nodes"]["added"][1]["subtopology"], "global");
    assert_eq!(d["nodes"]["removed"], json!([]));
    assert_eq!(
        d["nodes"]["changed"],
        json!([
            {"name": "filter", "subtopology": "0", "type": "PROCESSOR", "changes": ["stores", "successors"]},
            {"name": "sink", "subtopology": "0", "type": "SINK", "changes": ["topics"]}
        ])
    );
    assert_eq!(
        d["edges"],
        json!({"added": [{"from": "filter", "to": "count"}, {"from": "gsrc", "to": "gproc"}], "removed": []})
    );
    assert_eq!(
        d["topics"],
        json!({"added": ["checked-orders", "prices", "returns"], "removed": ["valid-orders"], "changed": []})
    );
    assert_eq!(
        d["stateStores"],
        json!({"added": ["counts", "prices-store"], "removed": [], "changed": []})
    );
}

#[test]
fn the_reverse_swaps_added_and_removed_and_a_store_used_elsewhere_is_changed() {
    let back = diff(&second(), &first());
    assert_eq!(back.topics.removed, ["checked-orders", "prices", "returns"]);
    assert_eq!(back.subtopologies.removed, ["1"]);
    let mut third = second();
    third.subtopologies[0].nodes[1] = processor("filter", &[], &["count", "sink"]);
    let moved = diff(&second(), &third);
    assert_eq!(moved.state_stores.changed.len(), 1);
    assert_eq!(
        (
            moved.state_stores.changed[0].before.clone(),
            moved.state_stores.changed[0].after.clone()
        ),
        (
            vec!["count".to_owned(), "filter".to_owned()],
            vec!["count".to_owned()]
        )
    );
    assert_eq!(diff(&second(), &second()), diff(&first(), &first()));
}
