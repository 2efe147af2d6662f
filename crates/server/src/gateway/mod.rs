//! Gateway mode (docs/gateway.md): kcoord in front of an existing Kafka cluster. What kcoord
//! coordinates is served as in standalone mode; every other request a broker listener gets is
//! forwarded to the upstream cluster, whose brokers clients reach through kcoord, one port
//! per broker ([`mapping`]). Which RPC is which is part of each RPC's declaration
//! ([`crate::rpc::Gateway`]).
//!
//! The room sits below `state` and `rpc`: dispatch hands it the requests kcoord does not serve
//! itself, and it answers with frames; it reaches upstream with the client crate's
//! connections. The ports of the upstream brokers are opened by the daemon
//! (`daemon/gateway_ports.rs`).

pub mod acls;
pub mod deletes;
pub mod forward;
pub mod group_configs;
pub mod mapping;
pub mod nodes;
pub mod offsets;
pub mod topics;
pub mod upstream;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use kcoord_client::{ClientConfig, ClientError, Connection};
use kcoord_wire::messages::{MetadataRequest, MetadataResponse};
use tracing::{info, warn};

use crate::config::gateway::GatewaySettings;
use crate::support::logging::{LogLimiter, PEER_LINE_INTERVAL};
use mapping::{Endpoints, IdDoesNotFit, Placement};
use upstream::{Unreachable, UpstreamView};

