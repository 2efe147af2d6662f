//! The broker side of KIP-1326: register a broker with a KRaft-style controller, reporting its
//! non-sensitive static configs, then keep its session alive with heartbeats.
//!
//! [`register_broker`] reads what a Kafka broker would take from its `server.properties`
//! (`node.id`, listeners, `broker.rack`, ...), negotiates versions with ApiVersions on the
//! controller connection and sends BrokerRegistration at the highest common version. Only v6
//! carries StaticConfigs: the file's configs plus Kafka's defaults, without any sensitive one
//! (see [`static_configs`] for the rules and the list). [`RegisteredBroker::start_heartbeats`]
//! then heartbeats on `broker.heartbeat.interval.ms` and reports fenced/unfenced through a
//! [`BrokerHandle`], which can also shut the broker down (WantShutDown).
//!
//! ```no_run
//! # async fn example() -> Result<(), kcoord_client::broker::BrokerError> {
//! use std::time::Duration;
//! use kcoord_client::broker::{register_broker, BrokerProperties, RegistrationOptions};
//!
//! let properties = BrokerProperties::load("config/broker.properties")?;
//! let broker = register_broker(&properties, "127.0.0.1:9093", RegistrationOptions::default()).await?;
//! println!("broker {} registered with epoch {} at v{}", broker.broker_id, broker.epoch, broker.version);
//! let handle = broker.start_heartbeats();
//! handle.wait_unfenced(Duration::from_secs(10)).await?;
//! handle.shut_down(Duration::from_secs(10)).await?;
//! # Ok(())
//! # }
//! ```

mod handle;
mod listeners;
mod properties;
pub mod static_configs;

use std::time::Duration;

use kcoord_wire::messages::broker_registration_request::{Feature, StaticConfig};
use kcoord_wire::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    DescribeClusterRequest,
};
use kcoord_wire::{Message, Request};
use tracing::debug;
use uuid::Uuid;

use crate::client_config::ClientConfig;
use crate::connection::Connection;
use crate::error::ClientError;

pub use handle::{BrokerHandle, BrokerStatus};
pub use listeners::{parse_listeners, BrokerListenerConfig};
pub use properties::BrokerProperties;
pub use static_configs::{
    collect_static_configs, is_sensitive_config, DEFAULT_CONFIGS, PASSWORD_CONFIGS,
};

/// The first BrokerRegistration version with StaticConfigs.
pub const STATIC_CONFIGS_VERSION: i16 = 6;
/// Before v4, features whose minimum is 0 must be left out (KAFKA-17492).
const MIN_ZERO_FEATURES_VERSION: i16 = 4;
/// DescribeCluster's EndpointType for controllers (KIP-919).
const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}line {line}: {reason}", path.as_ref().map(|p| format!("{p}: ")).unwrap_or_default())]
    Properties {
        path: Option<String>,
        line: usize,
        reason: String,
    },
    #[error("invalid {key}: {reason}")]
    Config { key: String, reason: String },
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl BrokerError {
    fn config(key: &str, reason: impl Into<String>) -> Self {
        BrokerError::Config {
            key: key.to_string(),
            reason: reason.into(),
        }
    }
}

/// How to register, beyond what the properties say.
#[derive(Debug, Clone)]
pub struct RegistrationOptions {
    /// Settings of the controller connection.
    pub client: ClientConfig,
    /// The cluster id to register with. Default: the `cluster.id` property, else the id the
    /// controller reports in DescribeCluster.
    pub cluster_id: Option<String>,
    /// Default: a random one, as each Kafka broker process draws.
    pub incarnation_id: Option<Uuid>,
    /// Default: one fresh random directory id (never a reserved one).
    pub log_dirs: Option<Vec<Uuid>>,
    /// The `metadata.version` levels the broker supports. Default 7 (3.3-IV3) to 34 (4.5-IV0).
    pub metadata_version_range: (i16, i16),
    /// The highest BrokerRegistration version to use, e.g. 5 to act as a broker that predates
    /// KIP-1326. Default: whatever the controller and this client share.
    pub max_registration_version: Option<i16>,
    /// Default: the `broker.heartbeat.interval.ms` property, else Kafka's 2000 ms.
    pub heartbeat_interval: Option<Duration>,
}

