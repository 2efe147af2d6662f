//! The authorization matrix (docs/kafka-security-facts.md §1.2; README "Authorization"), one
//! row per RPC: the request goes through dispatch to a running node whose authorizer records
//! every question and denies everything. Each row names a question the handler must ask and
//! the code a denied principal gets. Removing a check fails its row twice: the question is not
//! asked, and the answer is not the denial.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Buf, Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::*;
use kcoord_wire::{Decodable, Encodable, ErrorCode};

use super::{AclOperation, Authorizer, ResourceType};
use crate::config::ListenerKind;
use crate::dispatch::{dispatch, Connection, Outcome};
use crate::handlers::testing::{listener, running_with_authorizer};
use crate::state::RequestContext;

/// Denies everything and remembers what it was asked.
#[derive(Debug, Default)]
struct Recording {
    asked: Mutex<Vec<(AclOperation, ResourceType, String)>>,
}

impl Authorizer for Recording {
    fn authorize(
        &self,
        _: &RequestContext<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((operation, resource, name.to_owned()));
        false
    }
}

/// One RPC of the matrix.
struct Row {
    api: ApiKey,
    version: i16,
    kind: ListenerKind,
    body: Bytes,
    /// A question the handler must ask.
    asks: (AclOperation, ResourceType, &'static str),
    /// The response body to the code that shows the denial.
    denial: fn(Bytes, i16) -> i16,
    expected: ErrorCode,
}

fn body<R: Encodable>(request: &R, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    request.encode(&mut buf, version).unwrap();
    buf.freeze()
}

fn decode<R: Decodable>(mut bytes: Bytes, version: i16) -> R {
    R::decode(&mut bytes, version).unwrap()
}

macro_rules! row {
    ($api:ident $v:literal on $kind:ident, $request:expr, asks ($op:ident, $res:ident, $name:literal),
     $response:ty => |$r:ident| $code:expr, $expected:ident) => {
        Row {
            api: ApiKey::$api,
            version: $v,
            kind: ListenerKind::$kind,
            body: body(&$request, $v),
            asks: (AclOperation::$op, ResourceType::$res, $name),
            denial: |bytes, version| {
                let $r: $response = decode(bytes, version);
                $code
            },
            expected: ErrorCode::$expected,
        }
    };
}

fn topic_t<T: Default>(f: impl FnOnce(&mut T)) -> T {
    let mut t = T::default();
    f(&mut t);
    t
}

fn rows() -> Vec<Row> {
    use kcoord_wire::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kcoord_wire::messages::offset_fetch_request::OffsetFetchRequestGroup;
    vec![
        row!(Produce 12 on Broker, ProduceRequest {
                acks: 1,
                topic_data: vec![topic_t(|t: &mut produce_request::TopicProduceData| {
                    t.name = "t".into();
                    t.partition_data = vec![produce_request::PartitionProduceData::default()];
                })],
                transactional_id: None,
                ..Default::default()
            }, asks (Write, Topic, "t"),
            ProduceResponse => |r| r.responses[0].partition_responses[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(Fetch 12 on Broker, FetchRequest {
                max_wait_ms: 0,
                topics: vec![topic_t(|t: &mut fetch_request::FetchTopic| {
                    t.topic = "t".into();
                    t.partitions = vec![fetch_request::FetchPartition::default()];
                })],
                ..Default::default()
            }, asks (Read, Topic, "t"),
            FetchResponse => |r| r.responses[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(ListOffsets 9 on Broker, ListOffsetsRequest {
                topics: vec![topic_t(|t: &mut list_offsets_request::ListOffsetsTopic| {
                    t.name = "t".into();
                    t.partitions = vec![list_offsets_request::ListOffsetsPartition::default()];
                })],
                ..Default::default()
            }, asks (Describe, Topic, "t"),
            ListOffsetsResponse => |r| r.topics[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(Metadata 12 on Broker, MetadataRequest {
                topics: Some(vec![metadata_request::MetadataRequestTopic {
                    name: Some("t".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }, asks (Describe, Topic, "t"),
            MetadataResponse => |r| r.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(OffsetCommit 9 on Broker, OffsetCommitRequest {
                group_id: "g".into(),
                topics: vec![OffsetCommitRequestTopic {
                    name: "t".into(),
                    partitions: vec![OffsetCommitRequestPartition::default()],
                    ..Default::default()
                }],
                ..Default::default()
            }, asks (Read, Group, "g"),
            OffsetCommitResponse => |r| r.topics[0].partitions[0].error_code, GROUP_AUTHORIZATION_FAILED),
        row!(OffsetFetch 8 on Broker, OffsetFetchRequest {
                groups: vec![OffsetFetchRequestGroup {
                    group_id: "g".into(),
                    topics: None,
                    ..Default::default()
                }],
                ..Default::default()
            }, asks (Describe, Group, "g"),
            OffsetFetchResponse => |r| r.groups[0].error_code, GROUP_AUTHORIZATION_FAILED),
        row!(FindCoordinator 4 on Broker, FindCoordinatorRequest {
                key_type: 0,
                coordinator_keys: vec!["g".into()],
                ..Default::default()
            }, asks (Describe, Group, "g"),
            FindCoordinatorResponse => |r| r.coordinators[0].error_code, GROUP_AUTHORIZATION_FAILED),
        row!(DescribeGroups 5 on Broker, DescribeGroupsRequest {
                groups: vec!["g".into()],
                ..Default::default()
            }, asks (Describe, Group, "g"),
            DescribeGroupsResponse => |r| r.groups[0].error_code, GROUP_AUTHORIZATION_FAILED),
        row!(CreateTopics 7 on Broker, CreateTopicsRequest {
                topics: vec![topic_t(|t: &mut create_topics_request::CreatableTopic| {
                    t.name = "t".into();
                    t.num_partitions = 1;
                    t.replication_factor = 1;
                })],
                timeout_ms: 1000,
                ..Default::default()
            }, asks (Create, Topic, "t"),
            CreateTopicsResponse => |r| r.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(CreateTopics 7 on Controller, CreateTopicsRequest {
                topics: vec![topic_t(|t: &mut create_topics_request::CreatableTopic| {
                    t.name = "t".into();
                    t.num_partitions = 1;
                    t.replication_factor = 1;
                })],
                timeout_ms: 1000,
                ..Default::default()
            }, asks (Create, Cluster, "kafka-cluster"),
            CreateTopicsResponse => |r| r.topics[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(DeleteTopics 5 on Broker, DeleteTopicsRequest {
                topic_names: vec!["t".into()],
                timeout_ms: 1000,
                ..Default::default()
            }, asks (Describe, Topic, "t"),
            DeleteTopicsResponse => |r| r.responses[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(DeleteRecords 2 on Broker, DeleteRecordsRequest {
                topics: vec![topic_t(|t: &mut delete_records_request::DeleteRecordsTopic| {
                    t.name = "t".into();
                    t.partitions = vec![delete_records_request::DeleteRecordsPartition::default()];
                })],
                ..Default::default()
            }, asks (Delete, Topic, "t"),
            DeleteRecordsResponse => |r| r.topics[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(InitProducerId 4 on Broker, InitProducerIdRequest {
                transactional_id: None,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            }, asks (IdempotentWrite, Cluster, "kafka-cluster"),
            InitProducerIdResponse => |r| r.error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(DescribeConfigs 4 on Broker, DescribeConfigsRequest {
                resources: vec![topic_t(|t: &mut describe_configs_request::DescribeConfigsResource| {
                    t.resource_type = 2;
                    t.resource_name = "t".into();
                    t.configuration_keys = None;
                })],
                ..Default::default()
            }, asks (DescribeConfigs, Topic, "t"),
            DescribeConfigsResponse => |r| r.results[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(DeleteGroups 2 on Broker, DeleteGroupsRequest {
                groups_names: vec!["g".into()],
                ..Default::default()
            }, asks (Delete, Group, "g"),
            DeleteGroupsResponse => |r| r.results[0].error_code, GROUP_AUTHORIZATION_FAILED),
        row!(OffsetDelete 0 on Broker, OffsetDeleteRequest {
                group_id: "g".into(),
                ..Default::default()
            }, asks (Delete, Group, "g"),
            OffsetDeleteResponse => |r| r.error_code, GROUP_AUTHORIZATION_FAILED),
        row!(DescribeCluster 1 on Controller, DescribeClusterRequest {
                endpoint_type: 2,
                ..Default::default()
            }, asks (Alter, Cluster, "kafka-cluster"),
            DescribeClusterResponse => |r| r.error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(DescribeAcls 3 on Broker, DescribeAclsRequest {
                resource_type_filter: 1,
                resource_name_filter: None,
                pattern_type_filter: 1,
                principal_filter: None,
                host_filter: None,
                operation: 1,
                permission_type: 1,
                ..Default::default()
            }, asks (Describe, Cluster, "kafka-cluster"),
            DescribeAclsResponse => |r| r.error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(CreateAcls 3 on Controller, CreateAclsRequest {
                creations: vec![create_acls_request::AclCreation {
                    resource_type: 2,
                    resource_name: "t".into(),
                    resource_pattern_type: 3,
                    principal: "User:a".into(),
                    host: "*".into(),
                    operation: 3,
                    permission_type: 3,
                    ..Default::default()
                }],
                ..Default::default()
            }, asks (Alter, Cluster, "kafka-cluster"),
            CreateAclsResponse => |r| r.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(DeleteAcls 3 on Broker, DeleteAclsRequest {
                filters: vec![delete_acls_request::DeleteAclsFilter {
                    resource_type_filter: 1,
                    pattern_type_filter: 1,
                    operation: 1,
                    permission_type: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }, asks (Alter, Cluster, "kafka-cluster"),
            DeleteAclsResponse => |r| r.filter_results[0].error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(DescribeUserScramCredentials 0 on Broker, DescribeUserScramCredentialsRequest {
                users: None,
                ..Default::default()
            }, asks (Describe, Cluster, "kafka-cluster"),
            DescribeUserScramCredentialsResponse => |r| r.error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(AlterUserScramCredentials 0 on Broker, AlterUserScramCredentialsRequest {
                deletions: vec![alter_user_scram_credentials_request::ScramCredentialDeletion {
                    name: "a".into(),
                    mechanism: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }, asks (Alter, Cluster, "kafka-cluster"),
            AlterUserScramCredentialsResponse => |r| r.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED),
        row!(StreamsGroupDescribe 0 on Broker, StreamsGroupDescribeRequest {
                group_ids: vec!["g".into()],
                ..Default::default()
            }, asks (Describe, Group, "g"),
            StreamsGroupDescribeResponse => |r| r.groups[0].error_code, GROUP_AUTHORIZATION_FAILED),
        // Groups a principal may not DESCRIBE are left out silently: no error, the question asked.
        row!(ListGroups 5 on Broker, ListGroupsRequest::default(), asks (Describe, Cluster, "kafka-cluster"),
            ListGroupsResponse => |r| r.error_code, NONE),
        row!(OffsetForLeaderEpoch 4 on Broker, OffsetForLeaderEpochRequest {
                topics: vec![topic_t(|t: &mut offset_for_leader_epoch_request::OffsetForLeaderTopic| {
                    t.topic = "t".into();
                    t.partitions = vec![offset_for_leader_epoch_request::OffsetForLeaderPartition::default()];
                })],
                ..Default::default()
            }, asks (Describe, Topic, "t"),
            OffsetForLeaderEpochResponse => |r| r.topics[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED),
        row!(BrokerHeartbeat 1 on Controller, BrokerHeartbeatRequest {
                broker_id: 2,
                ..Default::default()
            }, asks (ClusterAction, Cluster, "kafka-cluster"),
            BrokerHeartbeatResponse => |r| r.error_code, CLUSTER_AUTHORIZATION_FAILED),
    ]
}

#[tokio::test]
async fn every_rpc_asks_kafkas_question_and_a_denied_principal_gets_kafkas_code() {
    for row in rows() {
        let recording = Arc::new(Recording::default());
        let node = running_with_authorizer("", Arc::clone(&recording) as Arc<dyn Authorizer>);
        let conn = Connection::new(
            Arc::clone(&node.state),
            listener(&node.state, row.kind),
            std::net::SocketAddr::from(([127, 0, 0, 1], 50000)),
        );
        let name = row.api.name();
        let mut frame = BytesMut::new();
        RequestHeader {
            request_api_key: row.api.key(),
            request_api_version: row.version,
            correlation_id: 7,
            client_id: Some("matrix".into()),
            ..Default::default()
        }
        .encode(&mut frame, row.api.request_header_version(row.version))
        .unwrap();
        frame.extend_from_slice(&row.body);
        let Outcome::Respond(response) = dispatch(&conn, frame.freeze()).await else {
            panic!("{name} v{}: no response", row.version);
        };
        let mut response = response.to_bytes();
        response.advance(4);
        ResponseHeader::decode(&mut response, row.api.response_header_version(row.version))
            .unwrap();
        let code = (row.denial)(response, row.version);
        assert_eq!(
            code,
            row.expected.code(),
            "{name} v{} on {}: answered {:?}",
            row.version,
            row.kind,
            ErrorCode::from_code(code)
        );
        let (op, resource, resource_name) = row.asks;
        let asked = recording
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert!(
            asked
                .iter()
                .any(|(o, r, n)| *o == op && *r == resource && n == resource_name),
            "{name} v{} on {}: {op:?} on {resource:?} {resource_name} not asked; asked {asked:?}",
            row.version,
            row.kind
        );
    }
}
