//! What CreateAcls, DescribeAcls and DeleteAcls check and decide, in Kafka's order, with its
//! error codes and messages. The server sends the answers; nothing here touches a socket.
//!
//! CreateAcls, in order: a creation with code 0 (UNKNOWN) in an enum field closes the
//! connection ([`check_create_acls_request`]); then (after the server's ALTER on CLUSTER
//! check) a creation with a filter value (ANY, MATCH) fails the whole request with
//! UNKNOWN_SERVER_ERROR and no message; then each creation is checked on its own
//! ([`validate_create_acls`]); then ACLs already stored or repeated are reported as created
//! without a record ([`new_acls`]).

use kcoord_wire::{AclOperation, ErrorCode};
use thiserror::Error;
use uuid::Uuid;

use crate::binding::{operation_from_code, AclBinding};
use crate::filter::AclBindingFilter;
use crate::host::{Cidr, WILDCARD_HOST};
use crate::principal::split_principal;
use crate::resource::{AclPermissionType, PatternType, ResourceType, CLUSTER_NAME};
use crate::store::{Acls, MAX_RECORDS_PER_USER_OP};

/// The error of one entry of an ACL RPC: its code and the message Kafka sends (`None` is a
/// null ErrorMessage).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {}", .error.name(), .message.as_deref().unwrap_or(.error.message()))]
pub struct AclApiError {
    pub error: ErrorCode,
    pub message: Option<String>,
}

impl AclApiError {
    fn invalid_request(message: impl Into<String>) -> AclApiError {
        AclApiError {
            error: ErrorCode::INVALID_REQUEST,
            message: Some(message.into()),
        }
    }

    /// UNKNOWN_SERVER_ERROR, whose message Kafka never sends.
    fn unknown_server_error() -> AclApiError {
        AclApiError {
            error: ErrorCode::UNKNOWN_SERVER_ERROR,
            message: None,
        }
    }
}

/// A request Kafka fails to parse: the connection is closed without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("the request contains UNKNOWN elements")]
pub struct UnknownElements;

/// One creation of a CreateAcls request, codes as on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclCreation {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

/// Whether an enum field holds code 0. Only 0 counts here: an unmapped code passes this
/// check, becomes UNKNOWN afterwards, and is refused later with a per-entry error.
pub fn has_unknown_code(
    resource_type: i8,
    pattern_type: i8,
    operation: i8,
    permission: i8,
) -> bool {
    [resource_type, pattern_type, operation, permission].contains(&0)
}

/// CreateAcls' parse-time check (`CreateAclsRequest.validate`).
pub fn check_create_acls_request(creations: &[AclCreation]) -> Result<(), UnknownElements> {
    let unknown = creations
        .iter()
        .any(|c| has_unknown_code(c.resource_type, c.pattern_type, c.operation, c.permission));
    if unknown {
        Err(UnknownElements)
    } else {
        Ok(())
    }
}

/// DescribeAcls' and DeleteAcls' parse-time check of one filter (`normalizeAndValidate`).
pub fn check_acl_filter_codes(
    resource_type: i8,
    pattern_type: i8,
    operation: i8,
    permission: i8,
) -> Result<(), UnknownElements> {
    if has_unknown_code(resource_type, pattern_type, operation, permission) {
        Err(UnknownElements)
    } else {
        Ok(())
    }
}

/// The result of each creation, in request order. `cidr_supported` is whether the
/// metadata.version allows CIDR hosts (4.4-IV1 or later).
pub fn validate_create_acls(
    creations: &[AclCreation],
    cidr_supported: bool,
) -> Vec<Result<AclBinding, AclApiError>> {
    // Kafka builds every binding before it looks at any, and a binding with a filter value
    // throws out of the handler: the whole request fails.
    if creations.iter().any(has_filter_value) {
        return creations
            .iter()
            .map(|_| Err(AclApiError::unknown_server_error()))
            .collect();
    }
    creations
        .iter()
        .map(|c| validate_creation(c, cidr_supported))
        .collect()
}

/// A value Kafka's `ResourcePattern` or `AccessControlEntry` constructor refuses.
fn has_filter_value(creation: &AclCreation) -> bool {
    ResourceType::from_code(creation.resource_type) == ResourceType::Any
        || matches!(
            PatternType::from_code(creation.pattern_type),
            PatternType::Match | PatternType::Any
        )
        || operation_from_code(creation.operation) == AclOperation::Any
        || AclPermissionType::from_code(creation.permission) == AclPermissionType::Any
}

/// One creation's checks, in Kafka's order: the CLUSTER name and the empty name (the broker's
/// `AclApis`), then the controller's `validateNewAcl`.
pub fn validate_creation(
    creation: &AclCreation,
    cidr_supported: bool,
) -> Result<AclBinding, AclApiError> {
    if has_filter_value(creation) {
        return Err(AclApiError::unknown_server_error());
    }
    let acl = AclBinding::from_record_fields(
        creation.resource_type,
        creation.resource_name.clone(),
        creation.pattern_type,
        creation.principal.clone(),
        creation.host.clone(),
        creation.operation,
        creation.permission,
    );
    if acl.resource_type == ResourceType::Cluster && acl.resource_name != CLUSTER_NAME {
        return Err(AclApiError::invalid_request(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )));
    }
    if acl.resource_name.is_empty() {
        return Err(AclApiError::invalid_request("Invalid empty resource name"));
    }
    validate_new_acl(&acl, cidr_supported)?;
    Ok(acl)
}