impl Default for RegistrationOptions {
    fn default() -> Self {
        RegistrationOptions {
            client: ClientConfig::new("kcoord-broker"),
            cluster_id: None,
            incarnation_id: None,
            log_dirs: None,
            metadata_version_range: (7, 34),
            max_registration_version: None,
            heartbeat_interval: None,
        }
    }
}

/// A broker the controller accepted.
#[derive(Debug, Clone)]
pub struct RegisteredBroker {
    pub broker_id: i32,
    pub cluster_id: String,
    pub incarnation_id: Uuid,
    /// The broker epoch the controller assigned.
    pub epoch: i64,
    /// The BrokerRegistration version the request was sent at.
    pub version: i16,
    /// The request as it was sent (no StaticConfigs below v6).
    pub request: BrokerRegistrationRequest,
    pub heartbeat_interval: Duration,
    connection: Connection,
}

/// A random id that Kafka would not reserve (`DirectoryId.random`).
fn random_directory_id() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        let value = id.as_u128();
        let reserved = (value >> 64) == 0 && (value as u64 as i64) < 100;
        if !reserved {
            return id;
        }
    }
}

fn parse_number<T: std::str::FromStr>(
    properties: &BrokerProperties,
    key: &str,
) -> Result<Option<T>, BrokerError> {
    match properties.get(key).map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| BrokerError::config(key, format!("{text:?} is not a number"))),
    }
}

/// Registers the broker `properties` describe with the controller at `controller_addr`.
pub async fn register_broker(
    properties: &BrokerProperties,
    controller_addr: &str,
    options: RegistrationOptions,
) -> Result<RegisteredBroker, BrokerError> {
    let broker_id = broker_id(properties)?;
    let listeners = listeners::broker_listeners(properties)?;
    let heartbeat_interval = match options.heartbeat_interval {
        Some(interval) => interval,
        None => Duration::from_millis(
            parse_number::<u64>(properties, "broker.heartbeat.interval.ms")?.unwrap_or(2_000),
        ),
    };

    let connection = Connection::connect(controller_addr, options.client.clone()).await?;
    connection.negotiate().await?;
    let version = registration_version(&connection, options.max_registration_version).await?;
    let cluster_id = match options
        .cluster_id
        .clone()
        .or_else(|| properties.get("cluster.id").map(str::to_string))
    {
        Some(id) => id,
        None => describe_cluster_id(&connection).await?,
    };

    let features = supported_features(options.metadata_version_range, version);
    let static_configs = static_configs(properties, version);
    let incarnation_id = options.incarnation_id.unwrap_or_else(Uuid::new_v4);
    let request = BrokerRegistrationRequest {
        broker_id,
        cluster_id: cluster_id.clone(),
        incarnation_id,
        listeners: listeners
            .into_iter()
            .map(BrokerListenerConfig::into_request)
            .collect(),
        features,
        rack: properties.get("broker.rack").map(str::to_string),
        log_dirs: options
            .log_dirs
            .clone()
            .unwrap_or_else(|| vec![random_directory_id()]),
        static_configs,
        ..Default::default()
    };
    debug!(
        broker_id,
        version,
        static_configs = request.static_configs.len(),
        controller = controller_addr,
        "registering broker"
    );
    let response = connection.send(request.clone(), version).await?;
    ClientError::check(BrokerRegistrationRequest::KEY, response.error_code, None)?;
    Ok(RegisteredBroker {
        broker_id,
        cluster_id,
        incarnation_id,
        epoch: response.broker_epoch,
        version,
        request,
        heartbeat_interval,
        connection,
    })
}

/// `node.id`, or `broker.id` when it is not set.
fn broker_id(properties: &BrokerProperties) -> Result<i32, BrokerError> {
    match parse_number::<i32>(properties, "node.id")? {
        Some(id) => Ok(id),
        None => parse_number::<i32>(properties, "broker.id")?
            .ok_or_else(|| BrokerError::config("node.id", "missing")),
    }
}

