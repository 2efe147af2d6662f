use std::sync::Arc;

use kcoord_wire::messages::create_partitions_request::CreatePartitionsAssignment;
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
use kcoord_wire::messages::{
    CreateTopicsRequest, StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse,
};

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{encodes, running, server, Ctx, NODE_ID};
use crate::state::ServerState;

async fn call(
    state: &ServerState,
    req: CreatePartitionsRequest,
    version: i16,
) -> CreatePartitionsResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, version).await;
    encodes(&resp, version);
    resp
}

fn request(topics: &[(&str, i32)], validate_only: bool) -> CreatePartitionsRequest {
    CreatePartitionsRequest {
        topics: topics
            .iter()
            .map(|(name, count)| CreatePartitionsTopic {
                name: (*name).into(),
                count: *count,
                assignments: None,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 30_000,
        validate_only,
        ..Default::default()
    }
}

async fn create_topic(state: &ServerState, name: &str, partitions: i32) {
    let results = state
        .controller
        .create_topics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: -1,
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(results[0].error_code, 0, "{:?}", results[0].error_message);
}

fn answers(resp: &CreatePartitionsResponse) -> Vec<(&str, i16, Option<&str>)> {
    resp.results
        .iter()
        .map(|r| (r.name.as_str(), r.error_code, r.error_message.as_deref()))
        .collect()
}

#[tokio::test]
async fn grows_the_catalog_and_the_data_plane_at_every_version() {
    let r = running("");
    create_topic(&r.state, "orders", 1).await;
    for version in 0..=3i16 {
        let count = i32::from(version) + 2;
        let resp = call(&r.state, request(&[("orders", count)], false), version).await;
        assert_eq!(answers(&resp), vec![("orders", 0, None)], "v{version}");
        let topics = r.state.topics.snapshot();
        let topic = topics.get("orders").unwrap();
        assert_eq!(topic.partition_count(), count);
        let newest = r.state.partitions.get(topic.id, count - 1);
        assert!(newest.is_some(), "the new partition's log exists");
    }
    let resp = call(&r.state, request(&[("orders", 5)], false), 3).await;
    assert_eq!(
        answers(&resp),
        vec![("orders", 37, Some("Topic already has 5 partition(s)."))]
    );
}

#[tokio::test]
async fn validate_only_and_manual_assignments() {
    let r = running("");
    create_topic(&r.state, "t", 1).await;
    let resp = call(&r.state, request(&[("t", 3)], true), 3).await;
    assert_eq!(answers(&resp), vec![("t", 0, None)]);
    assert_eq!(
        r.state
            .topics
            .snapshot()
            .get("t")
            .unwrap()
            .partition_count(),
        1
    );
    let mut req = request(&[("t", 2)], false);
    req.topics[0].assignments = Some(vec![CreatePartitionsAssignment {
        broker_ids: vec![NODE_ID + 1],
        ..Default::default()
    }]);
    let resp = call(&r.state, req.clone(), 3).await;
    assert_eq!(
        answers(&resp),
        vec![("t", 39, Some("The manual partition assignment includes broker 8, but no such broker is registered."))]
    );
    req.topics[0].assignments = Some(vec![CreatePartitionsAssignment {
        broker_ids: vec![NODE_ID],
        ..Default::default()
    }]);
    let resp = call(&r.state, req, 3).await;
    assert_eq!(answers(&resp), vec![("t", 0, None)]);
    assert_eq!(
        r.state
            .topics
            .snapshot()
            .get("t")
            .unwrap()
            .partition_count(),
        2
    );
}

#[tokio::test]
async fn duplicates_refusals_and_results_come_in_kafkas_order() {
    let base = server();
    let (mut state, background) = ServerState::build(
        Arc::clone(&base.config),
        base.listeners.iter().map(|l| (**l).clone()).collect(),
    );
    state.authorizer = Some(Arc::new(crate::security::DenyAll));
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    background.spawn(&stop_rx);
    let resp = call(
        &state,
        request(
            &[
                ("t", 2),
                ("zeta", 2),
                ("orders", 2),
                ("zeta", 3),
                ("payments", 2),
                ("t", 4),
            ],
            false,
        ),
        3,
    )
    .await;
    // Java's HashSet orders: {zeta, t} and {payments, orders}.
    assert_eq!(
        answers(&resp),
        vec![
            ("zeta", 42, Some("Duplicate topic name.")),
            ("t", 42, Some("Duplicate topic name.")),
            ("payments", 29, None),
            ("orders", 29, None),
        ]
    );
}

#[test]
fn java_hash_set_order_is_javas() {
    let names = [
        "orders", "payments", "t", "zeta", "alpha", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8",
        "x9", "x10", "x11", "x12", "x13",
    ];
    let (once, twice) = java_hash_sets(names.iter().copied());
    // What jshell printed for a HashSet<String> filled with these names in this order.
    assert_eq!(
        once,
        vec![
            "zeta", "x8", "x9", "payments", "t", "x10", "alpha", "x12", "x1", "x11", "orders",
            "x2", "x3", "x13", "x4", "x5", "x6", "x7"
        ]
    );
    assert!(twice.is_empty());
}

#[tokio::test]
async fn a_timeout_of_zero_times_out_every_topic_as_sent() {
    let r = running("");
    create_topic(&r.state, "t", 1).await;
    let mut req = request(&[("t", 2), ("t", 3), ("u", 2)], false);
    req.timeout_ms = 0;
    let resp = call(&r.state, req, 3).await;
    assert_eq!(
        answers(&resp),
        vec![("t", 7, None), ("t", 7, None), ("u", 7, None)]
    );
    assert_eq!(
        r.state
            .topics
            .snapshot()
            .get("t")
            .unwrap()
            .partition_count(),
        1
    );
}

#[tokio::test]
async fn without_a_controller_every_topic_gets_not_controller() {
    let state = server();
    let resp = call(&state, request(&[("a", 2)], false), 3).await;
    assert_eq!(resp.results[0].error_code, ErrorCode::NOT_CONTROLLER.code());
}

fn heartbeat(member_epoch: i32, with_topology: bool) -> StreamsGroupHeartbeatRequest {
    StreamsGroupHeartbeatRequest {
        group_id: "app".into(),
        member_id: "m1".into(),
        member_epoch,
        rebalance_timeout_ms: 30_000,
        topology: with_topology.then(|| Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["input".into()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        process_id: with_topology.then(|| "process-1".into()),
        active_tasks: Some(vec![]),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![]),
        ..Default::default()
    }
}

async fn beat(
    state: &ServerState,
    req: StreamsGroupHeartbeatRequest,
) -> StreamsGroupHeartbeatResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = crate::rpc::apis::streams_group_heartbeat::handle(&c.ctx(state), req, 1).await;
    assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
    resp
}

fn active(resp: &StreamsGroupHeartbeatResponse) -> Option<Vec<i32>> {
    resp.active_tasks
        .as_ref()
        .map(|tasks| tasks.iter().flat_map(|t| t.partitions.clone()).collect())
}

/// Kafka 4.4 re-computes a streams group's tasks when a source topic grows: the topic
/// metadata the group was configured against changed, so the next heartbeat bumps the group
/// epoch and the new partition's task is assigned.
#[tokio::test]
async fn a_streams_group_whose_source_topic_grows_gets_the_new_task() {
    let r = running(
        "group.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n",
    );
    create_topic(&r.state, "input", 2).await;
    let joined = beat(&r.state, heartbeat(0, true)).await;
    assert_eq!(active(&joined), Some(vec![0, 1]));
    let epoch = joined.member_epoch;
    let steady = beat(&r.state, heartbeat(epoch, false)).await;
    assert_eq!(steady.member_epoch, epoch);
    let resp = call(&r.state, request(&[("input", 3)], false), 3).await;
    assert_eq!(answers(&resp), vec![("input", 0, None)]);
    let after = beat(&r.state, heartbeat(epoch, false)).await;
    assert!(after.member_epoch > epoch, "the group epoch bumped");
    assert_eq!(active(&after), Some(vec![0, 1, 2]));
}
