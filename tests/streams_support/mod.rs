//! Private harness of the `streams_*` end-to-end tests: the daemon started in-process with
//! `kcoord_server::start` on 127.0.0.1 port 0, client connections from `kcoord_client`, and a
//! simulated Kafka Streams member that adopts every assignment it is sent.
#![allow(dead_code)] // each test binary uses its own part

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kcoord_client::{ClientConfig, Connection};
use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::streams_group_heartbeat_request::{
    Subtopology, TaskIds, TopicInfo, Topology,
};
use kcoord_wire::messages::{
    CreateTopicsRequest, CreateTopicsResponse, MetadataRequest, MetadataResponse,
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
};
use kcoord_wire::ErrorCode;

/// Bound on every wait of these tests.
pub const WAIT: Duration = Duration::from_secs(20);

/// A daemon running in this process.
pub struct Node {
    handle: Option<kcoord_server::ServerHandle>,
    pub broker: String,
    pub controller: String,
}

/// Starts a node with `extra` config lines (which come after, and so override, the base ones).
pub async fn start(extra: &[&str]) -> Node {
    let mut text = String::from(
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\noffsets.topic.num.partitions=3\n",
    );
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    let config =
        kcoord_server::Config::parse("streams-e2e", &text).unwrap_or_else(|e| panic!("{e}"));
    let handle = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let broker = handle.broker_addr().expect("a broker listener").to_string();
    let controller = handle
        .controller_addr()
        .expect("a controller listener")
        .to_string();
    Node {
        handle: Some(handle),
        broker,
        controller,
    }
}

impl Node {
    pub async fn connect(&self) -> Connection {
        connect(&self.broker).await
    }

    /// Stops the node and waits for it (bounded).
    pub async fn stop(mut self) {
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(WAIT, handle.shutdown())
                .await
                .expect("the node did not stop in time");
        }
    }
}

pub async fn connect(addr: &str) -> Connection {
    let config = ClientConfig::new("streams-e2e")
        .with_request_timeout(WAIT)
        .with_connect_timeout(WAIT);
    Connection::connect(addr, config)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"))
}

pub fn creatable(name: &str, partitions: i32, replication: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: replication,
        ..Default::default()
    }
}

/// CreateTopics v7 of `(name, partitions)` with the default replication factor; asserts success.
pub async fn create_topics(conn: &Connection, topics: &[(&str, i32)]) -> CreateTopicsResponse {
    let request = CreateTopicsRequest {
        topics: topics.iter().map(|(n, p)| creatable(n, *p, -1)).collect(),
        timeout_ms: 10_000,
        ..Default::default()
    };
    let response = conn.send(request, 7).await.expect("CreateTopics");
    for t in &response.topics {
        assert_eq!(
            t.error_code, 0,
            "creating {}: {:?}",
            t.name, t.error_message
        );
    }
    response
}

