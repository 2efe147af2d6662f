//! Admin calls against fake brokers: each request is checked at the version negotiated, and
//! per-group / per-topic / per-partition results are decoded, errors by Kafka's names.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kcoord_client::admin::{
    AclOperation, DescribeStreamsGroupsOptions, GroupMember, GroupOffsetsSpec, NewTopic,
    OffsetAndMetadata, TopicPartition,
};
use kcoord_client::streams::tasks_from;
use kcoord_client::{Client, ClientConfig, ClientError};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_topics_response::CreatableTopicResult;
use kcoord_wire::messages::delete_groups_response::DeletableGroupResult;
use kcoord_wire::messages::delete_topics_response::DeletableTopicResult;
use kcoord_wire::messages::list_groups_response::ListedGroup;
use kcoord_wire::messages::metadata_response::{MetadataResponseBroker, MetadataResponseTopic};
use kcoord_wire::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kcoord_wire::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kcoord_wire::messages::streams_group_describe_response::{self as describe, DescribedGroup};
use kcoord_wire::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DeleteGroupsRequest, DeleteGroupsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, ListGroupsRequest, ListGroupsResponse,
    MetadataRequest, MetadataResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
};
use kcoord_wire::ErrorCode;
use support::streams::CoordinatorSequence;
use support::{api_versions, every_api, every_api_but, response, FakeServer, Log, Received, Reply};
use uuid::Uuid;

/// Topic ids the fake Metadata knows.
fn known_topics() -> Vec<(&'static str, Uuid)> {
    vec![
        ("orders", Uuid::from_u128(1)),
        ("payments", Uuid::from_u128(2)),
    ]
}

/// A broker that is also every group's coordinator (or the ones `coordinators` names), lists
/// `brokers` (its own port when empty) in Metadata with the topics of `known_topics`, and
/// hands every other request to `answer`.
struct Broker {
    apis: Vec<(ApiKey, i16, i16)>,
    brokers: Vec<i32>,
    coordinators: Option<CoordinatorSequence>,
}

impl Broker {
    fn new(apis: Vec<(ApiKey, i16, i16)>) -> Self {
        Broker {
            apis,
            brokers: Vec::new(),
            coordinators: None,
        }
    }

