//! Admin calls on [`Client`], modelled on Kafka's `Admin`: groups, streams group descriptions,
//! topics (create, delete, list), committed offsets, brokers and their configs, ACLs. Each uses the
//! newest version client and server share.
//!
//! Group-scoped calls go to the group's coordinator. When the coordinator answers
//! NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or its connection breaks, the coordinator is
//! looked up again and the call is retried once.

mod acls;
mod brokers;
mod configs;
mod describe;
mod groups;
mod list_topics;
mod offsets;
mod topics;

use std::collections::HashMap;
use std::future::Future;

use tracing::debug;

pub use acls::describe_acls_on;
pub use brokers::{BrokerDescription, ClusterDescription};
pub use configs::{ConfigEntry, ConfigResourceType, ConfigSource};
pub use describe::{
    DescribeStreamsGroupsOptions, StreamsGroupDescription, StreamsGroupMemberDescription,
    StreamsGroupSubtopologyDescription, TaskOffset, TopicInfo,
};
pub use groups::GroupListing;
pub use kcoord_acl::{
    AclBinding, AclBindingFilter, AclPermissionType, KafkaPrincipal, PatternType, ResourceType,
};
pub use kcoord_wire::{AclOperation, TopicPartition};
pub use list_topics::{ListTopicsSource, TopicListing};
pub use offsets::{GroupMember, GroupOffsetsSpec, OffsetAndMetadata, PartitionResults};
pub use topics::{CreatedTopic, NewTopic};

use crate::client::{Client, Coordinator};
use crate::connection::Connection;
use crate::error::ClientError;

/// The outcome for one group of a call naming several.
#[derive(Debug, Clone)]
pub struct GroupResult<T> {
    pub group_id: String,
    pub result: Result<T, ClientError>,
}

/// The outcome for one topic of a call naming several.
#[derive(Debug, Clone)]
pub struct TopicResult<T> {
    pub name: String,
    pub result: Result<T, ClientError>,
}

/// Per-group answers of one request to one coordinator.
type Answers<T> = Vec<(String, Result<T, ClientError>)>;

/// Whether a group-scoped request should be retried at a freshly looked-up coordinator.
fn should_rediscover(error: &ClientError) -> bool {
    error.is_coordinator_moved()
        || matches!(
            error,
            ClientError::ConnectionClosed { .. } | ClientError::Io { .. }
        )
}

/// `Ok(())` for code 0, else the Kafka error of `api`.
pub(crate) fn kafka_result(
    api: i16,
    code: i16,
    message: Option<String>,
) -> Result<(), ClientError> {
    if code == 0 {
        Ok(())
    } else {
        Err(ClientError::Kafka { api, code, message })
    }
}

/// Request order with repeats removed.
fn unique(names: &[&str]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .filter(|n| seen.insert(**n))
        .map(|n| n.to_string())
        .collect()
}

impl Client {
    /// Runs `call` on the coordinator of `group_id`. After an error that says the coordinator
    /// moved (returned by `call`, by the lookup, or an answer for which `moved` holds), the
    /// coordinator is looked up again and `call` runs once more; its second answer stands.
    pub(crate) async fn with_coordinator<T, F, Fut>(
        &self,
        group_id: &str,
        moved: impl Fn(&T) -> bool,
        mut call: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let first = match self.coordinator(group_id).await {
            Ok(conn) => call(conn).await,
            Err(e) => Err(e),
        };
        let retry = match &first {
            Ok(answer) => moved(answer),
            Err(e) => should_rediscover(e),
        };
        if !retry {
            return first;
        }
        debug!(group = group_id, "coordinator moved; looking it up again");
        self.forget_coordinator(group_id);
        call(self.coordinator(group_id).await?).await
    }

    /// Sends one request per coordinator for `group_ids` (`call` gets the coordinator, its
    /// connection and its groups) and gathers one result per group, in request order. Groups
    /// whose coordinator moved are looked up again and retried once.
    pub(crate) async fn per_coordinator<T, F, Fut>(
        &self,
        group_ids: &[&str],
        mut call: F,
    ) -> Vec<GroupResult<T>>
    where
        F: FnMut(Coordinator, Connection, Vec<String>) -> Fut,
        Fut: Future<Output = Result<Answers<T>, ClientError>>,
    {
        let order = unique(group_ids);
        let mut results: HashMap<String, Result<T, ClientError>> = HashMap::new();
        let mut pending = order.clone();
        for attempt in 0..2 {
            let last = attempt == 1;
            let mut retry = Vec::new();
            let mut settle = |group: String,
                              result: Result<T, ClientError>,
                              retry: &mut Vec<String>| match result {
                Err(e) if !last && should_rediscover(&e) => {
                    debug!(group = %group, error = %e, "coordinator moved; looking it up again");
                    self.forget_coordinator(&group);
                    retry.push(group);
                }
                result => {
                    results.insert(group, result);
                }
            };
            let mut batches: Vec<(Coordinator, Connection, Vec<String>)> = Vec::new();
            for group in pending {
                match self.coordinator_for(&group).await {
                    Ok((coordinator, conn)) => {
                        match batches.iter_mut().find(|(c, _, _)| *c == coordinator) {
                            Some((_, _, groups)) => groups.push(group),
                            None => batches.push((coordinator, conn, vec![group])),
                        }
                    }
                    Err(e) => settle(group, Err(e), &mut retry),
                }
            }
            for (coordinator, conn, groups) in batches {
                match call(coordinator, conn, groups.clone()).await {
                    Ok(answers) => {
                        let mut answers: HashMap<String, Result<T, ClientError>> =
                            answers.into_iter().collect();
                        for group in groups {
                            let result = answers.remove(&group).unwrap_or_else(|| {
                                Err(ClientError::Protocol(format!(
                                    "the response has no result for group {group:?}"
                                )))
                            });
                            settle(group, result, &mut retry);
                        }
                    }
                    Err(e) => {
                        for group in groups {
                            settle(group, Err(e.clone()), &mut retry);
                        }
                    }
                }
            }
            pending = retry;
            if pending.is_empty() {
                break;
            }
        }
        order
            .into_iter()
            .map(|group_id| {
                let result = results.remove(&group_id).unwrap_or_else(|| {
                    Err(ClientError::Protocol(format!(
                        "no result for group {group_id:?}"
                    )))
                });
                GroupResult { group_id, result }
            })
            .collect()
    }
}
