//! [`StreamsAdmin`] over `kcoord_client`.
//!
//! Every call is one of the client library's admin calls (`describe_streams_groups` asks for
//! the topology description at StreamsGroupDescribe v1 and converts it). Each call retries, as
//! Kafka's Admin does, while the coordinator is loading, moved or not yet available, and gives
//! up after `--timeout`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::time::Duration;

use kcoord_client::admin::{
    DescribeStreamsGroupsOptions, StreamsGroupDescription as ClientDescription,
};
use kcoord_client::streams::Tasks;
use kcoord_client::{Client, ClientError};
use kcoord_wire::messages::StreamsGroupDescribeRequest;
use kcoord_wire::Request;

use super::{OffsetSpec, StreamsAdmin};
use crate::error::AdminError;
use crate::model::{
    CommittedOffset, CoordinatorNode, GroupListing, GroupState, MemberAssignment,
    MemberDescription, StreamsGroupDescription, SubtopologyDescription, TaskIds, TopicPartition,
};

/// Pause between retries of a retriable error (Kafka's `retry.backoff.ms` default).
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

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
    async fn retrying<T, F, Fut>(
        &self,
        operation: &'static str,
        mut attempt: F,
    ) -> Result<T, AdminError>
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
            .unwrap_or(Err(AdminError::Timeout {
                operation,
                after: self.timeout,
            }))
    }

    async fn list_groups_once(
        &self,
        states: &[GroupState],
    ) -> Result<Vec<GroupListing>, AdminError> {
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        let listings = self.client.list_groups(&["streams"], &states).await?;
        Ok(listings
            .into_iter()
            .map(|g| GroupListing {
                state: g.group_state.as_deref().map(GroupState::parse),
                group_id: g.group_id,
            })
            .collect())
    }

    async fn describe_once(
        &self,
        group_id: &str,
        include_topology: bool,
    ) -> Result<StreamsGroupDescription, AdminError> {
        let options = DescribeStreamsGroupsOptions {
            include_topology_description: include_topology,
            include_authorized_operations: false,
        };
        let result = self
            .client
            .describe_streams_groups(&[group_id], options)
            .await
            .into_iter()
            .find(|r| r.group_id == group_id);
        let Some(result) = result else {
            return Err(AdminError::InvalidResponse(format!(
                "StreamsGroupDescribe response has no entry for group '{group_id}'"
            )));
        };
        match result.result {
            Ok(description) => Ok(from_client(description)),
            // The library refuses (without sending) a topology request a v0 coordinator cannot
            // carry, or one without StreamsGroupDescribe at all.
            Err(ClientError::Unsupported { api, .. })
                if include_topology && api == StreamsGroupDescribeRequest::KEY =>
            {
                Err(AdminError::TopologyUnsupported)
            }
            Err(ClientError::Protocol(reason)) => Err(AdminError::InvalidResponse(format!(
                "StreamsGroupDescribe response for group '{group_id}' is invalid: {reason}"
            ))),
            Err(e) => Err(group_error(group_id, e)),
        }
    }

    async fn offsets_once(
        &self,
        group_id: &str,
    ) -> Result<BTreeMap<TopicPartition, CommittedOffset>, AdminError> {
        let fetched = self
            .client
            .fetch_offsets(group_id, None, false)
            .await
            .map_err(|e| group_error(group_id, e))?;
        // Partitions without a committed offset, or with a partition-level error, are left
        // out, as Kafka's Admin does.
        Ok(fetched
            .into_iter()
            .filter_map(|(tp, result)| {
                let committed = result.ok().flatten()?;
                let offset = CommittedOffset {
                    offset: committed.offset,
                    leader_epoch: committed.leader_epoch,
                };
                Some((TopicPartition::new(tp.topic, tp.partition), offset))
            })
            .collect())
    }
}

