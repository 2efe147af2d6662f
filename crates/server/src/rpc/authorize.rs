//! Authorization as the RPCs ask it, at the points where Kafka's `KafkaApis` asks its
//! authorizer ([`crate::security`]).

use crate::rpc::apis::broker_registration::KAFKA_CLUSTER;
use crate::state::RequestContext;

pub use crate::security::{AclOperation, KafkaPrincipal, ResourceType};

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
        .is_none_or(|a| a.authorize(&ctx.requester(), operation, resource, name))
}

/// Whether the request's principal has `operation` on the cluster; when not, the message
/// Kafka's `AuthHelper.authorizeClusterOperation` sends ("Request … needs ALTER permission.",
/// naming the API and the principal where Kafka prints its internal request object).
pub fn require_cluster(
    ctx: &RequestContext<'_>,
    api: &str,
    operation: AclOperation,
) -> Result<(), String> {
    if authorize(ctx, operation, ResourceType::Cluster, KAFKA_CLUSTER) {
        Ok(())
    } else {
        Err(format!(
            "Request {api} from {} needs {} permission.",
            ctx.principal,
            operation.name()
        ))
    }
}

/// [`Authorizer::authorize_any`] of the configured authorizer; allow-all when there is none.
pub fn authorize_any(
    ctx: &RequestContext<'_>,
    operation: AclOperation,
    resource: ResourceType,
) -> bool {
    ctx.server
        .authorizer
        .as_ref()
        .is_none_or(|a| a.authorize_any(&ctx.requester(), operation, resource))
}

/// Kafka's `AuthHelper.authorizedOperations`: the operations the resource type supports that
/// the principal may perform, as a bit field of operation codes. Without an authorizer that
/// is every supported operation (`AclEntry.supportedOperations`).
pub fn authorized_operations(ctx: &RequestContext<'_>, resource: ResourceType, name: &str) -> i32 {
    kcoord_acl::supported_operations(resource.to_acl())
        .iter()
        .filter(|op| authorize(ctx, **op, resource, name))
        .fold(0, |bits, op| bits | 1 << (*op as i32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListenerKind;
    use crate::rpc::apis::testing::{server, with_ctx};
    use crate::rpc::apis::{CLUSTER_AUTHORIZED_OPERATIONS, TOPIC_AUTHORIZED_OPERATIONS};

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

#[cfg(test)]
mod matrix_tests;
