//! [`StreamsAdmin`] over `kcoord_client`.
//!
//! ListGroups, DeleteGroups and OffsetFetch use the client library's admin calls. The
//! describe is written here (with `Connection::send` and the generated `kcoord_wire` types)
//! because the library's `describe_streams_groups` does not ask for topology descriptions yet.
//! Each call retries, as Kafka's Admin does, while the coordinator is loading, moved or not
//! yet available, and gives up after `--timeout`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::time::Duration;

use kcoord_client::{Client, ClientError, Connection};
use kcoord_wire::messages::StreamsGroupDescribeRequest;

use super::{OffsetSpec, StreamsAdmin};
use crate::error::AdminError;
use crate::model::{CommittedOffset, CoordinatorNode, GroupListing, GroupState, StreamsGroupDescription, TopicPartition};

/// Pause between retries of a retriable error (Kafka's `retry.backoff.ms` default).
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// StreamsGroupDescribe's first version with IncludeTopologyDescription.
const DESCRIBE_WITH_TOPOLOGY: i16 = 1;

/// The real admin client.
pub struct ClientAdmin {
    client: Client,
    timeout: Duration,
}

impl ClientAdmin {
    /// `timeout` bounds each call, retries included (Kafka's `--timeout`).
    pub fn new(client: Client, timeout: Duration) -> Self {
        ClientAdmin { client, timeout }
    }

