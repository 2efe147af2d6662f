//! The Kafka requests behind the JSON API, answered by the same handlers as on a Kafka
//! listener (ListGroups, StreamsGroupDescribe, DescribeGroups, ConsumerGroupDescribe,
//! OffsetFetch, ListOffsets), so that authorization and the topology description plugin are
//! exactly those of the Kafka requests.
//!
//! The HTTP API does not authenticate: its requests carry the principal an unauthenticated
//! Kafka client has, `User:ANONYMOUS`, from the HTTP client's address, on a listener named
//! [`LISTENER_NAME`] (which is what the authorizer and the plugin's `RequestContext` see).

use std::net::{Ipv4Addr, SocketAddr};

use kcoord_acl::KafkaPrincipal;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::messages::{
    ListGroupsRequest, ListGroupsResponse, RequestHeader, StreamsGroupDescribeRequest,
};

use crate::config::{ListenerKind, SecurityProtocol};
use crate::rpc::apis::{
    consumer_group_describe, describe_groups, list_groups, list_offsets, offset_fetch,
    streams_group_describe,
};
use crate::runtime::cluster::ListenerInfo;
use crate::state::{client_host, RequestContext, ServerState};

/// The listener name the HTTP API's requests arrive on, for ACLs and plugins.
pub const LISTENER_NAME: &str = "HTTP";
/// The client id of the HTTP API's requests.
pub const CLIENT_ID: &str = "kcoord-http-api";

/// ListGroups v5 (TypesFilter) and StreamsGroupDescribe v1 (topology descriptions).
const LIST_GROUPS_VERSION: i16 = 5;
const DESCRIBE_VERSION: i16 = 1;

/// Everything a [`RequestContext`] borrows, for one request of the HTTP API.
struct Synthetic {
    listener: ListenerInfo,
    principal: KafkaPrincipal,
    header: RequestHeader,
    peer: SocketAddr,
    client_host: String,
}

impl Synthetic {
    fn new(peer: Option<SocketAddr>, api: ApiKey, version: i16) -> Synthetic {
        // Without a known peer (an in-process call) the request comes from nowhere in
        // particular: 0.0.0.0 matches only ACLs for every host.
        let peer = peer.unwrap_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
        Synthetic {
            listener: ListenerInfo {
                name: LISTENER_NAME.to_owned(),
                kind: ListenerKind::Broker,
                security_protocol: SecurityProtocol::Plaintext,
                local_addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
                advertised_host: String::new(),
                advertised_port: 0,
                upstream_broker: None,
            },
            principal: KafkaPrincipal::anonymous(),
            header: RequestHeader {
                request_api_key: api.key(),
                request_api_version: version,
                correlation_id: 0,
                client_id: Some(CLIENT_ID.to_owned()),
                ..Default::default()
            },
            peer,
            client_host: client_host(peer),
        }
    }

    fn ctx<'a>(&'a self, server: &'a ServerState) -> RequestContext<'a> {
        RequestContext {
            server,
            listener: &self.listener,
            principal: &self.principal,
            peer: self.peer,
            client_host: &self.client_host,
            header: &self.header,
            mute: None,
        }
    }
}

/// ListGroups of the streams groups (TypesFilter `streams`).
pub async fn list_streams_groups(
    server: &ServerState,
    peer: Option<SocketAddr>,
) -> ListGroupsResponse {
    let synthetic = Synthetic::new(peer, ApiKey::ListGroups, LIST_GROUPS_VERSION);
    let request = ListGroupsRequest {
        types_filter: vec!["streams".to_owned()],
        ..Default::default()
    };
    list_groups::handle(&synthetic.ctx(server), request, LIST_GROUPS_VERSION).await
}

/// StreamsGroupDescribe v1 of `group_ids`, in their order, with the topology descriptions
/// when `include_topology_description`.
pub async fn describe_streams_groups(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_ids: Vec<String>,
    include_topology_description: bool,
) -> Vec<DescribedGroup> {
    let synthetic = Synthetic::new(peer, ApiKey::StreamsGroupDescribe, DESCRIBE_VERSION);
    let request = StreamsGroupDescribeRequest {
        group_ids,
        include_authorized_operations: false,
        include_topology_description,
        ..Default::default()
    };
    streams_group_describe::handle(&synthetic.ctx(server), request, DESCRIBE_VERSION)
        .await
        .groups
}

