//! A fake context for calling handlers directly.

use std::net::SocketAddr;
use std::sync::Arc;

use kcoord_wire::messages::RequestHeader;
use tokio::sync::watch;

use crate::config::{Config, ListenerKind, SecurityProtocol};
use crate::runtime::cluster::ListenerInfo;
use crate::state::{RequestContext, ServerState};

pub const NODE_ID: i32 = 7;
pub const CLUSTER_ID: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn config(extra: &str) -> Config {
    Config::parse(
        "test",
        &format!(
            "node.id={NODE_ID}\ncluster.id={CLUSTER_ID}\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\noffsets.topic.num.partitions=2\n{extra}"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn listeners() -> Vec<ListenerInfo> {
    let listener = |name: &str, kind, port: u16, host: &str| ListenerInfo {
        name: name.to_owned(),
        kind,
        security_protocol: SecurityProtocol::Plaintext,
        local_addr: SocketAddr::from(([127, 0, 0, 1], port)),
        advertised_host: host.to_owned(),
        advertised_port: port,
        upstream_broker: None,
    };
    vec![
        listener("PLAINTEXT", ListenerKind::Broker, 9092, "broker.example"),
        listener(
            "CONTROLLER",
            ListenerKind::Controller,
            9093,
            "controller.example",
        ),
    ]
}

/// A node with a broker listener on 9092 and a controller listener on 9093, advertised as
/// `broker.example` / `controller.example`. Its controller and shards are not running: handlers
/// that need them answer as when they are unavailable.
pub fn server() -> ServerState {
    ServerState::build(Arc::new(config("")), listeners()).0
}

/// [`server`] whose coordinator shards are still loading (a closed [`crate::runtime::shards::LoadGate`]).
pub fn loading_server() -> ServerState {
    let (state, background) = ServerState::build(Arc::new(config("")), listeners());
    drop(background.with_load_gate(crate::runtime::shards::LoadGate::new()));
    state
}

/// The same node with its controller and coordinator shards running (needs a tokio runtime);
/// `extra` is appended to the config. The tasks stop when this is dropped.
pub struct Running {
    pub state: Arc<ServerState>,
    _stop: watch::Sender<bool>,
}

pub fn running(extra: &str) -> Running {
    let (state, background) = ServerState::build(Arc::new(config(extra)), listeners());
    let (stop, stop_rx) = watch::channel(false);
    background.spawn(&stop_rx);
    Running {
        state: Arc::new(state),
        _stop: stop,
    }
}

/// [`running`] whose coordinator shards stay loading (their load gate never opens) while the
/// node runs: what they are asked answers COORDINATOR_LOAD_IN_PROGRESS.
pub fn running_loading() -> Running {
    let (state, background) = ServerState::build(Arc::new(config("")), listeners());
    let background = background.with_load_gate(crate::runtime::shards::LoadGate::new());
    let (stop, stop_rx) = watch::channel(false);
    background.spawn(&stop_rx);
    Running {
        state: Arc::new(state),
        _stop: stop,
    }
}

/// [`running`] with `authorizer` deciding every request.
pub fn running_with_authorizer(
    extra: &str,
    authorizer: Arc<dyn crate::security::Authorizer>,
) -> Running {
    running_adjusted(extra, |state, background| {
        state.authorizer = Some(Arc::clone(&authorizer));
        background.controller.attach_authorizer(Some(authorizer));
    })
}

/// [`running`] after `adjust` has changed the node (an authorizer, a topology description
/// plugin) before its tasks start.
pub fn running_adjusted(
    extra: &str,
    adjust: impl FnOnce(&mut ServerState, &mut crate::state::Background),
) -> Running {
    let (mut state, mut background) = ServerState::build(Arc::new(config(extra)), listeners());
    adjust(&mut state, &mut background);
    let (stop, stop_rx) = watch::channel(false);
    background.spawn(&stop_rx);
    Running {
        state: Arc::new(state),
        _stop: stop,
    }
}

pub fn listener(server: &ServerState, kind: ListenerKind) -> Arc<ListenerInfo> {
    server
        .listeners
        .iter()
        .find(|l| l.kind == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} listener"))
}

/// What a [`RequestContext`] borrows, for async handler tests:
/// `let c = Ctx::new(&state, kind); handle(&c.ctx(&state), req, v).await`.
pub struct Ctx {
    listener: Arc<ListenerInfo>,
    header: RequestHeader,
    principal: kcoord_acl::KafkaPrincipal,
}

impl Ctx {
    pub fn new(server: &ServerState, kind: ListenerKind) -> Ctx {
        Ctx {
            listener: listener(server, kind),
            header: RequestHeader {
                client_id: Some("test-client".to_owned()),
                ..Default::default()
            },
            principal: kcoord_acl::KafkaPrincipal::anonymous(),
        }
    }

    pub fn ctx<'a>(&'a self, server: &'a ServerState) -> RequestContext<'a> {
        RequestContext {
            server,
            listener: &self.listener,
            principal: &self.principal,
            peer: SocketAddr::from(([127, 0, 0, 1], 40000)),
            client_host: "/127.0.0.1",
            header: &self.header,
            mute: None,
        }
    }
}

/// Calls `f` with a context for a request arriving on a `kind` listener.
pub fn with_ctx<R>(
    server: &ServerState,
    kind: ListenerKind,
    f: impl FnOnce(&RequestContext<'_>) -> R,
) -> R {
    let c = Ctx::new(server, kind);
    f(&c.ctx(server))
}

/// Encodes `resp` at `version`, failing the test if the version cannot carry it.
pub fn encodes<R: kcoord_wire::Encodable>(resp: &R, version: i16) {
    let mut buf = bytes::BytesMut::new();
    resp.encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("v{version}: {e}"));
}

/// Config lines that make a group assign at once (no initial delay, no assignment interval).
pub const FAST_GROUPS: &str =
    "group.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n";

/// Creates a topic through the controller; panics if it fails.
pub async fn create_topic(state: &ServerState, name: &str, partitions: i32) -> uuid::Uuid {
    use kcoord_wire::messages::create_topics_request::CreatableTopic;
    let results = state
        .controller
        .create_topics(kcoord_wire::messages::CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: -1,
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(results[0].error_code, 0, "{:?}", results[0].error_message);
    results[0].topic_id
}

/// A ConsumerGroupHeartbeat (v1) of `member` in `group`: a join subscribed to `topics` at epoch
/// 0, a leave at -1 or -2, else a heartbeat owning `owned` (topic id, partitions).
pub async fn consumer_heartbeat(
    state: &ServerState,
    group: &str,
    member: &str,
    epoch: i32,
    topics: &[&str],
    owned: &[(uuid::Uuid, Vec<i32>)],
) -> kcoord_wire::messages::ConsumerGroupHeartbeatResponse {
    use kcoord_wire::messages::consumer_group_heartbeat_request::TopicPartitions;
    let joining = epoch == 0;
    let req = kcoord_wire::messages::ConsumerGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: if joining { 30_000 } else { -1 },
        subscribed_topic_names: joining.then(|| topics.iter().map(|t| t.to_string()).collect()),
        topic_partitions: (epoch >= 0).then(|| {
            owned
                .iter()
                .map(|(id, ps)| TopicPartitions {
                    topic_id: *id,
                    partitions: ps.clone(),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = crate::rpc::apis::consumer_group_heartbeat::handle(&c.ctx(state), req, 1).await;
    encodes(&resp, 1);
    resp
}

/// A heartbeat of `member` in `group` (a join with a one-sub-topology topology reading `source`
/// when `epoch` is 0, a leave when -1), through the heartbeat handler at v1.
pub async fn heartbeat(
    state: &ServerState,
    group: &str,
    member: &str,
    epoch: i32,
    source: &str,
) -> kcoord_wire::messages::StreamsGroupHeartbeatResponse {
    use kcoord_wire::messages::streams_group_heartbeat_request::{Subtopology, Topology};
    let joining = epoch == 0;
    let req = kcoord_wire::messages::StreamsGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: if joining { 30_000 } else { -1 },
        topology: joining.then(|| Topology {
            epoch: 1,
            subtopologies: vec![Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![source.into()],
                ..Default::default()
            }],
            ..Default::default()
        }),
        process_id: joining.then(|| format!("process-{member}")),
        // A join reports empty task lists, as the Java client does (Kafka refuses null ones).
        active_tasks: joining.then(Vec::new),
        standby_tasks: joining.then(Vec::new),
        warmup_tasks: joining.then(Vec::new),
        ..Default::default()
    };
    let c = Ctx::new(state, ListenerKind::Broker);
    let resp = crate::rpc::apis::streams_group_heartbeat::handle(&c.ctx(state), req, 1).await;
    assert_eq!(resp.error_code, 0, "{:?}", resp.error_message);
    resp
}

/// Allows everything, except DESCRIBE on the topic it is told to hide.
#[derive(Debug, Default)]
pub struct HidesTopic(pub std::sync::Mutex<Option<String>>);

impl crate::security::Authorizer for HidesTopic {
    fn authorize(
        &self,
        _: &crate::security::Requester<'_>,
        operation: crate::security::AclOperation,
        resource: crate::security::ResourceType,
        name: &str,
    ) -> bool {
        let hidden = self.0.lock().unwrap();
        !(resource == crate::security::ResourceType::Topic
            && operation == crate::security::AclOperation::Describe
            && hidden.as_deref() == Some(name))
    }
}
