//! Deleting a streams group's offsets where gateway mode keeps them: in the upstream cluster
//! (`rpc/streams_offsets.rs`). kcoord's DeleteGroups and OffsetDelete decide on the streams
//! group itself (members, subscriptions), then what kcoord allowed is deleted in the cluster
//! too, so the offsets do not outlive the group there, as they would not in Kafka.
//!
//! The cluster knows such a group as a group without members; one with no offsets at all is
//! unknown to it (GROUP_ID_NOT_FOUND), which here means there was nothing to delete.

use std::time::Duration;

use kcoord_client::{Client, ClientError};
use kcoord_wire::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kcoord_wire::messages::{DeleteGroupsRequest, OffsetDeleteRequest};
use kcoord_wire::{ErrorCode, Request};

use super::Gateway;

/// Tries at a coordinator that is loading or moving, before giving up.
const ATTEMPTS: u32 = 5;
const RETRY_AFTER: Duration = Duration::from_millis(100);

impl Gateway {
    /// Deletes each of `group_ids` in the cluster: the cluster's code for each, NONE when the
    /// cluster did not know it.
    pub async fn delete_groups_upstream(
        &self,
        group_ids: &[&str],
    ) -> Vec<Result<ErrorCode, ClientError>> {
        let client = match self.cluster_client().await {
            Ok(client) => client,
            Err(e) => return group_ids.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut codes = Vec::with_capacity(group_ids.len());
        for group_id in group_ids {
            let deleted = retried(&client, group_id, DeleteGroupsRequest::KEY, || async {
                let conn = client.coordinator(group_id).await?;
                let request = DeleteGroupsRequest {
                    groups_names: vec![(*group_id).to_owned()],
                    ..Default::default()
                };
                let response = conn.send_negotiated(request).await?;
                let code = response
                    .results
                    .first()
                    .map_or(ErrorCode::UNKNOWN_SERVER_ERROR.code(), |r| r.error_code);
                Ok((code, ()))
            })
            .await;
            codes.push(deleted.map(|(code, ())| known(code)));
        }
        codes
    }

    /// Deletes `group_id`'s offsets of `partitions` (by topic) in the cluster: the cluster's
    /// code per partition, in the order given (its code for the whole request on each, when
    /// it refused the request; NONE when it did not know the group).
    pub async fn delete_offsets_upstream(
        &self,
        group_id: &str,
        partitions: &[(String, Vec<i32>)],
    ) -> Result<Vec<Vec<ErrorCode>>, ClientError> {
        let client = self.cluster_client().await?;
        let request = offset_delete(group_id, partitions);
        let (code, response) = retried(&client, group_id, OffsetDeleteRequest::KEY, || async {
            let conn = client.coordinator(group_id).await?;
            let response = conn.send_negotiated(request.clone()).await?;
            Ok((response.error_code, response))
        })
        .await?;
        let answer = |topic: &str, partition: i32| {
            let found = response
                .topics
                .iter()
                .filter(|t| t.name == topic)
                .flat_map(|t| &t.partitions)
                .find(|a| a.partition_index == partition);
            found.map_or(ErrorCode::UNKNOWN_SERVER_ERROR, |a| {
                ErrorCode::from_code(a.error_code).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
            })
        };
        Ok(partitions
            .iter()
            .map(|(topic, indexes)| {
                indexes
                    .iter()
                    .map(|&p| match code {
                        ErrorCode::NONE => answer(topic, p),
                        other => known(other),
                    })
                    .collect()
            })
            .collect())
    }
}

/// A group the cluster does not know had nothing to delete.
fn known(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::GROUP_ID_NOT_FOUND => ErrorCode::NONE,
        other => other,
    }
}

fn offset_delete(group_id: &str, partitions: &[(String, Vec<i32>)]) -> OffsetDeleteRequest {
    OffsetDeleteRequest {
        group_id: group_id.to_owned(),
        topics: partitions
            .iter()
            .map(|(name, indexes)| OffsetDeleteRequestTopic {
                name: name.clone(),
                partitions: indexes
                    .iter()
                    .map(|&partition_index| OffsetDeleteRequestPartition {
                        partition_index,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// `attempt` again while the cluster's group coordinator is loading, moving or unreachable
/// (at most [`ATTEMPTS`] times): the code it answered and its answer. A coordinator that
/// stays so is an error carrying its code.
async fn retried<T, F, Fut>(
    client: &Client,
    group_id: &str,
    api: i16,
    mut attempt: F,
) -> Result<(ErrorCode, T), ClientError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(i16, T), ClientError>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        let outcome = attempt().await;
        let again = match &outcome {
            Ok((code, _)) => matches!(
                ErrorCode::from_code(*code),
                Some(
                    ErrorCode::NOT_COORDINATOR
                        | ErrorCode::COORDINATOR_NOT_AVAILABLE
                        | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
                )
            ),
            Err(e) => e.is_transport() || e.is_coordinator_moved(),
        };
        if !again {
            let (code, value) = outcome?;
            return Ok((
                ErrorCode::from_code(code).unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR),
                value,
            ));
        }
        if tries >= ATTEMPTS {
            let (code, _) = outcome?;
            return Err(ClientError::Kafka {
                api,
                code,
                message: None,
            });
        }
        client.forget_coordinator(group_id);
        tokio::time::sleep(RETRY_AFTER).await;
    }
}
