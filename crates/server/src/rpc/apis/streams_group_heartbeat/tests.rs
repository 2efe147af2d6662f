use std::time::Duration;

use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, TopicInfo, Topology};
use kcoord_wire::messages::CreateTopicsRequest;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::authorize::{AclOperation, ResourceType};
use crate::rpc::testing::{encodes, running, server, Ctx};
use crate::state::{client_host, ServerState};
use std::net::SocketAddr;

const FAST: &str =
    "group.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n";

async fn call(
    state: &ServerState,
    req: StreamsGroupHeartbeatRequest,
    version: i16,
) -> StreamsGroupHeartbeatResponse {
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = handle(&c.ctx(state), req, version).await;
    encodes(&resp, version);
    resp
}

fn topology(source: &str, changelog: Option<&str>) -> Topology {
    Topology {
        epoch: 1,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec![source.into()],
            state_changelog_topics: changelog
                .map(|c| {
                    vec![TopicInfo {
                        name: c.into(),
                        ..Default::default()
                    }]
                })
                .unwrap_or_default(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn join(group: &str, member: &str, topology: Topology) -> StreamsGroupHeartbeatRequest {
    StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(topology),
        process_id: Some("process-1".into()),
        active_tasks: Some(vec![]),
        standby_tasks: Some(vec![]),
        warmup_tasks: Some(vec![]),
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

fn statuses(resp: &StreamsGroupHeartbeatResponse) -> Vec<(i8, String)> {
    resp.status
        .iter()
        .flatten()
        .map(|s| (s.status_code, s.status_detail.clone()))
        .collect()
}

#[tokio::test]
async fn internal_or_invalid_topic_names_are_refused_before_the_coordinator() {
    // No shard is running: reaching one would answer COORDINATOR_NOT_AVAILABLE.
    let state = server();
    let resp = call(
        &state,
        join("g", "m", topology("__consumer_offsets", None)),
        0,
    )
    .await;
    assert_eq!(resp.error_code, ErrorCode::STREAMS_INVALID_TOPOLOGY.code());
    assert_eq!(
        resp.error_message.as_deref(),
        Some("Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited.")
    );
    // Even when the request is also invalid otherwise (empty member id), as in Kafka.
    let resp = call(&state, join("g", "", topology("bad name", None)), 1).await;
    assert_eq!(resp.error_code, ErrorCode::STREAMS_INVALID_TOPOLOGY.code());
    assert_eq!(
        resp.error_message.as_deref(),
        Some("Topic names bad name are not valid topic names.")
    );
    let resp = call(&state, join("g", "m", topology("fine", None)), 2).await;
    assert_eq!(
        (resp.error_code, resp.error_message),
        (ErrorCode::COORDINATOR_NOT_AVAILABLE.code(), None)
    );
}

#[tokio::test]
async fn coordinator_errors_become_the_response_error() {
    let r = running(FAST);
    let resp = call(&r.state, join("g", "", topology("in", None)), 0).await;
    assert_eq!(resp.error_code, ErrorCode::INVALID_REQUEST.code());
    assert_eq!(
        resp.error_message.as_deref(),
        Some("MemberId can't be empty.")
    );
    let mut hb = join("nope", "m", topology("in", None));
    hb.member_epoch = 3;
    hb.topology = None;
    let resp = call(&r.state, hb, 1).await;
    assert_eq!(resp.error_code, ErrorCode::GROUP_ID_NOT_FOUND.code());
}

#[tokio::test]
async fn join_gets_an_assignment_at_every_version() {
    let r = running(FAST);
    create_topic(&r.state, "input", 4).await;
    for version in 0..=2 {
        let group = format!("app-{version}");
        let resp = call(
            &r.state,
            join(&group, "m1", topology("input", None)),
            version,
        )
        .await;
        assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
        assert_eq!(resp.member_id, "m1");
        assert!(resp.member_epoch >= 1);
        assert_eq!(resp.heartbeat_interval_ms, 5_000);
        let active: Vec<i32> = resp
            .active_tasks
            .iter()
            .flatten()
            .flat_map(|t| t.partitions.clone())
            .collect();
        assert_eq!(active, vec![0, 1, 2, 3]);
        assert!(!resp.topology_description_required);
        assert_eq!(resp.topology_description_id, None);
        // The member, as the coordinator recorded it.
        let host = r
            .state
            .coordinators
            .for_group(&group)
            .read(move |s| s.group(&group).map(|g| g.members["m1"].client_host.clone()))
            .await
            .unwrap();
        assert_eq!(host.as_deref(), Some("/127.0.0.1"));
    }
}

#[tokio::test]
async fn missing_internal_topics_are_created_with_the_computed_partitions() {
    let r = running(FAST);
    create_topic(&r.state, "input", 3).await;
    let resp = call(
        &r.state,
        join("app", "m1", topology("input", Some("app-store-changelog"))),
        1,
    )
    .await;
    assert_eq!(resp.error_code, 0);
    assert!(
        statuses(&resp)
            .iter()
            .any(|(code, detail)| *code == MISSING_INTERNAL_TOPICS
                && detail == "Internal topics are missing: app-store-changelog"),
        "{:?}",
        statuses(&resp)
    );
    // The creation runs in the background; the catalog shows it soon.
    let mut created = None;
    for _ in 0..1000 {
        if let Some(t) = r.state.topics.snapshot().get("app-store-changelog") {
            created = Some((t.partition_count(), t.configs.clone()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (partitions, _) = created.expect("the changelog topic was not created");
    assert_eq!(partitions, 3);
    // The next heartbeat finds everything in place.
    let mut hb = join("app", "m1", topology("input", None));
    hb.member_epoch = resp.member_epoch;
    hb.topology = None;
    let resp = call(&r.state, hb, 1).await;
    assert_eq!(resp.error_code, 0);
    assert!(statuses(&resp)
        .iter()
        .all(|(code, _)| *code != MISSING_INTERNAL_TOPICS));
}

#[tokio::test]
async fn creation_errors_are_appended_to_the_missing_internal_topics_status() {
    let r = running(FAST);
    create_topic(&r.state, "input", 2).await;
    // A changelog whose name collides with an existing topic cannot be created.
    create_topic(&r.state, "my_app-changelog", 1).await;
    let topo = topology("input", Some("my.app-changelog"));
    let first = call(&r.state, join("app", "m1", topo.clone()), 1).await;
    assert!(statuses(&first)
        .iter()
        .any(|(code, _)| *code == MISSING_INTERNAL_TOPICS));
    let expected = "Internal topics are missing: my.app-changelog; Creation failed: my.app-changelog (Topic 'my.app-changelog' collides with existing topic: my_app-changelog).";
    let mut seen = Vec::new();
    for _ in 0..1000 {
        let mut hb = join("app", "m1", topo.clone());
        hb.member_epoch = first.member_epoch;
        hb.topology = None;
        let resp = call(&r.state, hb, 1).await;
        seen = statuses(&resp);
        if seen.iter().any(|(_, d)| d == expected) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no creation error in {seen:?}");
}

#[test]
fn client_host_is_javas_inet_address_string() {
    assert_eq!(
        client_host(SocketAddr::from(([10, 0, 0, 7], 1))),
        "/10.0.0.7"
    );
    assert_eq!(
        client_host("[::1]:9092".parse().unwrap()),
        "/0:0:0:0:0:0:0:1"
    );
}

/// Allows everything but the listed (operation, topic name) pairs.
#[derive(Debug)]
struct AllowAllBut(Vec<(AclOperation, &'static str)>);

impl crate::security::Authorizer for AllowAllBut {
    fn authorize(
        &self,
        _: &crate::security::Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        // CREATE on the cluster is refused too when some CREATE on a topic is.
        let create_refused = self.0.iter().any(|(op, _)| *op == AclOperation::Create);
        if resource == ResourceType::Cluster {
            return !(operation == AclOperation::Create && create_refused);
        }
        resource != ResourceType::Topic
            || !self.0.iter().any(|(op, n)| *op == operation && *n == name)
    }
}

#[tokio::test]
async fn a_topology_naming_a_topic_the_member_may_not_describe_is_refused_whole() {
    let refused = std::sync::Arc::new(AllowAllBut(vec![(
        AclOperation::Describe,
        "app-store-changelog",
    )]));
    let r = crate::rpc::testing::running_with_authorizer(FAST, refused);
    create_topic(&r.state, "input", 3).await;
    let resp = call(
        &r.state,
        join("app", "m1", topology("input", Some("app-store-changelog"))),
        1,
    )
    .await;
    assert_eq!(
        resp.error_code,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.code()
    );
    assert_eq!(resp.error_message, None);
    assert_eq!(resp.member_epoch, 0, "the coordinator was not called");
}

#[tokio::test]
async fn internal_topics_the_member_may_not_create_are_not_created_and_the_status_says_so() {
    let refused = std::sync::Arc::new(AllowAllBut(vec![(
        AclOperation::Create,
        "app-store-changelog",
    )]));
    let r = crate::rpc::testing::running_with_authorizer(FAST, refused);
    create_topic(&r.state, "input", 3).await;
    let resp = call(
        &r.state,
        join("app", "m1", topology("input", Some("app-store-changelog"))),
        1,
    )
    .await;
    assert_eq!(resp.error_code, 0);
    assert!(
        statuses(&resp).iter().any(|(code, detail)| *code == MISSING_INTERNAL_TOPICS
            && detail == "Internal topics are missing: app-store-changelog; Unauthorized to CREATE on topics app-store-changelog."),
        "{:?}",
        statuses(&resp)
    );
    // Nothing is created (the creation would be in the catalog at once: it is not even asked).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(r
        .state
        .topics
        .snapshot()
        .get("app-store-changelog")
        .is_none());
}
