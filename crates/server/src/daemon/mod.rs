//! Starting and stopping the daemon in-process: [`start`] binds every listener and returns a
//! [`ServerHandle`]; the CLI and the tests both go through it.

pub mod command_line;
mod gateway_mirror;
mod gateway_ports;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::info;

use crate::config::listeners::bracket_ipv6;
use crate::config::{Config, ListenerConfig, ListenerKind, SecurityProtocol};
use crate::net::tls::TlsListener;
use crate::net::{acceptor, limiter::ConnectionQuotas};
use crate::rpc::bulk::BulkLane;
use crate::runtime::cluster::ListenerInfo;
use crate::runtime::topology_plugin::{PluginStartError, TopologyDescriptions};
use crate::runtime::upstream_credentials::{CredentialsError, UpstreamCredentials};
use crate::runtime::upstream_log::CoordinatorLogs;
use crate::state::{Background, ServerState};

/// What an embedding program (or a test) supplies instead of the configuration.
#[derive(Default, Clone)]
pub struct Extensions {
    /// A topology description plugin instance, already configured. It wins over
    /// `group.streams.topology.description.class`; the timeout key still applies. This is how a
    /// plugin that is not built in reaches the daemon (see `examples/topology_plugin.rs`).
    pub plugin: Option<Arc<crate::runtime::topology_plugin::Plugin>>,
    /// An authorizer; none allows everything.
    pub authorizer: Option<Arc<dyn crate::security::Authorizer>>,
    /// Holds every coordinator shard in its loading state until the gate opens.
    pub load_gate: Option<crate::runtime::shards::LoadGate>,
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("plugin", &self.plugin.as_ref().map(|_| "injected"))
            .field("authorizer", &self.authorizer)
            .field("load_gate", &self.load_gate)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("listener {listener}: cannot bind {address}: {source}")]
    Bind {
        listener: String,
        address: String,
        #[source]
        source: std::io::Error,
    },
    /// The topology description plugin could not be built (a configuration error: the CLI
    /// exits 2) or its threads could not be started.
    #[error(transparent)]
    Plugin(#[from] PluginStartError),
    /// The metadata log in `metadata.log.dir` cannot be read or does not replay.
    #[error(transparent)]
    MetadataLog(#[from] crate::runtime::controller::MetadataLogError),
    /// A partition log under `log.dirs` cannot be read.
    #[error("log.dirs: {0}")]
    Storage(#[from] kcoord_storage::StorageError),
    /// The coordinator shards' log directory cannot be used as configured.
    #[error("{0}")]
    CoordinatorLog(String),
    /// The HTTP listener's thread could not be started.
    #[error("cannot start the HTTP listener: {0}")]
    Http(#[source] std::io::Error),
    /// The bulk lane's threads could not be started.
    #[error("cannot start the bulk request threads: {0}")]
    BulkLane(#[source] std::io::Error),
    /// An SSL listener without TLS settings: a `Config` built by hand rather than parsed.
    #[error("listener {0} uses SSL but the configuration has no TLS settings for it")]
    NoTlsSettings(String),
    /// Gateway mode could not start: the upstream cluster does not answer, or one of its
    /// broker ids has no port.
    #[error("gateway mode: {0}")]
    Gateway(#[from] crate::gateway::GatewayError),
    /// A host of `max.connections.per.ip.overrides` does not resolve (Kafka fails likewise).
    #[error("max.connections.per.ip.overrides: cannot resolve {host}: {source}")]
    UnknownHost {
        host: String,
        #[source]
        source: std::io::Error,
    },
}

/// A running daemon. Dropping it without [`ServerHandle::shutdown`] also stops the
/// listeners, but nothing waits for the connections to finish.
#[derive(Debug)]
pub struct ServerHandle {
    state: Arc<ServerState>,
    shutdown: watch::Sender<bool>,
    acceptors: Vec<JoinHandle<()>>,
    /// The controller and coordinator shards; stopped after the connections are done.
    stop_background: watch::Sender<bool>,
    background: Vec<JoinHandle<()>>,
    /// Holds the coordinator logs' directory lock for the daemon's life.
    _coordinator_lock: Option<std::fs::File>,
    /// The runtime of requests in big frames (`rpc/bulk.rs`).
    _bulk: BulkLane,
    /// `/metrics` and `/health/*` (`http.listener`), on a thread of their own.
    http: Option<crate::http::HttpServer>,
}

/// Binds every configured listener (all or nothing) and starts serving. A listener on port 0
/// gets a free port; [`ServerHandle::listeners`] tells which.
pub async fn start(config: Config) -> Result<ServerHandle, StartError> {
    start_with(config, Extensions::default()).await
}

/// [`start`] with parts supplied by the embedding program instead of the configuration: a
/// topology description plugin instance, an authorizer, a gate that holds the coordinator
/// shards in their loading state (see [`Extensions`]).
pub async fn start_with(
    config: Config,
    extensions: Extensions,
) -> Result<ServerHandle, StartError> {
    // Before binding, and before the plugin (nothing to close yet): a log that does not
    // replay must not leave a half-started node.
    let controller =
        crate::runtime::controller::ControllerBoot::open(&config, crate::support::clock::now_ms())?;
    // Before the partitions are recovered: a second daemon on the same log.dirs stops here.
    let coordinator_lock = prepare_coordinator_logs(&config)?;
    // Recovers every partition log before a client can reach it.
    let partitions = Arc::new(crate::runtime::partitions::Partitions::open(
        config.log.clone(),
        &controller.topics_image(),
        crate::support::clock::now_ms(),
    )?);
    let per_ip_overrides =
        resolve_overrides(&config.connections.max_connections_per_ip_overrides).await?;
    let metrics = Arc::new(crate::metrics::Metrics::new(
        config.listeners.iter().map(|l| l.name.as_str()),
    ));
    // Before binding: a bad plugin setting is a configuration error, not a half-started node.
    let topology = TopologyDescriptions::build(&config, extensions.plugin, metrics.plugin.clone())?;
    log_where_groups_are(&config);
    let config = Arc::new(config);
    let tls = closing_on_error(&topology, listener_tls(&config)).await?;
    let bound = closing_on_error(&topology, bind_listeners(&config).await).await?;
    let http = config.http_listener.as_ref().map(bind_http).transpose();
    let http = closing_on_error(&topology, http).await?;

    let infos: Vec<ListenerInfo> = bound.iter().map(|(_, info)| info.clone()).collect();
    let gateway = start_gateway(&config, &infos, &tls, http.as_ref()).await;
    let gateway = closing_on_error(&topology, gateway).await?;
    let (mut state, mut background) = ServerState::build_with(
        Arc::clone(&config),
        infos,
        controller,
        Arc::clone(&partitions),
        metrics,
    );
    state.topology = topology;
    state.gateway = gateway.as_ref().map(|(ports, _)| ports.gateway());
    if let Some(authorizer) = extensions.authorizer {
        state.authorizer = Some(Arc::clone(&authorizer));
        background.controller.attach_authorizer(Some(authorizer));
    }
    let bulk = BulkLane::start().map_err(StartError::BulkLane)?;
    if let Some((ports, _)) = &gateway {
        background = upstream_state(&ports.gateway(), &mut state, background).await?;
    }
    let background = match extensions.load_gate {
        Some(gate) => background.with_load_gate(gate),
        None => background,
    };
    let state = Arc::new(state);
    let (stop_background, stop_background_rx) = watch::channel(false);
    let background = background.spawn(&stop_background_rx);
    let background = load_credentials(&state, background, &stop_background).await?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let quotas = ConnectionQuotas::new(&config.connections, per_ip_overrides);
    let mut acceptors = spawn_acceptors(bound, tls, &state, &quotas, &bulk, &shutdown_rx);
    if let Some((ports, bound_ports)) = gateway {
        let serving = gateway_ports::Serving::new(&state, quotas, &bulk, shutdown_rx);
        acceptors.extend(spawn_gateway(ports, bound_ports, serving));
    }
    log_running(&state);
    state.readiness.listeners_started();
    let handle = ServerHandle {
        state,
        shutdown,
        acceptors,
        stop_background,
        background,
        _coordinator_lock: coordinator_lock,
        _bulk: bulk,
        http: None,
    };
    start_http(handle, http).await
}

/// Gateway mode's tasks: the topic mirror, and the upstream brokers' ports with their
/// refresh.
fn spawn_gateway(
    ports: gateway_ports::BrokerPorts,
    bound: Vec<(TcpListener, ListenerInfo)>,
    serving: gateway_ports::Serving,
) -> [JoinHandle<()>; 2] {
    let mirror = gateway_mirror::spawn(
        ports.gateway(),
        Arc::clone(&serving.state),
        serving.shutdown.clone(),
    );
    [mirror, ports.spawn(bound, serving)]
}

/// Readies and locks the coordinator shards' log directory; in gateway mode they live in the
/// upstream cluster (`upstream_logs`) and nothing is locked here.
fn prepare_coordinator_logs(config: &Config) -> Result<Option<std::fs::File>, StartError> {
    if config.gateway.is_some() {
        return Ok(None);
    }
    crate::runtime::shard_log::prepare_dir(&config.coordinator_log, config.coordinator_shards)
        .map_err(StartError::CoordinatorLog)
}

/// Says where groups are kept (in gateway mode `upstream_logs` says it). After the plugin is
/// built: a start that a configuration error stops prints that error alone.
fn log_where_groups_are(config: &Config) {
    if config.gateway.is_none() {
        crate::runtime::shard_log::log_where(&config.coordinator_log, config.coordinator_shards);
    }
}

/// What gateway mode reads from the cluster before the listeners open: the cluster's ACLs, when
/// there is an authorizer, the topic of the coordinator shards' logs, said once where it is,
/// and, with `gateway.authentication=local`, the topic of kcoord's own SCRAM credentials.
async fn upstream_state(
    gateway: &Arc<crate::gateway::Gateway>,
    state: &mut ServerState,
    background: Background,
) -> Result<Background, StartError> {
    let found = upstream_topics(gateway, state).await;
    let (logs, credentials) = closing_on_error(&state.topology, found).await?;
    state.upstream_credentials = credentials;
    Ok(background.with_upstream_logs(logs, Arc::clone(gateway)))
}

async fn upstream_topics(
    gateway: &crate::gateway::Gateway,
    state: &ServerState,
) -> Result<(Arc<CoordinatorLogs>, Option<Arc<UpstreamCredentials>>), StartError> {
    gateway_mirror::load_acls(gateway, state).await?;
    let shards = state.config.coordinator_shards;
    let logs = gateway.coordinator_logs(shards).await?;
    tracing::info!(
        topic = logs.topic(),
        shards,
        "streams groups and committed offsets are kept in the upstream cluster, one partition of this compacted topic per coordinator shard"
    );
    if gateway.settings().upstream_authenticates {
        return Ok((Arc::new(logs), None));
    }
    let credentials = gateway.credentials().await?;
    tracing::info!(
        topic = credentials.topic(),
        "SCRAM credentials of kcoord's own listeners are kept in the upstream cluster, in this compacted topic"
    );
    Ok((Arc::new(logs), Some(Arc::new(credentials))))
}

/// Gateway mode with kcoord's credentials in the cluster: reads them all into the controller
/// (just started) before the listeners open, then follows the topic beside the background
/// tasks. A cluster that cannot be read stops the start, the background tasks first.
async fn load_credentials(
    state: &ServerState,
    mut background: Vec<JoinHandle<()>>,
    stop_background: &watch::Sender<bool>,
) -> Result<Vec<JoinHandle<()>>, StartError> {
    let (Some(credentials), Some(gateway)) =
        (state.upstream_credentials.clone(), state.gateway.clone())
    else {
        return Ok(background);
    };
    if let Err(e) = credentials.load(&state.controller).await {
        let _ = stop_background.send(true);
        for task in background {
            let _ = task.await;
        }
        state.topology.close().await;
        return Err(crate::gateway::GatewayError::from(e).into());
    }
    let controller = state.controller.clone();
    let stop = stop_background.subscribe();
    background.push(tokio::spawn(async move {
        let topic = credentials.topic().to_owned();
        let log = |e: &CredentialsError| {
            gateway.log_failure(&topic, "cannot follow the SCRAM credentials' topic", e);
        };
        credentials.follow(controller, stop, log).await;
    }));
    Ok(background)
}

/// Binds every configured listener, in config order.
async fn bind_listeners(config: &Config) -> Result<Vec<(TcpListener, ListenerInfo)>, StartError> {
    let mut bound = Vec::with_capacity(config.listeners.len());
    for l in &config.listeners {
        let listener = bind(l).await?;
        let info = listener_info(l, &listener)?;
        bound.push((listener, info));
    }
    Ok(bound)
}

/// In gateway mode, learns the upstream cluster and binds a port for each of its brokers,
/// beside the first broker listener (`gateway_ports.rs`). `http`: the HTTP listener, if any.
async fn start_gateway(
    config: &Config,
    infos: &[ListenerInfo],
    tls: &[Option<Arc<TlsListener>>],
    http: Option<&std::net::TcpListener>,
) -> Result<Option<(gateway_ports::BrokerPorts, Vec<(TcpListener, ListenerInfo)>)>, StartError> {
    let Some(settings) = &config.gateway else {
        return Ok(None);
    };
    let infos: Vec<Arc<ListenerInfo>> = infos.iter().cloned().map(Arc::new).collect();
    let Some((index, template)) = gateway_ports::template(&infos) else {
        return Ok(None); // the configuration requires a broker listener
    };
    let bind_host = match config.listeners[index].bind_host.as_str() {
        "" => "0.0.0.0".to_owned(),
        host => host.to_owned(),
    };
    let host = if template.advertised_host.is_empty() {
        template.local_addr.ip().to_string()
    } else {
        template.advertised_host.clone()
    };
    // Where the other kcoord nodes reach this one (requests for groups it serves, and the
    // JSON API's for them on the HTTP listener, taken to be on the same host).
    let listener = format!("{host}:{}", template.advertised_port);
    let http_port = http.and_then(|l| l.local_addr().ok()).map(|a| a.port());
    let http = http_port.map(|port| format!("{host}:{port}"));
    let gateway = crate::gateway::Gateway::start(settings.clone(), host, listener, http).await?;
    let gateway = Arc::new(gateway);
    let tls = tls.get(index).cloned().flatten();
    let mut ports = gateway_ports::BrokerPorts::new(gateway, template, index, bind_host, tls);
    let bound = ports.bind_new().await?;
    Ok(Some((ports, bound)))
}

/// Starts serving `/metrics` and `/health/*` on the bound HTTP listener, if there is one, last;
/// if its thread cannot start, the node is shut down again.
async fn start_http(
    mut handle: ServerHandle,
    listener: Option<std::net::TcpListener>,
) -> Result<ServerHandle, StartError> {
    if let Some(listener) = listener {
        match crate::http::HttpServer::start(listener, Arc::clone(&handle.state)) {
            Ok(http) => handle.http = Some(http),
            Err(e) => {
                handle.shutdown().await;
                return Err(StartError::Http(e));
            }
        }
    }
    Ok(handle)
}

/// `result`, the topology plugin closed first when it is an error: a start that fails once the
/// plugin is built leaves none of its threads behind.
async fn closing_on_error<T>(
    topology: &TopologyDescriptions,
    result: Result<T, StartError>,
) -> Result<T, StartError> {
    if result.is_err() {
        topology.close().await;
    }
    result
}

/// What the node tells of a bound listener: its address, and the address it advertises (the
/// bound port when none is configured).
fn listener_info(l: &ListenerConfig, listener: &TcpListener) -> Result<ListenerInfo, StartError> {
    let local_addr = listener
        .local_addr()
        .map_err(|source| bind_error(l, source))?;
    Ok(ListenerInfo {
        name: l.name.clone(),
        kind: l.kind,
        security_protocol: l.security_protocol,
        local_addr,
        advertised_host: l.advertised_host.clone(),
        advertised_port: if l.advertised_port == 0 {
            local_addr.port()
        } else {
            l.advertised_port
        },
        upstream_broker: None,
    })
}

/// One acceptor task per bound listener, in config order, with the listener's TLS side.
fn spawn_acceptors(
    bound: Vec<(TcpListener, ListenerInfo)>,
    tls: Vec<Option<Arc<TlsListener>>>,
    state: &Arc<ServerState>,
    quotas: &ConnectionQuotas,
    bulk: &BulkLane,
    shutdown: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    bound
        .into_iter()
        .zip(state.listeners.iter())
        .zip(tls)
        .enumerate()
        .map(|(index, (((listener, _), info), tls))| {
            tokio::spawn(acceptor::run(
                listener,
                Arc::clone(state),
                Arc::clone(info),
                index,
                quotas.clone(),
                acceptor::ConnectionSetup {
                    tls,
                    bulk: bulk.handle(),
                },
                shutdown.clone(),
            ))
        })
        .collect()
}

/// Logs each listener and the shards, once all run.
fn log_running(state: &ServerState) {
    for l in &state.listeners {
        info!(
            listener = %l.name, kind = %l.kind, security_protocol = l.security_protocol.name(),
            address = %l.local_addr,
            advertised = %format!("{}:{}", bracket_ipv6(&l.advertised_host), l.advertised_port),
            "listening"
        );
    }
    info!(
        coordinator_shards = state.coordinators.len(),
        "controller and coordinator shards running"
    );
}

fn bind_http(
    http: &crate::config::http::HttpListener,
) -> Result<std::net::TcpListener, StartError> {
    crate::http::bind(http).map_err(|source| StartError::Bind {
        listener: crate::config::http::KEY.to_owned(),
        address: format!("{}:{}", bracket_ipv6(&http.host), http.port),
        source,
    })
}

/// The TLS side of each listener, in the order of `listeners`: none for PLAINTEXT and
/// SASL_PLAINTEXT.
fn listener_tls(config: &Config) -> Result<Vec<Option<Arc<TlsListener>>>, StartError> {
    config
        .listeners
        .iter()
        .map(|l| match l.security_protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => config
                .ssl
                .iter()
                .find(|s| s.name == l.name)
                .map(|s| Some(TlsListener::new(s)))
                .ok_or_else(|| StartError::NoTlsSettings(l.name.clone())),
            _ => Ok(None),
        })
        .collect()
}

/// `max.connections.per.ip.overrides` by address. Kafka resolves each host once, at startup; a
/// name here applies to every address it resolves to.
async fn resolve_overrides(
    overrides: &[(String, i32)],
) -> Result<HashMap<IpAddr, usize>, StartError> {
    let mut out = HashMap::new();
    for (host, max) in overrides {
        let max = usize::try_from(*max).unwrap_or(0);
        if let Ok(ip) = host.parse::<IpAddr>() {
            out.insert(ip, max);
            continue;
        }
        let addresses = tokio::net::lookup_host((host.as_str(), 0))
            .await
            .map_err(|source| StartError::UnknownHost {
                host: host.clone(),
                source,
            })?;
        for address in addresses {
            out.insert(address.ip(), max);
        }
    }
    Ok(out)
}

async fn bind(l: &ListenerConfig) -> Result<TcpListener, StartError> {
    // An empty host means every interface, as in Kafka.
    let host = if l.bind_host.is_empty() {
        "0.0.0.0"
    } else {
        l.bind_host.as_str()
    };
    TcpListener::bind((host, l.port))
        .await
        .map_err(|source| bind_error(l, source))
}

fn bind_error(l: &ListenerConfig, source: std::io::Error) -> StartError {
    StartError::Bind {
        listener: l.name.clone(),
        address: format!("{}:{}", bracket_ipv6(&l.bind_host), l.port),
        source,
    }
}

impl ServerHandle {
    /// The bound listeners, in config order.
    pub fn listeners(&self) -> impl Iterator<Item = &ListenerInfo> {
        self.state.listeners.iter().map(|l| l.as_ref())
    }

    /// The bound address of the listener with this name (case-insensitive).
    pub fn local_addr(&self, listener: &str) -> Option<SocketAddr> {
        self.listeners()
            .find(|l| l.name.eq_ignore_ascii_case(listener))
            .map(|l| l.local_addr)
    }

    /// The first broker listener's bound address: where clients bootstrap.
    pub fn broker_addr(&self) -> Option<SocketAddr> {
        self.listeners()
            .find(|l| l.kind == ListenerKind::Broker)
            .map(|l| l.local_addr)
    }

    /// The first controller listener's bound address.
    pub fn controller_addr(&self) -> Option<SocketAddr> {
        self.listeners()
            .find(|l| l.kind == ListenerKind::Controller)
            .map(|l| l.local_addr)
    }

    /// The HTTP listener's bound address (`http.listener`), if it is configured.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(crate::http::HttpServer::local_addr)
    }

    /// Shared state: the published topic catalog, the controller and the coordinator shards.
    /// The lane requests in big frames are handled on.
    pub fn bulk(&self) -> Option<crate::rpc::bulk::BulkHandle> {
        self._bulk.handle()
    }

    pub fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// The line the CLI prints once listening (documented in config/README.md):
    /// `kcoord started: node.id=1 listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093`,
    /// followed by ` http=127.0.0.1:8080` when the HTTP listener is configured.
    pub fn startup_line(&self) -> String {
        let listeners: Vec<String> = self
            .listeners()
            .map(|l| format!("{}://{}", l.name, l.local_addr))
            .collect();
        let mut line = format!(
            "kcoord started: node.id={} listeners={}",
            self.state.node_id(),
            listeners.join(",")
        );
        if let Some(http) = &self.http {
            line.push_str(&format!(" http={}", http.shown_addr()));
        }
        line
    }

    /// Stops accepting, lets every connection finish the requests it has read (up to
    /// a grace period), then returns.
    pub async fn shutdown(mut self) {
        // First: nothing scrapes or probes a node that is going away.
        if let Some(http) = self.http.take() {
            http.stop().await;
        }
        let _ = self.shutdown.send(true);
        for acceptor in self.acceptors {
            if let Err(e) = acceptor.await {
                tracing::error!(error = %e, "listener task failed");
            }
        }
        // Only now: the connections' last requests may still have needed a shard.
        let _ = self.stop_background.send(true);
        for task in self.background {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "controller or coordinator task failed");
            }
        }
        // Last: nothing can call the plugin any more.
        self.state.topology.close().await;
    }
}
