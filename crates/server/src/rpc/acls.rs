//! What the ACL handlers (CreateAcls, DescribeAcls, DeleteAcls) share: Kafka's answer when no
//! authorizer is configured, and the filters' parse-time check.

use kcoord_acl::{AclBindingFilter, UnknownElements};

use crate::state::RequestContext;

/// Kafka's message when ACLs cannot be created or deleted without an authorizer.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

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