/// The BrokerRegistration version both sides know, at most `max` when given.
async fn registration_version(
    connection: &Connection,
    max: Option<i16>,
) -> Result<i16, BrokerError> {
    let version = connection
        .negotiated_version::<BrokerRegistrationRequest>()
        .await?;
    let Some(max) = max else {
        return Ok(version);
    };
    if max < BrokerRegistrationRequest::VERSIONS.min {
        return Err(BrokerError::config(
            "max_registration_version",
            format!("v{max} does not exist"),
        ));
    }
    Ok(version.min(max))
}

/// The features the broker supports: `metadata.version` from `min` to `max`; a request
/// `version` below [`MIN_ZERO_FEATURES_VERSION`] leaves out a feature whose minimum is 0.
fn supported_features((min, max): (i16, i16), version: i16) -> Vec<Feature> {
    let mut features = vec![Feature {
        name: "metadata.version".into(),
        min_supported_version: min,
        max_supported_version: max,
        ..Default::default()
    }];
    if version < MIN_ZERO_FEATURES_VERSION {
        features.retain(|f| f.min_supported_version != 0);
    }
    features
}

/// KIP-1326's StaticConfigs, for the request versions that carry them.
fn static_configs(properties: &BrokerProperties, version: i16) -> Vec<StaticConfig> {
    if version < STATIC_CONFIGS_VERSION {
        return Vec::new();
    }
    collect_static_configs(properties)
        .into_iter()
        .map(|(name, value)| StaticConfig {
            name,
            value,
            ..Default::default()
        })
        .collect()
}

/// The cluster id a controller reports in DescribeCluster (controller endpoints from v1).
async fn describe_cluster_id(connection: &Connection) -> Result<String, BrokerError> {
    let version = connection
        .negotiated_version::<DescribeClusterRequest>()
        .await
        .map_err(|e| {
            BrokerError::config(
                "cluster.id",
                format!("not set, and the controller cannot tell it ({e})"),
            )
        })?;
    let request = DescribeClusterRequest {
        endpoint_type: if version >= 1 {
            ENDPOINT_TYPE_CONTROLLER
        } else {
            1
        },
        ..Default::default()
    };
    let response = connection.send(request, version).await?;
    ClientError::check(
        DescribeClusterRequest::KEY,
        response.error_code,
        response.error_message.as_deref(),
    )?;
    Ok(response.cluster_id)
}

impl RegisteredBroker {
    /// The static configs the registration carried (empty below v6).
    pub fn static_configs_sent(&self) -> &[StaticConfig] {
        &self.request.static_configs
    }

    /// The controller connection.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// One BrokerHeartbeat. `metadata_offset` is what the broker reports as applied; see
    /// [`RegisteredBroker::metadata_offset`]. A non-zero error code is an error.
    pub async fn heartbeat_once(
        &self,
        metadata_offset: i64,
        want_fence: bool,
        want_shut_down: bool,
    ) -> Result<BrokerHeartbeatResponse, ClientError> {
        let request = BrokerHeartbeatRequest {
            broker_id: self.broker_id,
            broker_epoch: self.epoch,
            current_metadata_offset: metadata_offset,
            want_fence,
            want_shut_down,
            ..Default::default()
        };
        let response = self.connection.send_negotiated(request).await?;
        ClientError::check(BrokerHeartbeatRequest::KEY, response.error_code, None)?;
        Ok(response)
    }

    /// The metadata offset this broker reports. A Kafka broker replicates the metadata log and
    /// reports how far it got; a kcoord broker replicates nothing, so it reports the offset of
    /// its own registration, which (with no shutdown clean-up records in the batch, as with
    /// kcoord's controller) is its broker epoch. That is what lets the controller unfence it.
    pub fn metadata_offset(&self) -> i64 {
        self.epoch
    }

    /// Heartbeats on a task every [`RegisteredBroker::heartbeat_interval`], starting now.
    pub fn start_heartbeats(self) -> BrokerHandle {
        handle::start(self)
    }
}
