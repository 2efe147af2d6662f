//! What the producer and the consumer need to know about a topic: its id (for Produce v13 and
//! Fetch v13+), its partitions and their leaders, and where the leaders listen.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use kcoord_wire::messages::{MetadataRequest, MetadataResponse};
use kcoord_wire::{ErrorCode, Request};
use uuid::Uuid;

use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;

/// One topic as Metadata described it.
#[derive(Debug, Clone)]
pub(crate) struct TopicMeta {
    pub name: String,
    /// The nil uuid when the server sent none (Metadata before v10).
    pub id: Uuid,
    /// Partition index → leader node id (-1: no leader).
    pub partitions: BTreeMap<i32, i32>,
    /// Node id → (host, port).
    pub brokers: HashMap<i32, (String, i32)>,
}

impl TopicMeta {
    /// Looks `topic` up with Metadata. A topic error (UNKNOWN_TOPIC_OR_PARTITION,
    /// INVALID_TOPIC_EXCEPTION, TOPIC_AUTHORIZATION_FAILED, ...) is a [`ClientError::Kafka`] of
    /// Metadata naming the topic.
    pub async fn fetch(
        client: &Client,
        topic: &str,
        allow_auto_create: bool,
    ) -> Result<TopicMeta, ClientError> {
        let response = if allow_auto_create {
            client
                .metadata_allowing_auto_create(vec![topic.to_string()])
                .await?
        } else {
            client.metadata(Some(vec![topic.to_string()])).await?
        };
        TopicMeta::from_response(response, topic)
    }

    pub fn from_response(
        response: MetadataResponse,
        topic: &str,
    ) -> Result<TopicMeta, ClientError> {
        let Some(t) = response
            .topics
            .into_iter()
            .find(|t| t.name.as_deref() == Some(topic))
        else {
            return Err(ClientError::Protocol(format!(
                "Metadata response has no entry for topic {topic:?}"
            )));
        };
        if t.error_code != ErrorCode::NONE.code() {
            return Err(ClientError::Kafka {
                api: MetadataRequest::KEY,
                code: t.error_code,
                message: Some(topic_error_text(t.error_code, topic)),
            });
        }
        let brokers = response
            .brokers
            .into_iter()
            .map(|b| (b.node_id, (b.host, b.port)))
            .collect();
        let partitions = t
            .partitions
            .into_iter()
            .map(|p| {
                (
                    p.partition_index,
                    if p.error_code == 0 { p.leader_id } else { -1 },
                )
            })
            .collect();
        Ok(TopicMeta {
            name: topic.to_string(),
            id: t.topic_id,
            partitions,
            brokers,
        })
    }

    /// The partition indexes, in order.
    pub fn partition_ids(&self) -> Vec<i32> {
        self.partitions.keys().copied().collect()
    }

    /// The leader of `partition` and where it listens.
    pub fn leader(&self, partition: i32) -> Result<(i32, &str, i32), ClientError> {
        let Some(&leader) = self.partitions.get(&partition) else {
            return Err(ClientError::Kafka {
                api: MetadataRequest::KEY,
                code: ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(),
                message: Some(format!(
                    "Partition {}-{partition} does not exist: the topic has {} partitions",
                    self.name,
                    self.partitions.len()
                )),
            });
        };
        match self.brokers.get(&leader) {
            Some((host, port)) => Ok((leader, host, *port)),
            None => Err(ClientError::Kafka {
                api: MetadataRequest::KEY,
                code: ErrorCode::LEADER_NOT_AVAILABLE.code(),
                message: Some(format!("Partition {}-{partition} has no leader that Metadata lists (leader id {leader})", self.name)),
            }),
        }
    }

    /// A connection to the leader of `partition`.
    pub async fn leader_connection(
        &self,
        client: &Client,
        partition: i32,
    ) -> Result<Connection, ClientError> {
        let (_, host, port) = self.leader(partition)?;
        client.connection_to(host, port).await
    }
}

/// Kafka's default message for the code with the topic named, so that a tool's one-line error
/// says which topic.
fn topic_error_text(code: i16, topic: &str) -> String {
    let text = ErrorCode::from_code(code).map_or("", ErrorCode::message);
    if text.is_empty() {
        format!("topic '{topic}'")
    } else {
        format!("{} (topic '{topic}')", text.trim_end_matches('.'))
    }
}

/// Topics looked up so far, shared by the calls of one producer or consumer; an entry is
/// dropped when an answer says it is stale.
#[derive(Debug, Default)]
pub(crate) struct TopicCache {
    topics: Mutex<HashMap<String, Arc<TopicMeta>>>,
}

impl TopicCache {
    /// The cached description of `topic`, or a fresh one.
    pub async fn get(&self, client: &Client, topic: &str) -> Result<Arc<TopicMeta>, ClientError> {
        self.get_with(client, topic, &[]).await
    }

    /// [`TopicCache::get`], looked up again when the cached description lacks one of
    /// `partitions` (the topic may have grown since).
    pub async fn get_with(
        &self,
        client: &Client,
        topic: &str,
        partitions: &[i32],
    ) -> Result<Arc<TopicMeta>, ClientError> {
        let cached = self
            .topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .cloned();
        if let Some(meta) =
            cached.filter(|m| partitions.iter().all(|p| m.partitions.contains_key(p)))
        {
            return Ok(meta);
        }
        let meta = Arc::new(TopicMeta::fetch(client, topic, false).await?);
        self.topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_string(), meta.clone());
        Ok(meta)
    }

    pub fn invalidate(&self, topic: &str) {
        self.topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(topic);
    }
}

/// True for the errors after which the topic's metadata should be looked up again.
pub(crate) fn is_stale_metadata(error: &ClientError) -> bool {
    error.is_transport()
        || matches!(
            error.error_code(),
            Some(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                    | ErrorCode::UNKNOWN_TOPIC_ID
                    | ErrorCode::NOT_LEADER_OR_FOLLOWER
                    | ErrorCode::LEADER_NOT_AVAILABLE
                    | ErrorCode::FENCED_LEADER_EPOCH
                    | ErrorCode::UNKNOWN_LEADER_EPOCH
                    | ErrorCode::INCONSISTENT_TOPIC_ID
                    | ErrorCode::KAFKA_STORAGE_ERROR
            )
        )
}
