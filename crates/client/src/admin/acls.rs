//! ACLs: Kafka's `Admin.describeAcls`, `createAcls` and `deleteAcls` (DescribeAcls,
//! CreateAcls and DeleteAcls at the newest shared version), sent to the bootstrap node.

use kcoord_acl::{operation_from_code, AclBinding, AclBindingFilter, AclPermissionType};
use kcoord_acl::{PatternType, ResourceType};
use kcoord_wire::messages::create_acls_request::AclCreation;
use kcoord_wire::messages::delete_acls_request::DeleteAclsFilter;
use kcoord_wire::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kcoord_wire::Request;

use crate::client::Client;
use crate::connection::Connection;
use crate::error::ClientError;

/// v0 of the three ACL APIs knows LITERAL patterns only (KIP-290 added the pattern type).
const FIRST_PATTERN_VERSION: i16 = 1;

fn operation_code(binding_operation: kcoord_acl::AclOperation) -> i8 {
    i8::try_from(binding_operation.code()).unwrap_or(0)
}

/// A request that needs pattern types at a version without them.
fn check_pattern(api: i16, version: i16, pattern: PatternType) -> Result<(), ClientError> {
    let literal_only = matches!(pattern, PatternType::Literal | PatternType::Any);
    if version < FIRST_PATTERN_VERSION && !literal_only {
        return Err(ClientError::Unsupported {
            api,
            reason: format!("the server offers only v{version}, which has no {pattern} patterns"),
        });
    }
    Ok(())
}

/// The ACLs `filter` matches, asked on `conn` (DescribeAcls at the newest version both sides
/// serve): what [`Client::describe_acls`] asks of its bootstrap node, for a caller that holds
/// its own connection.
pub async fn describe_acls_on(
    conn: &Connection,
    filter: &AclBindingFilter,
) -> Result<Vec<AclBinding>, ClientError> {
    let version = conn.negotiated_version::<DescribeAclsRequest>().await?;
    check_pattern(DescribeAclsRequest::KEY, version, filter.pattern_type)?;
    let request = DescribeAclsRequest {
        resource_type_filter: filter.resource_type.code(),
        resource_name_filter: filter.resource_name.clone(),
        pattern_type_filter: filter.pattern_type.code(),
        principal_filter: filter.principal.clone(),
        host_filter: filter.host.clone(),
        operation: operation_code(filter.operation),
        permission_type: filter.permission.code(),
        ..Default::default()
    };
    let response = conn.send(request, version).await?;
    ClientError::check(
        DescribeAclsRequest::KEY,
        response.error_code,
        response.error_message.as_deref(),
    )?;
    Ok(response
        .resources
        .into_iter()
        .flat_map(|resource| {
            let (resource_type, name, pattern_type) = (
                ResourceType::from_code(resource.resource_type),
                resource.resource_name,
                PatternType::from_code(resource.pattern_type),
            );
            resource.acls.into_iter().map(move |acl| AclBinding {
                resource_type,
                resource_name: name.clone(),
                pattern_type,
                principal: acl.principal,
                host: acl.host,
                operation: operation_from_code(acl.operation),
                permission: AclPermissionType::from_code(acl.permission_type),
            })
        })
        .collect())
}

impl Client {
    /// The ACLs `filter` matches (DescribeAcls).
    pub async fn describe_acls(
        &self,
        filter: &AclBindingFilter,
    ) -> Result<Vec<AclBinding>, ClientError> {
        let conn = self.bootstrap_connection().await?;
        describe_acls_on(&conn, filter).await
    }

    /// Creates `bindings` in one CreateAcls request; one result per binding, in order.
    pub async fn create_acls(
        &self,
        bindings: &[AclBinding],
    ) -> Result<Vec<Result<(), ClientError>>, ClientError> {
        let conn = self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<CreateAclsRequest>().await?;
        for binding in bindings {
            check_pattern(CreateAclsRequest::KEY, version, binding.pattern_type)?;
        }
        let request = CreateAclsRequest {
            creations: bindings
                .iter()
                .map(|b| AclCreation {
                    resource_type: b.resource_type.code(),
                    resource_name: b.resource_name.clone(),
                    resource_pattern_type: b.pattern_type.code(),
                    principal: b.principal.clone(),
                    host: b.host.clone(),
                    operation: operation_code(b.operation),
                    permission_type: b.permission.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        if response.results.len() != bindings.len() {
            return Err(ClientError::Protocol(format!(
                "CreateAcls v{version} response has {} results for {} creations",
                response.results.len(),
                bindings.len()
            )));
        }
        Ok(response
            .results
            .into_iter()
            .map(|r| {
                ClientError::check(
                    CreateAclsRequest::KEY,
                    r.error_code,
                    r.error_message.as_deref(),
                )
            })
            .collect())
    }

    /// Deletes the ACLs each filter matches, in one DeleteAcls request; per filter, the ACLs
    /// deleted or the error.
    pub async fn delete_acls(
        &self,
        filters: &[AclBindingFilter],
    ) -> Result<Vec<Result<Vec<AclBinding>, ClientError>>, ClientError> {
        let conn = self.bootstrap_connection().await?;
        let version = conn.negotiated_version::<DeleteAclsRequest>().await?;
        for filter in filters {
            check_pattern(DeleteAclsRequest::KEY, version, filter.pattern_type)?;
        }
        let request = DeleteAclsRequest {
            filters: filters
                .iter()
                .map(|f| DeleteAclsFilter {
                    resource_type_filter: f.resource_type.code(),
                    resource_name_filter: f.resource_name.clone(),
                    pattern_type_filter: f.pattern_type.code(),
                    principal_filter: f.principal.clone(),
                    host_filter: f.host.clone(),
                    operation: operation_code(f.operation),
                    permission_type: f.permission.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let response = conn.send(request, version).await?;
        if response.filter_results.len() != filters.len() {
            return Err(ClientError::Protocol(format!(
                "DeleteAcls v{version} response has {} results for {} filters",
                response.filter_results.len(),
                filters.len()
            )));
        }
        let api = DeleteAclsRequest::KEY;
        Ok(response
            .filter_results
            .into_iter()
            .map(|result| {
                ClientError::check(api, result.error_code, result.error_message.as_deref())?;
                result
                    .matching_acls
                    .into_iter()
                    .map(|acl| {
                        ClientError::check(api, acl.error_code, acl.error_message.as_deref())?;
                        Ok(AclBinding {
                            resource_type: ResourceType::from_code(acl.resource_type),
                            resource_name: acl.resource_name,
                            pattern_type: PatternType::from_code(acl.pattern_type),
                            principal: acl.principal,
                            host: acl.host,
                            operation: operation_from_code(acl.operation),
                            permission: AclPermissionType::from_code(acl.permission_type),
                        })
                    })
                    .collect()
            })
            .collect())
    }
}
