//! What the ACL handlers (CreateAcls, DescribeAcls, DeleteAcls) and the SCRAM credential
//! handlers share: the cluster permission each needs, and Kafka's answers when it is missing
//! or when no authorizer is configured.

use kcoord_acl::{AclBindingFilter, UnknownElements};

use crate::authz::{authorize, AclOperation, ResourceType};
use crate::handlers::broker_registration::KAFKA_CLUSTER;
use crate::state::RequestContext;

/// Kafka's message when ACLs cannot be created or deleted without an authorizer.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// Whether the request's principal has `operation` on the cluster; when not, the message
/// Kafka's `AuthHelper.authorizeClusterOperation` sends ("Request … needs ALTER permission.",
/// naming the API and the principal where Kafka prints its internal request object).
pub fn cluster_permission(
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

/// Whether an authorizer is configured: without one, Kafka stores no ACLs.
pub fn has_authorizer(ctx: &RequestContext<'_>) -> bool {
    ctx.server.authorizer.is_some()
}

/// A DescribeAcls or DeleteAcls filter from its wire fields, after Kafka's parse-time check:
/// code 0 (UNKNOWN) in any enum field makes the request unparsable (the connection closes).
#[allow(clippy::too_many_arguments)]
pub fn filter(
    resource_type: i8,
    resource_name: Option<&str>,
    pattern_type: i8,
    principal: Option<&str>,
    host: Option<&str>,
    operation: i8,
    permission: i8,
) -> Result<AclBindingFilter, UnknownElements> {
    kcoord_acl::requests::check_acl_filter_codes(
        resource_type,
        pattern_type,
        operation,
        permission,
    )?;
    Ok(AclBindingFilter::from_codes(
        resource_type,
        resource_name.map(str::to_owned),
        pattern_type,
        principal.map(str::to_owned),
        host.map(str::to_owned),
        operation,
        permission,
    ))
}
