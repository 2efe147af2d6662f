//! DeleteAcls (key 31), v1-3, on broker and controller listeners (a Kafka broker forwards it
//! to the controller): a filter with code 0 in an enum field closes the connection; ALTER on
//! the cluster is required (every filter CLUSTER_AUTHORIZATION_FAILED); without an authorizer
//! every filter is SECURITY_DISABLED; then the controller removes every ACL a filter matches
//! (`kcoord_acl::requests::plan_delete_acls`) and each filter lists what it matched.

use kcoord_acl::{AclBinding, AclBindingFilter, UnknownElements};
use kcoord_controller::DeleteAclsResult;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl};
use kcoord_wire::messages::{DeleteAclsRequest, DeleteAclsResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::acls::refuse_each;
use crate::rpc::acls::{filter, has_authorizer, NO_AUTHORIZER};
use crate::rpc::authorize::ResourceType;
use crate::rpc::authorize::{require_cluster, AclOperation};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::runtime::controller::{ControllerHandle, ControllerUnavailable};
use crate::state::RequestContext;

/// DeleteAcls as kcoord serves it. In gateway mode it is forwarded: kcoord applies no ACLs of
/// its own there, the cluster's apply (docs/gateway.md).
pub const RPC: Rpc = Rpc::new(ApiKey::DeleteAcls, 1, 3)
    .served_on(Listeners::BrokerAndController)
    .asks(&[Check::new(AclOperation::Alter, ResourceType::Cluster)])
    .mirrored_in_gateway();

serve!(checked async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: DeleteAclsRequest,
    _version: i16,
) -> Result<DeleteAclsResponse, UnknownElements> {
    let filters = req
        .filters
        .iter()
        .map(|f| {
            filter(
                f.resource_type_filter,
                f.resource_name_filter.as_deref(),
                f.pattern_type_filter,
                f.principal_filter.as_deref(),
                f.host_filter.as_deref(),
                f.operation,
                f.permission_type,
            )
        })
        .collect::<Result<Vec<AclBindingFilter>, UnknownElements>>()?;
    let every = |code: ErrorCode, message: &str| {
        filters
            .iter()
            .map(|_| failed(code, message.to_owned()))
            .collect()
    };
    let filter_results =
        if let Err(message) = require_cluster(ctx, "DeleteAcls", AclOperation::Alter) {
            every(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, &message)
        } else if !has_authorizer(ctx) {
            every(ErrorCode::SECURITY_DISABLED, NO_AUTHORIZER)
        } else {
            let n = filters.len();
            match delete(&ctx.server.controller, filters).await {
                Ok(results) => results
                    .into_iter()
                    .map(|r| match r {
                        Ok(matched) => DeleteAclsFilterResult {
                            error_message: None,
                            matching_acls: matched.into_iter().map(matching).collect(),
                            ..Default::default()
                        },
                        Err(e) => DeleteAclsFilterResult {
                            error_code: e.error.code(),
                            error_message: e.message,
                            ..Default::default()
                        },
                    })
                    .collect(),
                Err(e) => (0..n)
                    .map(|_| failed(ErrorCode::NOT_CONTROLLER, e.to_string()))
                    .collect(),
            }
        };
    Ok(DeleteAclsResponse {
        filter_results,
        ..Default::default()
    })
}

fn failed(code: ErrorCode, message: String) -> DeleteAclsFilterResult {
    DeleteAclsFilterResult {
        error_code: code.code(),
        error_message: Some(message),
        ..Default::default()
    }
}

fn matching(acl: AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl {
        resource_type: acl.resource_type.code(),
        resource_name: acl.resource_name,
        pattern_type: acl.pattern_type.code(),
        principal: acl.principal,
        host: acl.host,
        operation: acl.operation.code() as i8,
        permission_type: acl.permission.code(),
        error_message: None,
        ..Default::default()
    }
}

/// Deletes the ACLs the filters match through the controller (`Controller::delete_acls`):
/// one result per filter, in request order.
async fn delete(
    controller: &ControllerHandle,
    filters: Vec<AclBindingFilter>,
) -> Result<Vec<DeleteAclsResult>, ControllerUnavailable> {
    let entries = filters.len();
    let decided = controller
        .run("DeleteAcls", move |c, _| Ok(c.delete_acls(&filters)))
        .await?;
    let results = decided.unwrap_or_else(|refused| refuse_each(refused, entries));
    let removed: usize = results.iter().flatten().map(Vec::len).sum();
    info!(filters = entries, removed, "DeleteAcls");
    Ok(results)
}

/// The authorization matrix's rows of DeleteAcls ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get, on
/// broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(row!(DeleteAcls 3 on Broker, delete_acls(),
                needs [(Alter, Cluster, CLUSTER)],
                DeleteAclsResponse => |r| refusal(r.filter_results[0].error_code, r.filter_results[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request DeleteAcls needs ALTER permission."))
}
