//! What the ACL handlers (CreateAcls, DescribeAcls, DeleteAcls) share: Kafka's answer when no
//! authorizer is configured, the filters' parse-time check, and the results of a batch the
//! controller did not commit.

use kcoord_acl::{AclApiError, AclBindingFilter, UnknownElements};
use kcoord_controller::ControllerError;

use crate::runtime::controller::Refused;

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

/// Results when the batch was not applied: entries the decision refused keep their errors,
/// the others get the batch's; without a decision, every entry gets it.
pub fn refuse_each<T>(
    Refused { error, decided }: Refused<Vec<Result<T, AclApiError>>>,
    entries: usize,
) -> Vec<Result<T, AclApiError>> {
    let failed = |error: &ControllerError| AclApiError {
        error: error.code,
        message: Some(error.message.clone()),
    };
    match decided {
        Some(results) => results
            .into_iter()
            .map(|r| r.and_then(|_| Err(failed(&error))))
            .collect(),
        None => (0..entries).map(|_| Err(failed(&error))).collect(),
    }
}

pub fn outcome<T>(result: &Result<T, AclApiError>) -> &'static str {
    match result {
        Ok(_) => "NONE",
        Err(e) => e.error.name(),
    }
}