/// The library's description as the tool's model. Task lists come sorted by sub-topology and
/// partition (the library keeps them as sets).
fn from_client(d: ClientDescription) -> StreamsGroupDescription {
    let tasks = |tasks: &Tasks| -> Vec<TaskIds> {
        tasks
            .iter()
            .map(|(s, p)| TaskIds {
                subtopology_id: s.clone(),
                partitions: p.iter().copied().collect(),
            })
            .collect()
    };
    let assignment = |a: &kcoord_client::streams::Assignment| MemberAssignment {
        active_tasks: tasks(&a.active),
        standby_tasks: tasks(&a.standby),
        warmup_tasks: tasks(&a.warmup),
    };
    StreamsGroupDescription {
        state: GroupState::parse(&d.group_state),
        coordinator: CoordinatorNode {
            id: d.coordinator.node_id,
            host: d.coordinator.host.clone(),
            port: d.coordinator.port,
        },
        subtopologies: d
            .subtopologies
            .iter()
            .map(|s| SubtopologyDescription {
                subtopology_id: s.subtopology_id.clone(),
                source_topics: s.source_topics.clone(),
                repartition_sink_topics: s.repartition_sink_topics.clone(),
                state_changelog_topics: s
                    .state_changelog_topics
                    .iter()
                    .map(|t| t.name.clone())
                    .collect(),
                repartition_source_topics: s
                    .repartition_source_topics
                    .iter()
                    .map(|t| t.name.clone())
                    .collect(),
            })
            .collect(),
        members: d
            .members
            .iter()
            .map(|m| MemberDescription {
                member_id: m.member_id.clone(),
                member_epoch: m.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                process_id: m.process_id.clone(),
                topology_epoch: m.topology_epoch,
                is_classic: m.is_classic,
                assignment: assignment(&m.assignment),
                target_assignment: assignment(&m.target_assignment),
            })
            .collect(),
        group_id: d.group_id,
        group_epoch: d.group_epoch,
        target_assignment_epoch: d.target_assignment_epoch,
        topology_epoch: d.topology_epoch,
        assignor_name: d.assignor_name,
        topology_description_status: d.topology_description_status,
        topology_description: d.topology_description,
    }
}

/// A Kafka error about the group itself becomes [`AdminError::Group`], which prints as Kafka
/// prints it; anything else stays a client error.
fn group_error(group_id: &str, e: ClientError) -> AdminError {
    match e {
        ClientError::Kafka { code, message, .. } => AdminError::Group {
            group_id: group_id.to_string(),
            code,
            message,
        },
        other => AdminError::Client(other),
    }
}

#[async_trait::async_trait]
impl StreamsAdmin for ClientAdmin {
    async fn list_streams_groups(
        &self,
        states: &[GroupState],
    ) -> Result<Vec<GroupListing>, AdminError> {
        self.retrying("listGroups", || self.list_groups_once(states))
            .await
    }

    async fn describe_streams_group(
        &self,
        group_id: &str,
        include_topology_description: bool,
    ) -> Result<StreamsGroupDescription, AdminError> {
        self.retrying("describeStreamsGroups", || {
            self.describe_once(group_id, include_topology_description)
        })
        .await
    }

    async fn list_streams_group_offsets(
        &self,
        group_id: &str,
    ) -> Result<BTreeMap<TopicPartition, CommittedOffset>, AdminError> {
        self.retrying("listStreamsGroupOffsets", || self.offsets_once(group_id))
            .await
    }

    /// ListOffsets per partition, at the partition's leader. A partition whose offset cannot be
    /// read (unknown topic, an error) is left out, so its end offset and lag print as `-`.
    async fn list_offsets(
        &self,
        partitions: &BTreeSet<TopicPartition>,
        spec: OffsetSpec,
    ) -> Result<BTreeMap<TopicPartition, i64>, AdminError> {
        let timestamp = match spec {
            OffsetSpec::Earliest => kcoord_client::consume::EARLIEST_TIMESTAMP,
            OffsetSpec::Latest => kcoord_client::consume::LATEST_TIMESTAMP,
        };
        let consumer = kcoord_client::Consumer::new(self.client.clone());
        let mut offsets = BTreeMap::new();
        let lookups = async {
            for tp in partitions {
                if let Ok((offset, _)) = consumer
                    .list_offsets(&tp.topic, tp.partition, timestamp)
                    .await
                {
                    if offset >= 0 {
                        offsets.insert(tp.clone(), offset);
                    }
                }
            }
        };
        // The command's timeout bounds the lookups too; what was found by then is printed.
        let _ = tokio::time::timeout(self.timeout, lookups).await;
        Ok(offsets)
    }

    async fn delete_streams_groups(
        &self,
        group_ids: &[String],
    ) -> Result<Vec<(String, Result<(), AdminError>)>, AdminError> {
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
            .unwrap_or(Err(AdminError::Timeout {
                operation: "deleteStreamsGroups",
                after: self.timeout,
            }))?;
        Ok(group_ids
            .iter()
            .map(|g| {
                let result = settled.remove(g).unwrap_or_else(|| {
                    Err(AdminError::InvalidResponse(format!(
                        "no DeleteGroups result for group '{g}'"
                    )))
                });
                (g.clone(), result)
            })
            .collect())
    }
}
