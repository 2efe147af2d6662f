//! A client for a cluster: bootstrap, coordinator lookup, and one connection per node.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kcoord_wire::messages::metadata_request::MetadataRequestTopic;
use kcoord_wire::messages::{
    DescribeClusterRequest, DescribeClusterResponse, FindCoordinatorRequest, MetadataRequest,
    MetadataResponse,
};
use kcoord_wire::Request;
use tracing::debug;

use crate::client_config::ClientConfig;
use crate::connection::Connection;
use crate::error::ClientError;

/// FindCoordinator's KeyType for groups; streams groups are groups too.
const KEY_TYPE_GROUP: i8 = 0;
/// FindCoordinator's first version with batched `CoordinatorKeys`.
const FIND_COORDINATOR_BATCHED: i16 = 4;

/// Where a group's coordinator lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordinator {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

impl Coordinator {
    /// `host:port`, with brackets around an IPv6 host.
    pub fn address(&self) -> String {
        node_address(&self.host, self.port)
    }
}

fn node_address(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A connection to a cluster through its bootstrap servers. Cloning shares the connections.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClientConfig,
    /// The bootstrap list as given, to connect again when the bootstrap connection dies.
    bootstrap_servers: String,
    bootstrap: Mutex<Connection>,
    /// Open connections by `host:port`, the bootstrap one included.
    nodes: Mutex<HashMap<String, Connection>>,
    /// Last known coordinator by group id.
    coordinators: Mutex<HashMap<String, Coordinator>>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("bootstrap", &self.bootstrap())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the first reachable address of `bootstrap` (`host:port[,host:port...]`)
    /// and negotiates versions with it.
    pub async fn connect(bootstrap: &str, config: ClientConfig) -> Result<Client, ClientError> {
        let (addr, conn) = connect_any(bootstrap, &config).await?;
        let nodes = HashMap::from([(addr, conn.clone())]);
        Ok(Client {
            inner: Arc::new(Inner {
                config,
                bootstrap_servers: bootstrap.to_string(),
                bootstrap: Mutex::new(conn),
                nodes: Mutex::new(nodes),
                coordinators: Mutex::new(HashMap::new()),
            }),
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The connection to the bootstrap server that answered (possibly closed since; see
    /// [`Client::bootstrap_connection`]).
    pub fn bootstrap(&self) -> Connection {
        locked(&self.inner.bootstrap).clone()
    }

    /// The bootstrap connection, opened again (to the first bootstrap address that answers)
    /// once the old one closed, so that a restarted or briefly unreachable server does not
    /// leave the client without a way to find coordinators.
    pub async fn bootstrap_connection(&self) -> Result<Connection, ClientError> {
        let current = self.bootstrap();
        if !current.is_closed() {
            return Ok(current);
        }
        let (addr, conn) = connect_any(&self.inner.bootstrap_servers, &self.inner.config).await?;
        debug!(addr = %addr, "bootstrapped again");
        *locked(&self.inner.bootstrap) = conn.clone();
        locked(&self.inner.nodes).insert(addr, conn.clone());
        Ok(conn)
    }

    /// A negotiated connection to `host:port`, reused while it stays open.
    pub async fn connection_to(&self, host: &str, port: i32) -> Result<Connection, ClientError> {
        let addr = node_address(host, port);
        if let Some(conn) = locked(&self.inner.nodes)
            .get(&addr)
            .filter(|c| !c.is_closed())
        {
            return Ok(conn.clone());
        }
        let conn = Connection::connect(&addr, self.inner.config.clone()).await?;
        // A SASL connection negotiated before authenticating.
        if conn.server_versions().is_none() {
            conn.negotiate().await?;
        }
        // Two tasks may have raced to connect; the first one in wins and the other is dropped.
        let mut nodes = locked(&self.inner.nodes);
        let kept = match nodes.get(&addr) {
            Some(existing) if !existing.is_closed() => existing.clone(),
            _ => {
                nodes.insert(addr, conn.clone());
                conn
            }
        };
        Ok(kept)
    }

    /// Asks the bootstrap server which node coordinates `group_id`, with batched FindCoordinator
    /// (v4+) or the single-key form (v0-v3), whichever was negotiated.
    pub async fn find_coordinator(&self, group_id: &str) -> Result<Coordinator, ClientError> {
        let conn = &self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<FindCoordinatorRequest>().await?;
        let api = FindCoordinatorRequest::KEY;
        let coordinator = if version >= FIND_COORDINATOR_BATCHED {
            let request = FindCoordinatorRequest {
                key_type: KEY_TYPE_GROUP,
                coordinator_keys: vec![group_id.to_string()],
                ..Default::default()
            };
            let response = conn.send(request, version).await?;
            let Some(found) = response
                .coordinators
                .into_iter()
                .find(|c| c.key == group_id)
            else {
                return Err(ClientError::Protocol(format!(
                    "FindCoordinator v{version} response has no entry for group {group_id:?}"
                )));
            };
            ClientError::check(api, found.error_code, found.error_message.as_deref())?;
            Coordinator {
                node_id: found.node_id,
                host: found.host,
                port: found.port,
            }
        } else {
            let request = FindCoordinatorRequest {
                key: group_id.to_string(),
                ..Default::default()
            };
            let response = conn.send(request, version).await?;
            ClientError::check(api, response.error_code, response.error_message.as_deref())?;
            Coordinator {
                node_id: response.node_id,
                host: response.host,
                port: response.port,
            }
        };
        debug!(group = group_id, node_id = coordinator.node_id, host = %coordinator.host, port = coordinator.port, "found coordinator");
        locked(&self.inner.coordinators).insert(group_id.to_string(), coordinator.clone());
        Ok(coordinator)
    }

    /// A connection to the coordinator of `group_id`, looked up once and then cached.
    pub async fn coordinator(&self, group_id: &str) -> Result<Connection, ClientError> {
        self.coordinator_for(group_id).await.map(|(_, conn)| conn)
    }

    /// The coordinator of `group_id` and a connection to it, as [`Client::coordinator`].
    pub async fn coordinator_for(
        &self,
        group_id: &str,
    ) -> Result<(Coordinator, Connection), ClientError> {
        let known = locked(&self.inner.coordinators).get(group_id).cloned();
        let coordinator = match known {
            Some(c) => c,
            None => self.find_coordinator(group_id).await?,
        };
        let conn = self
            .connection_to(&coordinator.host, coordinator.port)
            .await?;
        Ok((coordinator, conn))
    }

    /// Drops the cached coordinator of `group_id`, e.g. after NOT_COORDINATOR, so the next
    /// [`Client::coordinator`] looks it up again.
    pub fn forget_coordinator(&self, group_id: &str) {
        locked(&self.inner.coordinators).remove(group_id);
    }

    /// Metadata for `topics`, or for every topic when `None`. Never asks the server to create
    /// topics (from v4; before v4 every Metadata request allows it). Per-topic errors are left in
    /// the response for the caller.
    pub async fn metadata(
        &self,
        topics: Option<Vec<String>>,
    ) -> Result<MetadataResponse, ClientError> {
        self.metadata_request(topics, false).await
    }

    /// Metadata for `topics`, asking the server to create the unknown ones
    /// (AllowAutoTopicCreation), as a Kafka producer asks. A server creates them only when its
    /// `auto.create.topics.enable` is true, and, like Kafka 4.4, still answers
    /// UNKNOWN_TOPIC_OR_PARTITION for them in this response: the next Metadata shows them.
    pub async fn metadata_allowing_auto_create(
        &self,
        topics: Vec<String>,
    ) -> Result<MetadataResponse, ClientError> {
        self.metadata_request(Some(topics), true).await
    }

    async fn metadata_request(
        &self,
        topics: Option<Vec<String>>,
        allow_auto_topic_creation: bool,
    ) -> Result<MetadataResponse, ClientError> {
        let conn = &self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<MetadataRequest>().await?;
        let topics = match topics {
            // v0 has no null array: there an empty list means all topics.
            None if version == 0 => Some(Vec::new()),
            None => None,
            Some(names) => Some(
                names
                    .into_iter()
                    .map(|name| MetadataRequestTopic {
                        name: Some(name),
                        ..Default::default()
                    })
                    .collect(),
            ),
        };
        let request = MetadataRequest {
            topics,
            // The field exists from v4; before that it must keep its default (true).
            allow_auto_topic_creation: allow_auto_topic_creation || version < 4,
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        ClientError::check(MetadataRequest::KEY, response.error_code, None)?;
        Ok(response)
    }

    /// DescribeCluster for the brokers of the cluster.
    pub async fn describe_cluster(&self) -> Result<DescribeClusterResponse, ClientError> {
        let response = self
            .bootstrap_connection()
            .await?
            .send_negotiated(DescribeClusterRequest::default())
            .await?;
        ClientError::check(
            DescribeClusterRequest::KEY,
            response.error_code,
            response.error_message.as_deref(),
        )?;
        Ok(response)
    }
}

/// Connects to the first address of `bootstrap` that answers ApiVersions.
async fn connect_any(
    bootstrap: &str,
    config: &ClientConfig,
) -> Result<(String, Connection), ClientError> {
    let mut errors = Vec::new();
    for addr in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        let attempt = async {
            let conn = Connection::connect(addr, config.clone()).await?;
            if conn.server_versions().is_none() {
                conn.negotiate().await?;
            }
            Ok::<_, ClientError>(conn)
        };
        match attempt.await {
            Ok(conn) => {
                debug!(addr, "bootstrapped");
                return Ok((addr.to_string(), conn));
            }
            // Refused credentials or an untrusted certificate: every address would say the
            // same, and the caller needs the reason itself (Kafka fails at once too).
            Err(e) if e.is_authentication() => return Err(e),
            Err(e) => {
                debug!(addr, error = %e, "bootstrap address failed");
                errors.push(e.to_string());
            }
        }
    }
    if errors.is_empty() {
        errors.push("no address given".to_string());
    }
    Err(ClientError::NoBrokerAvailable {
        bootstrap: bootstrap.to_string(),
        errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_bracket_ipv6_hosts() {
        assert_eq!(
            Coordinator {
                node_id: 1,
                host: "localhost".into(),
                port: 9092
            }
            .address(),
            "localhost:9092"
        );
        assert_eq!(
            Coordinator {
                node_id: 1,
                host: "::1".into(),
                port: 9092
            }
            .address(),
            "[::1]:9092"
        );
    }
}