/// The controller's checks (`AclControlManager.validateNewAcl`).
fn validate_new_acl(acl: &AclBinding, cidr_supported: bool) -> Result<(), AclApiError> {
    if matches!(acl.resource_type, ResourceType::Unknown | ResourceType::Any) {
        return Err(AclApiError::invalid_request(format!(
            "Invalid resourceType {}",
            acl.resource_type
        )));
    }
    if !matches!(
        acl.pattern_type,
        PatternType::Literal | PatternType::Prefixed
    ) {
        return Err(AclApiError::invalid_request(format!(
            "Invalid patternType {}",
            acl.pattern_type
        )));
    }
    if matches!(acl.operation, AclOperation::Unknown | AclOperation::Any) {
        return Err(AclApiError::invalid_request(format!(
            "Invalid operation {}",
            acl.operation.name()
        )));
    }
    if !matches!(
        acl.permission,
        AclPermissionType::Deny | AclPermissionType::Allow
    ) {
        return Err(AclApiError::invalid_request(format!(
            "Invalid permissionType {}",
            acl.permission
        )));
    }
    if split_principal(&acl.principal).is_none() {
        return Err(AclApiError::invalid_request(format!(
            "Could not parse principal from `{}` (no colon is present separating the \
             principal type from the principal name)",
            acl.principal
        )));
    }
    validate_host(&acl.host, cidr_supported)
}

/// Kafka checks only `*`, empty, and CIDR ranges; any other host string is stored as given.
fn validate_host(host: &str, cidr_supported: bool) -> Result<(), AclApiError> {
    if host.is_empty() {
        return Err(AclApiError::invalid_request(
            "Host pattern cannot be null or empty",
        ));
    }
    if host == WILDCARD_HOST || !host.contains('/') {
        return Ok(());
    }
    if !cidr_supported {
        return Err(AclApiError {
            error: ErrorCode::UNSUPPORTED_VERSION,
            message: Some(
                "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher."
                    .to_owned(),
            ),
        });
    }
    Cidr::parse(host).map(|_| ()).map_err(|reason| {
        AclApiError::invalid_request(format!("Invalid CIDR notation '{host}': {reason}"))
    })
}

/// The valid creations that need a record: not stored already and not repeated earlier in
/// the request (those are reported as created, with no record), in request order. More than
/// [`MAX_RECORDS_PER_USER_OP`] fails the whole operation, which Kafka reports as
/// UNKNOWN_SERVER_ERROR for every creation that reached the controller.
pub fn new_acls<'a>(
    acls: &Acls,
    valid: impl IntoIterator<Item = &'a AclBinding>,
) -> Result<Vec<AclBinding>, AclApiError> {
    let mut fresh: Vec<AclBinding> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for acl in valid {
        if acls.contains(acl) || !seen.insert(acl) {
            continue;
        }
        if fresh.len() == MAX_RECORDS_PER_USER_OP {
            return Err(AclApiError::unknown_server_error());
        }
        fresh.push(acl.clone());
    }
    Ok(fresh)
}

/// What a DeleteAcls request does: each filter's result, and the ids to remove (one
/// `RemoveAccessControlEntryRecord` each, however many filters matched the ACL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsPlan {
    pub results: Vec<Result<Vec<(Uuid, AclBinding)>, AclApiError>>,
    pub removals: Vec<Uuid>,
}

/// Kafka's `AclControlManager.deleteAcls`: per filter in request order, every stored ACL it
/// matches (INVALID_REQUEST for a filter with an UNKNOWN part). More than
/// [`MAX_RECORDS_PER_USER_OP`] removals fail every filter and remove nothing.
pub fn plan_delete_acls(acls: &Acls, filters: &[AclBindingFilter]) -> DeleteAclsPlan {
    let mut removals: Vec<Uuid> = Vec::new();
    let mut removed = std::collections::HashSet::new();
    let mut results = Vec::with_capacity(filters.len());
    for filter in filters {
        if let Err(error) = check_delete_filter(filter) {
            results.push(Err(error));
            continue;
        }
        let mut deleted = Vec::new();
        for (id, acl) in acls.matching(filter) {
            // Kafka checks the count before each match, even one already counted.
            if removed.len() >= MAX_RECORDS_PER_USER_OP {
                return too_many_removals(filters.len());
            }
            if removed.insert(id) {
                removals.push(id);
            }
            deleted.push((id, acl.clone()));
        }
        results.push(Ok(deleted));
    }
    DeleteAclsPlan { results, removals }
}

fn too_many_removals(filters: usize) -> DeleteAclsPlan {
    let error = AclApiError::invalid_request(format!(
        "Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single delete operation."
    ));
    DeleteAclsPlan {
        results: vec![Err(error); filters],
        removals: Vec::new(),
    }
}

/// Kafka's `AclControlManager.validateFilter`.
fn check_delete_filter(filter: &AclBindingFilter) -> Result<(), AclApiError> {
    if filter.pattern_filter_is_unknown() {
        return Err(AclApiError::invalid_request("Unknown patternFilter."));
    }
    if filter.entry_filter_is_unknown() {
        return Err(AclApiError::invalid_request("Unknown entryFilter."));
    }
    Ok(())
}
