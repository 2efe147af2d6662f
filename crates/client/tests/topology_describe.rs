//! StreamsGroupDescribe with topology descriptions (R56, R57) against a fake coordinator.

mod support;

use std::collections::BTreeSet;

use kcoord_client::admin::DescribeStreamsGroupsOptions;
use kcoord_client::topology::streams::{GlobalStore, Node, Subtopology, TopologyDescription};
use kcoord_client::topology::{NodeKind, TopologyDescriptionStatus};
use kcoord_client::{Client, ClientConfig, ClientError};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::find_coordinator_response::Coordinator;
use kcoord_wire::messages::streams_group_describe_response::{
    DescribedGroup, Topology, TopologyDescription as DescribedTopology,
};
use kcoord_wire::messages::{
    FindCoordinatorRequest, FindCoordinatorResponse, StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
};
use support::{api_versions, every_api, every_api_but, response, FakeServer, Log, Received, Reply};

/// A topology with two sub-topologies and a global store, as a Kafka Streams app pushes it.
fn description() -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![
            Subtopology {
                id: 0,
                nodes: vec![
                    Node::source("src", &["orders"], &["split"]),
                    Node::processor("split", &["counts"], &["sink-a", "sink-b"]),
                    Node::sink("sink-a", Some("a")),
                    Node::sink("sink-b", None),
                ],
            },
            Subtopology {
                id: 1,
                nodes: vec![Node::source("src-a", &["a"], &[])],
            },
        ],
        global_stores: vec![GlobalStore {
            id: 2,
            source: Node::source("gsrc", &["products"], &["gproc"]),
            processor: Node::processor("gproc", &["products-store"], &[]),
        }],
    }
}

fn described(group_id: &str, status: i8, description: Option<DescribedTopology>) -> DescribedGroup {
    DescribedGroup {
        group_id: group_id.into(),
        group_state: "Stable".into(),
        topology: Some(Topology {
            epoch: 0,
            subtopologies: Some(Vec::new()),
            ..Default::default()
        }),
        topology_description_status: status,
        topology_description: description,
        ..Default::default()
    }
}

/// A bootstrap-and-coordinator fake answering describes: group "available" with the
/// description, "not-stored", "error", and "broken" (AVAILABLE without a description).
async fn coordinator(apis: Vec<(ApiKey, i16, i16)>) -> (Client, Log) {
    let server = FakeServer::bind().await;
    let port = server.port();
    let wire = DescribedTopology::from(&description().to_wire().unwrap());
    let handler = move |request: &Received| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&apis)),
        Some(ApiKey::FindCoordinator) => {
            let keys = request.decode::<FindCoordinatorRequest>().coordinator_keys;
            let coordinators = keys
                .into_iter()
                .map(|key| Coordinator {
                    key,
                    node_id: 1,
                    host: "127.0.0.1".into(),
                    port,
                    ..Default::default()
                })
                .collect();
            response(
                request,
                &FindCoordinatorResponse {
                    coordinators,
                    ..Default::default()
                },
            )
        }
        Some(ApiKey::StreamsGroupDescribe) => {
            let include = request
                .decode::<StreamsGroupDescribeRequest>()
                .include_topology_description;
            let groups = request
                .decode::<StreamsGroupDescribeRequest>()
                .group_ids
                .into_iter()
                .map(|id| match (id.as_str(), include) {
                    (_, false) => described(&id, 0, None),
                    ("available", true) => described(&id, 3, Some(wire.clone())),
                    ("not-stored", true) => described(&id, 1, None),
                    ("error", true) => described(&id, 2, None),
                    _ => described(&id, 3, None),
                })
                .collect();
            response(
                request,
                &StreamsGroupDescribeResponse {
                    groups,
                    ..Default::default()
                },
            )
        }
        _ => Reply::Close,
    };
    let (addr, log, _) = server.serve(handler);
    (
        Client::connect(&addr, ClientConfig::new("describe-test"))
            .await
            .unwrap(),
        log,
    )
}

const WITH_TOPOLOGY: DescribeStreamsGroupsOptions = DescribeStreamsGroupsOptions {
    include_topology_description: true,
    include_authorized_operations: false,
};

