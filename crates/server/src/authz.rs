//! Authorization hook. There is no authorizer yet, so everything is allowed, as in a Kafka
//! broker without `authorizer.class.name`. Handlers ask here, at the points where Kafka's
//! `KafkaApis` asks its authorizer, so that the authorizer issue only has to fill this in.

use crate::state::RequestContext;

/// Kafka's `AclOperation` codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclOperation {
    Read = 3,
    Write = 4,
    Create = 5,
    Delete = 6,
    Alter = 7,
    Describe = 8,
    ClusterAction = 9,
    DescribeConfigs = 10,
    AlterConfigs = 11,
    IdempotentWrite = 12,
}

/// Kafka's `ResourceType` values the handlers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
}

/// Whether the request's principal may perform `operation` on the resource. Allow-all until an
/// authorizer is configured.
pub fn authorize(
    _ctx: &RequestContext<'_>,
    _operation: AclOperation,
    _resource: ResourceType,
    _name: &str,
) -> bool {
    true
}

/// Kafka's `AuthHelper.authorizedOperations`: the operations the resource type supports that
/// the principal may perform, as a bit field of operation codes. Without an authorizer that
/// is every supported operation (`AclEntry.supportedOperations`).
pub fn authorized_operations(
    _ctx: &RequestContext<'_>,
    resource: ResourceType,
    _name: &str,
) -> i32 {
    use AclOperation::*;
    let supported: &[AclOperation] = match resource {
        ResourceType::Topic => &[
            Read,
            Write,
            Create,
            Delete,
            Alter,
            Describe,
            DescribeConfigs,
            AlterConfigs,
        ],
        ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
        ResourceType::Cluster => &[
            Create,
            ClusterAction,
            DescribeConfigs,
            AlterConfigs,
            IdempotentWrite,
            Alter,
            Describe,
        ],
    };
    supported
        .iter()
        .fold(0, |bits, op| bits | 1 << (*op as i32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::handlers::testing::{server, with_ctx};
    use crate::handlers::{CLUSTER_AUTHORIZED_OPERATIONS, TOPIC_AUTHORIZED_OPERATIONS};

    #[test]
    fn without_an_authorizer_everything_supported_is_allowed() {
        let state = server();
        with_ctx(&state, ListenerKind::Broker, |ctx| {
            assert!(authorize(ctx, AclOperation::Read, ResourceType::Group, "g"));
            // READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
            assert_eq!(
                authorized_operations(ctx, ResourceType::Group, "g"),
                0b1101_0100_1000
            );
            assert_eq!(
                authorized_operations(ctx, ResourceType::Topic, "t"),
                TOPIC_AUTHORIZED_OPERATIONS
            );
            assert_eq!(
                authorized_operations(ctx, ResourceType::Cluster, ""),
                CLUSTER_AUTHORIZED_OPERATIONS
            );
        });
    }
}
