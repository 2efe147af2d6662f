//! StreamsGroupDescribe (key 89), v0-1, after Kafka's `KafkaApis.handleStreamsGroupDescribe`.
//!
//! Each group is described by the shard that owns it (an empty id is INVALID_GROUP_ID, an
//! unknown one GROUP_ID_NOT_FOUND, per group). AuthorizedOperations, when asked for, is what
//! the authorizer hook grants on the group (everything a group supports, without an
//! authorizer). v1's topology description is not stored yet (issue 4): without
//! IncludeTopologyDescription the status is 0, with it 1 (NOT_STORED), as Kafka answers when no
//! plugin is configured, and only for groups described without error.

use kcoord_wire::messages::streams_group_describe_response::DescribedGroup;
use kcoord_wire::messages::{StreamsGroupDescribeRequest, StreamsGroupDescribeResponse};
use kcoord_wire::ErrorCode;

use super::groups::per_group;
use crate::authz::{authorized_operations, ResourceType};
use crate::state::RequestContext;

/// `TOPOLOGY_DESCRIPTION_STATUS_NOT_STORED`.
pub const TOPOLOGY_DESCRIPTION_NOT_STORED: i8 = 1;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: StreamsGroupDescribeRequest,
    version: i16,
) -> StreamsGroupDescribeResponse {
    let answers = per_group(
        &ctx.server.coordinators,
        &req.group_ids,
        |shard, _, _, ids| shard.describe_streams_groups(ids),
    )
    .await;
    let groups = req
        .group_ids
        .iter()
        .zip(answers)
        .map(|(id, answer)| {
            if id.is_empty() {
                return DescribedGroup {
                    group_id: String::new(),
                    error_code: ErrorCode::INVALID_GROUP_ID.code(),
                    ..Default::default()
                };
            }
            let mut group = match answer {
                Ok(group) => group,
                Err(e) => DescribedGroup {
                    group_id: id.clone(),
                    error_code: e.error_code().code(),
                    ..Default::default()
                },
            };
            if group.error_code == ErrorCode::NONE.code() {
                if req.include_authorized_operations {
                    group.authorized_operations =
                        authorized_operations(ctx, ResourceType::Group, &group.group_id);
                }
                if version >= 1 && req.include_topology_description {
                    group.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_STORED;
                }
            }
            group
        })
        .collect();
    StreamsGroupDescribeResponse {
        throttle_time_ms: 0,
        groups,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