fn names(set: &BTreeSet<String>) -> Vec<&str> {
    set.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn r57_the_description_is_asked_for_at_v1_and_exposed_with_its_status() {
    let (client, log) = coordinator(every_api()).await;
    let results = client
        .describe_streams_groups(
            &["available", "not-stored", "error", "broken"],
            WITH_TOPOLOGY,
        )
        .await;
    let requests = log.of(ApiKey::StreamsGroupDescribe);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].version(), 1);
    assert!(
        requests[0]
            .decode::<StreamsGroupDescribeRequest>()
            .include_topology_description
    );

    let available = results[0].result.as_ref().unwrap();
    assert_eq!(
        available.topology_description_status(),
        TopologyDescriptionStatus::Available
    );
    let topology = available.topology_description().expect("a description");
    assert_eq!(
        topology
            .subtopologies
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["0", "1"]
    );
    assert_eq!(
        topology.global_stores[0].processor.kind,
        NodeKind::Processor {
            stores: ["products-store".to_string()].into()
        }
    );

    for (result, status) in [
        (&results[1], TopologyDescriptionStatus::NotStored),
        (&results[2], TopologyDescriptionStatus::Error),
    ] {
        let d = result.result.as_ref().unwrap();
        assert_eq!(
            (d.topology_description_status(), d.topology_description()),
            (status, None)
        );
    }
    let broken = results[3].result.as_ref().unwrap_err();
    assert!(matches!(broken, ClientError::Protocol(_)), "{broken}");
    assert!(
        broken
            .to_string()
            .contains("missing despite status AVAILABLE"),
        "{broken}"
    );
}

#[tokio::test]
async fn r56_predecessors_are_rebuilt_from_the_successors_on_the_read_side() {
    let (client, _) = coordinator(every_api()).await;
    let results = client
        .describe_streams_groups(&["available"], WITH_TOPOLOGY)
        .await;
    let topology = results[0]
        .result
        .as_ref()
        .unwrap()
        .topology_description()
        .cloned()
        .unwrap();
    let nodes = &topology.subtopologies[0].nodes;
    let by_name = |name: &str| nodes.iter().find(|n| n.name == name).unwrap();
    assert!(by_name("src").predecessors.is_empty());
    assert_eq!(names(&by_name("split").predecessors), ["src"]);
    assert_eq!(names(&by_name("sink-a").predecessors), ["split"]);
    assert_eq!(names(&by_name("sink-b").predecessors), ["split"]);
    assert_eq!(names(&by_name("split").successors), ["sink-a", "sink-b"]);
    assert_eq!(by_name("sink-b").kind, NodeKind::Sink { topic: None });
    assert_eq!(
        names(&topology.global_stores[0].processor.predecessors),
        ["gsrc"]
    );
    // Nodes arrive sorted by name, as Kafka Streams sends them.
    assert_eq!(
        nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        ["sink-a", "sink-b", "split", "src"]
    );
}

#[tokio::test]
async fn r57_not_asking_gives_not_requested() {
    let (client, log) = coordinator(every_api()).await;
    let results = client
        .describe_streams_groups(&["available"], DescribeStreamsGroupsOptions::default())
        .await;
    let d = results[0].result.as_ref().unwrap();
    assert_eq!(
        (d.topology_description_status(), d.topology_description()),
        (TopologyDescriptionStatus::NotRequested, None)
    );
    assert!(
        !log.of(ApiKey::StreamsGroupDescribe)[0]
            .decode::<StreamsGroupDescribeRequest>()
            .include_topology_description
    );
}

#[tokio::test]
async fn r57_a_coordinator_without_describe_v1_refuses_the_topology_clearly() {
    let (client, log) =
        coordinator(every_api_but(ApiKey::StreamsGroupDescribe, Some((0, 0)))).await;
    let results = client
        .describe_streams_groups(&["available", "error"], WITH_TOPOLOGY)
        .await;
    for result in &results {
        let err = result.result.as_ref().unwrap_err();
        assert!(
            matches!(err, ClientError::Unsupported { api: 89, .. }),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("unsupported by the coordinator") && text.contains("v0"),
            "{text}"
        );
    }
    assert!(
        log.of(ApiKey::StreamsGroupDescribe).is_empty(),
        "nothing was sent"
    );
    // The same coordinator still describes without the topology, at v0.
    let results = client
        .describe_streams_groups(&["available"], DescribeStreamsGroupsOptions::default())
        .await;
    assert_eq!(
        results[0]
            .result
            .as_ref()
            .unwrap()
            .topology_description_status(),
        TopologyDescriptionStatus::NotRequested
    );
    assert_eq!(log.of(ApiKey::StreamsGroupDescribe)[0].version(), 0);

    let (client, _) = coordinator(every_api_but(ApiKey::StreamsGroupDescribe, None)).await;
    let results = client
        .describe_streams_groups(&["available"], WITH_TOPOLOGY)
        .await;
    let err = results[0].result.as_ref().unwrap_err();
    assert!(
        err.to_string().contains("unsupported by the coordinator"),
        "{err}"
    );
}
