//! What every request can see: the shared server state, the listener it arrived on and who
//! sent it.

use std::net::SocketAddr;
use std::sync::Arc;

use kcoord_acl::KafkaPrincipal;
use kcoord_coordinator::GroupConfigRules;
use kcoord_wire::messages::RequestHeader;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::runtime::auto_topics::AutoTopicCreation;
use crate::runtime::catalog::TopicCatalog;
use crate::runtime::cluster::{ClusterCatalog, ListenerInfo, Node};
use crate::runtime::controller::{ControllerBoot, ControllerHandle, ControllerRuntime};
use crate::runtime::features::Features;
use crate::runtime::fetch_sessions::FetchSessions;
use crate::runtime::partitions::Partitions;
use crate::runtime::producer_ids::ProducerIds;
use crate::runtime::shards::{Coordinators, LoadGate, ShardTasks};
use crate::runtime::topology_plugin::TopologyDescriptions;
use crate::security::Authorizer;

/// State shared by all connections. Read-only for handlers: the topic catalog is an immutable
/// snapshot the controller publishes, and everything that changes lives in a task reached
/// through a handle (the controller, the coordinator shards).
#[derive(Debug)]
pub struct ServerState {
    pub config: Arc<Config>,
    pub listeners: Vec<Arc<ListenerInfo>>,
    pub topics: Arc<TopicCatalog>,
    /// Broker registrations and finalized features, as the controller last published them.
    pub cluster: Arc<ClusterCatalog>,
    pub features: Features,
    pub controller: ControllerHandle,
    pub coordinators: Coordinators,
    pub auto_topics: Arc<AutoTopicCreation>,
    /// The KIP-1331 topology description plugin, or none (`topology_plugin.rs`).
    pub topology: TopologyDescriptions,
    /// The injected authorizer; `None` allows everything (`crate::security`).
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// The data plane: the partitions this node leads (`partitions.rs`).
    pub partitions: Arc<Partitions>,
    /// InitProducerId's ids (`producer_ids.rs`).
    pub producer_ids: ProducerIds,
    /// KIP-227 incremental fetch sessions (`fetch_sessions.rs`).
    pub fetch_sessions: FetchSessions,
    /// Rate limits of the log lines requests can trigger about a group (`logging.rs`).
    pub(crate) group_lines: crate::support::logging::LogLimiter<(&'static str, String)>,
    /// What `/metrics` shows (`metrics/`).
    pub metrics: Arc<Metrics>,
    /// What `/health/ready` waits for besides the shards.
    pub readiness: Readiness,
    /// Gateway mode: the upstream cluster requests are forwarded to; none in standalone mode.
    pub gateway: Option<Arc<crate::gateway::Gateway>>,
    /// Gateway mode with `gateway.authentication=local`: where kcoord's own SCRAM credentials
    /// are kept in the cluster (AlterUserScramCredentials writes there).
    pub upstream_credentials:
        Option<Arc<crate::runtime::upstream_credentials::UpstreamCredentials>>,
    /// The usage client quotas are measured against (`runtime/quotas`).
    pub quotas: crate::runtime::quotas::ClientQuotas,
}

/// Whether the node has finished starting: every listener bound and serving (the coordinator
/// shards report their own loading).
#[derive(Debug, Default)]
pub struct Readiness {
    listeners_serving: std::sync::atomic::AtomicBool,
}

impl Readiness {
    /// Every listener is bound and its accept loop runs.
    pub fn listeners_started(&self) {
        self.listeners_serving
            .store(true, std::sync::atomic::Ordering::Release);
    }