/// How long after an UpdateFeatures kcoord learns the cluster again each second, for the new
/// levels to show in its own ApiVersions.
const FEATURES_SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// Why gateway mode could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("upstream.bootstrap.servers: {0}")]
    Unreachable(#[from] Unreachable),
    #[error("{0}")]
    IdDoesNotFit(#[from] IdDoesNotFit),
    #[error("upstream client settings: {0}")]
    Client(#[from] kcoord_client::SecurityConfigError),
    #[error("the coordinator logs' topic: {0}")]
    CoordinatorLog(#[from] crate::runtime::upstream_log::CoordinatorLogError),
    #[error("the SCRAM credentials' topic (gateway.credentials.topic): {0}")]
    Credentials(#[from] crate::runtime::upstream_credentials::CredentialsError),
    /// With an authorizer, kcoord authorizes what it serves itself with the cluster's ACLs.
    #[error(
        "authorizer.class.name: cannot read the cluster's ACLs (kcoord's upstream user needs \
         DESCRIBE on the cluster, and the cluster an authorizer): {0}"
    )]
    Acls(ClientError),
}

/// The upstream cluster, how to reach it and where its brokers are served.
#[derive(Debug)]
pub struct Gateway {
    settings: GatewaySettings,
    client: ClientConfig,
    endpoints: Endpoints,
    view: RwLock<Arc<UpstreamView>>,
    /// Picks the broker of the next bootstrap-port connection.
    spread: AtomicUsize,
    /// One line per upstream address and minute when it fails.
    failures: LogLimiter<String>,
    /// Asks the mirror (topics, group configs, ACLs) for a look at the cluster before its next
    /// turn.
    look_wanted: tokio::sync::Notify,
    /// Asks the broker ports for a refresh of the upstream brokers before their next turn.
    brokers_wanted: tokio::sync::Notify,
    /// Until when the broker ports refresh each second, after an UpdateFeatures.
    features_settle_until: std::sync::Mutex<Option<std::time::Instant>>,
    /// Which kcoord node serves each coordinator shard ([`nodes`]).
    ownership: tokio::sync::watch::Sender<nodes::Ownership>,
    /// `host:port` of this node's broker listener, where the other kcoord nodes send the
    /// requests of the groups it serves.
    listener: String,
    /// `host:port` of this node's HTTP listener, where the other nodes send the JSON API
    /// requests of the groups it serves.
    http: Option<String>,
    /// How this node's connections to the other kcoord nodes' broker listeners are made.
    node_client: ClientConfig,
}

impl Gateway {
    /// Learns the upstream cluster from its bootstrap servers; every broker id must have a
    /// port. `host` is where kcoord's broker listener is reached, `listener` its `host:port`,
    /// `http` the HTTP listener's.
    pub async fn start(
        settings: GatewaySettings,
        host: String,
        listener: String,
        http: Option<String>,
    ) -> Result<Gateway, GatewayError> {
        let client = settings.client_config()?;
        let node_client = settings.node_client_config()?;
        let view = upstream::discover(&settings.bootstrap_servers, &client).await?;
        let endpoints = Endpoints {
            host,
            port_start: settings.broker_port_start,
        };
        endpoints.check(view.brokers.keys().copied())?;
        info!(
            upstream = %settings.bootstrap_servers.join(","),
            cluster_id = view.cluster_id.as_deref().unwrap_or(""),
            brokers = ?view.brokers,
            "gateway mode: forwarding to the upstream cluster"
        );
        Ok(Gateway {
            settings,
            client,
            endpoints,
            view: RwLock::new(Arc::new(view)),
            spread: AtomicUsize::new(0),
            failures: LogLimiter::new(PEER_LINE_INTERVAL, 64),
            look_wanted: tokio::sync::Notify::new(),
            brokers_wanted: tokio::sync::Notify::new(),
            features_settle_until: std::sync::Mutex::new(None),
            ownership: tokio::sync::watch::Sender::new(nodes::Ownership::default()),
            listener,
            http,
            node_client,
        })
    }

    /// The upstream topic the `shards` coordinator shards keep their logs in, created when
    /// missing (`gateway.coordinator.log.*`).
    pub async fn coordinator_logs(
        &self,
        shards: usize,
    ) -> Result<crate::runtime::upstream_log::CoordinatorLogs, GatewayError> {
        let client = self
            .cluster_client()
            .await
            .map_err(crate::runtime::upstream_log::CoordinatorLogError::from)?;
        Ok(crate::runtime::upstream_log::CoordinatorLogs::open(
            client,
            &self.settings.coordinator_log_topic,
            shards,
            self.settings.coordinator_log_replication_factor,
        )
        .await?)
    }

    /// The upstream topic kcoord's own SCRAM credentials are kept in, created when missing
    /// (`gateway.credentials.topic`).
    pub async fn credentials(
        &self,
    ) -> Result<crate::runtime::upstream_credentials::UpstreamCredentials, GatewayError> {
        use crate::runtime::upstream_credentials::{CredentialsError, UpstreamCredentials};
        let client = self
            .cluster_client()
            .await
            .map_err(CredentialsError::from)?;
        Ok(UpstreamCredentials::open(
            client,
            &self.settings.credentials_topic,
            self.settings.coordinator_log_replication_factor,
        )
        .await?)
    }

    /// A new client of the cluster, from its bootstrap servers with kcoord's client settings.
    pub(crate) async fn cluster_client(&self) -> Result<kcoord_client::Client, ClientError> {
        let bootstrap = self.settings.bootstrap_servers.join(",");
        kcoord_client::Client::connect(&bootstrap, self.client.clone()).await
    }

    /// Which node serves each coordinator shard, as last assigned.
    pub fn ownership(&self) -> nodes::Ownership {
        self.ownership.borrow().clone()
    }

    /// Whether other kcoord nodes share the shards (read without a copy: asked per request).
    pub fn has_other_nodes(&self) -> bool {
        self.ownership
            .borrow()
            .owners
            .as_ref()
            .is_some_and(|owners| owners.nodes.len() > 1)
    }

    /// Follows [`Gateway::ownership`].
    pub fn ownership_updates(&self) -> tokio::sync::watch::Receiver<nodes::Ownership> {
        self.ownership.subscribe()
    }

    pub(crate) fn ownership_sender(&self) -> &tokio::sync::watch::Sender<nodes::Ownership> {
        &self.ownership
    }

    /// Joins the kcoord nodes' group in the cluster, which shares the `shards` coordinator
    /// shards among the nodes, until `stop`; connecting to the cluster is retried there.
    pub fn share_shards(
        self: Arc<Self>,
        shards: usize,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let membership = nodes::Membership {
            group_id: format!(
                "kcoord-coordinator-nodes-{}",
                self.settings.coordinator_log_topic
            ),
            shards,
            endpoints: nodes::NodeEndpoints {
                host: self.endpoints.host.clone(),
                port_start: self.endpoints.port_start,
                listener: self.listener.clone(),
                http: self.http.clone(),
            },
            session_timeout: self.settings.node_session_timeout,
        };
        let bootstrap = self.settings.bootstrap_servers.join(",");
        let client = self.client.clone();
        tokio::spawn(nodes::run(bootstrap, client, membership, self, stop))
    }

    /// The upstream cluster as last learnt.
    pub fn view(&self) -> Arc<UpstreamView> {
        Arc::clone(&self.view.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// Where forwarded answers show the upstream brokers: spread over the kcoord nodes of the
    /// last assignment when there are several ([`mapping`]), else at this node's endpoints.
    pub fn placement(&self) -> Placement {
        let ownership = self.ownership.borrow();
        match ownership.owners.as_ref() {
            Some(owners) if owners.nodes.len() > 1 => Placement::spread(
                self.endpoints.clone(),
                owners
                    .nodes
                    .values()
                    .map(|n| Endpoints {
                        host: n.host.clone(),
                        port_start: n.port_start,
                    })
                    .collect(),
            ),
            _ => Placement::alone(self.endpoints.clone()),
        }
    }

    pub fn settings(&self) -> &GatewaySettings {
        &self.settings
    }

    pub(crate) fn client(&self) -> &ClientConfig {
        &self.client
    }

    /// The client settings of connections to the other kcoord nodes.
    pub(crate) fn node_client(&self) -> &ClientConfig {
        &self.node_client
    }

    /// Whether a connection of `principal` may pass a request on as another kcoord node
    /// (`gateway.node.principals`).
    pub(crate) fn trusts_as_node(&self, principal: &kcoord_acl::KafkaPrincipal) -> bool {
        self.settings.trusts_as_node(principal)
    }

    /// Where a new forwarded connection for `target` goes (see [`upstream::address_for`]).
    pub(crate) fn address_for(&self, target: Option<i32>) -> Option<String> {
        let spread = self.spread.fetch_add(1, Ordering::Relaxed);
        upstream::address_for(&self.view(), target, spread).map(str::to_owned)
    }

    /// Learns the upstream cluster again, from the brokers known, then the bootstrap servers.
    pub async fn refresh(&self) -> Result<Arc<UpstreamView>, Unreachable> {
        let mut addresses: Vec<String> = self.view().brokers.values().cloned().collect();
        addresses.extend(self.settings.bootstrap_servers.iter().cloned());
        let learnt = upstream::discover(&addresses, &self.client).await?;
        let mut current = self.view.write().unwrap_or_else(PoisonError::into_inner);
        let view = Arc::new(current.followed_by(learnt));
        *current = Arc::clone(&view);
        Ok(view)
    }

    /// An UpdateFeatures the cluster answered: the broker ports learn the cluster again each
    /// second for [`FEATURES_SETTLE`] from now (a broker applies the controller's change a
    /// moment after the answer), however many such answers come.
    pub fn features_changed(&self) {
        let until = std::time::Instant::now() + FEATURES_SETTLE;
        *self
            .features_settle_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(until);
        self.brokers_wanted.notify_one();
    }

    /// Whether a feature change is still settling ([`Gateway::features_changed`]).
    pub fn features_settling(&self) -> bool {
        self.features_settle_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|until| std::time::Instant::now() < until)
    }

    /// Every topic of the upstream cluster, by name, with whether it is internal.
    pub async fn topics(&self) -> Result<Vec<(String, bool)>, ClientError> {
        let metadata = self.all_topics().await?;
        Ok(metadata
            .topics
            .into_iter()
            .filter_map(|t| Some((t.name?, t.is_internal)))
            .collect())
    }

    /// The upstream cluster's topics as a catalog, for the coordinator shards
    /// ([`topics::image`]).
    pub async fn topics_image(&self) -> Result<kcoord_metadata::TopicsImage, ClientError> {
        Ok(topics::image(self.all_topics().await?))
    }

    /// The group configs the cluster keeps (every kcoord node reads them back from there,
    /// [`group_configs`]); `None` when the cluster cannot list them (before Kafka 4.1).
    pub async fn group_configs_image(
        &self,
    ) -> Result<Option<kcoord_metadata::GroupConfigsImage>, ClientError> {
        if !group_configs::listable(&self.view()) {
            return Ok(None);
        }
        let conn = self.control_connection().await?;
        group_configs::fetch(&conn).await.map(Some)
    }

    /// Every ACL the cluster keeps ([`acls`]), in one order.
    pub async fn acls(&self) -> Result<Vec<kcoord_acl::AclBinding>, ClientError> {
        let conn = self.control_connection().await?;
        acls::fetch(&conn).await
    }

    /// The upstream's Metadata for all topics, asked of any broker.
    async fn all_topics(&self) -> Result<MetadataResponse, ClientError> {
        let conn = self.control_connection().await?;
        conn.send_negotiated(MetadataRequest {
            topics: None,
            ..Default::default()
        })
        .await
    }

    /// A connection to any upstream broker for kcoord's own requests.
    async fn control_connection(&self) -> Result<Connection, ClientError> {
        let address = self.address_for(None).ok_or_else(|| {
            ClientError::InvalidArgument("no upstream broker is known".to_owned())
        })?;
        Connection::connect(&address, self.client.clone()).await
    }

    /// Wakes the mirror at once: something it mirrors (a topic, a group config, an ACL) was
    /// just changed in the cluster, or is wanted.
    pub fn changed_upstream(&self) {
        self.look_wanted.notify_one();
    }

    /// Resolves when [`Gateway::changed_upstream`] was called since the last time.
    pub async fn look_wanted(&self) {
        self.look_wanted.notified().await;
    }

    /// A forwarded answer placed broker `id`: one kcoord has not learnt yet (a broker that just
    /// joined the cluster) wakes the broker ports for a refresh, which opens its port.
    pub fn note_broker(&self, id: i32) {
        let listed = self
            .view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .brokers
            .contains_key(&id);
        if !listed {
            self.brokers_wanted.notify_one();
        }
    }

    /// Resolves when a forwarded answer named a broker kcoord has not learnt since the last
    /// time ([`Gateway::note_broker`]).
    pub async fn brokers_wanted(&self) {
        self.brokers_wanted.notified().await;
    }

    /// Logs an upstream failure at most once a minute per address.
    pub fn log_failure(&self, address: &str, what: &str, error: &dyn std::fmt::Display) {
        if let Some(suppressed) = self
            .failures
            .check(address.to_owned(), std::time::Instant::now())
        {
            warn!(upstream = %address, error = %error, suppressed, "{what}");
        }
    }
}
