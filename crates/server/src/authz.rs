//! Authorization hook. There is no authorizer yet, so everything is allowed, as in a Kafka
//! broker without `authorizer.class.name`. Handlers ask here, at the points where Kafka's
//! `KafkaApis` asks its authorizer, so that the authorizer issue only has to fill this in.

use crate::state::RequestContext;

/// Kafka's `AclOperation`, defined once in kcoord-wire.
pub use kcoord_wire::AclOperation;

/// Kafka's `ResourceType` values the handlers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
}

/// An authorizer (Kafka's `Authorizer.authorize` for one action). None is configured by
/// default; an embedding program or a test injects one with
/// [`crate::server::Extensions::authorizer`].
pub trait Authorizer: Send + Sync + std::fmt::Debug {
    fn authorize(
        &self,
        ctx: &RequestContext<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool;
}

/// Denies everything: what a principal without any ACL gets from Kafka's `StandardAuthorizer`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Authorizer for DenyAll {
    fn authorize(&self, _: &RequestContext<'_>, _: AclOperation, _: ResourceType, _: &str) -> bool {
        false
    }
}

/// Whether the request's principal may perform `operation` on the resource: the injected
/// authorizer's answer, allow-all when there is none.
pub fn authorize(
    ctx: &RequestContext<'_>,
    operation: AclOperation,
    resource: ResourceType,
    name: &str,
) -> bool {
    ctx.server
        .authorizer
        .as_ref()
        .is_none_or(|a| a.authorize(ctx, operation, resource, name))
}

/// Kafka's `AuthHelper.authorizedOperations`: the operations the resource type supports that
/// the principal may perform, as a bit field of operation codes. Without an authorizer that
/// is every supported operation (`AclEntry.supportedOperations`).
pub fn authorized_operations(ctx: &RequestContext<'_>, resource: ResourceType, name: &str) -> i32 {
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
        .filter(|op| authorize(ctx, **op, resource, name))
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