    async fn serve(
        self,
        answer: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> (Client, Log) {
        let server = FakeServer::bind().await;
        let port = server.port();
        let brokers = if self.brokers.is_empty() {
            vec![port]
        } else {
            self.brokers
        };
        let coordinators = self
            .coordinators
            .unwrap_or_else(|| CoordinatorSequence::new(vec![port]));
        let apis = self.apis;
        let (addr, log, _) =
            server.serve(move |request| match ApiKey::from_i16(request.api_key()) {
                Some(ApiKey::ApiVersions) => response(request, &api_versions(&apis)),
                Some(ApiKey::FindCoordinator) => coordinators.answer(request),
                Some(ApiKey::Metadata) => response(request, &metadata(request, &brokers)),
                _ => answer(request),
            });
        (
            Client::connect(&addr, ClientConfig::new("admin-test"))
                .await
                .unwrap(),
            log,
        )
    }
}

fn metadata(request: &Received, brokers: &[i32]) -> MetadataResponse {
    let asked = request.decode::<MetadataRequest>().topics;
    let topics = known_topics()
        .into_iter()
        .filter(|(name, _)| {
            asked
                .as_ref()
                .is_none_or(|a| a.iter().any(|t| t.name.as_deref() == Some(name)))
        })
        .map(|(name, id)| MetadataResponseTopic {
            name: Some(name.into()),
            topic_id: id,
            ..Default::default()
        })
        .collect();
    let brokers = brokers
        .iter()
        .enumerate()
        .map(|(i, port)| MetadataResponseBroker {
            node_id: i as i32 + 1,
            host: "127.0.0.1".into(),
            port: *port,
            ..Default::default()
        })
        .collect();
    MetadataResponse {
        brokers,
        topics,
        ..Default::default()
    }
}

fn only<T>(log: &Log, api: ApiKey) -> (i16, T)
where
    T: kcoord_wire::Decodable,
{
    let requests = log.of(api);
    assert_eq!(requests.len(), 1, "one {api:?} request");
    (requests[0].version(), requests[0].decode())
}

fn listed(group_id: &str, protocol_type: &str, state: &str, group_type: &str) -> ListedGroup {
    ListedGroup {
        group_id: group_id.into(),
        protocol_type: protocol_type.into(),
        group_state: state.into(),
        group_type: group_type.into(),
        ..Default::default()
    }
}

fn list_groups_answer(request: &Received) -> Reply {
    let groups = vec![
        listed("orders-app", "streams", "Stable", "streams"),
        listed("billing", "consumer", "Empty", "classic"),
    ];
    // Honour the filters where the version has them, as a broker would.
    let filter = request.decode::<ListGroupsRequest>();
    let groups = groups
        .into_iter()
        .filter(|g| {
            filter.types_filter.is_empty()
                || filter
                    .types_filter
                    .iter()
                    .any(|t| t.eq_ignore_ascii_case(&g.group_type))
        })
        .filter(|g| {
            filter.states_filter.is_empty()
                || filter
                    .states_filter
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(&g.group_state))
        })
        .collect();
    response(
        request,
        &ListGroupsResponse {
            groups,
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn list_groups_sends_filters_the_version_has() {
    let (client, log) = Broker::new(every_api()).serve(list_groups_answer).await;
    let groups = client.list_groups(&["streams"], &["stable"]).await.unwrap();
    let (version, request) = only::<ListGroupsRequest>(&log, ApiKey::ListGroups);
    assert_eq!(version, 5);
    assert_eq!(
        (request.types_filter, request.states_filter),
        (vec!["streams".to_string()], vec!["stable".to_string()])
    );
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].group_id, "orders-app");
    assert_eq!(
        (
            groups[0].group_state.as_deref(),
            groups[0].group_type.as_deref()
        ),
        (Some("Stable"), Some("streams"))
    );
}

#[tokio::test]
async fn list_groups_filters_types_itself_below_v5_and_refuses_states_below_v4() {
    let (client, log) = Broker::new(every_api_but(ApiKey::ListGroups, Some((0, 4))))
        .serve(list_groups_answer)
        .await;
    let groups = client.list_groups(&["streams"], &[]).await.unwrap();
    let (version, request) = only::<ListGroupsRequest>(&log, ApiKey::ListGroups);
    assert_eq!(version, 4);
    assert!(request.types_filter.is_empty());
    assert_eq!(
        groups
            .iter()
            .map(|g| g.group_id.as_str())
            .collect::<Vec<_>>(),
        vec!["orders-app"]
    );
    assert_eq!(
        (
            groups[0].group_state.as_deref(),
            groups[0].group_type.as_deref()
        ),
        (Some("Stable"), None)
    );

    let (client, log) = Broker::new(every_api_but(ApiKey::ListGroups, Some((0, 3))))
        .serve(list_groups_answer)
        .await;
    let all = client.list_groups(&[], &[]).await.unwrap();
    assert_eq!(
        all.iter().map(|g| g.group_id.as_str()).collect::<Vec<_>>(),
        vec!["billing", "orders-app"],
        "sorted"
    );
    assert_eq!(all[0].group_state, None);
    let err = client.list_groups(&[], &["Stable"]).await.unwrap_err();
    assert!(matches!(err, ClientError::Unsupported { .. }), "{err}");
    assert_eq!(
        log.of(ApiKey::ListGroups).len(),
        1,
        "nothing sent for the refused call"
    );
}

#[tokio::test]
async fn list_groups_asks_every_broker_and_merges() {
    let other = FakeServer::bind().await;
    let other_port = other.port();
    let (_, other_log, _) = other.serve(move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&every_api())),
        _ => response(
            request,
            &ListGroupsResponse {
                groups: vec![listed("zeta", "streams", "Empty", "streams")],
                ..Default::default()
            },
        ),
    });
    let server = FakeServer::bind().await;
    let port = server.port();
    let (addr, log, _) = server.serve(move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&every_api())),
        Some(ApiKey::Metadata) => response(request, &metadata(request, &[port, other_port])),
        _ => list_groups_answer(request),
    });
    let client = Client::connect(&addr, ClientConfig::new("admin-test"))
        .await
        .unwrap();
    let groups = client.list_groups(&[], &[]).await.unwrap();
    assert_eq!(
        groups
            .iter()
            .map(|g| g.group_id.as_str())
            .collect::<Vec<_>>(),
        vec!["billing", "orders-app", "zeta"]
    );
    assert_eq!(
        (
            log.of(ApiKey::ListGroups).len(),
            other_log.of(ApiKey::ListGroups).len()
        ),
        (1, 1)
    );
}

