use kcoord_wire::messages::describe_cluster_response::DescribeClusterBroker;
use kcoord_wire::messages::find_coordinator_response::Coordinator;
use kcoord_wire::messages::metadata_response::MetadataResponseBroker;

use super::*;

/// [`rewrite`], the brokers seen not looked at.
fn rewritten(
    api: ApiKey,
    version: i16,
    body: Bytes,
    placement: &Placement,
) -> Result<Bytes, RewriteError> {
    rewrite(api, version, body, placement, &mut |_| {})
}

fn endpoints() -> Placement {
    Placement::alone(own())
}

fn own() -> Endpoints {
    Endpoints {
        host: "gw.example".to_owned(),
        port_start: 19000,
    }
}

fn encode<M: Encodable>(m: &M, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    m.encode(&mut out, version).unwrap();
    out.freeze()
}

fn metadata_broker(id: i32) -> MetadataResponseBroker {
    MetadataResponseBroker {
        node_id: id,
        host: format!("kafka-{id}.internal"),
        port: 9092,
        rack: Some("r1".to_owned()),
        ..Default::default()
    }
}

#[test]
fn metadata_brokers_move_to_their_ports_and_keep_ids_racks_and_the_controller() {
    for version in [1, 2, 9, 12, 13] {
        let upstream = MetadataResponse {
            brokers: vec![metadata_broker(0), metadata_broker(2)],
            cluster_id: Some("upstream-cluster".to_owned()),
            controller_id: 2,
            ..Default::default()
        };
        let body = rewritten(
            ApiKey::Metadata,
            version,
            encode(&upstream, version),
            &endpoints(),
        )
        .unwrap();
        let got = MetadataResponse::decode(&mut body.clone(), version).unwrap();
        let brokers: Vec<_> = got
            .brokers
            .iter()
            .map(|b| (b.node_id, b.host.as_str(), b.port, b.rack.as_deref()))
            .collect();
        assert_eq!(
            brokers,
            [
                (0, "gw.example", 19000, Some("r1")),
                (2, "gw.example", 19002, Some("r1"))
            ],
            "v{version}"
        );
        assert_eq!(got.controller_id, 2);
        if version >= 2 {
            assert_eq!(got.cluster_id.as_deref(), Some("upstream-cluster"));
        }
    }
}

#[test]
fn a_broker_without_a_port_is_left_out_rather_than_shown_at_its_upstream_address() {
    let ends = Endpoints {
        host: "gw".to_owned(),
        port_start: 65535,
    };
    let upstream = MetadataResponse {
        brokers: vec![metadata_broker(0), metadata_broker(1)],
        ..Default::default()
    };
    let body = rewritten(
        ApiKey::Metadata,
        12,
        encode(&upstream, 12),
        &Placement::alone(ends),
    )
    .unwrap();
    let got = MetadataResponse::decode(&mut body.clone(), 12).unwrap();
    let ids: Vec<i32> = got.brokers.iter().map(|b| b.node_id).collect();
    assert_eq!(ids, [0]);
}

#[test]
fn several_nodes_share_the_brokers_so_a_client_knows_more_than_one_node() {
    let other = Endpoints {
        host: "gw-b.example".to_owned(),
        port_start: 65534,
    };
    // Broker b at node b mod 2; broker 2 would be past port 65535 at the other node's start,
    // so it stays at this node's.
    let placement = Placement::spread(own(), vec![other, own()]);
    let upstream = MetadataResponse {
        brokers: (0..4).map(metadata_broker).collect(),
        ..Default::default()
    };
    let body = rewritten(ApiKey::Metadata, 12, encode(&upstream, 12), &placement).unwrap();
    let got = MetadataResponse::decode(&mut body.clone(), 12).unwrap();
    let brokers: Vec<_> = got
        .brokers
        .iter()
        .map(|b| (b.node_id, b.host.as_str(), b.port))
        .collect();
    assert_eq!(
        brokers,
        [
            (0, "gw-b.example", 65534),
            (1, "gw.example", 19001),
            (2, "gw.example", 19002),
            (3, "gw.example", 19003),
        ]
    );
    let coordinator = FindCoordinatorResponse {
        node_id: 0,
        host: "kafka-0.internal".to_owned(),
        port: 9092,
        ..Default::default()
    };
    let body = rewritten(
        ApiKey::FindCoordinator,
        3,
        encode(&coordinator, 3),
        &placement,
    )
    .unwrap();
    let got = FindCoordinatorResponse::decode(&mut body.clone(), 3).unwrap();
    assert_eq!((got.host.as_str(), got.port), ("gw-b.example", 65534));
}

