//! CreateTopics and DeleteTopics. Both go to the bootstrap server: kcoord serves them on its
//! broker listener, and a Kafka broker forwards them to its controller.

use kcoord_wire::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
use kcoord_wire::messages::{CreateTopicsRequest, DeleteTopicsRequest};
use kcoord_wire::Request;
use uuid::Uuid;

use crate::admin::{kafka_result, TopicResult};
use crate::client::Client;
use crate::error::ClientError;

/// CreateTopics' first version that accepts -1 (the broker's default) for partitions and
/// replication factor.
const CREATE_TOPICS_DEFAULTS: i16 = 4;
/// DeleteTopics' first version naming topics by `Topics` (name or id) instead of `TopicNames`.
const DELETE_TOPICS_BY_STATE: i16 = 6;

/// A topic to create (Kafka's `NewTopic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    pub name: String,
    /// -1 = the broker's default.
    pub num_partitions: i32,
    /// -1 = the broker's default.
    pub replication_factor: i16,
    pub configs: Vec<(String, String)>,
}

impl NewTopic {
    pub fn new(name: impl Into<String>, num_partitions: i32, replication_factor: i16) -> Self {
        NewTopic {
            name: name.into(),
            num_partitions,
            replication_factor,
            configs: Vec::new(),
        }
    }

    /// A topic with the broker's default partition count and replication factor.
    pub fn with_defaults(name: impl Into<String>) -> Self {
        NewTopic::new(name, -1, -1)
    }

    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.push((key.into(), value.into()));
        self
    }
}

/// What the server says about a topic it created (or would create, with validate-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    /// CreateTopics v7+; `None` before, or when the server sent the null uuid.
    pub topic_id: Option<Uuid>,
    /// v5+; -1 when unknown.
    pub num_partitions: i32,
    /// v5+; -1 when unknown.
    pub replication_factor: i16,
    /// v5+: the topic's configs as `(name, value)`.
    pub configs: Vec<(String, Option<String>)>,
}

impl Client {
    /// Creates topics; one result per topic in request order, the failures as
    /// [`ClientError::Kafka`] (e.g. TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS). `Err` when the
    /// request itself failed.
    pub async fn create_topics(
        &self,
        topics: &[NewTopic],
        validate_only: bool,
    ) -> Result<Vec<TopicResult<CreatedTopic>>, ClientError> {
        let conn = self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<CreateTopicsRequest>().await?;
        if version < CREATE_TOPICS_DEFAULTS {
            if let Some(t) = topics
                .iter()
                .find(|t| t.num_partitions == -1 || t.replication_factor == -1)
            {
                return Err(ClientError::Unsupported {
                    api: CreateTopicsRequest::KEY,
                    reason: format!(
                        "topic {:?} asks for the broker's default partitions or replication factor, which CreateTopics v{version} cannot express (v{CREATE_TOPICS_DEFAULTS}+)",
                        t.name
                    ),
                });
            }
        }
        let request = CreateTopicsRequest {
            topics: topics
                .iter()
                .map(|t| CreatableTopic {
                    name: t.name.clone(),
                    num_partitions: t.num_partitions,
                    replication_factor: t.replication_factor,
                    configs: t
                        .configs
                        .iter()
                        .map(|(name, value)| CreatableTopicConfig {
                            name: name.clone(),
                            value: Some(value.clone()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            timeout_ms: timeout_ms(self),
            validate_only,
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        Ok(topics
            .iter()
            .map(|t| {
                // A name given twice gets the one answer the server gives it (Kafka refuses
                // duplicates with INVALID_REQUEST).
                let result = match response.topics.iter().find(|a| a.name == t.name) {
                    None => Err(ClientError::Protocol(format!(
                        "the CreateTopics response has no result for topic {:?}",
                        t.name
                    ))),
                    Some(a) => kafka_result(
                        CreateTopicsRequest::KEY,
                        a.error_code,
                        a.error_message.clone(),
                    )
                    .map(|()| CreatedTopic {
                        topic_id: Some(a.topic_id).filter(|id| !id.is_nil()),
                        num_partitions: a.num_partitions,
                        replication_factor: a.replication_factor,
                        configs: a
                            .configs
                            .iter()
                            .flatten()
                            .map(|c| (c.name.clone(), c.value.clone()))
                            .collect(),
                    }),
                };
                TopicResult {
                    name: t.name.clone(),
                    result,
                }
            })
            .collect())
    }

    /// Deletes topics by name; one result per topic in request order (e.g.
    /// UNKNOWN_TOPIC_OR_PARTITION as a [`ClientError::Kafka`]). `Err` when the request itself
    /// failed.
    pub async fn delete_topics(&self, names: &[&str]) -> Result<Vec<TopicResult<()>>, ClientError> {
        let conn = self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<DeleteTopicsRequest>().await?;
        let owned: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let request = if version >= DELETE_TOPICS_BY_STATE {
            DeleteTopicsRequest {
                topics: owned
                    .iter()
                    .map(|n| DeleteTopicState {
                        name: Some(n.clone()),
                        topic_id: Uuid::nil(),
                        ..Default::default()
                    })
                    .collect(),
                timeout_ms: timeout_ms(self),
                ..Default::default()
            }
        } else {
            DeleteTopicsRequest {
                topic_names: owned.clone(),
                timeout_ms: timeout_ms(self),
                ..Default::default()
            }
        };
        let response = conn.send(request, version).await?;
        Ok(owned
            .into_iter()
            .map(|name| {
                let result = match response
                    .responses
                    .iter()
                    .find(|r| r.name.as_deref() == Some(name.as_str()))
                {
                    None => Err(ClientError::Protocol(format!(
                        "the DeleteTopics response has no result for topic {name:?}"
                    ))),
                    Some(r) => kafka_result(
                        DeleteTopicsRequest::KEY,
                        r.error_code,
                        r.error_message.clone(),
                    ),
                };
                TopicResult { name, result }
            })
            .collect())
    }
}

/// The server-side timeout of topic operations: the client's request timeout.
fn timeout_ms(client: &Client) -> i32 {
    i32::try_from(client.config().request_timeout.as_millis()).unwrap_or(i32::MAX)
}