/// Metadata v12 for the named topics.
pub async fn metadata(conn: &Connection, names: &[&str]) -> MetadataResponse {
    let request = MetadataRequest {
        topics: Some(
            names
                .iter()
                .map(|n| MetadataRequestTopic {
                    name: Some((*n).into()),
                    ..Default::default()
                })
                .collect(),
        ),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    conn.send(request, 12).await.expect("Metadata")
}

pub async fn describe(conn: &Connection, group: &str) -> StreamsGroupDescribeResponse {
    let request = StreamsGroupDescribeRequest {
        group_ids: vec![group.into()],
        ..Default::default()
    };
    conn.send(request, 1).await.expect("StreamsGroupDescribe")
}

/// A topology with one sub-topology reading `source`.
pub fn simple_topology(source: &str) -> Topology {
    Topology {
        epoch: 1,
        subtopologies: vec![Subtopology {
            subtopology_id: "0".into(),
            source_topics: vec![source.into()],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Two sub-topologies: "0" reads `source` and writes `repartition`; "1" reads it back and keeps
/// a store with `changelog`. The internal topics' partition counts are left to the coordinator.
pub fn repartitioning_topology(source: &str, repartition: &str, changelog: &str) -> Topology {
    Topology {
        epoch: 1,
        subtopologies: vec![
            Subtopology {
                subtopology_id: "0".into(),
                source_topics: vec![source.into()],
                repartition_sink_topics: vec![repartition.into()],
                ..Default::default()
            },
            Subtopology {
                subtopology_id: "1".into(),
                repartition_source_topics: vec![TopicInfo {
                    name: repartition.into(),
                    ..Default::default()
                }],
                state_changelog_topics: vec![TopicInfo {
                    name: changelog.into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

pub type Tasks = BTreeMap<String, BTreeSet<i32>>;

/// A Kafka Streams member as the coordinator sees it: joins with its topology, then owns
/// exactly what it was last assigned and reports it on every heartbeat.
pub struct Member {
    pub group: String,
    pub id: String,
    pub process: String,
    pub epoch: i32,
    pub topology: Topology,
    pub active: Tasks,
    pub standby: Tasks,
    pub warmup: Tasks,
    pub conn: Connection,
    pub last: Option<StreamsGroupHeartbeatResponse>,
}

fn to_wire(tasks: &Tasks) -> Vec<TaskIds> {
    tasks
        .iter()
        .map(|(s, p)| TaskIds {
            subtopology_id: s.clone(),
            partitions: p.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

fn from_wire(tasks: &[kcoord_wire::messages::streams_group_heartbeat_response::TaskIds]) -> Tasks {
    tasks
        .iter()
        .filter(|t| !t.partitions.is_empty())
        .map(|t| {
            (
                t.subtopology_id.clone(),
                t.partitions.iter().copied().collect(),
            )
        })
        .collect()
}

impl Member {
    pub fn new(conn: Connection, group: &str, id: &str, topology: Topology) -> Member {
        Member {
            group: group.into(),
            id: id.into(),
            process: format!("process-{id}"),
            epoch: 0,
            topology,
            active: Tasks::new(),
            standby: Tasks::new(),
            warmup: Tasks::new(),
            conn,
            last: None,
        }
    }

    pub fn request(&self) -> StreamsGroupHeartbeatRequest {
        let joining = self.epoch == 0;
        StreamsGroupHeartbeatRequest {
            group_id: self.group.clone(),
            member_id: self.id.clone(),
            member_epoch: self.epoch,
            rebalance_timeout_ms: if joining { 30_000 } else { -1 },
            topology: joining.then(|| self.topology.clone()),
            process_id: joining.then(|| self.process.clone()),
            active_tasks: Some(to_wire(&self.active)),
            standby_tasks: Some(to_wire(&self.standby)),
            warmup_tasks: Some(to_wire(&self.warmup)),
            ..Default::default()
        }
    }

    /// One heartbeat at v1; adopts the assignment if the response carries one. Retries while
    /// the shard is still loading, as Kafka's clients do (a daemon answers before its shards have
    /// replayed their logs); panics on any other error response.
    pub async fn heartbeat(&mut self) -> StreamsGroupHeartbeatResponse {
        let deadline = tokio::time::Instant::now() + WAIT;
        let response = loop {
            let response = self
                .conn
                .send(self.request(), 1)
                .await
                .expect("StreamsGroupHeartbeat");
            if response.error_code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code()
                || tokio::time::Instant::now() >= deadline
            {
                break response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            response.error_code, 0,
            "member {}: {:?}",
            self.id, response.error_message
        );
        self.epoch = response.member_epoch;
        if let Some(active) = &response.active_tasks {
            self.active = from_wire(active);
        }
        if let Some(standby) = &response.standby_tasks {
            self.standby = from_wire(standby);
        }
        if let Some(warmup) = &response.warmup_tasks {
            self.warmup = from_wire(warmup);
        }
        self.last = Some(response.clone());
        response
    }

    /// Leaves the group (epoch -1).
    pub async fn leave(&mut self) -> StreamsGroupHeartbeatResponse {
        let mut request = self.request();
        request.member_epoch = -1;
        request.topology = None;
        let response = self.conn.send(request, 1).await.expect("leave");
        assert_eq!(response.error_code, 0, "{:?}", response.error_message);
        response
    }

    pub fn active_count(&self) -> usize {
        self.active.values().map(BTreeSet::len).sum()
    }

    pub fn statuses(&self) -> Vec<(i8, String)> {
        self.last
            .iter()
            .flat_map(|r| r.status.iter().flatten())
            .map(|s| (s.status_code, s.status_detail.clone()))
            .collect()
    }
}

/// Heartbeats every member in rounds until the group is Stable and every member owns what the
/// coordinator says it is assigned; panics after [`WAIT`].
pub async fn converge(members: &mut [Member], probe: &Connection) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        for m in members.iter_mut() {
            m.heartbeat().await;
        }
        let group = &members[0].group;
        let described = describe(probe, group).await;
        let g = &described.groups[0];
        let settled = g.group_state == "Stable"
            && members.iter().all(|m| {
                g.members.iter().any(|d| {
                    d.member_id == m.id
                        && d.member_epoch == m.epoch
                        && d.assignment
                            .active_tasks
                            .iter()
                            .map(|t| t.partitions.len())
                            .sum::<usize>()
                            == m.active_count()
                })
            });
        if settled {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "group {group} did not settle: {g:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Every active task owned, each by exactly one member.
pub fn assert_complete_and_disjoint(members: &[Member], subtopology: &str, partitions: i32) {
    let mut owned: Vec<i32> = members
        .iter()
        .flat_map(|m| m.active.get(subtopology).into_iter().flatten().copied())
        .collect();
    owned.sort_unstable();
    assert_eq!(
        owned,
        (0..partitions).collect::<Vec<_>>(),
        "tasks of sub-topology {subtopology}"
    );
}
