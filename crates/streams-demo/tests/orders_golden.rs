//! `examples/orders.json` against the specification's appendix: the request body the
//! simulator pushes for the `orders` -> filter -> `valid-orders` application
//! (`fixtures/orders-push-request.json` is the appendix's body, verbatim). The appendix lists
//! nodes in graph order, Kafka Streams' converter sends them by name; everything else is
//! compared as it is.

use std::path::PathBuf;

use bytes::BytesMut;
use kcoord_client::topology::WireTopology;
use kcoord_streams_demo::app_topology;
use kcoord_wire::messages::UpdateStreamsGroupTopologyDescriptionRequest;
use kcoord_wire::{Decodable, Encodable};
use serde_json::{json, Value};

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn appendix() -> Value {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/orders-push-request.json"),
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_orders_example_converts_to_the_specification_s_request_body() {
    let description =
        app_topology::load(&repo_file("examples/orders.json")).expect("the example loads");
    let wire = description.to_wire().unwrap();
    let expected = appendix();
    let id = expected["TopologyDescriptionId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let request = UpdateStreamsGroupTopologyDescriptionRequest {
        group_id: "orders-app".into(),
        topology_description_id: id,
        topology_description: (&wire).into(),
        ..Default::default()
    };
    // Through the wire and back, so the comparison is about what is sent.
    let mut bytes = BytesMut::new();
    request.encode(&mut bytes, 0).unwrap();
    let sent =
        UpdateStreamsGroupTopologyDescriptionRequest::decode(&mut bytes.freeze(), 0).unwrap();
    let body = json!({
        "GroupId": sent.group_id,
        "TopologyDescriptionId": sent.topology_description_id.to_string(),
        "TopologyDescription": serde_json::to_value(WireTopology::from(&sent.topology_description)).unwrap(),
    });
    // The appendix lists the nodes in graph order; Kafka Streams' converter (which this
    // follows) sends them sorted by name. Same nodes, same fields:
    assert_eq!(
        by_node_name(body.clone()),
        by_node_name(expected),
        "got:\n{}",
        serde_json::to_string_pretty(&body).unwrap()
    );
    let names: Vec<&str> = body["TopologyDescription"]["Subtopologies"][0]["Nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "KSTREAM-FILTER-0000000001",
            "KSTREAM-SINK-0000000002",
            "KSTREAM-SOURCE-0000000000"
        ]
    );
}

/// The body with every sub-topology's nodes sorted by name.
fn by_node_name(mut body: Value) -> Value {
    for subtopology in body["TopologyDescription"]["Subtopologies"]
        .as_array_mut()
        .unwrap()
    {
        subtopology["Nodes"]
            .as_array_mut()
            .unwrap()
            .sort_by(|a, b| a["Name"].as_str().cmp(&b["Name"].as_str()));
    }
    body
}

#[test]
fn the_orders_example_joins_with_one_subtopology_reading_orders() {
    let description = app_topology::load(&repo_file("examples/orders.json")).unwrap();
    let topology = app_topology::assignment_topology(&description, "orders-app", 0).unwrap();
    assert_eq!(topology.subtopologies.len(), 1);
    let s = &topology.subtopologies[0];
    assert_eq!(
        (s.subtopology_id.as_str(), s.source_topics.clone()),
        ("0", vec!["orders".to_string()])
    );
    assert!(
        s.repartition_sink_topics.is_empty()
            && s.repartition_source_topics.is_empty()
            && s.state_changelog_topics.is_empty()
    );
    assert_eq!(
        app_topology::source_topics(&description)
            .into_iter()
            .collect::<Vec<_>>(),
        ["orders"]
    );
}
