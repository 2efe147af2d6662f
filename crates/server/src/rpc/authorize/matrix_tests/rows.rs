//! The rows of the authorization matrix: one request per RPC, listener and way of being
//! allowed (Kafka's "on the cluster, else on each topic" is two rows), each with the ACLs that
//! allow it and what an allowed and a refused principal are answered (docs/operations.md,
//! "Authorization"; docs/kafka-security-facts.md §1).
//!
//! Every node the matrix starts holds the topic [`TOPIC`] (one partition), the group [`GROUP`]
//! with a committed offset of it, and the streams group [`STREAMS`] whose member [`MEMBER`]
//! reads it (topology epoch 1), all made by the super user; the rows act on those, or create
//! [`NEW_TOPIC`], [`AUTO_TOPIC`] and the streams group [`JOINING`].

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::*;
use kcoord_wire::Encodable;

use super::super::{AclOperation, ResourceType};
use super::requests::*;
use super::seen::*;
use crate::config::ListenerKind;

pub const TOPIC: &str = "t";
pub const GROUP: &str = "g";
pub const STREAMS: &str = "s";
pub const MEMBER: &str = "m";
/// A streams group the rows' heartbeats create.
pub const JOINING: &str = "h";
/// The changelog topic [`JOINING`]'s topology asks the coordinator to create.
pub const CHANGELOG: &str = "h-store-changelog";
pub const NEW_TOPIC: &str = "new";
/// A topic Metadata creates (`auto.create.topics.enable=true`).
pub const AUTO_TOPIC: &str = "auto";
pub const TRANSACTIONAL_ID: &str = "tx";
pub const CLUSTER: &str = "kafka-cluster";

/// One permission: an operation on a LITERAL resource.
pub type Grant = (AclOperation, ResourceType, &'static str);

/// One request of the matrix and what each principal gets.
pub struct Row {
    pub api: ApiKey,
    /// Which of the API's rows this is ("" when it has one).
    pub variant: &'static str,
    pub version: i16,
    pub kind: ListenerKind,
    pub body: Bytes,
    /// Granted to `User:*`: what every principal may do, so that the row decides on `needs`.
    pub also: Vec<Grant>,
    /// What the row asks, the first question first: granted to the allowed user; granted and
    /// denied to the denied user (DENY wins); not granted to anonymous.
    pub needs: Vec<Grant>,
    /// The part of the response body that shows the decision.
    pub seen: fn(Bytes, i16) -> String,
    /// What the super user and the allowed user see.
    pub allowed: &'static str,
    /// What the denied user and anonymous see.
    pub denied: &'static str,
}

impl Row {
    pub fn label(&self) -> String {
        let variant = if self.variant.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.variant)
        };
        format!(
            "{}{variant} v{} on {}",
            self.api.name(),
            self.version,
            self.kind
        )
    }
}

fn body<R: Encodable>(request: &R, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    request
        .encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("{e}"));
    buf.freeze()
}

pub fn decode<R: kcoord_wire::Decodable>(mut bytes: Bytes, version: i16) -> R {
    R::decode(&mut bytes, version).unwrap_or_else(|e| panic!("{e}"))
}

macro_rules! row {
    ($api:ident $(($variant:literal))? $v:literal on $kind:ident, $request:expr,
     $(also [$(($aop:ident, $ares:ident, $aname:expr)),*],)?
     needs [$(($op:ident, $res:ident, $name:expr)),*],
     $response:ty => |$r:ident| $seen:expr,
     allowed $allowed:literal, denied $denied:literal) => {
        Row {
            api: ApiKey::$api,
            variant: concat!("" $(, $variant)?),
            version: $v,
            kind: ListenerKind::$kind,
            body: body(&$request, $v),
            also: vec![$($((AclOperation::$aop, ResourceType::$ares, $aname)),*)?],
            needs: vec![$((AclOperation::$op, ResourceType::$res, $name)),*],
            seen: |bytes, version| {
                let $r: $response = decode(bytes, version);
                $seen
            },
            allowed: $allowed,
            denied: $denied,
        }
    };
}

pub fn rows() -> Vec<Row> {
    let mut rows = data_plane();
    rows.extend(groups());
    rows.extend(admin());
    rows.extend(security());
    rows.extend(streams());
    rows.extend(controller());
    rows
}

