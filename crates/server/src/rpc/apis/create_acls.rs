//! CreateAcls (key 30), v1-3, on broker and controller listeners (a Kafka broker forwards it
//! to the controller). In Kafka's order: a creation with code 0 in an enum field makes the
//! request unparsable and the connection closes; then ALTER on the cluster is required
//! (every result CLUSTER_AUTHORIZATION_FAILED); then, without an authorizer, every result is
//! SECURITY_DISABLED; then the controller validates each creation (`kcoord_acl::requests`)
//! and writes one record per new ACL. The answer leaves once the records are in the log and
//! the authorizer applies them.

use kcoord_acl::{AclCreation, UnknownElements};
use kcoord_controller::CreateAclResult;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::create_acls_response::AclCreationResult;
use kcoord_wire::messages::{CreateAclsRequest, CreateAclsResponse};
use kcoord_wire::ErrorCode;
use tracing::info;

use crate::rpc::acls::{has_authorizer, NO_AUTHORIZER};
use crate::rpc::acls::{outcome, refuse_each};
use crate::rpc::authorize::ResourceType;
use crate::rpc::authorize::{require_cluster, AclOperation};
use crate::rpc::{serve, Check, Listeners, Rpc};
use crate::runtime::controller::{ControllerHandle, ControllerUnavailable};
use crate::state::RequestContext;
use crate::support::logging::capped;

/// CreateAcls as kcoord serves it. In gateway mode it is forwarded: kcoord applies no ACLs of
/// its own there, the cluster's apply (docs/gateway.md).
pub const RPC: Rpc = Rpc::new(ApiKey::CreateAcls, 1, 3)
    .served_on(Listeners::BrokerAndController)
    .asks(&[Check::new(AclOperation::Alter, ResourceType::Cluster)])
    .mirrored_in_gateway();

serve!(checked async handle);

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: CreateAclsRequest,
    _version: i16,
) -> Result<CreateAclsResponse, UnknownElements> {
    let creations: Vec<AclCreation> = req
        .creations
        .into_iter()
        .map(|c| AclCreation {
            resource_type: c.resource_type,
            resource_name: c.resource_name,
            pattern_type: c.resource_pattern_type,
            principal: c.principal,
            host: c.host,
            operation: c.operation,
            permission: c.permission_type,
        })
        .collect();
    kcoord_acl::requests::check_create_acls_request(&creations)?;
    let every = |code: ErrorCode, message: &str| {
        creations
            .iter()
            .map(|_| result(code, Some(message.to_owned())))
            .collect()
    };
    let results = if let Err(message) = require_cluster(ctx, "CreateAcls", AclOperation::Alter) {
        every(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, &message)
    } else if !has_authorizer(ctx) {
        every(ErrorCode::SECURITY_DISABLED, NO_AUTHORIZER)
    } else {
        let n = creations.len();
        match create(&ctx.server.controller, creations).await {
            Ok(results) => results
                .into_iter()
                .map(|r| match r {
                    // Kafka leaves a success's message at the schema default, "" (not null).
                    Ok(()) => result(ErrorCode::NONE, Some(String::new())),
                    Err(e) => result(e.error, e.message),
                })
                .collect(),
            Err(e) => (0..n)
                .map(|_| result(ErrorCode::NOT_CONTROLLER, Some(e.to_string())))
                .collect(),
        }
    };
    Ok(CreateAclsResponse {
        results,
        ..Default::default()
    })
}

fn result(code: ErrorCode, message: Option<String>) -> AclCreationResult {
    AclCreationResult {
        error_code: code.code(),
        error_message: message,
        ..Default::default()
    }
}

/// Creates the ACLs through the controller (`Controller::create_acls`), one result per
/// creation in request order, each logged.
async fn create(
    controller: &ControllerHandle,
    creations: Vec<AclCreation>,
) -> Result<Vec<CreateAclResult>, ControllerUnavailable> {
    let entries = creations.len();
    let decided = controller
        .run("CreateAcls", {
            let creations = creations.clone();
            move |c, _| Ok(c.create_acls(&creations, uuid::Uuid::new_v4))
        })
        .await?;
    let results = decided.unwrap_or_else(|refused| refuse_each(refused, entries));
    for (creation, result) in creations.iter().zip(&results) {
        info!(
            resource_type = creation.resource_type,
            resource = %capped(&creation.resource_name),
            principal = %capped(&creation.principal),
            host = %capped(&creation.host),
            operation = creation.operation,
            permission = creation.permission,
            outcome = outcome(result),
            "CreateAcls"
        );
    }
    Ok(results)
}

/// The authorization matrix's rows of CreateAcls ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get, on
/// broker and controller listeners alike.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    on_every_listener(row!(CreateAcls 3 on Broker, create_acls(),
                needs [(Alter, Cluster, CLUSTER)],
                CreateAclsResponse => |r| refusal(r.results[0].error_code, r.results[0].error_message.as_deref()),
                allowed "NONE",
                denied "CLUSTER_AUTHORIZATION_FAILED: Request CreateAcls needs ALTER permission."))
}