#[tokio::test]
async fn a_list_groups_error_is_a_kafka_error() {
    let (client, _) = Broker::new(every_api())
        .serve(|request| {
            response(
                request,
                &ListGroupsResponse {
                    error_code: ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code(),
                    ..Default::default()
                },
            )
        })
        .await;
    let err = client.list_groups(&[], &[]).await.unwrap_err();
    assert_eq!(
        err.error_name(),
        Some("COORDINATOR_LOAD_IN_PROGRESS"),
        "{err}"
    );
}

fn delete_groups_answer(request: &Received) -> Reply {
    let results = request
        .decode::<DeleteGroupsRequest>()
        .groups_names
        .into_iter()
        .map(|group_id| {
            let (error_code, error_message) = match group_id.as_str() {
                "busy" => (
                    ErrorCode::NON_EMPTY_GROUP.code(),
                    Some("The group is not empty.".to_string()),
                ),
                "ghost" => (ErrorCode::GROUP_ID_NOT_FOUND.code(), None),
                _ => (0, None),
            };
            DeletableGroupResult {
                group_id,
                error_code,
                error_message,
                ..Default::default()
            }
        })
        .collect();
    response(
        request,
        &DeleteGroupsResponse {
            results,
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn delete_groups_reports_each_group_by_kafka_error_name() {
    for (max, message) in [(3, Some("The group is not empty.")), (2, None)] {
        let (client, log) = Broker::new(every_api_but(ApiKey::DeleteGroups, Some((0, max))))
            .serve(delete_groups_answer)
            .await;
        let results = client
            .delete_groups(&["done", "busy", "ghost", "done"])
            .await;
        let (version, request) = only::<DeleteGroupsRequest>(&log, ApiKey::DeleteGroups);
        assert_eq!(version, max);
        assert_eq!(
            request.groups_names,
            vec!["done", "busy", "ghost"],
            "one request, repeats removed"
        );
        let summary: Vec<(&str, Option<&str>)> = results
            .iter()
            .map(|r| {
                (
                    r.group_id.as_str(),
                    r.result.as_ref().err().and_then(ClientError::error_name),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("done", None),
                ("busy", Some("NON_EMPTY_GROUP")),
                ("ghost", Some("GROUP_ID_NOT_FOUND"))
            ]
        );
        match &results[1].result {
            Err(ClientError::Kafka { message: m, .. }) => {
                assert_eq!(m.as_deref(), message, "v{max}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_coordinator_is_looked_up_once_more_then_reported() {
    let dead = FakeServer::bind().await;
    let dead_port = dead.port();
    drop(dead);
    let broker = Broker {
        apis: every_api(),
        brokers: Vec::new(),
        coordinators: Some(CoordinatorSequence::new(vec![dead_port])),
    };
    let (client, log) = broker.serve(delete_groups_answer).await;
    let results = client.delete_groups(&["a"]).await;
    let err = results[0].result.as_ref().unwrap_err();
    assert!(err.is_transport(), "{err}");
    assert_eq!(
        log.of(ApiKey::FindCoordinator).len(),
        2,
        "looked up again once"
    );
    assert!(log.of(ApiKey::DeleteGroups).is_empty());
}

#[tokio::test]
async fn not_coordinator_in_an_answer_sends_the_group_to_the_new_coordinator() {
    let new = FakeServer::bind().await;
    let new_port = new.port();
    let (_, new_log, _) = new.serve(move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&every_api())),
        _ => delete_groups_answer(request),
    });
    let server = FakeServer::bind().await;
    let port = server.port();
    let coordinators = CoordinatorSequence::new(vec![port, port, new_port]);
    let (addr, log, _) = server.serve(move |request| match ApiKey::from_i16(request.api_key()) {
        Some(ApiKey::ApiVersions) => response(request, &api_versions(&every_api())),
        Some(ApiKey::FindCoordinator) => coordinators.answer(request),
        _ => {
            let results = request
                .decode::<DeleteGroupsRequest>()
                .groups_names
                .into_iter()
                .map(|group_id| {
                    let error_code = if group_id == "moved" {
                        ErrorCode::NOT_COORDINATOR.code()
                    } else {
                        0
                    };
                    DeletableGroupResult {
                        group_id,
                        error_code,
                        ..Default::default()
                    }
                })
                .collect();
            response(
                request,
                &DeleteGroupsResponse {
                    results,
                    ..Default::default()
                },
            )
        }
    });
    let client = Client::connect(&addr, ClientConfig::new("admin-test"))
        .await
        .unwrap();
    let results = client.delete_groups(&["stays", "moved"]).await;
    assert!(results.iter().all(|r| r.result.is_ok()), "{results:?}");
    assert_eq!(
        log.of(ApiKey::FindCoordinator).len(),
        3,
        "one lookup each, then one again for the moved group"
    );
    let (_, retried) = only::<DeleteGroupsRequest>(&new_log, ApiKey::DeleteGroups);
    assert_eq!(retried.groups_names, vec!["moved"]);
}

fn described_group() -> DescribedGroup {
    let task_ids = |s: &str, p: Vec<i32>| describe::TaskIds {
        subtopology_id: s.into(),
        partitions: p,
        ..Default::default()
    };
    DescribedGroup {
        group_id: "orders-app".into(),
        group_state: "Stable".into(),
        group_epoch: 7,
        assignment_epoch: 6,
        topology: Some(describe::Topology {
            epoch: 2,
            subtopologies: Some(vec![describe::Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec!["orders".into()],
                repartition_sink_topics: vec!["app-repartition".into()],
                state_changelog_topics: vec![describe::TopicInfo {
                    name: "app-store-changelog".into(),
                    partitions: 4,
                    replication_factor: 3,
                    topic_configs: vec![describe::KeyValue {
                        key: "cleanup.policy".into(),
                        value: "compact".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }]),
            ..Default::default()
        }),
        members: vec![describe::Member {
            member_id: "m1".into(),
            member_epoch: 6,
            instance_id: Some("i1".into()),
            client_id: "streams-client".into(),
            client_host: "/127.0.0.1".into(),
            topology_epoch: 2,
            process_id: "p1".into(),
            user_endpoint: Some(describe::Endpoint {
                host: "app".into(),
                port: 7070,
                ..Default::default()
            }),
            client_tags: vec![describe::KeyValue {
                key: "zone".into(),
                value: "a".into(),
                ..Default::default()
            }],
            task_offsets: vec![describe::TaskOffset {
                subtopology_id: "0".into(),
                partition: 1,
                offset: 42,
                ..Default::default()
            }],
            assignment: describe::Assignment {
                active_tasks: vec![task_ids("0", vec![0, 1])],
                ..Default::default()
            },
            target_assignment: describe::Assignment {
                active_tasks: vec![task_ids("0", vec![0, 1, 2])],
                ..Default::default()
            },
            ..Default::default()
        }],
        authorized_operations: (1 << 3) | (1 << 8),
        assignor_name: Some("sticky".into()),
        ..Default::default()
    }
}

fn describe_answer(request: &Received) -> Reply {
    let groups = request
        .decode::<StreamsGroupDescribeRequest>()
        .group_ids
        .into_iter()
        .map(|id| match id.as_str() {
            "orders-app" => described_group(),
            _ => DescribedGroup {
                group_id: id,
                error_code: ErrorCode::GROUP_ID_NOT_FOUND.code(),
                error_message: Some("Group missing not found.".into()),
                ..Default::default()
            },
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

#[tokio::test]
async fn describe_streams_groups_decodes_kafka_s_description() {
    for max in [1, 0] {
        let (client, log) =
            Broker::new(every_api_but(ApiKey::StreamsGroupDescribe, Some((0, max))))
                .serve(describe_answer)
                .await;
        let options = DescribeStreamsGroupsOptions {
            include_authorized_operations: true,
            ..Default::default()
        };
        let results = client
            .describe_streams_groups(&["orders-app", "missing"], options)
            .await;
        let (version, request) =
            only::<StreamsGroupDescribeRequest>(&log, ApiKey::StreamsGroupDescribe);
        assert_eq!(version, max);
        assert!(request.include_authorized_operations && !request.include_topology_description);

        let d = results[0].result.as_ref().unwrap();
        assert_eq!(
            (
                d.group_id.as_str(),
                d.group_state.as_str(),
                d.group_epoch,
                d.target_assignment_epoch,
                d.topology_epoch
            ),
            ("orders-app", "Stable", 7, 6, 2)
        );
        assert_eq!(d.subtopologies[0].source_topics, vec!["orders"]);
        assert_eq!(
            d.subtopologies[0].state_changelog_topics[0].topic_configs,
            vec![("cleanup.policy".to_string(), "compact".to_string())]
        );
        assert_eq!(d.coordinator.node_id, 1);
        assert_eq!(
            d.authorized_operations,
            Some(vec![AclOperation::Read, AclOperation::Describe])
        );
        assert_eq!(
            d.assignor_name.as_deref(),
            if max >= 1 { Some("sticky") } else { None },
            "AssignorName is v1+"
        );
        let m = &d.members[0];
        assert_eq!(
            (
                m.member_id.as_str(),
                m.instance_id.as_deref(),
                m.process_id.as_str()
            ),
            ("m1", Some("i1"), "p1")
        );
        assert_eq!(m.user_endpoint.as_ref().map(|e| e.port), Some(7070));
        assert_eq!(m.assignment.active, tasks_from([("0", &[0, 1])]));
        assert_eq!(m.target_assignment.active, tasks_from([("0", &[0, 1, 2])]));
        assert_eq!(m.task_offsets[0].offset, 42);

        let err = results[1].result.as_ref().unwrap_err();
        assert_eq!(err.error_name(), Some("GROUP_ID_NOT_FOUND"));
        assert!(
            err.to_string().contains("Group missing not found."),
            "{err}"
        );
    }
}

#[tokio::test]
async fn authorized_operations_are_absent_unless_asked_for() {
    let (client, _) = Broker::new(every_api()).serve(describe_answer).await;
    let results = client
        .describe_streams_groups(&["orders-app"], DescribeStreamsGroupsOptions::default())
        .await;
    assert_eq!(
        results[0].result.as_ref().unwrap().authorized_operations,
        None
    );
}

fn create_topics_answer(request: &Received) -> Reply {
    let topics = request
        .decode::<CreateTopicsRequest>()
        .topics
        .into_iter()
        .map(|t| {
            let exists = t.name == "orders";
            CreatableTopicResult {
                topic_id: if exists {
                    Uuid::nil()
                } else {
                    Uuid::from_u128(9)
                },
                error_code: if exists {
                    ErrorCode::TOPIC_ALREADY_EXISTS.code()
                } else {
                    0
                },
                error_message: exists.then(|| "Topic 'orders' already exists.".into()),
                num_partitions: if t.num_partitions == -1 {
                    1
                } else {
                    t.num_partitions
                },
                replication_factor: 1,
                name: t.name,
                ..Default::default()
            }
        })
        .collect();
    response(
        request,
        &CreateTopicsResponse {
            topics,
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn create_topics_gives_a_result_per_topic() {
    let (client, log) = Broker::new(every_api()).serve(create_topics_answer).await;
    let specs = [
        NewTopic::new("orders", 3, 1),
        NewTopic::with_defaults("payments").config("retention.ms", "1000"),
    ];
    let results = client.create_topics(&specs, true).await.unwrap();
    let (version, request) = only::<CreateTopicsRequest>(&log, ApiKey::CreateTopics);
    assert_eq!(version, 7);
    assert!(request.validate_only);
    assert_eq!(
        (
            request.topics[1].num_partitions,
            request.topics[1].replication_factor
        ),
        (-1, -1)
    );
    assert_eq!(request.topics[1].configs[0].value.as_deref(), Some("1000"));
    assert_eq!(
        results[0].result.as_ref().unwrap_err().error_name(),
        Some("TOPIC_ALREADY_EXISTS")
    );
    let created = results[1].result.as_ref().unwrap();
    assert_eq!(
        (created.topic_id, created.num_partitions),
        (Some(Uuid::from_u128(9)), 1)
    );
}

#[tokio::test]
async fn create_topics_below_v4_cannot_ask_for_broker_defaults() {
    let (client, log) = Broker::new(every_api_but(ApiKey::CreateTopics, Some((2, 3))))
        .serve(create_topics_answer)
        .await;
    let err = client
        .create_topics(&[NewTopic::with_defaults("payments")], false)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Unsupported { .. }), "{err}");
    let results = client
        .create_topics(&[NewTopic::new("payments", 2, 1)], false)
        .await
        .unwrap();
    assert_eq!(
        results[0].result.as_ref().unwrap().topic_id,
        None,
        "no topic id before v7"
    );
    assert_eq!(log.of(ApiKey::CreateTopics)[0].version(), 3);
}

fn delete_topics_answer(request: &Received) -> Reply {
    let decoded = request.decode::<DeleteTopicsRequest>();
    let names: Vec<String> = if request.version() >= 6 {
        decoded.topics.into_iter().filter_map(|t| t.name).collect()
    } else {
        decoded.topic_names
    };
    let responses = names
        .into_iter()
        .map(|name| {
            let missing = name == "ghost";
            DeletableTopicResult {
                error_code: if missing {
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
                } else {
                    0
                },
                name: Some(name),
                ..Default::default()
            }
        })
        .collect();
    response(
        request,
        &DeleteTopicsResponse {
            responses,
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn delete_topics_names_topics_as_the_version_wants() {
    for max in [6, 5] {
        let (client, log) = Broker::new(every_api_but(ApiKey::DeleteTopics, Some((1, max))))
            .serve(delete_topics_answer)
            .await;
        let results = client.delete_topics(&["orders", "ghost"]).await.unwrap();
        let (version, request) = only::<DeleteTopicsRequest>(&log, ApiKey::DeleteTopics);
        assert_eq!(version, max);
        if max >= 6 {
            assert_eq!(
                request
                    .topics
                    .iter()
                    .map(|t| t.name.clone().unwrap())
                    .collect::<Vec<_>>(),
                vec!["orders", "ghost"]
            );
            assert!(request.topics.iter().all(|t| t.topic_id.is_nil()));
        } else {
            assert_eq!(request.topic_names, vec!["orders", "ghost"]);
        }
        assert!(results[0].result.is_ok());
        assert_eq!(
            results[1].result.as_ref().unwrap_err().error_name(),
            Some("UNKNOWN_TOPIC_OR_PARTITION")
        );
    }
}

/// Answers OffsetCommit with NONE, except STALE_MEMBER_EPOCH for partition 1, echoing topics
/// by id (v10) or name.
fn commit_answer(request: &Received) -> Reply {
    let commit = request.decode::<OffsetCommitRequest>();
    let topics = commit
        .topics
        .into_iter()
        .map(|t| OffsetCommitResponseTopic {
            name: t.name,
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .into_iter()
                .map(|p| OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: if p.partition_index == 1 {
                        ErrorCode::STALE_MEMBER_EPOCH.code()
                    } else {
                        0
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    response(
        request,
        &OffsetCommitResponse {
            topics,
            ..Default::default()
        },
    )
}

fn offsets() -> BTreeMap<TopicPartition, OffsetAndMetadata> {
    BTreeMap::from([
        (
            TopicPartition::new("orders", 0),
            OffsetAndMetadata {
                offset: 10,
                leader_epoch: Some(3),
                metadata: Some("m".into()),
            },
        ),
        (TopicPartition::new("orders", 1), OffsetAndMetadata::new(11)),
    ])
}

#[tokio::test]
async fn commit_offsets_uses_topic_ids_at_v10() {
    let (client, log) = Broker::new(every_api()).serve(commit_answer).await;
    let member = GroupMember {
        member_id: "m1".into(),
        member_epoch: 5,
        instance_id: Some("i1".into()),
    };
    let results = client
        .commit_offsets("orders-app", &offsets(), Some(&member))
        .await
        .unwrap();
    let (version, request) = only::<OffsetCommitRequest>(&log, ApiKey::OffsetCommit);
    assert_eq!(version, 10);
    assert_eq!(
        (
            request.group_id.as_str(),
            request.member_id.as_str(),
            request.generation_id_or_member_epoch
        ),
        ("orders-app", "m1", 5)
    );
    assert_eq!(request.group_instance_id.as_deref(), Some("i1"));
    assert_eq!(request.topics[0].topic_id, Uuid::from_u128(1));
    let p0 = &request.topics[0].partitions[0];
    assert_eq!(
        (
            p0.committed_offset,
            p0.committed_leader_epoch,
            p0.committed_metadata.as_deref()
        ),
        (10, 3, Some("m"))
    );
    assert!(results[&TopicPartition::new("orders", 0)].is_ok());
    assert_eq!(
        results[&TopicPartition::new("orders", 1)]
            .as_ref()
            .unwrap_err()
            .error_name(),
        Some("STALE_MEMBER_EPOCH")
    );
}

#[tokio::test]
async fn commit_offsets_names_topics_when_an_id_is_unknown_or_v10_is_missing() {
    for (apis, expected) in [
        (every_api(), 9),
        (every_api_but(ApiKey::OffsetCommit, Some((2, 6))), 6),
    ] {
        let (client, log) = Broker::new(apis).serve(commit_answer).await;
        let mut offsets = offsets();
        offsets.insert(
            TopicPartition::new("unknown-topic", 0),
            OffsetAndMetadata::new(1),
        );
        let member = GroupMember {
            member_id: "m1".into(),
            member_epoch: 5,
            instance_id: Some("i1".into()),
        };
        let results = client
            .commit_offsets("orders-app", &offsets, Some(&member))
            .await
            .unwrap();
        let (version, request) = only::<OffsetCommitRequest>(&log, ApiKey::OffsetCommit);
        assert_eq!(version, expected);
        assert_eq!(
            request
                .topics
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            vec!["orders", "unknown-topic"]
        );
        assert_eq!(
            request.group_instance_id.is_some(),
            expected >= 7,
            "no instance id before v7"
        );
        assert_eq!(results.len(), 3);
        assert!(results[&TopicPartition::new("unknown-topic", 0)].is_ok());
    }
    let (client, log) = Broker::new(every_api()).serve(commit_answer).await;
    client.commit_offsets("g", &offsets(), None).await.unwrap();
    let (_, admin) = only::<OffsetCommitRequest>(&log, ApiKey::OffsetCommit);
    assert_eq!(
        (
            admin.member_id.as_str(),
            admin.generation_id_or_member_epoch
        ),
        ("", -1),
        "an admin commit"
    );
}

#[tokio::test]
async fn a_commit_answered_not_coordinator_is_sent_once_more() {
    let calls = Arc::new(Mutex::new(0));
    let seen = calls.clone();
    let (client, log) = Broker::new(every_api())
        .serve(move |request| {
            let mut n = seen.lock().unwrap();
            *n += 1;
            if *n <= 2 {
                let commit = request.decode::<OffsetCommitRequest>();
                let topics = commit
                    .topics
                    .into_iter()
                    .map(|t| OffsetCommitResponseTopic {
                        topic_id: t.topic_id,
                        partitions: t
                            .partitions
                            .into_iter()
                            .map(|p| OffsetCommitResponsePartition {
                                partition_index: p.partition_index,
                                error_code: ErrorCode::NOT_COORDINATOR.code(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect();
                return response(
                    request,
                    &OffsetCommitResponse {
                        topics,
                        ..Default::default()
                    },
                );
            }
            commit_answer(request)
        })
        .await;
    let results = client.commit_offsets("g", &offsets(), None).await.unwrap();
    assert_eq!(log.of(ApiKey::OffsetCommit).len(), 2, "one retry only");
    assert_eq!(log.of(ApiKey::FindCoordinator).len(), 2);
    assert_eq!(
        results[&TopicPartition::new("orders", 0)]
            .as_ref()
            .unwrap_err()
            .error_name(),
        Some("NOT_COORDINATOR"),
        "the second answer stands"
    );
}

fn fetched_partition(index: i32) -> OffsetFetchResponsePartitions {
    OffsetFetchResponsePartitions {
        partition_index: index,
        committed_offset: if index == 0 { 10 } else { -1 },
        committed_leader_epoch: if index == 0 { 3 } else { -1 },
        metadata: Some(String::new()),
        ..Default::default()
    }
}

/// OffsetFetch v8+: every group gets `orders` 0 (offset 10) and 1 (none); group "ghost" fails.
fn fetch_batched_answer(request: &Received) -> Reply {
    let fetch = request.decode::<OffsetFetchRequest>();
    let groups = fetch
        .groups
        .into_iter()
        .map(|g| OffsetFetchResponseGroup {
            error_code: if g.group_id == "ghost" {
                ErrorCode::GROUP_ID_NOT_FOUND.code()
            } else {
                0
            },
            topics: vec![OffsetFetchResponseTopics {
                name: if request.version() < 10 {
                    "orders".into()
                } else {
                    String::new()
                },
                topic_id: if request.version() >= 10 {
                    Uuid::from_u128(1)
                } else {
                    Uuid::nil()
                },
                partitions: vec![fetched_partition(0), fetched_partition(1)],
                ..Default::default()
            }],
            group_id: g.group_id,
            ..Default::default()
        })
        .collect();
    response(
        request,
        &OffsetFetchResponse {
            groups,
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn fetch_offsets_uses_topic_ids_at_v10_and_names_for_all_topics() {
    let (client, log) = Broker::new(every_api()).serve(fetch_batched_answer).await;
    let partitions = [
        TopicPartition::new("orders", 0),
        TopicPartition::new("orders", 1),
    ];
    let fetched = client
        .fetch_offsets("orders-app", Some(&partitions), true)
        .await
        .unwrap();
    assert_eq!(
        fetched[&partitions[0]].as_ref().unwrap(),
        &Some(OffsetAndMetadata {
            offset: 10,
            leader_epoch: Some(3),
            metadata: Some(String::new())
        })
    );
    assert_eq!(
        fetched[&partitions[1]].as_ref().unwrap(),
        &None,
        "-1 = nothing committed"
    );
    let (version, request) = only::<OffsetFetchRequest>(&log, ApiKey::OffsetFetch);
    assert_eq!(version, 10);
    assert!(request.require_stable);
    let group = &request.groups[0];
    assert_eq!(
        (
            group.group_id.as_str(),
            group.member_id.as_deref(),
            group.member_epoch
        ),
        ("orders-app", None, -1)
    );
    let topics = group.topics.as_ref().unwrap();
    assert_eq!(
        (topics[0].topic_id, topics[0].partition_indexes.clone()),
        (Uuid::from_u128(1), vec![0, 1])
    );

    client
        .fetch_offsets("orders-app", None, false)
        .await
        .unwrap();
    let all = log.of(ApiKey::OffsetFetch).pop().unwrap();
    assert_eq!(
        all.version(),
        9,
        "all topics: names come back, no ids to map"
    );
    assert_eq!(all.decode::<OffsetFetchRequest>().groups[0].topics, None);
}

#[tokio::test]
async fn fetch_offsets_for_groups_batches_from_v8() {
    let (client, log) = Broker::new(every_api_but(ApiKey::OffsetFetch, Some((1, 8))))
        .serve(fetch_batched_answer)
        .await;
    let specs = vec![
        GroupOffsetsSpec {
            group_id: "a".into(),
            partitions: None,
            member: None,
        },
        GroupOffsetsSpec {
            group_id: "ghost".into(),
            partitions: Some(vec![TopicPartition::new("orders", 0)]),
            member: None,
        },
        GroupOffsetsSpec {
            group_id: "b".into(),
            partitions: Some(vec![TopicPartition::new("orders", 0)]),
            member: Some(GroupMember {
                member_id: "m".into(),
                member_epoch: 4,
                instance_id: None,
            }),
        },
    ];
    let results = client.fetch_offsets_for_groups(&specs, false).await;
    let (version, request) = only::<OffsetFetchRequest>(&log, ApiKey::OffsetFetch);
    assert_eq!(version, 8);
    assert_eq!(
        request
            .groups
            .iter()
            .map(|g| g.group_id.as_str())
            .collect::<Vec<_>>(),
        vec!["a", "ghost", "b"]
    );
    assert_eq!(
        results
            .iter()
            .map(|r| r.group_id.as_str())
            .collect::<Vec<_>>(),
        vec!["a", "ghost", "b"]
    );
    assert_eq!(results[0].result.as_ref().unwrap().len(), 2);
    assert_eq!(
        results[1].result.as_ref().unwrap_err().error_name(),
        Some("GROUP_ID_NOT_FOUND")
    );
    assert!(results[2].result.is_ok());
}

#[tokio::test]
async fn fetch_offsets_below_v8_asks_group_by_group() {
    let (client, log) = Broker::new(every_api_but(ApiKey::OffsetFetch, Some((1, 7))))
        .serve(|request| {
            let fetch = request.decode::<OffsetFetchRequest>();
            let partition = |index: i32| OffsetFetchResponsePartition {
                partition_index: index,
                committed_offset: 5,
                committed_leader_epoch: -1,
                metadata: None,
                ..Default::default()
            };
            let answer = if fetch.group_id == "ghost" {
                OffsetFetchResponse {
                    error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
                    ..Default::default()
                }
            } else {
                OffsetFetchResponse {
                    topics: vec![OffsetFetchResponseTopic {
                        name: "orders".into(),
                        partitions: vec![partition(0)],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
            };
            response(request, &answer)
        })
        .await;
    let specs = vec![
        GroupOffsetsSpec {
            group_id: "a".into(),
            partitions: Some(vec![TopicPartition::new("orders", 0)]),
            member: None,
        },
        GroupOffsetsSpec {
            group_id: "ghost".into(),
            partitions: None,
            member: None,
        },
    ];
    let results = client.fetch_offsets_for_groups(&specs, true).await;
    let requests = log.of(ApiKey::OffsetFetch);
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.version() == 7));
    let first = requests[0].decode::<OffsetFetchRequest>();
    assert_eq!((first.group_id.as_str(), first.require_stable), ("a", true));
    assert_eq!(first.topics.unwrap()[0].partition_indexes, vec![0]);
    assert_eq!(requests[1].decode::<OffsetFetchRequest>().topics, None);
    assert_eq!(
        results[0].result.as_ref().unwrap()[&TopicPartition::new("orders", 0)]
            .as_ref()
            .unwrap()
            .as_ref()
            .map(|o| o.offset),
        Some(5)
    );
    assert_eq!(
        results[1].result.as_ref().unwrap_err().error_name(),
        Some("GROUP_AUTHORIZATION_FAILED")
    );

    let (client, _) = Broker::new(every_api_but(ApiKey::OffsetFetch, Some((1, 6))))
        .serve(|_| Reply::Close)
        .await;
    let err = client.fetch_offsets("a", None, true).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Unsupported { .. }),
        "RequireStable needs v7: {err}"
    );
}