#[test]
fn describe_cluster_brokers_move_to_their_ports() {
    let upstream = DescribeClusterResponse {
        brokers: vec![DescribeClusterBroker {
            broker_id: 1,
            host: "kafka-1".to_owned(),
            port: 9092,
            ..Default::default()
        }],
        controller_id: 1,
        ..Default::default()
    };
    let body = rewritten(
        ApiKey::DescribeCluster,
        1,
        encode(&upstream, 1),
        &endpoints(),
    )
    .unwrap();
    let got = DescribeClusterResponse::decode(&mut body.clone(), 1).unwrap();
    assert_eq!(got.brokers[0].host, "gw.example");
    assert_eq!(got.brokers[0].port, 19001);
    assert_eq!(got.brokers[0].broker_id, 1);
    assert_eq!(got.controller_id, 1);
}

#[test]
fn find_coordinator_nodes_move_in_both_shapes_and_no_node_stays_none() {
    let old = FindCoordinatorResponse {
        node_id: 2,
        host: "kafka-2".to_owned(),
        port: 9092,
        ..Default::default()
    };
    let body = rewritten(ApiKey::FindCoordinator, 3, encode(&old, 3), &endpoints()).unwrap();
    let got = FindCoordinatorResponse::decode(&mut body.clone(), 3).unwrap();
    assert_eq!(
        (got.node_id, got.host.as_str(), got.port),
        (2, "gw.example", 19002)
    );

    let batched = FindCoordinatorResponse {
        coordinators: vec![
            Coordinator {
                key: "g".to_owned(),
                node_id: 0,
                host: "kafka-0".to_owned(),
                port: 9092,
                ..Default::default()
            },
            Coordinator {
                key: "h".to_owned(),
                node_id: -1,
                host: String::new(),
                port: -1,
                error_code: 15,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let body = rewritten(
        ApiKey::FindCoordinator,
        6,
        encode(&batched, 6),
        &endpoints(),
    )
    .unwrap();
    let got = FindCoordinatorResponse::decode(&mut body.clone(), 6).unwrap();
    let nodes: Vec<_> = got
        .coordinators
        .iter()
        .map(|c| (c.node_id, c.host.as_str(), c.port))
        .collect();
    assert_eq!(nodes, [(0, "gw.example", 19000), (-1, "", -1)]);
}

#[test]
fn ports_fit_or_say_which_id_does_not() {
    let ends = Endpoints {
        host: "gw".to_owned(),
        port_start: 65000,
    };
    assert_eq!(ends.port(535), Ok(65535));
    assert!(ends.check([0, 1, 535]).is_ok());
    let err = ends.check([0, 1000]).unwrap_err();
    assert_eq!(err.id, 1000);
    assert!(err.to_string().contains("at most 64535"), "{err}");
    assert!(ends.port(-1).is_err());
}

#[test]
fn an_undecodable_answer_is_an_error_not_a_panic() {
    let err = rewritten(
        ApiKey::Metadata,
        12,
        Bytes::from_static(&[0, 0, 0, 1, 255]),
        &endpoints(),
    )
    .unwrap_err();
    assert!(matches!(err, RewriteError::Decode { .. }), "{err}");
}

fn node_endpoint(id: i32) -> (i32, String, i32) {
    (id, format!("kafka-{id}.internal"), 9092)
}

#[test]
fn a_fetch_answer_naming_a_moved_leader_names_it_at_kcoords_port_and_any_other_is_untouched() {
    use kcoord_wire::messages::fetch_response::NodeEndpoint;
    let (id, host, port) = node_endpoint(2);
    let moved = FetchResponse {
        node_endpoints: vec![NodeEndpoint {
            node_id: id,
            host,
            port,
            rack: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = rewritten(ApiKey::Fetch, 17, encode(&moved, 17), &endpoints()).unwrap();
    let back = FetchResponse::decode(&mut out.clone(), 17).unwrap();
    let shown: Vec<_> = back
        .node_endpoints
        .iter()
        .map(|e| (e.node_id, e.host.as_str(), e.port))
        .collect();
    assert_eq!(shown, [(2, "gw.example", 19002)]);

    // Without endpoints, the cluster's own bytes go back, not a copy.
    let quiet = encode(&FetchResponse::default(), 17);
    let out = rewritten(ApiKey::Fetch, 17, quiet.clone(), &endpoints()).unwrap();
    assert_eq!(out.as_ptr(), quiet.as_ptr());
    // Before v16 nothing is decoded at all.
    let old = Bytes::from_static(b"not a fetch answer");
    assert_eq!(
        rewritten(ApiKey::Fetch, 15, old.clone(), &endpoints()).unwrap(),
        old
    );
}

#[test]
fn a_produce_answer_naming_a_moved_leader_names_it_at_kcoords_port() {
    use kcoord_wire::messages::produce_response::NodeEndpoint;
    let (id, host, port) = node_endpoint(1);
    let moved = ProduceResponse {
        node_endpoints: vec![NodeEndpoint {
            node_id: id,
            host,
            port,
            rack: Some("r1".to_owned()),
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = rewritten(ApiKey::Produce, 12, encode(&moved, 12), &endpoints()).unwrap();
    let back = ProduceResponse::decode(&mut out.clone(), 12).unwrap();
    let shown: Vec<_> = back
        .node_endpoints
        .iter()
        .map(|e| (e.node_id, e.host.as_str(), e.port, e.rack.as_deref()))
        .collect();
    assert_eq!(shown, [(1, "gw.example", 19001, Some("r1"))]);
    let old = Bytes::from_static(b"v9");
    assert_eq!(
        rewritten(ApiKey::Produce, 9, old.clone(), &endpoints()).unwrap(),
        old
    );
}

#[test]
fn share_fetch_and_acknowledge_answers_name_moved_leaders_at_kcoords_ports() {
    use kcoord_wire::messages::share_acknowledge_response::NodeEndpoint as AckEndpoint;
    use kcoord_wire::messages::share_fetch_response::NodeEndpoint as FetchEndpoint;
    let (id, host, port) = node_endpoint(0);
    let fetch = ShareFetchResponse {
        node_endpoints: vec![FetchEndpoint {
            node_id: id,
            host: host.clone(),
            port,
            rack: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = rewritten(ApiKey::ShareFetch, 1, encode(&fetch, 1), &endpoints()).unwrap();
    let back = ShareFetchResponse::decode(&mut out.clone(), 1).unwrap();
    assert_eq!(
        (
            back.node_endpoints[0].host.as_str(),
            back.node_endpoints[0].port
        ),
        ("gw.example", 19000)
    );
    let ack = ShareAcknowledgeResponse {
        node_endpoints: vec![AckEndpoint {
            node_id: id,
            host,
            port,
            rack: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = rewritten(ApiKey::ShareAcknowledge, 2, encode(&ack, 2), &endpoints()).unwrap();
    let back = ShareAcknowledgeResponse::decode(&mut out.clone(), 2).unwrap();
    assert_eq!(
        (
            back.node_endpoints[0].host.as_str(),
            back.node_endpoints[0].port
        ),
        ("gw.example", 19000)
    );
    let quiet = encode(&ShareFetchResponse::default(), 1);
    let same = rewritten(ApiKey::ShareFetch, 1, quiet.clone(), &endpoints()).unwrap();
    assert_eq!(same.as_ptr(), quiet.as_ptr());
}