/// ListGroups of the groups consumers join (TypesFilter `classic` and `consumer`).
pub async fn list_consumer_groups(
    server: &ServerState,
    peer: Option<SocketAddr>,
) -> ListGroupsResponse {
    let synthetic = Synthetic::new(peer, ApiKey::ListGroups, LIST_GROUPS_VERSION);
    let request = ListGroupsRequest {
        types_filter: vec!["classic".to_owned(), "consumer".to_owned()],
        ..Default::default()
    };
    list_groups::handle(&synthetic.ctx(server), request, LIST_GROUPS_VERSION).await
}

/// DescribeGroups v5 (the classic groups' describe) of `group_ids`, in their order.
pub async fn describe_classic_groups(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_ids: Vec<String>,
) -> Vec<kcoord_wire::messages::describe_groups_response::DescribedGroup> {
    const VERSION: i16 = 5;
    let synthetic = Synthetic::new(peer, ApiKey::DescribeGroups, VERSION);
    let request = kcoord_wire::messages::DescribeGroupsRequest {
        groups: group_ids,
        ..Default::default()
    };
    describe_groups::handle(&synthetic.ctx(server), request, VERSION)
        .await
        .groups
}

/// ConsumerGroupDescribe v1 of `group_ids`, in their order.
pub async fn describe_kip848_groups(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_ids: Vec<String>,
) -> Vec<kcoord_wire::messages::consumer_group_describe_response::DescribedGroup> {
    const VERSION: i16 = 1;
    let synthetic = Synthetic::new(peer, ApiKey::ConsumerGroupDescribe, VERSION);
    let request = kcoord_wire::messages::ConsumerGroupDescribeRequest {
        group_ids,
        ..Default::default()
    };
    consumer_group_describe::handle(&synthetic.ctx(server), request, VERSION)
        .await
        .groups
}

/// OffsetFetch v7 of every offset `group_id` committed.
pub async fn committed_offsets(
    server: &ServerState,
    peer: Option<SocketAddr>,
    group_id: &str,
) -> kcoord_wire::messages::OffsetFetchResponse {
    const VERSION: i16 = 7;
    let synthetic = Synthetic::new(peer, ApiKey::OffsetFetch, VERSION);
    let request = kcoord_wire::messages::OffsetFetchRequest {
        group_id: group_id.to_owned(),
        topics: None,
        ..Default::default()
    };
    offset_fetch::handle(&synthetic.ctx(server), request, VERSION).await
}

/// ListOffsets v7 (latest, read uncommitted) of `partitions` (topic, partitions).
pub fn log_end_offsets(
    server: &ServerState,
    peer: Option<SocketAddr>,
    partitions: Vec<(String, Vec<i32>)>,
) -> kcoord_wire::messages::ListOffsetsResponse {
    use kcoord_wire::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    const VERSION: i16 = 7;
    const LATEST: i64 = -1;
    let synthetic = Synthetic::new(peer, ApiKey::ListOffsets, VERSION);
    let request = kcoord_wire::messages::ListOffsetsRequest {
        replica_id: -1,
        topics: partitions
            .into_iter()
            .map(|(name, partitions)| ListOffsetsTopic {
                name,
                partitions: partitions
                    .into_iter()
                    .map(|p| ListOffsetsPartition {
                        partition_index: p,
                        current_leader_epoch: -1,
                        timestamp: LATEST,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    list_offsets::handle(&synthetic.ctx(server), request, VERSION)
}

/// The plugin's request context for the API's reads of versions' descriptions: that of the
/// StreamsGroupDescribe v1 the API sends, so a plugin sees every read from the API alike.
pub fn plugin_context(
    server: &ServerState,
    peer: Option<SocketAddr>,
) -> kcoord_plugin_api::RequestContext {
    let synthetic = Synthetic::new(peer, ApiKey::StreamsGroupDescribe, DESCRIBE_VERSION);
    crate::rpc::plugin_context::plugin_context(&synthetic.ctx(server))
}