    pub fn listeners_serving(&self) -> bool {
        self.listeners_serving
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The tasks behind a [`ServerState`]'s handles, built but not running: [`ServerState::build`]
/// needs no runtime, so handler tests can use a state whose tasks never start (calls to them
/// then fail as "not available").
pub struct Background {
    pub(crate) controller: ControllerRuntime,
    shards: ShardTasks,
    partitions: Arc<Partitions>,
    /// For the marker task (`runtime/transactions.rs`).
    coordinators: Coordinators,
    metrics: Arc<Metrics>,
    /// In gateway mode with the shards' logs upstream: the gateway whose nodes' group shares
    /// the shards.
    gateway: Option<Arc<crate::gateway::Gateway>>,
}

impl Background {
    /// Keeps every coordinator shard loading until `gate` opens (see [`LoadGate`]).
    pub fn with_load_gate(mut self, gate: LoadGate) -> Self {
        self.shards = self.shards.with_load_gate(gate);
        self
    }

    /// Keeps the coordinator shards' logs in the upstream cluster (gateway mode), each shard
    /// served while the kcoord nodes' group (joined by [`Background::spawn`]) gives it to this
    /// node.
    pub fn with_upstream_logs(
        mut self,
        logs: Arc<crate::runtime::upstream_log::CoordinatorLogs>,
        gateway: Arc<crate::gateway::Gateway>,
    ) -> Self {
        self.shards = self
            .shards
            .with_upstream_logs(logs, gateway.ownership_updates());
        self.gateway = Some(gateway);
        self
    }

    /// Starts the controller and the shard tasks; they stop when `stop` turns true.
    pub fn spawn(
        self,
        stop: &tokio::sync::watch::Receiver<bool>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let shard_count = self.coordinators.len();
        let mut tasks = self.shards.spawn(stop);
        tasks.push(self.controller.spawn(stop));
        tasks.push(crate::runtime::partitions::maintenance::spawn(
            Arc::clone(&self.partitions),
            stop,
        ));
        tasks.push(
            crate::runtime::transactions::MarkerTask::new(
                self.coordinators,
                self.partitions,
                self.metrics,
            )
            .spawn(stop),
        );
        if let Some(gateway) = self.gateway {
            // The shards load once the nodes' group has said which are this node's.
            tasks.push(gateway.share_shards(shard_count, stop.clone()));
        }
        tasks
    }
}

impl ServerState {
    /// A node with an in-memory controller; partitions in memory too, or under `log.dirs`
    /// (a log dir that cannot be read panics: this is for tests, [`crate::start`] reports it).
    pub fn build(config: Arc<Config>, listeners: Vec<ListenerInfo>) -> (Self, Background) {
        let boot = ControllerBoot::in_memory(&config);
        let partitions = Partitions::open(
            config.log.clone(),
            &boot.topics_image(),
            crate::support::clock::now_ms(),
        )
        .unwrap_or_else(|e| panic!("log.dirs: {e}"));
        let metrics = Arc::new(Metrics::new(listeners.iter().map(|l| l.name.as_str())));
        Self::build_with(config, listeners, boot, Arc::new(partitions), metrics)
    }

    /// [`ServerState::build`] around a controller built beforehand, e.g. replayed from
    /// `metadata.log.dir` by [`ControllerBoot::open`]: the catalogs start with its images.
    /// Everything counts its work in `metrics`.
    pub fn build_with(
        config: Arc<Config>,
        listeners: Vec<ListenerInfo>,
        boot: ControllerBoot,
        partitions: Arc<Partitions>,
        metrics: Arc<Metrics>,
    ) -> (Self, Background) {
        let topics = Arc::new(TopicCatalog::new(boot.topics_image()));
        let cluster = Arc::new(ClusterCatalog::new(boot.cluster_image()));
        let (coordinators, shards) = Coordinators::with_logs(
            config.coordinator_shards,
            &config.streams.coordinator_config(),
            &config.coordinator_log,
            &crate::runtime::shards::Protocols {
                transactions: config.transactions,
                classic: config.classic_groups.clone(),
                consumer: config.consumer.clone(),
            },
            config.max_groups,
            Arc::clone(&metrics),
        );
        let authorizer = crate::security::configured(&config);
        let (controller, mut controller_task) = ControllerRuntime::new(
            boot,
            GroupConfigRules::new(config.streams.group_config_broker_settings()),
            Arc::clone(&topics),
            Arc::clone(&cluster),
            coordinators.clone(),
            Arc::clone(&partitions),
            metrics.controller_log.clone(),
        );
        if config.gateway.is_some() {
            // The authorizer decides with the cluster's ACLs (`daemon/gateway_mirror.rs`).
            controller_task.leave_topics_and_group_configs_to_the_gateway();
        } else {
            controller_task.attach_authorizer(authorizer.clone());
        }
        let fetch_sessions = FetchSessions::new(config.log.fetch_session_cache_slots);
        let quotas = crate::runtime::quotas::ClientQuotas::new(crate::runtime::quotas::Window {
            samples: config.connections.quota_window_num.unsigned_abs(),
            size_ms: i64::from(config.connections.quota_window_size_seconds) * 1000,
        });
        let state = ServerState {
            config,
            listeners: listeners.into_iter().map(Arc::new).collect(),
            topics,
            cluster,
            features: Features::default(),
            controller,
            coordinators,
            auto_topics: Arc::default(),
            topology: TopologyDescriptions::disabled(),
            authorizer,
            partitions,
            producer_ids: ProducerIds::default(),
            fetch_sessions,
            group_lines: crate::support::logging::group_lines(),
            metrics,
            readiness: Readiness::default(),
            gateway: None,
            upstream_credentials: None,
            quotas,
        };
        let background = Background {
            controller: controller_task,
            shards,
            partitions: Arc::clone(&state.partitions),
            coordinators: state.coordinators.clone(),
            metrics: Arc::clone(&state.metrics),
            gateway: None,
        };
        (state, background)
    }

    pub fn node_id(&self) -> i32 {
        self.config.node_id
    }

    pub fn cluster_id(&self) -> &str {
        &self.config.cluster_id
    }
}

/// The context a handler gets for one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    pub server: &'a ServerState,
    pub listener: &'a ListenerInfo,
    /// Who sent the request: `User:ANONYMOUS` until a listener authenticates its clients.
    pub principal: &'a KafkaPrincipal,
    pub peer: SocketAddr,
    /// [`client_host`] of `peer`.
    pub client_host: &'a str,
    pub header: &'a RequestHeader,
    /// The connection's mute, which a quota throttle sets; none outside a connection (the
    /// HTTP side, tests).
    pub mute: Option<&'a Mute>,
}

/// When a connection may be read again after a client quota throttled it: Kafka mutes the
/// channel for the throttle time once the response is on its way, and reads nothing from it
/// meanwhile.
#[derive(Debug, Default)]
pub struct Mute {
    until: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Mute {
    /// Mutes the connection for `ms` from now (a later end already set stays).
    pub fn mute_for(&self, ms: u32) {
        if ms == 0 {
            return;
        }
        let end = std::time::Instant::now() + std::time::Duration::from_millis(u64::from(ms));
        let mut until = self
            .until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if until.is_none_or(|u| u < end) {
            *until = Some(end);
        }
    }

    /// Waits out the mute, if one is set, and clears it: the connection handles no request
    /// meanwhile. A shutdown does not end it early; the connection's grace period bounds it.
    /// Whether there was a mute to wait out.
    pub async fn wait(&self) -> bool {
        let until = self
            .until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match until {
            Some(until) => {
                tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
                true
            }
            None => false,
        }
    }
}

/// Kafka records `InetAddress.toString()` as the client host: `/127.0.0.1`, and IPv6 in Java's
/// uncompressed form (`/0:0:0:0:0:0:0:1`).
pub fn client_host(peer: SocketAddr) -> String {
    match peer.ip() {
        std::net::IpAddr::V4(ip) => format!("/{ip}"),
        std::net::IpAddr::V6(ip) => {
            let segments: Vec<String> = ip.segments().iter().map(|s| format!("{s:x}")).collect();
            format!("/{}", segments.join(":"))
        }
    }
}

impl RequestContext<'_> {
    /// Who asks, as the authorizer sees it.
    pub fn requester(&self) -> crate::security::Requester<'_> {
        crate::security::Requester {
            principal: self.principal,
            peer: self.peer,
            listener: &self.listener.name,
            client_id: self.header.client_id.as_deref().unwrap_or_default(),
        }
    }

    pub fn node_id(&self) -> i32 {
        self.server.node_id()
    }

    pub fn cluster_id(&self) -> &str {
        self.server.cluster_id()
    }

    /// This node as clients reach it through the listener the request came in on.
    pub fn this_node(&self) -> Node {
        Node {
            id: self.node_id(),
            host: self.listener.advertised_host.clone(),
            port: i32::from(self.listener.advertised_port),
        }
    }
}