fn data_plane() -> Vec<Row> {
    vec![
        row!(Produce 12 on Broker, produce(),
            needs [(Write, Topic, TOPIC)],
            ProduceResponse => |r| code(r.responses[0].partition_responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        // Allowed, there are no transactions here (README).
        row!(Produce ("transactional") 12 on Broker, produce_transactional(TRANSACTIONAL_ID),
            needs [(Write, TransactionalId, TRANSACTIONAL_ID)],
            ProduceResponse => |r| {
                let p = &r.responses[0].partition_responses[0];
                refusal(p.error_code, p.error_message.as_deref())
            },
            allowed "INVALID_TXN_STATE", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        row!(Fetch ("consumer") 12 on Broker, fetch(-1),
            needs [(Read, Topic, TOPIC)],
            FetchResponse => |r| code(r.responses[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        // A follower: this node leads every partition alone.
        row!(Fetch ("follower") 12 on Broker, fetch(2),
            needs [(ClusterAction, Cluster, CLUSTER)],
            FetchResponse => |r| code(r.responses[0].partitions[0].error_code),
            allowed "NOT_LEADER_OR_FOLLOWER", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(ListOffsets 9 on Broker, ListOffsetsRequest {
                replica_id: -1,
                topics: vec![with(|t: &mut list_offsets_request::ListOffsetsTopic| {
                    t.name = TOPIC.into();
                    t.partitions = vec![list_offsets_request::ListOffsetsPartition {
                        current_leader_epoch: -1,
                        timestamp: -1,
                        ..Default::default()
                    }];
                })],
                ..Default::default()
            },
            needs [(Describe, Topic, TOPIC)],
            ListOffsetsResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(OffsetForLeaderEpoch ("topic") 4 on Broker, OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics: vec![with(|t: &mut offset_for_leader_epoch_request::OffsetForLeaderTopic| {
                    t.topic = TOPIC.into();
                    t.partitions = vec![offset_for_leader_epoch_request::OffsetForLeaderPartition {
                        current_leader_epoch: -1,
                        ..Default::default()
                    }];
                })],
                ..Default::default()
            },
            needs [(Describe, Topic, TOPIC)],
            OffsetForLeaderEpochResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(OffsetForLeaderEpoch ("cluster") 4 on Broker, OffsetForLeaderEpochRequest {
                replica_id: 2,
                topics: vec![with(|t: &mut offset_for_leader_epoch_request::OffsetForLeaderTopic| {
                    t.topic = TOPIC.into();
                    t.partitions = vec![offset_for_leader_epoch_request::OffsetForLeaderPartition {
                        current_leader_epoch: -1,
                        ..Default::default()
                    }];
                })],
                ..Default::default()
            },
            needs [(ClusterAction, Cluster, CLUSTER)],
            OffsetForLeaderEpochResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(Metadata ("by name") 12 on Broker, metadata(Some(&[TOPIC])),
            needs [(Describe, Topic, TOPIC)],
            MetadataResponse => |r| code(r.topics[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(Metadata ("all topics") 12 on Broker, metadata(None),
            needs [(Describe, Topic, TOPIC)],
            MetadataResponse => |r| listed(r.error_code, r.topics.iter().filter_map(|t| t.name.as_deref()), TOPIC),
            allowed "t listed", denied "t left out"),
        // Created in the background: the answer describes the catalog as it was.
        row!(Metadata ("auto-create, cluster") 12 on Broker, metadata(Some(&[AUTO_TOPIC])),
            also [(Describe, Topic, AUTO_TOPIC)],
            needs [(Create, Cluster, CLUSTER)],
            MetadataResponse => |r| code(r.topics[0].error_code),
            allowed "UNKNOWN_TOPIC_OR_PARTITION", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(Metadata ("auto-create, topic") 12 on Broker, metadata(Some(&[AUTO_TOPIC])),
            also [(Describe, Topic, AUTO_TOPIC)],
            needs [(Create, Topic, AUTO_TOPIC)],
            MetadataResponse => |r| code(r.topics[0].error_code),
            allowed "UNKNOWN_TOPIC_OR_PARTITION", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(DeleteRecords 2 on Broker, DeleteRecordsRequest {
                topics: vec![with(|t: &mut delete_records_request::DeleteRecordsTopic| {
                    t.name = TOPIC.into();
                    t.partitions = vec![delete_records_request::DeleteRecordsPartition {
                        partition_index: 0,
                        offset: 0,
                        ..Default::default()
                    }];
                })],
                timeout_ms: 1000,
                ..Default::default()
            },
            needs [(Delete, Topic, TOPIC)],
            DeleteRecordsResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(InitProducerId ("idempotent, cluster") 4 on Broker, init_producer_id(None),
            needs [(IdempotentWrite, Cluster, CLUSTER)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
        row!(InitProducerId ("idempotent, a topic") 4 on Broker, init_producer_id(None),
            needs [(Write, Topic, TOPIC)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
        // Allowed, a transactional id is refused: kcoord has no transactions (README).
        row!(InitProducerId ("transactional") 4 on Broker, init_producer_id(Some(TRANSACTIONAL_ID)),
            needs [(Write, TransactionalId, TRANSACTIONAL_ID)],
            InitProducerIdResponse => |r| code(r.error_code),
            allowed "UNSUPPORTED_VERSION", denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    ]
}

fn groups() -> Vec<Row> {
    vec![
        row!(OffsetCommit ("group") 9 on Broker, offset_commit(),
            needs [(Read, Group, GROUP), (Read, Topic, TOPIC)],
            OffsetCommitResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetCommit ("topic") 9 on Broker, offset_commit(),
            also [(Read, Group, GROUP)],
            needs [(Read, Topic, TOPIC)],
            OffsetCommitResponse => |r| code(r.topics[0].partitions[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(OffsetFetch ("group") 8 on Broker, offset_fetch(true),
            needs [(Describe, Group, GROUP), (Describe, Topic, TOPIC)],
            OffsetFetchResponse => |r| match r.groups[0].error_code {
                0 => code(r.groups[0].topics[0].partitions[0].error_code),
                c => code(c),
            },
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetFetch ("topic") 8 on Broker, offset_fetch(true),
            also [(Describe, Group, GROUP)],
            needs [(Describe, Topic, TOPIC)],
            OffsetFetchResponse => |r| match r.groups[0].error_code {
                0 => code(r.groups[0].topics[0].partitions[0].error_code),
                c => code(c),
            },
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(OffsetFetch ("all offsets") 8 on Broker, offset_fetch(false),
            also [(Describe, Group, GROUP)],
            needs [(Describe, Topic, TOPIC)],
            OffsetFetchResponse => |r| listed(r.groups[0].error_code, r.groups[0].topics.iter().map(|t| t.name.as_str()), TOPIC),
            allowed "t listed", denied "t left out"),
        row!(FindCoordinator ("group") 4 on Broker, find_coordinator(0, GROUP),
            needs [(Describe, Group, GROUP)],
            FindCoordinatorResponse => |r| format!("{} node {}", code(r.coordinators[0].error_code), r.coordinators[0].node_id),
            allowed "NONE node 7", denied "GROUP_AUTHORIZATION_FAILED node -1"),
        // Allowed, there is no transaction coordinator: CLUSTER_AUTHORIZATION_FAILED saying so
        // (README "Differences from Apache Kafka 4.4").
        row!(FindCoordinator ("transaction") 4 on Broker, find_coordinator(1, TRANSACTIONAL_ID),
            needs [(Describe, TransactionalId, TRANSACTIONAL_ID)],
            FindCoordinatorResponse => |r| {
                let c = &r.coordinators[0];
                let unsupported = c.error_message.as_deref().is_some_and(|m| m.contains("does not support transactions"));
                format!("{} node {}{}", code(c.error_code), c.node_id, if unsupported { ", no transactions" } else { "" })
            },
            allowed "CLUSTER_AUTHORIZATION_FAILED node -1, no transactions",
            denied "TRANSACTIONAL_ID_AUTHORIZATION_FAILED node -1"),
        row!(DescribeGroups 5 on Broker, DescribeGroupsRequest {
                groups: vec![GROUP.into()],
                ..Default::default()
            },
            needs [(Describe, Group, GROUP)],
            DescribeGroupsResponse => |r| code(r.groups[0].error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(ListGroups ("cluster") 5 on Broker, ListGroupsRequest::default(),
            needs [(Describe, Cluster, CLUSTER)],
            ListGroupsResponse => |r| listed(r.error_code, r.groups.iter().map(|g| g.group_id.as_str()), GROUP),
            allowed "g listed", denied "g left out"),
        row!(ListGroups ("group") 5 on Broker, ListGroupsRequest::default(),
            needs [(Describe, Group, GROUP)],
            ListGroupsResponse => |r| listed(r.error_code, r.groups.iter().map(|g| g.group_id.as_str()), GROUP),
            allowed "g listed", denied "g left out"),
        row!(DeleteGroups 2 on Broker, DeleteGroupsRequest {
                groups_names: vec![GROUP.into()],
                ..Default::default()
            },
            needs [(Delete, Group, GROUP)],
            DeleteGroupsResponse => |r| code(r.results[0].error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetDelete ("group") 0 on Broker, offset_delete(),
            needs [(Delete, Group, GROUP), (Read, Topic, TOPIC)],
            OffsetDeleteResponse => |r| offset_deleted(&r),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetDelete ("topic") 0 on Broker, offset_delete(),
            also [(Delete, Group, GROUP)],
            needs [(Read, Topic, TOPIC)],
            OffsetDeleteResponse => |r| offset_deleted(&r),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
    ]
}

fn admin() -> Vec<Row> {
    vec![
        row!(CreateTopics ("cluster") 7 on Broker, create_topics(),
            needs [(Create, Cluster, CLUSTER), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        row!(CreateTopics ("topic") 7 on Broker, create_topics(),
            needs [(Create, Topic, NEW_TOPIC), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        // Created all the same; its configs are withheld.
        row!(CreateTopics ("configs") 7 on Broker, create_topics(),
            also [(Create, Topic, NEW_TOPIC)],
            needs [(DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE", denied "NONE configs TOPIC_AUTHORIZATION_FAILED"),
        row!(DeleteTopics ("cluster") 5 on Broker, delete_topics(),
            needs [(Delete, Cluster, CLUSTER)],
            DeleteTopicsResponse => |r| code(r.responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(DeleteTopics ("topic") 5 on Broker, delete_topics(),
            needs [(Describe, Topic, TOPIC), (Delete, Topic, TOPIC)],
            DeleteTopicsResponse => |r| code(r.responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(DeleteTopics ("describable") 5 on Broker, delete_topics(),
            also [(Describe, Topic, TOPIC)],
            needs [(Delete, Topic, TOPIC)],
            DeleteTopicsResponse => |r| code(r.responses[0].error_code),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(DescribeConfigs ("topic") 4 on Broker, describe_configs(TOPIC_RESOURCE, TOPIC),
            needs [(DescribeConfigs, Topic, TOPIC)],
            DescribeConfigsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."),
        row!(DescribeConfigs ("group") 4 on Broker, describe_configs(GROUP_RESOURCE, GROUP),
            needs [(DescribeConfigs, Group, GROUP)],
            DescribeConfigsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED: Group authorization failed."),
        // The empty name: the cluster-wide defaults.
        row!(DescribeConfigs ("broker") 4 on Broker, describe_configs(BROKER_RESOURCE, ""),
            needs [(DescribeConfigs, Cluster, CLUSTER)],
            DescribeConfigsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."),
        row!(IncrementalAlterConfigs ("group") 1 on Broker,
            alter_configs(GROUP_RESOURCE, GROUP, "streams.session.timeout.ms", "50000"),
            needs [(AlterConfigs, Group, GROUP)],
            IncrementalAlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED: Group authorization failed."),
        // Allowed, kcoord alters only group configs (README).
        row!(IncrementalAlterConfigs ("topic") 1 on Broker,
            alter_configs(TOPIC_RESOURCE, TOPIC, "retention.ms", "1000"),
            needs [(AlterConfigs, Topic, TOPIC)],
            IncrementalAlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "INVALID_REQUEST", denied "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."),
        row!(IncrementalAlterConfigs ("broker") 1 on Broker,
            alter_configs(BROKER_RESOURCE, "7", "log.retention.ms", "1000"),
            needs [(AlterConfigs, Cluster, CLUSTER)],
            IncrementalAlterConfigsResponse => |r| refusal(r.responses[0].error_code, r.responses[0].error_message.as_deref()),
            allowed "INVALID_REQUEST", denied "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."),
        // No access check on a broker listener; the operations need DESCRIBE.
        row!(DescribeCluster 1 on Broker, DescribeClusterRequest {
                include_cluster_authorized_operations: true,
                endpoint_type: 1,
                ..Default::default()
            },
            needs [(Describe, Cluster, CLUSTER)],
            DescribeClusterResponse => |r| format!("{} {}", code(r.error_code), operations(r.cluster_authorized_operations)),
            allowed "NONE operations with DESCRIBE", denied "NONE operations 0"),
        row!(ListTopics 1 on Broker, ListTopicsRequest::default(),
            needs [(Describe, Topic, TOPIC)],
            ListTopicsResponse => |r| listed(r.error_code, r.topics.iter().map(|t| t.name.as_str()), TOPIC),
            allowed "t listed", denied "t left out"),
        row!(ApiVersions 3 on Broker, api_versions(),
            needs [],
            ApiVersionsResponse => |r| code(r.error_code),
            allowed "NONE", denied "NONE"),
    ]
}

/// The ACL and SCRAM APIs, on both listener kinds.
fn security() -> Vec<Row> {
    let mut rows = Vec::new();
    for kind in [ListenerKind::Broker, ListenerKind::Controller] {
        let on = |mut row: Row| {
            row.kind = kind;
            row
        };
        rows.extend([
            on(row!(DescribeAcls 3 on Broker, describe_acls(),
                needs [(Describe, Cluster, CLUSTER)],
                DescribeAclsResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request DescribeAcls needs DESCRIBE permission.")),
            on(row!(CreateAcls 3 on Broker, create_acls(),
                needs [(Alter, Cluster, CLUSTER)],
                CreateAclsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request CreateAcls needs ALTER permission.")),
            on(row!(DeleteAcls 3 on Broker, delete_acls(),
                needs [(Alter, Cluster, CLUSTER)],
                DeleteAclsResponse => |r| refusal(r.filter_results[0].error_code, r.filter_results[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request DeleteAcls needs ALTER permission.")),
            on(row!(AlterUserScramCredentials 0 on Broker, alter_scram(),
                needs [(Alter, Cluster, CLUSTER)],
                AlterUserScramCredentialsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request AlterUserScramCredentials needs ALTER permission.")),
            // Asks nothing: once authenticated (or on a listener without SASL) both are
            // ILLEGAL_SASL_STATE.
            on(row!(SaslHandshake 1 on Broker, SaslHandshakeRequest {
                    mechanism: "PLAIN".into(),
                    ..Default::default()
                },
                needs [],
                SaslHandshakeResponse => |r| code(r.error_code),
                allowed "ILLEGAL_SASL_STATE", denied "ILLEGAL_SASL_STATE")),
            on(row!(SaslAuthenticate 2 on Broker, SaslAuthenticateRequest::default(),
                needs [],
                SaslAuthenticateResponse => |r| code(r.error_code),
                allowed "ILLEGAL_SASL_STATE", denied "ILLEGAL_SASL_STATE")),
        ]);
    }
    rows.push(row!(DescribeUserScramCredentials 0 on Broker, DescribeUserScramCredentialsRequest {
            users: None,
            ..Default::default()
        },
        needs [(Describe, Cluster, CLUSTER)],
        DescribeUserScramCredentialsResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
        allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"));
    rows
}

fn streams() -> Vec<Row> {
    vec![
        row!(StreamsGroupHeartbeat ("group") 1 on Broker, streams_join(JOINING, false),
            needs [(Read, Group, JOINING), (Describe, Topic, TOPIC)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(StreamsGroupHeartbeat ("topics") 1 on Broker, streams_join(JOINING, false),
            also [(Read, Group, JOINING)],
            needs [(Describe, Topic, TOPIC)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        // Not created, and the status says why; the heartbeat itself succeeds.
        row!(StreamsGroupHeartbeat ("internal topics, cluster") 1 on Broker, streams_join(JOINING, true),
            also [(Read, Group, JOINING), (Describe, Topic, TOPIC), (Describe, Topic, CHANGELOG)],
            needs [(Create, Cluster, CLUSTER)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "NONE, Unauthorized to CREATE on topics h-store-changelog."),
        row!(StreamsGroupHeartbeat ("internal topics, topic") 1 on Broker, streams_join(JOINING, true),
            also [(Read, Group, JOINING), (Describe, Topic, TOPIC), (Describe, Topic, CHANGELOG)],
            needs [(Create, Topic, CHANGELOG)],
            StreamsGroupHeartbeatResponse => |r| joined(&r),
            allowed "NONE", denied "NONE, Unauthorized to CREATE on topics h-store-changelog."),
        row!(StreamsGroupDescribe ("group") 0 on Broker, streams_describe(),
            needs [(Describe, Group, STREAMS), (Describe, Topic, TOPIC)],
            StreamsGroupDescribeResponse => |r| refusal(r.groups[0].error_code, r.groups[0].error_message.as_deref()),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(StreamsGroupDescribe ("topics") 0 on Broker, streams_describe(),
            also [(Describe, Group, STREAMS)],
            needs [(Describe, Topic, TOPIC)],
            StreamsGroupDescribeResponse => |r| refusal(r.groups[0].error_code, r.groups[0].error_message.as_deref()),
            allowed "NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: The described group uses topics that the client is not authorized to describe."),
        // KIP-1331's pushes, READ (not ALTER) on the group; the node has the `memory` plugin.
        row!(StreamsGroupTopologyDescriptionUpdate 0 on Broker, StreamsGroupTopologyDescriptionUpdateRequest {
                group_id: STREAMS.into(),
                member_id: MEMBER.into(),
                topology_epoch: 1,
                ..Default::default()
            },
            needs [(Read, Group, STREAMS)],
            StreamsGroupTopologyDescriptionUpdateResponse => |r| code(r.error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(UpdateStreamsGroupTopologyDescription 0 on Broker, UpdateStreamsGroupTopologyDescriptionRequest {
                group_id: STREAMS.into(),
                topology_description_id: uuid::Uuid::from_u128(1),
                ..Default::default()
            },
            needs [(Read, Group, STREAMS)],
            UpdateStreamsGroupTopologyDescriptionResponse => |r| code(r.error_code),
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
    ]
}

/// What only controller listeners serve, and the controller's side of shared APIs.
fn controller() -> Vec<Row> {
    vec![
        row!(CreateTopics ("cluster") 7 on Controller, create_topics(),
            needs [(Create, Cluster, CLUSTER), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        row!(CreateTopics ("topic") 7 on Controller, create_topics(),
            needs [(Create, Topic, NEW_TOPIC), (DescribeConfigs, Topic, NEW_TOPIC)],
            CreateTopicsResponse => |r| created(&r),
            allowed "NONE configs NONE",
            denied "TOPIC_AUTHORIZATION_FAILED: Authorization failed. configs NONE"),
        row!(DescribeCluster 1 on Controller, DescribeClusterRequest {
                endpoint_type: 2,
                ..Default::default()
            },
            needs [(Alter, Cluster, CLUSTER)],
            DescribeClusterResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
            allowed "NONE",
            denied "CLUSTER_AUTHORIZATION_FAILED: Request DescribeCluster needs ALTER permission."),
        row!(BrokerRegistration 6 on Controller,
            crate::rpc::apis::broker_registration::tests_support::request(2, 1),
            needs [(ClusterAction, Cluster, CLUSTER)],
            BrokerRegistrationResponse => |r| code(r.error_code),
            allowed "NONE", denied "CLUSTER_AUTHORIZATION_FAILED"),
        // Allowed, a broker that never registered has a stale epoch, as Kafka's
        // `ClusterControlManager.checkBrokerEpoch` says ("No broker registration found").
        row!(BrokerHeartbeat 1 on Controller, BrokerHeartbeatRequest {
                broker_id: 2,
                broker_epoch: -1,
                ..Default::default()
            },
            needs [(ClusterAction, Cluster, CLUSTER)],
            BrokerHeartbeatResponse => |r| code(r.error_code),
            allowed "STALE_BROKER_EPOCH", denied "CLUSTER_AUTHORIZATION_FAILED"),
        row!(ApiVersions 3 on Controller, api_versions(),
            needs [],
            ApiVersionsResponse => |r| code(r.error_code),
            allowed "NONE", denied "NONE"),
    ]
}
