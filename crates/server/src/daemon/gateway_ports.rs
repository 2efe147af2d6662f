//! Gateway mode's broker ports: one listener per upstream broker, at
//! `gateway.broker.port.start + id` on the host of kcoord's broker listener, opened at start
//! for the brokers the upstream Metadata lists and again for new ones each
//! `upstream.metadata.max.age.ms`, or within a second of a forwarded answer naming a broker not
//! learnt yet. Each serves like the broker listener it copies (security
//! protocol, TLS, SASL, quotas), except that its connections forward to their broker.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{error, info, warn};

use super::StartError;
use crate::config::ListenerKind;
use crate::gateway::Gateway;
use crate::net::acceptor::{self, ConnectionSetup};
use crate::net::limiter::ConnectionQuotas;
use crate::net::tls::TlsListener;
use crate::rpc::bulk::BulkHandle;
use crate::runtime::cluster::ListenerInfo;
use crate::state::ServerState;

/// The least time between two refreshes of the upstream brokers that answers asked for.
const SOONEST_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// What every broker port is served with.
pub(super) struct BrokerPorts {
    gateway: Arc<Gateway>,
    /// The broker listener the ports copy, and its place in `listeners` (for the quotas).
    template: Arc<ListenerInfo>,
    index: usize,
    bind_host: String,
    tls: Option<Arc<TlsListener>>,
    open: BTreeSet<i32>,
}

/// What serving needs beyond the ports themselves.
pub(super) struct Serving {
    pub state: Arc<ServerState>,
    pub quotas: ConnectionQuotas,
    pub bulk: Option<BulkHandle>,
    pub shutdown: watch::Receiver<bool>,
}

impl Serving {
    pub(super) fn new(
        state: &Arc<ServerState>,
        quotas: ConnectionQuotas,
        bulk: &crate::rpc::bulk::BulkLane,
        shutdown: watch::Receiver<bool>,
    ) -> Serving {
        Serving {
            state: Arc::clone(state),
            quotas,
            bulk: bulk.handle(),
            shutdown,
        }
    }
}

impl BrokerPorts {
    pub(super) fn new(
        gateway: Arc<Gateway>,
        template: Arc<ListenerInfo>,
        index: usize,
        bind_host: String,
        tls: Option<Arc<TlsListener>>,
    ) -> BrokerPorts {
        BrokerPorts {
            gateway,
            template,
            index,
            bind_host,
            tls,
            open: BTreeSet::new(),
        }
    }

    pub(super) fn gateway(&self) -> Arc<Gateway> {
        Arc::clone(&self.gateway)
    }

    /// Binds the port of every upstream broker not served yet.
    pub(super) async fn bind_new(
        &mut self,
    ) -> Result<Vec<(TcpListener, ListenerInfo)>, StartError> {
        let view = self.gateway.view();
        let new: Vec<i32> = view
            .brokers
            .keys()
            .copied()
            .filter(|id| !self.open.contains(id))
            .collect();
        let mut bound = Vec::new();
        for id in new {
            let port = self
                .gateway
                .endpoints()
                .port(id)
                .map_err(|e| StartError::Gateway(e.into()))?;
            let address = format!("{}:{port}", self.bind_host);
            let listener = TcpListener::bind((self.bind_host.as_str(), port))
                .await
                .map_err(|source| StartError::Bind {
                    listener: format!("{} (upstream broker {id})", self.template.name),
                    address: address.clone(),
                    source,
                })?;
            let local_addr = listener.local_addr().map_err(|source| StartError::Bind {
                listener: format!("{} (upstream broker {id})", self.template.name),
                address,
                source,
            })?;
            info!(upstream_broker = id, address = %local_addr, "serving an upstream broker");
            bound.push((
                listener,
                ListenerInfo {
                    local_addr,
                    advertised_port: port,
                    upstream_broker: Some(id),
                    ..(*self.template).clone()
                },
            ));
            self.open.insert(id);
        }
        Ok(bound)
    }

    fn serve(
        &self,
        (listener, info): (TcpListener, ListenerInfo),
        serving: &Serving,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        acceptor::run(
            listener,
            Arc::clone(&serving.state),
            Arc::new(info),
            self.index,
            serving.quotas.clone(),
            ConnectionSetup {
                tls: self.tls.clone(),
                bulk: serving.bulk.clone(),
            },
            serving.shutdown.clone(),
        )
    }

    /// Serves `bound`, then learns the upstream brokers every `upstream.metadata.max.age.ms`
    /// (each second while a feature change settles) and opens the ports of new ones, until
    /// shutdown; then waits for every port's
    /// connections to finish.
    pub(super) fn spawn(
        mut self,
        bound: Vec<(TcpListener, ListenerInfo)>,
        mut serving: Serving,
    ) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut acceptors = JoinSet::new();
            for port in bound {
                acceptors.spawn(self.serve(port, &serving));
            }
            let every = self.gateway.settings().metadata_max_age;
            let gateway = self.gateway();
            loop {
                // While a feature change settles, each second (its levels show in ApiVersions).
                let next = match gateway.features_settling() {
                    true => SOONEST_REFRESH,
                    false => every,
                };
                tokio::select! {
                    _ = crate::support::shutdown::stopped(&mut serving.shutdown) => break,
                    () = tokio::time::sleep(next) => {}
                    () = gateway.brokers_wanted() => {
                        // However often answers name a broker not learnt yet, at most one
                        // refresh a second.
                        tokio::time::sleep(SOONEST_REFRESH).await;
                    }
                }
                if let Err(e) = self.gateway.refresh().await {
                    warn!(error = %e, "cannot refresh the upstream brokers; keeping the last ones");
                    continue;
                }
                match self.bind_new().await {
                    Ok(new) => {
                        for port in new {
                            acceptors.spawn(self.serve(port, &serving));
                        }
                    }
                    Err(e) => error!(error = %e, "cannot serve a new upstream broker"),
                }
            }
            while acceptors.join_next().await.is_some() {}
        })
    }
}

/// The broker listener the ports copy: the first, where clients bootstrap.
pub(super) fn template(listeners: &[Arc<ListenerInfo>]) -> Option<(usize, Arc<ListenerInfo>)> {
    listeners
        .iter()
        .enumerate()
        .find(|(_, l)| l.kind == ListenerKind::Broker)
        .map(|(i, l)| (i, Arc::clone(l)))
}
