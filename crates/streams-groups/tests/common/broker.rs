//! A tiny fake Kafka broker for driving the real admin client: it answers ApiVersions,
//! Metadata, FindCoordinator, StreamsGroupDescribe, ListGroups, OffsetFetch and DeleteGroups
//! from canned data, and records what it was asked.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::api_versions_response::ApiVersion;
use kcoord_wire::messages::delete_groups_response::DeletableGroupResult;
use kcoord_wire::messages::find_coordinator_response::Coordinator;
use kcoord_wire::messages::list_groups_response::ListedGroup;
use kcoord_wire::messages::metadata_response::MetadataResponseBroker;
use kcoord_wire::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kcoord_wire::messages::streams_group_describe_response::{
    DescribedGroup, Topology, TopologyDescription,
};
use kcoord_wire::messages::*;
use kcoord_wire::{Decodable, Encodable};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the broker knows and how it behaves.
pub struct BrokerSpec {
    /// The StreamsGroupDescribe versions advertised (`None`: not advertised at all).
    pub describe_versions: Option<(i16, i16)>,
    pub groups: HashMap<String, DescribedGroup>,
    pub listed: Vec<ListedGroup>,
    /// How many describes answer NOT_COORDINATOR before the real answer.
    pub not_coordinator_first: AtomicUsize,
    /// (version, IncludeTopologyDescription) of every StreamsGroupDescribe received.
    pub describes: Mutex<Vec<(i16, bool)>>,
}

impl Default for BrokerSpec {
    fn default() -> Self {
        BrokerSpec {
            describe_versions: Some((0, 1)),
            groups: HashMap::new(),
            listed: Vec::new(),
            not_coordinator_first: AtomicUsize::new(0),
            describes: Mutex::new(Vec::new()),
        }
    }
}

/// A described group with a topology (epoch 0) and the given description status.
pub fn described(
    group_id: &str,
    status: i8,
    description: Option<TopologyDescription>,
) -> DescribedGroup {
    DescribedGroup {
        group_id: group_id.into(),
        group_state: "Stable".into(),
        group_epoch: 3,
        assignment_epoch: 3,
        topology: Some(Topology {
            epoch: 0,
            subtopologies: Some(Vec::new()),
            ..Default::default()
        }),
        topology_description_status: status,
        topology_description: description,
        assignor_name: Some("sticky".into()),
        ..Default::default()
    }
}

pub struct FakeBroker {
    pub addr: SocketAddr,
    pub spec: Arc<BrokerSpec>,
}

impl FakeBroker {
    pub async fn start(spec: BrokerSpec) -> FakeBroker {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let spec = Arc::new(spec);
        let shared = spec.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, addr, shared.clone()));
            }
        });
        FakeBroker { addr, spec }
    }

    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }
}

async fn serve(mut stream: TcpStream, addr: SocketAddr, spec: Arc<BrokerSpec>) {
    loop {
        let Ok(size) = stream.read_i32().await else {
            return;
        };
        let mut frame = vec![0u8; size as usize];
        if stream.read_exact(&mut frame).await.is_err() {
            return;
        }
        let mut body = Bytes::from(frame);
        let (key, version) = (
            i16::from_be_bytes([body[0], body[1]]),
            i16::from_be_bytes([body[2], body[3]]),
        );
        let api = ApiKey::from_i16(key).expect("known api key");
        let header = RequestHeader::decode(&mut body, api.request_header_version(version))
            .expect("request header");
        let mut out = BytesMut::new();
        ResponseHeader {
            correlation_id: header.correlation_id,
            ..Default::default()
        }
        .encode(&mut out, api.response_header_version(version))
        .expect("response header");
        respond(api, version, &mut body, addr, &spec, &mut out);
        let mut framed = BytesMut::new();
        framed.extend_from_slice(&(out.len() as i32).to_be_bytes());
        framed.extend_from_slice(&out);
        if stream.write_all(&framed).await.is_err() {
            return;
        }
    }
}