    /// Runs `attempt` until it succeeds, fails for good, or `timeout` passes.
    async fn retrying<T, F, Fut>(&self, operation: &'static str, mut attempt: F) -> Result<T, AdminError>
    where
        F: FnMut() -> Fut + Send,
        Fut: Future<Output = Result<T, AdminError>> + Send,
        T: Send,
    {
        let run = async {
            loop {
                match attempt().await {
                    Err(e) if e.is_retriable() => tokio::time::sleep(RETRY_BACKOFF).await,
                    other => return other,
                }
            }
        };
        tokio::time::timeout(self.timeout, run)
            .await
            .unwrap_or(Err(AdminError::Timeout { operation, after: self.timeout }))
    }

    /// A fresh FindCoordinator (so a retry after NOT_COORDINATOR goes to the new one) and a
    /// connection to it.
    async fn coordinator(&self, group_id: &str) -> Result<(CoordinatorNode, Connection), AdminError> {
        let found = self.client.find_coordinator(group_id).await?;
        let conn = self.client.connection_to(&found.host, found.port).await?;
        Ok((CoordinatorNode { id: found.node_id, host: found.host, port: found.port }, conn))
    }

    async fn list_groups_once(&self, states: &[GroupState]) -> Result<Vec<GroupListing>, AdminError> {
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let listings = self.client.list_groups(&["streams"], &states).await?;
        Ok(listings
            .into_iter()
            .map(|g| GroupListing { state: g.group_state.as_deref().map(GroupState::parse), group_id: g.group_id })
            .collect())
    }

    async fn describe_once(&self, group_id: &str, include_topology: bool) -> Result<StreamsGroupDescription, AdminError> {
        let (node, conn) = self.coordinator(group_id).await?;
        let version = match conn.negotiated_version::<StreamsGroupDescribeRequest>().await {
            Ok(version) => version,
            Err(ClientError::UnsupportedVersion { .. }) if include_topology => return Err(AdminError::TopologyUnsupported),
            Err(e) => return Err(e.into()),
        };
        if include_topology && version < DESCRIBE_WITH_TOPOLOGY {
            return Err(AdminError::TopologyUnsupported);
        }
        let request = StreamsGroupDescribeRequest {
            group_ids: vec![group_id.to_string()],
            include_topology_description: include_topology,
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        let Some(group) = response.groups.into_iter().find(|g| g.group_id == group_id) else {
            return Err(AdminError::InvalidResponse(format!("StreamsGroupDescribe response has no entry for group '{group_id}'")));
        };
        if group.error_code != 0 {
            return Err(AdminError::Group { group_id: group_id.to_string(), code: group.error_code, message: group.error_message });
        }
        StreamsGroupDescription::from_wire(&group, node).map_err(|e| {
            AdminError::InvalidResponse(format!("StreamsGroupDescribe response for group '{group_id}' is invalid: {e}"))
        })
    }

    async fn offsets_once(&self, group_id: &str) -> Result<BTreeMap<TopicPartition, CommittedOffset>, AdminError> {
        let fetched = self.client.fetch_offsets(group_id, None, false).await.map_err(|e| group_error(group_id, e))?;
        // Partitions without a committed offset, or with a partition-level error, are left
        // out, as Kafka's Admin does.
        Ok(fetched
            .into_iter()
            .filter_map(|(tp, result)| {
                let committed = result.ok().flatten()?;
                let offset = CommittedOffset { offset: committed.offset, leader_epoch: committed.leader_epoch };
                Some((TopicPartition::new(tp.topic, tp.partition), offset))
            })
            .collect())
    }
}

/// A Kafka error about the group itself becomes [`AdminError::Group`], which prints as Kafka
/// prints it; anything else stays a client error.
fn group_error(group_id: &str, e: ClientError) -> AdminError {
    match e {
        ClientError::Kafka { code, message, .. } => AdminError::Group { group_id: group_id.to_string(), code, message },
        other => AdminError::Client(other),
    }
}

#[async_trait::async_trait]
impl StreamsAdmin for ClientAdmin {
    async fn list_streams_groups(&self, states: &[GroupState]) -> Result<Vec<GroupListing>, AdminError> {
        self.retrying("listGroups", || self.list_groups_once(states)).await
    }

    async fn describe_streams_group(&self, group_id: &str, include_topology_description: bool) -> Result<StreamsGroupDescription, AdminError> {
        self.retrying("describeStreamsGroups", || self.describe_once(group_id, include_topology_description)).await
    }

    async fn list_streams_group_offsets(&self, group_id: &str) -> Result<BTreeMap<TopicPartition, CommittedOffset>, AdminError> {
        self.retrying("listStreamsGroupOffsets", || self.offsets_once(group_id)).await
    }

    /// Always empty: ListOffsets is answered by the brokers that host the partitions, and
    /// neither kcoord nor its wire crate speaks it, so end offsets (and lag) print as `-`.
    async fn list_offsets(&self, _partitions: &BTreeSet<TopicPartition>, _spec: OffsetSpec) -> Result<BTreeMap<TopicPartition, i64>, AdminError> {
        Ok(BTreeMap::new())
    }

    async fn delete_streams_groups(&self, group_ids: &[String]) -> Result<Vec<(String, Result<(), AdminError>)>, AdminError> {
        let mut settled: HashMap<String, Result<(), AdminError>> = HashMap::new();
        let mut pending: Vec<&str> = group_ids.iter().map(String::as_str).collect();
        let run = async {
            // Groups whose coordinator is loading or moved are sent again; the others are done.
            while !pending.is_empty() {
                let mut retry = Vec::new();
                for result in self.client.delete_groups(&pending).await {
                    match result.result {
                        Ok(()) => {
                            settled.insert(result.group_id, Ok(()));
                        }
                        // A transport failure is the command's failure, not one group's.
                        Err(e) if e.is_transport() => return Err(AdminError::Client(e)),
                        Err(e) => {
                            let error = group_error(&result.group_id, e);
                            match pending.iter().find(|g| **g == result.group_id) {
                                Some(group) if error.is_retriable() => retry.push(*group),
                                _ => {
                                    settled.insert(result.group_id, Err(error));
                                }
                            }
                        }
                    }
                }
                pending = retry;
                if !pending.is_empty() {
                    tokio::time::sleep(RETRY_BACKOFF).await;
                }
            }
            Ok(())
        };
        tokio::time::timeout(self.timeout, run)
            .await
            .unwrap_or(Err(AdminError::Timeout { operation: "deleteStreamsGroups", after: self.timeout }))?;
        Ok(group_ids
            .iter()
            .map(|g| {
                let result = settled.remove(g).unwrap_or_else(|| Err(AdminError::InvalidResponse(format!("no DeleteGroups result for group '{g}'"))));
                (g.clone(), result)
            })
            .collect())
    }
}
