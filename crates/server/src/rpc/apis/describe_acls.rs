//! DescribeAcls (key 29), v1-3, on broker and controller listeners, answered from the
//! authorizer's ACLs (Kafka's `AclApis.handleDescribeAcls`): a filter with code 0 in an enum
//! field closes the connection; DESCRIBE on the cluster is required (top-level
//! CLUSTER_AUTHORIZATION_FAILED); without an authorizer the answer is SECURITY_DISABLED.
//!
//! Matches are grouped by resource (type, name, pattern type). Kafka groups them in hash order;
//! kcoord sorts resources and their ACLs, so that the same ACLs always read the same.

use std::collections::BTreeMap;

use kcoord_acl::{AclBinding, UnknownElements};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kcoord_wire::messages::{DescribeAclsRequest, DescribeAclsResponse};
use kcoord_wire::ErrorCode;

use crate::rpc::acls::filter;
use crate::rpc::authorize::ResourceType;
use crate::rpc::authorize::{require_cluster, AclOperation};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::state::RequestContext;

/// DescribeAcls as kcoord serves it. In gateway mode it is forwarded: kcoord applies no ACLs of
/// its own there, the cluster's apply (docs/gateway.md).
pub const RPC: Rpc = Rpc::new(ApiKey::DescribeAcls, 1, 3)
    .served_on(Listeners::BrokerAndController)
    .asks(&[Check::new(AclOperation::Describe, ResourceType::Cluster)]);

serve!(checked handle);

/// Kafka's message when there is no authorizer to ask.
const NO_AUTHORIZER_ON_BROKER: &str = "No Authorizer is configured on the broker";

pub fn handle(
    ctx: &RequestContext<'_>,
    req: DescribeAclsRequest,
    _version: i16,
) -> Result<DescribeAclsResponse, UnknownElements> {
    let filter = filter(
        req.resource_type_filter,
        req.resource_name_filter.as_deref(),
        req.pattern_type_filter,
        req.principal_filter.as_deref(),
        req.host_filter.as_deref(),
        req.operation,
        req.permission_type,
    )?;
    if let Err(message) = require_cluster(ctx, "DescribeAcls", AclOperation::Describe) {
        return Ok(error(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, message));
    }
    let Some(authorizer) = &ctx.server.authorizer else {
        return Ok(error(
            ErrorCode::SECURITY_DISABLED,
            NO_AUTHORIZER_ON_BROKER.to_owned(),
        ));
    };
    // On success Kafka leaves ErrorMessage at the schema default: "", not null.
    Ok(DescribeAclsResponse {
        resources: resources(authorizer.acls(&filter)),
        ..Default::default()
    })
}

/// Kafka's `DescribeAclsResponse.aclsResources`, in a stable order.
pub fn resources(acls: Vec<AclBinding>) -> Vec<DescribeAclsResource> {
    let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclBinding>> = BTreeMap::new();
    for acl in acls {
        let key = (
            acl.resource_type.code(),
            acl.resource_name.clone(),
            acl.pattern_type.code(),
        );
        by_resource.entry(key).or_default().push(acl);
    }
    by_resource
        .into_iter()
        .map(|((resource_type, resource_name, pattern_type), mut acls)| {
            acls.sort();
            DescribeAclsResource {
                resource_type,
                resource_name,
                pattern_type,
                acls: acls
                    .into_iter()
                    .map(|acl| AclDescription {
                        principal: acl.principal,
                        host: acl.host,
                        operation: acl.operation.code() as i8,
                        permission_type: acl.permission.code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect()
}

fn error(code: ErrorCode, message: String) -> DescribeAclsResponse {
    DescribeAclsResponse {
        error_code: code.code(),
        error_message: Some(message),
        ..Default::default()
    }
}

/// The authorization matrix's rows of DescribeAcls ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get, on
/// broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(row!(DescribeAcls 3 on Broker, describe_acls(),
                needs [(Describe, Cluster, CLUSTER)],
                DescribeAclsResponse => |r| refusal(r.error_code, r.error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request DescribeAcls needs DESCRIBE permission."))
}