fn respond(
    api: ApiKey,
    version: i16,
    body: &mut Bytes,
    addr: SocketAddr,
    spec: &BrokerSpec,
    out: &mut BytesMut,
) {
    let host = addr.ip().to_string();
    let port = i32::from(addr.port());
    match api {
        ApiKey::ApiVersions => {
            let entry = |api: ApiKey, (min, max): (i16, i16)| ApiVersion {
                api_key: api.key(),
                min_version: min,
                max_version: max,
                ..Default::default()
            };
            let full =
                |api: ApiKey| entry(api, (api.valid_versions().min, api.valid_versions().max));
            let mut api_keys = vec![
                full(ApiKey::ApiVersions),
                full(ApiKey::Metadata),
                full(ApiKey::FindCoordinator),
                full(ApiKey::ListGroups),
                full(ApiKey::OffsetFetch),
                full(ApiKey::DeleteGroups),
            ];
            api_keys.extend(
                spec.describe_versions
                    .map(|range| entry(ApiKey::StreamsGroupDescribe, range)),
            );
            ApiVersionsResponse {
                api_keys,
                ..Default::default()
            }
            .encode(out, version)
            .expect("encode")
        }
        ApiKey::Metadata => MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host,
                port,
                ..Default::default()
            }],
            cluster_id: Some("fake".into()),
            controller_id: 1,
            ..Default::default()
        }
        .encode(out, version)
        .expect("encode"),
        ApiKey::FindCoordinator => {
            let request = FindCoordinatorRequest::decode(body, version).expect("decode");
            let response = if version >= 4 {
                FindCoordinatorResponse {
                    coordinators: request
                        .coordinator_keys
                        .into_iter()
                        .map(|key| Coordinator {
                            key,
                            node_id: 1,
                            host: host.clone(),
                            port,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            } else {
                FindCoordinatorResponse {
                    node_id: 1,
                    host,
                    port,
                    ..Default::default()
                }
            };
            response.encode(out, version).expect("encode")
        }
        ApiKey::StreamsGroupDescribe => {
            let request = StreamsGroupDescribeRequest::decode(body, version).expect("decode");
            spec.describes
                .lock()
                .expect("lock")
                .push((version, request.include_topology_description));
            let moved = spec
                .not_coordinator_first
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            let groups = request
                .group_ids
                .iter()
                .map(|id| match spec.groups.get(id) {
                    _ if moved => DescribedGroup {
                        group_id: id.clone(),
                        error_code: 16,
                        ..Default::default()
                    },
                    Some(group) => group.clone(),
                    None => DescribedGroup {
                        group_id: id.clone(),
                        error_code: 69,
                        error_message: Some(format!("Group {id} not found.")),
                        ..Default::default()
                    },
                })
                .collect();
            StreamsGroupDescribeResponse {
                groups,
                ..Default::default()
            }
            .encode(out, version)
            .expect("encode")
        }
        ApiKey::ListGroups => {
            let request = ListGroupsRequest::decode(body, version).expect("decode");
            let groups = spec
                .listed
                .iter()
                .filter(|g| {
                    request.states_filter.is_empty()
                        || request
                            .states_filter
                            .iter()
                            .any(|s| s.eq_ignore_ascii_case(&g.group_state))
                })
                .cloned()
                .collect();
            ListGroupsResponse {
                groups,
                ..Default::default()
            }
            .encode(out, version)
            .expect("encode")
        }
        ApiKey::OffsetFetch => {
            let request = OffsetFetchRequest::decode(body, version).expect("decode");
            let groups = request
                .groups
                .into_iter()
                .map(|g| OffsetFetchResponseGroup {
                    group_id: g.group_id,
                    ..Default::default()
                })
                .collect();
            OffsetFetchResponse {
                groups,
                ..Default::default()
            }
            .encode(out, version)
            .expect("encode")
        }
        ApiKey::DeleteGroups => {
            let request = DeleteGroupsRequest::decode(body, version).expect("decode");
            let results = request
                .groups_names
                .into_iter()
                .map(|group_id| DeletableGroupResult {
                    group_id,
                    ..Default::default()
                })
                .collect();
            DeleteGroupsResponse {
                results,
                ..Default::default()
            }
            .encode(out, version)
            .expect("encode")
        }
        other => panic!("the fake broker does not serve {}", other.name()),
    }
}
