//! DescribeConfigs (key 32). kcoord answers a BROKER resource naming a registered broker with
//! the static configs it registered with (KIP-1326). The request goes to the bootstrap server:
//! kcoord keeps every registration. (Kafka's Java admin client sends a broker's
//! DescribeConfigs to that broker instead.)

use kcoord_wire::messages::describe_configs_request::DescribeConfigsResource;
use kcoord_wire::messages::DescribeConfigsRequest;
use kcoord_wire::Request;

use crate::admin::kafka_result;
use crate::client::Client;
use crate::error::ClientError;

/// `ConfigResource.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigResourceType {
    Topic,
    Broker,
}

impl ConfigResourceType {
    pub fn id(self) -> i8 {
        match self {
            ConfigResourceType::Topic => 2,
            ConfigResourceType::Broker => 4,
        }
    }
}

/// `ConfigEntry.ConfigSource`, as far as kcoord reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    DynamicTopicConfig,
    StaticBrokerConfig,
    /// Any other source id (Kafka's `UNKNOWN` is -1).
    Other(i8),
}

impl ConfigSource {
    pub fn from_id(id: i8) -> ConfigSource {
        match id {
            1 => ConfigSource::DynamicTopicConfig,
            4 => ConfigSource::StaticBrokerConfig,
            other => ConfigSource::Other(other),
        }
    }

    /// Kafka's enum name, as `kafka-configs --describe` prints it.
    pub fn name(self) -> String {
        match self {
            ConfigSource::DynamicTopicConfig => "DYNAMIC_TOPIC_CONFIG".to_string(),
            ConfigSource::StaticBrokerConfig => "STATIC_BROKER_CONFIG".to_string(),
            ConfigSource::Other(id) => format!("UNKNOWN({id})"),
        }
    }
}

/// One config of a described resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    /// `None` is a null value (e.g. a static config whose value is not set).
    pub value: Option<String>,
    pub source: ConfigSource,
    pub read_only: bool,
    pub sensitive: bool,
}

impl Client {
    /// The static configs broker `broker_id` registered with, by name.
    pub async fn describe_broker_configs(
        &self,
        broker_id: i32,
    ) -> Result<Vec<ConfigEntry>, ClientError> {
        self.describe_configs(ConfigResourceType::Broker, &broker_id.to_string(), None)
            .await
    }

    /// The configs of one resource, all of them or only `keys`, by name.
    pub async fn describe_configs(
        &self,
        resource: ConfigResourceType,
        name: &str,
        keys: Option<&[&str]>,
    ) -> Result<Vec<ConfigEntry>, ClientError> {
        let conn = self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<DescribeConfigsRequest>().await?;
        let request = DescribeConfigsRequest {
            resources: vec![DescribeConfigsResource {
                resource_type: resource.id(),
                resource_name: name.to_string(),
                configuration_keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        let Some(result) = response
            .results
            .into_iter()
            .find(|r| r.resource_type == resource.id() && r.resource_name == name)
        else {
            return Err(ClientError::Protocol(format!(
                "the DescribeConfigs response has no result for resource {name:?}"
            )));
        };
        kafka_result(
            DescribeConfigsRequest::KEY,
            result.error_code,
            result.error_message,
        )?;
        let mut entries: Vec<ConfigEntry> = result
            .configs
            .into_iter()
            .map(|c| ConfigEntry {
                name: c.name,
                value: c.value,
                source: ConfigSource::from_id(c.config_source),
                read_only: c.read_only,
                sensitive: c.is_sensitive,
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}
